"""Paired significance tests on test predictions (wmdeval.analyses.significance)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
import scipy.stats

from wmdeval.analyses import significance as sig
from wmdeval.core import io, schemas

BOW = "BOW (L1/L1)"

# --------------------------------------------------------------------------- McNemar


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 5, 2 / 32),  # 2 P(X <= 0), X ~ Bin(5, 1/2)
        (5, 0, 2 / 32),
        (1, 1, 1.0),  # 2 P(X <= 1) = 1.5, capped
        (0, 0, 1.0),  # no discordant document
        (1, 4, 2 * 6 / 32),  # 2 (1 + 5) / 32
        (0, 1, 1.0),
        (3, 0, 2 / 8),
        (2, 8, 2 * (1 + 10 + 45) / 1024),
    ],
)
def test_mcnemar_by_hand(b, c, expected):
    assert sig.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)


def test_mcnemar_matches_scipy_binomtest():
    pairs = list(itertools.product(range(0, 41), repeat=2)) + [(300, 260), (12, 90), (1000, 1100)]
    for b, c in pairs:
        if b + c == 0:
            continue
        expected = scipy.stats.binomtest(b, b + c, 0.5).pvalue
        assert sig.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300), (b, c)


def test_mcnemar_rejects_negative_counts():
    with pytest.raises(ValueError):
        sig.mcnemar_exact(-1, 3)


# --------------------------------------------------------------------------- Holm


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        # sorted: 0.005 * 4, 0.01 * 3, 0.03 * 2, 0.04 * 1 -> 0.02, 0.03, 0.06, max(0.06, 0.04)
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.02, math.nan, 0.04], [0.04, math.nan, 0.04]),  # NaN does not count in m
        ([0.5, 0.6], [1.0, 1.0]),  # capped at 1, then monotone
        ([0.2], [0.2]),
        ([0.01, 0.01], [0.02, 0.02]),
        ([], []),
        ([math.nan], [math.nan]),
    ],
)
def test_holm_by_hand(p, expected):
    np.testing.assert_allclose(sig.holm(p), expected, rtol=1e-12)


def test_holm_is_monotone_in_the_raw_order_and_never_below_raw():
    rng = np.random.default_rng(3)
    p = rng.random(30) ** 3
    adjusted = sig.holm(p)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)
    assert np.all(adjusted >= p) and np.all(adjusted <= 1)


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_identical_inputs_give_zero():
    correct = np.random.default_rng(0).random(50) < 0.7
    assert sig.paired_bootstrap(correct, correct, 500, 1) == (0.0, 0.0)


def test_bootstrap_always_wrong_against_always_right_gives_one():
    assert sig.paired_bootstrap(np.zeros(20, bool), np.ones(20, bool), 300, 2) == (1.0, 1.0)
    assert sig.paired_bootstrap(np.ones(20, bool), np.zeros(20, bool), 300, 2) == (-1.0, -1.0)


def test_bootstrap_interval_contains_the_observed_difference():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(20, 400))
        a = rng.random(n) < rng.uniform(0.5, 0.9)
        b = rng.random(n) < rng.uniform(0.5, 0.9)
        observed = np.mean(~a) - np.mean(~b)
        low, high = sig.paired_bootstrap(a, b, 2000, int(rng.integers(1000)))
        assert low <= observed <= high
        assert low < high


def test_bootstrap_is_deterministic():
    rng = np.random.default_rng(8)
    a, b = rng.random(300) < 0.6, rng.random(300) < 0.7
    first = np.array(sig.paired_bootstrap(a, b, 1000, 42))
    second = np.array(sig.paired_bootstrap(a, b, 1000, 42))
    assert first.tobytes() == second.tobytes()
    assert sig.paired_bootstrap(a, b, 1000, 43) != tuple(first)


def test_bootstrap_matches_resampling_document_indices():
    """Drawing the three case counts is the index resampling, in distribution."""
    rng = np.random.default_rng(11)
    a, b = rng.random(200) < 0.6, rng.random(200) < 0.75
    wrong_difference = (~a).astype(float) - (~b).astype(float)
    indices = rng.integers(0, 200, size=(20000, 200))
    naive = np.quantile(wrong_difference[indices].mean(axis=1), [0.025, 0.975])
    np.testing.assert_allclose(sig.paired_bootstrap(a, b, 20000, 0), naive, atol=0.011)


def test_bootstrap_of_no_document_is_nan():
    assert all(math.isnan(x) for x in sig.paired_bootstrap(np.zeros(0), np.zeros(0), 10, 0))


# --------------------------------------------------------------------------- Friedman, Nemenyi


def test_friedman_matches_scipy():
    rng = np.random.default_rng(0)
    for n_datasets, n_methods in itertools.product([2, 3, 5, 10], [3, 4, 7]):
        for rounding in (None, 1):  # continuous errors, and errors with many ties
            errors = rng.random((n_datasets, n_methods))
            if rounding is not None:
                errors = np.round(errors, rounding)
            statistic, p_value, ranks = sig.friedman(errors)
            expected = scipy.stats.friedmanchisquare(*errors.T)
            if not np.isfinite(expected.statistic):
                continue  # every dataset ties every method: undefined in both
            assert statistic == pytest.approx(expected.statistic, rel=1e-10)
            assert p_value == pytest.approx(expected.pvalue, rel=1e-9)
            expected_ranks = np.mean([scipy.stats.rankdata(row) for row in errors], axis=0)
            np.testing.assert_allclose(ranks, expected_ranks)


def test_friedman_by_hand_with_two_datasets():
    # Ranks (1, 2, 3) on both datasets: R = (2, 4, 6), chi² = 12/(3*2*4) * 56 - 3*2*4 = 4.
    statistic, p_value, ranks = sig.friedman([[0.1, 0.2, 0.3], [0.05, 0.5, 0.6]])
    assert statistic == pytest.approx(4.0)
    assert p_value == pytest.approx(math.exp(-2.0))  # chi² with 2 df: sf(x) = exp(-x/2)
    np.testing.assert_allclose(ranks, [1, 2, 3])


def test_friedman_of_complete_ties_is_undefined():
    statistic, p_value, ranks = sig.friedman([[0.1, 0.1], [0.2, 0.2]])
    assert math.isnan(statistic) and math.isnan(p_value)
    np.testing.assert_allclose(ranks, [1.5, 1.5])


def test_friedman_needs_two_datasets():
    with pytest.raises(ValueError):
        sig.friedman([[0.1, 0.2, 0.3]])


@pytest.mark.parametrize(
    ("k", "q"),
    # Demšar (2006), Table 5a: Nemenyi critical values at alpha = 0.05.
    [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850), (8, 3.031), (10, 3.164)],
)
def test_nemenyi_q_matches_demsar(k, q):
    # The table is given to 3 decimals, some truncated (k = 3: 2.34370 is listed as 2.343).
    assert sig.nemenyi_q(k, 0.05) == pytest.approx(q, abs=1e-3)


@pytest.mark.parametrize(("k", "q"), [(2, 1.645), (3, 2.052), (5, 2.459), (10, 2.920)])
def test_nemenyi_q_matches_demsar_at_alpha_010(k, q):
    assert sig.nemenyi_q(k, 0.10) == pytest.approx(q, abs=1e-3)


def test_nemenyi_critical_difference_formula():
    # k = 3, N = 2: sqrt(3 * 4 / 12) = 1, so CD = q.
    assert sig.nemenyi_critical_difference(3, 2, 0.05) == pytest.approx(sig.nemenyi_q(3, 0.05))
    expected = sig.nemenyi_q(5, 0.05) * math.sqrt(5 * 6 / (6 * 14))
    assert sig.nemenyi_critical_difference(5, 14, 0.05) == pytest.approx(expected)


def test_rank_groups_are_maximal_runs_closer_than_cd():
    ranks = {"A": 1.0, "B": 1.5, "C": 3.0, "D": 3.2}
    assert sig.rank_groups(ranks, 1.0) == [(0, 1), (2, 3)]
    assert sig.rank_groups(ranks, 10.0) == [(0, 3)]
    assert sig.rank_groups(ranks, 0.1) == []
    assert sig.rank_groups(ranks, 0.5) == [(2, 3)]  # differs by exactly CD: not joined
    assert sig.rank_groups(ranks, math.nan) == []


# --------------------------------------------------------------------------- predictions


def prediction_rows(dataset, method, correct, variant="original", classifier="knn", folds=1):
    """PREDICTIONS rows of one method: documents split evenly over the folds; a False in
    ``correct`` is a wrong label, None in ``correct`` a missing prediction (an error)."""
    per_fold = len(correct) // folds
    rows = []
    for doc_id, right in enumerate(correct):
        true = ["x", "y"][doc_id % 2]
        predicted = None if right is None else (true if right else ["y", "x"][doc_id % 2])
        rows.append(
            {
                "dataset": dataset,
                "variant": variant,
                "method": method,
                "classifier": classifier,
                "fold": doc_id // per_fold,
                "doc_id": doc_id,
                "true_label": true,
                "predicted_label": predicted,
            }
        )
    return rows


def predictions_table(rows) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schemas.PREDICTIONS)


T, F = True, False
#: Ten test documents over two folds. BOW is wrong on 7-9 (error 0.3); WMD is always right
#: (b = 3, c = 0); WCD is wrong on 0-4 (doc 4: no prediction) and 7-9 (b = 0, c = 5).
HAND = {
    "WMD": [T] * 10,
    BOW: [T, T, T, T, T, T, T, F, F, F],
    "WCD": [F, F, F, F, None, T, T, F, F, F],
}


def hand_table(datasets=("d1",)) -> pa.Table:
    return predictions_table(
        [row for d in datasets for m, c in HAND.items() for row in prediction_rows(d, m, c)]
    )


def test_significance_table_by_hand():
    table = sig.significance_table(hand_table(), [BOW], alpha=0.2, n_resamples=500, seed=0)
    assert table.schema == schemas.SIGNIFICANCE
    rows = table.to_pylist()
    # Methods in order of first appearance (WMD came first), the reference left out.
    assert [r["method"] for r in rows] == ["WMD", "WCD"]
    wmd, wcd = rows
    assert (wmd["n"], wmd["b"], wmd["c"]) == (10, 3, 0)
    assert (wcd["n"], wcd["b"], wcd["c"]) == (10, 0, 5)
    assert wmd["error"] == 0.0 and wcd["error"] == pytest.approx(0.8)
    assert wmd["reference_error"] == pytest.approx(0.3)
    assert wmd["difference"] == pytest.approx(-0.3) and wcd["difference"] == pytest.approx(0.5)
    assert (wmd["test"], wmd["folds"]) == (sig.MCNEMAR, 1)  # one split: McNemar
    assert wmd["p_value"] == pytest.approx(2 / 8)  # 2 P(X <= 0), X ~ Bin(3, 1/2)
    assert wcd["p_value"] == pytest.approx(2 / 32)
    # Holm: 0.0625 * 2 = 0.125, then max(0.125, 0.25 * 1) = 0.25.
    assert wcd["p_holm"] == pytest.approx(0.125) and wmd["p_holm"] == pytest.approx(0.25)
    assert wcd["significant"] and not wmd["significant"]
    for r in rows:
        assert r["ci_low"] <= r["difference"] <= r["ci_high"]
    # WMD is right wherever BOW is: every resample's difference is <= 0.
    assert wmd["ci_high"] <= 0


def test_significance_table_with_two_references_and_several_groups():
    rows = [row for m, c in HAND.items() for row in prediction_rows("d1", m, c)]
    rows += [row for m, c in HAND.items() for row in prediction_rows("d0", m, c, "clean")]
    rows += [row for m, c in HAND.items() for row in prediction_rows("d1", m, c, "clean", "wknn")]
    table = sig.significance_table(predictions_table(rows), [BOW, "WMD", BOW], 0.05, 100, 0)
    keys = [
        (r["dataset"], r["variant"], r["classifier"], r["reference"], r["method"])
        for r in table.to_pylist()
    ]
    assert keys[:4] == [
        ("d1", "original", "knn", BOW, "WMD"),
        ("d1", "original", "knn", BOW, "WCD"),
        ("d1", "original", "knn", "WMD", BOW),
        ("d1", "original", "knn", "WMD", "WCD"),
    ]
    assert keys[4][:3] == ("d1", "clean", "wknn") and keys[8][:3] == ("d0", "clean", "knn")
    assert len(keys) == 12


def test_unpaired_comparison_is_refused():
    rows = [
        row
        for m, c in HAND.items()
        for row in prediction_rows("d1", m, c)
        if not (m == "WCD" and row["doc_id"] == 3)
    ]
    with pytest.raises(io.WmdevalError, match=r"WCD and BOW \(L1/L1\).*same \(fold, doc_id\)"):
        sig.significance_table(predictions_table(rows), [BOW], 0.05, 100, 0)


def test_same_document_in_another_fold_is_not_paired():
    rows = [row for m, c in HAND.items() for row in prediction_rows("d1", m, c)]
    for row in rows:
        if row["method"] == "WCD" and row["doc_id"] == 0:
            row["fold"] = 1
    with pytest.raises(io.WmdevalError, match="unpaired"):
        sig.significance_table(predictions_table(rows), [BOW], 0.05, 100, 0)


def test_duplicate_prediction_is_refused():
    rows = [row for m, c in HAND.items() for row in prediction_rows("d1", m, c)]
    rows.append(dict(rows[0]))
    with pytest.raises(io.WmdevalError, match="two rows for fold 0, doc_id 0"):
        sig.significance_table(predictions_table(rows), [BOW], 0.05, 100, 0)


def test_missing_reference_is_named():
    with pytest.raises(io.WmdevalError, match="'WMD-TF-IDF'"):
        sig.significance_table(hand_table(), [BOW, "WMD-TF-IDF"], 0.05, 100, 0)


def test_significance_table_is_deterministic_and_independent_of_the_rest(tmp_path):
    table = sig.significance_table(hand_table(), [BOW], 0.05, 1000, 7)
    again = sig.significance_table(hand_table(), [BOW], 0.05, 1000, 7)
    io.write_csv(tmp_path / "a.csv", table)
    io.write_csv(tmp_path / "b.csv", again)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()

    # Shuffled rows and another dataset in the table: d1's intervals stay the same.
    bigger = hand_table(("d0", "d1"))
    shuffled = bigger.take(np.random.default_rng(0).permutation(bigger.num_rows))
    other = sig.significance_table(shuffled, [BOW], 0.05, 1000, 7).to_pylist()
    d1 = {r["method"]: r for r in other if r["dataset"] == "d1"}
    for row in table.to_pylist():
        assert d1[row["method"]] == row


def test_comparison_seed_is_stable():
    # A fixed value: the seed must not depend on the process (Python's hash() would).
    state = sig.comparison_seed(0, "d1", "original", "knn", BOW, "WMD").generate_state(1)
    again = sig.comparison_seed(0, "d1", "original", "knn", BOW, "WMD").generate_state(1)
    assert state.tobytes() == again.tobytes()
    other = sig.comparison_seed(0, "d1", "original", "knn", BOW, "WCD").generate_state(1)
    assert state.tobytes() != other.tobytes()


# --------------------------------------------------------------------------- across datasets


def test_critical_difference_from_predictions():
    rows = [row for m, c in HAND.items() for row in prediction_rows("d1", m, c)]
    # d2: WCD best, then BOW, then WMD.
    rows += prediction_rows("d2", "WMD", [F] * 6 + [T] * 4)
    rows += prediction_rows("d2", BOW, [F] * 3 + [T] * 7)
    rows += prediction_rows("d2", "WCD", [T] * 10)
    rows += prediction_rows("d2", "WCD-only-here", [T] * 10)  # not on d1: left out
    result = sig.critical_difference(predictions_table(rows), "original", "knn", 0.05)
    assert result.datasets == ("d1", "d2")
    assert result.methods == ("WMD", BOW, "WCD")
    assert result.left_out == ("WCD-only-here",)
    np.testing.assert_allclose(result.errors, [[0.0, 0.3, 0.8], [0.6, 0.3, 0.0]])
    assert result.average_ranks == {"WMD": 2.0, BOW: 2.0, "WCD": 2.0}
    statistic, p_value, _ = sig.friedman(result.errors)
    assert (result.statistic, result.p_value) == (statistic, p_value)
    assert result.cd == pytest.approx(sig.nemenyi_critical_difference(3, 2, 0.05))
    assert result.note == ""


def test_critical_difference_with_one_dataset_says_why():
    result = sig.critical_difference(hand_table(), "original", "knn", 0.05)
    assert result.note == sig.TOO_FEW_DATASETS
    assert math.isnan(result.statistic) and math.isnan(result.cd)
    assert result.average_ranks == {"WMD": 1.0, BOW: 2.0, "WCD": 3.0}


def test_critical_difference_of_an_absent_variant_is_an_error():
    with pytest.raises(io.WmdevalError, match="'clean'"):
        sig.critical_difference(hand_table(), "clean", "knn", 0.05)


def test_critical_differences_cover_every_variant_and_classifier():
    rows = [row for m, c in HAND.items() for row in prediction_rows("d1", m, c)]
    rows += [row for m, c in HAND.items() for row in prediction_rows("d1", m, c, "clean", "wknn")]
    found = sig.critical_differences(predictions_table(rows), 0.05)
    assert [(r.variant, r.classifier) for r in found] == [("original", "knn"), ("clean", "wknn")]


# --------------------------------------------------------------------------- figure


@pytest.mark.parametrize(("n_methods", "n_datasets"), [(2, 2), (3, 2), (25, 2), (14, 6)])
def test_diagram_draws_for_many_methods(tmp_path, n_methods, n_datasets):
    from wmdeval.reporting.figures import save_figure

    rng = np.random.default_rng(n_methods)
    errors = rng.random((n_datasets, n_methods))
    statistic, p_value, ranks = sig.friedman(errors)
    cd = sig.nemenyi_critical_difference(n_methods, n_datasets, 0.05)
    names = [f"method {i}" for i in range(n_methods)]
    fig = sig.draw_critical_difference(
        dict(zip(names, ranks, strict=True)), cd, "t", statistic, p_value
    )
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert all(any(t.startswith(f"{n} (") or t.endswith(f") {n}") for t in texts) for n in names)
    assert any(t.startswith("CD = ") for t in texts)
    png, svg = save_figure(fig, tmp_path / "cd.png")
    assert png.stat().st_size > 0 and svg.stat().st_size > 0


def test_diagram_joins_methods_closer_than_cd():
    fig = sig.draw_critical_difference({"A": 1.0, "B": 1.2, "C": 3.0}, 1.0, "t", 1.0, 0.5)
    thick = [line for line in fig.axes[0].lines if line.get_linewidth() == 3.0]
    assert len(thick) == 1  # A and B; C stands alone


# --------------------------------------------------------------------------- run


def write_splits(tmp_path, predictions: pa.Table) -> dict[str, str]:
    """A SPLITS file per dataset variant of ``predictions``: each fold's test documents are
    those predicted there; 7 training documents per 3 test documents."""
    paths = {}
    rows = predictions.to_pylist()
    for dataset, variant in sorted({(r["dataset"], r["variant"]) for r in rows}):
        tests = sorted(
            {
                (r["fold"], r["doc_id"])
                for r in rows
                if (r["dataset"], r["variant"]) == (dataset, variant)
            }
        )
        folds = sorted({f for f, _ in tests})
        fold, doc_id, subset = [], [], []
        for f in folds:
            test = [d for g, d in tests if g == f]
            train = [10_000 + i for i in range(round(len(test) * 7 / 3))]
            fold += [f] * (len(test) + len(train))
            doc_id += test + train
            subset += ["test"] * len(test) + ["train"] * len(train)
        path = tmp_path / "splits" / dataset / variant / "splits.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        io.write_table(ingest_splits_table(fold, doc_id, subset), path, schemas.SPLITS)
        paths[f"{dataset}/{variant}"] = str(path)
    return paths


def ingest_splits_table(fold, doc_id, subset) -> pa.Table:
    return pa.table(
        {
            "fold": pa.array(fold, pa.int16()),
            "doc_id": pa.array(doc_id, pa.int32()),
            "subset": pa.array(subset, pa.string()),
        }
    )


def run(tmp_path, predictions: pa.Table, out="out", **overrides):
    source = tmp_path / "predictions.parquet"
    io.write_table(predictions, source, schemas.PREDICTIONS)
    paths = {
        "out_csv": tmp_path / out / "significance.csv",
        "out_datasets_csv": tmp_path / out / "significance_datasets.csv",
        "out_md": tmp_path / out / "significance.md",
        "out_png": tmp_path / out / "cd.png",
        "out_svg": tmp_path / out / "figures" / "cd.svg",
    }
    arguments = {
        "reference": "WMD",
        "alpha": 0.05,
        "n_resamples": 200,
        "seed": 0,
        "variant": "original",
        "classifier": "knn",
        "rope": 1.0,
        "splits": write_splits(tmp_path, predictions),
    }
    arguments.update(overrides)
    table = sig.run_significance(source, **paths, **arguments)
    return table, paths


def test_run_significance_writes_all_outputs(tmp_path):
    table, paths = run(tmp_path, hand_table(("d1", "d2", "d3")))
    for path in paths.values():
        assert path.stat().st_size > 0, path
    assert sorted(set(table.column("reference").to_pylist())) == [BOW, "WMD"]
    markdown = paths["out_md"].read_text()
    assert "the exact McNemar test" in markdown and "B = 200, seed 0" in markdown
    assert "| d1 | original | knn | BOW (L1/L1) | WCD | exact McNemar | 1 | 10 |" in markdown
    assert sig.too_few_datasets(3) in markdown  # 3 datasets: no test across them
    csv = paths["out_csv"].read_text().splitlines()
    assert csv[0] == ",".join(schemas.SIGNIFICANCE.names)
    assert len(csv) == 1 + table.num_rows == 1 + 3 * 4


def test_run_significance_is_byte_for_byte_reproducible(tmp_path):
    _, first = run(tmp_path, hand_table(("d1", "d2")), out="a")
    _, second = run(tmp_path, hand_table(("d1", "d2")), out="b")
    for name in first:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_run_significance_with_one_dataset_still_draws_the_figure(tmp_path):
    _, paths = run(tmp_path, hand_table(), reference=BOW)
    assert paths["out_png"].stat().st_size > 0
    assert b"<svg" in paths["out_svg"].read_bytes()


def test_one_dataset_figure_says_why():
    result = sig.critical_difference(hand_table(), "original", "knn", 0.05)
    fig = sig.critical_difference_figure(result)
    assert sig.TOO_FEW_DATASETS in [t.get_text() for t in fig.texts]


def test_run_significance_writes_nothing_on_error(tmp_path):
    with pytest.raises(io.WmdevalError, match="WMD-TF-IDF"):
        run(tmp_path, hand_table(), reference="WMD-TF-IDF")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))


def test_empty_predictions_give_an_empty_table():
    empty = schemas.PREDICTIONS.empty_table()
    assert sig.significance_table(empty, [], 0.05, 10, 0).schema == schemas.SIGNIFICANCE
    assert sig.significance_table(empty, [], 0.05, 10, 0).num_rows == 0
    with pytest.raises(io.WmdevalError, match="no rows for the reference"):
        sig.significance_table(empty, [BOW], 0.05, 10, 0)


# --------------------------------------------------------------------------- random splits


def test_split_design_by_hand():
    # fold 0: 3 test, 7 train; fold 1: 2 test, 8 train -> mean of 3/7 and 2/8.
    fold = [0] * 10 + [1] * 10
    subset = ["test"] * 3 + ["train"] * 7 + ["test"] * 2 + ["train"] * 8
    design = sig.split_design(ingest_splits_table(fold, list(range(20)), subset))
    assert design.folds == (0, 1)
    assert design.test_train_ratio == pytest.approx((3 / 7 + 2 / 8) / 2)


def test_split_design_without_test_documents_is_refused():
    table = ingest_splits_table([0, 0, 1], [1, 2, 3], ["train", "test", "train"])
    with pytest.raises(io.WmdevalError, match="s.parquet: fold 1 has 1 training and 0 test"):
        sig.split_design(table, "s.parquet")


def test_compare_on_random_splits_by_hand():
    # Three folds of four documents; wrong predictions per fold: method 1, 2, 0;
    # reference 2, 2, 2. Per-fold differences -1/4, 0, -2/4: mean -1/4, s² = 1/16,
    # se² = (1/3 + 0.5) / 16, t = -0.25 / sqrt(0.8333 / 16) = -1.0954, 2 df.
    method = np.array([F, T, T, T, F, F, T, T, T, T, T, T])
    reference = np.array([F, F, T, T, F, T, F, T, T, F, F, T])
    fold = np.repeat([0, 1, 2], 4)
    result = sig.compare(method, reference, fold, 0.5, 0.95, 100, 0)
    assert (result.test, result.folds, result.n) == (sig.CORRECTED_T, 3, 12)
    assert result.error == pytest.approx(3 / 12) and result.reference_error == pytest.approx(0.5)
    assert result.difference == pytest.approx(-0.25)
    t = -0.25 / math.sqrt((1 / 3 + 0.5) / 16)
    assert result.p_value == pytest.approx(2 * scipy.stats.t.sf(abs(t), 2), rel=1e-10)
    half = scipy.stats.t.ppf(0.975, 2) * math.sqrt((1 / 3 + 0.5) / 16)
    assert (result.ci_low, result.ci_high) == pytest.approx((-0.25 - half, -0.25 + half))
    # b: method right, reference wrong (positions 1, 6, 9, 10); c: the other way (5).
    assert (result.b, result.c) == (4, 1)


def test_error_is_the_mean_over_folds():
    # Unequal folds (as the clean variant can have): 1 of 2 wrong, then 0 of 6 wrong:
    # mean over folds 0.25, not the pooled 1/8.
    result = sig.compare(
        np.array([F, T, T, T, T, T, T, T]),
        np.ones(8, bool),
        np.r_[[0, 0], [1] * 6],
        0.4,
        0.95,
        1,
        0,
    )
    assert result.error == pytest.approx(0.25)


def test_random_splits_need_their_design():
    predictions = predictions_table(
        [row for m, c in HAND.items() for row in prediction_rows("d1", m, c, folds=2)]
    )
    with pytest.raises(io.WmdevalError, match="d1/original spans 2 folds but no splits"):
        sig.significance_table(predictions, [BOW], 0.05, 100, 0)
    wrong_folds = {("d1", "original"): sig.SplitDesign((0, 1, 2), 0.4)}
    with pytest.raises(io.WmdevalError, match=r"has folds \[0, 1\], its splits \[0, 1, 2\]"):
        sig.significance_table(predictions, [BOW], 0.05, 100, 0, designs=wrong_folds)
    designs = {("d1", "original"): sig.SplitDesign((0, 1), 0.4)}
    rows = sig.significance_table(predictions, [BOW], 0.05, 100, 0, designs=designs).to_pylist()
    assert {(r["test"], r["folds"]) for r in rows} == {(sig.CORRECTED_T, 2)}
    for r in rows:  # the row is what compare() gives on the paired predictions
        assert r["ci_low"] <= r["difference"] <= r["ci_high"]


def test_run_significance_refuses_splits_that_do_not_match(tmp_path):
    predictions = hand_table(("d1", "d2"))
    splits = write_splits(tmp_path, predictions)
    del splits["d2/original"]
    with pytest.raises(io.WmdevalError, match="without splits: d2/original"):
        run(tmp_path, predictions, splits=splits)


# --------------------------------------------------------------------------- across datasets


def across_predictions(n_datasets: int) -> pa.Table:
    """WMD better than BOW by 10-30 points on every dataset; WCD within 1 point of BOW."""
    rows = []
    for d in range(n_datasets):
        bow = [F] * (4 + d % 3) + [T] * (16 - d % 3)
        rows += prediction_rows(f"d{d}", BOW, bow)
        rows += prediction_rows(f"d{d}", "WMD", [T] * 20 if d % 2 else [F] + [T] * 19)
        rows += prediction_rows(f"d{d}", "WCD", bow if d % 2 else [T] + bow[1:])
    return predictions_table(rows)


def test_across_datasets_against_scipy_and_holm():
    predictions = across_predictions(7)
    table = sig.across_datasets_table(predictions, [BOW], 0.05, 0.01, 0)
    assert table.schema == schemas.SIGNIFICANCE_DATASETS
    rows = {r["method"]: r for r in table.to_pylist()}
    assert list(rows) == ["WMD", "WCD"]
    _, methods, errors, _ = sig.error_matrix(predictions, "original", "knn")
    raw = []
    for method, row in rows.items():
        differences = errors[:, methods.index(method)] - errors[:, methods.index(BOW)]
        expected = scipy.stats.wilcoxon(differences)
        assert row["wilcoxon"] == expected.statistic
        assert row["p_wilcoxon"] == pytest.approx(expected.pvalue, rel=1e-9)
        assert row["mean_difference"] == pytest.approx(differences.mean())
        assert row["p_method_better"] + row["p_equivalent"] + row["p_reference_better"] == (
            pytest.approx(1.0)
        )
        raw.append(expected.pvalue)
    np.testing.assert_allclose([r["p_holm"] for r in rows.values()], sig.holm(raw))
    wmd, wcd = rows["WMD"], rows["WCD"]
    assert wmd["significant"] and wmd["p_method_better"] > 0.9
    assert not wcd["significant"] and wcd["p_method_better"] > 0.5  # 5 points on half of them
    # WCD's differences are 0 or -5 points: all pairwise means lie within a 6-point rope.
    wide = sig.across_datasets_table(predictions, [BOW], 0.05, 0.06, 0).to_pylist()
    assert wide[1]["method"] == "WCD" and wide[1]["p_equivalent"] == 1.0


def test_across_datasets_needs_five_datasets():
    assert sig.across_datasets_table(across_predictions(4), [BOW], 0.05, 0.01, 0).num_rows == 0
    assert sig.across_datasets_table(across_predictions(5), [BOW], 0.05, 0.01, 0).num_rows == 2


def test_across_datasets_markdown_says_when_there_is_no_test(tmp_path):
    _, paths = run(tmp_path, across_predictions(6), reference=BOW)
    markdown = paths["out_md"].read_text()
    assert "## Across datasets" in markdown and "Friedman χ² =" in markdown
    assert "| BOW (L1/L1) | WMD | 6 |" in markdown
    across = paths["out_datasets_csv"].read_text().splitlines()
    assert across[0] == ",".join(schemas.SIGNIFICANCE_DATASETS.names) and len(across) == 3
    _, paths = run(tmp_path, across_predictions(3), out="few", reference=BOW)
    assert sig.too_few_datasets(3) in paths["out_md"].read_text()
    assert "Friedman χ²" not in paths["out_md"].read_text()
    assert len(paths["out_datasets_csv"].read_text().splitlines()) == 1  # the header alone


def test_diagram_names_nemenyi_and_needs_five_datasets():
    few = sig.critical_difference_figure(
        sig.critical_difference(across_predictions(3), "original", "knn", 0.05)
    )
    texts = [t.get_text() for t in few.texts]
    assert any("Nemenyi" in t for t in texts)
    assert any(f"fewer than {sig.MIN_DATASETS} datasets" in t for t in texts)
    enough = sig.critical_difference_figure(
        sig.critical_difference(across_predictions(6), "original", "knn", 0.05)
    )
    assert any("Nemenyi" in t for t in enough.texts[0].get_text().splitlines())
