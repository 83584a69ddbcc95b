"""What a method's neighbour search (``wmd.mode: knn``) will cost, measured before it runs.

The ``wmd_forecast`` job of a dataset variant and transport method times the real search
(:func:`~wmdeval.distances.wmd.search.search_queries` with its
:class:`~wmdeval.distances.wmd.search.SearchStats`, on the query tasks the shards use) on
a seeded sample of the method's queries, and scales it to every query:

* **per query**: exact solves, CPU seconds (process time of every thread, bounds
  included) and the share of that CPU the bounds take (the rest: its solves, timed again
  one by one on a sample of its pairs);
* **sharing**: a job solves a pair once for all its queries, so a query ``c`` in the same
  shard as a sampled query ``q`` gets the pair (q, c) for free if its own search visits
  it. A sample of independent queries shares almost nothing, so its per-query figures
  alone overestimate. The forecast measures the sharing: the share of the sample's solved
  pairs whose other document is a query of the same shard that ranks ``q`` among its
  candidates ("eligible"), times the share of those the other query's own search visits
  too (searched alone, for up to ``checks`` such queries). A pair visited from both
  sides is solved once, so a share ``s`` of visited pairs shared saves s/2 of the solves
  and of their CPU (the bounds are per query and are not shared);
* **per job**: reading the inputs and preparing them, and the bounds' set-up for the
  job's queries (:class:`~wmdeval.distances.wmd.bounds.LowerBounds`: a fixed part and
  one growing with the queries' vocabulary, the sample's as its search paid it,
  ``SearchStats.setup_seconds``, and the set-up batch of the widest vocabulary's
  estimated on its own from a partial build
  (:func:`~wmdeval.distances.wmd.bounds.setup_seconds_estimate`), interpolated between
  the two for each batch; a shard is one batch unless its tables exceed
  ``pairs.SETUP_TABLE_BYTES``), are paid by every shard; a
  per-query figure that included them would overestimate a shard of many queries
  several times over (600 reviews: 2.5x). The kernels are loaded by an untimed search
  of one query first. The set-up is timed as the search runs it: the building thread's
  CPU with BLAS at one thread. Timed on its own as process CPU without that limit, it
  counted BLAS's waiting worker threads too, apparently more on a busier machine: on 20
  Newsgroups (2,000 documents, 90 sampled queries, the set-up code of then) 17.6 s in
  the check, 4.6 s again at a load of 3, 2.4 s with the limit. Taken from the sample's
  28.0 s, it left 0.12 s per query where the shards spent about 0.27 (forecast /
  measured CPU 0.59), and made a query look dearer in a large job than alone (0.136 s for 43
  queries, 0.244 s in their 541-query shard). Searched alone and inside that shard,
  the same queries cost the same CPU (one thread: 0.282 and 0.285 s per query).

Each shard's CPU is its share of the queries' CPU (the larger of its share of the
queries and its share of the estimated work by which :func:`query_shards` cuts them) plus
that setup; its ``runtime`` is :data:`RUNTIME_FACTOR` times its wall time on its threads
(that CPU over :func:`~wmdeval.planning.wall.speedup` of the threads, Amdahl's law with
the declarations' serial share :data:`~wmdeval.planning.wall.SEARCH_SERIAL_SHARE`) plus
:data:`RUNTIME_FLOOR` minutes; its ``mem_mb`` the larger of the memory model of
:func:`wmdeval.planning.resources.search_resources` and :data:`PEAK_FACTOR` times the
forecast job's own measured peak. ``wmd_search`` jobs read both from the file.

Everything under ``measured`` and ``forecast`` in the file comes from timings of this
run on this machine: those fields vary from run to run (the sample itself, the solves
and the sharing counts do not).
"""

from __future__ import annotations

import json
import logging
import math
import resource
import sys
import time
from collections.abc import Mapping, Sequence

import numpy as np

from ..core import io
from ..core.errors import WmdevalError
from ..core.progress import Progress
from ..core.roles import query_roles
from ..distances.wmd.pairs import document_work
from .resources import search_resources
from .wall import EXPECTED_SERIAL_SHARE, speedup

LOG = logging.getLogger("wmdeval.planning.forecast")

#: A shard's runtime: this many times its forecast wall time (its CPU over the speed-up
#: of its threads, :func:`wmdeval.planning.wall.speedup`), for a slower or busier node
#: than the one measured...
RUNTIME_FACTOR = 2.0
#: ... plus these minutes (start-up, writing the tables).
RUNTIME_FLOOR = 5
#: A shard's mem_mb is at least this many times the forecast job's measured peak RSS.
PEAK_FACTOR = 1.3
#: Solved pairs of the sample timed again one by one, for the solves' share of the CPU.
SOLVES_TIMED = 200
#: Version of the forecast file's layout (``format`` in the file).
FORMAT = 1

NOTE = (
    "fields under 'measured' and 'forecast' come from timings on the machine that ran the "
    "forecast: they vary from run to run; the sample, its solves and the sharing counts "
    "are deterministic"
)


# ------------------------------------------------------------------------ the arithmetic


def shard_shares(
    inputs, queries: np.ndarray, n_shards: int, settled: np.ndarray | None = None
) -> list[dict]:
    """Per shard of ``n_shards`` (as :func:`~wmdeval.distances.wmd.search.query_shards`
    cuts ``queries``, sorted positions into ``inputs``): its queries, its share of the
    queries' estimated work (``document_work + 1`` per query, the cut's own measure) and
    its queries' vocabulary (what the bounds' set-up of a job grows with), without the
    queries ``settled`` (:func:`settled_queries`: the search sets up no bound for them),
    and that of each of its set-up batches (``search.shard_batches``: a shard whose
    bounds' tables exceed ``pairs.SETUP_TABLE_BYTES`` sets up a batch at a time)."""
    from ..distances.wmd.search import query_shards, shard_batches

    sizes = inputs.sizes
    shards = query_shards(sizes, queries, n_shards)
    work = document_work(sizes[queries]) + 1.0
    total = float(work.sum()) or 1.0
    cumulative = np.r_[0.0, np.cumsum(work)]
    out, start = [], 0
    for shard in shards:
        end = start + len(shard)
        out.append(
            {
                "queries": len(shard),
                "work": float(cumulative[end] - cumulative[start]) / total,
                "vocabulary": _vocabulary(inputs, _bounded(shard, settled)),
                "batches": [
                    _vocabulary(inputs, _bounded(batch, settled))
                    for batch in shard_batches(inputs, shard)
                ],
            }
        )
        start = end
    return out


def _bounded(positions: np.ndarray, settled: np.ndarray | None) -> np.ndarray:
    """``positions`` without those in ``settled``."""
    if settled is None or not len(settled):
        return positions
    return positions[~np.isin(positions, settled)]


def settled_queries(inputs, roles, queries: np.ndarray, known, floors) -> np.ndarray:
    """The ``queries`` whose every list its floor settles (sorted positions): the search
    builds no bound for them (:func:`~wmdeval.distances.wmd.search.settled_lists`)."""
    from ..distances.wmd import search

    if not floors or not known:
        return np.zeros(0, dtype=np.int64)
    tasks = search.query_tasks(roles, inputs.empty, queries)
    return np.array(sorted(search.settled_lists(inputs, tasks, known, floors)), dtype=np.int64)


def _vocabulary(inputs, positions: np.ndarray) -> int:
    """Distinct words of the documents at ``positions``."""
    if not len(positions):
        return 0
    return int(len(np.unique(np.concatenate([inputs.indices[p] for p in positions.tolist()]))))


def forecast_totals(
    n_queries: int,
    solves_per_query: float,
    cpu_per_query: float,
    solve_share: float,
    shared_share: float,
    setup_seconds: float,
    bounds_setup: Mapping,
    shards: Sequence[Mapping],
    threads: int,
    model_mem_mb: int,
    peak_mb: float,
) -> dict:
    """The forecast of a whole method from the sample's per-query figures.

    ``solve_share``: the share of a query's CPU spent in exact solves (the rest is
    bounds); ``shared_share``: the share of visited pairs that a co-query of the same
    shard visits too (each such pair is solved once, so s/2 of the solves are saved);
    ``setup_seconds``: a job's reading and preparing its inputs; ``bounds_setup``: the
    bounds' set-up timed twice (:func:`bounds_setup_seconds`); ``shards``: per shard
    ``{"queries": int, "work": share of the estimated work, "vocabulary": int}`` and
    optionally ``"batches"``: the vocabulary of each of its set-up batches, each of which
    pays a set-up (default: the one of ``vocabulary``).
    Returns ``{"solves", "cpu_seconds", "shards": [{"shard", "queries", "cpu_seconds",
    "runtime", "mem_mb"}]}``; runtime in minutes.
    """
    if not 0.0 <= shared_share <= 1.0 or not 0.0 <= solve_share <= 1.0:
        raise ValueError("shares must be within [0, 1]")
    saved = shared_share / 2.0
    solves = n_queries * solves_per_query * (1.0 - saved)
    query_cpu = n_queries * cpu_per_query * (1.0 - solve_share * saved)
    per_shard, fixed_total = [], 0.0
    for k, shard in enumerate(shards, start=1):
        share = max(shard["queries"] / n_queries if n_queries else 0.0, shard["work"])
        batches = shard.get("batches") or [shard["vocabulary"]]
        fixed = setup_seconds + sum(bounds_setup_seconds(bounds_setup, v) for v in batches)
        fixed_total += fixed
        cpu = fixed + query_cpu * share
        wall = cpu / speedup(threads)
        per_shard.append(
            {
                "shard": f"{k}-of-{len(shards)}",
                "queries": int(shard["queries"]),
                "cpu_seconds": cpu,
                "runtime": int(math.ceil(RUNTIME_FLOOR + RUNTIME_FACTOR * wall / 60.0)),
                "mem_mb": int(max(model_mem_mb, math.ceil(PEAK_FACTOR * peak_mb))),
            }
        )
    return {"solves": solves, "cpu_seconds": query_cpu + fixed_total, "shards": per_shard}


def bounds_setup_seconds(measured: Mapping, vocabulary: int) -> float:
    """CPU seconds of a job's bounds' set-up for queries of ``vocabulary`` words: the
    line through its two timings (``sample_vocabulary``, ``sample_cpu_seconds``) and
    (``widest_shard_vocabulary``, ``widest_shard_cpu_seconds``), at least 0; the larger
    timing if both vocabularies are equal."""
    v0, t0 = measured["sample_vocabulary"], measured["sample_cpu_seconds"]
    v1, t1 = measured["widest_shard_vocabulary"], measured["widest_shard_cpu_seconds"]
    if v1 == v0:
        return max(t0, t1)
    return max(t0 + (t1 - t0) * (vocabulary - v0) / (v1 - v0), 0.0)


# ------------------------------------------------------------------------ the measurement


def sample_queries(roles, per_role: int, seed: int, sizes: np.ndarray) -> np.ndarray:
    """A seeded sample (sorted positions) of the method's queries: ``per_role`` per kind
    of query role (test, kNN and wkNN validation), all of them if there are fewer.
    Systematic over the queries ordered by estimated work (``document_work`` of their
    ``sizes``, ties by position) from a seeded random start, so every query has the same
    chance and the sample spans long and short documents as the queries do: a per-query
    mean over it is unbiased, with less of the spread a few long documents give a
    simple random sample."""
    if not roles:
        return np.zeros(0, dtype=np.int64)
    queries = np.unique(np.concatenate([role.queries for role in roles]))
    size = min(len(queries), per_role * len({role.name for role in roles}))
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    ordered = queries[np.argsort(document_work(sizes[queries]), kind="stable")]
    step = len(queries) / size
    start = np.random.default_rng(seed).random() * step
    picks = np.minimum((start + step * np.arange(size)).astype(np.int64), len(queries) - 1)
    return np.sort(ordered[picks])


def measure(
    inputs,
    folds,
    settings,
    n_shards: int,
    threads: int,
    per_role: int,
    seed: int,
    checks: int,
    known=None,
    floors=None,
    settled: np.ndarray | None = None,
    relaxed: bool = False,
    report: str | None = None,
) -> dict:
    """Time the search on a seeded sample of queries and measure its sharing (see the
    module's docstring). ``inputs``: the prepared documents (``solver.prepare``);
    ``known``: the pairs the search takes from another variant instead of solving them
    (``search_queries``'s), so the clean variant's forecast counts only what it solves;
    ``floors``: the certified lists it needs not visit (``search_queries``'s), likewise;
    ``settled``: the queries their floors settle (:func:`settled_queries`), which the
    bounds' set-up leaves out; ``relaxed``: the search lists RWMD too (``search_queries``'s);
    ``report``: the subject of the progress lines in the log of the sample's search and
    of the sharing checks (None: no lines)."""
    from ..distances.wmd import search
    from ..distances.wmd.bounds import setup_seconds_estimate
    from ..distances.wmd.solver import _blas, wmd_pair

    roles = query_roles(folds, inputs.empty, settings)
    queries = (
        np.unique(np.concatenate([role.queries for role in roles]))
        if roles
        else np.zeros(0, dtype=np.int64)
    )
    sampled = sample_queries(roles, per_role, seed, inputs.sizes)
    tasks = search.query_tasks(roles, inputs.empty, sampled)
    if len(sampled):
        # untimed: loads (or compiles) the bounds' kernels, as every job does once
        first = int(sampled[0])
        search.search_queries(
            inputs, {first: tasks[first]}, threads, known=known, floors=floors, report=None
        )
    # the bounds' set-up, paid once per job: the sample's own, as its search paid it, and
    # the shard of the largest query vocabulary's (the set-up has a fixed part and one
    # growing with it), as a search pays it: CPU of the building thread, with BLAS at
    # one thread (a timing without the limit counts BLAS's waiting threads too); the
    # widest shard's estimated from one chunk of its words in SETUP_EVERY, not built in
    # full (its job builds it: a forecast that built it too paid the set-up twice)
    shards = search.query_shards(inputs.sizes, queries, n_shards)
    # a set-up is for a batch of a shard's queries (the whole shard unless its tables
    # exceed the budget, search.shard_batches), for those their floors do not settle
    # (``settled``)
    bounded = [
        _bounded(batch, settled)
        for shard in shards
        for batch in search.shard_batches(inputs, shard)
    ]
    widest = max(bounded, key=lambda batch: _vocabulary(inputs, batch))
    with _blas().limit(limits=1, user_api="blas"):
        widest_init = setup_seconds_estimate(inputs, widest)
    stats = search.SearchStats()
    cpu0 = time.process_time()
    pairs = search.search_queries(
        inputs,
        tasks,
        threads,
        stats,
        known,
        floors,
        relaxed,
        report=f"{report}: sampled queries" if report is not None else None,
    )[0]
    # with threads > 1 the queries run in worker processes: their CPU is not this one's
    cpu = time.process_time() - cpu0 + stats.worker_seconds
    init = stats.setup_seconds
    per_query = max(cpu - init, 0.0)
    m = max(len(sampled), 1)

    # sharing: the solved pairs (q, c) whose c is a query of q's shard ranking q
    shard_of = np.full(inputs.n, -1, dtype=np.int64)
    for k, shard in enumerate(shards):
        shard_of[shard] = k
    q_pos = np.searchsorted(inputs.doc_ids, pairs.column("query").to_numpy())
    c_pos = np.searchsorted(inputs.doc_ids, pairs.column("candidate").to_numpy())
    solved = q_pos != c_pos
    q_pos, c_pos = q_pos[solved], c_pos[solved]
    same = (shard_of[c_pos] >= 0) & (shard_of[c_pos] == shard_of[q_pos])
    co_tasks = search.query_tasks(roles, inputs.empty, np.unique(c_pos[same]))
    eligible = [
        (int(q), int(c))
        for q, c in zip(q_pos[same].tolist(), c_pos[same].tolist(), strict=True)
        if any(task.member[q] for task in co_tasks[c])
    ]
    others = sorted({c for _, c in eligible})
    rng = np.random.default_rng(seed + 1)
    checked = (
        sorted(rng.choice(others, min(checks, len(others)), replace=False).tolist())
        if others
        else []
    )
    hits = tried = 0
    # one line for the checks, not one per check's own search
    progress = Progress(
        LOG if report is not None else None, f"{report}: sharing checks", len(checked), "queries"
    )
    for c in checked:
        found, _ = search.search_queries(
            inputs, {c: co_tasks[c]}, threads, known=known, floors=floors, report=None
        )
        progress.advance()
        visited = set(
            np.searchsorted(inputs.doc_ids, found.column("candidate").to_numpy()).tolist()
        )
        for q, other in eligible:
            if other == c:
                tried += 1
                hits += q in visited
    progress.finish()
    eligible_share = len(eligible) / max(len(q_pos), 1)
    reverse_share = hits / tried if tried else 0.0
    # the exact solves' share of the queries' CPU, from a timed sample of the solved
    # pairs (thread CPU, one thread): the search's own bound timings are partly wall
    # time, which a busy machine inflates
    picks = rng.choice(len(q_pos), min(SOLVES_TIMED, len(q_pos)), replace=False)
    with _blas().limit(limits=1, user_api="blas"):
        cpu0 = time.thread_time()
        for k in picks.tolist():
            wmd_pair(inputs, int(q_pos[k]), int(c_pos[k]))
        pair_seconds = (time.thread_time() - cpu0) / max(len(picks), 1)
    solves_cpu = min(stats.solves * pair_seconds, per_query)
    vocabulary = _vocabulary(inputs, _bounded(sampled, settled))
    return {
        "queries": int(len(queries)),
        "sampled_queries": int(len(sampled)),
        "sampled_doc_ids": inputs.doc_ids[sampled].astype(int).tolist(),
        "solves": int(stats.solves),
        "solves_per_query": stats.solves / m,
        "reused": int(stats.reused),
        "floored": int(stats.floored),  # candidate lists settled by certificates
        "cpu_seconds": cpu,
        "bounds_setup": {
            "sample_vocabulary": vocabulary,
            "sample_cpu_seconds": init,
            "widest_shard_vocabulary": _vocabulary(inputs, widest),
            "widest_shard_cpu_seconds": widest_init,
        },
        "cpu_seconds_per_query": per_query / m,
        "solve_cpu_seconds_per_pair": pair_seconds,
        "bounds_share": 1.0 - solves_cpu / per_query if per_query > 0 else 0.0,
        "sharing": {
            "solved_pairs": int(len(q_pos)),
            "eligible_pairs": len(eligible),
            "eligible_share": eligible_share,
            "checked_queries": len(checked),
            "checked_pairs": tried,
            "visited_both_ways": hits,
            "reverse_share": reverse_share,
            "shared_share": eligible_share * reverse_share,
        },
    }


def peak_mb() -> float:
    """This process's peak resident memory so far, MB (ru_maxrss: KB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak / 1e3


def run_forecast(
    documents_path,
    splits_path,
    embeddings_path,
    weighting: str,
    settings: Mapping | None,
    n_shards: int,
    threads: int,
    queries_per_role: int,
    seed: int,
    checks: int,
    dataset: str,
    variant: str,
    method: str,
    out_path,
    reuse_pairs=None,
    reuse_documents=None,
    reuse_certificates=None,
    reuse_splits=None,
    relaxed: bool = False,
) -> dict:
    """Measure and forecast one method's neighbour search; write the forecast (JSON).

    ``relaxed``: the search also lists RWMD from its bounds (``run_search``'s relaxed
    tables), so it sets up bounds for every query, the settled ones too, and the sample
    lists them as well.

    ``settings``: the ``evaluation:`` config (it decides the query roles);
    ``queries_per_role``, ``seed``: ``wmd.forecast_queries`` and ``wmd.forecast_seed``;
    ``checks``: co-queries searched to measure the sharing; ``reuse_pairs``,
    ``reuse_documents``, ``reuse_certificates``, ``reuse_splits``: the pairs and
    certificates the search itself takes from another variant (``run_search``'s), which
    the sample takes too.
    """
    from ..distances.wmd.search import read_search_inputs

    for name, value, least in (
        ("shards", n_shards, 1),
        ("threads", threads, 1),
        ("queries per role", queries_per_role, 1),
        ("checks", checks, 0),
    ):
        if value < least:
            raise WmdevalError(f"{out_path}: {name} must be >= {least}, got {value}")
    cpu0 = time.process_time()
    _, inputs, folds, known, floors = read_search_inputs(
        documents_path,
        splits_path,
        embeddings_path,
        weighting,
        settings,
        (reuse_pairs, reuse_documents, reuse_certificates, reuse_splits),
    )
    setup = time.process_time() - cpu0
    roles = query_roles(folds, inputs.empty, settings)
    queries = np.unique(np.concatenate([r.queries for r in roles] or [[]])).astype(np.int64)
    settled = settled_queries(inputs, roles, queries, known, floors)
    # the queries whose bounds the search leaves out of its set-up: none with RWMD's lists
    unbounded = np.zeros(0, dtype=np.int64) if relaxed else settled
    measured = measure(
        inputs,
        folds,
        settings,
        n_shards,
        threads,
        queries_per_role,
        seed,
        checks,
        known,
        floors,
        unbounded,
        relaxed,
        report=f"wmd_forecast {dataset}/{variant}/{method}",
    )
    measured["settled_queries"] = int(len(settled))
    measured["setup_cpu_seconds"] = setup
    measured["peak_mb"] = peak_mb()
    solve_share = 1.0 - measured["bounds_share"]
    model = search_resources(documents_path, n_shards, threads)["mem_mb"]
    forecast = forecast_totals(
        n_queries=measured["queries"],
        solves_per_query=measured["solves_per_query"],
        cpu_per_query=measured["cpu_seconds_per_query"],
        solve_share=solve_share,
        shared_share=measured["sharing"]["shared_share"],
        setup_seconds=setup,
        bounds_setup=measured["bounds_setup"],
        shards=shard_shares(inputs, queries, n_shards, unbounded),
        threads=threads,
        model_mem_mb=model,
        peak_mb=measured["peak_mb"],
    )
    record = {
        "format": FORMAT,
        "dataset": dataset,
        "variant": variant,
        "method": method,
        "weighting": weighting,
        "documents": int(inputs.n),
        "words_per_document": float(inputs.sizes.mean()) if inputs.n else 0.0,
        "threads": threads,
        "search_shards": n_shards,
        "sample_seed": seed,
        "queries_per_role": queries_per_role,
        "note": NOTE,
        "measured": measured,
        "forecast": forecast,
    }
    io.write_text(out_path, json.dumps(record, indent=1, sort_keys=True) + "\n")
    LOG.info(
        "%s/%s/%s: %d of %d queries sampled: %.1f solves and %.3f s CPU per query (bounds "
        "%.0f %%), %.1f %% of solved pairs shared; forecast %.0f solves, %.0f s CPU in %d "
        "shard(s), at most %d min and %d MB each",
        dataset,
        variant,
        method,
        measured["sampled_queries"],
        measured["queries"],
        measured["solves_per_query"],
        measured["cpu_seconds_per_query"],
        100 * measured["bounds_share"],
        100 * measured["sharing"]["shared_share"],
        forecast["solves"],
        forecast["cpu_seconds"],
        n_shards,
        max((s["runtime"] for s in forecast["shards"]), default=0),
        max((s["mem_mb"] for s in forecast["shards"]), default=0),
    )
    return record


# ------------------------------------------------------------------------ the summary table

#: Columns of results/tables/cost_forecast.tsv, in order.
TABLE_COLUMNS = (
    "dataset",
    "variant",
    "method",
    "documents",
    "words_per_document",
    "queries",
    "sampled_queries",
    "solves_per_query",
    "cpu_seconds_per_query",
    "bounds_share",
    "shared_share",
    "forecast_solves",
    "forecast_cpu_seconds",
    "forecast_cpu_hours",
    "shards",
    "max_shard_runtime_min",
    "max_shard_mem_mb",
    "wall_min",
)


def read_forecast(path) -> dict:
    """A forecast file, refusing one that is not a forecast (one line naming it)."""
    try:
        with open(path, encoding="utf-8") as stream:
            record = json.load(stream)
    except OSError as exc:
        raise WmdevalError(f"{path}: cannot read the forecast: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise WmdevalError(f"{path}: not a forecast (invalid JSON: {exc.msg})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise WmdevalError(f"{path}: not a forecast of format {FORMAT}")
    for key in ("dataset", "variant", "method", "measured", "forecast"):
        if key not in record:
            raise WmdevalError(f"{path}: the forecast lacks {key!r}")
    return record


def table_rows(records: Sequence[Mapping]) -> list[dict]:
    """One row per forecast, then a ``total`` row (the sums of queries, solves, CPU
    and shards)."""
    rows = []
    for r in records:
        m, f = r["measured"], r["forecast"]
        rows.append(
            {
                "dataset": r["dataset"],
                "variant": r["variant"],
                "method": r["method"],
                "documents": r["documents"],
                "words_per_document": round(r["words_per_document"], 1),
                "queries": m["queries"],
                "sampled_queries": m["sampled_queries"],
                "solves_per_query": round(m["solves_per_query"], 1),
                "cpu_seconds_per_query": round(m["cpu_seconds_per_query"], 4),
                "bounds_share": round(m["bounds_share"], 3),
                "shared_share": round(m["sharing"]["shared_share"], 3),
                "forecast_solves": int(round(f["solves"])),
                "forecast_cpu_seconds": round(f["cpu_seconds"], 1),
                "forecast_cpu_hours": round(f["cpu_seconds"] / 3600, 3),
                "shards": len(f["shards"]),
                "max_shard_runtime_min": max((s["runtime"] for s in f["shards"]), default=0),
                "max_shard_mem_mb": max((s["mem_mb"] for s in f["shards"]), default=0),
                "wall_min": round(method_wall_seconds(r) / 60, 1),
            }
        )
    total = dict.fromkeys(TABLE_COLUMNS, "")
    total["dataset"] = "total"
    for key in ("queries", "sampled_queries", "forecast_solves", "shards"):
        total[key] = sum(row[key] for row in rows)
    total["forecast_cpu_seconds"] = round(sum(r["forecast"]["cpu_seconds"] for r in records), 1)
    total["forecast_cpu_hours"] = round(
        sum(r["forecast"]["cpu_seconds"] for r in records) / 3600, 3
    )
    total["max_shard_runtime_min"] = max((row["max_shard_runtime_min"] for row in rows), default=0)
    total["max_shard_mem_mb"] = max((row["max_shard_mem_mb"] for row in rows), default=0)
    total["wall_min"] = ""
    return [*rows, total]


def method_wall_seconds(record: Mapping) -> float:
    """The expected wall seconds of one method's search alone: its forecast job and its
    slowest shard after it, each its CPU over the speed-up of its threads (at the
    measured serial share, as the plan's wall time)."""
    m, f = record["measured"], record["forecast"]
    threads = int(record.get("threads", 1))
    first = float(m.get("cpu_seconds", 0.0) + m.get("setup_cpu_seconds", 0.0))
    slowest = max((float(s["cpu_seconds"]) for s in f["shards"]), default=0.0)
    return (first + slowest) / speedup(threads, EXPECTED_SERIAL_SHARE)


def wall_rows(records: Sequence[Mapping], reused: Sequence[str], cores: Sequence[int]) -> list:
    """One row per core count (each once): the searches' wall time on that many cores
    (every method's forecast job, its shards, the job combining them, and a clean search
    in ``reused`` after the original's: :func:`wmdeval.planning.plan.search_jobs`,
    scheduled by :func:`wmdeval.planning.wall.wall_summary`), the critical path in the
    ``method`` column."""
    from .plan import search_jobs
    from .wall import describe_path, wall_summary

    jobs = search_jobs(records, reused)
    cpu_hours = round(sum(r["forecast"]["cpu_seconds"] for r in records) / 3600, 3)
    rows = []
    for summary in wall_summary(jobs, cores):
        row = dict.fromkeys(TABLE_COLUMNS, "")
        row["dataset"] = "searches_wall"
        row["variant"] = f"{summary['cores']} cores"
        row["method"] = describe_path(summary["critical_path"]) or "-"
        row["shards"] = sum(len(r["forecast"]["shards"]) for r in records)
        row["forecast_cpu_hours"] = cpu_hours
        row["wall_min"] = round(summary["wall_seconds"] / 60, 1)
        rows.append(row)
    return rows


def run_forecast_table(
    paths: Sequence, expected: Mapping | None, out_path, cores: Sequence[int] = ()
) -> None:
    """Every forecast of the plan in one TSV (``results/tables/cost_forecast.tsv``).

    ``expected``: ``{"dataset": [...], "variant": [...], "method": [...]}`` pairs of
    datasets in knn mode and their variants, with ``method`` the transport methods'
    slugs; ``paths`` must hold exactly one forecast of each combination listed in
    ``expected["forecasts"]`` ("dataset/variant/method"), else nothing is written;
    ``expected["reused"]``: the clean variant's searches that take the original's pairs
    (they wait for the original's). ``paths`` may be empty (every dataset in full mode:
    no search to forecast): then only the header, the total and the wall rows.

    After the total, a ``searches_wall`` row per number of ``cores`` (:func:`wall_rows`):
    the searches' wall time on that many cores and their critical path. The whole
    plan's wall time (every job) is what a dry run says (``workflow/rules/common.smk``).
    """
    records = [read_forecast(p) for p in paths]
    found = {
        f"{r['dataset']}/{r['variant']}/{r['method']}": p
        for r, p in zip(records, paths, strict=True)
    }
    if len(found) != len(records):
        raise WmdevalError(f"{out_path}: a dataset/variant/method is forecast twice in the inputs")
    if expected is not None:
        wanted = set(expected.get("forecasts", []))
        missing = sorted(wanted - set(found))
        if missing:
            raise WmdevalError(
                f"{out_path}: no forecast of {missing[0]} among the inputs, which this run"
                " plans; refusing to write without it"
            )
        extra = sorted(set(found) - wanted)
        if extra:
            raise WmdevalError(
                f"{found[extra[0]]}: a forecast of {extra[0]}, which this run does not plan"
                " (a stale input?)"
            )
    reused = (expected or {}).get("reused", [])
    rows = table_rows(records) + wall_rows(records, reused, cores)
    lines = ["\t".join(TABLE_COLUMNS)]
    lines += ["\t".join(str(row[c]) for c in TABLE_COLUMNS) for row in rows]
    io.write_text(out_path, "\n".join(lines) + "\n")
    LOG.info(
        "%d forecast(s): %.2f CPU-hours in all",
        len(records),
        sum(r["forecast"]["cpu_seconds"] for r in records) / 3600,
    )


__all__ = [
    "forecast_totals",
    "bounds_setup_seconds",
    "shard_shares",
    "settled_queries",
    "sample_queries",
    "measure",
    "run_forecast",
    "read_forecast",
    "table_rows",
    "method_wall_seconds",
    "wall_rows",
    "run_forecast_table",
]
