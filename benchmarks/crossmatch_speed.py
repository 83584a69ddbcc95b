"""Speed of the crossmatch test's exact matching (prints numbers only).

Two groups of 100 synthetic documents (~40 distinct words from a 2,000-word vocabulary;
the second group favours other words) with BOW (L1/L1) distances, as the crossmatch
stage sees them: the exact minimum-distance perfect matching of the 200 documents, the
whole test, and, with --networkx, networkx's blossom algorithm on the complete graph
for comparison.

    .venv/bin/python benchmarks/crossmatch_speed.py [--per-group 100] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np

from wmdeval.analyses import crossmatch
from wmdeval.core.methods import BY_NAME
from wmdeval.distances import baselines
from wmdeval.ingest.corpora import documents_table


def synthetic_distances(
    rng: np.random.Generator, per_group: int, n_words: int = 2000, words_per_doc: int = 40
) -> np.ndarray:
    """BOW (L1/L1) distances of two groups whose word frequencies differ a little."""
    ranks = np.arange(1, n_words + 1)
    bags = []
    for group in range(2):
        weights = 1.0 / np.roll(ranks, 3 * group)  # Zipf, shifted a little for group 2
        weights /= weights.sum()
        for _ in range(per_group):
            words = rng.choice(n_words, words_per_doc, replace=False, p=weights)
            bags.append(Counter({f"w{w:05d}": int(rng.integers(1, 5)) for w in words}))
    documents = documents_table(bags, ["a"] * per_group + ["b"] * per_group)
    counts, _ = baselines.count_matrix(documents)
    everyone = np.arange(len(bags))
    return baselines.baseline_distances(
        counts, BY_NAME["BOW (L1/L1)"], everyone, everyone, everyone
    )


def timed(label: str, fn, repeats: int):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    print(
        f"{label:<52} median {np.median(times):7.3f} s, max {max(times):7.3f} s ({repeats} run(s))"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-group", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--networkx",
        action="store_true",
        help="also time networkx.max_weight_matching on the complete graph",
    )
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n = 2 * args.per_group
    print(f"2 x {args.per_group} documents, BOW (L1/L1) distances")
    distance_sets = [synthetic_distances(rng, args.per_group) for _ in range(args.repeats)]
    runs = iter(distance_sets * 2)
    pairs = timed(
        "exact matching (LP pruning + HiGHS)",
        lambda: crossmatch.min_distance_perfect_matching(next(runs)),
        args.repeats,
    )
    in_first = np.arange(n) < args.per_group
    result = timed(
        "whole crossmatch test (matching + exact p-value)",
        lambda: crossmatch.crossmatch_test(next(runs), in_first),
        args.repeats,
    )
    print(
        f"  last run: A1 = {result.a1}, E[A1] = {result.expected_a1:.1f}, p = {result.p_value:.3g}"
    )
    if args.networkx:
        dist = distance_sets[-1]
        us, vs = np.triu_indices(n, 1)
        reference = timed(
            "networkx.max_weight_matching, complete graph",
            lambda: crossmatch._networkx_matching(n, us, vs, dist[us, vs]),
            1,
        )
        ours = crossmatch.min_distance_perfect_matching(dist)
        same = np.isclose(
            dist[ours[:, 0], ours[:, 1]].sum(), dist[reference[:, 0], reference[:, 1]].sum()
        )
        print(f"  same total distance as networkx: {same}")
    assert len(pairs) == n // 2


if __name__ == "__main__":
    main()
