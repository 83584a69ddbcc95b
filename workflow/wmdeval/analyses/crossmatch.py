"""Rosenbaum's crossmatch test: are two groups of documents alike under a distance?

Pool the two groups, pair all documents up by the minimum-total-distance perfect
matching (which ignores the group labels), and count A1, the pairs with one member
from each group. Under the null hypothesis (both groups from one distribution) the
labels are exchangeable, so A1 has an exact distribution that depends only on the
group sizes; few crossmatches (a small A1) are evidence that the groups differ.

Used twice per method: class separability (two classes should differ: the fewer
crossmatches, the better the distance separates them) and train vs test of each fold
(the split should be homogeneous).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import logsumexp

from ..core import io, schemas
from ..core.coverage import Expected
from ..core.groups import comparisons, defined_subset
from ..core.progress import Progress
from ..core.variant import Variant, tie_key
from ..distances.factory import method_distances
from ..reporting.tables import comparison_tables

log = logging.getLogger("wmdeval.analyses.crossmatch")


# The table written here is documented with the others in schemas.py.
CROSSMATCH = schemas.CROSSMATCH


# --------------------------------------------------------------------------- matching
#
# The crossmatch statistic needs the exact minimum-total-distance perfect matching.
# networkx's blossom algorithm on the complete graph takes seconds for 200 points, and
# there are 14 methods x many comparisons, so the matching is found through the linear
# programming relaxation of matching instead, which proves most edges irrelevant:
#
# 1. Without odd-set constraints the LP (min Σ d_e x_e, x(δ(v)) = 1 for every point v,
#    x >= 0) is an assignment problem: scipy's linear_sum_assignment solves it, and its
#    optimal permutation (x_uv = 1/2 per use of u -> v) is often a matching already.
#    Its duals y give reduced costs r_e = d_e - y_u - y_v >= 0 and the lower bound
#    LB = Σ y, and every perfect matching M costs exactly LB + Σ_{e in M} r_e.
# 2. So given any perfect matching of cost UB, an edge with r_e > UB - LB is in no
#    optimal matching. UB comes from the exact matching on the ~4n edges of smallest
#    reduced cost; the exact matching on the edges with r_e <= UB - LB is the answer
#    (nothing to do when those were all among the ~4n).
# 3. "Exact matching on a few edges": the LP with odd-set cuts x(δ(S)) >= 1 (true of
#    every perfect matching, |S| odd) added while they are violated, which usually
#    ends integral; if not, an integer program (HiGHS, zero gap) with those cuts.

#: Edges per point (cheapest by reduced cost) the first exact matching uses.
_START_EDGES_PER_POINT = 4
#: Odd-set cuts added at most before handing over to the integer program.
_MAX_CUTS = 60
_EPS = 1e-9


def _networkx_matching(n: int, us: np.ndarray, vs: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Minimum-total-distance maximum-cardinality matching of the graph with edges
    (us, vs) of length d, as sorted pairs. The slow reference and last resort.

    networkx maximises weight among maximum-cardinality matchings, so weights
    (max d + 1) - d (all positive) turn that into minimising the total distance.
    """
    import networkx as nx

    if len(d) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    weights = (float(d.max()) + 1.0) - d
    graph = nx.Graph()
    graph.add_nodes_from(range(n))
    graph.add_weighted_edges_from(zip(us.tolist(), vs.tolist(), weights.tolist(), strict=True))
    matching = nx.max_weight_matching(graph, maxcardinality=True)
    return np.array(sorted(tuple(sorted(p)) for p in matching), dtype=np.int64).reshape(-1, 2)


def _sorted_pairs(us: np.ndarray, vs: np.ndarray) -> np.ndarray:
    pairs = np.sort(np.column_stack([us, vs]).astype(np.int64), axis=1)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


@dataclass(frozen=True)
class _Edges:
    """Some edges of the complete graph on n points (us < vs)."""

    n: int
    us: np.ndarray
    vs: np.ndarray
    d: np.ndarray

    def subset(self, index: np.ndarray) -> _Edges:
        return _Edges(self.n, self.us[index], self.vs[index], self.d[index])

    def incidence(self) -> sp.csc_matrix:
        """Point x edge incidence matrix: column e has ones in rows us[e] and vs[e]."""
        m = len(self.us)
        return sp.csc_matrix(
            (np.ones(2 * m), (np.concatenate([self.us, self.vs]), np.tile(np.arange(m), 2))),
            shape=(self.n, m),
        )

    def crossing(self, odd_sets: Sequence[np.ndarray]) -> np.ndarray:
        """[sets, edges]: 1 where the edge has exactly one end in the set (is in δ(S))."""
        rows = []
        for members in odd_sets:
            inside = np.zeros(self.n, dtype=bool)
            inside[members] = True
            rows.append(inside[self.us] != inside[self.vs])
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(self.us))


def _assignment_bound(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The LP without odd-set cuts as the assignment problem min Σ_i d[i, σ(i)] over
    permutations σ without fixed points: (σ, optimal duals y of the matching LP).

    The assignment's potentials (u, v) are shortest-path distances in its residual
    graph (Bellman-Ford, vectorised); y = (u + v) / 2 then satisfies y_i + y_j <= d_ij
    (d is symmetric) with Σ y = half the assignment's cost, the LP optimum.
    """
    # scipy.optimize is imported where it is used: corpus_distance and the table job
    # import this module without solving anything, and the import costs 0.3 s.
    from scipy.optimize import linear_sum_assignment

    n = len(dist)
    cost = dist.copy()
    np.fill_diagonal(cost, 4.0 * n * (float(np.abs(dist).max()) + 1.0))  # no fixed points
    _, sigma = linear_sum_assignment(cost)
    owner = np.argsort(sigma)  # owner[j]: the row assigned to column j
    # Constraints v_j - v_a <= cost[owner[a], j] - cost[owner[a], a], for all a and j.
    step = cost[owner] - cost[owner, np.arange(n)][:, None]
    v = np.zeros(n)
    for _ in range(n + 1):
        relaxed = np.minimum(v, (v[:, None] + step).min(axis=0))
        if np.array_equal(relaxed, v):
            break
        v = relaxed
    u = cost[np.arange(n), sigma] - v[sigma]
    return sigma, (u + v) / 2


def _cycles(permutation: np.ndarray) -> list[np.ndarray]:
    seen = np.zeros(len(permutation), dtype=bool)
    cycles = []
    for start in range(len(permutation)):
        cycle = []
        point = start
        while not seen[point]:
            seen[point] = True
            cycle.append(point)
            point = permutation[point]
        if cycle:
            cycles.append(np.array(cycle, dtype=np.int64))
    return cycles


def _violated_odd_sets(edges: _Edges, x: np.ndarray) -> list[np.ndarray]:
    """Odd point sets S with x(δ(S)) < 1, which no perfect matching has.

    Looked for among the connected components of the edges with x > 0 (a component
    has x(δ(S)) = 0, so an odd one is violated: the odd cycles of a half-integral
    solution) and of the fractional edges.
    """
    found = {}
    for support in (x > _EPS, (x > _EPS) & (x < 1 - _EPS)):
        graph = sp.coo_matrix(
            (np.ones(int(support.sum())), (edges.us[support], edges.vs[support])),
            shape=(edges.n,) * 2,
        )
        n_parts, part = connected_components(graph, directed=False)
        sizes = np.bincount(part, minlength=n_parts)
        for p in np.flatnonzero((sizes % 2 == 1) & (sizes >= 3)):
            inside = part == p
            if x[inside[edges.us] != inside[edges.vs]].sum() < 1 - 1e-6:
                members = np.flatnonzero(inside)
                found[tuple(members.tolist())] = members  # the two supports can repeat one
    return list(found.values())


def _solve_lp(edges: _Edges, crossing: np.ndarray) -> np.ndarray | str | None:
    """x of the matching LP on ``edges`` with the odd-set cuts of ``crossing``;
    "infeasible" (no perfect matching on these edges), or None if HiGHS fails."""
    from scipy.optimize import linprog

    cuts = {"A_ub": -crossing, "b_ub": -np.ones(len(crossing))} if len(crossing) else {}
    result = linprog(
        edges.d,
        A_eq=edges.incidence(),
        b_eq=np.ones(edges.n),
        bounds=(0, None),
        method="highs",
        **cuts,
    )
    if result.status == 2:
        return "infeasible"
    return np.asarray(result.x) if result.status == 0 else None


def _solve_integer_program(edges: _Edges, crossing: np.ndarray) -> np.ndarray | None:
    """x of the matching integer program on ``edges`` (zero gap), None if infeasible."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    constraints = [LinearConstraint(edges.incidence(), 1, 1)]
    if len(crossing):
        constraints.append(LinearConstraint(crossing, 1, np.inf))
    result = milp(
        edges.d,
        constraints=constraints,
        integrality=np.ones(len(edges.d)),
        bounds=Bounds(0, 1),
        options={"mip_rel_gap": 0.0},
    )
    if result.status == 0:
        return np.asarray(result.x)
    if result.status == 2:
        return None
    log.warning("integer program stopped (%s); using networkx", result.message)
    pairs = _networkx_matching(edges.n, edges.us, edges.vs, edges.d)
    if len(pairs) < edges.n // 2:
        return None
    chosen = {tuple(p) for p in pairs.tolist()}
    return np.array(
        [(u, v) in chosen for u, v in zip(edges.us.tolist(), edges.vs.tolist(), strict=True)],
        dtype=np.float64,
    )


def _exact_matching(edges: _Edges, odd_sets: list[np.ndarray]) -> np.ndarray | None:
    """Minimum-total-distance perfect matching using only ``edges``, as pairs; None if
    they admit none. ``odd_sets`` (cuts found so far) grows as a side effect."""
    while True:
        crossing = edges.crossing(odd_sets)
        x = _solve_lp(edges, crossing)
        if isinstance(x, str):
            return None
        if x is None:
            x = _solve_integer_program(edges, crossing)
            break
        if np.all((x < _EPS) | (x > 1 - _EPS)):
            break  # an integral LP optimum is an optimal matching
        known = {tuple(s.tolist()) for s in odd_sets}
        new_sets = [s for s in _violated_odd_sets(edges, x) if tuple(s.tolist()) not in known]
        if not new_sets or len(odd_sets) >= _MAX_CUTS:
            x = _solve_integer_program(edges, crossing)
            break
        odd_sets += new_sets
    if x is None:
        return None
    return _sorted_pairs(edges.us[x > 0.5], edges.vs[x > 0.5])


def min_distance_perfect_matching(dist: np.ndarray) -> np.ndarray:
    """Exact minimum-total-distance perfect matching of an even number of points.

    Returns the pairs [n/2, 2] (each pair sorted, pairs sorted); the comment at the
    top of this section explains the method. With tied distances several matchings
    can be optimal; which one is returned depends on the distances only, as compared by
    the tie rule (:func:`~wmdeval.core.variant.tie_key`).
    """
    dist = np.asarray(dist, dtype=np.float64)
    n = len(dist)
    if dist.shape != (n, n) or n % 2:
        raise ValueError(f"need a square matrix over an even number of points, got {dist.shape}")
    if not np.isfinite(dist).all():
        raise ValueError("distances must be finite (drop undefined documents first)")
    if n == 0:
        return np.zeros((0, 2), dtype=np.int64)
    dist = (dist + dist.T) / 2  # a user's matrix can be slightly asymmetric
    # Compared as every ranking compares distances (docs/protocol.md §11, "Exact ties"):
    # matchings that tie in exact arithmetic tie here too, so rounding noise cannot pick one.
    dist = tie_key(dist)
    sigma, y = _assignment_bound(dist)
    cycles = _cycles(sigma)
    if all(len(c) % 2 == 0 for c in cycles):
        # x = 1/2 around an even cycle averages its two alternating matchings, which at
        # an LP optimum must cost the same: either one is optimal.
        return _sorted_pairs(
            np.concatenate([c[0::2] for c in cycles]), np.concatenate([c[1::2] for c in cycles])
        )

    us, vs = np.triu_indices(n, 1)
    everything = _Edges(n, us, vs, dist[us, vs])
    reduced = everything.d - y[us] - y[vs]
    lower_bound = float(y.sum())
    # Rounding can leave reduced costs slightly negative; they enter the bound once per
    # matched edge, so widen the cut-off by n/2 times the worst of them.
    slack = 0.5 * n * max(0.0, -float(reduced.min())) + _EPS * (abs(lower_bound) + 1.0)
    order = np.argsort(reduced, kind="stable")
    odd_sets = [c for c in cycles if len(c) % 2 == 1]  # violated by the assignment's x
    n_first = min(len(order), _START_EDGES_PER_POINT * n)
    while (pairs := _exact_matching(everything.subset(order[:n_first]), odd_sets)) is None:
        n_first = min(len(order), 2 * n_first)  # no perfect matching on these edges yet
    upper_bound = float(dist[pairs[:, 0], pairs[:, 1]].sum())
    needed = reduced <= upper_bound - lower_bound + slack
    if not needed[order[n_first:]].any():
        return pairs  # every edge of every optimal matching was available: optimal
    best = _exact_matching(everything.subset(np.flatnonzero(needed)), odd_sets)
    if best is None:  # cannot happen (``pairs`` uses these edges) short of solver trouble
        log.warning("exact matching on the pruned graph failed; using networkx")
        return _networkx_matching(n, us, vs, everything.d)
    return best


def crossmatch_pairs(dist: np.ndarray) -> tuple[np.ndarray, int | None]:
    """Optimal pairs of the points, and the point left out (None for an even count).

    With an odd count a pseudo-point at distance 0 from every point joins the
    matching (Rosenbaum 2005); its partner, the least matchable point, is discarded.
    """
    dist = np.asarray(dist, dtype=np.float64)
    n = len(dist)
    if n % 2 == 0:
        return min_distance_perfect_matching(dist), None
    padded = np.zeros((n + 1, n + 1))
    padded[:n, :n] = dist
    pairs = min_distance_perfect_matching(padded)
    with_pseudo = (pairs == n).any(axis=1)
    discarded = int(pairs[with_pseudo].min())
    return pairs[~with_pseudo], discarded


# --------------------------------------------------------------------------- null


def null_distribution(n_points: int, n_first: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact null distribution of A1 for ``n_points`` = 2I matched points of which
    ``n_first`` are in group 1: (possible a1 values, their probabilities).

    P(A1 = a1) = 2^a1 I! / (C(N, n) a0! a1! a2!), with a0 = (n - a1)/2 pairs inside
    group 1 and a2 = (N - n - a1)/2 inside group 2; evaluated in log space.
    """
    if n_points % 2 or not 0 <= n_first <= n_points:
        raise ValueError(f"need an even number of points >= n_first, got {n_points}, {n_first}")
    n_second = n_points - n_first
    a1 = np.arange(n_first % 2, min(n_first, n_second) + 1, 2)
    a0, a2 = (n_first - a1) // 2, (n_second - a1) // 2
    log_choose = math.lgamma(n_points + 1) - math.lgamma(n_first + 1) - math.lgamma(n_second + 1)
    log_p = np.array(
        [
            x * math.log(2.0)
            + math.lgamma(n_points // 2 + 1)
            - log_choose
            - math.lgamma(p + 1)
            - math.lgamma(x + 1)
            - math.lgamma(q + 1)
            for x, p, q in zip(a1.tolist(), a0.tolist(), a2.tolist(), strict=True)
        ]
    )
    return a1, np.exp(log_p - logsumexp(log_p))  # renormalised: exact up to rounding


def crossmatch_p_value(a1: int, n_points: int, n_first: int) -> float:
    """One-sided exact p-value P(A1 <= a1) under the null."""
    return _lower_tail(*null_distribution(n_points, n_first), a1)


def _lower_tail(values: np.ndarray, probabilities: np.ndarray, a1: int) -> float:
    return float(min(1.0, probabilities[values <= a1].sum()))


@dataclass(frozen=True)
class CrossmatchResult:
    n1: int  # points of group 1 (before an odd point is discarded)
    n2: int
    a1: int
    expected_a1: float
    p_value: float
    discarded: int | None  # the point paired with the pseudo-point, if any


def crossmatch_test(dist: np.ndarray, in_first: np.ndarray) -> CrossmatchResult:
    """Crossmatch test of the points flagged ``in_first`` against the others.

    The null distribution is that of the matched points (the discarded point, if any,
    is left out: given the matching, its label is as random as the others').
    """
    in_first = np.asarray(in_first, dtype=bool)
    pairs, discarded = crossmatch_pairs(dist)
    a1 = int(np.count_nonzero(in_first[pairs[:, 0]] != in_first[pairs[:, 1]]))
    matched = pairs.ravel()
    n_points, n_first = len(matched), int(np.count_nonzero(in_first[matched]))
    values, probabilities = null_distribution(n_points, n_first)
    return CrossmatchResult(
        n1=int(np.count_nonzero(in_first)),
        n2=int(np.count_nonzero(~in_first)),
        a1=a1,
        expected_a1=float(values @ probabilities),
        p_value=_lower_tail(values, probabilities, a1),
        discarded=discarded,
    )


# --------------------------------------------------------------------------- datasets


def crossmatch_rows(
    corpus: Variant,
    dataset: str,
    variant: str,
    m: int,
    seed: int,
    class_fold: int | None = None,
    report: str | None = None,
) -> list[dict]:
    """CROSSMATCH rows for every method x comparison (:func:`wmdeval.core.groups.comparisons`
    of up to ``m`` documents per group; the seed paper used 200). ``report``: the subject
    of the progress lines in the log (matchings of a method and a comparison; None: no
    lines)."""
    rows = []
    groups = comparisons(corpus, m, seed, class_fold)
    progress = Progress(
        log if report is not None else None,
        report or "",
        len(groups) * len(corpus.methods),
        "matchings",
    )
    for number, comparison in enumerate(groups):
        pooled = np.concatenate([comparison.first, comparison.second])
        in_first = np.arange(len(pooled)) < len(comparison.first)
        # The matching must not depend on the labels; a matcher that breaks ties by
        # position could otherwise favour within-group pairs. Shuffle the points.
        shuffle = np.random.default_rng([seed, 2, number]).permutation(len(pooled))
        pooled, in_first = pooled[shuffle], in_first[shuffle]
        for method in corpus.methods:
            dist = method_distances(corpus, method, comparison.fold).block(pooled, pooled)
            keep = defined_subset(dist)
            first = in_first[keep]
            if first.all() or not first.any():
                log.warning(
                    "%s/%s %s, %s: a group has no document with defined distances; skipped",
                    dataset,
                    variant,
                    comparison.name,
                    method.name,
                )
                progress.advance()  # done: nothing to match
                continue
            result = crossmatch_test(dist[np.ix_(keep, keep)], first)
            rows.append(
                {
                    "dataset": dataset,
                    "variant": variant,
                    "method": method.name,
                    "comparison": comparison.name,
                    "n1": result.n1,
                    "n2": result.n2,
                    "a1": result.a1,
                    "expected_a1": result.expected_a1,
                    "p_value": result.p_value,
                }
            )
            progress.advance()
    progress.finish()
    return rows


def crossmatch_results(
    corpus: Variant,
    dataset: str,
    variant: str,
    m: int,
    seed: int,
    class_fold: int | None = None,
    report: str | None = None,
) -> pa.Table:
    """The CROSSMATCH table of one dataset variant: every method, each pair of classes,
    and train vs test of each fold (``report``: see :func:`crossmatch_rows`)."""
    rows = crossmatch_rows(corpus, dataset, variant, m, seed, class_fold, report)
    return pa.table({n: [r[n] for r in rows] for n in CROSSMATCH.names}).cast(CROSSMATCH)


# --------------------------------------------------------------------------- report


def _format_p(p: float) -> str:
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def crossmatch_markdown(table: pa.Table) -> str:
    """Two compact tables: class separability (A1 / E[A1] and p per method and class
    pair) and train-vs-test homogeneity (per method and dataset variant: the smallest
    p over the folds and how many folds have p < 0.05)."""

    def split_cell(folds: list[dict]) -> str:
        ps = [r["p_value"] for r in folds]
        return f"{_format_p(min(ps))} ({sum(p < 0.05 for p in ps)}/{len(ps)})"

    class_table, split_table = comparison_tables(
        table.to_pylist(),
        lambda r: f"{r['a1']} / {r['expected_a1']:.1f} (p {_format_p(r['p_value'])})",
        split_cell,
    )
    return (
        "# Crossmatch tests\n\n## Class separability\n\n"
        "Cells: observed crossmatches A1 / expected A1 under the null (p = P(A1 <= a1)). "
        "Fewer crossmatches than expected: the distance keeps the classes apart; the "
        "smaller A1 / E[A1], the better it separates them.\n\n"
        f"{class_table}\n\n## Train vs test of each fold\n\n"
        "Cells: smallest p over the folds (folds with p < 0.05 / folds). A homogeneous "
        "split gives p spread over [0, 1]; many small p suggest train and test differ.\n\n"
        f"{split_table}\n\nEach group is a seeded sample of up to m documents with words; "
        "the exact one-sided p-value of Rosenbaum (2005) is computed in closed form.\n"
    )


def run_crossmatch_table(
    paths: Sequence[str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """All crossmatch rows as CSV (long format) and compact Markdown tables; the rows
    must cover exactly ``expected`` when given (:mod:`wmdeval.core.coverage`)."""
    table = io.read_tables(paths, CROSSMATCH, expected)
    io.write_csv(csv_path, table)
    io.write_text(md_path, crossmatch_markdown(table))


__all__ = [
    "CROSSMATCH",
    "min_distance_perfect_matching",
    "crossmatch_pairs",
    "null_distribution",
    "crossmatch_p_value",
    "crossmatch_test",
    "CrossmatchResult",
    "crossmatch_rows",
    "crossmatch_results",
    "run_crossmatch_table",
]
