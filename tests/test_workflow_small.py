"""End to end on a small config: the demo's subject lines (200 short real texts, five
folds, many duplicates) and a toy TSV corpus with planted duplicates and a train/test column
(one fold), run with ``snakemake --cores 2`` in a temporary directory.

One full-mode run is shared by every test here: the toy corpus's duplicates and clean
variant, the same config in knn mode (its scores byte for byte the full mode's, its search
jobs' declared resources the forecast's), and a user's own distances added to it. The demo
itself, as shipped, is test_workflow.py's.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from workflow_helpers import copy_workflow, job_counts, readme_block, snakemake, stderr_lines_until

from wmdeval.core import io as wio
from wmdeval.core.methods import BEYOND_METHODS, METHODS

# pytest-xdist runs a file's tests on one worker (--dist loadfile): the runs happen once
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
run: [subjects, toy]
# PCA WMD is WMD on other vectors: the demo's run covers it (test_workflow.py)
pca_dims: []
datasets:
  toy:
    format: table
    path: toy.tsv
    split_column: split
    embeddings: toy-word2vec
    stopwords: none
embeddings:
  # The toy corpus gets vectors of its own, so the subject lines' results are exactly
  # those of the demo alone.
  toy-word2vec:
    format: train-word2vec
    train_on: [toy]
    min_count: 1
    seed: 0
"""


CONFIG = ("--configfile", "config/config.yaml", "extra.yaml")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = copy_workflow(tmp_path_factory.mktemp("wmdeval-small"))
    with open(workdir / "toy.tsv", "w") as handle:
        handle.write("text\tlabel\tsplit\n")
        handle.writelines(f"{t}\t{label}\t{s}\n" for t, label, s in TOY_ROWS)
    (workdir / "extra.yaml").write_text(EXTRA_CONFIG)
    run = snakemake(workdir, *CONFIG)
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_scores_cover_every_dataset_variant_method_classifier_fold(finished_run):
    scores = pq.read_table(finished_run / "results" / "scores.parquet").to_pylist()
    expected_folds = {"subjects": 5, "toy": 1}
    assert {r["dataset"] for r in scores} == set(expected_folds)
    for dataset, folds in expected_folds.items():
        for variant in ("original", "clean"):
            rows = [r for r in scores if r["dataset"] == dataset and r["variant"] == variant]
            # the 14 methods and the four built-in methods beyond the paper the demo
            # switches on (no PCA here)
            names = {m.name for m in METHODS} | {m.name for m in BEYOND_METHODS}
            assert len(rows) == len(names) * 2 * folds, (dataset, variant)
            assert {r["method"] for r in rows} == names
            assert {r["classifier"] for r in rows} == {"knn", "wknn"}
    assert all(0 <= r["test_error"] <= 1 for r in scores)
    assert all(1 <= r["param"] <= 19 for r in scores if r["classifier"] == "knn")
    allwords = pq.read_table(finished_run / "results" / "scores_allwords.parquet").to_pylist()
    assert {r["dataset"] for r in allwords} == set(expected_folds)


def test_the_toy_corpus_has_its_tables_and_figures(finished_run):
    results = finished_run / "results"
    table2 = (results / "tables" / "table2.md").read_text()
    assert "toy" in table2 and "subjects" in table2
    for png in ("ksc_toy_original.png", "ksc_toy_clean.png"):
        assert (results / "figures" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


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


@pytest.fixture(scope="module")
def knn_run(finished_run, tmp_path_factory):
    """The same workflow switched to wmd.mode knn, in a copy of the finished full-mode
    run: the forecasts, neighbour searches, the samples for the analyses and whatever reads
    them run. Snakemake's log is kept: it shows each search job's declared resources."""
    workdir = tmp_path_factory.mktemp("wmdeval-knn") / "run"
    shutil.copytree(finished_run, workdir, symlinks=True)
    # the full mode's n x n matrices go: knn mode must neither read nor write any
    for matrices in workdir.glob("results/*/*/distances"):
        shutil.rmtree(matrices)
    (workdir / "knn.yaml").write_text("wmd:\n  mode: knn\n  search_shards: 2\n")
    run = snakemake(workdir, *CONFIG, "knn.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    assert "WMD mode per dataset: subjects=knn (set in config), toy=knn (set in config)" in (
        run.stderr
    )
    (workdir / "knn-run.log").write_text(run.stderr)
    return workdir


def test_knn_mode_gives_the_full_modes_scores_byte_for_byte(finished_run, knn_run):
    """The subject lines (five folds) and toy corpus (one fold, train/test column), both
    variants: every scores.parquet row and column is the full matrices' own. (The demo's
    long post bodies: test_workflow.py's test_knn_search_scores_the_demo_posts_as_full_mode.)"""
    scores = sorted(finished_run.glob("results/*/*/scores.parquet"))
    assert len(scores) == 4
    for full in scores:
        relative = full.relative_to(finished_run)
        assert (knn_run / relative).read_bytes() == full.read_bytes(), relative
    for name in ("scores.parquet", "predictions.parquet"):
        assert (knn_run / "results" / name).read_bytes() == (
            finished_run / "results" / name
        ).read_bytes(), name
    tables = list(knn_run.glob("results/*/*/neighbours/*.certificates.parquet"))
    # 2 datasets x 2 variants x (WMD, WMD-TF-IDF, WRD, and RWMD from WMD's search)
    assert len(tables) == 16
    assert len(list(knn_run.glob("results/*/*/neighbours/rwmd.certificates.parquet"))) == 4
    # WCD and the cosine listed a block of queries at a time, in one shard each (small
    # corpora), which evaluate reads as it is
    for slug in ("wcd", "cosine-mean"):
        shards = knn_run.glob(f"results/*/*/neighbour_shards/{slug}/*.certificates.parquet")
        assert sorted(p.name for p in shards) == ["1-of-1.certificates.parquet"] * 4
    # no n x n matrix of the variants on disk, only the 1,000-document samples'
    assert not list(knn_run.glob("results/*/*/distances/*.parquet"))


def test_evaluation_in_parts_writes_the_same_bytes_and_follows_the_config(knn_run, tmp_path):
    """evaluate_parts: 5, then 2, then auto (one part here) in a copy of the knn run: the
    parts (each a run of methods with only its neighbour tables) and their gather write
    every variant's scores and predictions byte for byte as the one evaluate job did, and
    each change of the count reruns the evaluation as a fresh directory would run it."""
    workdir = tmp_path / "run"
    shutil.copytree(knn_run, workdir, symlinks=True)
    outputs = sorted(
        p.relative_to(knn_run)
        for name in ("scores.parquet", "predictions.parquet")
        for p in knn_run.glob(f"results/*/*/{name}")
    )
    assert len(outputs) == 8
    targets = ("results/scores.parquet", "results/predictions.parquet")
    for parts, rules in (
        ("5", {"evaluate_part": "20", "gather_evaluate": "4"}),
        ("2", {"evaluate_part": "8", "gather_evaluate": "4"}),
        ("auto", {"evaluate": "4"}),
    ):
        (workdir / "parts.yaml").write_text(f"evaluate_parts: {parts}\n")
        arguments = (*targets, *CONFIG, "knn.yaml", "parts.yaml")
        plan = snakemake(workdir, *arguments, "-n")
        counts = job_counts(plan, ("evaluate", "evaluate_part", "gather_evaluate"))
        assert counts == rules, (parts, plan.stderr[-3000:])
        run = snakemake(workdir, *arguments)
        assert run.returncode == 0, run.stderr[-3000:]
        for path in [*outputs, *targets]:
            assert (workdir / path).read_bytes() == (knn_run / path).read_bytes(), (parts, path)
    # five runs of consecutive methods, together every method in table order once
    parts = workdir / "results" / "toy" / "original" / "evaluate_parts"
    held = [
        list(dict.fromkeys(pq.read_table(parts / f"{k}-of-5.scores.parquet")["method"].to_pylist()))
        for k in range(1, 6)
    ]
    whole = pq.read_table(knn_run / "results" / "toy" / "original" / "scores.parquet")
    assert all(held) and sum(held, []) == list(dict.fromkeys(whole["method"].to_pylist()))


def test_knn_mode_solves_fewer_pairs_and_analyses_read_a_sample(knn_run):
    from wmdeval.core import schemas

    pairs = wio.read_table(
        knn_run / "results/subjects/original/neighbours/wmd.parquet", schemas.NEIGHBOUR_PAIRS
    )
    n = pq.read_metadata(knn_run / "results/subjects/original/documents.parquet").num_rows
    query = pairs.column("query").to_numpy().astype(np.int64)
    candidate = pairs.column("candidate").to_numpy().astype(np.int64)
    distinct = len(np.unique(np.minimum(query, candidate) * n * 10 + np.maximum(query, candidate)))
    assert distinct < 0.9 * n * (n - 1) / 2
    # the analyses and Figures 4-5 read the full matrices of the seeded sample
    assert (knn_run / "results/subjects/original/sample/distances/wmd.parquet").exists()
    for name in ("figure4_original.png", "figure5_original.png"):
        assert (knn_run / "results/figures" / name).stat().st_size > 10_000


def test_knn_mode_clean_variant_reuses_the_originals_pairs_and_sample(knn_run):
    """The clean variant's searches of WMD and WRD take the original's solved
    pairs and certificates (their scores are full mode's, test above); its sample is the original's
    without the dropped duplicates, its WMD matrix cut from the original sample's."""
    import re

    for method, reused in (("wmd", True), ("wrd", True), ("wmd-tfidf", False)):
        logs = sorted(
            (knn_run / "results/logs/subjects/clean/neighbour_shards" / method).glob("*.log")
        )
        assert len(logs) == 2
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
    run = snakemake(knn_run, *CONFIG, "knn.yaml", "-n")
    assert run.returncode == 0
    assert "Nothing to be done" in run.stdout + run.stderr


def test_killed_search_job_leaves_nothing_and_only_it_reruns(knn_run):
    """Kill a real neighbour-search job, then let Snakemake finish: one shard reruns."""
    import signal

    results = knn_run / "results" / "subjects" / "original"
    shard = results / "neighbour_shards" / "wmd-tfidf" / "2-of-2.parquet"
    certificates = shard.with_name("2-of-2.certificates.parquet")
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
        str(knn_run / "results" / "subjects" / "vectors" / "embeddings.parquet"),
        "--weighting",
        "tfidf",
        "--settings",
        "{}",
        "--shard",
        "2-of-2",
        "--threads",
        "1",
        "--out-pairs",
        str(shard),
        "--out-certificates",
        str(certificates),
    ]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    # killed at its first log line, once it is at work (about half a second before it
    # writes): a fixed delay of 1 s outlived the whole job once its start-up got faster
    stderr_lines_until(job, "setting up their lower bounds", timeout=120)
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert job.returncode == -signal.SIGKILL, "the job ended before it was killed"
    assert not shard.exists() and not certificates.exists()
    assert not list(shard.parent.glob(".*"))  # no partial file either

    target = str(table.relative_to(knn_run))
    plan = snakemake(knn_run, target, *CONFIG, "knn.yaml", "-n")
    counts = job_counts(plan, ("wmd_search", "wmd_neighbours"))
    assert counts == {"wmd_search": "1", "wmd_neighbours": "1"}, plan.stderr[-3000:]
    run = snakemake(knn_run, target, *CONFIG, "knn.yaml")
    assert run.returncode == 0, run.stderr[-3000:]
    assert table.read_bytes() == before


def test_search_jobs_request_what_the_forecast_says(knn_run):
    """Every search job of the knn run declared the runtime and mem_mb of its shard in its
    method's forecast, and the summary table has a row per forecast and a total."""
    log = (knn_run / "knn-run.log").read_text()
    declared = reusing = 0
    for rule in ("wmd_search", "wmd_search_with_rwmd"):
        for block in log.split(f"rule {rule}:")[1:]:
            lines = block.split("\n\n", 1)[0].splitlines()
            fields = {
                key.strip(): value.strip()
                for key, value in (line.split(":", 1) for line in lines if ":" in line)
            }
            wildcards = dict(item.split("=", 1) for item in fields["wildcards"].split(", "))
            resources = dict(item.split("=", 1) for item in fields["resources"].split(", "))
            path = "results/{dataset}/{variant}/forecast/{method}.json".format(**wildcards)
            shards = json.loads((knn_run / path).read_text())["forecast"]["shards"]
            shard = next(s for s in shards if s["shard"] == wildcards["shard"])
            # a clean variant's search also reads the original's solved pairs: 12 times
            # their file is asked on top (common.smk, search_resources)
            reused = "results/{dataset}/original/neighbours/{method}.parquet".format(**wildcards)
            reuse_mb = 0
            if reused in fields["input"].split(", "):
                reuse_mb = math.ceil(12 * (knn_run / reused).stat().st_size / 1e6)
            assert int(resources["runtime"]) == shard["runtime"], (wildcards, resources)
            assert int(resources["mem_mb"]) == shard["mem_mb"] + reuse_mb, (wildcards, resources)
            declared += 1
            reusing += reuse_mb > 0
    forecasts = sorted(knn_run.glob("results/*/*/forecast/*.json"))
    # 2 datasets x 2 variants x (WMD, WMD-TF-IDF, WRD), 2 shards each
    assert len(forecasts) == 12 and declared == 2 * len(forecasts)
    # the clean variants' searches of WMD and WRD reuse, WMD-TF-IDF's do not
    assert reusing == 2 * 2 * 2
    table = (knn_run / "results/tables/cost_forecast.tsv").read_text().splitlines()
    assert table[0].split("\t")[:3] == ["dataset", "variant", "method"]
    rows = [tuple(line.split("\t")[:3]) for line in table[1:]]
    expected = [(p.parts[-4], p.parts[-3], p.stem) for p in forecasts]
    # then the total and the searches' wall time on --cores (2) and 2, 16, 64 cores
    assert sorted(rows[:-4]) == sorted(expected)
    assert rows[-4] == ("total", "", "")
    assert [row[:2] for row in rows[-3:]] == [("searches_wall", f"{n} cores") for n in (2, 16, 64)]


# ------------------------------------------ how many jobs solve a matrix is not stored
# A scheduling choice, never part of what is stored: after a finished run, another job
# count or grouping plans nothing, and a lost block reruns alone.


def test_blocks_are_stored_under_names_from_the_config(finished_run):
    blocks = finished_run / "results" / "subjects" / "original" / "wmd_blocks" / "wmd"
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
def test_another_job_count_or_grouping_plans_nothing(finished_run, schedule):
    plan = snakemake(finished_run, *CONFIG, "-n", *schedule)
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (("--set-scatter", "wmd_shards=16"), "--set-scatter wmd_shards is gone"),
        (("--config", "wmd={shards: 16}"), "wmd.shards was replaced by wmd.blocks"),
    ],
)
def test_the_old_shard_knob_fails_with_one_line_naming_its_replacement(
    finished_run, option, message
):
    plan = snakemake(finished_run, *CONFIG, "-n", *option)
    assert plan.returncode != 0
    assert plan.stderr.strip().splitlines()[-1].startswith("wmdeval: "), plan.stderr[-2000:]
    assert message in plan.stderr.strip().splitlines()[-1]
    assert "Traceback" not in plan.stderr


def test_a_lost_block_reruns_alone_and_downstream_stays_done(finished_run):
    results = finished_run / "results" / "subjects" / "original"
    block = results / "wmd_blocks" / "wmd-tfidf" / "2-of-4.parquet"
    matrix = results / "distances" / "wmd-tfidf.parquet"
    scores = finished_run / "results" / "scores.parquet"
    before, scores_before = matrix.read_bytes(), scores.stat().st_mtime_ns
    block.unlink()

    # A finished matrix does not need its blocks: nothing reruns.
    plan = snakemake(finished_run, *CONFIG, "-n")
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]

    # As if the run was interrupted while this block was solving: nothing gathered yet.
    # Snakemake leaves a missing intermediate alone while everything after it is done, so
    # ask for the matrix (first: --configfile would take it for one more config file).
    matrix.unlink()
    target = str(matrix.relative_to(finished_run))
    plan = snakemake(finished_run, target, *CONFIG, "-n")
    # only the lost block is solved again (its 3 siblings are kept), then gathered
    assert job_counts(plan) == {"wmd_block": "1", "wmd_gather": "1"}, plan.stdout[-3000:]
    run = snakemake(finished_run, target, *CONFIG)
    assert run.returncode == 0, run.stderr[-3000:]
    assert block.exists() and matrix.read_bytes() == before

    # Same bytes: Snakemake compares the checksums of small inputs (up to
    # --max-checksum-file-size, 1 MB by default) and reruns nothing downstream.
    plan = snakemake(finished_run, *CONFIG, "-n")
    assert "Nothing to be done" in plan.stdout + plan.stderr, plan.stdout[-3000:]
    assert scores.stat().st_mtime_ns == scores_before


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
    """The subject lines and the toy corpus with a user's distances added to a finished run:
    one-hot document vectors (Parquet, and .npy with ids), a precomputed matrix (a copy of
    WMD's) and a callable (BOW (L1/L1) written plainly), no code change to the workflow."""
    import pyarrow as pa

    workdir = tmp_path_factory.mktemp("wmdeval-byo") / "run"
    shutil.copytree(finished_run, workdir, symlinks=True)
    byo = workdir / "byo"
    byo.mkdir()
    for dataset in ("subjects", "toy"):
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
    example = readme_block("byo-callable").removeprefix("```python").removesuffix("```")
    (workdir / "mydistances.py").write_text(example)
    (workdir / "byo.yaml").write_text(BYO_CONFIG)
    run = snakemake(workdir, *CONFIG, "byo.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


@pytest.fixture(scope="module")
def byo_knn_run(byo_run, tmp_path_factory):
    """byo_run's config in knn mode: document vectors listed a block of queries at a
    time (vector_neighbours), the precomputed matrix and the callable read as given."""
    workdir = tmp_path_factory.mktemp("wmdeval-byo-knn") / "run"
    shutil.copytree(byo_run, workdir, symlinks=True)
    for matrix in workdir.glob("results/*/*/distances/vectors-*.parquet"):
        matrix.unlink()
    # two query shards of each listed method, combined (listed_neighbours)
    (workdir / "knn.yaml").write_text("wmd:\n  mode: knn\n  search_shards: 2\n  list_shards: 2\n")
    run = snakemake(workdir, *CONFIG, "byo.yaml", "knn.yaml")
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_your_vectors_in_knn_mode_score_as_their_matrices_byte_for_byte(byo_run, byo_knn_run):
    for name in ("scores.parquet", "predictions.parquet"):
        assert (byo_knn_run / "results" / name).read_bytes() == (
            byo_run / "results" / name
        ).read_bytes(), name
    listed = byo_knn_run.glob("results/*/*/neighbours/vectors-*.certificates.parquet")
    # 2 datasets x 2 variants x (onehot l1 and cosine, onehotnpy l1), each of 2 shards
    assert len(list(listed)) == 12
    shards = byo_knn_run.glob("results/*/*/neighbour_shards/vectors-*/2-of-2.parquet")
    assert len(list(shards)) == 12
    assert not list(byo_knn_run.glob("results/*/*/distances/vectors-*.parquet"))
    assert list(byo_knn_run.glob("results/*/*/sample/distances/vectors-*.parquet"))


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
    assert len(rows) == (5 + 1) * 2 * 2  # folds x variants x classifiers
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
    assert len(list(results.glob("subjects/original/callable_shards/bowl1/*.parquet"))) == 3
    table2 = (results / "tables" / "table2.md").read_text()
    for name in ("bowl1", "onehot (L1)", "onehot (cosine)", "onehotnpy (L1)", "wmdcopy"):
        assert f"| {name} † |" in table2
    significance = pcsv.read_csv(results / "tables" / "significance.csv").to_pylist()
    same = [r for r in significance if r["reference"] == "bowl1" and r["method"] == "BOW (L1/L1)"]
    assert len(same) == 2 * 2 * 2  # datasets x variants x classifiers
    assert all(r["b"] == 0 and r["c"] == 0 and r["p_value"] == 1.0 for r in same)
    n2o = pq.read_table(results / "subjects" / "original" / "analysis" / "n2o.parquet")
    assert "bowl1" in set(n2o.column("method_a").to_pylist())
    run = snakemake(byo_run, *CONFIG, "byo.yaml", "-n")
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
    run = snakemake(workdir, target, *CONFIG, "bad.yaml")
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
