"""Tables (report.py) and figures (figures.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import pearsonr

from wmdeval import figures, io, report, schemas

PAPER_DATASETS = ["bbcsport", "twitter", "recipe", "ohsumed", "classic", "reuters", "amazon",
                  "20news"]
ONE_FOLD = {"ohsumed", "reuters", "20news"}


def scores_table(errors: dict, variant: str = "original", classifier: str = "knn",
                 n_test_empty: int = 0) -> pa.Table:
    """SCORES rows from {(method, dataset): [test error per fold, as fractions]}."""
    rows = [
        {"dataset": dataset, "variant": variant, "method": method, "classifier": classifier,
         "fold": fold, "param": 1.0, "val_accuracy": 0.5, "test_error": error, "n_test": 100,
         "n_test_empty": n_test_empty}
        for (method, dataset), folds in errors.items() for fold, error in enumerate(folds)
    ]
    return pa.Table.from_pylist(rows, schema=schemas.SCORES)


def folds_with_mean(mean_percent: float, dataset: str) -> list[float]:
    """Fold errors (fractions) whose mean is ``mean_percent`` / 100: five folds spread
    symmetrically around it for five-fold datasets, one value otherwise."""
    if dataset in ONE_FOLD:
        return [mean_percent / 100]
    return [(mean_percent + d) / 100 for d in (-0.4, -0.2, 0.0, 0.2, 0.4)]


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
    assert report.paper_table(table, "original", "knn", None, ["bbcsport"])[0][1] \
        .startswith("3.0 ± 1.4")


def test_one_fold_dataset_is_a_single_number():
    table = scores_table({("WMD", "ohsumed"): [0.4451]})
    rows = report.paper_table(table, "original", "knn", None, ["ohsumed"])
    assert rows[0][1].removesuffix(report.BEST_MARKER) == "44.5"


def test_best_marker_goes_on_the_lowest_mean_of_each_column():
    table = scores_table({
        ("BOW (L1/L1)", "a"): [0.10], ("BOW (L1/L1)", "b"): [0.20],
        ("WMD", "a"): [0.05], ("WMD", "b"): [0.30],
        ("TF-IDF (L1/L1)", "a"): [0.05], ("TF-IDF (L1/L1)", "b"): [0.25],
    })
    rows = report.paper_table(table, "original", "knn", None, ["a", "b"])
    assert [r[0] for r in rows] == ["BOW (L1/L1)", "TF-IDF (L1/L1)", "WMD"]
    marked = {(r[0], column) for r in rows for column, text in zip(["a", "b", "rel."], r[1:],
                                                                  strict=True)
              if text.endswith(report.BEST_MARKER)}
    # A tie in column a marks both rows; rel.: BOW 1.0, WMD (0.5 + 1.5) / 2 = 1.0,
    # TF-IDF (0.5 + 1.25) / 2 = 0.875 is the lowest.
    assert marked == {("TF-IDF (L1/L1)", "a"), ("WMD", "a"), ("BOW (L1/L1)", "b"),
                      ("TF-IDF (L1/L1)", "rel.")}


def test_missing_reference_leaves_rel_empty():
    table = scores_table({("WMD", "a"): [0.1], ("TF-IDF (L1/L1)", "a"): [0.2]})
    rows = report.paper_table(table, "original", "knn", None, ["a"])
    assert [r[-1] for r in rows] == ["", ""]


def test_wknn_rel_is_relative_to_knn_reference():
    knn = scores_table({("BOW (L1/L1)", "a"): [0.20]})
    wknn = scores_table({("BOW (L1/L1)", "a"): [0.10], ("WMD", "a"): [0.05]},
                        classifier="wknn")
    table = pa.concat_tables([knn, wknn])
    rows = report.paper_table(table, "original", "wknn", ["BOW (L1/L1)", "WMD"], ["a"])
    assert [r[-1].removesuffix(report.BEST_MARKER) for r in rows] == ["0.500", "0.250"]


def test_markdown_rendering_of_a_small_table(tmp_path):
    table = scores_table({
        ("WMD", "bbcsport"): [0.05, 0.07], ("WMD", "reuters"): [0.04],
        ("BOW (L1/L1)", "bbcsport"): [0.04, 0.04], ("BOW (L1/L1)", "reuters"): [0.08],
    })
    datasets = ["bbcsport", "reuters"]
    rows = report.paper_table(table, "original", "knn", None, datasets)
    csv_path, md_path = tmp_path / "t.csv", tmp_path / "t.md"
    report.write_table_files(rows, report.table_header(datasets), csv_path, md_path,
                             "Table X", "A note.")
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
    second = pa.concat_tables([
        scores_table({("WMD", "alpha"): [0.1]}, variant="clean"),
        scores_table({("WMD", "alpha"): [0.1]}),
    ])
    paths = [tmp_path / "zeta.parquet", tmp_path / "alpha.parquet"]
    io.write_table(first.take([2, 1, 0]), paths[0], schemas.SCORES)
    io.write_table(second, paths[1], schemas.SCORES)
    out = tmp_path / "scores.parquet"
    report.run_collect(paths, out)
    collected = io.read_table(out, schemas.SCORES)
    keys = list(zip(*(collected.column(c).to_pylist()
                      for c in ("dataset", "variant", "method", "fold")), strict=True))
    assert keys == [("zeta", "original", "BOW (L1/L1)", 0), ("zeta", "original", "WMD", 0),
                    ("zeta", "original", "WMD", 1), ("alpha", "original", "WMD", 0),
                    ("alpha", "clean", "WMD", 0)]
    with pytest.raises(io.WmdevalError, match="duplicate"):
        report.collect_scores([paths[0], paths[0]])


def test_run_tables_writes_every_table_even_without_rows(tmp_path):
    scores = scores_table({("BOW (L1/L1)", "a"): [0.1], ("WMD", "a"): [0.2]}, n_test_empty=1)
    io.write_table(scores, tmp_path / "scores.parquet", schemas.SCORES)
    written = report.run_tables(tmp_path / "scores.parquet", tmp_path / "tables", ["a"])
    assert sorted(p.name for p in written) == sorted(
        f"{name}.{ext}"
        for name in ("table2", "table3", "table6", "table6_clean", "table4", "table5")
        for ext in ("csv", "md"))
    table2 = (tmp_path / "tables" / "table2.md").read_text(encoding="utf-8")
    assert "| WMD | 20.0 | 2.000 |" in table2
    assert "a 1." in table2  # the empty test document is reported
    assert "no rows" in (tmp_path / "tables" / "table3.md").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- figures


def _figure3_scores() -> pa.Table:
    errors = {}
    for i, dataset in enumerate(["bbcsport", "ohsumed", "classic"]):
        for j, method in enumerate(["BOW (None/L2)", "BOW (L1/L1)", "TF-IDF (None/L2)",
                                    "TF-IDF (L1/L1)", "WMD"]):
            base = 0.05 + 0.03 * i + 0.02 * j
            errors[method, dataset] = [base] if dataset in ONE_FOLD else \
                [base, base + 0.01, base - 0.01]
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
    _assert_written_twice_identically(lambda out: figures.figure3(scores, "original", out),
                                      tmp_path)


def test_figure5_png_and_svg_are_reproducible(tmp_path):
    wmd, bow = _distance_matrices()
    panels = [("a", np.arange(40), wmd, bow), ("b", np.arange(40), bow, bow)]
    _assert_written_twice_identically(lambda out: figures.figure5(panels, out, max_points=200),
                                      tmp_path)


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
    documents = pa.Table.from_pylist([
        {"doc_id": 0, "label": "x", "y": 0, "words": ["a", "b"], "counts": [1.0, 1.0]},
        {"doc_id": 1, "label": "x", "y": 0, "words": ["a"], "counts": [2.0]},
        {"doc_id": 2, "label": "y", "y": 1, "words": [], "counts": []},
        {"doc_id": 3, "label": "y", "y": 1, "words": ["c"], "counts": [1.0]},
    ], schema=schemas.DOCUMENTS)
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    doc_ids = np.array([3, 0, 1, 2])  # not the documents' order
    bow = figures.bow_l1_matrix(documents, doc_ids)
    assert bow[0, 1] == pytest.approx(2.0) and bow[1, 2] == pytest.approx(1.0)
    assert np.isnan(bow[3]).all() and np.isnan(bow[:, 3]).all()
    io.write_distances(np.where(np.isnan(bow), np.nan, bow * 0.9), doc_ids,
                       tmp_path / "wmd.parquet")
    png, svg = figures.run_figure5([("toy", tmp_path / "wmd.parquet",
                                     tmp_path / "documents.parquet")], tmp_path / "fig5.png")
    assert png.stat().st_size > 0 and svg.stat().st_size > 0


def test_all_words_table_is_relative_to_the_main_bow(tmp_path):
    main = scores_table({("BOW (L1/L1)", "a"): [0.2], ("WMD", "a"): [0.1]})
    allwords = scores_table({("BOW (L1/L1)", "a"): [0.1], ("TF-IDF (L1/L1)", "a"): [0.3]})
    io.write_table(main, tmp_path / "scores.parquet", schemas.SCORES)
    io.write_table(allwords, tmp_path / "allwords.parquet", schemas.SCORES)
    report.run_tables(tmp_path / "scores.parquet", tmp_path / "tables", ["a"],
                      allwords_path=tmp_path / "allwords.parquet")
    table4 = (tmp_path / "tables" / "table4.csv").read_text(encoding="utf-8").splitlines()
    # all-words BOW 10 % / main BOW 20 % = 0.5; TF-IDF 30 % / 20 % = 1.5
    assert table4[1:] == ["BOW (L1/L1),10.0 *,0.500 *", "TF-IDF (L1/L1),30.0,1.500"]
    note = (tmp_path / "tables" / "table4.md").read_text(encoding="utf-8")
    assert "the first row of Table 2" in note
