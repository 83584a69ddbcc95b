"""`pip install .` (not editable) runs the workflow: the package carries its own data files.

The wheel is built from a copy of the sources, installed into a fresh venv, and the
workflow runs from a copy of the checkout without `workflow/wmdeval`, so nothing can be
read from the source tree by accident. Offline: the fresh venv borrows the third-party
packages of the test venv through a `.pth` file, after its own site-packages.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from wmdeval import ingest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e

# What the Snakefile needs besides the wmdeval package.
WORKFLOW_PARTS = ("workflow/rules", "workflow/report", "config", "envs", "profiles")


def run(
    command: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A venv with the wheel of wmdeval installed (not editable); returns its python."""
    tmp = tmp_path_factory.mktemp("install")
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    source = tmp / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source)
    shutil.copytree(
        REPO / "workflow" / "wmdeval",
        source / "workflow" / "wmdeval",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    wheels = tmp / "wheels"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            wheels,
            source,
        ],
        cwd=tmp,
    )
    (wheel,) = wheels.glob("wmdeval-*.whl")

    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    python = venv / "bin" / "python"
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-index",
            wheel,
        ],
        cwd=tmp,
    )
    own_site = Path(
        run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=tmp
        ).stdout.strip()
    )
    # Lines of a .pth file go after the directory that holds it, so the wheel wins over the
    # test venv's editable wmdeval; the editable install's own .pth (a path to the checkout)
    # is not processed, because the test venv's site-packages is not a site directory here.
    (own_site / "zz_test_venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("workflow")
    shutil.copy(REPO / "Snakefile", workdir)
    for part in WORKFLOW_PARTS:
        shutil.copytree(REPO / part, workdir / part)
    assert not (workdir / "workflow" / "wmdeval").exists()
    return workdir


def fresh_env(python: Path, workdir: Path) -> dict[str, str]:
    # The venv's bin first: the rules call its `wmdeval` script.
    return {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(workdir)}


def test_the_installed_package_is_the_wheel(fresh_venv, workflow_copy):
    where = run(
        [fresh_venv, "-c", "import wmdeval; print(wmdeval.__file__)"],
        cwd=workflow_copy,
        env=fresh_env(fresh_venv, workflow_copy),
    ).stdout.strip()
    assert Path(where).is_relative_to(fresh_venv.parent.parent), where


def test_dry_run_and_a_job_that_reads_the_stop_words(fresh_venv, workflow_copy):
    env = fresh_env(fresh_venv, workflow_copy)
    snakemake = [fresh_venv, "-m", "snakemake", "--cores", "1"]
    dry = run([*snakemake, "-n"], cwd=workflow_copy, env=env)
    assert "Job stats:" in dry.stdout, dry.stdout[-3000:]

    target = "results/polarity/ingest/documents.parquet"
    run([*snakemake, target], cwd=workflow_copy, env=env)
    words = {
        w for doc in pq.read_table(workflow_copy / target).column("words").to_pylist() for w in doc
    }
    stopwords = ingest.load_stopwords("kusner115")
    # The polarity config drops the 115 stop words of Kusner et al.; common English words
    # like these occur in 200 movie-review sentences unless they were dropped.
    assert {"the", "and", "is"} <= stopwords
    assert words and not words & stopwords
