"""Rank statistics shared by the analyses, and the paired tests of the significance job.

Written out with numpy rather than imported from scipy.stats: that import alone costs a
small analysis job 0.5-0.8 s, more than its own work on the demo.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts_group = np.r_[True, ordered[1:] != ordered[:-1]]
    starts = np.flatnonzero(starts_group)
    ends = np.r_[starts[1:], len(values)]
    ranks = np.empty(len(values))
    ranks[order] = ((starts + ends + 1) / 2)[np.cumsum(starts_group) - 1]
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's ρ (Pearson's r of average ranks); NaN if either side is constant or has
    a NaN, or has fewer than two values."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if len(a) < 2 or np.isnan(a).any() or np.isnan(b).any():
        return math.nan
    ra = average_ranks(a) - (len(a) + 1) / 2
    rb = average_ranks(b) - (len(b) + 1) / 2
    spread = math.sqrt(float(ra @ ra) * float(rb @ rb))
    if spread == 0:
        return math.nan
    return max(-1.0, min(1.0, float(ra @ rb) / spread))  # rounding can step past ±1


# --------------------------------------------------------------------------- paired tests
#
# The tests below serve the significance job (analyses/significance.py) and its calibration
# (benchmarks/significance_calibration.py). scipy.stats is imported inside them, for the
# reason given at the top of this module.


class CorrectedT(NamedTuple):
    """The corrected resampled t-test of one comparison (see :func:`corrected_resampled_t`)."""

    mean: float  # mean of the per-split differences
    standard_error: float  # sqrt((1/J + n_test/n_train) s²)
    statistic: float  # mean / standard_error
    df: int  # J - 1
    p_value: float  # two-sided


def corrected_resampled_t(differences: Sequence[float], test_train_ratio: float) -> CorrectedT:
    """Nadeau and Bengio's (Machine Learning 52, 2003) corrected resampled t-test.

    ``differences``: one paired difference (here of test errors) per random train/test split,
    J >= 2 of them; ``test_train_ratio``: test size over training size of a split (n2/n1).
    The splits reuse the same documents, so their differences are positively correlated and
    the plain paired t-test's variance s²/J is too small; the correction replaces 1/J by
    1/J + n2/n1. t = mean / sqrt((1/J + n2/n1) s²), s² the sample variance (ddof 1),
    compared with Student's t with J - 1 degrees of freedom, two-sided.

    Identical differences on every split (s = 0) are the limit of the test: p = 1 if they
    are all 0, else p = 0 (t = ±inf).
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or len(d) < 2:
        raise ValueError(f"need >= 2 per-split differences, got shape {d.shape}")
    if np.isnan(d).any():
        raise ValueError("differences must not contain NaN")
    if not test_train_ratio > 0 or not math.isfinite(test_train_ratio):
        raise ValueError(f"test_train_ratio must be > 0, got {test_train_ratio}")
    n_splits = len(d)
    mean = float(np.mean(d))
    # ptp, not the variance: the mean of equal floats need not equal them exactly, and a
    # variance of 1e-35 would turn a constant difference into an arbitrary t.
    if np.ptp(d) == 0:
        statistic = 0.0 if mean == 0 else math.copysign(math.inf, mean)
        return CorrectedT(mean, 0.0, statistic, n_splits - 1, 1.0 if mean == 0 else 0.0)
    variance = float(np.var(d, ddof=1))
    standard_error = math.sqrt((1.0 / n_splits + test_train_ratio) * variance)
    statistic = mean / standard_error
    from scipy.stats import t as student_t

    p_value = float(min(1.0, 2.0 * student_t.sf(abs(statistic), n_splits - 1)))
    return CorrectedT(mean, standard_error, statistic, n_splits - 1, p_value)


def corrected_t_interval(test: CorrectedT, level: float) -> tuple[float, float]:
    """Two-sided ``level`` interval mean ± t_{J-1} standard_error of a corrected t-test:
    the interval that excludes 0 exactly when the test rejects at 1 - ``level``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if test.standard_error == 0:
        return test.mean, test.mean
    from scipy.stats import t as student_t

    half_width = float(student_t.ppf(0.5 + level / 2.0, test.df)) * test.standard_error
    return test.mean - half_width, test.mean + half_width


#: Up to this many non-zero differences the Wilcoxon p-value is exact (as scipy's "auto").
WILCOXON_EXACT_MAX = 50


def wilcoxon_signed_rank(differences: Sequence[float]) -> tuple[float, float]:
    """Wilcoxon's signed-rank test of paired ``differences``: (statistic, two-sided p).

    Zero differences are dropped (Wilcoxon's convention); the others are ranked by absolute
    value, ties sharing their mean rank. The statistic is min(T+, T-), the smaller of the
    rank sums of the positive and of the negative differences. With at most
    WILCOXON_EXACT_MAX of them the p-value is exact: under the null every sign pattern is
    equally likely, and the distribution of T+ over the 2^n patterns is counted by dynamic
    programming over the (doubled, hence integer) ranks, ties included. Beyond that, the
    normal approximation with the tie correction of the variance, without continuity
    correction. No non-zero difference: (0, 1).
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"need a vector of differences, got shape {d.shape}")
    if np.isnan(d).any():
        raise ValueError("differences must not contain NaN")
    d = d[d != 0]
    n = len(d)
    if n == 0:
        return 0.0, 1.0
    ranks = average_ranks(np.abs(d))
    positive = float(ranks[d > 0].sum())
    total = n * (n + 1) / 2.0
    statistic = min(positive, total - positive)
    if n <= WILCOXON_EXACT_MAX:
        doubled = np.rint(2 * ranks).astype(np.int64)  # mean ranks are multiples of 1/2
        # counts[s]: sign patterns whose positive ranks sum to s / 2.
        counts = np.zeros(int(doubled.sum()) + 1, dtype=np.float64)
        counts[0] = 1.0
        for r in doubled.tolist():
            counts[r:] = counts[r:] + counts[: len(counts) - r]  # right side: old counts
        probabilities = counts / counts.sum()
        at_most = float(probabilities[: int(round(2 * statistic)) + 1].sum())
        # min(T+, T-) <= t is symmetric in the two tails.
        return statistic, min(1.0, 2.0 * at_most)
    _, tie_sizes = np.unique(ranks, return_counts=True)
    variance = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(tie_sizes**3 - tie_sizes)) / 48.0
    z = (statistic - total / 2.0) / math.sqrt(variance)
    from scipy.stats import norm

    return statistic, float(min(1.0, 2.0 * norm.cdf(z)))


class SignedRankPosterior(NamedTuple):
    """Posterior probabilities of the Bayesian signed-rank test (they sum to 1)."""

    left: float  # differences below -rope most probable: A better when d = error_A - error_B
    rope: float  # practically equivalent
    right: float  # differences above +rope most probable: B better


#: Weight of the prior's pseudo-observation at 0 (Benavoli et al. 2017 use s = 0.5).
SIGNED_RANK_PRIOR_STRENGTH = 0.5


def bayesian_signed_rank(
    differences: Sequence[float],
    rope: float,
    n_samples: int,
    seed: int | np.random.SeedSequence,
    prior_strength: float = SIGNED_RANK_PRIOR_STRENGTH,
) -> SignedRankPosterior:
    """Bayesian signed-rank test (Benavoli, Corani, Demšar, Zaffalon, JMLR 18, 2017).

    The distribution of the differences gets a Dirichlet process prior with one
    pseudo-observation at 0 of weight ``prior_strength``; its posterior puts
    Dirichlet(prior_strength, 1, ..., 1) weights w on the atoms z = (0, d_1, ..., d_n). For a
    draw of w, the masses θ_left, θ_rope, θ_right of the pairwise means (z_i + z_j)/2 (all
    ordered pairs, i = j included) below -rope, within [-rope, rope] (the lower end
    excluded) and above rope are w' 1[z_i + z_j ...] w. Each of ``n_samples`` seeded draws
    votes for its largest θ (a tie splits the vote); the returned probabilities are the
    shares of votes: the posterior probability that each region is the most probable.
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError(f"need a vector of differences without NaN, got shape {d.shape}")
    if not rope >= 0:
        raise ValueError(f"rope must be >= 0, got {rope}")
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    if not prior_strength > 0:
        raise ValueError(f"prior_strength must be > 0, got {prior_strength}")
    atoms = np.r_[0.0, d]
    pair_sums = atoms[:, None] + atoms[None, :]
    right = (pair_sums > 2 * rope).astype(np.float64)
    within = ((pair_sums > -2 * rope) & (pair_sums <= 2 * rope)).astype(np.float64)
    concentration = np.r_[prior_strength, np.ones(len(d))]
    weights = np.random.default_rng(seed).dirichlet(concentration, size=n_samples)
    theta_right = np.einsum("si,ij,sj->s", weights, right, weights)
    theta_rope = np.einsum("si,ij,sj->s", weights, within, weights)
    # The three masses sum to 1; the left one is the rest (up to rounding).
    thetas = np.column_stack([1.0 - theta_right - theta_rope, theta_rope, theta_right])
    # Relative tolerance: the rest of a sum of floats is only exact to rounding.
    best = thetas >= thetas.max(axis=1, keepdims=True) - 1e-12
    votes = (best / best.sum(axis=1, keepdims=True)).mean(axis=0)
    return SignedRankPosterior(float(votes[0]), float(votes[1]), float(votes[2]))
