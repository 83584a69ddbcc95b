"""Exact k-nearest-neighbour search under WMD with lower-bound pruning (``wmd.mode: knn``).

kNN and wkNN read only the k nearest candidates of each query (the query roles of
:mod:`wmdeval.core.roles`), so most of a full WMD matrix is never read. For each query
document this module

1. computes cheap lower bounds to every document (:func:`~.bounds.lower_bounds`): the
   parts whose cost does not grow with the query's words for every document, the rest
   only for the candidates its visits may reach (LAZY_BOUNDS, :class:`_LazyStream`);
2. for each candidate list the query is ranked among, starts from the distances it
   already solved for its other lists, then takes the candidates in increasing order
   of their best known bound (then position), until that bound exceeds the current k-th
   exact distance by more than the :func:`~.bounds.safety_margin`. A candidate taken
   with its cheap bound only gets the tighter ICT bound
   (:func:`~.bounds.constrained_transfers`, computed for a few candidates ahead at a
   time; a query whose ICT bounds prove almost nothing beyond its cheap bounds, as in
   5 dimensions, stops computing them, see ICT_TRIAL) and waits in the queue again;
   one taken with its ICT bound first meets the dual bounds of the potentials it has
   not seen (:func:`~.bounds.nearest_dual_bound`: the optimal potentials of the query's
   first POTENTIALS exact solves, which bound any other candidate by weak duality; at
   most DUAL_TRIES of them, those solved against the documents whose centroids are
   nearest the candidate's first) and waits again if they raised its bound; last, the
   best of those potentials is raised by supergradient steps on the pair's own dual
   (:func:`~.bounds.dual_ascent`; near the k-th distance the potentials of other pairs
   fall a few per cent short, which these steps close for most candidates outside the
   top k), and the candidate waits again if that raised its bound; only then is it
   solved exactly. The dual bounds reuse the word-cost matrix the candidate's ICT bound
   computed (up to COST_BYTES per query), and both take their matrices from the query's
   :class:`~.bounds.WordCosts` (each candidate word's costs computed once per query, the
   same bits); the exact solve computes its own, as
   :func:`~.solver.wmd_pair` does. So only candidates whose every bound stays within the
   k-th distance of the moment are solved, and the tighter bounds are computed for the
   candidates the cheap bounds could not prune, never for the whole list. Candidates
   tied with the k-th distance (equal tie keys) are solved, never pruned. Every
   candidate left unsolved has a bound above the final k-th distance, so the top k is
   complete; what proves it (the smallest such bound) is stored with the pairs.

Distances are the exact WMD of the full mode, bit for bit: the same solver call
(:func:`~.solver.wmd_pair`, which orients every pair by doc_id), stored
in float64 like the gathered matrices and ranked by their tie key
(:func:`~wmdeval.core.variant.tie_key`), as every ranking is. A pair is solved at most
once per process of a job (its worker processes, ``threads``, each share theirs) and
shared by every fold and role that needs it; a pair another search solved (the clean
variant's search gets the original's, :mod:`.reuse`) is not solved.
A list another search certified for the same query among a superset of its candidates
(``floors``: the clean variant's from the original's certificates) may need no visit at
all: every candidate whose distance is not known has a lower bound of at least the
certificate's, so if that bound is beyond the k-th of the known distances, they are the
list's top k. Any other list of the query starts with the cheap bounds of the pairs the
original left unsolved raised to the certificates that bound them (the original's
certificate of a document's list bounds the document's pair with every member it did
not solve, from either side), so only the rest need tighter bounds or solves (a clean
validation query's fit list is a new random subset of the training list, mostly inside
the original's fit list of the same document when it had one).

The same search serves WRD (weighting "wrd"): the exact solves and the bounds take the
ground cost from the prepared inputs (``WmdInputs.ground_cost``), so nothing here
depends on which of the two it is.

Output, per job (a contiguous range of query documents): a NEIGHBOUR_PAIRS table (every
visited pair: query, candidate, distance) and a NEIGHBOUR_CERTIFICATES table (per query
and candidate list: k and the smallest bound left unsolved). A query's part of them
depends on its own lists alone, whichever queries share its job, its process or its
chunk, so a job's ``threads`` (worker processes, :func:`search_queries`) change no byte.
"""

from __future__ import annotations

import bisect
import heapq
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ...core import io, schemas
from ...core.progress import Progress
from ...core.roles import QueryRole, candidates_key, query_roles
from ...core.variant import scalar_tie_key, tie_key
from .blocks import _log_empty
from .bounds import (
    DIRECT_DIMENSIONS,
    FORK,
    LazyRow,
    LowerBounds,
    WordCosts,
    child_process_start,
    constrained_transfers,
    dual_ascent,
    margin_scale,
    nearest_dual_bound,
    query_potential,
    scaled_margin,
    take_below,
)
from .pairs import document_work, setup_batches
from .reuse import read_reuse
from .solver import WmdInputs, _blas, prepare, solve_pair_costs

LOG = logging.getLogger("wmdeval.distances.wmd")

#: Query documents whose bound rows are computed together, then searched, as one chunk
#: of the job's workers (bounds memory: workers x this x n x 8 B). A row's bits depend on
#: its query alone. Small chunks keep the workers busy to the end of the job, and their
#: rows are cheaper too (20 Newsgroups, 512 queries, one thread: 3.3 ms a row in blocks
#: of 16, 3.5 in blocks of 64, 6.1 in one block of 512).
BOUND_ROWS = 16

#: Near the end of a job its chunks shrink (:func:`_chunks`): a chunk is at most the
#: queries left over this many times the workers, so the last chunks are single queries
#: and the workers finish within about one query's time of each other.
GUIDED = 4

#: Candidates whose ICT bound is computed together, ahead in the visiting order: one
#: cost-matrix call and one ICT call for all of them, at the price of a few computed for
#: candidates the search then never needs.
TIGHTEN_BATCH = 8

#: Candidates of a list sorted by their cheap bounds in its first part (:class:`_Stream`;
#: a lazy stream: by their lower parts, see :class:`_LazyStream`), and how much larger
#: each next part is. A lazy stream computes the whole cheap bound of every candidate of
#: a part it starts, so a part far beyond the visit's stop is wasted work, and each part
#: costs a pass over the list's candidates left. On the 85,635 passages (first shard,
#: one worker) a list's visit needs the whole bounds of about 1,900 candidates: parts
#: of 256 doubling computed 3,193 a query, these 2,844 in as many passes (its streams
#: replayed five times each way: least 7.7 ms a query against 9.3; on 10,704 passages
#: within 0.1 ms of each other), and 2,241 once a part stops at the visit's pruning
#: limit (:class:`_LazyStream`).
STREAM_PART = 1024
STREAM_GROWTH = 1.25
#: The size of a :class:`_LazyStream`'s parts after one has stopped at the visit's
#: pruning limit: what is left to list is little more than the list's certificate.
STREAM_TAIL = 64
#: How many of the smallest lower parts left a :class:`_LazyStream` keeps apart, once
#: partitioned from the list's, for its next parts' thresholds: each threshold is then
#: a selection among these, not a pass over every candidate left. On the 85,635
#: passages a query's lists hold about 37,000 candidates each and it sorts 4.2 parts:
#: a selection among 37,000 took 96 us here, one among 9,000 27 us (and the window's
#: own, once, 111 us).
STREAM_WINDOW = 8 * STREAM_PART

#: Whether a query's cheap bound is computed lazily (:class:`_LazyStream`): for every
#: candidate only its part that costs the same per candidate whatever the query's words
#: (the backward relaxation), the rest (the forward relaxation, the overlap correction,
#: the centroid bound where it may decide) only for the candidates whose part is not
#: already beyond the visit's stop. The same order of visits and the same bits (tested
#: against False).
LAZY_BOUNDS = True

#: Potentials (from a query's first exact solves) its dual bounds use.
POTENTIALS = 128

#: Potentials a candidate's dual bound tries, those solved against documents nearest
#: to it first (by centroid): on 20 Newsgroups (5 and 50 dimensions) the first few
#: prove almost every candidate that all 128 prove, and a candidate that is solved in
#: the end pays a pass over its word costs for at most this many (64: 99.8 exact solves
#: per query at 50 dimensions against 99.6 with all 128, 16: 103.6).
DUAL_TRIES = 64

#: ICT bounds a query computes before it judges them: if fewer than one in ICT_WORTH
#: proved a candidate beyond the k-th distance that its cheap bound did not, the query's
#: other candidates go to the dual bounds without one. In 5 dimensions (PCA WMD) ICT is
#: barely above RWMD (0.72 against 0.70 of the WMD near the k-th on 20 Newsgroups); with
#: the dual bounds behind it, it proved fewer than one in 16 at 50 dimensions too
#: (there, without it after the trial: 99.8 solves per query against 98.2, less CPU).
ICT_TRIAL = 64
ICT_WORTH = 16

#: Bytes of word-cost matrices a query keeps from its ICT bounds for their candidates'
#: dual bounds (per thread: one query at a time). Over it, the matrices of candidates
#: already proven beyond the k-th distance are dropped first; a candidate whose matrix
#: was not kept gets it computed again.
COST_BYTES = 32 << 20


@dataclass
class SearchStats:
    """What a search did: exact solves, pairs read, and where the time went."""

    queries: int = 0
    solves: int = 0  # exact WMD solves
    reused: int = 0  # distances taken from pairs solved before (`known`), not solved
    floored: int = 0  # (query, list) tasks settled by a floor (`floors`), not searched
    # (query, candidate) cheap bounds raised by a candidate floor (`floors.candidates`)
    floored_candidates: int = 0
    pairs: int = 0  # (query, candidate) pairs whose exact distance was used
    candidates: int = 0  # (query, candidate) pairs of every role, i.e. without pruning
    tight: int = 0  # (query, candidate) ICT bounds computed
    duals: int = 0  # (query, candidate) dual bounds computed
    ascents: int = 0  # dual ascents computed (query, candidate; again after new potentials)
    # the cheap bounds of every candidate, their set-up included (CPU of the threads)
    bound_seconds: float = 0.0
    # (query, candidate) full cheap bounds computed (LAZY_BOUNDS: those the visits reached)
    full_bounds: int = 0
    # the bounds' set-up (LowerBounds for the job's queries): CPU of the threads building
    # it, under the search's one-thread BLAS limit, as every job pays it; and its wall time
    setup_seconds: float = 0.0
    setup_wall_seconds: float = 0.0
    # of setup_seconds, the CPU of the processes it was built in (threads > 1)
    setup_worker_seconds: float = 0.0
    # ICT and dual bounds, dual ascents (CPU of the threads computing them)
    tight_seconds: float = 0.0
    search_seconds: float = 0.0
    # worker processes (threads > 1): exact solves of a pair that another worker of the
    # job solved too (one process's queries share their solves, workers do not), and
    # the CPU of the job's child processes: the set-up's and the workers' on their
    # chunks (the rest of the job's CPU is this process's: reading the set-up's parts
    # together, handing out chunks, merging, the tables)
    duplicates: int = 0
    worker_seconds: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


@dataclass(frozen=True)
class _Task:
    key: str
    candidates: np.ndarray  # sorted positions, without empty documents
    member: np.ndarray  # bool per document: one of `candidates`
    k: int


def query_tasks(
    roles: list[QueryRole], empty: np.ndarray, queries: np.ndarray
) -> dict[int, list[_Task]]:
    """Per query position of ``queries``: the candidate lists it is ranked among, each
    once (the largest k where two roles share a list)."""
    wanted = set(int(q) for q in queries)
    by_query: dict[int, dict[str, _Task]] = {}
    for role in roles:
        key = candidates_key(role.candidates)
        usable = role.candidates[~empty[role.candidates]]
        member = np.zeros(len(empty), dtype=bool)
        member[usable] = True
        for q in role.queries.tolist():
            if q not in wanted:
                continue
            tasks = by_query.setdefault(q, {})
            known = tasks.get(key)
            if known is None or known.k < role.k:
                tasks[key] = _Task(key, usable, member, max(role.k, known.k if known else 0))
    return {q: list(tasks.values()) for q, tasks in sorted(by_query.items())}


def _beyond(scale: float, bound: float, kth: float) -> bool:
    """Whether a candidate of lower bound ``bound`` is proven farther than the current
    k-th distance, of tie key ``kth`` (ties with it are solved, never pruned). The margin
    is far wider than the tie key's rounding (TIE_BITS), so a candidate pruned here has
    a key above the k-th's: it cannot tie. ``scale``: :func:`~.bounds.margin_scale`."""
    return bound > _limit(scale, kth)


def _limit(scale: float, kth: float) -> float:
    """The bound above which a candidate is proven beyond a k-th distance of key ``kth``:
    ``kth`` plus its :func:`~.bounds.safety_margin`, whose absolute part ``scale`` the
    search computes once (per candidate it was a pass over the vocabulary's norms)."""
    return kth + scaled_margin(scale, kth)


def _key(distance: float) -> float:
    """The distance as every ranking compares it (:func:`~wmdeval.core.variant.tie_key`)."""
    return scalar_tie_key(float(distance))


def _known_lookup(known: Mapping[int, float], pair: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(found, distance) per pair id of ``known``, in one call where it can."""
    if hasattr(known, "lookup"):
        return known.lookup(pair)
    got = [known.get(p) for p in pair.tolist()]
    found = np.array([g is not None for g in got], dtype=bool)
    return found, np.array([0.0 if g is None else g for g in got])


def _floor_taken(
    inputs: WmdInputs,
    known: Mapping[int, float],
    scale: float,
    q: int,
    task: _Task,
    floor: float,
    used: Mapping[int, float],
) -> list[tuple[int, float]] | None:
    """The known distances of the list not in ``used`` if, with ``used``'s, they are its
    top k under ``floor`` (see ``floors`` in :func:`search_queries`); else None."""
    cands = task.candidates
    pair = np.minimum(cands, q) * inputs.n + np.maximum(cands, q)
    found, values = _known_lookup(known, pair)
    fresh = [
        (c, d)
        for c, d in zip(cands[found].tolist(), values[found].tolist(), strict=True)
        if c not in used
    ]
    mine = [d for c, d in used.items() if task.member[c]]
    if len(fresh) + len(mine) < task.k:
        return None
    keys = tie_key(np.array([d for _, d in fresh] + mine, dtype=np.float64))
    if not _beyond(scale, floor, float(np.sort(keys)[task.k - 1])):
        return None
    return fresh


def settled_lists(
    inputs: WmdInputs,
    tasks: Mapping[int, list[_Task]],
    known: Mapping[int, float] | None,
    floors: Mapping[tuple[int, str], float] | None,
) -> dict[int, list[list[tuple[int, float]]]]:
    """The queries of ``tasks`` whose every list is settled by its floor, taken in turn as
    :func:`search_queries` takes them: query -> per list, the known distances it takes.
    Such a query needs no bound: the search leaves it out of its bounds' set-up and its
    cheap bounds (the clean variant's test queries, all of a variant that dropped
    nothing). Depends on each query's own lists, floors and known pairs alone."""
    if not floors or not known:
        return {}
    scale = margin_scale(inputs)
    settled = {}
    for q, mine in tasks.items():
        if inputs.empty[q]:
            continue  # no list to take; the search certifies it without a bound
        used: dict[int, float] = {}
        taken = []
        for task in mine:
            floor = floors.get((q, task.key))
            fresh = (
                None if floor is None else _floor_taken(inputs, known, scale, q, task, floor, used)
            )
            if fresh is None:
                break
            used.update(fresh)
            taken.append(fresh)
        else:
            settled[q] = taken
    return settled


def search_queries(
    inputs: WmdInputs,
    tasks: Mapping[int, list[_Task]],
    threads: int = 1,
    stats: SearchStats | None = None,
    known: Mapping[int, float] | None = None,
    floors: Mapping[tuple[int, str], float] | None = None,
    relaxed: bool = False,
    report: str | None = "wmd search",
) -> tuple[pa.Table, ...]:
    """Exact top-k of every query of ``tasks`` (positions into ``inputs``, documents in
    their own order). Returns (NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES) tables over
    doc_ids, sorted by query then candidate; they do not depend on ``threads``.

    ``threads``: the job's workers. The bounds' set-up runs in that many forked processes
    (where there is fork; else threads); the queries then run in that many worker
    processes (:func:`_run_workers`), each taking
    the next small chunk of queries when it finishes one, one BLAS thread each (the
    search's Python loop holds the interpreter's lock, so threads of one process could
    not run it in parallel). A query's result depends on its own lists alone, so the
    tables are the same bytes for any number of workers; only the solves differ: a pair
    two queries need is solved once per process that needs it (SearchStats.duplicates).
    One worker, or a job of one chunk, runs in this process.

    ``relaxed``: also the same two tables for plain RWMD as a method (returned third and
    fourth), from the cheap bounds the search computes anyway (:func:`relaxed_lists`):
    every query then gets its bound rows, a settled one too.

    ``known``: exact distances solved before (pair id min * n + max over positions ->
    the distance :func:`~.solver.solve_pair` gives, e.g. the original variant's,
    :mod:`.reuse`), always taken instead of a solve, and without a potential: a query's
    potentials come from the pairs it solves that ``known`` lacks. A known candidate is
    taken when the visiting order reaches its cheap bound, without the tighter bounds
    (its distance is the tightest). Whether a pair is known does not depend on the
    other queries of the job, so neither do the pairs a query visits; they may differ
    from a search without ``known`` (other potentials, other dual bounds), never the
    distances of the pairs both visit, nor the top k.

    ``floors``: (query position, candidate list key) -> a lower bound of every candidate
    of that list whose distance to the query is not in ``known`` (:mod:`.reuse`: the
    original variant's certificate of a superset list). Before visiting such a list,
    the query takes the top k of its known distances (``known`` and those it used for
    its earlier lists); if there are k and the floor passes the search's own stopping
    test against their k-th, every known candidate of the list is taken (no solve, no
    bound) and the floor is its certificate; else the list is searched as without it.
    The test reads only the query's own known distances, so it does not depend on the
    other queries of the job either. A list no floor settles is searched with the cheap
    bounds of its candidates raised to ``floors.candidates`` where it has them
    (:class:`~.reuse.CandidateFloors`: an original certificate of document d on list L
    bounds every pair of d with a member of L that the original left unsolved, so for
    the query as d and as a member alike; a known pair keeps its own bound, its
    distance is taken).

    ``report``: the subject of the progress lines in the log (:mod:`wmdeval.core.progress`:
    queries done of all, their rate, the time left, the exact solves so far and per
    query), or None for none (a search that is one step of a caller's own loop).
    """
    if threads < 1:
        raise ValueError("threads must be >= 1")
    stats = stats if stats is not None else SearchStats()
    started = time.perf_counter()
    cpu0 = time.process_time()
    job = _Search(inputs, tasks, stats, known, floors, relaxed)
    count = len(job.queries)
    if report is not None:
        LOG.info("%s: %d queries; setting up their lower bounds", report, count)
    with _blas().limit(limits=1, user_api="blas"):
        if threads > 1 and FORK:
            # the job's workers share the set-up too, which else left all but one idle
            # (20 Newsgroups, every query, 2 threads: 99 s on one thread, 58 s shared),
            # as forked processes: threads ran it at 1.6x on 2 (the lock held between the
            # kernels), 19.5 % of the job's CPU then outside its workers (241 queries)
            setup = job.set_up(None, processes=threads)
        elif threads > 1:
            # shut down (its threads gone) before the workers are forked
            with ThreadPoolExecutor(threads) as pool:
                setup = job.set_up(pool)
        else:
            setup = job.set_up(None)
        if report is not None:
            LOG.info("%s: lower bounds set up in %.1f s CPU; searching", report, setup)
        # counted from here: the set-up above is no query's, and would skew the rate
        solves0 = stats.solves
        progress = Progress(
            LOG if report is not None else None,
            report or "",
            count,
            "queries",
            detail=lambda done: _solves_text(stats.solves - solves0, done),
        )
        chunks = _chunks(count, threads)
        workers = min(threads, len(chunks))
        if workers > 1 and FORK:
            _run_workers(job, chunks, workers, progress)
        else:
            for r0, r1 in chunks:
                job.chunk(r0, r1, progress)
            workers = 1
    progress.finish()
    if workers > 1 and report is not None:
        LOG.info(
            "%s: %d worker processes, %s exact solves of which %s of pairs another worker "
            "solved too; workers' CPU %.1f s, this process's %.1f s",
            report,
            workers,
            f"{stats.solves - solves0:,}",
            f"{stats.duplicates:,}",
            stats.worker_seconds,
            time.process_time() - cpu0,
        )
    stats.queries += count
    stats.search_seconds += time.perf_counter() - started
    if relaxed:
        return (*_tables(inputs, job.results), *_tables(inputs, job.relaxed_results))
    return _tables(inputs, job.results)


def _chunks(count: int, workers: int) -> list[tuple[int, int]]:
    """The runs [r0, r1) of a job's ``count`` queries that its ``workers`` take in turn:
    BOUND_ROWS queries each, fewer near the end (the queries left over GUIDED times the
    workers, at least one), so the workers finish near together however the queries'
    costs vary, while the early chunks stay long enough for their bound rows."""
    chunks, r0 = [], 0
    while r0 < count:
        size = min(BOUND_ROWS, max(1, -(-(count - r0) // (GUIDED * workers))))
        chunks.append((r0, min(r0 + size, count)))
        r0 += size
    return chunks


class _QueryState:
    """What one query's search knows, over all its candidate lists: the exact distances it
    took, its candidates' best bounds, the potentials of its first solves, the word costs
    its bounds computed, and its counts of bound work (added to the stats at its end)."""

    __slots__ = (
        "q",
        "bound",
        "used",
        "tight",
        "potentials",
        "held",
        "sources",
        "seen",
        "starts",
        "costs",
        "cost_bytes",
        "word_costs",
        "ict_judged",
        "ict_proved",
        "duals",
        "ascents",
        "dual_seconds",
    )

    def __init__(self, q: int, bound: np.ndarray | None, word_costs: WordCosts, dimensions: int):
        self.q = q
        # the cheap bound per document (None: the query is settled by its floors, or empty)
        self.bound = bound
        self.used: dict[int, float] = {}  # candidate -> exact distance
        self.tight: dict[int, float] = {}  # candidate -> its best bound
        # potentials on q's words from its first solves (potentials[:held] are filled),
        # each with the centroid of the document it was solved against
        self.potentials = np.zeros((POTENTIALS, len(word_costs.words)))
        self.held = 0
        self.sources = np.zeros((POTENTIALS, dimensions))
        # per candidate: how many potentials its bound in `tight` has seen, and (its best
        # dual bound, the potential that gave it) until its dual ascent
        self.seen: dict[int, int] = {}
        self.starts: dict[int, tuple[float, int]] = {}
        # candidate -> its word costs, from its ICT bound or its first dual bound; and the
        # bytes they hold (at most about COST_BYTES)
        self.costs: dict[int, np.ndarray] = {}
        self.cost_bytes = 0
        # the query's costs to its candidates' words, for the matrices not in `costs`
        self.word_costs = word_costs
        # ICT bounds computed under a finite limit, and of them those that proved their
        # candidate beyond it where its cheap bound did not (ICT_TRIAL)
        self.ict_judged = 0
        self.ict_proved = 0
        # dual bounds and dual ascents computed, and their CPU seconds
        self.duals = 0
        self.ascents = 0
        self.dual_seconds = 0.0

    def ict_proves_nothing(self) -> bool:
        """Whether the query's ICT bounds, judged after ICT_TRIAL of them, proved fewer
        than one in ICT_WORTH of their candidates beyond the k-th distance that their
        cheap bounds did not: its other candidates then keep their cheap bounds."""
        return self.ict_judged >= ICT_TRIAL and self.ict_proved * ICT_WORTH < self.ict_judged

    def keep_costs(self, fresh: Mapping[int, np.ndarray], limit: float) -> None:
        """Keep the word costs ``fresh`` (candidate -> matrix) that a dual bound may still
        need at the pruning limit ``limit``, within COST_BYTES."""
        # a candidate beyond the k-th distance of the moment needs its matrix only if
        # another of the query's lists takes it, so those go first, then the newest
        costs, tight, held = self.costs, self.tight, self.cost_bytes
        for c, cost in fresh.items():
            if tight[c] <= limit:
                costs[c] = cost
                held += cost.nbytes
        if held > COST_BYTES:
            for c in [c for c in costs if tight[c] > limit]:
                held -= costs.pop(c).nbytes
        while held > COST_BYTES:
            held -= costs.popitem()[1].nbytes
        self.cost_bytes = held

    def drop_costs(self, c: int) -> None:
        """Forget candidate ``c``'s word costs, if kept (it is solved: no bound needs them)."""
        if c in self.costs:
            self.cost_bytes -= self.costs.pop(c).nbytes

    def keep_potential(self, potential: np.ndarray, source: np.ndarray) -> bool:
        """Hold a potential from a solve against a document of centroid ``source``;
        returns whether the query now holds POTENTIALS, all it collects."""
        self.potentials[self.held] = potential
        self.sources[self.held] = source
        self.held += 1
        return self.held == POTENTIALS


class _Stream:
    """A candidate list in increasing cheap bound, then position: the order of
    ``candidates[np.argsort(values, kind="stable")]``, sorted a part at a time as the
    visit reaches it (``order`` and ``loose``, their bounds, grow by :meth:`has`). A
    visit stops near the k-th distance, after a few hundred of tens of thousands of
    candidates: sorting and listing all of them cost more than the rest of its
    bookkeeping, and grew with the corpus. Each part is every candidate left whose bound
    is at most a threshold (the part's size-th smallest), sorted stably among
    themselves in position order: the whole order's next entries, exactly."""

    __slots__ = ("order", "loose", "_candidates", "_values", "_size")

    def __init__(self, candidates: np.ndarray, values: np.ndarray):
        self.order: list[int] = []
        self.loose: list[float] = []
        self._candidates = candidates  # those not yet in `order`, in position order
        self._values = values
        self._size = STREAM_PART

    def has(self, at: int, limit: float = np.inf) -> bool:
        """Whether the stream has an ``at``-th candidate (sorting the next parts as
        far as that needs; ``limit``, the visit's pruning limit, is :class:`_LazyStream`'s
        alone)."""
        while at >= len(self.order):
            if not len(self._candidates):
                return False
            self._sort_part()
        return True

    def _sort_part(self) -> None:
        candidates, values, size = self._candidates, self._values, self._size
        self._size = int(size * STREAM_GROWTH)
        if size < len(values):
            threshold = np.partition(values, size - 1)[size - 1]
            if not np.isnan(threshold):
                inside = values <= threshold
                part = np.flatnonzero(inside)
                part = part[np.argsort(values[part], kind="stable")]
                self.order.extend(candidates[part].tolist())
                self.loose.extend(values[part].tolist())
                outside = ~inside
                self._candidates, self._values = candidates[outside], values[outside]
                return
        # the rest at once (NaN last, as argsort puts it)
        part = np.argsort(values, kind="stable")
        self.order.extend(candidates[part].tolist())
        self.loose.extend(values[part].tolist())
        self._candidates, self._values = candidates[:0], values[:0]


class _LazyStream:
    """:class:`_Stream`'s order (increasing cheap bound, then position) from a
    :class:`~.bounds.LazyRow`, whose cheap bound is computed only for the candidates the
    visit reaches: a part is every candidate left whose lower part (``row.cheap``) is at
    most a threshold, their cheap bounds computed and pooled with those computed before
    but not yet listed; the pool's candidates whose cheap bound is at most the threshold
    are then listed, sorted stably in position order, the rest stay pooled.

    The threshold is the part's size-th smallest lower part left, unless the visit's
    pruning limit (:meth:`has`' ``limit``, finite once the list has k distances) is
    below it and above the last part's threshold: the visit never takes a candidate
    beyond the limit, which only falls, so that part computes the cheap bounds of those
    it may take alone, and the parts after it (the list's first candidate beyond the
    limit, its certificate) are small, each up to the smallest bound pooled, where one
    is known. On the 85,635 passages a query computed 2,844 cheap bounds with the sizes
    alone, 2,241 with the limit.

    Why this is the whole order's next entries, exactly, for any thresholds that
    increase: the lower part is at most the cheap bound of every candidate
    (:meth:`~.bounds.LowerBounds.cheap_rows`), so every candidate whose cheap bound is
    at most the threshold has been computed by then (a candidate not computed has a
    lower part, hence a cheap bound, above it); the pool then holds every candidate not
    yet listed whose bound is at most the threshold, and lists them in the stable
    order. The thresholds increase, so everything listed later has a bound above every
    earlier threshold, hence above (never tied with) every entry listed before: the
    lists' concatenation is the stable sort of all the bounds. The last part (no
    candidate left to compute, or the lower parts' size-th smallest is NaN) lists the
    whole pool, NaN last, as argsort puts it. So a visit that stops after a few hundred
    candidates computes the cheap bounds of those whose lower part is below its stop
    (and of its last part), not of the whole list."""

    __slots__ = (
        "order",
        "loose",
        "_row",
        "_candidates",
        "_lower",
        "_pool",
        "_values",
        "_size",
        "_threshold",
        "_tail",
        "_count",
        "_ranked",
        "_base",
    )

    def __init__(self, candidates: np.ndarray, row: LazyRow):
        self.order: list[int] = []
        self.loose: list[float] = []
        self._row = row
        # not yet computed, in position order, and their lower parts (own copies: each
        # part packs those left to the front, in place)
        self._candidates = candidates.copy()
        self._lower = row.cheap[candidates]
        # computed, not yet listed, in position order, and their cheap bounds
        self._pool = candidates[:0]
        self._values = np.zeros(0)
        self._size = STREAM_PART
        # the last part's threshold, and whether a part has stopped at the limit
        self._threshold = -np.inf
        self._tail = False
        # the lower parts of ranks _base, _base + 1, ... among the list's (``_count``
        # of them; in any order), for the thresholds (:meth:`_smallest`)
        self._count = len(candidates)
        self._ranked = self._lower[:0]
        self._base = 0

    def has(self, at: int, limit: float = np.inf) -> bool:
        """Whether the stream has an ``at``-th candidate (computing and sorting the next
        parts as far as that needs); ``limit``: the visit's pruning limit."""
        while at >= len(self.order):
            if not len(self._candidates) and not len(self._pool):
                return False
            self._sort_part(limit)
        return True

    def _sort_part(self, limit: float) -> None:
        candidates, lower, size = self._candidates, self._lower, self._size
        threshold, kth = np.inf, np.nan  # (NaN: no rank selected, equal to nothing)
        if size < len(lower):
            kth = self._smallest(size - 1)
            if not np.isnan(kth):
                threshold = kth
        if self._threshold < limit < threshold:
            threshold = limit  # (limit is never NaN)
            self._tail = True
        elif self._tail and len(self._values):
            pooled = self._values.min()  # NaN if any is: then not used
            if pooled < threshold:
                threshold = pooled
        if threshold == kth:
            # everything up to the rank of kth is taken now: no later part asks for it
            self._forget_through(size - 1)
        self._size = STREAM_TAIL if self._tail else int(size * STREAM_GROWTH)
        self._threshold = threshold
        # an infinite threshold takes the rest at once, NaN too
        fresh = np.empty(len(candidates), dtype=candidates.dtype)
        taken, left = take_below(candidates, lower, threshold, fresh)
        fresh = fresh[:taken]
        self._candidates, self._lower = candidates[:left], lower[:left]
        pool = np.concatenate([self._pool, fresh])
        values = np.concatenate([self._values, self._row.values(fresh)])
        by_position = np.argsort(pool, kind="stable")
        pool, values = pool[by_position], values[by_position]
        if len(self._candidates):
            listed = values <= threshold
            part = np.flatnonzero(listed)
            self._pool, self._values = pool[~listed], values[~listed]
        else:  # nothing left to compute: the whole pool, NaN last
            part = np.arange(len(pool))
            self._pool, self._values = pool[:0], values[:0]
        part = part[np.argsort(values[part], kind="stable")]
        self.order.extend(pool[part].tolist())
        self.loose.extend(values[part].tolist())

    def _smallest(self, i: int) -> float:
        """The (i+1)-th smallest lower part left, ``np.partition(lower, i)[i]``.

        Every part takes all the candidates whose lower part is at most its threshold, and
        the thresholds increase, so those left are those above the last threshold (and
        NaN, which sorts last): the (i+1)-th smallest left is the list's smallest of rank
        (taken so far) + i. ``_ranked`` holds the lower parts of ranks ``_base`` on (a
        window of STREAM_WINDOW, partitioned from those left when a rank falls outside
        it), and a partition of the window in place puts that rank's value at its place:
        a selection among a few thousand, where one among those left was a pass over
        tens of thousands."""
        at = self._window_position(i)
        if not 0 <= at < len(self._ranked):
            self._base = self._count - len(self._lower)
            last = i + STREAM_WINDOW - 1
            if last >= len(self._lower) - 1:  # a window of every one left
                self._ranked = np.partition(self._lower, i)
                return self._ranked[i]
            self._ranked = np.partition(self._lower, last)[: last + 1]
            at = i
        self._ranked.partition(at)
        return self._ranked[at]

    def _forget_through(self, i: int) -> None:
        """Drop the window's ranks up to that of :meth:`_smallest`'s (i+1)-th smallest,
        whose threshold this part takes, value and ties: every later rank asked for is
        beyond it. The window was just partitioned there."""
        at = self._window_position(i)
        self._ranked = self._ranked[at + 1 :]
        self._base += at + 1

    def _window_position(self, i: int) -> int:
        """Where in ``_ranked`` the (i+1)-th smallest lower part left has its rank: the
        candidates taken so far, plus i, less the window's first rank."""
        return self._count - len(self._lower) + i - self._base


class _Visit:
    """A query's visit of one candidate list: its k nearest so far and the pruning limit
    they set, the list's candidates in increasing cheap bound (the stream, taken up to
    ``at``), and those taken that wait again with a tighter bound (a heap)."""

    __slots__ = ("k", "scale", "best", "limit", "stream", "at", "waiting")

    def __init__(self, task: _Task, query: _QueryState, scale: float):
        self.k = task.k
        self.scale = scale
        # (tie key, position) of the k nearest so far, ordered as rank_neighbours orders
        # them; the distances the query already knows come first (its own, so the result
        # never depends on which other queries ran before it)
        best = sorted((_key(d), c) for c, d in query.used.items() if task.member[c])[: task.k]
        self.best = best
        # the bound beyond which a candidate is proven farther than the k-th (inf until
        # there are k), computed again only when the k-th changes
        self.limit = _limit(scale, best[-1][0]) if len(best) == task.k else np.inf
        bound = query.bound
        self.stream = (
            _LazyStream(task.candidates, bound)
            if isinstance(bound, LazyRow)
            else _Stream(task.candidates, bound[task.candidates])
        )
        self.at = 0  # stream.order[:at] are taken
        self.waiting: list[tuple[float, int]] = []  # (tight bound, candidate), a heap

    def next_candidate(self, used: Mapping[int, float]) -> tuple[float, int, bool] | None:
        """(bound, candidate, whether it is the heap's head) of the smallest known bound
        (then position), the stream's candidates in ``used`` skipped; None when none is
        left. The heap's bounds are tight, the stream's lower bounds of their tight ones."""
        stream, at = self.stream, self.at
        order = stream.order
        # (`at < len(order)` first: has() sorts a part only past what is sorted)
        limit = self.limit
        while (at < len(order) or stream.has(at, limit)) and order[at] in used:
            at += 1  # already among `best` if it belongs there
        self.at = at
        waiting = self.waiting
        if at >= len(order) and not stream.has(at, limit):
            return (*waiting[0], True) if waiting else None
        head = (stream.loose[at], order[at])
        if waiting and waiting[0] <= head:
            return (*waiting[0], True)
        return (*head, False)

    def admit(self, c: int, distance: float) -> None:
        """Put candidate ``c`` at its exact ``distance`` among the k nearest if it belongs
        there; a new k-th moves the pruning limit (:func:`_limit`)."""
        best, k, ranked = self.best, self.k, (_key(distance), c)
        if len(best) < k or ranked < best[-1]:
            bisect.insort(best, ranked)
            del best[k:]
            if len(best) == k:
                self.limit = _limit(self.scale, best[-1][0])


class _Search:
    """A search job's state: its inputs and query lists, the bounds' tables, what its
    queries have solved and the potentials they left for each other. :meth:`chunk`
    searches a run of its queries, in this process or in a worker process, which has a
    copy of it (forked, see :func:`_run_workers`)."""

    def __init__(
        self,
        inputs: WmdInputs,
        tasks: Mapping[int, list[_Task]],
        stats: SearchStats,
        known: Mapping[int, float] | None,
        floors: Mapping[tuple[int, str], float] | None,
        relaxed: bool,
    ):
        self.inputs = inputs
        self.tasks = tasks
        self.stats = stats
        self.scale = margin_scale(inputs)
        self.preloaded = known if known is not None else {}
        self.has_known = len(self.preloaded) > 0
        self.floors = floors
        self.relaxed = relaxed
        self.queries = np.array(sorted(tasks), dtype=np.int64)
        # pair id -> stored distance, shared by the queries of this process
        self.solved: dict[int, float] = {}
        # in a worker: the pair ids it solved first, since it last reported them
        self.fresh: list[int] | None = None
        self.results: dict[int, tuple[dict[int, float], list[tuple[str, int, float]]]] = {}
        self.relaxed_results: dict = {}
        # Potentials a query will want, left by the query that solved the pair first:
        # query -> {other document -> the potential on the query's words (None: no
        # problem was solved)}. A query's potentials, hence the pairs it visits, so never
        # depend on the other queries of its job; only queries still collecting
        # potentials get them.
        self.left_for: dict[int, dict[int, np.ndarray | None]] = {}
        self.collecting = np.zeros(inputs.n, dtype=bool)
        self.collecting[self.queries] = True
        # queries whose every list its floor settles need no bound: left out of the
        # set-up (its work grows with the queries' words) and of the cheap bounds
        self.settled = settled_lists(inputs, tasks, self.preloaded, floors)
        self.single = getattr(floors, "candidates", None)  # reuse.CandidateFloors
        self.bounded = np.array(
            [q for q in self.queries.tolist() if q not in self.settled], dtype=np.int64
        )
        self.needs = np.isin(self.queries, self.bounded)
        if relaxed:  # RWMD's lists need every query's rows
            self.bounded, self.needs = self.queries, np.ones(len(self.queries), dtype=bool)
        self.lower: LowerBounds | None = None
        self.means = np.zeros((0, 0))
        # with lazy bounds: every candidate of the bounded queries' lists (set_up)
        self.reach: np.ndarray | None = None
        # lazy cheap bounds (LAZY_BOUNDS), except where every candidate's is read: RWMD's
        # lists (relaxed), the candidates' floors (they raise whole rows, and count them)
        self.lazy = LAZY_BOUNDS and not relaxed and self.single is None

    def set_up(self, pool: ThreadPoolExecutor | None, processes: int = 1) -> float:
        """Build the bounds' tables of the job's queries (``pool``'s threads, or
        ``processes`` forked processes, sharing the work); returns their CPU seconds,
        also added to the stats."""
        c0, wall0 = time.thread_time(), time.perf_counter()
        self.lower = LowerBounds(self.inputs, self.bounded, pool=pool, processes=processes)
        helpers = self.lower.timing.get("worker_seconds", 0.0)
        setup = time.thread_time() - c0 + helpers
        if self.lower.timing.get("worker_processes"):  # not in this process's clock
            self.stats.setup_worker_seconds += helpers
            self.stats.worker_seconds += helpers
        self.stats.setup_seconds += setup
        self.stats.setup_wall_seconds += time.perf_counter() - wall0
        self.stats.bound_seconds += setup
        self.means = np.nan_to_num(self.lower.means)
        if self.lazy:  # the documents a visit may reach: its cheap rows need no other
            lists = {task.key: task.member for q in self.bounded.tolist() for task in self.tasks[q]}
            reach = np.zeros(self.inputs.n, dtype=bool)
            for member in lists.values():  # each list once (its queries share it)
                reach |= member
            self.reach = np.flatnonzero(reach)
        return setup

    def chunk(self, r0: int, r1: int, progress: Progress | None = None) -> None:
        """Search queries ``self.queries[r0:r1]`` into ``results``: the cheap bound rows,
        BOUND_ROWS at a time (a row's bits depend on its own query alone, so the blocks
        change none), then each query's search. The queries before ``r0`` were handed
        out before this chunk (in this process or another), so none of them collects
        potentials here any more."""
        if r0 < len(self.queries):
            first = int(self.queries[r0])
            self.collecting[:first] = False
            for q in [q for q in self.left_for if q < first]:
                del self.left_for[q]
        for b0 in range(r0, r1, BOUND_ROWS):
            b1 = min(b0 + BOUND_ROWS, r1)
            block, wanted = self.queries[b0:b1], self.needs[b0:b1]
            c0 = time.thread_time()
            at = np.searchsorted(self.bounded, block[wanted])
            if self.lazy:
                # the lower parts now, each query's cheap bounds as its visits reach them
                cheap = self.lower.cheap_rows(at, self.reach)
                got = [
                    LazyRow(self.lower, a, row) for a, row in zip(at.tolist(), cheap, strict=True)
                ]
            else:
                got = self.lower.rows(at, plain=self.relaxed)
            if self.relaxed:
                got, plain = got
                for q, row in zip(block.tolist(), plain, strict=True):
                    self.relaxed_results[q] = relaxed_lists(self.inputs, self.tasks[q], row)
            seconds = time.thread_time() - c0
            with self.stats.lock:
                self.stats.bound_seconds += seconds
            rows = iter(got)
            for q, want in zip(block.tolist(), wanted.tolist(), strict=True):
                row = next(rows) if want else None
                # a settled query has no use for its row
                self.one_query(q, None if q in self.settled else row)
                if progress is not None:
                    progress.advance()

    def distance(self, q: int, c: int, potential: bool) -> tuple[float, np.ndarray | None]:
        """The pair's distance, and with ``potential`` one on q's words from its solve
        (None if no transport problem was solved)."""
        inputs, stats, solved = self.inputs, self.stats, self.solved
        pair = min(q, c) * inputs.n + max(q, c)
        taken = self.preloaded.get(pair)
        if taken is not None:
            # solved before this job, whoever asks: its distance, never a potential
            with stats.lock:
                stats.reused += 1
            return taken, None
        known = solved.get(pair)
        if known is not None:
            if not potential:
                return known, None
            mine = self.left_for.get(q, {})
            if c in mine:
                return known, mine.pop(c)
            # solved by a query that did not leave it: again
        if q == c:
            solved[pair] = 0.0  # the diagonal of a gathered matrix
            return 0.0, None
        # wmd_pair's value (oriented by doc_id, as in the blocks), with its duals and the
        # word costs they were solved with (the potentials' c-transforms reuse them)
        known, duals, costs = solve_pair_costs(inputs, q, c)
        with stats.lock:
            stats.solves += 1
        q_source = inputs.doc_ids[q] < inputs.doc_ids[c]
        if duals is not None:
            keep_source, keep_target, cost = costs
            q_costs, c_costs = (keep_source, cost), (keep_target, cost.T)
            if not q_source:
                q_costs, c_costs = (keep_target, cost.T), (keep_source, cost)
        if pair not in solved:
            if self.fresh is not None:
                self.fresh.append(pair)
            if self.collecting[c]:
                self.left_for.setdefault(c, {})[q] = (
                    None
                    if duals is None
                    else query_potential(inputs, c, duals[0 if q_source else 1], c_costs)
                )
        solved[pair] = known
        if duals is None or not potential:
            return known, None
        return known, query_potential(inputs, q, duals[1 if q_source else 0], q_costs)

    def one_query(self, q: int, bound: np.ndarray | None) -> None:
        """Search query ``q`` from its cheap bound row ``bound`` (None: settled by its
        floors, or empty) into ``results``: the visit of each of its candidate lists."""
        if bound is not None and self.single is not None:
            bound = self._floored(q, bound)
        query = _QueryState(q, bound, WordCosts(self.inputs, q), self.means.shape[1])
        tasks = self.tasks[q]
        certificates = [
            (task.key, task.k, self._certify(query, at_task, task))
            for at_task, task in enumerate(tasks)
        ]
        self._stop_collecting(q)
        self.results[q] = (query.used, certificates)
        stats = self.stats
        with stats.lock:
            if isinstance(bound, LazyRow):
                stats.bound_seconds += bound.seconds
                stats.full_bounds += bound.computed
            elif bound is not None:
                stats.full_bounds += len(bound)
            stats.pairs += len(query.used)
            stats.candidates += sum(len(t.candidates) for t in tasks)
            stats.duals += query.duals
            stats.ascents += query.ascents
            stats.tight_seconds += query.dual_seconds

    def _certify(self, query: _QueryState, at_task: int, task: _Task) -> float:
        """Take the top k of the query's ``at_task``-th list, ``task``, into
        ``query.used``; returns the list's certificate, a lower bound of every candidate
        whose distance was not taken."""
        q = query.q
        if self.inputs.empty[q]:
            return np.inf  # an empty query: no neighbour, nothing to visit
        floor = self.floors.get((q, task.key)) if self.floors else None
        taken = self._floor_settles(query, at_task, task, floor)
        if taken is None:
            return self._visit(query, task)
        query.used.update(taken)
        with self.stats.lock:
            self.stats.reused += len(taken)
            self.stats.floored += 1
        return floor

    def _floor_settles(
        self, query: _QueryState, at_task: int, task: _Task, floor: float | None
    ) -> list[tuple[int, float]] | None:
        """The list's known distances if its ``floor`` settles it (see ``floors`` in
        :func:`search_queries`), taken as the search would take them; else None."""
        # a settled query's from the pre-pass (settled_lists), another's checked now,
        # after its earlier lists
        if query.q in self.settled:
            return self.settled[query.q][at_task]
        if floor is None:
            return None
        return _floor_taken(
            self.inputs, self.preloaded, self.scale, query.q, task, floor, query.used
        )

    def _visit(self, query: _QueryState, task: _Task) -> float:
        """Visit list ``task``'s candidates in increasing best known bound (then
        position), each passing the tighter bounds before its exact solve, until that
        bound is beyond the k-th distance; returns it, the smallest bound of a candidate
        left unsolved (inf if none is), the list's certificate."""
        visit = _Visit(task, query, self.scale)
        q, used, seen, starts = query.q, query.used, query.seen, query.starts
        best, k, waiting = visit.best, visit.k, visit.waiting
        while True:
            step = visit.next_candidate(used)
            if step is None:
                return np.inf
            lb, c, from_heap = step
            if lb > visit.limit:  # _beyond the k-th of the moment
                return lb  # and every other candidate's bound is at least this
            if not from_heap:  # taken with its cheap bound
                if self._known(q, c):
                    self._take_known(query, visit, c)
                    continue
                if not self._wait_tightened(query, visit, c, lb):
                    continue
                # its tight bound is the one it was taken with: taken as the heap's head
            else:
                heapq.heappop(waiting)  # taken with its tight bound
            # the dual bounds can prove nothing until the list has a k-th distance
            full = len(best) == k
            if full and seen.get(c, 0) < query.held:
                self._dual_bound(query, visit, c)
                continue
            if full and c in starts and self._dual_ascent(query, visit, c):
                continue
            self._solve(query, visit, c)

    def _take_known(self, query: _QueryState, visit: _Visit, c: int) -> None:
        """Take the stream's head ``c``, whose exact distance is known (another variant's
        solve), at its cheap bound: no bound can tell more, and the k-th tightens sooner."""
        d, _ = self.distance(query.q, c, False)
        query.used[c] = d
        visit.admit(c, d)
        visit.at += 1

    def _wait_tightened(self, query: _QueryState, visit: _Visit, c: int, lb: float) -> bool:
        """Put the stream's head ``c``, of cheap bound ``lb``, in the heap with its tighter
        bound (:meth:`_tighten`): a candidate passes it before it is solved. Returns
        False; or True, without a push, where its tight bound is ``lb`` itself: the visit
        took ``(lb, c)`` from the stream because it was before every waiting entry, and
        the stream's next entries are after it, so the heap's next pop would give it
        back (a push, a pop and a turn of the visit's loop for each candidate whose
        bound ICT does not raise, or once its trial has turned it off: about half of a
        query's on the passage corpus)."""
        if c not in query.tight:
            self._tighten(query, visit)
        visit.at += 1
        bound = query.tight[c]
        if bound == lb:
            return True
        heapq.heappush(visit.waiting, (bound, c))
        return False

    def _tighten(self, query: _QueryState, visit: _Visit) -> None:
        """The ICT bounds (into ``query.tight``) of the stream's next TIGHTEN_BATCH
        candidates without one, from its head: one cost-matrix kernel call and one ICT
        kernel call for all of them. Once the query's ICT bounds have shown that they
        prove almost nothing (:meth:`_QueryState.ict_proves_nothing`), the head keeps
        its cheap bound instead."""
        q, used, tight, bound = query.q, query.used, query.tight, query.bound
        stream, at, limit = visit.stream, visit.at, visit.limit
        if query.ict_proves_nothing():
            tight[stream.order[at]] = float(bound[stream.order[at]])
            return
        batch = []
        while stream.has(at, limit):
            c = stream.order[at]
            at += 1
            if c not in used and c not in tight and not self._known(q, c):
                batch.append(c)
                if len(batch) == TIGHTEN_BATCH:
                    break
        t0 = time.thread_time()
        fresh: dict[int, np.ndarray] = {}
        ict = constrained_transfers(
            self.inputs, q, np.array(batch, dtype=np.int64), fresh, word_costs=query.word_costs
        )
        for c, value in zip(batch, ict.tolist(), strict=True):
            tight[c] = max(float(bound[c]), value)
            if limit < np.inf:  # a k-th distance to prove it beyond: the trial counts it
                query.ict_judged += 1
                if tight[c] > limit >= bound[c]:
                    query.ict_proved += 1
        query.keep_costs(fresh, limit)
        seconds = time.thread_time() - t0
        with self.stats.lock:
            self.stats.tight += len(batch)
            self.stats.tight_seconds += seconds

    def _dual_bound(self, query: _QueryState, visit: _Visit, c: int) -> None:
        """Raise candidate ``c``'s bound by the dual bounds of the potentials newer than
        it (:func:`~.bounds.nearest_dual_bound`: those solved against the documents
        nearest to it by centroid first), which may prove it beyond the k-th; it waits
        again. Its best one is where its dual ascent starts."""
        t0 = time.thread_time()
        inputs, q, limit, tight = self.inputs, query.q, visit.limit, query.tight
        cost = query.costs.get(c)
        if cost is None and inputs.vectors.shape[1] > DIRECT_DIMENSIONS:
            # kept for its next dual bounds and its ascent: a candidate meets new
            # potentials several times before it is proven or solved (and used now even
            # where COST_BYTES leaves it out of `costs`)
            cost = query.word_costs.matrix(inputs.indices[c])
            query.keep_costs({c: cost}, limit)
        value, at_best = nearest_dual_bound(
            inputs,
            q,
            c,
            query.potentials,
            query.sources,
            self.means[c],
            (query.seen.get(c, 0), query.held),
            DUAL_TRIES,
            limit,
            cost,
        )
        query.seen[c] = query.held
        if value > query.starts.get(c, (-np.inf, -1))[0]:
            query.starts[c] = (value, at_best)
        tight[c] = max(tight[c], value)
        heapq.heappush(visit.waiting, (tight[c], c))
        query.duals += 1
        query.dual_seconds += time.thread_time() - t0

    def _dual_ascent(self, query: _QueryState, visit: _Visit, c: int) -> bool:
        """Last before its solve: the dual bound of candidate ``c``'s best potential
        raised by supergradient steps (:func:`~.bounds.dual_ascent`; again only if new
        potentials come before its solve). Returns whether that raised its bound: it
        waits again."""
        t0 = time.thread_time()
        start = query.potentials[query.starts.pop(c)[1]]
        value = dual_ascent(self.inputs, query.q, c, start, visit.limit, query.costs.get(c))
        query.ascents += 1
        query.dual_seconds += time.thread_time() - t0
        if value > query.tight[c]:
            query.tight[c] = value
            heapq.heappush(visit.waiting, (value, c))
            return True
        return False

    def _solve(self, query: _QueryState, visit: _Visit, c: int) -> None:
        """Solve the pair exactly (no bound proved ``c`` beyond the k-th distance): its
        distance into ``query.used`` and the k nearest, and its potential kept while the
        query collects them."""
        d, potential = self.distance(query.q, c, query.held < POTENTIALS)
        query.drop_costs(c)
        query.used[c] = d
        if potential is not None and query.keep_potential(potential, self.means[c]):
            self._stop_collecting(query.q)
        visit.admit(c, d)

    def _stop_collecting(self, q: int) -> None:
        """Query ``q`` takes no more potentials: no query leaves it any."""
        self.collecting[q] = False
        self.left_for.pop(q, None)

    def _known(self, q: int, c: int) -> bool:
        """Whether the pair's exact distance was solved before this job (``known``)."""
        return (
            self.has_known and self.preloaded.get(min(q, c) * self.inputs.n + max(q, c)) is not None
        )

    def _floored(self, q: int, bound: np.ndarray) -> np.ndarray:
        # the cheap bounds raised to the original's certificates that bound the pair
        # (`floors.candidates`: this document's over its lists' members, each member's
        # over its lists holding this document), except where the pair is known: the
        # original solved it, so no certificate says anything of it, and the search
        # takes its distance
        n = self.inputs.n
        row = self.single.row(q, n)
        if row is None:
            return bound
        raised = np.flatnonzero(row > bound)
        if self.has_known and len(raised):
            pair = np.minimum(raised, q) * n + np.maximum(raised, q)
            found, _ = _known_lookup(self.preloaded, pair)
            raised = raised[~found]
        if not len(raised):
            return bound
        bound = bound.copy()
        bound[raised] = row[raised]
        with self.stats.lock:
            self.stats.floored_candidates += len(raised)
        return bound


# Worker processes (search_queries with threads > 1).
#
# Start method: fork, chosen over spawn and forkserver. A forked worker inherits the
# job as the parent built it (inputs, query lists, known pairs, floors and the bounds'
# tables: hundreds of MB at 20 Newsgroups' size) by copy-on-write, where spawn or
# forkserver would pickle all of it to each worker, and spawn would import numpy,
# pyarrow, numba and wmdeval (and load the cached kernels) again in each. Fork's hazard
# is a lock another thread holds at the fork, which the child inherits held: so the
# workers are forked only after the set-up's thread pool is shut down (its threads
# gone), before the executor starts its own thread (ProcessPoolExecutor forks them all
# at its first submit), and the threads left are native pools that expect a fork:
# OpenBLAS (its atfork handler stops its threads) and Arrow's (rebuilt in the child).
# Each worker runs with one BLAS thread (_work_start), as the search always did, so N
# workers use N cores, and touches no logger, lock or file of the parent's: it returns
# its chunk's results, counts and CPU, and the parent merges them and logs.

#: The job the worker processes search: set by the parent just before it forks them,
#: so that each inherits it (its copy, whose `solved` and `left_for` are its own).
_JOB: _Search | None = None

#: SearchStats counters a worker adds up over a chunk and the parent sums.
_SUMMED = (
    "solves",
    "reused",
    "floored",
    "floored_candidates",
    "full_bounds",
    "pairs",
    "candidates",
    "tight",
    "duals",
    "ascents",
    "bound_seconds",
    "tight_seconds",
)


def _work_start() -> None:
    child_process_start()
    _JOB.fresh = []


def _work_chunk(r0: int, r1: int) -> tuple:
    """In a worker: search queries [r0, r1) of the job; returns (worker pid, results,
    relaxed results, pair ids solved first by this worker, counts, process CPU)."""
    job = _JOB
    cpu0 = time.process_time()
    job.stats = SearchStats()
    job.chunk(r0, r1)
    results, job.results = job.results, {}
    relaxed, job.relaxed_results = job.relaxed_results, {}
    fresh, job.fresh = np.array(job.fresh, dtype=np.int64), []
    counts = {name: getattr(job.stats, name) for name in _SUMMED}
    return os.getpid(), results, relaxed, fresh, counts, time.process_time() - cpu0


def _run_workers(
    job: _Search, chunks: list[tuple[int, int]], workers: int, progress: Progress
) -> None:
    """Search ``chunks`` of ``job`` in ``workers`` forked processes (see above), each
    taking the next chunk when it finishes one; their results, counts and CPU into
    ``job`` and its stats, and the solves of pairs another worker solved too into
    ``stats.duplicates``. A worker's exception is raised here; a worker that dies (a
    signal, the memory limit) is a WmdevalError."""
    global _JOB
    stats = job.stats
    fresh: list[np.ndarray] = []
    _JOB = job
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"), initializer=_work_start
    )
    try:
        futures = {pool.submit(_work_chunk, r0, r1): r1 - r0 for r0, r1 in chunks}
        for future in as_completed(futures):
            try:
                _, results, relaxed, solved, counts, cpu = future.result()
            except BrokenProcessPool as error:
                raise io.WmdevalError(
                    "wmd search: a worker process died before its queries were done "
                    "(killed by a signal, e.g. over the job's memory)"
                ) from error
            job.results.update(results)
            job.relaxed_results.update(relaxed)
            fresh.append(solved)
            with stats.lock:
                for name, value in counts.items():
                    setattr(stats, name, getattr(stats, name) + value)
                stats.worker_seconds += cpu
            progress.advance(futures[future])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB = None
    # each worker reports a pair once (the first time it solves it)
    solved = np.concatenate(fresh) if fresh else np.zeros(0, dtype=np.int64)
    stats.duplicates += len(solved) - len(np.unique(solved))


def _solves_text(solves: int, queries: int) -> str:
    """The search's part of a progress line: solves so far, and per query done (the
    queries running now have solved some of theirs, so this is a little high at first)."""
    if not queries:
        return f"{solves:,} solves"
    return f"{solves:,} solves, {solves / queries:.1f} per query"


def relaxed_lists(
    inputs: WmdInputs, mine: list[_Task], row: np.ndarray
) -> tuple[dict[int, float], list[tuple[str, int, float]]]:
    """A query's neighbour lists under the distance of its bound ``row`` (plain RWMD as
    a method), as :func:`search_queries` leaves its own: (candidate -> distance, the
    certificates). Every value is known, so nothing is searched: a list keeps every
    candidate whose tie key is at most its k-th's (ties with it included, as a search
    solves them), and its certificate is the smallest value of the others, whose key
    is above the k-th's (inf if there is none). ``row``: NaN for an empty query."""
    used: dict[int, float] = {}
    certificates = []
    for task in mine:
        cands = task.candidates  # none empty
        values = row[cands]
        if not len(cands) or np.isnan(values).any():
            # an empty query: no list (as the search certifies it)
            certificates.append((task.key, task.k, np.inf))
            continue
        keys = tie_key(values)
        last = min(task.k, len(keys)) - 1
        inside = keys <= np.partition(keys, last)[last]
        used.update(zip(cands[inside].tolist(), values[inside].tolist(), strict=True))
        rest = values[~inside]
        certificates.append((task.key, task.k, float(rest.min()) if len(rest) else np.inf))
    return used, certificates


def _tables(inputs: WmdInputs, results: Mapping) -> tuple[pa.Table, pa.Table]:
    q_ids, c_ids, dists = [], [], []
    cert_q, cert_key, cert_k, cert_bound = [], [], [], []
    for q in sorted(results):
        used, certificates = results[q]
        cands = np.array(sorted(used), dtype=np.int64)
        q_ids.append(np.full(len(cands), inputs.doc_ids[q], dtype=np.int32))
        c_ids.append(inputs.doc_ids[cands].astype(np.int32))
        dists.append(np.array([used[c] for c in cands.tolist()], dtype=np.float64))
        for key, k, unsolved in sorted(certificates):
            cert_q.append(int(inputs.doc_ids[q]))
            cert_key.append(key)
            cert_k.append(k)
            cert_bound.append(unsolved)
    empty_i32 = np.zeros(0, dtype=np.int32)
    pairs = pa.table(
        {
            "query": np.concatenate(q_ids) if q_ids else empty_i32,
            "candidate": np.concatenate(c_ids) if c_ids else empty_i32,
            "distance": np.concatenate(dists) if dists else np.zeros(0, dtype=np.float64),
        },
        schema=schemas.NEIGHBOUR_PAIRS,
    )
    certificates = pa.table(
        {
            "query": np.array(cert_q, dtype=np.int32),
            "candidates": pa.array(cert_key, type=pa.string()),
            "k": np.array(cert_k, dtype=np.int32),
            "unsolved_bound": np.array(cert_bound, dtype=np.float64),
        },
        schema=schemas.NEIGHBOUR_CERTIFICATES,
    )
    return pairs, certificates


def query_shards(sizes: np.ndarray, queries: np.ndarray, n_shards: int) -> list[np.ndarray]:
    """``queries`` (sorted positions) cut into ``n_shards`` contiguous runs of about equal
    estimated work (a query costs about its :func:`~.pairs.document_work` times the
    solves it needs, which the cut cannot know: the factor is its size alone)."""
    if n_shards < 1:
        raise ValueError("n_shards must be >= 1")
    work = document_work(sizes[queries]) + 1.0
    cumulative = np.cumsum(work)
    total = cumulative[-1] if len(cumulative) else 0.0
    cuts = np.searchsorted(cumulative, total * np.arange(1, n_shards) / n_shards, side="right")
    return np.split(queries, cuts)


def search_shard(
    inputs: WmdInputs,
    folds: list[tuple[np.ndarray, np.ndarray]],
    settings: Mapping | None,
    shard: int,
    n_shards: int,
    threads: int = 1,
    stats: SearchStats | None = None,
    known: Mapping[int, float] | None = None,
    floors: Mapping[tuple[int, str], float] | None = None,
    relaxed: bool = False,
    report: str | None = "wmd search",
) -> tuple[pa.Table, ...]:
    """The neighbour tables of query shard ``shard`` (0-based) of ``n_shards``: the
    query roles of ``folds`` under the evaluation ``settings``, with the documents
    empty under this method's weighting; ``known``, ``floors``, ``relaxed``, ``report``:
    see :func:`search_queries`."""
    if not 0 <= shard < n_shards:
        raise ValueError(f"shard {shard} is not in 0..{n_shards - 1}")
    roles = query_roles(folds, inputs.empty, settings)
    queries = (
        np.unique(np.concatenate([role.queries for role in roles]))
        if roles
        else np.zeros(0, dtype=np.int64)
    )
    mine = query_shards(inputs.sizes, queries, n_shards)[shard]
    batches = shard_batches(inputs, mine)
    if len(batches) <= 1:
        tasks = query_tasks(roles, inputs.empty, mine)
        return search_queries(inputs, tasks, threads, stats, known, floors, relaxed, report)
    # the bounds' tables of the whole shard would exceed SETUP_TABLE_BYTES: a batch of
    # its queries at a time, each with its own set-up; a query's rows and its search
    # depend on its own words alone, so the tables are the same bits as in one piece
    parts = []
    for b, batch in enumerate(batches, start=1):
        if report is not None:
            LOG.info("%s: set-up batch %d of %d, %d queries", report, b, len(batches), len(batch))
        tasks = query_tasks(roles, inputs.empty, batch)
        parts.append(search_queries(inputs, tasks, threads, stats, known, floors, relaxed, report))
    # batches are consecutive runs of sorted queries: the tables stay sorted by query
    return tuple(
        pa.concat_tables([part[t] for part in parts]).combine_chunks() for t in range(len(parts[0]))
    )


def shard_batches(inputs: WmdInputs, queries: np.ndarray) -> list[np.ndarray]:
    """``queries`` (sorted positions) cut into the consecutive runs a search job sets up
    and searches one at a time (:func:`~.pairs.setup_batches`: their bounds' tables within
    :data:`~.pairs.SETUP_TABLE_BYTES`)."""
    words = [inputs.indices[q] for q in np.asarray(queries).tolist()]
    runs = setup_batches(words, inputs.n, len(inputs.vectors))
    return [queries[start:end] for start, end in runs]


def check_complete(pairs: pa.Table, certificates: pa.Table, doc_ids: np.ndarray, what: str) -> None:
    """Refuse (WmdevalError) neighbour tables with pairs or queries outside ``doc_ids``
    or a query listed twice for the same candidate list (overlapping shards)."""
    for name, column in (
        ("query", pairs.column("query")),
        ("candidate", pairs.column("candidate")),
        ("query", certificates.column("query")),
    ):
        ids = column.to_numpy()
        if not np.isin(ids, doc_ids).all():
            raise io.WmdevalError(f"{what}: a {name} is not a document of this variant")
    keys = np.char.add(
        certificates.column("query").to_numpy().astype(str),
        np.asarray(certificates.column("candidates").to_pylist(), dtype=str),
    )
    if len(np.unique(keys)) != len(keys):
        raise io.WmdevalError(f"{what}: a query appears in more than one shard")


__all__ = [
    "BOUND_ROWS",
    "SearchStats",
    "query_tasks",
    "search_queries",
    "relaxed_lists",
    "settled_lists",
    "query_shards",
    "search_shard",
    "check_complete",
]


# ---------------------------------------------------------------------------------------------
# Run functions (file I/O at the edge)


def read_neighbour_tables(pairs_path, certificates_path) -> tuple[pa.Table, pa.Table]:
    """A method's NEIGHBOUR_PAIRS and NEIGHBOUR_CERTIFICATES files (float64 distances)."""
    pairs = io.read_table(pairs_path, schemas.NEIGHBOUR_PAIRS)
    io.require_float64(pairs, "distance", pairs_path)
    return (
        pairs.cast(schemas.NEIGHBOUR_PAIRS),
        io.read_table(certificates_path, schemas.NEIGHBOUR_CERTIFICATES).cast(
            schemas.NEIGHBOUR_CERTIFICATES
        ),
    )


def read_search_inputs(
    documents_path, splits_path, embeddings_path, weighting: str, settings, reuse=(None,) * 4
):
    """What a search job (and its forecast) searches: (documents, prepared inputs, folds,
    known pairs, floors). ``reuse``: the four reuse files (pairs, documents, certificates,
    splits; all or none, see :func:`run_search`), read by :func:`.reuse.read_reuse`."""
    documents = io.read_documents(documents_path)
    if np.any(np.diff(documents.column("doc_id").to_numpy()) <= 0):
        # positions are the tie rule's order
        raise io.WmdevalError(f"{documents_path}: doc_id must be ascending")
    splits = io.read_splits(splits_path)
    embeddings = io.read_embeddings(embeddings_path)
    inputs = prepare(documents, embeddings, weighting)
    folds = io.fold_indices(splits, inputs.doc_ids)
    known, floors = read_reuse(documents, inputs, folds, settings, embeddings, weighting, *reuse)
    return documents, inputs, folds, known, floors


def run_search(
    documents_path,
    splits_path,
    embeddings_path,
    weighting: str,
    settings: Mapping | None,
    shard: int,
    n_shards: int,
    threads: int,
    out_pairs,
    out_certificates,
    reuse_pairs=None,
    reuse_documents=None,
    reuse_certificates=None,
    reuse_splits=None,
    out_relaxed_pairs=None,
    out_relaxed_certificates=None,
) -> SearchStats:
    """Search query shard ``shard`` (0-based) of ``n_shards`` and write its two tables.

    ``out_relaxed_pairs``, ``out_relaxed_certificates`` (both or neither): also write
    the two tables of plain RWMD as a method, from the search's own bounds (WMD's
    search, weighting "bow": RWMD's bag of words and ground cost).

    ``settings``: the ``evaluation:`` config (it decides the query roles).
    ``reuse_pairs``, ``reuse_documents``: another variant's merged NEIGHBOUR_PAIRS file
    and its DOCUMENTS file (the clean variant: the original's, for a method whose
    distance does not depend on the variant); its pairs between two of these documents
    are taken instead of solved (:mod:`.reuse`): the same top k and distances, fewer
    solves (the pairs visited may differ, see :func:`search_queries`).
    ``reuse_certificates``, ``reuse_splits``: that variant's merged NEIGHBOUR_CERTIFICATES
    file and its SPLITS file, given with the other two or not at all: its certificates
    floor the lists of these queries that are subsets of its lists (``floors``).
    """
    if n_shards < 1 or not 0 <= shard < n_shards:
        raise io.WmdevalError(f"shard {shard} is not in 0..{n_shards - 1}")
    if threads < 1:
        raise io.WmdevalError("threads must be >= 1")
    if (out_relaxed_pairs is None) != (out_relaxed_certificates is None):
        raise io.WmdevalError(
            "--out-relaxed-pairs and --out-relaxed-certificates go together: give both or neither"
        )
    relaxed = out_relaxed_pairs is not None
    if relaxed and weighting != "bow":
        raise io.WmdevalError(
            f"--out-relaxed-pairs: RWMD is on the bag of words; expected --weighting bow, "
            f"got {weighting!r}"
        )
    documents, inputs, folds, known, floors = read_search_inputs(
        documents_path,
        splits_path,
        embeddings_path,
        weighting,
        settings,
        (reuse_pairs, reuse_documents, reuse_certificates, reuse_splits),
    )
    _log_empty(documents, inputs)
    stats = SearchStats()
    tables = search_shard(
        inputs,
        folds,
        settings,
        shard,
        n_shards,
        threads,
        stats,
        known,
        floors,
        relaxed,
        report=f"wmd_search shard {shard + 1}/{n_shards}",
    )
    io.write_table(tables[0], out_pairs, schemas.NEIGHBOUR_PAIRS)
    io.write_table(tables[1], out_certificates, schemas.NEIGHBOUR_CERTIFICATES)
    if relaxed:
        io.write_table(tables[2], out_relaxed_pairs, schemas.NEIGHBOUR_PAIRS)
        io.write_table(tables[3], out_relaxed_certificates, schemas.NEIGHBOUR_CERTIFICATES)
    LOG.info(
        "shard %d/%d: %d queries, %d of %d candidate pairs read (%.1f%%), %d exact solves, "
        "%d distances reused, %d lists settled by certificates; bounds %.1f s, search %.1f s",
        shard + 1,
        n_shards,
        stats.queries,
        stats.pairs,
        stats.candidates,
        100.0 * stats.pairs / max(stats.candidates, 1),
        stats.solves,
        stats.reused,
        stats.floored,
        stats.bound_seconds,
        stats.search_seconds,
    )
    return stats


def run_merge(
    documents_path, pair_paths: list, certificate_paths: list, out_pairs, out_certificates
) -> None:
    """Concatenate the shards' tables of one method into its neighbour table files,
    refusing pairs outside the documents or shards that overlap."""
    doc_ids = io.read_documents(documents_path).column("doc_id").to_numpy()
    if len(pair_paths) != len(certificate_paths):
        raise io.WmdevalError("need as many certificate files as pair files")
    pairs = io.read_tables(pair_paths, schemas.NEIGHBOUR_PAIRS)
    certificates = io.read_tables(certificate_paths, schemas.NEIGHBOUR_CERTIFICATES)
    check_complete(pairs, certificates, doc_ids, str(out_pairs))
    io.write_table(pairs, out_pairs, schemas.NEIGHBOUR_PAIRS)
    io.write_table(certificates, out_certificates, schemas.NEIGHBOUR_CERTIFICATES)
    LOG.info(
        "%d shard(s): %d pairs, %d certificates",
        len(pair_paths),
        pairs.num_rows,
        certificates.num_rows,
    )
