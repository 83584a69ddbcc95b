"""Tables (wmdeval.reporting.tables) and figures (wmdeval.reporting.figures)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import pearsonr

from wmdeval.core import io, methods, schemas
from wmdeval.distances import pca
from wmdeval.distances.wmd import solver
from wmdeval.ingest.embeddings import embeddings_table
from wmdeval.reporting import figures
from wmdeval.reporting import tables as report

PAPER_DATASETS = [
    "bbcsport",
    "twitter",
    "recipe",
    "ohsumed",
    "classic",
    "reuters",
    "amazon",
    "20news",
]
ONE_FOLD = {"ohsumed", "reuters", "20news"}


def scores_table(
    errors: dict, variant: str = "original", classifier: str = "knn", n_test_empty: int = 0
) -> pa.Table:
    """SCORES rows from {(method, dataset): [test error per fold, as fractions]}."""
    rows = [
        {
            "dataset": dataset,
            "variant": variant,
            "method": method,
            "classifier": classifier,
            "fold": fold,
            "param": 1.0,
            "val_accuracy": 0.5,
            "test_error": error,
            "n_test": 100,
            "n_test_empty": n_test_empty,
        }
        for (method, dataset), folds in errors.items()
        for fold, error in enumerate(folds)
    ]
    return pa.Table.from_pylist(rows, schema=schemas.SCORES)


def folds_with_mean(mean_percent: float, dataset: str) -> list[float]:
    """Fold errors (fractions) whose mean is ``mean_percent`` / 100: five folds spread
    symmetrically around it for five-fold datasets, one value otherwise."""
    if dataset in ONE_FOLD:
        return [mean_percent / 100]
    return [(mean_percent + d) / 100 for d in (-0.4, -0.2, 0.0, 0.2, 0.4)]


def expect(datasets, variants, method_names, classifiers=("knn",)) -> dict[str, list[str]]:
    """What a table job is told its scores cover (wmdeval.core.coverage)."""
    return {
        "dataset": list(datasets),
        "variant": list(variants),
        "method": list(method_names),
        "classifier": list(classifiers),
    }


# --------------------------------------------------------------------------- tables


def test_rel_reproduces_the_protocol_example():
    bow = [3.9, 30.0, 43.4, 44.1, 4.1, 5.7, 10.4, 29.1]
    wmd = [5.1, 29.6, 42.9, 44.5, 2.9, 4.0, 7.4, 26.8]
    errors = {}
    for dataset, b, w in zip(PAPER_DATASETS, bow, wmd, strict=True):
        errors["BOW (L1/L1)", dataset] = folds_with_mean(b, dataset)
        errors["WMD", dataset] = folds_with_mean(w, dataset)
    rows = report.paper_table(scores_table(errors), "original", "knn", None, PAPER_DATASETS)
    by_method = {row[0]: row for row in rows}
    assert [row[0] for row in rows] == ["BOW (L1/L1)", "WMD"]
    assert by_method["WMD"][-1].removesuffix(report.BEST_MARKER) == "0.917"
    assert by_method["BOW (L1/L1)"][-1] == "1.000"
    assert by_method["BOW (L1/L1)"][1] == "3.9 ± 0.3" + report.BEST_MARKER


def test_mean_std_uses_ddof_0_and_one_decimal():
    # mean 3.0; variance (4 + 1 + 0 + 1 + 4) / 5 = 2 -> std 1.414 (ddof = 1 would give 1.6)
    assert report.format_errors([1.0, 2.0, 3.0, 4.0, 5.0]) == "3.0 ± 1.4"
    table = scores_table({("WMD", "bbcsport"): [0.01, 0.02, 0.03, 0.04, 0.05]})
    assert report.paper_table(table, "original", "knn", None, ["bbcsport"])[0][1].startswith(
        "3.0 ± 1.4"
    )


def test_one_fold_dataset_is_a_single_number():
    table = scores_table({("WMD", "ohsumed"): [0.4451]})
    rows = report.paper_table(table, "original", "knn", None, ["ohsumed"])
    assert rows[0][1].removesuffix(report.BEST_MARKER) == "44.5"


def test_best_marker_goes_on_the_lowest_mean_of_each_column():
    table = scores_table(
        {
            ("BOW (L1/L1)", "a"): [0.10],
            ("BOW (L1/L1)", "b"): [0.20],
            ("WMD", "a"): [0.05],
            ("WMD", "b"): [0.30],
            ("TF-IDF (L1/L1)", "a"): [0.05],
            ("TF-IDF (L1/L1)", "b"): [0.25],
        }
    )
    rows = report.paper_table(table, "original", "knn", None, ["a", "b"])
    assert [r[0] for r in rows] == ["BOW (L1/L1)", "TF-IDF (L1/L1)", "WMD"]
    marked = {
        (r[0], column)
        for r in rows
        for column, text in zip(["a", "b", "rel."], r[1:], strict=True)
        if text.endswith(report.BEST_MARKER)
    }
    # A tie in column a marks both rows; rel.: BOW 1.0, WMD (0.5 + 1.5) / 2 = 1.0,
    # TF-IDF (0.5 + 1.25) / 2 = 0.875 is the lowest.
    assert marked == {
        ("TF-IDF (L1/L1)", "a"),
        ("WMD", "a"),
        ("BOW (L1/L1)", "b"),
        ("TF-IDF (L1/L1)", "rel."),
    }


def test_missing_reference_leaves_rel_empty():
    table = scores_table({("WMD", "a"): [0.1], ("TF-IDF (L1/L1)", "a"): [0.2]})
    rows = report.paper_table(table, "original", "knn", None, ["a"])
    assert [r[-1] for r in rows] == ["", ""]


def test_wknn_rel_is_relative_to_knn_reference():
    knn = scores_table({("BOW (L1/L1)", "a"): [0.20]})
    wknn = scores_table({("BOW (L1/L1)", "a"): [0.10], ("WMD", "a"): [0.05]}, classifier="wknn")
    table = pa.concat_tables([knn, wknn])
    rows = report.paper_table(table, "original", "wknn", ["BOW (L1/L1)", "WMD"], ["a"])
    assert [r[-1].removesuffix(report.BEST_MARKER) for r in rows] == ["0.500", "0.250"]


def test_markdown_rendering_of_a_small_table(tmp_path):
    table = scores_table(
        {
            ("WMD", "bbcsport"): [0.05, 0.07],
            ("WMD", "reuters"): [0.04],
            ("BOW (L1/L1)", "bbcsport"): [0.04, 0.04],
            ("BOW (L1/L1)", "reuters"): [0.08],
        }
    )
    datasets = ["bbcsport", "reuters"]
    rows = report.paper_table(table, "original", "knn", None, datasets)
    csv_path, md_path = tmp_path / "t.csv", tmp_path / "t.md"
    report.write_table_files(
        rows, report.table_header(datasets), csv_path, md_path, "Table X", "A note."
    )
    assert md_path.read_text(encoding="utf-8") == (
        "# Table X\n"
        "\n"
        "| method | bbcsport | reuters | rel. |\n"
        "|---|---|---|---|\n"
        "| BOW (L1/L1) | 4.0 ± 0.0 * | 8.0 | 1.000 * |\n"
        "| WMD | 6.0 ± 1.0 | 4.0 * | 1.000 * |\n"
        "\n"
        "A note.\n"
    )
    assert csv_path.read_text(encoding="utf-8").splitlines() == [
        "method,bbcsport,reuters,rel.",
        "BOW (L1/L1),4.0 ± 0.0 *,8.0,1.000 *",
        "WMD,6.0 ± 1.0,4.0 *,1.000 *",
    ]


def test_collect_sorts_deterministically_and_rejects_duplicates(tmp_path):
    first = scores_table({("WMD", "zeta"): [0.1, 0.2], ("BOW (L1/L1)", "zeta"): [0.3]})
    second = pa.concat_tables(
        [
            scores_table({("WMD", "alpha"): [0.1]}, variant="clean"),
            scores_table({("WMD", "alpha"): [0.1]}),
        ]
    )
    paths = [tmp_path / "zeta.parquet", tmp_path / "alpha.parquet"]
    io.write_table(first.take([2, 1, 0]), paths[0], schemas.SCORES)
    io.write_table(second, paths[1], schemas.SCORES)
    out = tmp_path / "scores.parquet"
    report.run_collect(paths, out)
    collected = io.read_table(out, schemas.SCORES)
    keys = list(
        zip(
            *(collected.column(c).to_pylist() for c in ("dataset", "variant", "method", "fold")),
            strict=True,
        )
    )
    assert keys == [
        ("zeta", "original", "BOW (L1/L1)", 0),
        ("zeta", "original", "WMD", 0),
        ("zeta", "original", "WMD", 1),
        ("alpha", "original", "WMD", 0),
        ("alpha", "clean", "WMD", 0),
    ]
    with pytest.raises(io.WmdevalError, match="duplicate"):
        report.collect_scores([paths[0], paths[0]])


def test_run_tables_writes_every_table_even_without_rows(tmp_path):
    scores = scores_table({("BOW (L1/L1)", "a"): [0.1], ("WMD", "a"): [0.2]}, n_test_empty=1)
    io.write_table(scores, tmp_path / "scores.parquet", schemas.SCORES)
    written = report.run_tables(
        tmp_path / "scores.parquet",
        tmp_path / "tables",
        expect(["a"], ["original"], ["BOW (L1/L1)", "WMD"]),
    )
    assert sorted(p.name for p in written) == sorted(
        f"{name}.{ext}"
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
        )
        for ext in ("csv", "md")
    )
    table2 = (tmp_path / "tables" / "table2.md").read_text(encoding="utf-8")
    assert "| WMD | 20.0 | 2.000 |" in table2
    assert "a 1." in table2  # the empty test document is reported
    assert "no rows" in (tmp_path / "tables" / "table3.md").read_text(encoding="utf-8")
    # Table 8 without PCA scores: the two reference rows, and a note saying so.
    table8 = (tmp_path / "tables" / "table8.md").read_text(encoding="utf-8")
    assert "| BOW (L1/L1) | 10.0 * | 1.000 * |" in table8 and "| WMD | 20.0 |" in table8
    assert "only the reference rows" in table8


ALL_METHOD_NAMES = [
    *report.METHOD_NAMES,
    "WMD (10-d PCA)",
    "WMD-TF-IDF (5-d PCA)",
    "WMD (5-d PCA)",
    "WMD (2-d PCA)",
]


def _all_methods_scores(variant: str, offset: float = 0.0) -> pa.Table:
    """Every method of Table 2 plus three PCA methods and TF-IDF on PCA, two datasets."""
    errors = {
        (name, dataset): [0.10 + 0.01 * k + offset + 0.05 * d]
        for k, name in enumerate(ALL_METHOD_NAMES)
        for d, dataset in enumerate(("a", "b"))
    }
    return scores_table(errors, variant=variant)


def _table_rows(tmp_path, name: str) -> list[list[str]]:
    text = (tmp_path / "tables" / f"{name}.csv").read_text(encoding="utf-8")
    return [line.split(",") for line in text.splitlines()[1:]]


def test_tables_3_7_and_8_rows_and_order(tmp_path):
    scores = pa.concat_tables(
        [_all_methods_scores("original"), _all_methods_scores("clean", offset=0.1)]
    )
    io.write_table(scores, tmp_path / "scores.parquet", schemas.SCORES)
    report.run_tables(
        tmp_path / "scores.parquet",
        tmp_path / "tables",
        expect(["a", "b"], ["original", "clean"], ALL_METHOD_NAMES),
    )

    # Table 3: the paper's first block; Table 7: all 14 methods, in Table 2 order.
    assert [r[0] for r in _table_rows(tmp_path, "table3")] == [
        "BOW (L1/L1)",
        "TF-IDF (L1/L1)",
        "WMD",
        "WMD-TF-IDF",
    ]
    assert [r[0] for r in _table_rows(tmp_path, "table7")] == list(report.METHOD_NAMES)
    assert "Table 7" in (tmp_path / "tables" / "table3.md").read_text(encoding="utf-8")

    # Table 8: the two reference rows, then the PCA methods by dimension (not by text).
    expected = [
        "BOW (L1/L1)",
        "WMD",
        "WMD (2-d PCA)",
        "WMD (5-d PCA)",
        "WMD-TF-IDF (5-d PCA)",
        "WMD (10-d PCA)",
    ]
    for name in ("table8", "table8_clean"):
        assert [r[0] for r in _table_rows(tmp_path, name)] == expected
    # rel. against BOW (L1/L1) of the same variant: WMD (10-d PCA) is method 14,
    # errors (24 %, 29 %) original against BOW's (10 %, 15 %), (34, 39) / (20, 25) clean.
    rel = {r[0]: r[-1].removesuffix(report.BEST_MARKER) for r in _table_rows(tmp_path, "table8")}
    assert rel["WMD (10-d PCA)"] == f"{(24 / 10 + 29 / 15) / 2:.3f}"
    rel_clean = {r[0]: r[-1] for r in _table_rows(tmp_path, "table8_clean")}
    assert rel_clean["WMD (10-d PCA)"] == f"{(34 / 20 + 39 / 25) / 2:.3f}"
    assert rel_clean["BOW (L1/L1)"] == "1.000" + report.BEST_MARKER
    note = (tmp_path / "tables" / "table8_clean.md").read_text(encoding="utf-8")
    assert "same as in Table 7" in note and "not re-normalised" in note


def test_pca_method_names_sort_by_dimension():
    names = [
        "WMD (100-d PCA)",
        "zeta",
        "WMD-TF-IDF (5-d PCA)",
        "WMD (5-d PCA)",
        "WMD",
        "BOW (L1/L1)",
        "WMD (20-d PCA)",
    ]
    assert sorted(names, key=report.method_sort_key) == [
        "BOW (L1/L1)",
        "WMD",
        "WMD (5-d PCA)",
        "WMD-TF-IDF (5-d PCA)",
        "WMD (20-d PCA)",
        "WMD (100-d PCA)",
        "zeta",
    ]
    assert report.parse_pca_method(methods.pca_method_name("WMD-TF-IDF", 5)) == ("WMD-TF-IDF", 5)
    assert report.parse_pca_method("WMD") is None


def test_collect_sorts_pca_methods_by_dimension(tmp_path):
    scores = scores_table(
        {("WMD (10-d PCA)", "a"): [0.1], ("WMD (5-d PCA)", "a"): [0.1], ("WMD", "a"): [0.1]}
    )
    io.write_table(scores, tmp_path / "s.parquet", schemas.SCORES)
    collected = report.collect_scores([tmp_path / "s.parquet"])
    assert collected.column("method").to_pylist() == ["WMD", "WMD (5-d PCA)", "WMD (10-d PCA)"]


# --------------------------------------------------------------------------- figures


def _figure3_scores() -> pa.Table:
    errors = {}
    for i, dataset in enumerate(["bbcsport", "ohsumed", "classic"]):
        for j, method in enumerate(
            ["BOW (None/L2)", "BOW (L1/L1)", "TF-IDF (None/L2)", "TF-IDF (L1/L1)", "WMD"]
        ):
            base = 0.05 + 0.03 * i + 0.02 * j
            errors[method, dataset] = (
                [base] if dataset in ONE_FOLD else [base, base + 0.01, base - 0.01]
            )
    return scores_table(errors)


def _distance_matrices(n: int = 40, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    bow = rng.uniform(0.2, 2.0, (n, n))
    bow = (bow + bow.T) / 2
    wmd = 0.5 * bow + rng.normal(0, 0.1, (n, n))
    wmd = (wmd + wmd.T) / 2
    np.fill_diagonal(bow, 0)
    np.fill_diagonal(wmd, 0)
    wmd[5, :] = wmd[:, 5] = np.nan  # an empty document
    return wmd.astype(np.float32), bow.astype(np.float32)


def _assert_written_twice_identically(make, tmp_path):
    first = [p.read_bytes() for p in make(tmp_path / "one" / "fig.png")]
    second = [p.read_bytes() for p in make(tmp_path / "two" / "fig.png")]
    assert first[0].startswith(b"\x89PNG") and b"<svg" in first[1]
    assert all(len(b) > 1000 for b in first)
    assert first == second


def test_figure3_png_and_svg_are_reproducible(tmp_path):
    scores = _figure3_scores()
    _assert_written_twice_identically(
        lambda out: figures.figure3(scores, "original", out), tmp_path
    )


def test_figure5_png_and_svg_are_reproducible(tmp_path):
    wmd, bow = _distance_matrices()
    panels = [("a", np.arange(40), wmd, bow), ("b", np.arange(40), bow, bow)]
    _assert_written_twice_identically(
        lambda out: figures.figure5(panels, out, max_points=200, seed=0), tmp_path
    )


def test_pair_statistics_rho_is_pearson_over_all_finite_pairs():
    wmd, bow = _distance_matrices()
    i, j = np.triu_indices(len(wmd), k=1)
    w, b = wmd[i, j].astype(np.float64), bow[i, j].astype(np.float64)
    finite = np.isfinite(w) & np.isfinite(b)
    expected = pearsonr(b[finite], w[finite]).statistic
    # Small blocks and a subsample: ρ must still cover every finite pair.
    stats = figures.pair_statistics(wmd, bow, max_points=100, seed=0, block_rows=7)
    assert stats.n_pairs == finite.sum() == 39 * 38 // 2
    assert stats.rho == pytest.approx(expected, abs=1e-12)
    assert stats.bow_sample.size == stats.wmd_sample.size == 100
    # Sampled points are real pairs: each (bow, wmd) sample occurs among the finite pairs.
    pairs = set(zip(b[finite], w[finite], strict=True))
    assert all(p in pairs for p in zip(stats.bow_sample, stats.wmd_sample, strict=True))


def test_run_figure5_computes_bow_on_the_matrix_documents(tmp_path):
    documents = pa.Table.from_pylist(
        [
            {"doc_id": 0, "label": "x", "y": 0, "words": ["a", "b"], "counts": [1.0, 1.0]},
            {"doc_id": 1, "label": "x", "y": 0, "words": ["a"], "counts": [2.0]},
            {"doc_id": 2, "label": "y", "y": 1, "words": [], "counts": []},
            {"doc_id": 3, "label": "y", "y": 1, "words": ["c"], "counts": [1.0]},
        ],
        schema=schemas.DOCUMENTS,
    )
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    doc_ids = np.array([3, 0, 1, 2])  # not the documents' order
    bow = figures.bow_l1_matrix(documents, doc_ids)
    assert bow[0, 1] == pytest.approx(2.0) and bow[1, 2] == pytest.approx(1.0)
    assert np.isnan(bow[3]).all() and np.isnan(bow[:, 3]).all()
    io.write_distances(
        np.where(np.isnan(bow), np.nan, bow * 0.9), doc_ids, tmp_path / "wmd.parquet"
    )
    png, svg = figures.draw_figure5(
        [("toy", tmp_path / "wmd.parquet", tmp_path / "documents.parquet")],
        tmp_path / "fig5.png",
        max_points=20000,
        seed=0,
    )
    assert png.stat().st_size > 0 and svg.stat().st_size > 0
    # With a PCA matrix per dataset (here the same file) a second block is drawn.
    with_pca = figures.draw_figure5(
        [
            (
                "toy",
                tmp_path / "wmd.parquet",
                tmp_path / "documents.parquet",
                tmp_path / "wmd.parquet",
            )
        ],
        tmp_path / "fig5_pca.png",
        max_points=20000,
        seed=0,
        full_dim=300,
        pca_dim=5,
    )
    assert with_pca[0].stat().st_size > png.stat().st_size


def test_all_words_table_is_relative_to_the_main_bow(tmp_path):
    main = scores_table({("BOW (L1/L1)", "a"): [0.2], ("WMD", "a"): [0.1]})
    allwords = scores_table({("BOW (L1/L1)", "a"): [0.1], ("TF-IDF (L1/L1)", "a"): [0.3]})
    io.write_table(main, tmp_path / "scores.parquet", schemas.SCORES)
    io.write_table(allwords, tmp_path / "allwords.parquet", schemas.SCORES)
    report.run_tables(
        tmp_path / "scores.parquet",
        tmp_path / "tables",
        expect(["a"], ["original"], ["BOW (L1/L1)", "WMD"]),
        allwords_path=tmp_path / "allwords.parquet",
        allwords_expected=expect(["a"], ["original"], ["BOW (L1/L1)", "TF-IDF (L1/L1)"]),
    )
    table4 = (tmp_path / "tables" / "table4.csv").read_text(encoding="utf-8").splitlines()
    # all-words BOW 10 % / main BOW 20 % = 0.5; TF-IDF 30 % / 20 % = 1.5
    assert table4[1:] == ["BOW (L1/L1),10.0 *,0.500 *", "TF-IDF (L1/L1),30.0,1.500"]
    note = (tmp_path / "tables" / "table4.md").read_text(encoding="utf-8")
    assert "the first row of Table 2" in note


# --------------------------------------------------------------------------- Figure 4


def _toy_documents(bags: list[dict[str, float]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "doc_id": k,
                "label": "xy"[k % 2],
                "y": k % 2,
                "words": sorted(bag),
                "counts": [bag[w] for w in sorted(bag)],
            }
            for k, bag in enumerate(bags)
        ],
        schema=schemas.DOCUMENTS,
    )


def _toy_embeddings(vectors: dict[str, list[float]]) -> pa.Table:
    words = sorted(vectors)
    matrix = np.array([vectors[w] for w in words], dtype=np.float64)
    return embeddings_table(words, matrix, np.linalg.norm(matrix, axis=1))


def test_histogram_of_two_one_word_documents_puts_all_mass_at_their_cost():
    # |a - b| = 0.5 exactly: all the mass of the one pair moves at distance 0.5.
    inputs = solver.prepare(
        _toy_documents([{"a": 2.0}, {"b": 1.0}]),
        _toy_embeddings({"a": [0.0, 0.0], "b": [0.3, 0.4]}),
        "bow",
    )
    matched = figures.matched_words(inputs, np.array([[0, 1]]))
    assert matched.n_pairs == 1
    np.testing.assert_allclose(matched.costs, [0.5])
    np.testing.assert_allclose(matched.mass, [1.0])
    edges, fractions = figures.match_histogram(matched, bins=20, upper=1.0)
    assert len(edges) == 21 and fractions.sum() == pytest.approx(1.0)
    assert np.flatnonzero(fractions).tolist() == [10]  # [0.50, 0.55)
    # Default range: 0 to the largest distance, which falls in the last (closed) bin.
    _, fractions = figures.match_histogram(matched, bins=20)
    assert np.flatnonzero(fractions).tolist() == [19]


def test_histogram_splits_the_mass_between_exact_and_near_matches():
    # a -> a at 0 and b -> c at 0.32 (cheaper than crossing over via a at distance 1).
    inputs = solver.prepare(
        _toy_documents([{"a": 1.0, "b": 1.0}, {"a": 1.0, "c": 1.0}]),
        _toy_embeddings({"a": [0.0, 0.0], "b": [1.0, 0.0], "c": [1.0, 0.32]}),
        "bow",
    )
    matched = figures.matched_words(inputs, np.array([[0, 1]]))
    assert matched.share_at_zero == pytest.approx(0.5)
    _, fractions = figures.match_histogram(matched, bins=20, upper=1.0)
    assert fractions.sum() == pytest.approx(1.0)
    assert {
        int(b): float(f)
        for b, f in zip(np.flatnonzero(fractions), fractions[fractions > 0], strict=True)
    } == {0: pytest.approx(0.5), 6: pytest.approx(0.5)}  # 0.32 is in [0.30, 0.35)


def test_nearest_neighbours_skip_self_and_empty_documents_and_break_ties_low():
    nan = np.nan
    distances = np.array(
        [
            [0.0, 0.5, 0.5, nan, 0.9],
            [0.5, 0.0, 0.2, nan, 0.2],
            [0.5, 0.2, 0.0, nan, 0.1],
            [nan, nan, nan, nan, nan],  # an empty document
            [0.9, 0.2, 0.1, nan, 0.0],
        ],
        dtype=np.float32,
    )
    everyone = np.arange(5)
    pairs = figures.nearest_neighbour_pairs(distances, everyone, everyone, block_rows=2)
    # 0: tie between 1 and 2 -> 1; 1: tie between 2 and 4 -> 2; 3: no neighbour.
    assert pairs.tolist() == [[0, 1], [1, 2], [2, 4], [4, 2]]


def test_one_fold_pairs_test_documents_with_training_documents():
    folds = [(np.array([0, 2, 4]), np.array([1, 3]))]
    queries, candidates = figures.query_candidates(folds, 5)
    assert queries.tolist() == [1, 3] and candidates.tolist() == [0, 2, 4]
    distances = np.full((5, 5), 1.0)
    distances[1, 3] = distances[3, 1] = 0.0  # two test documents: not each other's pair
    distances[1, 4] = 0.5
    assert figures.nearest_neighbour_pairs(distances, queries, candidates).tolist() == [
        [1, 4],
        [3, 0],
    ]
    five = [(np.array([0, 1]), np.array([2])), (np.array([1, 2]), np.array([0]))]
    assert figures.query_candidates(five, 3)[0].tolist() == [0, 1, 2]


def test_sample_pairs_is_seeded_and_keeps_order():
    pairs = np.column_stack([np.arange(50), np.arange(50) + 1])
    sample = figures.sample_pairs(pairs, 10, seed=0)
    assert len(sample) == 10 and (np.diff(sample[:, 0]) > 0).all()
    assert np.array_equal(sample, figures.sample_pairs(pairs, 10, seed=0))
    assert figures.sample_pairs(pairs, None, seed=0) is pairs


def _toy_corpus(n: int = 12, seed: int = 0) -> tuple[pa.Table, dict[str, list[float]]]:
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{k}" for k in range(15)]
    vectors = {
        w: list(v / np.linalg.norm(v))
        for w, v in zip(vocabulary, rng.normal(size=(15, 6)), strict=True)
    }
    bags = [
        {w: float(rng.integers(1, 3)) for w in rng.choice(vocabulary, 4, replace=False)}
        for _ in range(n)
    ]
    bags[5] = {}  # an empty document
    return _toy_documents(bags), vectors


def _wmd_matrix(documents: pa.Table, embeddings: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    inputs = solver.prepare(documents, embeddings, "bow")
    matrix = np.array(
        [
            [solver.wmd_pair(inputs, i, j) if i != j else 0.0 for j in range(inputs.n)]
            for i in range(inputs.n)
        ]
    )
    matrix[inputs.empty, :] = np.nan
    matrix[:, inputs.empty] = np.nan
    return inputs.doc_ids, matrix


def _figure4_panels() -> list[figures.Figure4Panel]:
    documents, vectors = _toy_corpus()
    full = _toy_embeddings(vectors)
    reduced = pca.project_embeddings(full, documents, 2)
    doc_ids, matrix = _wmd_matrix(documents, full)
    pairs = figures.nearest_neighbour_pairs(matrix, np.arange(12), np.arange(12))
    return [
        figures.Figure4Panel(
            name, row, solver.prepare(documents, table, "bow"), chosen, len(pairs), source
        )
        for name in ("toy", "toy again")
        for row, table, chosen, source in (
            ("6-d embeddings", full, pairs, "top: by WMD"),
            ("2-d PCA embeddings", reduced, pairs[:5], "bottom: same pairs"),
        )
    ]


def test_figure4_png_and_svg_are_reproducible(tmp_path):
    panels = _figure4_panels()
    _assert_written_twice_identically(lambda out: figures.figure4(panels, out), tmp_path)


def test_run_figure4_from_files_one_fold_with_pca(tmp_path):
    documents, vectors = _toy_corpus()
    full = _toy_embeddings(vectors)
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(full, tmp_path / "embeddings.parquet")
    pca.run_project(
        tmp_path / "embeddings.parquet", tmp_path / "documents.parquet", 2, tmp_path / "pca.parquet"
    )
    for name, table_path in (("wmd", "embeddings.parquet"), ("wmd_pca", "pca.parquet")):
        doc_ids, matrix = _wmd_matrix(documents, io.read_table(tmp_path / table_path))
        io.write_distances(matrix, doc_ids, tmp_path / f"{name}.parquet")
    splits = pa.Table.from_pylist(
        [{"fold": 0, "doc_id": d, "subset": "test" if d % 3 == 0 else "train"} for d in range(12)],
        schema=schemas.SPLITS,
    )
    io.write_table(splits, tmp_path / "splits.parquet", schemas.SPLITS)
    item = figures.Figure4Item(
        "toy",
        tmp_path / "documents.parquet",
        tmp_path / "splits.parquet",
        tmp_path / "wmd.parquet",
        tmp_path / "embeddings.parquet",
        tmp_path / "pca.parquet",
        tmp_path / "wmd_pca.parquet",
    )
    png, svg = figures.draw_figure4([item], tmp_path / "fig4.png", max_documents=3, seed=0)
    assert png.read_bytes().startswith(b"\x89PNG") and b"<svg" in svg.read_bytes()
    assert figures.embedding_dimension(tmp_path / "pca.parquet") == 2


def test_figure5_with_pca_block_is_reproducible(tmp_path):
    wmd_matrix, bow = _distance_matrices()
    pca_matrix, _ = _distance_matrices(seed=4)
    panels = [("a", np.arange(40), wmd_matrix, bow), ("b", np.arange(40), bow, bow)]
    pca_panels = [("a", np.arange(40), pca_matrix, bow), None]
    _assert_written_twice_identically(
        lambda out: figures.figure5(
            panels,
            out,
            max_points=200,
            seed=0,
            pca_panels=pca_panels,
            row_titles=("300-d embeddings", "5-d PCA embeddings"),
        ),
        tmp_path,
    )


def test_read_tables_concatenates_in_order_cast_to_the_schema(tmp_path):
    schema = pa.schema(
        [pa.field("name", pa.string(), nullable=False), pa.field("value", pa.float64())]
    )
    paths = []
    for i, values in enumerate(([1, 2], [3])):
        path = tmp_path / f"{i}.parquet"
        # written with an int column and an extra one: read back as float64, extra dropped
        io.write_table(
            pa.table({"value": values, "name": [f"t{i}"] * len(values), "extra": values}), path
        )
        paths.append(path)
    table = io.read_tables(paths, schema)
    assert table.schema == schema
    assert table.to_pylist() == [
        {"name": "t0", "value": 1.0},
        {"name": "t0", "value": 2.0},
        {"name": "t1", "value": 3.0},
    ]
    assert io.read_tables([], schema).equals(schema.empty_table())
    with pytest.raises(io.WmdevalError, match="missing.parquet: file not found"):
        io.read_tables([paths[0], tmp_path / "missing.parquet"], schema)
