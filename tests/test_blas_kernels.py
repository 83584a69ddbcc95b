"""Every job computes with the OpenBLAS kernels the config names (blas_kernels), whatever
the CPU of the node: the variable is set where Snakemake parses the workflow, so each
rule's shell inherits it."""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wmdeval.core.errors import WmdevalError
from wmdeval.planning.environment import X86_64, blas_environment, cpu_flags

REPO = Path(__file__).resolve().parents[1]


def test_the_named_kernels_are_pinned_on_x86_64():
    assert blas_environment("Haswell", "x86_64", {"avx", "avx2"}) == {
        "OPENBLAS_CORETYPE": "Haswell"
    }
    assert blas_environment("SkylakeX", "AMD64", None) == {"OPENBLAS_CORETYPE": "SkylakeX"}


def test_null_or_another_architecture_leaves_the_environment_alone():
    assert blas_environment(None, "x86_64", {"avx2"}) == {}
    assert blas_environment("Haswell", "aarch64", {"asimd"}) == {}


def test_a_cpu_without_the_kernels_flag_is_one_clear_error():
    with pytest.raises(WmdevalError, match=r"blas_kernels: SkylakeX needs the CPU flag avx512f"):
        blas_environment("SkylakeX", "x86_64", {"avx", "avx2"})
    with pytest.raises(WmdevalError, match="expected one of Sandybridge, Haswell, SkylakeX"):
        blas_environment("Zen9", "x86_64", {"avx2"})


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx avx2\n\nprocessor\t: 1\n")
    assert cpu_flags(info) == frozenset({"fpu", "sse2", "avx", "avx2"})
    info.write_text("processor\t: 0\n")
    assert cpu_flags(info) is None
    assert cpu_flags(tmp_path / "missing") is None


PROBE = """
configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


rule probe:
    output:
        "kernels.txt",
    shell:
        "printf '%s' \\"${{OPENBLAS_CORETYPE:-unset}}\\" > {output}"
"""


def probe(workdir: Path, *config: str) -> subprocess.CompletedProcess:
    """A job of the workflow's own planning (common.smk) that writes the variable its
    shell sees, in an environment without it."""
    (workdir / "kernels.txt").unlink(missing_ok=True)
    command = [sys.executable, "-m", "snakemake", "-s", "probe.smk", "--cores", "1"]
    command += ["kernels.txt", *(["--config", *config] if config else [])]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(workdir)}
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True)


@pytest.mark.e2e
@pytest.mark.skipif(platform.machine().lower() not in X86_64, reason="the kernel sets are x86-64's")
def test_every_job_of_the_workflow_sees_the_configured_kernels(tmp_path):
    for part in ("workflow/rules", "config"):
        shutil.copytree(REPO / part, tmp_path / part)
    (tmp_path / "probe.smk").write_text(PROBE)
    run = probe(tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "kernels.txt").read_text() == "Haswell"  # the default
    run = probe(tmp_path, "blas_kernels=null")
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "kernels.txt").read_text() == "unset"
    flags = cpu_flags() or frozenset()
    if "avx512f" not in flags:
        run = probe(tmp_path, "blas_kernels=SkylakeX")
        assert run.returncode != 0
        assert "wmdeval: config blas_kernels: SkylakeX needs the CPU flag avx512f" in run.stderr
        assert not (tmp_path / "kernels.txt").exists()
    else:
        run = probe(tmp_path, "blas_kernels=SkylakeX")
        assert run.returncode == 0, run.stderr[-2000:]
        assert (tmp_path / "kernels.txt").read_text() == "SkylakeX"
