"""The compiled kernels (numba, distances/wmd/compiled.py and bounds.py) are compiled once
and loaded from disk by every later process, wherever the package is installed."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numba
import numba.core.caching
import pytest

from wmdeval.distances.wmd import compiled

# A fresh process: the ICT and dual bounds on a small corpus, then what numba did for each
# kernel (compiled: a cache miss; loaded from disk: a hit).
PROBE = """
import json, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_wmd import random_corpus
from wmdeval.distances.wmd import bounds, compiled, solver
inputs = solver.prepare(*random_corpus(0, 12), "bow")
bounds.constrained_transfers(inputs, 0, np.arange(1, inputs.n))
_, potentials = solver.solve_pair(inputs, 0, 1)
start = np.zeros((0, len(inputs.indices[0])))  # stacked as the search stacks them
stack = np.vstack([start, bounds.query_potential(inputs, 0, potentials[1])[None, :]])
bounds.dual_bound(inputs, 0, 2, stack[0:], np.inf)
print(json.dumps({{
    name: [sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()), k.stats.cache_path]
    for name, k in (
        ("transfers", bounds._transfers),
        ("dual", bounds._dual_kernel),
        ("problem", compiled._pair_problem),
        ("costs", compiled._pair_costs),
    )
}}))
"""


def probe(cache_dir: Path) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)}
    script = PROBE.format(tests=str(Path(__file__).parent))
    run = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_fresh_process_loads_the_kernels_compiled_by_an_earlier_one(tmp_path):
    first = probe(tmp_path)
    for hits, misses, path in first.values():
        assert (hits, misses) == (0, 1)  # compiled, for the one signature the search uses
        assert Path(path).is_relative_to(tmp_path)
    second = probe(tmp_path)
    for hits, misses, _ in second.values():
        assert (hits, misses) == (1, 0)  # loaded, not compiled again


@pytest.fixture
def nowhere_to_cache(monkeypatch, tmp_path):
    """As if neither the package's directory nor the home directory were writable: numba
    may only use NUMBA_CACHE_DIR (unset); the system's temp directory is tmp_path."""
    caching = numba.core.caching
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # _CacheImpl in older numba
    provided = [c for c in impl._locator_classes if "UserProvided" in c.__name__]
    assert len(provided) == 1
    monkeypatch.setattr(impl, "_locator_classes", provided)
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path / f"wmdeval-numba-{os.getuid()}"


def twice(x):
    return 2.0 * x


def test_with_no_writable_cache_location_the_kernel_is_cached_in_a_private_temp_dir(
    nowhere_to_cache,
):
    with pytest.raises(RuntimeError, match="no locator available"):
        numba.njit(cache=True)(twice)  # what the kernels met before the fallback
    kernel = compiled._kernel(twice)
    assert kernel(3.0) == 6.0
    assert numba.config.CACHE_DIR == ""  # restored
    assert Path(kernel.stats.cache_path).is_relative_to(nowhere_to_cache)
    assert list(nowhere_to_cache.rglob("*.nbi"))  # written, for the next process
    assert nowhere_to_cache.stat().st_mode & 0o777 == 0o700


def test_a_temp_dir_others_may_write_is_never_used(nowhere_to_cache):
    nowhere_to_cache.mkdir(mode=0o777)
    nowhere_to_cache.chmod(0o777)  # the umask may have narrowed it
    assert compiled._private_cache() is None
    kernel = compiled._kernel(twice)  # compiled in this process only
    assert kernel(3.0) == 6.0
    assert kernel.stats.cache_path is None
    assert not list(nowhere_to_cache.rglob("*.nbi"))


def test_a_temp_dir_that_is_a_link_is_never_used(nowhere_to_cache, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    nowhere_to_cache.symlink_to(target)
    assert compiled._private_cache() is None
    assert compiled._kernel(twice)(1.5) == 3.0
    assert not list(target.rglob("*.nbi"))
