"""Rank statistics and paired tests: hand-computed cases, and scipy.stats or a direct
implementation as the independent reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from scipy.stats import rankdata, spearmanr

from wmdeval.core.stats import (
    average_ranks,
    bayesian_signed_rank,
    corrected_resampled_t,
    corrected_t_interval,
    spearman_rho,
    wilcoxon_signed_rank,
)


def test_average_ranks_by_hand():
    # sorted: 1 (rank 1), 2 2 (ranks 2, 3 -> 2.5), 5 (4), 7 7 7 (5, 6, 7 -> 6)
    values = [7, 2, 5, 7, 1, 2, 7]
    assert average_ranks(values).tolist() == [6, 2.5, 4, 6, 1, 2.5, 6]


def test_spearman_by_hand():
    # ranks of a: 1 2 3 4; ranks of b: 2 1 4 3 -> d = (1, 1, 1, 1), rho = 1 - 6*4/(4*15)
    assert spearman_rho([1, 2, 3, 4], [20, 10, 40, 30]) == pytest.approx(0.6)
    assert spearman_rho([1, 2, 3], [3, 2, 1]) == -1.0
    assert spearman_rho([1, 2, 3], [1, 4, 9]) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_spearman_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, size=40).astype(float)  # many ties
    b = a + rng.integers(0, 4, size=40)
    assert average_ranks(a).tolist() == rankdata(a).tolist()
    assert spearman_rho(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


@pytest.mark.parametrize(
    "a, b",
    [
        ([1, 1, 1], [1, 2, 3]),
        ([1, 2, 3], [5, 5, 5]),
        ([1.0], [2.0]),
        ([], []),
        ([1, math.nan, 3], [1, 2, 3]),
    ],
)
def test_spearman_undefined_is_nan(a, b):
    assert math.isnan(spearman_rho(a, b))


# --------------------------------------------------------------------------- corrected t


def test_corrected_t_by_hand():
    # d = (1, 2, -1, 3, 0) points: mean 1 point, s² = (0 + 1 + 4 + 4 + 1) / 4 = 2.5 points²;
    # n2/n1 = 3/7: se² = (1/5 + 3/7) 2.5e-4 = 1.5714...e-4, t = 0.01 / 0.012536 = 0.79772.
    result = corrected_resampled_t([0.01, 0.02, -0.01, 0.03, 0.0], 3 / 7)
    assert result.mean == pytest.approx(0.01)
    assert result.standard_error == pytest.approx(math.sqrt((0.2 + 3 / 7) * 2.5e-4))
    assert result.statistic == pytest.approx(0.797724, rel=1e-5)
    assert result.df == 4
    assert result.p_value == pytest.approx(2 * scipy.stats.t.sf(0.797724, 4), rel=1e-5)


@pytest.mark.parametrize("seed", range(6))
def test_corrected_t_is_the_plain_t_with_an_inflated_variance(seed):
    """Straightforward implementation: scipy's one-sample t on the differences, its t
    shrunk by sqrt((1/J) / (1/J + n2/n1))."""
    rng = np.random.default_rng(seed)
    n_splits = int(rng.integers(2, 12))
    d = rng.normal(rng.normal(0, 0.02), 0.03, n_splits)
    ratio = float(rng.uniform(0.1, 1.5))
    plain = scipy.stats.ttest_1samp(d, 0.0)
    expected_t = plain.statistic * math.sqrt((1 / n_splits) / (1 / n_splits + ratio))
    result = corrected_resampled_t(d, ratio)
    assert result.statistic == pytest.approx(expected_t, rel=1e-10)
    assert result.p_value == pytest.approx(
        2 * scipy.stats.t.sf(abs(expected_t), n_splits - 1), rel=1e-9
    )
    assert result.p_value > plain.pvalue  # the correction only ever makes it more cautious


@pytest.mark.parametrize("seed", range(6))
def test_corrected_t_interval_excludes_zero_exactly_when_the_test_rejects(seed):
    rng = np.random.default_rng(100 + seed)
    for _ in range(50):
        result = corrected_resampled_t(rng.normal(0.01, 0.02, 5), 3 / 7)
        low, high = corrected_t_interval(result, 0.95)
        assert low < result.mean < high
        assert (low > 0 or high < 0) == (result.p_value < 0.05)
        assert high - low == pytest.approx(
            2 * scipy.stats.t.ppf(0.975, 4) * result.standard_error, rel=1e-12
        )


def test_corrected_t_with_identical_differences_is_its_limit():
    zero = corrected_resampled_t([0.0] * 5, 0.4)
    assert (zero.statistic, zero.p_value) == (0.0, 1.0)
    assert corrected_t_interval(zero, 0.95) == (0.0, 0.0)
    constant = corrected_resampled_t([1 / 60] * 5, 0.4)
    assert constant.statistic == math.inf and constant.p_value == 0.0


@pytest.mark.parametrize(
    ("differences", "ratio"),
    [([0.1], 0.4), ([], 0.4), ([0.1, math.nan], 0.4), ([0.1, 0.2], 0.0), ([0.1, 0.2], math.nan)],
)
def test_corrected_t_rejects_bad_input(differences, ratio):
    with pytest.raises(ValueError):
        corrected_resampled_t(differences, ratio)


# --------------------------------------------------------------------------- Wilcoxon


def test_wilcoxon_by_hand():
    # |d| ranks: 0.1 -> 1, 0.2 -> 2, ..., 0.7 -> 7; negatives -0.1, -0.4: T- = 5, T+ = 23.
    # Of the 2^7 = 128 sign patterns, those with a rank sum <= 5: {}, {1}, {2}, {3}, {4},
    # {5}, {1,2}, {1,3}, {1,4}, {2,3}: 10, so p = 2 * 10 / 128.
    statistic, p = wilcoxon_signed_rank([0.3, -0.1, 0.2, 0.5, -0.4, 0.6, 0.7])
    assert statistic == 5.0
    assert p == pytest.approx(20 / 128)
    # Zeros are dropped, tied |d| share ranks: ranks 1, 2.5, 2.5, 4, 5, 6 with T- = 2.5;
    # sign patterns with a sum <= 2.5: {}, {1}, {2.5}, {2.5'}: p = 2 * 4 / 64.
    assert wilcoxon_signed_rank([0.3, -0.3, 0.2, 0.5, 0.0, 0.6, 0.7]) == (2.5, 8 / 64)
    assert wilcoxon_signed_rank([0.0, 0.0]) == (0.0, 1.0)
    assert wilcoxon_signed_rank([1.0, -1.0]) == (1.5, 1.0)


@pytest.mark.parametrize("seed", range(8))
def test_wilcoxon_matches_scipy_exact_without_ties(seed):
    rng = np.random.default_rng(seed)
    d = rng.normal(0.3 * rng.normal(), 1.0, int(rng.integers(3, 40)))
    expected = scipy.stats.wilcoxon(d, method="exact")
    statistic, p = wilcoxon_signed_rank(d)
    assert statistic == expected.statistic
    assert p == pytest.approx(expected.pvalue, rel=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_wilcoxon_matches_scipy_with_ties_and_zeros(seed):
    """Small samples: scipy's "auto" enumerates every sign pattern, as the exact count here;
    large ones: both use the normal approximation with the tie correction."""
    rng = np.random.default_rng(50 + seed)
    small = rng.integers(-4, 6, size=int(rng.integers(5, 13))).astype(float)
    expected = scipy.stats.wilcoxon(small)  # "auto": a permutation test over 2^n patterns
    assert wilcoxon_signed_rank(small)[0] == expected.statistic
    assert wilcoxon_signed_rank(small)[1] == pytest.approx(expected.pvalue, rel=1e-9)
    large = rng.integers(-6, 9, size=int(rng.integers(60, 120))).astype(float)
    expected = scipy.stats.wilcoxon(large, method="asymptotic")
    assert wilcoxon_signed_rank(large)[0] == expected.statistic
    assert wilcoxon_signed_rank(large)[1] == pytest.approx(expected.pvalue, rel=1e-9)


# --------------------------------------------------------------------------- Bayesian signed rank


def test_bayesian_signed_rank_by_hand():
    """Every difference far below -rope: the only pair in the rope is (0, 0), so
    θ_rope = w0², θ_left = 1 - w0², θ_right = 0, with w0 ~ Beta(0.5, n): the rope wins
    exactly when w0 > 1/√2."""
    n = 5
    result = bayesian_signed_rank([-0.5] * n, 0.01, 200_000, 3)
    p_rope = scipy.stats.beta.sf(1 / math.sqrt(2), 0.5, n)
    assert result.rope == pytest.approx(p_rope, abs=0.003)
    assert result.left == pytest.approx(1 - p_rope, abs=0.003)
    assert result.right == 0.0
    assert sum(result) == pytest.approx(1.0)


def direct_dirichlet_process(differences, rope, n_samples, rng, prior_strength=0.5, sticks=300):
    """The posterior Dirichlet process drawn directly, by stick breaking: concentration
    s + n, base measure (s δ_0 + Σ δ_d_i) / (s + n). θ of a draw is the mass that the
    draw's product measure puts on pairs of atoms (x, x') with x + x' below, within and
    above ±2 rope; the draw votes for the largest."""
    atoms = np.r_[0.0, np.asarray(differences, dtype=float)]
    base = np.r_[prior_strength, np.ones(len(differences))] / (prior_strength + len(differences))
    votes = np.zeros(3)
    for _ in range(n_samples):
        fractions = rng.beta(1.0, prior_strength + len(differences), size=sticks)
        lengths = fractions * np.cumprod(np.r_[1.0, 1.0 - fractions[:-1]])
        locations = atoms[rng.choice(len(atoms), size=sticks, p=base)]
        sums = locations[:, None] + locations[None, :]
        mass = lengths[:, None] * lengths[None, :]
        theta = [
            mass[sums <= -2 * rope].sum(),
            mass[(sums > -2 * rope) & (sums <= 2 * rope)].sum(),
            mass[sums > 2 * rope].sum(),
        ]
        votes[np.argmax(theta)] += 1
    return votes / n_samples


def test_bayesian_signed_rank_matches_a_direct_dirichlet_process():
    # 300 sticks leave (1 - 1/(s + n + 1))^300 < 1e-18 of the mass unassigned here.
    differences = [-0.03, -0.012, 0.004, -0.02, 0.015, -0.008]
    direct = direct_dirichlet_process(differences, 0.01, 4000, np.random.default_rng(0))
    fast = bayesian_signed_rank(differences, 0.01, 100_000, 1)
    np.testing.assert_allclose(fast, direct, atol=0.025)  # 3.5 standard errors of direct
    assert sorted(fast)[1] > 0.2  # not a foregone case: two regions share the votes


def test_bayesian_signed_rank_is_seeded_and_symmetric():
    d = np.random.default_rng(4).normal(-0.01, 0.02, 8)
    first = bayesian_signed_rank(d, 0.01, 5000, 9)
    assert first == bayesian_signed_rank(d, 0.01, 5000, 9)
    mirrored = bayesian_signed_rank(-d, 0.01, 5000, 9)
    assert (mirrored.left, mirrored.rope, mirrored.right) == pytest.approx(
        (first.right, first.rope, first.left)
    )
