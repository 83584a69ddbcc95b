"""The environment every job runs in: which OpenBLAS kernels compute its products.

OpenBLAS picks its kernels by CPU when it loads, and kernels for different vector widths
round a product's last bits differently (the demo's word vectors already differ between
the AVX2 "Haswell" and AVX-512 "SkylakeX" kernels). One kernel set named for every job
makes a run's bytes the same on every node of a cluster whose CPUs differ, and the same
as a workstation's. Planning only: this module reads the CPU's flags, never loads BLAS.
"""

from __future__ import annotations

import platform
from collections.abc import Iterable
from pathlib import Path

from ..core.errors import WmdevalError

#: The variable OpenBLAS reads when it loads (builds with DYNAMIC_ARCH, as NumPy's and
#: SciPy's wheels are).
CORETYPE = "OPENBLAS_CORETYPE"
#: The x86-64 kernel sets the config may name, with the CPU flag each needs: on a CPU
#: without it the kernels would stop at an illegal instruction.
KERNEL_FLAGS = {"Sandybridge": "avx", "Haswell": "avx2", "SkylakeX": "avx512f"}
X86_64 = ("x86_64", "amd64")


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """The CPU's flags as Linux lists them; None where the file is missing or has none
    (another system: the kernels' needs are not checked there)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return None


def blas_environment(
    kernels: str | None, machine: str, flags: Iterable[str] | None
) -> dict[str, str]:
    """The variables that pin the jobs' OpenBLAS kernels to ``kernels`` (config
    ``blas_kernels``) on a machine of architecture ``machine`` with CPU ``flags``: {} for
    None, and on a machine that is not x86-64 (those kernel sets are x86-64's; such a
    machine keeps its own, so its bytes can differ from an x86-64 run's). A CPU without
    the flag the kernels need is a WmdevalError."""
    if kernels is None or machine.lower() not in X86_64:
        return {}
    if kernels not in KERNEL_FLAGS:
        raise WmdevalError(
            f"config blas_kernels: expected one of {', '.join(KERNEL_FLAGS)} or null, "
            f"got {kernels!r}"
        )
    need = KERNEL_FLAGS[kernels]
    if flags is not None and need not in set(flags):
        raise WmdevalError(
            f"config blas_kernels: {kernels} needs the CPU flag {need}, which this "
            f"machine's CPU lacks; set blas_kernels to a kernel set every node supports "
            "(or null: each node's own, whose last bits can differ)"
        )
    return {CORETYPE: kernels}


def job_environment(kernels: str | None) -> dict[str, str]:
    """:func:`blas_environment` for the machine this runs on."""
    return blas_environment(kernels, platform.machine(), cpu_flags())
