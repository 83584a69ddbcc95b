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

from wmdeval.core import io as wio
from wmdeval.core.methods import BEYOND_METHODS, METHODS

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
    embeddings: toy-word2vec
    stopwords: none
embeddings:
  # The toy corpus gets vectors of its own, so the demo corpora's results are exactly those
  # of the demo alone: the README quotes them (test_readme_*).
  toy-word2vec:
    format: train-word2vec
    train_on: [toy]
    min_count: 1
    seed: 0
"""


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    bin_dir = str(Path(sys.executable).parent)
    # no OPENBLAS_CORETYPE here: the workflow pins every job's kernels itself (config
    # blas_kernels), and test_demo_datasets_outputs_are_the_recorded_bytes checks the bytes
    # of its default (Haswell) kernels
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    return subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200
    )


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
    expected_folds = {"newsgroups": 5, "subjects": 5, "toy": 1}
    for dataset, folds in expected_folds.items():
        for variant in ("original", "clean"):
            rows = [r for r in scores if r["dataset"] == dataset and r["variant"] == variant]
            # the 14 methods, WMD on 5-d PCA embeddings (pca_dims: [5]) and the four
            # built-in methods beyond the paper the demo switches on
            names = {m.name for m in METHODS} | {"WMD (5-d PCA)"}
            names |= {m.name for m in BEYOND_METHODS}
            assert len(rows) == len(names) * 2 * folds, (dataset, variant)
            assert {r["method"] for r in rows} == names
            assert {r["classifier"] for r in rows} == {"knn", "wknn"}
    assert all(0 <= r["test_error"] <= 1 for r in scores)
    knn = [r for r in scores if r["classifier"] == "knn"]
    assert all(1 <= r["param"] <= 19 for r in knn)
    # real text, real signal: WMD on the newsgroups beats chance by far
    news = [
        r["test_error"]
        for r in knn
        if r["dataset"] == "newsgroups" and r["method"] == "WMD" and r["variant"] == "original"
    ]
    assert np.mean(news) < 0.3


# What the demo must show: the paper's findings, on real bundled text.
WELL_BELOW_CHANCE = 0.5  # best error at most half the error of always guessing the majority
WMD_VS_BOW_MARGIN = 0.05  # |mean error of WMD - mean error of BOW (L1/L1)|, a fraction
# On the short subject lines, which share few words, WMD is clearly better, so closeness is
# asked of at least one corpus (the post bodies), not of every one.


def knn_mean_errors(scores: list[dict], dataset: str, variant: str) -> dict[str, float]:
    """Method -> kNN test error averaged over the folds (Table 2's means, as fractions)."""
    errors: dict[str, list[float]] = {}
    for r in scores:
        if (r["dataset"], r["variant"], r["classifier"]) == (dataset, variant, "knn"):
            errors.setdefault(r["method"], []).append(r["test_error"])
    return {method: float(np.mean(values)) for method, values in errors.items()}


def test_demo_shows_duplicates_errors_below_chance_and_wmd_close_to_bow(finished_run):
    import pyarrow.csv as pcsv
    import yaml

    results = finished_run / "results"
    config = yaml.safe_load((finished_run / "config" / "config.yaml").read_text())
    demo = sorted(name for name, spec in config["datasets"].items() if spec["format"] == "demo")
    duplicates = pcsv.read_csv(results / "tables" / "duplicates.csv").to_pylist()
    # real duplicates in the original variant of at least one demo corpus, none once cleaned
    found = {
        r["dataset"]: r["duplicate_pairs"]
        for r in duplicates
        if r["dataset"] in demo and r["variant"] == "original"
    }
    assert max(found.values()) > 0, found
    assert all(r["duplicate_pairs"] == 0 for r in duplicates if r["variant"] == "clean")
    scores = pq.read_table(results / "scores.parquet").to_pylist()
    wmd_minus_bow = {}
    for dataset in demo:
        labels = pq.read_table(results / dataset / "ingest" / "documents.parquet")
        counts = np.unique(labels.column("label").to_pylist(), return_counts=True)[1]
        chance = 1 - counts.max() / counts.sum()
        mean = knn_mean_errors(scores, dataset, "original")
        assert min(mean.values()) <= WELL_BELOW_CHANCE * chance, (dataset, chance, mean)
        wmd_minus_bow[dataset] = mean["WMD"] - mean["BOW (L1/L1)"]
    assert min(abs(gap) for gap in wmd_minus_bow.values()) <= WMD_VS_BOW_MARGIN, wmd_minus_bow
    # the paper's point about duplicates: without them the errors rise
    for dataset in (name for name, pairs in found.items() if pairs):
        original = knn_mean_errors(scores, dataset, "original")["BOW (L1/L1)"]
        clean = knn_mean_errors(scores, dataset, "clean")["BOW (L1/L1)"]
        assert clean > original, (dataset, original, clean)


def test_all_words_scores_keep_every_word(finished_run):
    results = finished_run / "results"
    allwords = pq.read_table(results / "scores_allwords.parquet").to_pylist()
    assert {r["method"] for r in allwords} == {m.name for m in METHODS if not m.is_wmd}
    assert {r["dataset"] for r in allwords} == {"newsgroups", "subjects", "toy"}
    ingest = pq.read_table(results / "subjects" / "ingest" / "documents.parquet")
    kept = pq.read_table(results / "subjects" / "original" / "allwords" / "documents.parquet")
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
    for name in (
        "table2",
        "table3",
        "table4",
        "table5",
        "table6",
        "table6_clean",
        "table7",
        "table8",
        "table8_clean",
        "duplicates",
        "oov",
        "wmd_vs_bow",
        "n2o_robustness",
        "crossmatch",
        "corpus_distances",
        "ksc",
    ):
        for ext in ("csv", "md"):
            assert (results / "tables" / f"{name}.{ext}").stat().st_size > 0
    table2 = (results / "tables" / "table2.md").read_text()
    for method in METHODS:
        assert f"| {method.name} |" in table2
    for dataset in ("newsgroups", "subjects", "toy"):
        assert dataset in table2
    for method in BEYOND_METHODS:  # beyond the paper, marked as such
        assert f"| {method.name} † |" in table2
    assert "beyond the paper" in table2
    table8 = (results / "tables" / "table8.md").read_text()
    assert "| WMD (5-d PCA) |" in table8
    for png in ("n2o.png", "ksc_newsgroups_original.png", "ksc_toy_clean.png"):
        assert (results / "figures" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # N2O of a method with itself is 1
    n2o = pq.read_table(results / "subjects" / "original" / "analysis" / "n2o.parquet")
    same = [r["n2o"] for r in n2o.to_pylist() if r["method_a"] == r["method_b"]]
    assert same and all(v == 1.0 for v in same)
    for name in ("significance.csv", "significance_datasets.csv", "significance.md"):
        assert (results / "tables" / name).stat().st_size > 0
    for name in ("critical_difference.png", "critical_difference.svg"):
        assert (results / "figures" / name).stat().st_size > 10_000
    for figure in ("figure3", "figure4", "figure5"):
        for variant in ("original", "clean"):
            png = results / "figures" / f"{figure}_{variant}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_report_holds_every_table_and_figure(finished_run):
    run = snakemake(
        finished_run,
        "--configfile",
        "config/config.yaml",
        "extra.yaml",
        "--report",
        "results/report.html",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ERROR/" not in run.stderr, run.stderr[-3000:]  # every caption is valid RST
    html = (finished_run / "results" / "report.html").read_text(errors="replace")
    for name in (
        "table2.csv",
        "table7.csv",
        "table8.csv",
        "duplicates.csv",
        "oov.csv",
        "figure3_original.png",
        "figure4_clean.png",
        "figure5_original.png",
        "wmd_vs_bow.csv",
        "n2o.png",
        "n2o_robustness.csv",
        "crossmatch.csv",
        "corpus_distances.csv",
        "ksc.csv",
        "ksc_newsgroups_original.png",
        "ksc_toy_clean.png",
        "significance.csv",
        "critical_difference.png",
    ):
        assert name in html, name


def test_second_run_has_nothing_to_do(finished_run):
    run = snakemake(finished_run, "--configfile", "config/config.yaml", "extra.yaml", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_block_count_does_not_change_the_matrix(finished_run, tmp_path):
    """Re-solve a workflow matrix with another block count: byte-identical Parquet."""
    from wmdeval.cli import main

    results = finished_run / "results" / "subjects" / "original"
    blocks = [str(tmp_path / f"{k}.parquet") for k in range(1, 4)]
    for k, path in enumerate(blocks, 1):
        assert (
            main(
                [
                    "wmd-block",
                    "--documents",
                    str(results / "documents.parquet"),
                    "--embeddings",
                    str(finished_run / "results" / "subjects" / "vectors" / "embeddings.parquet"),
                    "--weighting",
                    "bow",
                    "--block",
                    f"{k}-of-3",
                    "--threads",
                    "1",
                    "--out",
                    path,
                ]
            )
            == 0
        )
    out = tmp_path / "wmd.parquet"
    assert (
        main(
            [
                "wmd-gather",
                "--documents",
                str(results / "documents.parquet"),
                "--blocks",
                *blocks,
                "--method",
                "WMD",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert out.read_bytes() == (results / "distances" / "wmd.parquet").read_bytes()


def test_dry_run_and_rulegraph_name_every_stage(finished_run):
    run = snakemake(finished_run, "--rulegraph", "--forceall")
    assert run.returncode == 0, run.stderr[-3000:]
    for rule in (
        "ingest",
        "train_embeddings",
        "lookup_embeddings",
        "duplicates",
        "filter_oov",
        "select_variant",
        "wmd_block",
        "wmd_gather",
        "wmd_subset",
        "project_pca",
        "evaluate",
        "evaluate_allwords",
        "collect_scores",
        "tables",
        "figure3",
        "figure4",
        "figure5",
        "analyses",
        "wmd_vs_bow_table",
        "n2o_report",
        "crossmatch_table",
        "corpus_distance_table",
        "ksc_report",
    ):
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
    command = [
        str(Path(sys.executable).parent / "wmdeval"),
        "wmd-block",
        "--documents",
        str(results / "documents.parquet"),
        "--embeddings",
        str(finished_run / "results" / "newsgroups" / "vectors" / "embeddings.parquet"),
        "--weighting",
        "bow",
        "--block",
        "2-of-4",
        "--threads",
        "1",
        "--out",
        str(block),
    ]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)  # past start-up, inside the solve
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert not block.exists()
    assert not list(block.parent.glob(f".{block.name}*"))  # no partial file either

    # Snakemake leaves missing intermediates alone while everything downstream is up to
    # date, so ask for the matrix itself, as a run interrupted before gathering would
    target = str(matrix.relative_to(finished_run))
    plan = snakemake(finished_run, target, "--configfile", "config/config.yaml", "extra.yaml", "-n")
    # the job-stats table: "<rule> <count>" lines (the Reasons section also names rules)
    rows = [line.split() for line in (plan.stdout + plan.stderr).splitlines()]
    counts = {
        row[0]: row[1]
        for row in rows
        if len(row) == 2 and row[0] in ("wmd_block", "wmd_gather") and row[1].isdigit()
    }
    # only the killed block is solved again (3 of its siblings are kept), then gathered
    assert counts == {"wmd_block": "1", "wmd_gather": "1"}, plan.stderr[-3000:]
    run = snakemake(finished_run, target, "--configfile", "config/config.yaml", "extra.yaml")
    assert run.returncode == 0, run.stderr[-3000:]
    assert matrix.read_bytes() == before


@pytest.fixture(scope="module")
def knn_run(finished_run, tmp_path_factory):
    """The same workflow switched to wmd.mode knn, in a copy of the finished full-mode
    run: the neighbour searches, the samples for the analyses and whatever reads them run."""
    workdir = tmp_path_factory.mktemp("wmdeval-knn") / "run"
    shutil.copytree(finished_run, workdir, symlinks=True)
    (workdir / "knn.yaml").write_text("wmd:\n  mode: knn\n  search_shards: 3\n")
    run = snakemake(workdir, "--configfile", "config/config.yaml", "extra.yaml", "knn.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    assert (
        "WMD mode per dataset: newsgroups=knn (set in config), subjects=knn (set in config), "
        "toy=knn (set in config)"
    ) in run.stderr
    return workdir


def test_knn_mode_gives_the_full_modes_scores_byte_for_byte(finished_run, knn_run):
    """Demo (five folds) and toy corpus (one fold, train/test column), both variants:
    every scores.parquet row and column is the full matrices' own."""
    scores = sorted(finished_run.glob("results/*/*/scores.parquet"))
    assert len(scores) == 6
    for full in scores:
        relative = full.relative_to(finished_run)
        assert (knn_run / relative).read_bytes() == full.read_bytes(), relative
    assert (knn_run / "results" / "scores.parquet").read_bytes() == (
        finished_run / "results" / "scores.parquet"
    ).read_bytes()
    tables = list(knn_run.glob("results/*/*/neighbours/*.certificates.parquet"))
    # 3 datasets x 2 variants x (WMD, WMD-TF-IDF, WRD, 5-d PCA, and RWMD from WMD's search)
    assert len(tables) == 30
    assert len(list(knn_run.glob("results/*/*/neighbours/rwmd.certificates.parquet"))) == 6


def test_knn_mode_solves_fewer_pairs_and_analyses_read_a_sample(knn_run):
    from wmdeval.core import schemas

    pairs = wio.read_table(
        knn_run / "results/newsgroups/original/neighbours/wmd.parquet", schemas.NEIGHBOUR_PAIRS
    )
    n = pq.read_metadata(knn_run / "results/newsgroups/original/documents.parquet").num_rows
    query = pairs.column("query").to_numpy().astype(np.int64)
    candidate = pairs.column("candidate").to_numpy().astype(np.int64)
    distinct = len(np.unique(np.minimum(query, candidate) * n * 10 + np.maximum(query, candidate)))
    assert distinct < 0.9 * n * (n - 1) / 2
    # the analyses and Figures 4-5 read the full matrices of the seeded sample
    assert (knn_run / "results/newsgroups/original/sample/distances/wmd.parquet").exists()
    for name in ("figure4_original.png", "figure5_original.png"):
        assert (knn_run / "results/figures" / name).stat().st_size > 10_000


def test_knn_mode_clean_variant_reuses_the_originals_pairs_and_sample(knn_run):
    """The clean variant's searches of WMD, WRD and PCA WMD take the original's solved
    pairs and certificates (their scores are full mode's, test above); its sample is the original's
    without the dropped duplicates, its WMD matrix cut from the original sample's."""
    import re

    for method, reused in (("wmd", True), ("wrd", True), ("wmd-pca5", True), ("wmd-tfidf", False)):
        logs = sorted(
            (knn_run / "results/logs/subjects/clean/neighbour_shards" / method).glob("*.log")
        )
        assert len(logs) == 3
        counts = [
            int(re.search(r"(\d+) distances reused", log.read_text()).group(1)) for log in logs
        ]
        assert (sum(counts) > 0) == reused, (method, counts)
        # and its certificates: lists within an original list of the query need no search
        settled = [
            int(re.search(r"(\d+) lists settled by certificates", log.read_text()).group(1))
            for log in logs
        ]
        assert (sum(settled) > 0) == reused, (method, settled)
    root = knn_run / "results/subjects"
    ids = {
        variant: set(
            wio.read_documents(root / variant / "sample/documents.parquet")
            .column("doc_id")
            .to_pylist()
        )
        for variant in ("original", "clean")
    }
    clean = set(wio.read_documents(root / "clean/documents.parquet").column("doc_id").to_pylist())
    assert ids["clean"] == ids["original"] & clean
    assert not (root / "clean/sample/wmd_blocks/wmd").exists()  # cut, not solved
    assert (root / "clean/sample/wmd_blocks/wmd-tfidf").exists()  # TF-IDF: solved
    original = wio.read_table(root / "original/sample/distances/wmd.parquet")
    cut = wio.read_table(root / "clean/sample/distances/wmd.parquet")
    rows = dict(
        zip(
            original.column("doc_id").to_pylist(),
            original.column("distances").to_pylist(),
            strict=True,
        )
    )
    order = original.column("doc_id").to_pylist()
    for doc_id, row in zip(
        cut.column("doc_id").to_pylist(), cut.column("distances").to_pylist(), strict=True
    ):
        expected = [d for other, d in zip(order, rows[doc_id], strict=True) if other in clean]
        assert np.array_equal(np.array(row), np.array(expected), equal_nan=True)


def test_knn_mode_second_run_has_nothing_to_do(knn_run):
    run = snakemake(knn_run, "--configfile", "config/config.yaml", "extra.yaml", "knn.yaml", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_killed_search_job_leaves_nothing_and_only_it_reruns(knn_run):
    """Kill a real neighbour-search job, then let Snakemake finish: one shard reruns."""
    import signal
    import time

    results = knn_run / "results" / "newsgroups" / "original"
    shard = results / "neighbour_shards" / "wmd-tfidf" / "2-of-3.parquet"
    certificates = shard.with_name("2-of-3.certificates.parquet")
    table = results / "neighbours" / "wmd-tfidf.parquet"
    before = table.read_bytes()
    for path in (shard, certificates, table, table.with_name("wmd-tfidf.certificates.parquet")):
        path.unlink()
    command = [
        str(Path(sys.executable).parent / "wmdeval"),
        "wmd-search",
        "--documents",
        str(results / "documents.parquet"),
        "--splits",
        str(results / "splits.parquet"),
        "--embeddings",
        str(knn_run / "results" / "newsgroups" / "vectors" / "embeddings.parquet"),
        "--weighting",
        "tfidf",
        "--settings",
        "{}",
        "--shard",
        "2-of-3",
        "--threads",
        "1",
        "--out-pairs",
        str(shard),
        "--out-certificates",
        str(certificates),
    ]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert job.returncode == -signal.SIGKILL
    assert not shard.exists() and not certificates.exists()
    assert not list(shard.parent.glob(".*"))  # no partial file either

    target = str(table.relative_to(knn_run))
    config = ("--configfile", "config/config.yaml", "extra.yaml", "knn.yaml")
    plan = snakemake(knn_run, target, *config, "-n")
    rows = [line.split() for line in (plan.stdout + plan.stderr).splitlines()]
    counts = {
        row[0]: row[1]
        for row in rows
        if len(row) == 2 and row[0] in ("wmd_search", "wmd_neighbours") and row[1].isdigit()
    }
    assert counts == {"wmd_search": "1", "wmd_neighbours": "1"}, plan.stderr[-3000:]
    run = snakemake(knn_run, target, *config)
    assert run.returncode == 0, run.stderr[-3000:]
    assert table.read_bytes() == before


# ------------------------------------------------------- bring your own distance

BYO_CONFIG = """
methods:
  vectors:
    onehot: {path: "byo/{dataset}.onehot.parquet", metrics: [l1, cosine]}
    onehotnpy: {path: "byo/{dataset}.onehot.npy", ids: "byo/{dataset}.ids.txt", metrics: [l1]}
  matrices:
    wmdcopy: {path: "byo/{dataset}.wmd.parquet"}
  callables:
    bowl1: {function: "mydistances:bow_l1", shards: 3}
significance:
  reference: bowl1
"""


def _one_hot_bags(documents_path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(doc_ids, L1-normalised bag-of-words vectors); NaN for a document without words."""
    table = pq.read_table(documents_path).sort_by("doc_id")
    words = table.column("words").to_pylist()
    vocabulary = {w: c for c, w in enumerate(sorted({w for ws in words for w in ws}))}
    bags = np.zeros((len(words), len(vocabulary)))
    for d, (ws, cs) in enumerate(zip(words, table.column("counts").to_pylist(), strict=True)):
        for w, c in zip(ws, cs, strict=True):
            bags[d, vocabulary[w]] = c
    totals = bags.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        bags = bags / totals  # 0/0: no words, no direction
    return table.column("doc_id").to_numpy(), bags


@pytest.fixture(scope="module")
def byo_run(finished_run, tmp_path_factory):
    """The demo plus the toy corpus with a user's distances added to a finished run:
    one-hot document vectors (Parquet, and .npy with ids), a precomputed matrix (a copy of
    WMD's) and a callable (BOW (L1/L1) written plainly), no code change to the workflow."""
    import pyarrow as pa

    workdir = tmp_path_factory.mktemp("wmdeval-byo") / "run"
    shutil.copytree(finished_run, workdir, symlinks=True)
    byo = workdir / "byo"
    byo.mkdir()
    for dataset in ("newsgroups", "subjects", "toy"):
        original = workdir / "results" / dataset / "original"
        doc_ids, bags = _one_hot_bags(original / "documents.parquet")
        vectors = pa.table({"doc_id": doc_ids, "vector": [list(row) for row in bags]})
        # rows shuffled: matched by doc_id, never by position
        order = np.random.default_rng(0).permutation(len(doc_ids))
        pq.write_table(vectors.take(pa.array(order)), byo / f"{dataset}.onehot.parquet")
        np.save(byo / f"{dataset}.onehot.npy", bags[order])
        (byo / f"{dataset}.ids.txt").write_text("".join(f"{i}\n" for i in doc_ids[order]))
        shutil.copy(original / "distances" / "wmd.parquet", byo / f"{dataset}.wmd.parquet")
    # the README's example function, as printed there
    example = _readme_block("byo-callable").removeprefix("```python").removesuffix("```")
    (workdir / "mydistances.py").write_text(example)
    (workdir / "byo.yaml").write_text(BYO_CONFIG)
    run = snakemake(workdir, "--configfile", "config/config.yaml", "extra.yaml", "byo.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


SCORE_FIELDS = ("param", "val_accuracy", "test_error", "n_test", "n_test_empty")


def _score_rows(scores: list[dict], method: str) -> list[tuple]:
    return [
        (r["dataset"], r["variant"], r["classifier"], r["fold"], *(r[f] for f in SCORE_FIELDS))
        for r in scores
        if r["method"] == method
    ]


@pytest.mark.parametrize(
    ("method", "same_as"),
    [
        ("bowl1", "BOW (L1/L1)"),  # a callable equal to BOW (L1/L1)
        ("onehot (L1)", "BOW (L1/L1)"),  # one-hot L1-normalised vectors, L1 distance
        ("onehotnpy (L1)", "BOW (L1/L1)"),  # the same from .npy + ids
        ("wmdcopy", "WMD"),  # a precomputed matrix: WMD's own
    ],
)
def test_your_own_distance_reproduces_the_methods_scores_row_for_row(byo_run, method, same_as):
    scores = pq.read_table(byo_run / "results" / "scores.parquet").to_pylist()
    rows = _score_rows(scores, method)
    assert len(rows) == (5 + 5 + 1) * 2 * 2  # folds x variants x classifiers
    assert rows == _score_rows(scores, same_as)
    predictions = pq.read_table(byo_run / "results" / "predictions.parquet")
    by_method = {}
    for row in predictions.to_pylist():
        by_method.setdefault(row["method"], []).append(
            tuple(row[k] for k in ("dataset", "variant", "classifier", "fold", "doc_id"))
            + (row["predicted_label"],)
        )
    assert by_method[method] == by_method[same_as]


def test_your_own_distance_is_in_every_output_and_a_rerun_does_nothing(byo_run):
    import pyarrow.csv as pcsv

    results = byo_run / "results"
    assert len(list(results.glob("newsgroups/original/callable_shards/bowl1/*.parquet"))) == 3
    table2 = (results / "tables" / "table2.md").read_text()
    for name in ("bowl1", "onehot (L1)", "onehot (cosine)", "onehotnpy (L1)", "wmdcopy"):
        assert f"| {name} † |" in table2
    significance = pcsv.read_csv(results / "tables" / "significance.csv").to_pylist()
    same = [r for r in significance if r["reference"] == "bowl1" and r["method"] == "BOW (L1/L1)"]
    assert len(same) == 3 * 2 * 2
    assert all(r["b"] == 0 and r["c"] == 0 and r["p_value"] == 1.0 for r in same)
    n2o = pq.read_table(results / "subjects" / "original" / "analysis" / "n2o.parquet")
    assert "bowl1" in set(n2o.column("method_a").to_pylist())
    run = snakemake(byo_run, "--configfile", "config/config.yaml", "extra.yaml", "byo.yaml", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


BAD_INPUTS = {
    # a document without a vector
    "vectors": (
        "methods:\n  vectors:\n    bad: {path: byo/bad.parquet, metrics: [l2]}\n",
        "results/subjects/original/distances/vectors-bad-l2.parquet",
    ),
    # a matrix with an infinite distance
    "matrix": (
        "methods:\n  matrices:\n    bad: {path: byo/bad.parquet}\n",
        "results/subjects/original/distances/matrix-bad.parquet",
    ),
    # a function returning the wrong shape
    "callable": (
        'methods:\n  callables:\n    bad: {function: "mydistances:wrong_shape"}\n',
        "results/subjects/original/callable_shards/bad/1-of-1.parquet",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_input_of_your_own_distance_is_one_line_and_leaves_nothing(byo_run, kind, tmp_path):
    import pyarrow as pa

    workdir = tmp_path / "run"
    workdir.mkdir()
    for name in ("Snakefile", "mydistances.py", "toy.tsv", "extra.yaml"):
        shutil.copy(byo_run / name, workdir)
    for name in ("workflow", "config", "envs"):
        shutil.copytree(byo_run / name, workdir / name, symlinks=True)
    # the subject lines' variant documents, as the workflow made them
    shutil.copytree(byo_run / "results", workdir / "results", symlinks=True)
    shutil.copytree(byo_run / ".snakemake", workdir / ".snakemake", symlinks=True)
    (workdir / "byo").mkdir()
    doc_ids, bags = _one_hot_bags(workdir / "results/subjects/original/documents.parquet")
    if kind == "vectors":
        table = pa.table({"doc_id": doc_ids[1:], "vector": [list(row) for row in bags[1:]]})
    else:
        matrix = np.zeros((len(doc_ids), len(doc_ids)))
        matrix[3, 4] = np.inf
        flat = pa.array(matrix.astype(np.float32).ravel())
        offsets = pa.array(np.arange(0, matrix.size + 1, len(doc_ids), dtype=np.int32))
        rows = pa.ListArray.from_arrays(offsets, flat)
        table = pa.table({"doc_id": doc_ids.astype(np.int32), "distances": rows})
    pq.write_table(table, workdir / "byo" / "bad.parquet")
    with open(workdir / "mydistances.py", "a") as handle:
        handle.write("\n\ndef wrong_shape(documents, embeddings, rows, cols):\n")
        handle.write("    return np.zeros((len(rows), len(cols) + 1))\n")
    config, target = BAD_INPUTS[kind]
    (workdir / "bad.yaml").write_text(config)
    # the target first: --configfile takes every name after it
    run = snakemake(workdir, target, "--configfile", "config/config.yaml", "extra.yaml", "bad.yaml")
    assert run.returncode != 0
    assert not (workdir / target).exists()
    logs = [
        log
        for log in (workdir / "results" / "logs" / "subjects" / "original").rglob("*.log")
        if "bad" in log.relative_to(workdir).as_posix()
    ]
    assert len(logs) == 1, logs
    lines = logs[0].read_text().strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert "bad" in lines[0] or "wrong_shape" in lines[0], lines


def _snapshot(results: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under results/ (logs and benchmarks aside): modification time and bytes."""
    return {
        str(p.relative_to(results)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(results.rglob("*"))
        if p.is_file() and p.relative_to(results).parts[0] not in ("logs", "benchmarks")
    }


MISSING_INPUT_CONFIGS = {
    # the README's own-corpus example, without its data files
    "my.yaml": (
        "datasets:\n"
        "  reviews:\n"
        "    format: table\n"
        "    path: data/reviews.tsv\n"
        "    text_column: text\n"
        "    label_column: label\n"
        "    split_column: split\n"
        "    embeddings: glove\n"
        "    stopwords: kusner115\n"
        "embeddings:\n"
        "  glove:\n"
        "    format: glove\n"
        "    path: data/glove.6B.300d.txt\n"
        "    limit: null\n"
        "run: [reviews]\n"
        "all_words: true\n",
        "datasets.reviews.path: data/reviews.tsv: no such file",
    ),
    "gone.yaml": (
        "datasets: {gone: {format: kusner-mat, path: /nonexistent/nothing.mat}}\nrun: [gone]\n",
        "datasets.gone.path: /nonexistent/nothing.mat: no such file",
    ),
}


@pytest.mark.parametrize("name", sorted(MISSING_INPUT_CONFIGS))
def test_second_config_with_a_missing_file_stops_as_in_a_fresh_directory(
    finished_run, tmp_path, name
):
    """A finished directory must not hide a missing input behind its old outputs: the run
    stops with the same one line as in a fresh directory, and rewrites nothing."""
    text, message = MISSING_INPUT_CONFIGS[name]
    config = tmp_path / name
    config.write_text(text)
    before = _snapshot(finished_run / "results")
    run = snakemake(finished_run, "--configfile", "config/config.yaml", str(config))
    assert run.returncode != 0, run.stdout[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("wmdeval:")]
    assert len(errors) == 1 and message in errors[0], run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert _snapshot(finished_run / "results") == before

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    shutil.copy(REPO / "Snakefile", fresh)
    shutil.copytree(REPO / "workflow" / "rules", fresh / "workflow" / "rules")
    shutil.copytree(REPO / "config", fresh / "config")
    in_fresh = snakemake(fresh, "--configfile", "config/config.yaml", str(config))
    assert in_fresh.returncode == run.returncode
    assert [line for line in in_fresh.stderr.splitlines() if line.startswith("wmdeval:")] == errors


def test_changing_the_datasets_reruns_every_aggregate(finished_run, tmp_path):
    """A config that covers fewer datasets plans every job that combines datasets again."""
    config = tmp_path / "subjects_only.yaml"
    config.write_text("run: [subjects]\n")
    plan = snakemake(
        finished_run, "--configfile", "config/config.yaml", "extra.yaml", str(config), "-n"
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    rows = [line.split() for line in (plan.stdout + plan.stderr).splitlines()]
    planned = {row[0] for row in rows if len(row) == 2 and row[1].isdigit()}
    aggregates = {
        "collect_scores",
        "collect_scores_allwords",
        "tables",
        "figure3",
        "figure4",
        "figure5",
        "duplicates_table",
        "oov_table",
        "wmd_vs_bow_table",
        "n2o_report",
        "crossmatch_table",
        "corpus_distance_table",
        "ksc_report",
        "collect_predictions",
        "significance",
    }
    assert aggregates <= planned, sorted(aggregates - planned)
    # and nothing per dataset: subjects' own results are all there
    assert not planned & {"ingest", "evaluate", "wmd_gather", "analyses"}


# ------------------------------------------------------- numbers the README quotes
README = REPO / "README.md"
STATISTICS = REPO / "docs" / "statistics.md"  # the demo's significance rows


def _demo_datasets(workdir: Path) -> list[str]:
    import yaml

    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    return list(config["datasets"])


def _readme_block(name: str, page: Path = README) -> str:
    """The README's (or ``page``'s) text between ``<!-- name -->`` and ``<!-- /name -->``."""
    text = page.read_text(encoding="utf-8")
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    assert start in text and end in text, f"{page.name} lacks the {name} markers"
    return text.split(start, 1)[1].split(end, 1)[0].strip()


@pytest.mark.parametrize("table", ["table2", "table3"])
def test_readme_demo_tables_are_the_demo_output(finished_run, table):
    """The README's Tables 2 and 3 are the demo's: the rows the tables job writes, for the
    demo's datasets (the toy corpus of this run has its own embeddings, so they are the
    same as in a run of the demo alone)."""
    from wmdeval.core import schemas
    from wmdeval.reporting import tables as report

    datasets = _demo_datasets(finished_run)
    scores = wio.read_table(finished_run / "results" / "scores.parquet", schemas.SCORES)
    spec = next(spec for spec in report.TABLES if spec.name == table)
    rows = report.paper_table(
        scores,
        spec.variant,
        spec.classifier,
        report.table_methods(spec, scores),
        datasets,
        reference_variant=spec.reference_variant or spec.variant,
    )
    expected = report.markdown_table(rows, report.table_header(datasets))
    assert _readme_block(f"demo-{table}") == expected, (
        f"README.md's demo {table} has drifted; paste this between its markers:\n" + expected
    )


def test_readme_significance_rows_are_the_demo_output(finished_run):
    """The README's significance rows (subject lines, original, kNN, against BOW (L1/L1))
    are those the significance job wrote, rendered as its Markdown renders them."""
    import pyarrow.csv as pcsv

    from wmdeval.analyses import significance
    from wmdeval.reporting import tables as report

    table = pcsv.read_csv(finished_run / "results" / "tables" / "significance.csv")
    keep = [
        (r["dataset"], r["variant"], r["classifier"], r["reference"])
        == ("subjects", "original", "knn", "BOW (L1/L1)")
        for r in table.to_pylist()
    ]
    header, rows = significance.significance_rows(table.filter(keep))
    expected = report.markdown_table(rows, header)
    assert _readme_block("demo-significance", STATISTICS) == expected, (
        "README.md's demo significance rows have drifted; paste this between its markers:\n"
        + expected
    )


def test_demo_datasets_outputs_are_the_recorded_bytes(finished_run):
    """Every per-dataset output of the demo's corpora (documents, duplicates, vectors, WMD
    blocks and matrices, scores, analyses) has the bytes recorded in
    benchmarks/demo_outputs.sha256. This run adds a toy corpus with embeddings of its own,
    so the demo corpora's files are those of the demo alone; the aggregates (tables,
    figures) also cover the toy corpus, and benchmarks/demo_identity.py checks them."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import demo_identity
    finally:
        sys.path.pop(0)

    prefixes = tuple(f"results/{d}/" for d in _demo_datasets(finished_run))
    recorded = {p: h for p, h in demo_identity.read_manifest().items() if p.startswith(prefixes)}
    found = {
        p: h for p, h in demo_identity.output_hashes(finished_run).items() if p.startswith(prefixes)
    }
    assert len(recorded) > 100
    changes = demo_identity.compare(found, recorded)
    assert not any(changes.values()), (
        "the demo's outputs changed; if on purpose, rerun "
        f"python benchmarks/demo_identity.py --write: {changes}"
    )


def test_readme_figure5_image_is_the_demo_figure(finished_run, tmp_path):
    """docs/figure5_original.png is Figure 5 of the demo, byte for byte (drawn as the
    figure5 rule draws it, for the demo's datasets)."""
    import yaml

    from wmdeval.core import config as wconfig
    from wmdeval.reporting import figures

    # the demo config with the schema's defaults filled in, as the workflow sees it
    config = wconfig.validate(yaml.safe_load((finished_run / "config" / "config.yaml").read_text()))
    results = finished_run / "results"
    dim = config["pca_dims"][0]
    items = [
        (
            d,
            results / d / "original" / "distances" / "wmd.parquet",
            results / d / "original" / "documents.parquet",
            results / d / "original" / "distances" / f"wmd-pca{dim}.parquet",
        )
        for d in _demo_datasets(finished_run)
    ]
    embeddings = results / items[0][0] / "vectors" / "embeddings.parquet"
    png, _ = figures.draw_figure5(
        items,
        tmp_path / "figure5.png",
        max_points=config["report"]["scatter_points"],
        seed=config["report"]["seed"],
        full_dim=figures.embedding_dimension(embeddings),
        pca_dim=dim,
    )
    assert png.read_bytes() == (REPO / "docs" / "figure5_original.png").read_bytes(), (
        "docs/figure5_original.png is not the demo's Figure 5: copy it from a demo run"
    )


def test_readme_paper_plan_counts_are_the_dry_run(tmp_path):
    """The job counts the README quotes for config/paper.yaml are those of its dry run."""
    workdir = tmp_path / "paper"
    workdir.mkdir()
    shutil.copy(REPO / "Snakefile", workdir)
    shutil.copytree(REPO / "workflow" / "rules", workdir / "workflow" / "rules")
    shutil.copytree(REPO / "workflow" / "report", workdir / "workflow" / "report")
    shutil.copytree(REPO / "config", workdir / "config")
    plan = snakemake(workdir, "-n", "--configfile", "config/paper.yaml")
    assert plan.returncode == 0, plan.stderr[-3000:]
    # wmd.mode auto: knn from 2,000 documents, by the paper's counts, before any download
    assert (
        "bbcsport=full (auto: 737 documents (the paper's count for "
        "bbcsport-emd_tr_te_split.mat, docs/protocol.md §2) < 2,000)"
    ) in plan.stderr
    assert (
        "20news=knn (auto: 18,821 documents (the paper's count for "
        "20ng2_500-emd_tr_te.mat, docs/protocol.md §2) >= 2,000)"
    ) in plan.stderr
    table = plan.stdout.split("Job stats:", 1)[1]
    counts = {
        row[0]: int(row[1])
        for row in map(str.split, table.splitlines()[3:])
        if len(row) == 2 and row[1].isdigit()
    }
    import yaml

    readme = README.read_text(encoding="utf-8")
    total, blocks, gathers = counts["total"], counts["wmd_block"], counts["wmd_gather"]
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    bundle = profile["group-components"]["wmd"]
    for quoted in (
        f"plan first: {total:,} jobs",
        f"the whole plan is {total:,} jobs",
        f"is {blocks:,} block jobs",
        f"one job per solved matrix ({gathers})",
        f"turns {blocks:,} block submissions into {-(-blocks // bundle)}",
    ):
        assert quoted in readme, f"README.md should say {quoted!r} (from the dry run)"
    # and the plan with every dataset in full mode
    plan = snakemake(
        workdir, "-n", "--configfile", "config/paper.yaml", "--config", "wmd={mode: full}"
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    full = plan.stdout.split("Job stats:", 1)[1].splitlines()
    total = [int(row.split()[1]) for row in full if row.split()[:1] == ["total"]][0]
    assert f"({total:,} with every dataset in full mode)" in readme
