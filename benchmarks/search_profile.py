"""Where a knn search's CPU goes: inside its compiled kernels, or around them.

One query shard of 20 Newsgroups (prepared as ``benchmarks/knn_pruning.py`` prepares it,
in its ``--news-workdir``; shard ``--shard`` of ``--of`` cut as ``benchmarks/thread_scaling.py``
cuts it: 1 of 48, 241 queries), searched once with one worker (``search.search_queries``),
after an untimed search of 3 queries that loads the compiled kernels.

During the timed search every compiled kernel the search reaches from Python (each numba
function that ``bounds`` and ``solver`` call, and POT's ``emd_c``, the network simplex
for a solve with its duals) is called through a wrapper that adds the thread's CPU time
of the call to that kernel's account. A kernel's time so includes numba's dispatch of
the call (~1 us), and kernels that call each other inside compiled code are counted once,
in the outer one. Everything else (the interpreter's visit loop, numpy and BLAS calls
between the kernels, the tables) is "around the kernels". The wrappers' own cost, two
clock reads per call, is measured first and printed; it falls in "around the kernels".

Prints one row per kernel (calls, CPU s, CPU s per query, share of the search's CPU), the
totals, and a last line:

    search_profile: <q> queries, <x> s CPU per query: compiled kernels <y> s (<p> %),
    around them <z> s

    python benchmarks/search_profile.py [--shard 1 --of 48] [--record [PATH]]

``--record`` writes benchmarks/results/search_profile.json, which docs/performance.md quotes.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import knn_pruning  # noqa: E402  (the corpus's preparation)
import record  # noqa: E402
import thread_scaling  # noqa: E402  (the shard's queries)
from numba.core.registry import CPUDispatcher  # noqa: E402

from wmdeval.distances.wmd import bounds, search, solver  # noqa: E402

#: Modules whose calls into compiled code are timed, and POT's simplex by name.
CALLERS = (bounds, solver)
SIMPLEX = "emd_c"


def kernel_names() -> dict:
    """{(module, name): the kernel} for every compiled kernel the callers hold."""
    found = {}
    for module in CALLERS:
        for name, value in vars(module).items():
            if isinstance(value, CPUDispatcher) or name == SIMPLEX:
                found[(module, name)] = value
    return found


def timed(function, account: list):
    """``function`` that adds each call's thread CPU seconds and 1 to ``account``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        t0 = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            account[0] += time.thread_time() - t0
            account[1] += 1

    return wrapper


def clock_cost(calls: int = 200_000) -> float:
    """Seconds of one call's two clock reads (what a wrapper adds)."""
    t0 = time.perf_counter()
    for _ in range(calls):
        time.thread_time()
        time.thread_time()
    return (time.perf_counter() - t0) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shard", type=int, default=1, help="1-based query shard")
    parser.add_argument("--of", type=int, default=48, help="query shards in all")
    knn_pruning.add_news_arguments(parser)
    record.add_argument(parser, "search_profile")
    args = parser.parse_args()

    inputs, _, _, roles = knn_pruning.news_inputs(args.news_data, args.news_workdir)
    queries = thread_scaling.shard_queries(inputs, roles, args.shard, args.of)
    warm = search.query_tasks(roles, inputs.empty, queries[:3])
    search.search_queries(inputs, warm, 1, search.SearchStats(), report=None)

    accounts = {}
    originals = kernel_names()
    for (module, name), function in originals.items():
        # a kernel two modules share (solver's _pair_costs is bounds') has one account
        account = accounts.setdefault(name, [0.0, 0])
        setattr(module, name, timed(function, account))
    tasks = search.query_tasks(roles, inputs.empty, queries)
    stats = search.SearchStats()
    try:
        cpu0 = time.process_time()
        search.search_queries(inputs, tasks, 1, stats, report=None)
        cpu = time.process_time() - cpu0
    finally:
        for (module, name), function in originals.items():
            setattr(module, name, function)
    per_call = clock_cost()

    n = len(queries)
    rows = sorted(accounts.items(), key=lambda item: -item[1][0])
    kernels = sum(seconds for seconds, _ in accounts.values())
    calls = sum(count for _, count in accounts.values())
    print(f"shard {args.shard} of {args.of}: {n} queries, {stats.solves:,} solves, one worker")
    print(f"{'kernel':<22} {'calls':>10} {'CPU s':>8} {'s/query':>9} {'share':>7}")
    table = []
    for name, (seconds, count) in rows:
        if not count:
            continue
        share = seconds / cpu
        table.append([name, count, round(seconds, 2), round(seconds / n, 4), round(share, 3)])
        print(f"{name:<22} {count:>10,} {seconds:>8.2f} {seconds / n:>9.4f} {share:>6.1%}")
    around = cpu - kernels
    print(
        f"{'compiled kernels':<22} {calls:>10,} {kernels:>8.2f} {kernels / n:>9.4f} "
        f"{kernels / cpu:>6.1%}"
    )
    print(f"{'around them':<22} {'':>10} {around:>8.2f} {around / n:>9.4f} {around / cpu:>6.1%}")
    print(
        f"the wrappers' clock reads: {per_call * 1e6:.2f} us a call, {per_call * calls:.2f} s "
        f"of the {around:.2f} s around the kernels"
    )
    print(
        f"search_profile: {n} queries, {cpu / n:.3f} s CPU per query: compiled kernels "
        f"{kernels / n:.3f} s ({kernels / cpu:.0%}), around them {around / n:.3f} s"
    )
    record.write(
        args.record,
        "search_profile",
        {
            "queries": n,
            "solves": stats.solves,
            "cpu_s": round(cpu, 1),
            "cpu_per_query_s": round(cpu / n, 3),
            "kernels_per_query_s": round(kernels / n, 3),
            "kernels_share": round(kernels / cpu, 3),
            "around_per_query_s": round(around / n, 3),
            "simplex_per_query_s": round(accounts.get(SIMPLEX, [0.0])[0] / n, 3),
            "wrapper_s": round(per_call * calls, 2),
            "table": {"header": ["kernel", "calls", "CPU s", "s/query", "share"], "rows": table},
        },
    )


if __name__ == "__main__":
    main()
