"""WMD against BOW (L1/L1): correlations and nearest-neighbour agreement
(wmdeval.analyses.wmd_vs_bow)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import pearsonr, spearmanr

from wmdeval.analyses import per_variant, wmd_vs_bow
from wmdeval.core import io, schemas
from wmdeval.core.methods import BY_NAME
from wmdeval.core.variant import DenseDistances
from wmdeval.distances import baselines
from wmdeval.distances.factory import prepare_variant

MAX_PAIRS = 1_000_000  # the schema's default


def pair_correlations(a, b, max_pairs=MAX_PAIRS, seed=0, **kwargs):
    """wmd_vs_bow.pair_correlations of two square matrices."""
    return wmd_vs_bow.pair_correlations(
        DenseDistances(a), DenseDistances(b), max_pairs, seed, **kwargs
    )


def random_symmetric(rng, n, empty=()):
    m = rng.uniform(0.2, 1.5, (n, n))
    m = (m + m.T) / 2
    np.fill_diagonal(m, 0)
    m[list(empty)] = np.nan
    m[:, list(empty)] = np.nan
    return m


def upper_values(matrix):
    i, j = np.triu_indices(len(matrix), 1)  # row-major, like the pair numbering
    return matrix[i, j]


# --------------------------------------------------------------------------- correlations


def test_perfectly_related_distances_correlate_1():
    a = random_symmetric(np.random.default_rng(0), 30)
    result = pair_correlations(a, 2 * a + 1)
    assert result.pearson == pytest.approx(1.0, abs=1e-12)
    assert result.spearman == pytest.approx(1.0, abs=1e-12)
    assert result.pairs == result.spearman_pairs == 30 * 29 // 2
    # a monotone but not linear relation: Spearman 1, Pearson below
    bent = pair_correlations(a, np.exp(5 * a))
    assert bent.spearman == pytest.approx(1.0, abs=1e-12)
    assert bent.pearson < 0.99


@pytest.mark.parametrize("block_rows", [None, 1, 4])
def test_correlations_match_scipy_and_exclude_nan(block_rows):
    rng = np.random.default_rng(1)
    a = random_symmetric(rng, 25, empty=[3, 17])  # two empty documents
    b = np.round(0.5 * a + rng.uniform(0, 0.5, a.shape), 1)  # many ties for the ranks
    b = np.minimum(b, b.T)
    b[5, 9] = b[9, 5] = np.nan  # an undefined pair on one side only
    result = pair_correlations(a, b, block_rows=block_rows)
    x, y = upper_values(a), upper_values(b)
    finite = np.isfinite(x) & np.isfinite(y)
    assert result.pairs == int(finite.sum()) == 23 * 22 // 2 - 1
    assert result.spearman_pairs == result.pairs
    assert result.pearson == pytest.approx(pearsonr(x[finite], y[finite]).statistic, rel=1e-12)
    assert result.spearman == pytest.approx(spearmanr(x[finite], y[finite]).statistic, rel=1e-12)


def test_pearson_keeps_its_digits_far_from_zero():
    """Blocks are centred before summing: a large common offset costs no accuracy."""
    rng = np.random.default_rng(2)
    a = random_symmetric(rng, 40) + 1e6
    b = a + rng.uniform(0, 0.3, a.shape)
    b = (b + b.T) / 2
    result = pair_correlations(a, b, block_rows=3)
    x, y = upper_values(a), upper_values(b)
    assert result.pearson == pytest.approx(pearsonr(x, y).statistic, rel=1e-9)


def test_spearman_on_a_seeded_sample_of_pairs():
    rng = np.random.default_rng(3)
    a = random_symmetric(rng, 60, empty=[7])
    b = a + rng.uniform(0, 0.4, a.shape)
    b = (b + b.T) / 2
    full = pair_correlations(a, b)
    sampled = pair_correlations(a, b, max_pairs=500, seed=4, block_rows=7)
    again = pair_correlations(a, b, max_pairs=500, seed=4)
    # the block size does not change the sample (Pearson's sums: the last bits only)
    assert (sampled.spearman, sampled.spearman_pairs) == (again.spearman, again.spearman_pairs)
    assert sampled.pearson == pytest.approx(full.pearson, rel=1e-12)  # always every pair
    assert sampled.pairs == full.pairs
    # the sample: 500 pair numbers over all 1770 pairs, of which the defined ones count
    chosen = wmd_vs_bow.sample_pair_indices(60 * 59 // 2, 500, seed=4)
    x, y = upper_values(a)[chosen], upper_values(b)[chosen]
    finite = np.isfinite(x)
    assert sampled.spearman_pairs == int(finite.sum()) < 500
    assert sampled.spearman == pytest.approx(spearmanr(x[finite], y[finite]).statistic, rel=1e-12)
    assert abs(sampled.spearman - full.spearman) < 0.05


def test_pair_numbering():
    n = 7
    i, j = np.triu_indices(n, 1)
    for number, (row, col) in enumerate(zip(i, j, strict=True)):
        if col == row + 1:
            assert wmd_vs_bow.pairs_before_row(row, n) == number
    assert wmd_vs_bow.pairs_before_row(n - 1, n) == n * (n - 1) // 2


def test_undefined_correlations_are_nan():
    constant = np.ones((5, 5))
    np.fill_diagonal(constant, 0)
    result = pair_correlations(constant, random_symmetric(np.random.default_rng(5), 5))
    assert math.isnan(result.pearson) and math.isnan(result.spearman)
    empty = pair_correlations(np.full((4, 4), np.nan), np.ones((4, 4)))
    assert empty.pairs == 0 and math.isnan(empty.pearson) and math.isnan(empty.spearman)
    assert pair_correlations(np.zeros((1, 1)), np.zeros((1, 1))).pairs == 0


# --------------------------------------------------------------------------- neighbours


def test_neighbour_agreement_hand_made():
    nan = np.nan
    a = np.array(
        [
            [0.3, 0.1, 0.5],
            [0.2, 0.2, 0.1],
            [0.4, 0.4, 0.9],  # tie: the lower column, 0
            [nan, nan, nan],  # no neighbour under a: not counted
            [0.1, 0.2, 0.3],
        ]
    )
    b = np.array(
        [
            [0.9, 0.2, 0.3],  # same nearest (1)
            [0.1, 0.5, 0.6],  # a says 2, b says 0
            [0.7, 0.3, 0.3],  # b: tie between 1 and 2 -> 1; a says 0
            [0.1, 0.5, 0.6],
            [nan, 0.2, 0.3],
        ]
    )  # column 0 undefined under b: 1 vs a's 0
    na, nb = wmd_vs_bow.nearest_neighbours(a), wmd_vs_bow.nearest_neighbours(b)
    assert na.tolist() == [1, 2, 0, -1, 0]
    assert nb.tolist() == [1, 0, 1, 0, 1]
    assert wmd_vs_bow.neighbour_agreement(na, nb) == pytest.approx(1 / 4)
    assert wmd_vs_bow.neighbour_agreement(na, na) == 1.0
    assert math.isnan(wmd_vs_bow.neighbour_agreement(np.array([-1]), np.array([0])))
    assert wmd_vs_bow.nearest_neighbours(a, block_rows=2).tolist() == na.tolist()


# --------------------------------------------------------------------------- a dataset


def small_dataset(n=30):
    """Documents of 3 classes leaning to class words, one empty (doc 4), two folds."""
    rng = np.random.default_rng(6)
    y = np.arange(n) % 3
    words, counts = [], []
    for i in range(n):
        pool = [f"c{y[i]}w{j}" for j in range(5)] + [f"s{j}" for j in range(5)]
        chosen = [] if i == 4 else sorted(set(rng.choice(pool, 6)))
        words.append(chosen)
        counts.append([float(c) for c in rng.integers(1, 4, len(chosen))])
    documents = pa.table(
        {
            "doc_id": pa.array(np.arange(n, dtype=np.int32) + 100),
            "label": [f"class{c}" for c in y],
            "y": pa.array(y.astype(np.int32)),
            "words": words,
            "counts": counts,
        }
    ).cast(schemas.DOCUMENTS)
    rows = [
        (fold, 100 + i, "test" if i % 2 == fold else "train") for fold in range(2) for i in range(n)
    ]
    fold, doc_id, subset = zip(*rows, strict=True)
    splits = pa.table(
        {
            "fold": pa.array(fold, pa.int16()),
            "doc_id": pa.array(doc_id, pa.int32()),
            "subset": list(subset),
        }
    ).cast(schemas.SPLITS)
    return documents, splits


def baseline_matrix(documents, name, idf_rows=None):
    """A baseline's full distance matrix, NaN for documents without words, like WMD's."""
    counts, _ = baselines.count_matrix(documents)
    everyone = np.arange(counts.shape[0])
    train = everyone if idf_rows is None else idf_rows
    matrix = baselines.baseline_distances(counts, BY_NAME[name], train, everyone, everyone)
    empty = np.diff(counts.indptr) == 0
    matrix[empty] = np.nan
    matrix[:, empty] = np.nan
    return matrix


def test_wmd_equal_to_bow_agrees_fully():
    """Proposition 1's case: WMD with one-hot embeddings is BOW (L1/L1)."""
    documents, splits = small_dataset()
    doc_ids = documents.column("doc_id").to_numpy()
    wmd = baseline_matrix(documents, "BOW (L1/L1)").astype(np.float32)
    corpus = prepare_variant(documents, splits, {"wmd": (doc_ids, wmd)})
    row = wmd_vs_bow.comparison_row(corpus, "wmd", "small", "original", MAX_PAIRS, 0)
    assert (row["method_a"], row["method_b"]) == ("WMD", "BOW (L1/L1)")
    assert row["pearson"] == pytest.approx(1.0, abs=1e-6)  # float32 storage
    assert row["pairs"] == 29 * 28 // 2
    assert row["nn_agreement_per_fold"] == [1.0, 1.0]
    assert row["nn_agreement"] == 1.0


def test_wmd_tfidf_against_fold_idf(tmp_path):
    documents, splits = small_dataset()
    doc_ids = documents.column("doc_id").to_numpy()
    folds = io.fold_indices(splits, doc_ids)
    # a "WMD-TF-IDF" equal to TF-IDF (L1/L1) with fold 0's IDF: fold 0 agrees fully
    wmd_tfidf = baseline_matrix(documents, "TF-IDF (L1/L1)", folds[0][0])
    wmd = random_symmetric(np.random.default_rng(7), 30, empty=[4])
    corpus = prepare_variant(
        documents, splits, {"wmd": (doc_ids, wmd), "wmd-tfidf": (doc_ids, wmd_tfidf)}
    )
    table = wmd_vs_bow.analysis_table(corpus, "small", "clean", MAX_PAIRS, 0)
    assert table.schema == wmd_vs_bow.WMD_VS_BOW
    bow_row, tfidf_row = table.to_pylist()
    assert (tfidf_row["method_a"], tfidf_row["method_b"]) == ("WMD-TF-IDF", "TF-IDF (L1/L1)")
    assert tfidf_row["nn_agreement_per_fold"][0] == 1.0
    assert tfidf_row["nn_agreement"] == pytest.approx(np.mean(tfidf_row["nn_agreement_per_fold"]))
    # correlations: the mean over folds of each fold's IDF
    per_fold = [
        pair_correlations(wmd_tfidf, baseline_matrix(documents, "TF-IDF (L1/L1)", train))
        for train, _ in folds
    ]
    assert per_fold[0].pearson == pytest.approx(1.0)
    assert tfidf_row["pearson"] == pytest.approx(np.mean([c.pearson for c in per_fold]))
    assert tfidf_row["spearman"] == pytest.approx(np.mean([c.spearman for c in per_fold]))
    # a random WMD: the correlation is the plain one against the BOW matrix
    bow = baseline_matrix(documents, "BOW (L1/L1)")
    x, y = upper_values(wmd), upper_values(bow)
    finite = np.isfinite(x)
    assert bow_row["pearson"] == pytest.approx(pearsonr(x[finite], y[finite]).statistic)


def test_nn_agreement_matches_a_plain_loop():
    documents, splits = small_dataset()
    doc_ids = documents.column("doc_id").to_numpy()
    wmd = random_symmetric(np.random.default_rng(8), 30, empty=[4])
    corpus = prepare_variant(documents, splits, {"wmd": (doc_ids, wmd)})
    row = wmd_vs_bow.comparison_row(corpus, "wmd", "small", "original", MAX_PAIRS, 0)
    bow = baseline_matrix(documents, "BOW (L1/L1)")
    for fold, (train, test) in enumerate(io.fold_indices(splits, doc_ids)):
        agree = total = 0
        for q in test:
            nearest = []
            for matrix in (wmd, bow):
                ranked = sorted((matrix[q, t], t) for t in train if np.isfinite(matrix[q, t]))
                nearest.append(ranked[0][1] if ranked else None)
            if None not in nearest:
                total += 1
                agree += nearest[0] == nearest[1]
        assert row["nn_agreement_per_fold"][fold] == pytest.approx(agree / total)


def test_run_analysis_and_table(tmp_path):
    documents, splits = small_dataset()
    doc_ids = documents.column("doc_id").to_numpy()
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, tmp_path / "splits.parquet", schemas.SPLITS)
    io.write_distances(baseline_matrix(documents, "BOW (L1/L1)"), doc_ids, tmp_path / "wmd.pq")
    outputs = []
    for dataset in ("second", "first"):
        out = tmp_path / dataset / "wmd_vs_bow.parquet"
        written = per_variant.run_analyses(
            tmp_path / "documents.parquet",
            tmp_path / "splits.parquet",
            {"wmd": tmp_path / "wmd.pq"},
            dataset,
            "original",
            {"wmd_vs_bow": {"max_pairs": 100}},
            {"wmd_vs_bow": out},
            seed=1,
        )["wmd_vs_bow"]
        assert io.read_table(out, wmd_vs_bow.WMD_VS_BOW).equals(written)
        assert written.column("spearman_pairs").to_pylist()[0] <= 100
        outputs.append(out)
    wmd_vs_bow.run_analysis_table(outputs, tmp_path / "t.csv", tmp_path / "t.md")
    csv_lines = (tmp_path / "t.csv").read_text().splitlines()
    assert csv_lines[0].split(",")[:4] == ["dataset", "variant", "method", "compared with"]
    assert [line.split(",")[0] for line in csv_lines[1:]] == ["second", "first"]  # path order
    assert ",1.000," in csv_lines[1]
    markdown = (tmp_path / "t.md").read_text()
    assert markdown.startswith(f"# {wmd_vs_bow.TITLE}")
    assert "NN agreement per fold" in markdown and "1.000, 1.000" in markdown


def test_unknown_wmd_method_is_an_error():
    documents, splits = small_dataset()
    doc_ids = documents.column("doc_id").to_numpy()
    wmd = random_symmetric(np.random.default_rng(8), 30, empty=[4])
    corpus = prepare_variant(documents, splits, {"wmd-pca5": (doc_ids, wmd)})
    with pytest.raises(io.WmdevalError, match="no baseline to compare 'wmd-pca5'"):
        wmd_vs_bow.comparison_row(corpus, "wmd-pca5", "x", "original", MAX_PAIRS, 0)
    assert wmd_vs_bow.analysis_table(corpus, "x", "original", MAX_PAIRS, 0).num_rows == 0
