"""How a knn search job scales with its workers (``wmd.threads``), on one query shard of
20 Newsgroups: wall time, CPU, speed-up and the tables' identity per worker count, and
the same queries as N one-worker processes over N sub-shards run at once.

A search job with ``threads: N`` builds its bounds' tables in N forked processes (whole
chunks of the queries' words each, the tables in shared memory), then runs its queries in
N worker processes, each taking the next small chunk of queries when it is done with one
(``search.search_queries``). Everything the job's own process does (reading the set-up's
parts together, handing out chunks, merging the workers' results, building the tables)
is its serial part: this benchmark measures it with CPU clocks (the job's own process
against its children, ``getrusage``), not from the speed-ups.

Data: ``../shared/data/20news_bydate.tsv`` (``--news-data``), prepared as
``benchmarks/knn_pruning.py`` prepares it (its code, in ``--news-workdir``, shared with
it): the first 500 words of each post, the collection's split, a seeded 50-d Word2Vec.
The queries are shard ``--shard`` of ``--of`` of every query of every role, cut as the
workflow cuts its search shards (``search.query_shards``; 1 of 48: 241 queries).

Rows, after an untimed search of 8 queries that loads the compiled kernels (once per
process, as a job's first query does; else the first row paid it): 1, 2, ... ``--workers``
workers (default: this machine's cores), each one call of ``search.search_shard`` as a
``wmd_search`` job makes it, timed from the call to its tables: wall, CPU of this process
and of its (waited) children, the speed-up over one worker, exact solves and those of
pairs another worker solved too, the serial share (this process's CPU over all of the
job's), the load average, and a hash of every column of both tables. The serial share is
split into the bounds' set-up (its part in this process) and the rest (handing out
chunks, merging, the tables). Then the same queries cut into N sub-shards
(``search.query_shards`` again), each searched by its own one-worker process, all started
at once (each reads and prepares the corpus first, as a job does: "with start-up"); their
tables, concatenated in order, are hashed too. The speed-up of the processes is from the
slowest one's search alone, as the workers' rows time the search alone. ``--repeat R``
(default 3): each worker count is run R times, interleaved, and its row is the run of
median wall time (on a 2-core VM single runs of the same row differ by up to 5 %). Last
line:

    thread_scaling: <N> threads <x>x one thread, <N> processes <y>x, tables identical: yes|no

It exits 1 if any tables differ from the one-worker run's.

    python benchmarks/thread_scaling.py [--shard 1 --of 48] [--workers N] [--repeat R] [--record]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import knn_pruning  # noqa: E402  (its 20 Newsgroups preparation)
import record  # noqa: E402

from wmdeval.core import io, schemas  # noqa: E402
from wmdeval.distances.wmd import search  # noqa: E402


def cpu_seconds(who: int) -> float:
    """User + system CPU seconds of ``resource.RUSAGE_SELF`` (every thread of this
    process) or ``RUSAGE_CHILDREN`` (its children that have been waited for)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def table_hash(tables: tuple[pa.Table, ...]) -> str:
    """A hash of every column of ``tables``, in order: their values' bytes (strings
    joined), so two runs agree only if every value is the same bits."""
    digest = hashlib.sha256()
    for table in tables:
        for name in table.column_names:
            values = table.column(name).to_numpy(zero_copy_only=False)
            digest.update(name.encode())
            if values.dtype == object:
                digest.update("\0".join(values.tolist()).encode())
            else:
                digest.update(np.ascontiguousarray(values).tobytes())
    return digest.hexdigest()[:16]


def shard_queries(inputs, roles: list, shard: int, of: int) -> np.ndarray:
    """The sorted positions of query shard ``shard`` (1-based) of ``of``, as
    ``search.search_shard`` cuts every role's queries."""
    queries = np.unique(np.concatenate([role.queries for role in roles]))
    return search.query_shards(inputs.sizes, queries, of)[shard - 1]


def run_workers(inputs, folds, args, workers: int) -> dict:
    """One search of the shard with ``workers`` workers, as a wmd_search job runs it."""
    stats = search.SearchStats()
    load = os.getloadavg()[0]
    wall0, self0, children0 = (
        time.perf_counter(),
        cpu_seconds(resource.RUSAGE_SELF),
        cpu_seconds(resource.RUSAGE_CHILDREN),
    )
    tables = search.search_shard(
        inputs, folds, None, args.shard - 1, args.of, workers, stats, report=None
    )
    wall = time.perf_counter() - wall0
    own = cpu_seconds(resource.RUSAGE_SELF) - self0
    children = cpu_seconds(resource.RUSAGE_CHILDREN) - children0
    return {
        "workers": workers,
        "wall_s": wall,
        "cpu_s": own + children,
        "parent_cpu_s": own,
        "setup_cpu_s": stats.setup_seconds,
        "setup_wall_s": stats.setup_wall_seconds,
        "setup_parent_cpu_s": stats.setup_seconds - stats.setup_worker_seconds,
        "children_cpu_s": children,
        "solves": stats.solves,
        "duplicates": stats.duplicates,
        "queries": stats.queries,
        "load": load,
        "hash": table_hash(tables),
    }


def _print_row(row: dict, one: dict, label: str) -> None:
    """Complete ``row`` against the one-worker run ``one`` (speed-up, serial shares) and
    print it after ``label``."""
    workers = row["workers"]
    row["speedup"] = one["wall_s"] / row["wall_s"]
    # the job's CPU outside its workers, over all of it (one worker: no workers)
    row["serial_share"] = row["parent_cpu_s"] / row["cpu_s"] if workers > 1 else None
    # of which its part of the bounds' set-up and the rest (handing out chunks, merging,
    # the tables)
    rest = max(row["parent_cpu_s"] - row["setup_parent_cpu_s"], 0.0)
    row["rest_share"] = rest / row["cpu_s"] if workers > 1 else None
    share = (
        f"{100 * row['serial_share']:.1f} % (rest {100 * row['rest_share']:.1f} %)"
        if workers > 1
        else "-"
    )
    same = "reference" if row is one else ("same" if row["hash"] == one["hash"] else "DIFFER")
    print(
        f"{label}{row['wall_s']:6.1f}   {row['cpu_s']:6.1f} "
        f"({row['parent_cpu_s']:.1f} + {row['children_cpu_s']:.1f}; set-up "
        f"{row['setup_cpu_s']:.1f}, {row['setup_wall_s']:.1f} s wall)   "
        f"{row['speedup']:5.2f}x   {share:>21}   "
        f"{row['solves']:,} ({row['duplicates']:,})   {row['load']:.2f}   "
        f"{row['hash']} {same}",
        flush=True,
    )


def run_processes(args, count: int, tmp: Path) -> dict:
    """The shard's queries as ``count`` sub-shards, each searched by its own one-worker
    process (this script, ``--child``), all started at once."""
    load = os.getloadavg()[0]
    children0 = cpu_seconds(resource.RUSAGE_CHILDREN)
    wall0 = time.perf_counter()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    running = []
    for part in range(count):
        command = [sys.executable, str(Path(__file__).resolve()), "--child", str(part)]
        command += ["--processes", str(count), "--shard", str(args.shard), "--of", str(args.of)]
        command += ["--news-data", str(args.news_data), "--news-workdir", str(args.news_workdir)]
        command += ["--child-out", str(tmp / f"part{part}")]
        running.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True))
    reports = []
    for child in running:
        out, _ = child.communicate()
        if child.returncode != 0:
            raise SystemExit(f"thread_scaling: a sub-shard process failed ({child.returncode})")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - wall0
    children = cpu_seconds(resource.RUSAGE_CHILDREN) - children0
    tables = tuple(
        pa.concat_tables(
            [io.read_table(tmp / f"part{part}.{kind}.parquet", schema) for part in range(count)]
        )
        for kind, schema in (
            ("pairs", schemas.NEIGHBOUR_PAIRS),
            ("certificates", schemas.NEIGHBOUR_CERTIFICATES),
        )
    )
    return {
        "processes": count,
        "wall_s": wall,
        "search_wall_s": max(r["wall_s"] for r in reports),
        "cpu_s": children,
        "search_cpu_s": sum(r["cpu_s"] for r in reports),
        "solves": sum(r["solves"] for r in reports),
        "queries": sum(r["queries"] for r in reports),
        "load": load,
        "hash": table_hash(tables),
    }


def child(args) -> None:
    """``--child``: search sub-shard ``args.child`` of ``args.processes`` of the shard with
    one worker; write its tables and print its search's wall, CPU and counts (JSON)."""
    inputs, _, _, roles = knn_pruning.news_inputs(args.news_data, args.news_workdir)
    mine = shard_queries(inputs, roles, args.shard, args.of)
    part = search.query_shards(inputs.sizes, mine, args.processes)[args.child]
    tasks = search.query_tasks(roles, inputs.empty, part)
    stats = search.SearchStats()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    pairs, certificates = search.search_queries(inputs, tasks, 1, stats, report=None)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    pq.write_table(pairs, f"{args.child_out}.pairs.parquet")
    pq.write_table(certificates, f"{args.child_out}.certificates.parquet")
    figures = {"wall_s": wall, "cpu_s": cpu, "solves": stats.solves, "queries": stats.queries}
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shard", type=int, default=1, help="1-based query shard")
    parser.add_argument("--of", type=int, default=48, help="query shards in all")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count(),
        help="rows for 1 .. this many workers, and this many processes (default: the cores)",
    )
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per worker count; each row is the run of median wall time (default 3)",
    )
    knn_pruning.add_news_arguments(parser)
    record.add_argument(parser, "thread_scaling")
    args = parser.parse_args()
    if not 1 <= args.shard <= args.of:
        parser.error(f"--shard {args.shard} is not in 1..{args.of}")
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    if args.child is not None:
        child(args)
        return

    inputs, _, splits, roles = knn_pruning.news_inputs(args.news_data, args.news_workdir)
    folds = io.fold_indices(splits, inputs.doc_ids)
    queries = shard_queries(inputs, roles, args.shard, args.of)
    n = args.workers
    print(
        f"20 Newsgroups: {inputs.n:,} posts; query shard {args.shard} of {args.of}: "
        f"{len(queries)} queries; {os.cpu_count()} cores; rows for 1..{n} workers, then "
        f"{n} one-worker processes",
        flush=True,
    )
    if len(queries) < 200:
        print("   (fewer than 200 queries: a smaller --of gives more)", flush=True)
    print(
        "workers   wall s   CPU s (this process + children)   speed-up   serial share   "
        "solves (duplicates)   load   tables",
        flush=True,
    )
    # untimed: the compiled kernels are loaded from numba's cache on first use, once per
    # process (the forked workers inherit them), which would else count to the first row
    search.search_queries(
        inputs, search.query_tasks(roles, inputs.empty, queries[:8]), 1, None, report=None
    )
    runs: dict[int, list[dict]] = {workers: [] for workers in range(1, n + 1)}
    # the repeats interleaved (1, 2, .., n workers, then again), so that a change of the
    # machine's speed during the benchmark is shared out among the rows
    for repeat in range(args.repeat):
        for workers in range(1, n + 1):
            row = run_workers(inputs, folds, args, workers)
            runs[workers].append(row)
            _print_row(
                row, runs[1][0], f"{workers:>7}{'':4}" if repeat == 0 else f"{'':7}  r{repeat + 1}"
            )
    # each row: its run of median wall time
    rows = [sorted(runs[w], key=lambda r: r["wall_s"])[(args.repeat - 1) // 2] for w in runs]
    if args.repeat > 1:
        print(f"medians of {args.repeat} runs:", flush=True)
        for workers, row in zip(runs, rows, strict=True):
            _print_row(row, rows[0], f"{workers:>7}{'':4}")
    one = rows[0]
    print(
        f"   one worker: {one['cpu_s'] / one['queries']:.3f} s CPU per query "
        f"({one['solves'] / one['queries']:.1f} exact solves per query)",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        procs = run_processes(args, n, Path(tmp))
    procs["speedup"] = one["wall_s"] / procs["search_wall_s"]
    same = procs["hash"] == one["hash"]
    print(
        f"{n} one-worker processes over {n} sub-shards: slowest search "
        f"{procs['search_wall_s']:.1f} s ({procs['wall_s']:.1f} s with start-up), CPU "
        f"{procs['cpu_s']:.1f} s ({procs['search_cpu_s']:.1f} s searching), "
        f"{procs['speedup']:.2f}x, {procs['solves']:,} solves, load {procs['load']:.2f}, "
        f"{procs['hash']} {'same' if same else 'DIFFER'}",
        flush=True,
    )
    identical = same and all(r["hash"] == one["hash"] for done in runs.values() for r in done)
    last = rows[-1]
    record.write(
        args.record,
        "thread_scaling",
        {
            "queries": int(one["queries"]),
            "shard": f"{args.shard} of {args.of}",
            "repeat": args.repeat,
            "workers": n,
            "rows": [
                {key: (round(v, 3) if isinstance(v, float) else v) for key, v in r.items()}
                for r in rows
            ],
            "processes": {
                key: (round(v, 3) if isinstance(v, float) else v) for key, v in procs.items()
            },
            "cpu_per_query_one_s": round(one["cpu_s"] / one["queries"], 3),
            "wall_one_s": round(one["wall_s"], 1),
            "wall_n_s": round(last["wall_s"], 1),
            "cpu_one_s": round(one["cpu_s"], 1),
            "cpu_n_s": round(last["cpu_s"], 1),
            "speedup": round(last["speedup"], 2),
            "processes_speedup": round(procs["speedup"], 2),
            "serial_share_percent": (
                round(100 * last["serial_share"], 1) if last["serial_share"] is not None else None
            ),
            "rest_share_percent": (
                round(100 * last["rest_share"], 1) if last["rest_share"] is not None else None
            ),
            "duplicates": int(last["duplicates"]),
            "identical": identical,
        },
    )
    print(
        f"thread_scaling: {n} threads {last['speedup']:.2f}x one thread, {n} processes "
        f"{procs['speedup']:.2f}x, tables identical: {'yes' if identical else 'no'}"
    )
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
