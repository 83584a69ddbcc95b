"""Rosenbaum's crossmatch test (wmdeval.analyses.crossmatch)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from test_n2o import synthetic_dataset, write_dataset

from wmdeval.analyses import crossmatch
from wmdeval.analyses import per_variant as analyses
from wmdeval.core import groups, io, schemas
from wmdeval.core.methods import METHODS
from wmdeval.distances.factory import prepare_variant

# --------------------------------------------------------------------------- matching


def all_perfect_matchings(points: list[int]):
    if not points:
        yield []
        return
    first, rest = points[0], points[1:]
    for partner in rest:
        remaining = [p for p in rest if p != partner]
        for matching in all_perfect_matchings(remaining):
            yield [(first, partner), *matching]


def brute_force_cost(dist: np.ndarray) -> float:
    return min(sum(dist[a, b] for a, b in m) for m in all_perfect_matchings(list(range(len(dist)))))


def distance_matrix(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """Random distances: continuous, rounded (ties) or with duplicate points."""
    if kind == "duplicates":
        x = rng.integers(0, 2, size=(n, 4)).astype(float)  # many identical points
    else:
        x = rng.normal(size=(n, int(rng.integers(1, 6))))
    dist = np.abs(x[:, None] - x[None]).sum(-1)
    return np.round(dist) if kind == "rounded" else dist


def assert_perfect(pairs: np.ndarray, n: int) -> None:
    assert pairs.shape == (n // 2, 2)
    assert sorted(pairs.ravel().tolist()) == list(range(n))


@pytest.mark.parametrize("kind", ["continuous", "rounded", "duplicates"])
@pytest.mark.parametrize("seed", range(8))
def test_matching_is_minimal_against_brute_force(kind, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 4, 6, 8, 10]))
    dist = distance_matrix(rng, n, kind)
    pairs = crossmatch.min_distance_perfect_matching(dist)
    assert_perfect(pairs, n)
    assert dist[pairs[:, 0], pairs[:, 1]].sum() == pytest.approx(brute_force_cost(dist))


@pytest.mark.parametrize("kind", ["continuous", "rounded", "duplicates"])
@pytest.mark.parametrize("seed", range(10))
def test_matching_is_minimal_against_networkx(kind, seed):
    rng = np.random.default_rng(100 + seed)
    n = 2 * int(rng.integers(6, 36))
    dist = distance_matrix(rng, n, kind)
    pairs = crossmatch.min_distance_perfect_matching(dist)
    assert_perfect(pairs, n)
    us, vs = np.triu_indices(n, 1)
    reference = crossmatch._networkx_matching(n, us, vs, dist[us, vs])
    assert_perfect(reference, n)
    assert dist[pairs[:, 0], pairs[:, 1]].sum() == pytest.approx(
        dist[reference[:, 0], reference[:, 1]].sum(), rel=1e-9, abs=1e-9
    )


def test_odd_count_discards_the_least_matchable_point():
    x = np.array([0.0, 1.0, 10.0, 10.5, 30.0])
    dist = np.abs(x[:, None] - x[None])
    pairs, discarded = crossmatch.crossmatch_pairs(dist)
    assert discarded == 4
    assert pairs.tolist() == [[0, 1], [2, 3]]
    pairs, discarded = crossmatch.crossmatch_pairs(dist[:4, :4])
    assert discarded is None and len(pairs) == 2


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="even"):
        crossmatch.min_distance_perfect_matching(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        crossmatch.min_distance_perfect_matching(np.full((2, 2), np.nan))
    assert crossmatch.min_distance_perfect_matching(np.zeros((0, 0))).shape == (0, 2)


# --------------------------------------------------------------------------- null


@pytest.mark.parametrize(
    ("n_points", "n_first"),
    [(2, 1), (4, 2), (10, 3), (40, 20), (200, 60), (400, 200), (12, 0), (12, 12)],
)
def test_null_distribution_sums_to_one_with_the_known_mean(n_points, n_first):
    values, probabilities = crossmatch.null_distribution(n_points, n_first)
    assert probabilities.sum() == pytest.approx(1.0)
    assert (probabilities >= 0).all()
    assert np.all(values % 2 == n_first % 2)
    # Rosenbaum (2005): E[A1] = n m / (N - 1)
    expected = n_first * (n_points - n_first) / (n_points - 1)
    assert values @ probabilities == pytest.approx(expected)


def test_null_distribution_hand_checked():
    # N = 4, n = 2 (fixed pairs {0,1}, {2,3}; 6 equally likely labelings): A1 = 0 when the
    # group is one pair (2 of 6), else A1 = 2.
    values, probabilities = crossmatch.null_distribution(4, 2)
    assert values.tolist() == [0, 2]
    np.testing.assert_allclose(probabilities, [1 / 3, 2 / 3])
    assert crossmatch.crossmatch_p_value(0, 4, 2) == pytest.approx(1 / 3)
    assert crossmatch.crossmatch_p_value(2, 4, 2) == pytest.approx(1.0)
    # N = 6, n = 3: P(A1 = 1) = 2 * 3! / (C(6, 3) 1! 1! 1!) = 12 / 20
    values, probabilities = crossmatch.null_distribution(6, 3)
    assert values.tolist() == [1, 3]
    np.testing.assert_allclose(probabilities, [0.6, 0.4])


def test_null_distribution_matches_label_permutations():
    rng = np.random.default_rng(0)
    n_points, n_first, draws = 20, 8, 40000
    pairs = np.arange(n_points).reshape(-1, 2)  # any fixed matching
    labels = np.zeros(n_points, dtype=bool)
    labels[:n_first] = True
    a1 = np.array(
        [np.count_nonzero(np.not_equal(*rng.permutation(labels)[pairs].T)) for _ in range(draws)]
    )
    values, probabilities = crossmatch.null_distribution(n_points, n_first)
    observed = np.array([np.count_nonzero(a1 == v) for v in values])
    assert observed.sum() == draws  # no value outside the support
    expected = draws * probabilities
    big = expected >= 5
    chi_square = float((((observed - expected) ** 2 / expected)[big]).sum())
    # chi-square with <= 4 degrees of freedom: 99.9 % quantile ~18.5
    assert chi_square < 18.5


# --------------------------------------------------------------------------- the test


def test_far_clusters_never_crossmatch():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(0, 1, (20, 2)), rng.normal(50, 1, (20, 2))])
    dist = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    result = crossmatch.crossmatch_test(dist, np.arange(40) < 20)
    assert (result.n1, result.n2, result.a1) == (20, 20, 0)
    assert result.expected_a1 == pytest.approx(20 * 20 / 39)
    assert result.p_value < 1e-5
    assert result.p_value == pytest.approx(
        2**0 * math.factorial(20) / (math.comb(40, 20) * math.factorial(10) ** 2)
    )


def test_identical_distributions_are_not_rejected():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    dist = np.sqrt(((x[:, None] - x[None]) ** 2).sum(-1))
    result = crossmatch.crossmatch_test(dist, np.arange(60) < 30)
    assert result.p_value > 0.05


def test_odd_count_uses_the_null_of_the_matched_points():
    x = np.array([0.0, 0.1, 5.0, 5.1, 100.0])
    dist = np.abs(x[:, None] - x[None])
    result = crossmatch.crossmatch_test(dist, np.array([True, False, True, False, True]))
    assert result.discarded == 4 and (result.n1, result.n2, result.a1) == (3, 2, 2)
    # matched: 4 points, 2 of group 1 -> P(A1 <= 2) = 1
    assert result.p_value == pytest.approx(1.0)
    assert result.expected_a1 == pytest.approx(4 / 3)


# --------------------------------------------------------------------------- datasets


def test_comparisons_are_class_pairs_then_folds_with_the_same_samples():
    documents, splits, matrices = synthetic_dataset()
    corpus = prepare_variant(documents, splits, matrices)
    found = groups.comparisons(corpus, m=5, seed=0)
    assert [c.name for c in found] == [
        "apple vs banana",
        "apple vs cherry",
        "banana vs cherry",
        "train vs test fold 0",
        "train vs test fold 1",
    ]
    again = groups.comparisons(corpus, m=5, seed=0)
    for a, b in zip(found, again, strict=True):
        assert np.array_equal(a.first, b.first) and np.array_equal(a.second, b.second)
    for c in found:
        assert len(c.first) <= 5 and len(c.second) <= 5
        assert not corpus.no_words[c.first].any() and not corpus.no_words[c.second].any()
    assert found[0].fold is None and found[3].fold == 0
    assert set(corpus.labels[found[0].first]) == {"apple"}


def test_defined_subset_drops_undefined_documents():
    dist = np.ones((4, 4))
    dist[2, :] = dist[:, 2] = np.nan
    assert groups.defined_subset(dist).tolist() == [0, 1, 3]
    dist[0, 1] = dist[1, 0] = np.nan  # a stray undefined pair: one of them goes
    assert len(groups.defined_subset(dist)) == 2


def test_class_separability_on_a_dataset(tmp_path):
    documents, splits, matrices = synthetic_dataset()
    docs, spl, wmd_paths = write_dataset(tmp_path, documents, splits, matrices)
    out = tmp_path / "crossmatch.parquet"
    table = analyses.run_analyses(
        docs,
        spl,
        wmd_paths,
        "toy",
        "original",
        {"crossmatch": {"m": 12}},
        {"crossmatch": out},
        seed=0,
    )["crossmatch"]
    assert io.read_table(out, schemas.CROSSMATCH).equals(table)
    assert table.num_rows == len(METHODS) * (3 + 2)
    rows = table.to_pylist()
    for row in rows:
        assert 0 <= row["a1"] <= min(row["n1"], row["n2"])
        assert 0 < row["p_value"] <= 1
    # WMD here is built from well separated class centres: no crossmatch between classes
    wmd_rows = [
        r
        for r in rows
        if r["method"] == "WMD"
        and " vs " in r["comparison"]
        and not r["comparison"].startswith("train")
    ]
    assert len(wmd_rows) == 3
    assert all(r["a1"] == 0 and r["p_value"] < 1e-3 for r in wmd_rows)
    csv_path, md_path = tmp_path / "cm.csv", tmp_path / "cm.md"
    crossmatch.run_crossmatch_table([out], csv_path, md_path)
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "dataset,variant,method,comparison,n1,n2,a1,expected_a1,p_value"
    assert len(lines) == 1 + table.num_rows
    text = md_path.read_text()
    assert "## Class separability" in text and "toy (original): apple vs banana" in text


def test_all_pairs_of_a_tiny_brute_force_loop():
    # every perfect matching of 6 points is enumerated once
    assert len(list(all_perfect_matchings(list(range(6))))) == 15
    assert len(list(itertools.islice(all_perfect_matchings(list(range(8))), 200))) == 105
