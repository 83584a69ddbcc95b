"""End to end: the whole workflow with ``snakemake --cores 2`` in a temporary directory.

The demo config runs as shipped, plus a small TSV corpus with planted duplicates and a
train/test column, so the clean variant and the one-fold path are exercised too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from wmdeval import io as wio
from wmdeval.methods import METHODS

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e

TOY_ROWS = [
    ("the rocket launch reached orbit", "space", "train"),
    ("orbit of the moon and the rocket", "space", "train"),
    ("god and faith in the church", "religion", "train"),
    ("faith prayer church god", "religion", "train"),
    ("the rocket launch reached orbit", "space", "test"),  # duplicate of 0, across the split
    ("launch the rocket to the moon", "space", "train"),
    ("church god faith and prayer", "religion", "test"),
    ("prayer faith church god", "religion", "train"),  # same bag as 3 (word order differs)
    ("moon orbit launch", "space", "test"),
    ("moon orbit launch", "religion", "train"),  # duplicate of 8 with another label
    ("god church", "religion", "test"),
    ("rocket moon", "space", "test"),
]

EXTRA_CONFIG = """
datasets:
  toy:
    format: table
    path: toy.tsv
    split_column: split
    embeddings: demo-word2vec
    stopwords: none
embeddings:
  demo-word2vec:
    train_on: [newsgroups, polarity, toy]
"""


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    return subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=1200)


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("wmdeval")
    shutil.copy(REPO / "Snakefile", workdir)
    shutil.copytree(REPO / "workflow" / "rules", workdir / "workflow" / "rules")
    shutil.copytree(REPO / "workflow" / "report", workdir / "workflow" / "report")
    shutil.copytree(REPO / "config", workdir / "config")
    shutil.copytree(REPO / "envs", workdir / "envs")
    with open(workdir / "toy.tsv", "w") as handle:
        handle.write("text\tlabel\tsplit\n")
        handle.writelines(f"{t}\t{label}\t{s}\n" for t, label, s in TOY_ROWS)
    (workdir / "extra.yaml").write_text(EXTRA_CONFIG)
    run = snakemake(workdir, "--configfile", "config/config.yaml", "extra.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_scores_cover_every_dataset_variant_method_classifier_fold(finished_run):
    scores = pq.read_table(finished_run / "results" / "scores.parquet").to_pylist()
    expected_folds = {"newsgroups": 5, "polarity": 5, "toy": 1}
    for dataset, folds in expected_folds.items():
        for variant in ("original", "clean"):
            rows = [r for r in scores if r["dataset"] == dataset and r["variant"] == variant]
            # the 14 methods and WMD on 5-d PCA embeddings (pca_dims: [5])
            assert len(rows) == (len(METHODS) + 1) * 2 * folds, (dataset, variant)
            assert {r["method"] for r in rows} == {m.name for m in METHODS} | {"WMD (5-d PCA)"}
            assert {r["classifier"] for r in rows} == {"knn", "wknn"}
    assert all(0 <= r["test_error"] <= 1 for r in scores)
    knn = [r for r in scores if r["classifier"] == "knn"]
    assert all(1 <= r["param"] <= 19 for r in knn)
    # real text, real signal: WMD on the newsgroups beats chance by far
    news = [r["test_error"] for r in knn if r["dataset"] == "newsgroups"
            and r["method"] == "WMD" and r["variant"] == "original"]
    assert np.mean(news) < 0.3


def test_all_words_scores_keep_every_word(finished_run):
    results = finished_run / "results"
    allwords = pq.read_table(results / "scores_allwords.parquet").to_pylist()
    assert {r["method"] for r in allwords} == {m.name for m in METHODS if not m.is_wmd}
    assert {r["dataset"] for r in allwords} == {"newsgroups", "polarity", "toy"}
    ingest = pq.read_table(results / "polarity" / "ingest" / "documents.parquet")
    kept = pq.read_table(results / "polarity" / "original" / "allwords" / "documents.parquet")
    assert kept.column("words").equals(ingest.column("words"))
    table4 = (results / "tables" / "table4.md").read_text()
    assert "| BOW (L1/L1) |" in table4 and "| TF-IDF (L1/L1) |" in table4


def test_clean_variant_drops_planted_duplicates(finished_run):
    results = finished_run / "results"
    summary = pq.read_table(results / "toy" / "duplicates" / "summary.parquet").to_pylist()[0]
    assert summary["duplicate_pairs"] == 3
    assert summary["duplicate_samples"] == 6
    assert summary["pairs_different_labels"] == 1
    assert summary["pairs_across_train_test_any_fold"] == 2
    clean = pq.read_table(results / "toy" / "clean" / "documents.parquet")
    assert clean.num_rows == len(TOY_ROWS) - 3
    clean_splits = pq.read_table(results / "toy" / "clean" / "splits.parquet")
    assert set(clean_splits.column("doc_id").to_pylist()) == set(clean.column("doc_id").to_pylist())
    # the clean WMD matrix is the original's sub-matrix
    ids, original = wio.read_distances(results / "toy" / "original" / "distances" / "wmd.parquet")
    clean_ids, sub = wio.read_distances(results / "toy" / "clean" / "distances" / "wmd.parquet")
    rows = np.searchsorted(ids, clean_ids)
    np.testing.assert_array_equal(sub, original[np.ix_(rows, rows)])


def test_tables_and_figures_exist(finished_run):
    results = finished_run / "results"
    for name in ("table2", "table3", "table4", "table5", "table6", "table6_clean", "table7",
                 "table8", "table8_clean", "duplicates", "oov", "wmd_vs_bow", "n2o_robustness",
                 "crossmatch", "corpus_distances", "ksc"):
        for ext in ("csv", "md"):
            assert (results / "tables" / f"{name}.{ext}").stat().st_size > 0
    table2 = (results / "tables" / "table2.md").read_text()
    for method in METHODS:
        assert f"| {method.name} |" in table2
    for dataset in ("newsgroups", "polarity", "toy"):
        assert dataset in table2
    table8 = (results / "tables" / "table8.md").read_text()
    assert "| WMD (5-d PCA) |" in table8
    for png in ("n2o.png", "ksc_newsgroups_original.png", "ksc_toy_clean.png"):
        assert (results / "figures" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # N2O of a method with itself is 1
    n2o = pq.read_table(results / "polarity" / "original" / "analysis" / "n2o.parquet")
    same = [r["n2o"] for r in n2o.to_pylist() if r["method_a"] == r["method_b"]]
    assert same and all(v == 1.0 for v in same)
    for figure in ("figure3", "figure4", "figure5"):
        for variant in ("original", "clean"):
            png = results / "figures" / f"{figure}_{variant}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_holds_every_table_and_figure(finished_run):
    run = snakemake(finished_run, "--configfile", "config/config.yaml", "extra.yaml",
                    "--report", "results/report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ERROR/" not in run.stderr, run.stderr[-3000:]  # every caption is valid RST
    html = (finished_run / "results" / "report.html").read_text(errors="replace")
    for name in ("table2.csv", "table7.csv", "table8.csv", "duplicates.csv", "oov.csv",
                 "figure3_original.png", "figure4_clean.png", "figure5_original.png",
                 "wmd_vs_bow.csv", "n2o.png", "n2o_robustness.csv", "crossmatch.csv",
                 "corpus_distances.csv", "ksc.csv", "ksc_newsgroups_original.png",
                 "ksc_toy_clean.png"):
        assert name in html, name


def test_second_run_has_nothing_to_do(finished_run):
    run = snakemake(finished_run, "--configfile", "config/config.yaml", "extra.yaml", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_block_count_does_not_change_the_matrix(finished_run, tmp_path):
    """Re-solve a workflow matrix with another block count: byte-identical Parquet."""
    from wmdeval.cli import main

    results = finished_run / "results" / "polarity" / "original"
    blocks = [str(tmp_path / f"{k}.parquet") for k in range(1, 4)]
    for k, path in enumerate(blocks, 1):
        assert main(["wmd-block", "--documents", str(results / "documents.parquet"),
                     "--embeddings", str(finished_run / "results" / "polarity" / "vectors" /
                                         "embeddings.parquet"),
                     "--weighting", "bow", "--block", f"{k}-of-3", "--out", path]) == 0
    out = tmp_path / "wmd.parquet"
    assert main(["wmd-gather", "--documents", str(results / "documents.parquet"),
                 "--blocks", *blocks, "--method", "WMD", "--out", str(out)]) == 0
    assert out.read_bytes() == (results / "distances" / "wmd.parquet").read_bytes()


def test_dry_run_and_rulegraph_name_every_stage(finished_run):
    run = snakemake(finished_run, "--rulegraph", "--forceall")
    assert run.returncode == 0, run.stderr[-3000:]
    for rule in ("ingest", "train_embeddings", "lookup_embeddings", "duplicates", "filter_oov",
                 "select_variant", "wmd_block", "wmd_gather", "wmd_subset", "project_pca",
                 "evaluate", "evaluate_allwords", "collect_scores", "tables", "figure3",
                 "figure4", "figure5", "wmd_vs_bow", "analyses", "n2o_report",
                 "crossmatch_table", "corpus_distance_table", "ksc_report"):
        assert f'label = "{rule}"' in run.stdout, rule


def test_killed_block_job_leaves_nothing_and_only_it_reruns(finished_run):
    """Kill a real block job mid-solve, then let Snakemake finish: one block reruns."""
    import signal
    import time

    results = finished_run / "results" / "newsgroups" / "original"
    block = results / "wmd_blocks" / "wmd" / "2-of-4.parquet"
    matrix = results / "distances" / "wmd.parquet"
    before = matrix.read_bytes()
    # as if the run was killed while this block was solving: nothing gathered yet
    block.unlink()
    matrix.unlink()
    command = [str(Path(sys.executable).parent / "wmdeval"), "wmd-block",
               "--documents", str(results / "documents.parquet"),
               "--embeddings", str(finished_run / "results" / "newsgroups" / "vectors" /
                                   "embeddings.parquet"),
               "--weighting", "bow", "--block", "2-of-4", "--out", str(block)]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # past start-up, inside the solve
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert not block.exists()
    assert not list(block.parent.glob(f".{block.name}*"))  # no partial file either

    # Snakemake leaves missing intermediates alone while everything downstream is up to
    # date, so ask for the matrix itself, as a run interrupted before gathering would
    target = str(matrix.relative_to(finished_run))
    plan = snakemake(finished_run, target, "--configfile", "config/config.yaml", "extra.yaml",
                     "-n")
    # the job-stats table: "<rule> <count>" lines (the Reasons section also names rules)
    rows = [line.split() for line in (plan.stdout + plan.stderr).splitlines()]
    counts = {row[0]: row[1] for row in rows
              if len(row) == 2 and row[0] in ("wmd_block", "wmd_gather") and row[1].isdigit()}
    # only the killed block is solved again (3 of its siblings are kept), then gathered
    assert counts == {"wmd_block": "1", "wmd_gather": "1"}, plan.stderr[-3000:]
    run = snakemake(finished_run, target, "--configfile", "config/config.yaml", "extra.yaml")
    assert run.returncode == 0, run.stderr[-3000:]
    assert matrix.read_bytes() == before
