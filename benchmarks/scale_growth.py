"""How the cost of a knn search grows with the corpus, beyond the paper's scale.

Data: the passage corpus of ``benchmarks/passages.py`` (20 Newsgroups' posts cut into
85,635 passages of 60 tokens, from ``../shared/data``), prepared once through the
workflow with ``knn_pruning.NEWS_CONFIG`` (kusner115 stop words, a seeded 50-d Word2Vec
trained on the passages) in ``--workdir``. Each size is a seeded random subset of the
prepared documents (``knn_pruning.sample``, seed ``--seed``), the whole corpus last.

``search``: per size, one query shard of about ``--shard-queries`` (240) queries, cut as
the workflow cuts its search shards (``search.query_shards``; the first shard), searched
by ``search.search_shard`` with ``--threads`` (2) workers, as a ``wmd_search`` job
runs it, ``--repeats`` (3) times, each after an untimed search of a few queries that
loads the compiled kernels, the sizes in turn (a round searches each size once, so that
all meet the same hours of a VM whose speed drifts), keeping the search of least CPU
(other work on the machine only adds CPU, so the least is the nearest to an idle
machine's, as ``timeit`` reports; every search's figure is recorded too, and all must
give the same tables). Per size it
prints the CPU per query (this process and its worker processes,
``knn_pruning.Clock``: CPU, not wall, so that other work on the machine distorts it
less), the exact solves per query, the cheap bounds' CPU per query and their share of
the search's CPU (``SearchStats.bound_seconds``: the bounds' set-up and the cheap bound
rows), and a hash of both tables (``thread_scaling.table_hash``: a change to the search
that must not change its results is checked against it). Last, the exponent b of the
least-squares fit CPU per query ~ n^b over the sizes, and a line

    scale_growth search: CPU per query <x> s at <n> documents, <r>x that at <m>; n^<b>

    python benchmarks/scale_growth.py search [--sizes 10704 21409 42818 85635] [--record]

``--record`` writes benchmarks/results/scale_growth.json (its ``search`` part), which
docs/performance.md quotes. ``run``: the whole workflow on the passages beside its dry
run's forecast and declarations (benchmarks/scale_run.py, whose docstring says what it
measures; it records benchmarks/results/scale_run.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import knn_pruning  # noqa: E402  (the preparation, the subsets, the CPU clock)
import passages  # noqa: E402
import record  # noqa: E402
import scale_run  # noqa: E402
import thread_scaling  # noqa: E402  (the tables' hash)

from wmdeval.core import io  # noqa: E402
from wmdeval.core.roles import query_roles  # noqa: E402
from wmdeval.distances.wmd import search, solver  # noqa: E402

#: The sizes of the issue's table: the whole corpus over 8, 4, 2 and 1.
SIZES = (10_704, 21_409, 42_818, passages.PASSAGES)


def prepare(workdir: Path, data: Path):
    """The passage corpus prepared by the workflow in ``workdir`` (once): its documents,
    splits and embeddings."""
    workdir.mkdir(parents=True, exist_ok=True)
    table = workdir / "passages.tsv"
    if not table.exists():
        written = passages.write_passages(table, data=data)
        if written.num_rows != passages.PASSAGES:
            raise SystemExit(f"scale_growth: {written.num_rows} passages, not {passages.PASSAGES}")
    (workdir / "config.yaml").write_text(knn_pruning.NEWS_CONFIG.format(data=table.resolve()))
    return knn_pruning.prepared(workdir, knn_pruning.NEWS_TARGETS, "the passage corpus")


def subset(documents, splits, embeddings, size: int, seed: int):
    """Size ``size`` of the corpus (all of it at its size): prepared inputs and folds."""
    if size < documents.num_rows:
        documents, splits = knn_pruning.sample(documents, splits, size, seed)
    inputs = solver.prepare(documents, embeddings, "bow")
    return inputs, io.fold_indices(splits, inputs.doc_ids)


def search_size(inputs, folds, shard_queries: int, threads: int, repeats: int = 1) -> dict:
    """One shard of about ``shard_queries`` queries of ``inputs``, searched as a job
    ``repeats`` times: the figures of the search that took the least CPU (each search
    its own job's state; other work on the machine only adds to a search's CPU, so the
    least is the nearest to an idle machine's, as ``timeit`` reports), with every
    search's CPU per query beside them. Every search must give the same tables."""
    roles = query_roles(folds, inputs.empty, None)
    queries = np.unique(np.concatenate([role.queries for role in roles]))
    of = max(1, round(len(queries) / shard_queries))
    warm = search.query_tasks(roles, inputs.empty, queries[-3:])
    search.search_queries(inputs, warm, 1, search.SearchStats(), report=None)
    runs = []
    for _ in range(repeats):
        stats = search.SearchStats()
        with knn_pruning.Clock() as clock:
            tables = search.search_shard(inputs, folds, None, 0, of, threads, stats, report=None)
        runs.append((clock, stats, thread_scaling.table_hash(tables)))
    if len({digest for _, _, digest in runs}) > 1:
        raise SystemExit(f"scale_growth: the searches of {inputs.n:,} documents differ")
    clock, stats, digest = min(runs, key=lambda run: run[0].cpu)
    n = stats.queries
    return {
        "documents": inputs.n,
        "queries": n,
        "of": of,
        "cpu_s": clock.cpu,
        "wall_s": clock.wall,
        "cpu_per_query_s": clock.cpu / n,
        "every_cpu_per_query_s": [round(run[0].cpu / n, 4) for run in runs],
        "solves_per_query": stats.solves / n,
        "bounds_per_query_s": stats.bound_seconds / n,
        "bounds_share": stats.bound_seconds / clock.cpu,
        "load": os.getloadavg()[0],
        "hash": digest,
    }


def exponent(sizes: list[int], values: list[float]) -> float:
    """b of the least-squares fit log(value) = a + b log(size)."""
    return float(np.polyfit(np.log(sizes), np.log(values), 1)[0])


def run_search(args) -> None:
    documents, splits, embeddings = prepare(args.workdir, args.data)
    print(
        f"passage corpus: {documents.num_rows:,} documents; one shard of about "
        f"{args.shard_queries} queries per size, {args.threads} workers, the least CPU of "
        f"{args.repeats} searches; CPU of the job's processes (load: the 1-minute load "
        "average after the searches)"
    )
    print(
        f"{'documents':>10} {'queries':>8} {'CPU s/query':>12} {'solves/query':>13} "
        f"{'bounds s/query':>15} {'bounds share':>13} {'load':>5}  tables"
    )
    corpora = [subset(documents, splits, embeddings, size, args.seed) for size in args.sizes]
    # the sizes in turn, a search of each per round: the VM's speed drifts by the hour,
    # and every size then meets the same hours (a size's searches all in a row measured
    # the smallest and the largest in different ones, which the ratio between them read)
    runs: list[list[dict]] = [[] for _ in args.sizes]
    for _ in range(args.repeats):
        for searches, (inputs, folds) in zip(runs, corpora, strict=True):
            searches.append(search_size(inputs, folds, args.shard_queries, args.threads))
    rows = []
    for searches in runs:
        if len({run["hash"] for run in searches}) > 1:
            raise SystemExit(f"scale_growth: the searches of {searches[0]['documents']:,} differ")
        row = dict(min(searches, key=lambda run: run["cpu_per_query_s"]))
        row["every_cpu_per_query_s"] = [run["every_cpu_per_query_s"][0] for run in searches]
        rows.append(row)
        print(
            f"{row['documents']:>10,} {row['queries']:>8} {row['cpu_per_query_s']:>12.3f} "
            f"{row['solves_per_query']:>13.1f} {row['bounds_per_query_s']:>15.3f} "
            f"{row['bounds_share']:>12.0%} {row['load']:>5.2f}  {row['hash']}",
            flush=True,
        )
    sizes = [r["documents"] for r in rows]
    cpu = [r["cpu_per_query_s"] for r in rows]
    b = exponent(sizes, cpu) if len(rows) > 1 else float("nan")
    growth = cpu[-1] / cpu[0]
    print(
        f"scale_growth search: CPU per query {cpu[-1]:.3f} s at {sizes[-1]:,} documents, "
        f"{growth:.2f}x that at {sizes[0]:,}; n^{b:.2f}"
    )
    if args.record is None:
        return
    figures = {}
    if args.record.exists():
        figures = json.loads(args.record.read_text(encoding="utf-8"))["figures"]
    header = [
        "documents",
        "CPU per query (s)",
        "exact solves per query",
        "cheap bounds, CPU per query (s)",
        "cheap bounds' share",
        "load",
    ]
    figures["search"] = {
        "threads": args.threads,
        "repeats": args.repeats,
        "shard_queries": args.shard_queries,
        "seed": args.seed,
        "exponent": round(b, 2),
        "growth": round(growth, 2),
        "cpu_per_query_largest_s": round(cpu[-1], 3),
        "cpu_per_query_smallest_s": round(cpu[0], 3),
        "hashes": {str(r["documents"]): r["hash"] for r in rows},
        "every_cpu_per_query_s": {str(r["documents"]): r["every_cpu_per_query_s"] for r in rows},
        "table": {
            "header": header,
            "rows": [
                [
                    f"{r['documents']:,}",
                    round(r["cpu_per_query_s"], 3),
                    round(r["solves_per_query"], 1),
                    round(r["bounds_per_query_s"], 3),
                    f"{100 * r['bounds_share']:.0f} %",
                    round(r["load"], 1),
                ]
                for r in rows
            ],
        },
    }
    record.write(args.record, "scale_growth", figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parts = parser.add_subparsers(dest="part", required=True)
    part = parts.add_parser("search", help="CPU per query of one search shard per size")
    part.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    part.add_argument("--seed", type=int, default=0, help="seed of the subsets")
    part.add_argument("--shard-queries", type=int, default=240)
    part.add_argument("--threads", type=int, default=2)
    part.add_argument(
        "--repeats", type=int, default=3, help="searches per size; the least CPU is reported"
    )
    part.add_argument("--data", type=Path, default=passages.NEWS)
    part.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "scale-passages"
    )
    record.add_argument(part, "scale_growth")
    whole = parts.add_parser("run", help="a whole run of the workflow beside its dry run")
    scale_run.add_arguments(whole)
    args = parser.parse_args()
    if args.part == "search":
        run_search(args)
    else:
        scale_run.run_whole(args)


if __name__ == "__main__":
    main()
