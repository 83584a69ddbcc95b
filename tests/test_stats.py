"""Rank statistics: hand-computed cases and scipy.stats as the independent reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from wmdeval.core.stats import average_ranks, spearman_rho


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
