"""POT's exact network simplex (``emd_c``), loaded without initialising the whole of POT.

A WMD job needs one compiled function of POT, ``ot.lp.emd_wrap.emd_c``. But
``import ot`` (and so ``from ot.lp.emd_wrap import emd_c``, whose package ``ot`` runs
first) initialises every POT solver, and with them scikit-learn, scipy.stats, pandas
and networkx: about 2 CPU-seconds per process on the project's 2-core machine, most of
the CPU of a short WMD job and, over the hundreds of jobs of a run, minutes of it.

The compiled module's own initialisation needs numpy and one name of ``ot.utils``
(``dist``, which only its 1-D solver calls, and only for metrics given by name; the
workflow never calls it). :func:`load_emd_wrap` runs that initialisation with a stand-in
for ``ot.utils`` present only while it runs, and leaves no trace in ``sys.modules``: a
later ``import ot`` in the same process initialises POT as usual, and its
``ot.lp.emd_wrap`` is this very module (a compiled module is initialised once per
process; its ``dist`` is then the stand-in, which imports POT's own when first called).
Where ``ot`` is imported already, or the direct load fails (another POT layout), it is
the plain import: the function is the same compiled code either way.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import types

MODULE = "ot.lp.emd_wrap"


def _dist(*args, **kwargs):
    # POT's ot.utils.dist, imported when first called (see the module docstring)
    from ot.utils import dist

    return dist(*args, **kwargs)


def _load_directly() -> types.ModuleType:
    spec = importlib.util.find_spec("ot")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("POT (the package 'ot') is not installed")
    lp = importlib.machinery.FileFinder(
        f"{spec.submodule_search_locations[0]}/lp",
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    )
    found = lp.find_spec(MODULE)
    if found is None:
        raise ImportError(f"no compiled {MODULE} beside POT")
    module = importlib.util.module_from_spec(found)
    stand_ins = {
        "ot": types.ModuleType("ot"),
        "ot.lp": types.ModuleType("ot.lp"),
        "ot.utils": types.ModuleType("ot.utils"),
    }
    stand_ins["ot"].__path__ = []
    stand_ins["ot.lp"].__path__ = []
    stand_ins["ot.utils"].dist = _dist
    sys.modules.update(stand_ins)
    try:
        found.loader.exec_module(module)
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        # the module registers itself under its name as it initialises: left there, a
        # later `import ot` would find it and never set it as ot.lp's attribute
        sys.modules.pop(MODULE, None)
    return module


def load_emd_wrap() -> types.ModuleType:
    """``ot.lp.emd_wrap``, POT's compiled network simplex, at the cost of its own module."""
    if "ot" not in sys.modules:
        try:
            return _load_directly()
        except (ImportError, AttributeError):
            pass
    from ot.lp import emd_wrap

    return emd_wrap


#: the module (its ``__file__``: the shared library that holds POT's C++ solver) and its
#: exact solver
emd_wrap = load_emd_wrap()
emd_c = emd_wrap.emd_c
