"""Rank statistics shared by the analyses.

Written out with numpy rather than imported from scipy.stats: that import alone costs a
small analysis job 0.5-0.8 s, more than its own work on the demo.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
