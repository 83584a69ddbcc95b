"""End to end: how many jobs solve a WMD matrix is a scheduling choice, never part of what
is stored. After a finished run, another job count or grouping plans nothing, and a lost
block reruns alone.

A small run keeps it fast: the demo's subjects corpus only, no all-words evaluation, no
PCA matrix, no analyses.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e

SMALL_CONFIG = """
run: [subjects]
all_words: false
pca_dims: []
analyses:
  n2o: {enabled: false}
  crossmatch: {enabled: false}
  corpus_distances: {enabled: false}
  ksc: {enabled: false}
  wmd_vs_bow: {enabled: false}
wmd:
  blocks: 4
"""
CONFIG = ("--configfile", "config/config.yaml", "small.yaml")


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", *args]
    if "--cores" not in args:
        command += ["--cores", "2"]
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    return subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200
    )


def job_counts(run: subprocess.CompletedProcess) -> dict[str, int]:
    """The dry run's "Job stats" table as {rule: count}, without the total."""
    log = run.stdout + run.stderr
    if "Job stats:" not in log:
        return {}
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^(\w+)\s+(\d+)\s*$", table, re.M)
    return {rule: int(count) for rule, count in rows if rule != "total"}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("wmdeval-units")
    shutil.copy(REPO / "Snakefile", workdir)
    for part in ("workflow/rules", "workflow/report", "config", "envs", "profiles"):
        shutil.copytree(REPO / part, workdir / part)
    (workdir / "small.yaml").write_text(SMALL_CONFIG)
    run = snakemake(workdir, *CONFIG)
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_blocks_are_stored_under_names_from_the_config(small_run):
    blocks = small_run / "results" / "subjects" / "original" / "wmd_blocks" / "wmd"
    assert sorted(p.name for p in blocks.iterdir()) == [f"{k}-of-4.parquet" for k in range(1, 5)]


@pytest.mark.parametrize(
    "schedule",
    [
        ("--cores", "1"),
        ("--cores", "2", "--groups", "wmd_block=wmd", "--group-components", "wmd=3"),
        ("--cores", "2", "--groups", "wmd_block=wmd", "--group-components", "wmd=16"),
        ("--cores", "2", "--set-threads", "wmd_block=2"),
    ],
    ids=["one-core", "groups-of-3", "groups-of-16", "two-threads"],
)
def test_another_job_count_or_grouping_plans_nothing(small_run, schedule):
    plan = snakemake(small_run, *CONFIG, "-n", *schedule)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--set-scatter", "wmd_shards=16"), "--set-scatter wmd_shards is gone"),
        (("--config", "wmd={shards: 16}"), "wmd.shards was replaced by wmd.blocks"),
    ],
)
def test_the_old_shard_knob_fails_with_one_line_naming_its_replacement(small_run, option, message):
    plan = snakemake(small_run, *CONFIG, "-n", *option)
    assert plan.returncode != 0
    assert plan.stderr.strip().splitlines()[-1].startswith("wmdeval: "), plan.stderr[-2000:]
    assert message in plan.stderr.strip().splitlines()[-1]
    assert "Traceback" not in plan.stderr


def test_a_lost_block_reruns_alone_and_downstream_stays_done(small_run):
    results = small_run / "results" / "subjects" / "original"
    block = results / "wmd_blocks" / "wmd-tfidf" / "2-of-4.parquet"
    matrix = results / "distances" / "wmd-tfidf.parquet"
    scores = small_run / "results" / "scores.parquet"
    before, scores_before = matrix.read_bytes(), scores.stat().st_mtime_ns
    block.unlink()

    # A finished matrix does not need its blocks: nothing reruns.
    plan = snakemake(small_run, *CONFIG, "-n")
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]

    # As if the run was interrupted while this block was solving: nothing gathered yet.
    # Snakemake leaves a missing intermediate alone while everything after it is done, so
    # ask for the matrix (first: --configfile would take it for one more config file).
    matrix.unlink()
    target = str(matrix.relative_to(small_run))
    plan = snakemake(small_run, target, *CONFIG, "-n")
    # only the lost block is solved again (its 3 siblings are kept), then gathered
    assert job_counts(plan) == {"wmd_block": 1, "wmd_gather": 1}, plan.stdout[-3000:]
    run = snakemake(small_run, target, *CONFIG)
    assert run.returncode == 0, run.stderr[-3000:]
    assert block.exists() and matrix.read_bytes() == before

    # Same bytes: Snakemake compares the checksums of small inputs (up to
    # --max-checksum-file-size, 1 MB by default) and reruns nothing downstream.
    plan = snakemake(small_run, *CONFIG, "-n")
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]
    assert scores.stat().st_mtime_ns == scores_before
