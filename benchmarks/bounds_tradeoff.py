"""What the kNN search's tighter bounds buy: exact solves, CPU and the bounds' share of it
under the shipped settings and with parts of the bounds turned down, on 20 Newsgroups.

The search (``distances/wmd/search.py``) is exact whatever its bounds: they decide only
how many candidates are solved. So each setting gives the same neighbours, and what
differs is what it costs. A setting changes module constants of the search for the run
(restored after it); nothing else differs. The settings, in turn:

- ``shipped``: the constants as the workflow runs them (measured first and last, so the
  machine's drift between runs shows);
- ``ascent x2``: ASCENT_STEPS doubled (20 -> 40);
- ``no ascent``: no dual ascent (ASCENT_STEPS = 0);
- ``32 potentials``: POTENTIALS 128 -> 32;
- ``cheap + ICT only``: no potentials, so no dual bounds and no ascent.

Data: ``../shared/data/20news_bydate.tsv`` (``--news-data``), prepared as
``benchmarks/knn_pruning.py`` prepares it (first 500 words per post, the collection's own
split, the demo's Word2Vec at 50 dimensions; in ``--news-workdir``, shared with that
benchmark), and the same seeded sample of ``--news-queries`` queries per query role,
searched together on ``--threads`` threads. It exits 1 if any setting's 19 nearest
differ from the first's (the search is exact, whatever its bounds). CPU is process time,
bounds included; the bounds' share is ``knn_pruning.py``'s: the cheap bounds (with their
set-up) plus the ICT and dual bounds and ascents, over the CPU. The last line:

    bounds_tradeoff: shipped <s> s per query, bounds <p> %; lowest share <p> % at
    <s> s per query (<setting>)

(one line).

    python benchmarks/bounds_tradeoff.py [--news-queries 100] [--threads 2]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import knn_pruning  # noqa: E402  (its 20 Newsgroups preparation)
import record  # noqa: E402

from wmdeval.core.variant import tie_key  # noqa: E402
from wmdeval.distances.wmd import bounds, search  # noqa: E402

SETTINGS = [
    ("shipped", {}),
    ("ascent x2", {(bounds, "ASCENT_STEPS"): 2 * bounds.ASCENT_STEPS}),
    ("no ascent", {(bounds, "ASCENT_STEPS"): 0}),
    ("32 potentials", {(search, "POTENTIALS"): 32}),
    ("cheap + ICT only", {(search, "POTENTIALS"): 0}),
    ("shipped", {}),
]


@contextlib.contextmanager
def constants(changes: dict):
    """The module constants ``changes`` ((module, name) -> value) set, then restored."""
    before = {key: getattr(*key) for key in changes}
    try:
        for (module, name), value in changes.items():
            setattr(module, name, value)
        yield
    finally:
        for (module, name), value in before.items():
            setattr(module, name, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    knn_pruning.add_news_arguments(parser)
    parser.add_argument("--news-queries", type=int, default=100, help="sampled per role")
    parser.add_argument("--threads", type=int, default=2)
    record.add_argument(parser, "bounds_tradeoff")
    args = parser.parse_args()

    inputs, _, _, roles = knn_pruning.news_inputs(args.news_data, args.news_workdir)
    # knn_pruning.py's sample
    sampled = knn_pruning.news_sample(roles, args.news_queries, np.random.default_rng(4))
    tasks = search.query_tasks(roles, inputs.empty, sampled)
    q = len(sampled)
    print(
        f"20 Newsgroups, WMD at {inputs.vectors.shape[1]} dimensions: {q} sampled queries, "
        f"{args.threads} threads",
        flush=True,
    )
    print("setting            solves/query  CPU s/query  bounds share  (cheap, ICT+dual+ascent s)")
    measured, rows = [], []
    reference, differ = None, False
    for name, changes in SETTINGS:
        stats = search.SearchStats()
        with constants(changes):
            started = time.process_time()
            pairs, _ = search.search_queries(inputs, tasks, args.threads, stats)
            # the worker processes' CPU too (--threads > 1)
            cpu = time.process_time() - started + stats.worker_seconds
        share = (stats.bound_seconds + stats.tight_seconds) / cpu
        # the neighbours do not depend on the bounds: each setting's k nearest are compared
        # with the first's (the solved pairs differ, their top k may not)
        top = nearest(pairs, tasks, inputs)
        same = "" if reference is None or top == reference else "  NEIGHBOURS DIFFER"
        differ = differ or bool(same)
        reference = reference if reference is not None else top
        measured.append((name, cpu / q, share))
        rows.append([name, round(stats.solves / q, 1), round(cpu / q, 3), round(100 * share, 1)])
        print(
            f"{name:18s} {stats.solves / q:12.1f} {cpu / q:12.3f} {100 * share:12.1f} %"
            f"  ({stats.bound_seconds:.1f}, {stats.tight_seconds:.1f}){same}",
            flush=True,
        )
    shipped = [m for m in measured if m[0] == "shipped"]
    low = min(measured, key=lambda m: m[2])
    print(
        f"bounds_tradeoff: shipped {np.mean([m[1] for m in shipped]):.3f} s per query, bounds "
        f"{100 * np.mean([m[2] for m in shipped]):.1f} %; lowest share {100 * low[2]:.1f} % at "
        f"{low[1]:.3f} s per query ({low[0]})"
    )
    header = ["setting", "exact solves per query", "CPU s per query", "bounds' share %"]
    figures = {"queries": q, "threads": args.threads, "table": {"header": header, "rows": rows}}
    record.write(args.record, "bounds_tradeoff", figures)
    sys.exit(1 if differ else 0)  # the search is exact: any setting's neighbours differing is a bug


def nearest(pairs, tasks, inputs) -> dict:
    """(query position, candidate list key) -> the positions of its k nearest, ranked by tie
    key then position as evaluate ranks them, from a search's NEIGHBOUR_PAIRS table."""
    position = {int(d): i for i, d in enumerate(inputs.doc_ids.tolist())}
    by_query: dict[int, list[tuple[float, int]]] = {}
    keys = tie_key(pairs.column("distance").to_numpy())
    for qd, cd, key in zip(
        pairs.column("query").to_pylist(),
        pairs.column("candidate").to_pylist(),
        keys.tolist(),
        strict=True,
    ):
        by_query.setdefault(position[qd], []).append((key, position[cd]))
    out = {}
    for qpos, mine in tasks.items():
        ranked = sorted(by_query.get(qpos, []))
        for task in mine:
            members = [c for c in ranked if task.member[c[1]]][: task.k]
            out[(qpos, task.key)] = [c for _, c in members]
    return out


if __name__ == "__main__":
    main()
