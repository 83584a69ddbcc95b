"""How the software gets installed: `pip install .`, and the conda environment of the rules.

`pip install .` (not editable) runs the workflow: the package carries its own data files.
The wheel is built from a copy of the sources, installed into a fresh venv, and the
workflow runs from a copy of the checkout without `workflow/wmdeval`, so nothing can be
read from the source tree by accident. Offline: fresh venvs borrow the third-party
packages of the test venv through a `.pth` file, after their own site-packages.

The conda environment cannot be created here (no conda, no conda-forge): its tests check
that the env file names no path, that it lists pyproject.toml's dependencies, and run the
post-deploy script the way Snakemake does, in a venv standing in for the environment.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
import yaml

from wmdeval.ingest import corpora as ingest

REPO = Path(__file__).resolve().parents[1]

# What the Snakefile needs besides the wmdeval package.
WORKFLOW_PARTS = ("workflow/rules", "workflow/report", "config", "envs", "profiles")


def run(
    command: list, cwd: Path, env: dict[str, str] | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{command}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def copy_package_sources(dest: Path) -> Path:
    """What building wmdeval needs, copied: building in the checkout would leave build/ there."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, dest)
    shutil.copytree(
        REPO / "workflow" / "wmdeval",
        dest / "workflow" / "wmdeval",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    return dest


def bare_venv(path: Path) -> Path:
    """A venv without pip that sees the test venv's packages after its own; returns its python."""
    run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    python = path / "bin" / "python"
    own_site = run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=path
    ).stdout.strip()
    # Lines of a .pth file go after the directory that holds it, so what is installed into
    # this venv wins over the test venv's editable wmdeval; that install's own .pth (a path to
    # the checkout) is not processed, because the test venv's site-packages is no site
    # directory here.
    (Path(own_site) / "zz_test_venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return python


def wmdeval_location(python: Path, cwd: Path) -> Path:
    command = [python, "-c", "import wmdeval; print(wmdeval.__file__)"]
    return Path(run(command, cwd=cwd, env=plain_env(python, cwd)).stdout.strip())


def plain_env(python: Path, home: Path) -> dict[str, str]:
    # The venv's bin first: the rules call its `wmdeval` script.
    return {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(home)}


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A venv with the wheel of wmdeval installed (not editable); returns its python."""
    tmp = tmp_path_factory.mktemp("install")
    source = copy_package_sources(tmp / "source")
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip"]
    run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", wheels, source], tmp)
    (wheel,) = wheels.glob("wmdeval-*.whl")
    python = bare_venv(tmp / "venv")
    run([*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], tmp)
    return python


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory) -> Path:
    workdir = tmp_path_factory.mktemp("workflow")
    shutil.copy(REPO / "Snakefile", workdir)
    for part in WORKFLOW_PARTS:
        shutil.copytree(REPO / part, workdir / part)
    assert not (workdir / "workflow" / "wmdeval").exists()
    return workdir


@pytest.mark.e2e
def test_the_installed_package_is_the_wheel(fresh_venv, workflow_copy):
    where = wmdeval_location(fresh_venv, workflow_copy)
    assert where.is_relative_to(fresh_venv.parent.parent), where


@pytest.mark.e2e
def test_dry_run_and_a_job_that_reads_the_stop_words(fresh_venv, workflow_copy):
    env = plain_env(fresh_venv, workflow_copy)
    snakemake = [fresh_venv, "-m", "snakemake", "--cores", "1"]
    dry = run([*snakemake, "-n"], cwd=workflow_copy, env=env)
    assert "Job stats:" in dry.stdout, dry.stdout[-3000:]

    target = "results/newsgroups/ingest/documents.parquet"
    run([*snakemake, target], cwd=workflow_copy, env=env)
    words = {
        w for doc in pq.read_table(workflow_copy / target).column("words").to_pylist() for w in doc
    }
    stopwords = ingest.load_stopwords("kusner115")
    # The newsgroups config drops the 115 stop words of Kusner et al.; common English words
    # like these occur in 200 newsgroup posts unless they were dropped.
    assert {"the", "and", "is"} <= stopwords
    assert words and not words & stopwords


# --------------------------------------------------------------- the rules' conda environment
ENV_FILE = REPO / "envs" / "wmdeval.yaml"
POST_DEPLOY = REPO / "envs" / "wmdeval.post-deploy.sh"


def requirement_name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group().lower()


def test_conda_env_file_names_no_path():
    # Snakemake copies the env file to .snakemake/conda/<hash>.yaml before conda reads it:
    # a path in it (`-e ..`, `file:`, a pip section) would be resolved from there.
    env = yaml.safe_load(ENV_FILE.read_text())
    assert set(env) == {"channels", "dependencies"}
    for dependency in env["dependencies"]:
        assert isinstance(dependency, str), f"{dependency!r}: a pip section installs from PyPI"
        assert re.fullmatch(r"[a-z0-9_.-]+([<>=!]=?[0-9.*]+)?", dependency), dependency


def test_conda_env_file_has_the_dependencies_of_pyproject():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    # snakemake drives the jobs from outside the environment; the jobs only call `wmdeval`.
    wanted = {
        requirement_name(r): re.sub(r"\[.*\]", "", r)
        for r in pyproject["project"]["dependencies"]
        if requirement_name(r) != "snakemake"
    }
    listed = {requirement_name(d): d for d in yaml.safe_load(ENV_FILE.read_text())["dependencies"]}
    assert {name: listed.get(name) for name in wanted} == wanted
    # The post-deploy script builds wmdeval with the environment's own build backend: the
    # setuptools the test extras ask for, the one test_install builds with (>= 70.1 builds
    # wheels without the `wheel` package).
    assert listed["setuptools"] in pyproject["project"]["optional-dependencies"]["test"]


def test_snakemake_finds_the_post_deploy_script(tmp_path):
    # Snakemake runs <env file without .yaml>.post-deploy.sh; ask its own lookup (an
    # internal of snakemake 9, hence the bare Env) so a misnamed script cannot pass.
    from snakemake.deployment.conda import Env
    from snakemake.sourcecache import SourceCache, infer_source_file

    env = Env.__new__(Env)
    env.file = infer_source_file(str(ENV_FILE))
    env.workflow = SimpleNamespace(sourcecache=SourceCache(tmp_path / "cache"))
    assert Path(env.post_deploy_file.get_path_or_uri(secret_free=True)) == POST_DEPLOY


def test_post_deploy_script_installs_the_working_directorys_checkout(tmp_path):
    # As Snakemake does it: both files copied to <workdir>/.snakemake/conda/<hash>.*, the
    # script run with the interpreter of its #! line, inside the activated environment
    # (a venv stands in for it), from the working directory.
    checkout = copy_package_sources(tmp_path / "checkout")
    conda_dir = checkout / ".snakemake" / "conda"
    conda_dir.mkdir(parents=True)
    shutil.copy(ENV_FILE, conda_dir / "0123abcd.yaml")
    script = conda_dir / "0123abcd.post-deploy.sh"
    shutil.copy(POST_DEPLOY, script)
    python = bare_venv(conda_dir / "0123abcd")
    interpreter = POST_DEPLOY.read_text().splitlines()[0].removeprefix("#!").split()
    env = {**plain_env(python, tmp_path), "CONDA_PREFIX": str(python.parent.parent)}
    run([*interpreter, script], cwd=checkout, env=env)

    assert wmdeval_location(python, tmp_path) == checkout / "workflow" / "wmdeval" / "__init__.py"
    usage = run([python.parent / "wmdeval", "--help"], cwd=tmp_path, env=env).stdout
    assert "ingest" in usage


def test_post_deploy_script_refuses_a_working_directory_that_is_no_checkout(tmp_path):
    python = bare_venv(tmp_path / "env")
    env = {**plain_env(python, tmp_path), "CONDA_PREFIX": str(python.parent.parent)}
    result = subprocess.run(
        ["bash", POST_DEPLOY], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == [
        f"wmdeval.post-deploy.sh: {tmp_path}/pyproject.toml: not found or not wmdeval's;"
        " run snakemake from the wmdeval checkout"
    ]


def test_lint_is_clean(tmp_path):
    shutil.copy(REPO / "Snakefile", tmp_path)
    for part in WORKFLOW_PARTS:
        shutil.copytree(REPO / part, tmp_path / part)
    command = [sys.executable, "-m", "snakemake", "--lint"]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        env=plain_env(Path(sys.executable), tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "Congratulations" in output, output[-5000:]
