"""End to end: the demo exactly as shipped, ``snakemake --cores 2`` in a temporary directory.

One run is shared by every test here: its outputs against the recorded bytes
(benchmarks/demo_outputs.sha256) and the numbers the README quotes, the report, reruns that
must do nothing or only what was lost, and the knn search on the demo's long posts. The toy
corpus (one fold, planted duplicates), knn mode and a user's own distances run on a smaller
config: test_workflow_small.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from workflow_helpers import (
    REPO,
    STATISTICS,
    copy_workflow,
    job_counts,
    readme_block,
    snakemake,
    stderr_lines_until,
)

from wmdeval.core import io as wio
from wmdeval.core.methods import BEYOND_METHODS, METHODS

# pytest-xdist runs a file's tests on one worker (--dist loadfile): the runs happen once
pytestmark = pytest.mark.e2e
CONFIG = ("--configfile", "config/config.yaml")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """The demo as a user runs it: ``snakemake --cores 2`` with the shipped config."""
    workdir = copy_workflow(tmp_path_factory.mktemp("wmdeval"))
    run = snakemake(workdir)
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_scores_cover_every_dataset_variant_method_classifier_fold(finished_run):
    scores = pq.read_table(finished_run / "results" / "scores.parquet").to_pylist()
    expected_folds = {"newsgroups": 5, "subjects": 5}
    assert {r["dataset"] for r in scores} == set(expected_folds)
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
    assert {r["dataset"] for r in allwords} == {"newsgroups", "subjects"}
    ingest = pq.read_table(results / "subjects" / "ingest" / "documents.parquet")
    kept = pq.read_table(results / "subjects" / "original" / "allwords" / "documents.parquet")
    assert kept.column("words").equals(ingest.column("words"))
    table4 = (results / "tables" / "table4.md").read_text()
    assert "| BOW (L1/L1) |" in table4 and "| TF-IDF (L1/L1) |" in table4


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
    for dataset in ("newsgroups", "subjects"):
        assert dataset in table2
    for method in BEYOND_METHODS:  # beyond the paper, marked as such
        assert f"| {method.name} † |" in table2
    assert "beyond the paper" in table2
    table8 = (results / "tables" / "table8.md").read_text()
    assert "| WMD (5-d PCA) |" in table8
    for png in ("n2o.png", "ksc_newsgroups_original.png", "ksc_subjects_clean.png"):
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
    run = snakemake(finished_run, *CONFIG, "--report", "results/report.html")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "ERROR/" not in run.stderr, run.stderr[-3000:]  # every caption is valid RST
    html = (finished_run / "results" / "report.html").read_text(errors="replace")
    for name in (
        "table2.csv",
        "table2.md",  # with its notes and warnings
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
        "ksc_subjects_clean.png",
        "significance.csv",
        "critical_difference.png",
    ):
        assert name in html, name


def test_second_run_has_nothing_to_do(finished_run):
    run = snakemake(finished_run, *CONFIG, "-n")
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
    # killed at the log line that starts the solve, not after a fixed delay, which a job
    # with a faster start-up may outlive
    stderr_lines_until(job, "pairs; block 2/4", timeout=120)
    job.send_signal(signal.SIGKILL)
    job.wait()
    assert job.returncode == -signal.SIGKILL, "the job ended before it was killed"
    assert not block.exists()
    assert not list(block.parent.glob(f".{block.name}*"))  # no partial file either

    # Snakemake leaves missing intermediates alone while everything downstream is up to
    # date, so ask for the matrix itself, as a run interrupted before gathering would
    target = str(matrix.relative_to(finished_run))
    plan = snakemake(finished_run, target, *CONFIG, "-n")
    counts = job_counts(plan, ("wmd_block", "wmd_gather"))
    # only the killed block is solved again (3 of its siblings are kept), then gathered
    assert counts == {"wmd_block": "1", "wmd_gather": "1"}, plan.stderr[-3000:]
    run = snakemake(finished_run, target, *CONFIG)
    assert run.returncode == 0, run.stderr[-3000:]
    assert matrix.read_bytes() == before


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
    plan = snakemake(finished_run, *CONFIG, str(config), "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    planned = set(job_counts(plan))
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


@pytest.mark.parametrize(
    ("weighting", "vectors", "method"),
    [
        ("bow", "embeddings", "WMD"),
        ("tfidf", "embeddings", "WMD-TF-IDF"),
        ("bow", "pca5", "WMD (5-d PCA)"),
    ],
)
def test_knn_search_scores_the_demo_posts_as_full_mode(
    finished_run, tmp_path, weighting, vectors, method
):
    """knn mode on the demo's long post bodies (up to 40 distinct words, five folds), with
    the functions its jobs call, in this process: two query shards, gathered, evaluated,
    give the scores that the workflow wrote from the full matrix, row for row. (knn mode
    as a whole workflow: test_workflow_small.py.)"""
    import yaml

    from wmdeval.classification import knn
    from wmdeval.core import config as wconfig
    from wmdeval.distances.wmd import search

    config = wconfig.validate(yaml.safe_load((finished_run / "config/config.yaml").read_text()))
    data = finished_run / "results" / "newsgroups"
    paths = {
        "documents_path": data / "original" / "documents.parquet",
        "splits_path": data / "original" / "splits.parquet",
    }
    shards = []
    for shard in range(2):
        out = (tmp_path / f"{shard}.parquet", tmp_path / f"{shard}.certificates.parquet")
        search.run_search(
            *paths.values(),
            data / "vectors" / f"{vectors}.parquet",
            weighting,
            config["evaluation"],
            shard,
            2,
            1,
            *out,
        )
        shards.append(out)
    pairs, certificates = tmp_path / "pairs.parquet", tmp_path / "certificates.parquet"
    search.run_merge(
        paths["documents_path"], [p for p, _ in shards], [c for _, c in shards], pairs, certificates
    )
    slug = {"WMD": "wmd", "WMD-TF-IDF": "wmd-tfidf", "WMD (5-d PCA)": "wmd-pca5"}[method]
    scores = knn.run_evaluate(
        *paths.values(),
        {},
        config["evaluation"],
        "newsgroups",
        "original",
        tmp_path / "scores.parquet",
        neighbour_paths={slug: (str(pairs), str(certificates))},
    ).to_pylist()
    workflow = pq.read_table(data / "original" / "scores.parquet").to_pylist()
    rows = [r for r in scores if r["method"] == method]
    assert len(rows) == 5 * 2  # folds x classifiers
    assert rows == [r for r in workflow if r["method"] == method]


@pytest.mark.parametrize(
    ("slug", "method"),
    [("wcd", "WCD"), ("rwmd", "RWMD"), ("cosine-mean", "Cosine (mean word vectors)")],
)
def test_listed_neighbours_score_the_demo_posts_as_full_mode(finished_run, tmp_path, slug, method):
    """knn mode's neighbour lists of the dense methods (no n x n matrix) on the demo's post
    bodies, both variants, with the functions their jobs call: two query shards, combined,
    evaluated, give the scores and predictions the workflow wrote from the full matrices,
    byte for byte. (The whole workflow in knn mode: test_workflow_small.py.)"""
    import yaml

    from wmdeval.classification import knn
    from wmdeval.core import config as wconfig
    from wmdeval.distances import embedding
    from wmdeval.distances.wmd import search

    config = wconfig.validate(yaml.safe_load((finished_run / "config/config.yaml").read_text()))
    for variant in ("original", "clean"):
        data = finished_run / "results" / "newsgroups"
        documents = data / variant / "documents.parquet"
        splits = data / variant / "splits.parquet"
        shards = []
        for shard in range(2):
            out = (
                tmp_path / f"{variant}.{shard}.parquet",
                tmp_path / f"{variant}.{shard}.certificates.parquet",
            )
            embedding.run_embedding_neighbours(
                documents,
                splits,
                data / "vectors" / "embeddings.parquet",
                slug,
                config["evaluation"],
                shard,
                2,
                *out,
            )
            shards.append(out)
        pairs = tmp_path / f"{variant}.pairs.parquet"
        certificates = tmp_path / f"{variant}.certificates.parquet"
        search.run_merge(
            documents, [p for p, _ in shards], [c for _, c in shards], pairs, certificates
        )
        scores_path = tmp_path / f"{variant}.scores.parquet"
        predictions_path = tmp_path / f"{variant}.predictions.parquet"
        knn.run_evaluate(
            documents,
            splits,
            {},
            config["evaluation"],
            "newsgroups",
            variant,
            scores_path,
            neighbour_paths={slug: (str(pairs), str(certificates))},
            predictions_path=predictions_path,
        )
        for name, path in (("scores", scores_path), ("predictions", predictions_path)):
            listed = pq.read_table(path)
            full = pq.read_table(data / variant / f"{name}.parquet")
            full = full.filter(pc.equal(full.column("method"), method))
            listed = listed.filter(pc.equal(listed.column("method"), method))
            assert listed.num_rows == full.num_rows > 0, (variant, name)
            assert listed.equals(full), (variant, name)


# ------------------------------------------------------- numbers the README quotes
README = REPO / "README.md"


def _demo_datasets(workdir: Path) -> list[str]:
    import yaml

    config = yaml.safe_load((workdir / "config" / "config.yaml").read_text())
    return list(config["datasets"])


@pytest.mark.parametrize("table", ["table2", "table3"])
def test_readme_demo_tables_are_the_demo_output(finished_run, table):
    """The README's Tables 2 and 3 are the demo's: the rows the tables job writes, for the
    demo's datasets."""
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
    assert readme_block(f"demo-{table}") == expected, (
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
    assert readme_block("demo-significance", STATISTICS) == expected, (
        "README.md's demo significance rows have drifted; paste this between its markers:\n"
        + expected
    )


def test_demo_outputs_are_the_recorded_bytes(finished_run):
    """Every output of the demo (documents, duplicates, vectors, WMD blocks and matrices,
    scores, analyses, tables, figures) has the bytes recorded in
    benchmarks/demo_outputs.sha256, and nothing is missing or new: this run is the demo as
    shipped, as benchmarks/demo_identity.py runs it."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import demo_identity
    finally:
        sys.path.pop(0)

    recorded = demo_identity.read_manifest()
    found = demo_identity.output_hashes(finished_run)
    # the report is no output of the demo's run: test_report_holds_every_table_and_figure
    # renders it into results/
    found.pop("results/report.html", None)
    assert len(recorded) > 150
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
    workdir = copy_workflow(tmp_path / "paper")
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
    check_paper_wall_time(plan.stderr, readme)
    # each job's priority (printed with its job) is its remaining chain (common.smk), so
    # the plan's first jobs hold the critical path's length at --cores
    priorities = [int(p) for p in re.findall(r"^ +priority: (\d+)$", plan.stdout, re.M)]
    assert len(priorities) >= total - 1, (len(priorities), total)
    critical = [float(m[3]) for m in WALL_LINE.findall(plan.stderr) if m[1]]
    # (the line rounds to 0.1 min, a priority to whole seconds)
    assert len(critical) == 1 and abs(critical[0] * 60 - max(priorities)) <= 3.5, (
        critical,
        max(priorities),
    )
    # wmd.search_shards: auto plans 3 shards for the paper's datasets (config/paper.yaml
    # sets 4, the shortest wall time on 64 cores): the same jobs but 3/4 of the searches
    auto = snakemake(
        workdir,
        "-n",
        "--configfile",
        "config/paper.yaml",
        "--config",
        "wmd={blocks: 64, threads: 2, mode: auto, search_shards: auto}",
    )
    assert auto.returncode == 0, auto.stderr[-3000:]
    assert "wmdeval: wmd.search_shards: 3 (auto: 18,821 documents, at most 2 min" in auto.stderr
    searches = ("wmd_search", "wmd_search_with_rwmd")
    counted, paper = job_counts(auto), job_counts(plan)
    assert {r: int(counted[r]) for r in searches} == {r: int(paper[r]) * 3 // 4 for r in searches}
    assert {r: n for r, n in counted.items() if r not in searches} == {
        r: n for r, n in paper.items() if r not in searches
    }
    # and the plan with every dataset in full mode
    plan = snakemake(
        workdir, "-n", "--configfile", "config/paper.yaml", "--config", "wmd={mode: full}"
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    full = plan.stdout.split("Job stats:", 1)[1].splitlines()
    total = [int(row.split()[1]) for row in full if row.split()[:1] == ["total"]][0]
    assert f"({total:,} with every dataset in full mode)" in readme


#: A dry run's wall-time line (common.smk's plan_wall_lines).
WALL_LINE = re.compile(
    r"^wmdeval: wall time on (\d+) cores( \(--cores\))?: ([\d.]+) min; critical path"
    r" ([\d.]+) min: (.*); longest job ([\d.]+) min: (\S+ ?\S*)$",
    re.M,
)


def check_paper_wall_time(log: str, readme: str) -> None:
    """The paper plan's dry run (--cores 2) forecasts its wall time on 2, 16 and 64
    cores; more cores never take longer, each wall time is at least its critical path,
    which is at least the longest job; on 64 cores no search job is the longest (the
    paper config's wmd.search_shards); the README quotes the numbers."""
    assert "wmdeval: wall time forecast of " in log
    walls = {}
    for cores, used, wall, path, chain, longest, name in WALL_LINE.findall(log):
        walls[int(cores)] = (float(wall), float(path), float(longest), chain, name, bool(used))
    assert sorted(walls) == [2, 16, 64], log[-3000:]
    assert walls[2][5] and not walls[16][5] and not walls[64][5]
    assert walls[64][0] <= walls[16][0] <= walls[2][0]
    for wall, path, longest, chain, _, _ in walls.values():
        assert wall >= path >= longest
        assert chain.startswith("download ") and chain.endswith(" > all")
    assert not walls[64][4].startswith("wmd_search")
    # the README's table: a header of core counts and the critical path, one row of minutes
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in readme_block("paper-wall").splitlines()
        if line.startswith("|") and "---" not in line
    ]
    assert len(rows) == 2 and rows[0][1:] == ["2 cores", "16 cores", "64 cores", "critical path"]
    expected = [f"{walls[cores][0]:.1f} min" for cores in (2, 16, 64)]
    assert rows[1][1:] == [*expected, f"{walls[64][1]:.1f} min"], (rows, walls)
