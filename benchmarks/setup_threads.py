"""The kNN search's bounds set-up built by one thread and by a pool of threads, on 20
Newsgroups: wall time, CPU, and whether the tables are the same bits.

A search job builds its cheap bounds' tables once (``bounds.LowerBounds``: every
vocabulary word's distance to the nearest word of each query, each query word's to the
nearest word of every document) before its threads search. With ``pool=`` the job's
threads share that work (a chunk's product and costs in slices of rows, its minima in
slices of documents and of rows, the slices fixed so that no bit depends on the
threads); before, one thread built it while the others idled. The paper plan searches
each method in one shard (``wmd.search_shards: 1``), so the set-up covers every query.

Data: ``../shared/data/20news_bydate.tsv`` (``--news-data``), prepared as
``benchmarks/knn_pruning.py`` prepares it (in ``--news-workdir``, shared with it). The
queries are shard 1 of ``--shards`` of every query of the collection's split (1: all
10,927, as the paper plan's search job has them). Both ways are built ``--rounds``
times, alternately, with BLAS at one thread as in the search; each build's tables are
hashed and dropped before the next (one build of all queries holds about 6 GB). Last
line:

    setup_threads: <threads> threads <x>x the wall speed of one, CPU <ratio>x, tables
    identical: yes|no

(one line). It exits 1 if the tables differ.

    python benchmarks/setup_threads.py [--shards 1] [--threads 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import knn_pruning  # noqa: E402  (its 20 Newsgroups preparation)
import record  # noqa: E402

from wmdeval.distances.wmd import bounds, search  # noqa: E402
from wmdeval.distances.wmd.solver import _blas  # noqa: E402


def build(inputs, queries: np.ndarray, threads: int) -> tuple[float, float, str]:
    """(wall seconds, process CPU seconds, hash of the tables) of one build of the
    bounds' tables for ``queries``: on the calling thread alone if ``threads`` is 1,
    else shared with a pool of ``threads`` threads."""
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        started, cpu = time.perf_counter(), time.process_time()
        lower = bounds.LowerBounds(inputs, queries, pool=pool if threads > 1 else None)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    digest = hashlib.sha256()
    for table in (lower.to_documents, lower.to_queries, lower.second):
        digest.update(np.ascontiguousarray(table).tobytes())
    return wall, cpu, digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    knn_pruning.add_news_arguments(parser)
    parser.add_argument("--shards", type=int, default=1, help="queries: shard 1 of these")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    record.add_argument(parser, "setup_threads")
    args = parser.parse_args()
    if args.threads < 2 or args.shards < 1 or args.rounds < 1:
        parser.error("--threads must be >= 2, --shards and --rounds >= 1")

    inputs, _, _, roles = knn_pruning.news_inputs(args.news_data, args.news_workdir)
    every = np.unique(np.concatenate([role.queries for role in roles]))
    queries = search.query_shards(inputs.sizes, every, args.shards)[0]
    print(
        f"20 Newsgroups at {inputs.vectors.shape[1]} dimensions: {len(queries)} queries "
        f"(shard 1 of {args.shards}), 1 thread against {args.threads}",
        flush=True,
    )
    build(inputs, queries[:2], args.threads)  # loads (or compiles) the kernels, untimed
    timed: dict[int, list[tuple[float, float, str]]] = {1: [], args.threads: []}
    for round_ in range(1, args.rounds + 1):
        for threads in (1, args.threads):
            wall, cpu, digest = build(inputs, queries, threads)
            timed[threads].append((wall, cpu, digest))
            print(
                f"round {round_}, {threads} thread(s): {wall:.1f} s wall, {cpu:.1f} s CPU, "
                f"tables {digest[:12]}",
                flush=True,
            )
    one, many = timed[1], timed[args.threads]
    identical = len({digest for _, _, digest in one + many}) == 1
    speed = sum(wall for wall, _, _ in one) / sum(wall for wall, _, _ in many)
    cpu = sum(cpu for _, cpu, _ in many) / sum(cpu for _, cpu, _ in one)
    print(
        f"setup_threads: {args.threads} threads {speed:.2f}x the wall speed of one, "
        f"CPU {cpu:.2f}x, tables identical: {'yes' if identical else 'no'}"
    )
    record.write(
        args.record,
        "setup_threads",
        {
            "queries": len(queries),
            "threads": args.threads,
            "wall_one_thread_s": round(sum(w for w, _, _ in one) / len(one), 1),
            "wall_threads_s": round(sum(w for w, _, _ in many) / len(many), 1),
            "speedup": round(speed, 2),
            "cpu_ratio": round(cpu, 2),
            "identical": identical,
        },
    )
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
