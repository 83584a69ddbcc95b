"""What the end-to-end tests share: a copy of the workflow in a temporary directory, and
``snakemake --cores 2`` run there in a clean environment."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
STATISTICS = REPO / "docs" / "statistics.md"
#: What a workflow directory needs of the repository (profiles: for --profile runs).
WORKFLOW_PARTS = ("workflow/rules", "workflow/report", "config", "envs", "profiles")


def copy_workflow(workdir: Path) -> Path:
    """The Snakefile, rules, report captions, configs, envs and profiles, in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "Snakefile", workdir)
    for part in WORKFLOW_PARTS:
        shutil.copytree(REPO / part, workdir / part)
    return workdir


def stderr_lines_until(job: subprocess.Popen, needle: str, timeout: float) -> list[str]:
    """The lines ``job`` wrote to its stderr (a pipe, text) up to the first holding
    ``needle``; if none does within ``timeout`` s or before it ends, the job is killed
    and the test fails with what it wrote."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = job.stderr.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    job.kill()
    raise AssertionError(f"no {needle!r} on stderr: {''.join(lines)}")


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", *args]
    if "--cores" not in args:
        command += ["--cores", "2"]
    bin_dir = str(Path(sys.executable).parent)
    # no OPENBLAS_CORETYPE here: the workflow pins every job's kernels itself (config
    # blas_kernels), and test_demo_outputs_are_the_recorded_bytes checks the bytes of its
    # default (Haswell) kernels
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    run = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200
    )
    record_rules(run)
    return run


# ------------------------------------------------- every rule runs in some end-to-end test
#: The directory where each successful Snakemake run of the suite leaves the names of the
#: rules whose jobs it ran; set by tests/conftest.py for the whole session (all workers).
RULES_RUN = "WMDEVAL_TEST_RULES_RUN"
#: A job's header in Snakemake's log: "rule NAME:", "localrule NAME:" or "checkpoint NAME:".
_JOB_HEADER = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$", re.M)


def executed_rules(log: str) -> set[str]:
    """The rules whose jobs a (real, not dry) Snakemake run's log shows."""
    return set(_JOB_HEADER.findall(log))


def record_rules(run: subprocess.CompletedProcess) -> None:
    """Note the rules a successful real run executed (a dry run plans, it runs nothing)."""
    directory = os.environ.get(RULES_RUN)
    dry = {"-n", "--dry-run", "--dryrun"} & set(run.args)
    if directory is None or dry or run.returncode != 0:
        return
    rules = executed_rules(run.stdout + run.stderr)
    if rules:
        Path(directory, f"{uuid.uuid4().hex}.txt").write_text("\n".join(sorted(rules)) + "\n")


def recorded_rules(directory: Path) -> set[str]:
    return {rule for path in directory.glob("*.txt") for rule in path.read_text().split()}


def rule_names() -> set[str]:
    """Every rule of the workflow, as ``snakemake --list-rules`` names them."""
    workdir = Path(tempfile.mkdtemp(prefix="wmdeval-rules-"))
    try:
        copy_workflow(workdir)
        listing = subprocess.run(
            [sys.executable, "-m", "snakemake", "--list-rules"],
            cwd=workdir,
            env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(workdir)},
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return set(listing.stdout.split())


def job_counts(run: subprocess.CompletedProcess, rules: tuple[str, ...] = ()) -> dict[str, str]:
    """A dry run's "Job stats" table as {rule: count} (of ``rules`` if given), without the
    total; {} when nothing is planned."""
    log = run.stdout + run.stderr
    if "Job stats:" not in log:
        return {}
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {
        rule: count
        for rule, count in re.findall(r"^(\w+)\s+(\d+)\s*$", table, re.M)
        if rule != "total" and (not rules or rule in rules)
    }


def readme_block(name: str, page: Path = README) -> str:
    """The README's (or ``page``'s) text between ``<!-- name -->`` and ``<!-- /name -->``."""
    text = page.read_text(encoding="utf-8")
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    assert start in text and end in text, f"{page.name} lacks the {name} markers"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def python_output(code: str) -> str:
    """What a fresh interpreter prints running ``code`` (dedented); it must succeed."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def write_word2vec_text(path: Path, words: list[str], dim: int, seed: int) -> None:
    """A word2vec text file of ``words``: a header, then one seeded normal ``dim``-d vector
    per word (``np.random.default_rng(seed)``), five decimals."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = [f"{w} " + " ".join(f"{v:.5f}" for v in rng.normal(size=dim)) for w in words]
    path.write_text(f"{len(rows)} {dim}\n" + "\n".join(rows) + "\n")
