"""Cheap lower bounds of WMD for many pairs at once: word centroid distance and relaxed WMD.

Both are from Kusner et al. (2015):
- WCD, the distance between the documents' weighted mean word vectors;
- RWMD, the larger of the two one-sided relaxations, where each word of one document
  sends its whole weight to the nearest word of the other.

RWMD is computed the linear-complexity way (Atasu et al. 2017, LC-RWMD): for each word
w of the query documents and each document c, Z[w, c] = the distance from w to the
nearest word of c; one sparse product (query weights x Z) then gives the query -> c
relaxation for every pair. The other side uses the same word distances with the roles
swapped: Y[w, q] = the distance from any vocabulary word w to the nearest word of query
q, and (all weights x Y) gives c -> q. The cost is the word distances between the
queries' vocabulary and the whole vocabulary, never a per-pair transport problem: one
distance block (every document word x the query words, :func:`_nearest_words`) gives Z,
Y and the overlapping mass reduction's nearest other words. On 20 Newsgroups
(``benchmarks/knn_pruning.py``, 297 sampled queries, 2 threads, on a machine shared with
other jobs at a load of about 6.5 on its 2 cores) these cheap bounds took 22.6 s of the
search's 141 s CPU (26.3 s with Y's other words from a second product and a loop per
document for the nearest other words); Y is still [vocabulary x queries].

Under WRD's cosine ground cost (``inputs.ground_cost == "cosine"``, unit directions) the
relaxations use the same cost and stay lower bounds: they only need non-negative costs
and a word's cost to itself being 0. WCD does not (it relies on a norm cost); its place
is taken by half the squared distance of the mass-weighted mean directions, a lower
bound because 1 - u.v = |u - v|^2 / 2 for unit u, v and |.|^2 is convex (Jensen over
any transport plan T: sum T_ij |u_i - v_j|^2 / 2 >= |sum T_ij (u_i - v_j)|^2 / 2 =
|mean_a - mean_b|^2 / 2), see :func:`centroid_bound`.

Both bounds hold exactly in real arithmetic; in floating point they may exceed the
solver's WMD by rounding (their word distances come from the squared-norm expansion of
matrix products, in float32, where the solver's come from fixed-order sums in float64).
:func:`safety_margin` is how far a bound must lie above a distance before the search may
trust the bound.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

import numba
import numpy as np
import scipy.sparse as sp

from ...core import io
from .compiled import _kernel, _pair_costs
from .solver import WmdInputs, _blas, _distances, cost_matrix

#: Whether processes can be forked here (not on Windows): where not, a search job's
#: set-up and queries share its threads, or run on one.
FORK = "fork" in multiprocessing.get_all_start_methods()

#: Entries of one working matrix (float64): bounds memory to ~128 MB per step.
MAX_ENTRIES = 1 << 24

#: Relative part of the safety margin: well above float64 rounding of sums of a few
#: hundred terms, above float32's relative spacing (1.2e-7) of the bounds' word-cost
#: tables, and far above the tie key's rounding (2**-31 relative, core.variant.TIE_BITS),
#: so that a pruned candidate cannot tie with the k-th distance.
RELATIVE_MARGIN = 1e-6


def weight_matrix(inputs: WmdInputs) -> sp.csr_matrix:
    """The documents' marginals as a CSR matrix [documents x vocabulary rows], float64,
    with sorted indices (so no later operation reorders its entries)."""
    data = np.concatenate(inputs.weights) if inputs.n else np.zeros(0)
    matrix = sp.csr_matrix(
        (data, inputs.flat_indices.astype(np.int64), inputs.offsets),
        shape=(inputs.n, len(inputs.vectors)),
    )
    matrix.sort_indices()
    return matrix


def nearest_other_word(inputs: WmdInputs, weights: sp.csr_matrix) -> np.ndarray:
    """Per entry of ``weights`` (its CSR order): the distance from that word to the nearest
    other word of the same document, float64; inf in a one-word document."""
    out = np.empty(weights.nnz)
    for k in range(weights.shape[0]):
        lo, hi = weights.indptr[k], weights.indptr[k + 1]
        if hi - lo:
            words = weights.indices[lo:hi]
            d = word_distances(inputs, words, words)
            np.fill_diagonal(d, np.inf)
            out[lo:hi] = d.min(axis=1)
    return out


def word_distances(inputs: WmdInputs, words_a: np.ndarray, words_b: np.ndarray) -> np.ndarray:
    """Ground costs (``inputs.ground_cost``) between vocabulary rows, float64
    [len(words_a), len(words_b)]: :func:`~.solver.cost_matrix`, the exact solves' own
    costs; a word's cost to itself is exactly 0."""
    return cost_matrix(inputs, words_a, words_b)


#: Dimensions above which the search keeps a candidate's word costs for its next dual
#: bounds (search.py) and :func:`nearest_dual_bound` takes them from its caller: in a few
#: dimensions computing them again is cheaper than keeping them.
DIRECT_DIMENSIONS = 16


def pair_costs(inputs: WmdInputs, words_a: np.ndarray, words_b: np.ndarray) -> np.ndarray:
    """:func:`word_distances` of two documents' words, for the bounds of one pair: the
    exact solves' own kernel (``compiled._pair_costs``), so a bound's costs are the
    solve's bit for bit, and a word's cost to itself is exactly 0."""
    return _pair_costs(
        inputs.vectors,
        np.asarray(words_a, dtype=np.int64),
        np.asarray(words_b, dtype=np.int64),
        inputs.ground_cost == "cosine",
    )


#: The most bytes of word costs one query's :class:`WordCosts` holds; beyond them a
#: candidate's matrix is computed whole, as without it.
WORD_COST_BYTES = 64 << 20


class WordCosts:
    """One query's word costs to the vocabulary words its candidates hold, each computed
    once, for the candidates' cost matrices (:meth:`matrix`). A query's bounds need the
    matrices of hundreds of candidates, which share most of their words (20 Newsgroups,
    50 dimensions: 583 matrices of about 86 x 86 per query, 0.09 s of its 0.45 s), so a
    column per distinct word costs a fraction of the matrices computed whole.

    A column's costs are those of :func:`pair_costs`, bit for bit: an entry of
    ``compiled._pair_costs`` is a function of its two vectors alone, the same with the
    two swapped, whatever matrix it is computed in. Holds at most WORD_COST_BYTES."""

    __slots__ = ("inputs", "words", "slot", "table", "count")

    def __init__(self, inputs: WmdInputs, query: int):
        self.inputs = inputs
        self.words = np.asarray(inputs.indices[query], dtype=np.int64)
        # a word's row of `table` (-1: none), made on the first matrix asked for (a
        # query its floors settle, or in a few dimensions, asks for none)
        self.slot: np.ndarray | None = None
        # row s: the costs from the s-th word computed to each of the query's words
        self.table = np.empty((0, len(self.words)))
        self.count = 0

    def matrix(self, words: np.ndarray) -> np.ndarray:
        """float64 [query words, ``words``]: ``pair_costs(inputs, query words, words)``."""
        words = np.asarray(words, dtype=np.int64)
        out = np.empty((len(self.words), len(words)))
        inputs = self.inputs
        if self.slot is None:
            self.slot = np.full(len(inputs.vectors), -1, dtype=np.int64)
        while True:
            # one kernel call: the missing words' costs into the table, then the gather
            # (in numpy, its dozen calls took most of a 29-word matrix's time)
            count = _word_cost_matrix(
                inputs.vectors,
                self.words,
                words,
                self.slot,
                self.table,
                self.count,
                inputs.ground_cost == "cosine",
                out,
            )
            if count >= 0:
                self.count = count
                return out
            needed = -count - 1  # rows the table needs for these words
            most = WORD_COST_BYTES // (max(len(self.words), 1) * 8)
            if needed > most:
                return pair_costs(inputs, self.words, words)
            grown = np.empty((min(max(2 * len(self.table), needed, 64), most), len(self.words)))
            grown[: self.count] = self.table[: self.count]
            self.table = grown


@_kernel
def _word_cost_matrix(vectors, query, words, slot, table, count, cosine, out):  # pragma: no cover
    """:meth:`WordCosts.matrix` in one call: the distinct ``words`` without a ``slot``
    get their costs to the ``query`` words (``_pair_costs``, the same bits) in the
    ``table``'s rows from ``count``, then out[i, j] = table[slot[words[j]], i]. Returns
    the new count, or -(rows needed) - 1 with nothing changed when the table is too
    short for them."""
    missing = np.empty(len(words), dtype=np.int64)
    fresh = 0
    for j in range(len(words)):
        w = words[j]
        if slot[w] == -1:
            slot[w] = -2  # marked: each missing word once
            missing[fresh] = w
            fresh += 1
    if count + fresh > table.shape[0]:
        for t in range(fresh):
            slot[missing[t]] = -1
        return -(count + fresh) - 1
    if fresh:
        costs = _pair_costs(vectors, missing[:fresh], query, cosine)
        for t in range(fresh):
            row = table[count + t]
            source = costs[t]
            for i in range(len(query)):
                row[i] = source[i]
            slot[missing[t]] = count + t
        count += fresh
    for j in range(len(words)):
        source = table[slot[words[j]]]
        for i in range(out.shape[0]):
            out[i, j] = source[i]
    return count


def safety_margin(inputs: WmdInputs, distance: float | np.ndarray) -> float | np.ndarray:
    """How far a bound must exceed ``distance`` to prove the exact WMD exceeds it, and
    that its tie key exceeds the distance's: relative to the distance, plus an absolute part
    for the expansion's cancellation on nearly equal vectors (~1e-8 x the vector norm).

    Cosine costs (WRD) lie in [0, 2] and 1 - u.v has no square root to amplify its
    cancellation (absolute error ~1e-16 x the dimension); the float32 word costs of the
    bounds are off by at most 1.2e-7 absolute. An absolute part of RELATIVE_MARGIN x 1
    covers both with room to spare."""
    return scaled_margin(margin_scale(inputs), distance)


def scaled_margin(scale: float, distance: float | np.ndarray) -> float | np.ndarray:
    """:func:`safety_margin` with its absolute part ``scale`` (:func:`margin_scale`)
    computed by the caller: the search asks it for every candidate it takes."""
    return RELATIVE_MARGIN * (abs(distance) + scale)


def margin_scale(inputs: WmdInputs) -> float:
    """The absolute part of :func:`safety_margin` over RELATIVE_MARGIN: 1 for cosine
    costs, else the largest vector norm (a search calls this once, not per candidate)."""
    if inputs.ground_cost == "cosine":
        return 1.0
    return float(np.sqrt(inputs.sq_norms.max())) if len(inputs.sq_norms) else 0.0


def centroids(inputs: WmdInputs) -> np.ndarray:
    """Weighted mean word vector of each document, float64 [n, dim]; NaN if empty."""
    means = np.asarray(weight_matrix(inputs) @ inputs.vectors)
    means[inputs.empty] = np.nan
    return means


def word_centroid_distance(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """WCD between documents ``rows`` and every document, float64 [len(rows), n]; NaN
    where either is empty. The Euclidean distance of the centroids whatever the ground
    cost: a lower bound of WMD, not of WRD (see :func:`centroid_bound`)."""
    means = centroids(inputs)
    sq = np.einsum("ij,ij->i", means, means)
    rows = np.asarray(rows, dtype=np.int64)
    return _distances(means[rows] @ means.T, sq[rows], sq)


def centroid_bound(
    ground_cost: str, products: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray
) -> np.ndarray:
    """The centroid lower bound from centroid products m_a.m_b, in place in ``products``.

    ``products`` float64 [p, q]; ``sq_a`` [p], ``sq_b`` [q]: the centroids' squared
    norms. "euclidean": WCD = |m_a - m_b|. "cosine" (unit directions): |m_a - m_b|^2 / 2,
    clipped at 0 (the module docstring proves it is <= WRD). NaN stays NaN.
    """
    if ground_cost == "euclidean":
        _euclidean_in_place(products, sq_a, sq_b)
        return products
    if ground_cost == "cosine":
        d = products
        d *= -2.0
        d += sq_a[:, None]
        d += sq_b[None, :]
        d *= 0.5
        return np.maximum(d, 0.0, out=d)
    raise ValueError(f"unknown ground cost {ground_cost!r}")


@_kernel
def _euclidean_in_place(d, sq_a, sq_b):  # pragma: no cover - compiled
    """solver._distances(d, sq_a, sq_b) in place: the same float64 operations in the same
    order per entry (NaN stays NaN, -0.0 stays -0.0, as np.maximum keeps them), in one
    pass instead of five: at 85,635 passages (50 dimensions) 5 ms instead of 41 of a
    64-query block of centroid rows, whose product takes about 75 ms; each of a search's
    worker processes computes every block its queries touch."""
    for i in range(d.shape[0]):
        row = d[i]
        a = sq_a[i]
        for j in range(d.shape[1]):
            v = row[j] * -2.0
            v += a
            v += sq_b[j]
            if v < 0.0:
                v = 0.0
            row[j] = np.sqrt(v)


#: The slack :func:`_centroid_below` allows the squared distance, in units of 2**-53 per
#: dimension (and a few more), times the scale of its terms (|a| |b| + |a|^2 + |b|^2 +
#: 2 |a.b|): any float64 sum of d products, in any order, with or without fused
#: multiply-adds, is within about d * 2**-53 * |a| |b| of the exact a.b (Cauchy-Schwarz),
#: so BLAS's and the kernel's differ by twice that, 4 d units in -2 a.b, and each side's
#: two additions round by a unit of their terms or two.
CENTROID_SLACK = 4


@_kernel
def _centroid_below(means, sq_means, q, candidates, ceiling, cosine, out):  # pragma: no cover
    """out[j] = whether the centroid bound of documents q and candidates[j]
    (:func:`centroid_bound` of the product of their centroids, as
    :meth:`LowerBounds._centroid_rows` computes it, in a BLAS product) is surely below
    ceiling[j]: its value from a product summed here, its squared distance raised by
    more than any two such products can differ (CENTROID_SLACK), is. False wherever
    either is NaN."""
    a = means[q]
    sq_a = sq_means[q]
    norm_a = np.sqrt(sq_a)
    slack = (CENTROID_SLACK * len(a) + 32) * 2.0**-53
    for j in range(len(candidates)):
        c = candidates[j]
        b = means[c]
        # eight running sums side by side (any order is within the slack), so that the
        # products vectorise: one running sum was a chain of 300 dependent additions
        p0 = p1 = p2 = p3 = p4 = p5 = p6 = p7 = 0.0
        k = 0
        while k + 8 <= len(a):
            p0 += a[k] * b[k]
            p1 += a[k + 1] * b[k + 1]
            p2 += a[k + 2] * b[k + 2]
            p3 += a[k + 3] * b[k + 3]
            p4 += a[k + 4] * b[k + 4]
            p5 += a[k + 5] * b[k + 5]
            p6 += a[k + 6] * b[k + 6]
            p7 += a[k + 7] * b[k + 7]
            k += 8
        while k < len(a):
            p0 += a[k] * b[k]
            k += 1
        product = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7))
        sq_b = sq_means[c]
        scale = norm_a * np.sqrt(sq_b) + sq_a + sq_b + 2.0 * abs(product)
        squared = sq_a + sq_b - 2.0 * product + slack * scale
        if cosine:
            most = max(0.5 * squared, 0.0)
        else:
            most = np.sqrt(max(squared, 0.0))
        out[j] = most * (1.0 + 1e-12) < ceiling[j]


#: Rows of every matrix product whose bits a search's bounds depend on, and the width the
#: nearest-word tables' chunks and the products' other side are a multiple of. BLAS
#: (OpenBLAS, seen here) computes an entry of a product with other rounding when the
#: product's shape differs; a bound computed in a product of the job's queries then
#: changed its last bits with the shards (and with them the certificates). Within one
#: shape an entry's position does not matter, except in a last, partial tile of
#: columns: there OpenBLAS's AVX-512 (SkylakeX) kernels rounded an entry by its row's
#: place in the product (its AVX2 ones did not, where tried). So these products have
#: fixed shapes and whole tiles only, padded with zeros where the data is short.
PRODUCT_WIDTH = 64
#: The nearest-word tables' chunk width at most (columns of query words per product):
#: the last chunk is padded to the chunk width, so it bounds what a few queries waste.
CHUNK_WIDTH = 1024
#: Rows of a chunk's product computed together (a multiple of PRODUCT_WIDTH), and groups
#: (documents) whose minima are taken together: the parts a pool's threads share
#: (:func:`_nearest_words`); fixed, so that no bit depends on the threads.
SLICE_ROWS = 4096
SLICE_GROUPS = 1024


def padded_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` with rows of zeros appended up to a multiple of PRODUCT_WIDTH rows (itself
    if it has such a count already)."""
    short = -len(matrix) % PRODUCT_WIDTH
    if not short:
        return matrix
    return np.concatenate([matrix, np.zeros((short, *matrix.shape[1:]), dtype=matrix.dtype)])


def stable_products(left: np.ndarray, right: np.ndarray, columns: int | None = None) -> np.ndarray:
    """``left @ right.T``, float64 [len(left), columns], each row of it computed in a
    product of exactly PRODUCT_WIDTH rows (the last padded with zeros) against ``right``
    padded with zero rows to a multiple of PRODUCT_WIDTH (:func:`padded_rows`; pass it
    padded, with ``columns`` its rows before padding, to pad it once for many calls), so
    its bits depend on its own row alone, not on the rows computed with it or its place
    among them."""
    columns = len(right) if columns is None else columns
    right = padded_rows(right)
    out = np.empty((len(left), columns))
    block = np.zeros((PRODUCT_WIDTH, left.shape[1]))
    for r0 in range(0, len(left), PRODUCT_WIDTH):
        part = left[r0 : r0 + PRODUCT_WIDTH]
        block[: len(part)] = part
        block[len(part) :] = 0.0
        out[r0 : r0 + len(part)] = (block @ right.T)[: len(part), :columns]
    return out


def _nearest_word(
    inputs: WmdInputs, words: np.ndarray, flat: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """float32 [len(starts), len(words)]: for each group of vocabulary rows (``flat``
    concatenated, group g starting at ``starts[g]``; no empty group), the distance from
    each of ``words`` to the group's nearest word (:func:`_nearest_words`' first part)."""
    return _nearest_words(inputs, words, flat, starts)[0].T


def _nearest_words(
    inputs: WmdInputs,
    words: np.ndarray,
    flat: np.ndarray,
    starts: np.ndarray,
    back_indptr: np.ndarray | None = None,
    back_indices: np.ndarray | None = None,
    every: int = 1,
    timing: dict | None = None,
    overlap: bool = True,
    pool: Executor | None = None,
    processes: int = 1,
    block: bool = False,
    other_groups: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nearest-word tables of :class:`LowerBounds`, from one distance block.

    ``words``: sorted distinct vocabulary rows; ``flat`` / ``starts``: groups of
    vocabulary rows (``flat`` concatenated, group g starting at ``starts[g]``; a group's
    words distinct); ``back_indptr`` / ``back_indices``: other groups,
    as CSR rows of positions into ``words`` (default: none). Returns

    - float32 [len(words), len(starts)] (the layout of LowerBounds' products, written a
      chunk of words at a time, so no transpose of the whole table is needed): the
      distance from each of ``words`` to each group's nearest word (inf for an empty
      group);
    - float32 [len(rows), len(back_indptr) - 1]: the distance from each of ``rows`` to
      each back group's nearest word (inf for an empty group), in the layout
      :func:`_back_minimum` writes (its transposed copy and the copy's scatter took
      about 6 s of a 41 s set-up for 7,000 review queries at 300 dimensions);
    - ``rows``, the distinct rows of ``flat``, int64;
    - ``at``, each entry of ``flat``'s position in ``rows``, int64 (the block's column
      of the entry);
    - float64 [len(flat)]: per entry of ``flat`` whose word is one of ``words``, the
      distance to the nearest other word of its group (inf in a one-word group; from the
      float32 table, like the others); NaN for the other entries, and for every entry
      with ``overlap=False`` (only OMR reads it, and plain RWMD has no OMR: skipping
      :func:`_other_minimum` saved 12 % of a 512-document band's set-up on 20
      Newsgroups at 50 dimensions).

    The distances from the distinct rows of ``flat`` to a chunk of ``words`` (at most
    MAX_ENTRIES entries) are one product; :func:`_group_minimum` then takes each group's
    minimum from them in place, never gathering a row per entry of ``flat`` (on 20
    Newsgroups that gather moved 64 MB per chunk of ~10 words), and :func:`_back_minimum`
    and :func:`_other_minimum` take the other two from the same block, so no second
    product is needed for the words outside ``words``. float32 halves the memory the
    kernels read; its rounding (relative 6e-8) is far inside the safety margin.

    ``every`` > 1 computes only every ``every``-th chunk of ``words`` (the tables are
    then incomplete: for :func:`setup_seconds_estimate` alone); ``timing``, if given,
    gets the thread CPU seconds of the chunks computed, :func:`_back_minimum`'s
    ("back_seconds") apart from the rest ("chunk_seconds"), the counts of chunks computed
    and in all ("chunks_done", "chunks") and of back pairs ("back_pairs_done",
    "back_pairs"), and of those seconds the part spent on ``pool``'s threads
    ("worker_seconds", 0 without a pool).

    ``pool``: an executor whose threads share each chunk's work (the calling thread
    waits): the product and its costs in slices of SLICE_ROWS rows, the minima in slices
    of groups and of rows, each slice writing its own part of the tables. The slices do
    not depend on the pool (a product's bits depend on its shape), so the tables are the
    same bits with any pool or none; nor does the memory: a chunk's product is computed a
    slice at a time, never whole.

    ``processes`` > 1 (where processes can be forked): the chunks are computed in that
    many forked processes instead, each a whole chunk at a time, on one thread, the
    tables in shared memory (:func:`_chunks_in_processes`); ``pool`` is then not used.
    Threads share a chunk's work with the interpreter's lock held between the kernels
    (20 Newsgroups, 241 queries: 1.6x on 2 threads); processes share no lock. The same
    bits again, as no chunk's bits depend on where it ran. With ``block`` (and no
    ``pool``), ``processes`` threads share it instead, the block in this process's own
    memory (see the comment below; ``timing["worker_processes"]`` says which ran).

    ``block``: the first table is instead the distance block itself, transposed, float32
    [len(words), len(rows)] (each of ``words`` to each distinct row of ``flat``), and
    no group's minimum is taken: :func:`_group_minimum` reads every entry of ``flat``
    once per word, the one part of the build that grows with the documents' words
    times the queries'. A group's minimum is then taken from the block only where it is
    asked for (:func:`_forward_columns`), the same bits, as a minimum is exact.
    ``other_groups``: the groups whose entries get the fourth table's distances (default:
    every group); the others' are taken from the block where asked for
    (:func:`_forward_columns`), as :func:`_other_minimum` too reads every entry of
    ``flat``.
    """
    # With the block, a chunk is a product and one compiled kernel per slice of rows,
    # both outside the interpreter's lock: threads share it as well as forked processes,
    # and the block is then this process's own memory, which the search's workers,
    # forked after the set-up, read without a fault per page. In shared memory each 4 KB
    # page was faulted in by the set-up and again by every worker (85,635 passages, 265
    # queries, 2 workers: 280,000 faults in the job, and 5.5 ms of system time a query
    # against 3.5 with threads).
    threads = processes if block and processes > 1 and pool is None else 0
    if threads:
        processes = 1
    build = _NearestWords(
        inputs,
        words,
        flat,
        starts,
        back_indptr,
        back_indices,
        overlap,
        shared=processes > 1,
        block=block,
        other_groups=other_groups,
    )
    if not len(build.starts) or not len(build.words):
        return build.out, build.toward, build.rows, build.at, build.other
    chunks = [w0 for k, w0 in enumerate(range(0, len(build.words), build.step)) if not k % every]
    started = time.thread_time()
    in_processes = processes > 1 and len(chunks) > 1 and FORK
    if in_processes:
        worker, back_seconds, back_worker, back_pairs = _chunks_in_processes(
            build, chunks, processes
        )
    else:
        worker = back_seconds = back_worker = 0.0
        back_pairs = 0
        with ThreadPoolExecutor(threads) if threads else contextlib.nullcontext(pool) as sharing:
            for w0 in chunks:
                spent, back, back_spent, pairs = build.chunk(w0, sharing)
                worker += spent
                back_seconds += back
                back_worker += back_spent
                back_pairs += pairs
    if block:
        back0 = time.thread_time()
        back_pairs = build.back_from_block(chunks)
        back_seconds += time.thread_time() - back0
    if timing is not None:
        own = time.thread_time() - started
        timing["chunk_seconds"] = own - back_seconds + worker - back_worker
        timing["chunks_done"] = len(chunks)
        timing["chunks"] = -(-len(build.words) // build.step)
        timing["back_seconds"] = back_seconds + back_worker
        timing["back_pairs_done"] = back_pairs
        timing["back_pairs"] = len(build.back_indices)
        timing["worker_seconds"] = worker
        timing["worker_processes"] = in_processes
    return build.out, build.toward, build.rows, build.at, build.other


def _shared_array(shape: tuple[int, ...], dtype, fill: float | None = None) -> np.ndarray:
    """A new array in anonymous shared memory: what a process forked after its creation
    writes there, its parent reads (``mmap(-1, ...)`` maps MAP_SHARED)."""
    count = int(np.prod(shape))
    itemsize = np.dtype(dtype).itemsize
    array = np.frombuffer(mmap.mmap(-1, max(count * itemsize, 1)), dtype=dtype, count=count)
    array = array.reshape(shape)
    if fill is not None:
        array.fill(fill)
    return array


class _NearestWords:
    """One build of :func:`_nearest_words`' tables: its inputs, the tables it writes, and
    :meth:`chunk`, which computes one chunk of ``words`` into them. A chunk writes its own
    rows of the first table (the table, or the block's transpose) and its own entries of
    the fourth, and lowers entries of the
    second (a minimum, so exact in any order): the chunks may run in any order, on any
    threads or forked processes (``shared``: the tables in shared memory), with the same
    bits."""

    def __init__(
        self,
        inputs,
        words,
        flat,
        starts,
        back_indptr,
        back_indices,
        overlap,
        shared,
        block,
        other_groups=None,
    ):
        self.inputs, self.overlap, self.block = inputs, overlap, block
        self.starts = np.asarray(starts, dtype=np.int64)
        if back_indptr is None:
            back_indptr = np.zeros(1, dtype=np.int64)
            back_indices = np.zeros(0, dtype=np.int64)
        back_indptr = np.asarray(back_indptr, dtype=np.int64)
        self.back_indices = np.asarray(back_indices, dtype=np.int64)
        # Distances from the distinct words of `flat` only: for a few query documents they
        # are a small part of the vocabulary (20 Newsgroups, 15 queries: 1,300 of 53,000
        # words), and every vocabulary row would cost V x V products per job.
        rows, at = _distinct(flat, len(inputs.vectors))
        self.rows, self.at = rows, at
        self.words = np.asarray(words, dtype=np.int64)
        array = _shared_array if shared else _local
        # the nearest-word table, [words x groups], or with `block` the distance block,
        # transposed: [words x rows]
        if block:
            # in this process's own pages (the set-up's threads write it; see
            # _nearest_words), or shared with forked processes
            self.out = (_shared_array if shared else _private_pages)(
                (len(self.words), len(rows)), np.float32
            )
        else:
            self.out = array((len(self.words), len(self.starts)), np.float32)
        self.toward = array((len(rows), len(back_indptr) - 1), np.float32, np.inf)
        self.other = array((len(flat),), np.float64, np.nan)
        self.ends = np.append(self.starts[1:], len(flat))
        # the groups whose nearest other words are computed (None: all, a slice at a time)
        self.other_groups = None
        if other_groups is not None:
            other_groups = np.asarray(other_groups, dtype=np.int64)
            self.other_groups = (self.starts[other_groups], self.ends[other_groups])
        self.vectors, self.sq_norms = inputs.vectors[rows], inputs.sq_norms[rows]
        self.back_indptr = back_indptr
        self.back_group = np.repeat(np.arange(len(back_indptr) - 1), np.diff(back_indptr))
        # chunks of one fixed width, the last padded to it (see PRODUCT_WIDTH)
        step = min(max(PRODUCT_WIDTH, MAX_ENTRIES // max(len(rows), 1)), CHUNK_WIDTH)
        self.step = step - step % PRODUCT_WIDTH
        self.cosine = inputs.ground_cost == "cosine"
        self.row_parts = [slice(r0, r0 + SLICE_ROWS) for r0 in range(0, len(rows), SLICE_ROWS)]
        self.group_parts = [
            slice(g0, g0 + SLICE_GROUPS) for g0 in range(0, len(self.starts), SLICE_GROUPS)
        ]
        # in forked processes: one lock per part of rows, held while lowering its entries
        # of the second table (two chunks may lower the same entry)
        self.locks: list | None = None
        # the chunks' distances (_chunk_costs), and the process that made it: a forked
        # process makes its own rather than write to its parent's, page by page
        self._buffer: np.ndarray | None = None
        self._buffer_pid = 0

    def chunk(self, w0: int, pool: Executor | None) -> tuple[float, float, float, int]:
        """Compute the chunk of ``words`` from ``w0`` (``pool``'s threads sharing its
        work, see :func:`_nearest_words`). Returns the CPU seconds on the pool's threads,
        the calling thread's seconds of the back minima and its pool threads' part of
        them, and the chunk's back pairs."""
        inputs, step, rows, vectors, sq_norms = (
            self.inputs,
            self.step,
            self.rows,
            self.vectors,
            self.sq_norms,
        )
        at, starts, ends, other, toward = self.at, self.starts, self.ends, self.other, self.toward
        cosine, overlap, locks = self.cosine, self.overlap, self.locks
        chunk = self.words[w0 : w0 + step]
        padded = np.concatenate([chunk, np.repeat(chunk[-1:], step - len(chunk))])
        right = inputs.vectors[padded].T
        chunk_sq = inputs.sq_norms[chunk]
        width = len(chunk)
        # a word's cost to itself is exactly 0, as in word_distances (both sorted, unique)
        _, same_row, same_word = np.intersect1d(
            rows, chunk, assume_unique=True, return_indices=True
        )
        column = np.full(len(rows), -1, dtype=np.int64)  # a row's column in `chunk`
        column[same_row] = same_word
        out, chosen = self.out, self.other_groups
        if self.block:
            # the costs written straight into the block's rows: a chunk's distances
            # [rows x width] written, then transposed into the block, were three passes
            # over 65 MB a chunk at 85,635 passages (the transpose alone 2.3-5 ms of a
            # query's 8-11 ms of set-up)

            def block_costs(part):
                products = (vectors[part] @ right)[:, :width]
                _costs32_into(products, sq_norms[part], chunk_sq, cosine, out, w0, part.start)

            worker = _share(pool, block_costs, self.row_parts)
            out[w0 + same_word, same_row] = 0.0
            if overlap:  # from the chunk's rows of the block, as the chunk's distances
                groups = chosen if chosen is not None else (starts, ends)
                _other_minimum(out[w0 : w0 + width].T, at, groups[0], groups[1], column, other)
            # its back minima from the whole block, once (back_from_block)
            return worker, 0.0, 0.0, 0
        # word_costs' arithmetic and the cast to float32 in one pass over the products
        d32 = self._chunk_costs(width)

        def costs(part):
            products = (vectors[part] @ right)[:, :width]
            _costs32(products, sq_norms[part], chunk_sq, cosine, d32[part])

        worker = _share(pool, costs, self.row_parts)
        d32[same_row, same_word] = 0.0

        def minima(part):
            if overlap and chosen is None:
                _other_minimum(d32, at, starts[part], ends[part], column, other)
            _group_minimum(d32, at, starts[part], ends[part], out, part.start, w0)

        worker += _share(pool, minima, self.group_parts)
        if overlap and chosen is not None:
            _other_minimum(d32, at, chosen[0], chosen[1], column, other)
        inside = (self.back_indices >= w0) & (self.back_indices < w0 + len(chunk))
        group, to_column = self.back_group[inside], self.back_indices[inside] - w0

        def back(part):
            if locks is None:
                _back_minimum(d32[part], group, to_column, toward[part])
                return
            with locks[part.start // SLICE_ROWS]:
                _back_minimum(d32[part], group, to_column, toward[part])

        back0 = time.thread_time()
        spent = _share(pool, back, self.row_parts)
        return worker + spent, time.thread_time() - back0, spent, int(inside.sum())

    def _chunk_costs(self, width: int) -> np.ndarray:
        """A chunk's distances, float32 [rows, ``width``], contiguous (without the
        block): a view of one buffer per process, made by its first chunk (a chunk's own
        array, 65 MB a chunk at 85,635 passages, came from the system each time, and
        every page of it faulted in again)."""
        if self._buffer is None or self._buffer_pid != os.getpid():
            self._buffer = np.empty(len(self.rows) * self.step, dtype=np.float32)
            self._buffer_pid = os.getpid()
        return self._buffer[: len(self.rows) * width].reshape(len(self.rows), width)

    def back_from_block(self, chunks: list[int]) -> int:
        """With the block: the second table, each row's minimum over each back group's
        words, from the block's rows of the ``chunks`` computed (all but in a partial
        build), a group's words at a time (:func:`_block_back_minimum`); returns the
        pairs read."""
        computed = np.zeros(len(self.words), dtype=bool)
        for w0 in chunks:
            computed[w0 : w0 + self.step] = True
        _block_back_minimum(self.out, self.back_indptr, self.back_indices, computed, self.toward)
        return int(computed[self.back_indices].sum())


def _distinct(flat: np.ndarray, vocabulary: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)`` (int64) for entries in [0, vocabulary), by
    marking the words present instead of sorting (20 Newsgroups' 1.9 M entries: 0.27 s
    sorted, run before a job's processes can share any work)."""
    flat = np.asarray(flat, dtype=np.int64)
    present = np.zeros(vocabulary, dtype=bool)
    present[flat] = True
    position = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(np.int64), position[flat]


def _private_pages(shape: tuple[int, ...], dtype) -> np.ndarray:
    """A new array in anonymous private memory of 4 KB pages. numpy asks for huge pages
    for a large array; on this project's VMs the huge pages faulted in cost more system
    time than the small pages they replace (85,635 passages, the set-up's 715 MB block:
    2-4 ms a query against 2). A process forked after it is written gets its pages
    mapped (copy on write), so reading them costs no faults."""
    count = int(np.prod(shape))
    memory = mmap.mmap(-1, max(count * np.dtype(dtype).itemsize, 1), flags=mmap.MAP_PRIVATE)
    if hasattr(mmap, "MADV_NOHUGEPAGE"):
        memory.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(memory, dtype=dtype, count=count).reshape(shape)


def _local(shape: tuple[int, ...], dtype, fill: float | None = None) -> np.ndarray:
    return np.empty(shape, dtype=dtype) if fill is None else np.full(shape, fill, dtype=dtype)


#: a build of the nearest-word tables, while forked processes compute its chunks
_BUILD: _NearestWords | None = None
#: in a forked process of a search job (set-up or query worker): its one-thread BLAS
#: limit, held for the process's life
_CHILD_BLAS = None


def child_process_start() -> None:
    """What a search job's forked process (:func:`_chunks_in_processes`, the search's
    workers) does first: a signal ends it at once (the parent says the job was
    interrupted, and one that died alone fails the job), and BLAS runs on one thread, so
    that N processes use N cores."""
    global _CHILD_BLAS
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _CHILD_BLAS = _blas().limit(limits=1, user_api="blas")


def _build_chunk(w0: int) -> tuple[float, float, int]:
    """In a forked process: chunk ``w0`` of the build; returns (its CPU seconds, those
    of its back minima, its back pairs)."""
    cpu0 = time.process_time()
    _, back, _, pairs = _BUILD.chunk(w0, None)
    return time.process_time() - cpu0, back, pairs


def _chunks_in_processes(
    build: _NearestWords, chunks: list[int], processes: int
) -> tuple[float, float, float, int]:
    """The ``chunks`` of ``build`` in ``processes`` forked processes, each taking the next
    chunk when it finishes one (its tables are in shared memory); returns what
    :meth:`_NearestWords.chunk` does, summed, all of it the processes' CPU. A process
    that dies is a WmdevalError."""
    global _BUILD
    context = multiprocessing.get_context("fork")
    build.locks = [context.Lock() for _ in build.row_parts]
    _BUILD = build
    worker = back = 0.0
    pairs = 0
    pool = ProcessPoolExecutor(
        min(processes, len(chunks)), mp_context=context, initializer=child_process_start
    )
    try:
        for future in as_completed([pool.submit(_build_chunk, w0) for w0 in chunks]):
            try:
                seconds, back_seconds, back_pairs = future.result()
            except BrokenProcessPool as error:
                raise io.WmdevalError(
                    "wmd search: a process building the lower bounds died (killed by a "
                    "signal, e.g. over the job's memory)"
                ) from error
            worker += seconds
            back += back_seconds
            pairs += back_pairs
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _BUILD = None
        build.locks = None
    return worker, 0.0, back, pairs


def _share(pool: Executor | None, work, parts: list) -> float:
    """``work(part)`` for every part: on ``pool``'s threads if given, returning their
    thread CPU seconds (the calling thread's clock does not see them); else in turn on
    the calling thread, returning 0."""
    if pool is None:
        for part in parts:
            work(part)
        return 0.0

    def timed(part):
        t0 = time.thread_time()
        work(part)
        return time.thread_time() - t0

    return sum(pool.map(timed, parts))


@numba.njit(nogil=True, inline="always")
def _word_cost(product, sq_a, sq_b, cosine):  # pragma: no cover - compiled
    """One entry of :func:`~.solver.word_costs` from its product: the same float64
    operations in the same order (so the same value)."""
    if cosine:
        return max(1.0 - product, 0.0)
    v = product * -2.0
    v += sq_a
    v += sq_b
    return np.sqrt(max(v, 0.0))


@_kernel
def _costs32(products, sq_a, sq_b, cosine, out):  # pragma: no cover - compiled
    """out = float32(word_costs(products)) (:func:`_word_cost`), in one pass instead of
    five and a cast."""
    for i in range(products.shape[0]):
        for j in range(products.shape[1]):
            out[i, j] = _word_cost(products[i, j], sq_a[i], sq_b[j], cosine)


#: Rows and columns of the tiles :func:`_costs32_into` writes at a time.
TRANSPOSE_TILE = 32


@_kernel
def _costs32_into(products, sq_a, sq_b, cosine, block, w0, r0):  # pragma: no cover
    """block[w0 + j, r0 + i] = :func:`_costs32`'s out[i, j]: the same float64 operations
    on the same products, so the same bits, written transposed into the distance block
    ([words x rows]), a tile at a time (its reads and writes then stay within a few
    cache lines per row)."""
    rows, width = products.shape
    for i0 in range(0, rows, TRANSPOSE_TILE):
        i1 = min(i0 + TRANSPOSE_TILE, rows)
        for j0 in range(0, width, TRANSPOSE_TILE):
            j1 = min(j0 + TRANSPOSE_TILE, width)
            for j in range(j0, j1):
                into = block[w0 + j]
                for i in range(i0, i1):
                    into[r0 + i] = _word_cost(products[i, j], sq_a[i], sq_b[j], cosine)


#: Groups whose minima :func:`_group_minimum` takes together before it writes them out.
GROUP_TILE = 64


@_kernel
def _group_minimum(d, at, starts, ends, out, g0, w0):  # pragma: no cover - compiled
    """out[w0 + j, g0 + g] = the minimum of d[at[e], j] over starts[g] <= e < ends[g].

    Whole rows at a time: each is contiguous, so the reads stream and the minimum
    vectorises (20 Newsgroups, 256 columns: 0.15 s for 1.6 M entries, 8x a loop over
    bands of 32 columns and 25x the numpy gather and reduceat). GROUP_TILE groups' rows
    of minima at a time, in a small buffer, then written to their columns of ``out``
    (the layout of LowerBounds' products) a run of GROUP_TILE per row: the groups' rows
    were a [groups x columns] block copied transposed into ``out`` afterwards, a pass
    over 350 MB with a stride of a row per entry for each chunk of 1,024 words at 85,635
    documents (most of a chunk's time outside the kernels). A minimum is exact, so the
    same bits."""
    width = d.shape[1]
    tile = np.empty((GROUP_TILE, width), dtype=np.float32)
    for t0 in range(0, len(starts), GROUP_TILE):
        t1 = min(t0 + GROUP_TILE, len(starts))
        for g in range(t0, t1):
            low = tile[g - t0]
            low[:] = np.inf
            for e in range(starts[g], ends[g]):
                row = d[at[e]]
                for j in range(width):
                    low[j] = min(low[j], row[j])
        for j in range(width):
            into = out[w0 + j]
            for g in range(t0, t1):
                into[g0 + g] = tile[g - t0, j]


@_kernel
def _back_minimum(d, group, column, toward):  # pragma: no cover - compiled
    """toward[r, group[p]] = min(itself, d[r, column[p]]) for every row r and pair p:
    each row of ``d`` and of ``toward`` is read once, from the cache."""
    for r in range(d.shape[0]):
        row = d[r]
        low = toward[r]
        for p in range(len(group)):
            low[group[p]] = min(low[group[p]], row[column[p]])


#: Back groups whose minima :func:`_block_back_minimum` takes together.
BACK_TILE = 16


@_kernel
def _block_back_minimum(block, indptr, indices, computed, toward):  # pragma: no cover
    """toward[r, g] = min(itself, block[w, r]) over the words w = indices[p] of each
    group g (indptr[g] <= p < indptr[g + 1]) whose row of ``block`` (the distance block,
    transposed: [words x rows]) is ``computed``: :func:`_back_minimum`'s minima, the same
    values (a minimum is exact), each a pass over one contiguous row of the block that
    vectorises, where that kernel took a scattered entry per pair (85,635 passages, 490
    queries: 1.2 s). BACK_TILE groups at a time, their rows of minima then written to
    their columns of ``toward`` a row at a time."""
    rows = toward.shape[0]
    groups = len(indptr) - 1
    low = np.empty((BACK_TILE, rows), dtype=np.float32)
    for g0 in range(0, groups, BACK_TILE):
        g1 = min(g0 + BACK_TILE, groups)
        for g in range(g0, g1):
            mine = low[g - g0]
            mine[:] = np.inf
            for p in range(indptr[g], indptr[g + 1]):
                if not computed[indices[p]]:
                    continue
                source = block[indices[p]]
                for r in range(rows):
                    mine[r] = min(mine[r], source[r])
        for r in range(rows):
            into = toward[r]
            for g in range(g0, g1):
                into[g] = min(into[g], low[g - g0, r])


@_kernel
def _other_minimum(d, at, starts, ends, column, other):  # pragma: no cover - compiled
    """other[e] = min of d[at[f], column[at[e]]] over the other entries f of e's group,
    for every entry e whose row has a column (``column[at[e]] >= 0``); inf alone."""
    for g in range(len(starts)):
        for e in range(starts[g], ends[g]):
            j = column[at[e]]
            if j < 0:
                continue
            low = np.inf
            for f in range(starts[g], ends[g]):
                if f != e:
                    low = min(low, d[at[f], j])
            other[e] = low


class LowerBounds:
    """Lower bounds of WMD between fixed query documents and every document.

    Built once per query set (a search job's shard): the query words' distance to the
    nearest word of every document, and every word's distance to the nearest word of
    every query. :meth:`rows` then costs two sparse products per block of queries.

    Each one-sided relaxation is tightened by overlapping mass reduction (OMR, Atasu and
    Mittelholzer 2019): a word both documents hold can send to itself, at cost 0, only
    as much mass as the other document has there; RWMD sends it all. The excess goes to
    the nearest *other* word of the other document. Any transport plan obeys that limit
    (x_ww <= the other side's weight of w), so the bound stays <= the WMD. It costs one
    pass over the word-sharing pairs (the postings of the query's words).

    ``overlap=False`` builds no OMR tables (each word's nearest other word, the
    postings), for plain RWMD alone: :meth:`rows` then refuses ``omr=True``. The other
    tables, hence the bits of the rows without OMR, are the same either way.

    ``pool``: an executor whose threads share the nearest-word tables' work (the same
    bits, see :func:`_nearest_words`); ``timing["worker_seconds"]`` is then the thread
    CPU they spent, which the building thread's clock does not count. ``processes`` > 1:
    forked processes share it instead (the same bits; ``timing["worker_seconds"]`` their
    CPU).

    ``block`` (default :func:`forward_block`): keep the distance block the tables come
    from instead of building the query -> c table (``to_documents``): :meth:`full_values`
    then takes a candidate's terms from the block, and the table is built from it only
    if :meth:`rows` reads it. The same bits either way.
    """

    def __init__(
        self,
        inputs: WmdInputs,
        queries: np.ndarray,
        _every: int = 1,
        overlap: bool = True,
        pool: Executor | None = None,
        processes: int = 1,
        block: bool | None = None,
    ):
        # _every > 1: a partial build, see setup_seconds_estimate
        self.timing: dict = {}
        # thread -> the scratch arrays of full_values (_scratch)
        self._scratches: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # full_values' entries whose centroid bound came from _centroid_rows
        self.centroid_checks = 0
        # (block, its centroid bound rows): see _centroid_rows
        self._centroids: tuple[int, np.ndarray] | None = None
        # (documents, their rows of the weights): see cheap_rows
        self._reach: tuple[np.ndarray, sp.csr_matrix] | None = None
        self.inputs = inputs
        self.queries = np.asarray(queries, dtype=np.int64)
        weights = weight_matrix(inputs)
        self.weights = weights
        # stable_products' other side, padded once; the centroids are a view of it
        self.padded_means = padded_rows(centroids(inputs))
        self.means = self.padded_means[: inputs.n]
        self.sq_means = np.einsum("ij,ij->i", self.means, self.means)
        filled = ~inputs.empty
        self.filled = np.flatnonzero(filled)
        query_weights = weights[self.queries]
        self.vocabulary = np.unique(query_weights.indices)
        self.local = sp.csr_matrix(
            (
                query_weights.data,
                np.searchsorted(self.vocabulary, query_weights.indices),
                query_weights.indptr,
            ),
            shape=(len(self.queries), len(self.vocabulary)),
        )
        # query -> c: distance of each query word to the nearest word of each document,
        # stored [query vocabulary, documents] for the sums of `rows` (`to_documents`);
        # c -> query: distance of every word to the nearest word of each query, stored
        # [vocabulary, queries] (as the kernel writes it); and for OMR each query word's
        # distance to the nearest other word of every document holding it. All three
        # from one distance block: every document word x the query words.
        if block is None:
            block = forward_block(inputs)
        self.block = block
        # with `block`: the distance block itself, [query vocabulary x distinct document
        # words], and each CSR entry's column of it; query -> c is then taken from it
        # per pair asked for (full_values), or whole when `to_documents` is first read
        self._block: np.ndarray | None = None
        self._block_rows = np.zeros(0, dtype=np.int64)
        self._to_documents: np.ndarray | None = np.zeros(
            (len(self.vocabulary), inputs.n), dtype=np.float32
        )
        self.to_queries = np.zeros((len(inputs.vectors), len(self.queries)), dtype=np.float32)
        # per CSR entry of `weights`; NaN where the word is no query's (OMR never reads it).
        # With `block`, only the queries' own entries at first (`second` completes it from
        # the block when first read; full_values takes a candidate's from the block)
        self._second = np.full(weights.nnz, np.nan)
        self._second_whole = True
        self._block_words = np.zeros(0, dtype=np.int64)
        if len(self.filled) and len(self.vocabulary):
            flat = weights.indices.astype(np.int64)
            # every document a group (an empty one's nearest word is inf: set to 0)
            near, toward, rows, at, other = _nearest_words(
                inputs,
                self.vocabulary,
                flat,
                weights.indptr[:-1],
                self.local.indptr,
                self.local.indices,
                _every,
                self.timing,
                overlap,
                pool,
                processes,
                block,
                self.queries if block else None,
            )
            if block:
                self._block, self._block_rows = near, at
                self._block_words = rows
                self._to_documents = None
                self._second_whole = not overlap
            else:
                near[:, inputs.empty] = 0.0
                self._to_documents = near
            if len(rows) == len(inputs.vectors):  # every word is some document's
                self.to_queries = toward
            else:
                self.to_queries[rows] = toward
            # an empty query has no nearest word: its (unused) column is 0
            self.to_queries[:, np.diff(self.local.indptr) == 0] = 0.0
            self._second = other

        self.postings = None
        if not overlap:
            return
        # OMR: which documents hold each word (CSC of the weights, with the CSR position of
        # each entry)
        at_csr = sp.csr_matrix(
            (np.arange(1, weights.nnz + 1), weights.indices, weights.indptr), shape=weights.shape
        ).tocsc()
        self.postings = (at_csr.indptr, at_csr.indices, at_csr.data - 1)

    @property
    def to_documents(self) -> np.ndarray:
        """float32 [query vocabulary, documents]: the distance from each query word to the
        nearest word of each document (0 for an empty document). Built with the bounds
        where there is no distance block; else taken whole from the block when first
        read (:meth:`rows`), a chunk of words at a time, the same bits."""
        if self._to_documents is None:
            table = np.empty((len(self.vocabulary), self.inputs.n), dtype=np.float32)
            starts, ends = self._groups()
            for w0, distances in self._block_chunks():
                _group_minimum(distances, self._block_rows, starts, ends, table, 0, w0)
            table[:, self.inputs.empty] = 0.0
            self._to_documents = table
        return self._to_documents

    @property
    def second(self) -> np.ndarray:
        """float64 per CSR entry of the weights: the distance from its word, where that is a
        query word, to the nearest other word of its document (inf alone; NaN where the
        word is no query's, or without OMR tables). With the distance block, completed
        from it when first read (:meth:`rows`), a chunk of words at a time: the bits of
        the set-up's (:func:`_other_minimum` of the same distances)."""
        if not self._second_whole:
            starts, ends = self._groups()
            rows = self._block_words
            for w0, distances in self._block_chunks():
                chunk = self.vocabulary[w0 : w0 + distances.shape[1]]
                _, same_row, same_word = np.intersect1d(
                    rows, chunk, assume_unique=True, return_indices=True
                )
                column = np.full(len(rows), -1, dtype=np.int64)  # a row's column in `chunk`
                column[same_row] = same_word
                _other_minimum(distances, self._block_rows, starts, ends, column, self._second)
            self._second_whole = True
        return self._second

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """Each document's first and past-last CSR entry, int64 (the kernels' groups)."""
        indptr = self.weights.indptr.astype(np.int64)
        return indptr[:-1], indptr[1:]

    def _block_chunks(self):
        """(w0, the distances of query words w0.. to every corpus word, float32 [corpus
        words x CHUNK_WIDTH words], contiguous): the block a chunk at a time, in the
        layout the set-up's minima kernels read."""
        for w0 in range(0, len(self.vocabulary), CHUNK_WIDTH):
            yield w0, np.ascontiguousarray(self._block[w0 : w0 + CHUNK_WIDTH].T)

    def rows(
        self, at: np.ndarray, omr: bool = True, wcd: bool = True, plain: bool = False
    ) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """max(WCD, RWMD with OMR) from queries ``self.queries[at]`` to every document,
        float64 [len(at), n]; NaN where either document is empty. ``omr=False``: plain
        RWMD; ``wcd=False``: the relaxation alone. Under a cosine ground cost (WRD) the
        centroid part is :func:`centroid_bound`'s, not WCD. ``plain``: also the plain
        RWMD rows, returned second (the bits of ``rows(at, omr=False, wcd=False)``, from
        the same two sums before OMR raises them: RWMD as a method, ``search.relaxed_lists``
        and ``embedding.relaxed_wmd_matrix``)."""
        if omr and self.postings is None:
            raise ValueError("LowerBounds built with overlap=False has no OMR tables")
        at = np.asarray(at, dtype=np.int64)
        rows = self.queries[at]
        local = self.local[at]
        forward = np.zeros((len(at), self.inputs.n))
        _weighted_rows(local.indptr, local.indices, local.data, self.to_documents, forward)
        backward = np.asarray(self.weights @ self.to_queries[:, at].astype(np.float64)).T
        relaxed = self._undefined(np.maximum(forward, backward), rows) if plain else None
        if omr:
            for start in range(0, len(at), 64):
                part = slice(start, start + 64)
                more_forward, more_backward = self._overlap(rows[part])
                forward[part] += more_forward
                backward[part] += more_backward
        bound = np.maximum(forward, backward)
        if wcd:
            bound = np.fmax(bound, self._centroid_rows(at))
        bound = self._undefined(bound, rows)
        return bound if relaxed is None else (bound, relaxed)

    def cheap_rows(self, at: np.ndarray, documents: np.ndarray | None = None) -> np.ndarray:
        """The part of :meth:`rows` whose cost per query does not grow with the documents'
        words times the query's, float64 [len(at), n]: the c -> query relaxation without
        OMR (one sparse product over the corpus, from the [vocabulary x queries] table),
        NaN where either document is empty. A lower bound of :meth:`rows`' value in every
        entry: OMR only adds non-negative terms (a float64 sum with a non-negative term
        is never below the sum without it), the forward side and the centroid bound only
        raise it. :meth:`full_values` then gives :meth:`rows`' value of chosen entries
        from it, the same bits (:class:`LazyRow`).

        ``documents`` (sorted positions): only their entries are computed, the others
        are NaN, from the product of their rows of the weights alone (kept for the next
        call with the same array): a search reads only its lists' candidates, about half
        of the documents for the passage corpus' shards, and a row's sum is over its own
        entries, so the same bits.

        The centroid bound is left out: on the 85,635 passages it is below where a
        search stops for 99 % of the candidates, and its rows (a product over every
        document's centroid) took about a quarter of these rows' time; full_values
        computes it only where it may decide the bound."""
        if self.postings is None:
            raise ValueError("LowerBounds built with overlap=False has no OMR tables")
        at = np.asarray(at, dtype=np.int64)
        table = self.to_queries[:, at].astype(np.float64)
        if documents is None:
            # the same product of the same block as rows(): its columns are independent;
            # each query's row contiguous (a stream gathers tens of thousands of its
            # entries)
            product = np.asarray(self.weights @ table)
            return self._undefined(np.ascontiguousarray(product.T), self.queries[at])
        if self._reach is None or self._reach[0] is not documents:
            self._reach = (documents, self.weights[documents])
        out = np.full((len(at), self.inputs.n), np.nan)
        out[:, documents] = np.asarray(self._reach[1] @ table).T
        return self._undefined(out, self.queries[at])

    def full_values(self, at: int, candidates: np.ndarray, cheap: np.ndarray) -> np.ndarray:
        """``rows([at])[0][candidates]`` (WCD and OMR included), computed for
        ``candidates`` alone from query ``self.queries[at]``'s row of :meth:`cheap_rows`,
        ``cheap`` (its backward side; NaN only where the value is NaN too): the same
        float64 operations in the same order per entry as :meth:`rows` (its forward sum
        over the query's words in CSR order, :func:`_overlap_sums`' terms in the order of
        the query's words, each added to its side after), so the same bits. Its cost is
        the candidates' words times the query's, not the corpus's.

        The centroid bound raises the relaxation only where it is above it: where
        :func:`_centroid_below` proves it is not, the value is the relaxation's, as
        ``np.fmax`` gives it; the rest take it from the query's row of
        :meth:`_centroid_rows` (its block of queries' product, kept)."""
        q = int(self.queries[at])
        candidates = np.asarray(candidates, dtype=np.int64)
        local, weights = self.local, self.weights
        lo, hi = local.indptr[at], local.indptr[at + 1]
        forward = np.zeros(len(candidates))
        more_forward = np.zeros(len(candidates))
        more_backward = np.zeros(len(candidates))
        entry, slot = self._scratch()
        whole = self._second_whole  # else a candidate's from the block
        # with the block and without the whole `second`, the overlap terms come with
        # the forward sums, from the block entries those gathered (_forward_columns)
        fused = self._to_documents is None and not whole
        if self._to_documents is None:
            _forward_columns(
                local.indices[lo:hi],
                local.data[lo:hi],
                self._block,
                self._block_rows,
                weights.indptr,
                candidates,
                slot,
                forward,
                fused,
                q,
                weights.data,
                self._second,
                more_forward,
                more_backward,
            )
        else:
            _weighted_columns(
                local.indices[lo:hi], local.data[lo:hi], self._to_documents, candidates, forward
            )
        if not fused:
            # (the table built from the block but not the whole `second`: only where
            # rows() without OMR came first; the whole `second` is made then)
            _overlap_columns(
                q,
                weights.indptr,
                weights.indices,
                weights.data,
                self.second,
                candidates,
                entry,
                more_forward,
                more_backward,
            )
        forward += more_forward
        back = cheap[candidates] + more_backward
        bound = np.maximum(forward, back)
        below = np.empty(len(candidates), dtype=bool)
        _centroid_below(
            self.means,
            self.sq_means,
            q,
            candidates,
            bound,
            self.inputs.ground_cost == "cosine",
            below,
        )
        rest = np.flatnonzero(~below)
        if len(rest):
            centroid = self._centroid_rows(np.array([at], dtype=np.int64))[0]
            bound[rest] = np.fmax(bound[rest], centroid[candidates[rest]])
        self.centroid_checks += len(rest)
        bound[self.inputs.empty[candidates]] = np.nan
        if self.inputs.empty[q]:
            bound[:] = np.nan
        return bound

    def _scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """The calling thread's scratch arrays of :meth:`full_values`' kernels, -1 per
        vocabulary word and per block row, which the kernels leave so: made once (two
        fresh ones per call cost about 60 us at 85,635 passages, and a query's streams
        make several calls)."""
        thread = threading.get_ident()
        scratch = self._scratches.get(thread)
        if scratch is None:
            rows = self._block.shape[1] if self._block is not None else 0
            scratch = (
                np.full(self.weights.shape[1], -1, dtype=np.int64),
                np.full(rows, -1, dtype=np.int64),
            )
            self._scratches[thread] = scratch
        return scratch

    def _centroid_rows(self, at: np.ndarray) -> np.ndarray:
        """The centroid bound (:func:`centroid_bound`) from queries ``self.queries[at]`` to
        every document, float64 [len(at), n], from products of whole blocks of
        PRODUCT_WIDTH consecutive queries (``self.queries[b * PRODUCT_WIDTH:]``, the last
        short), the latest block kept for the next call. A row's bits are its own alone
        (:func:`stable_products`), so they do not depend on the blocks; the search asks
        for BOUND_ROWS queries at a time, in order, and computed a whole product of
        PRODUCT_WIDTH rows for each call, most of it padding."""
        out = np.empty((len(at), self.inputs.n))
        for block in np.unique(at // PRODUCT_WIDTH).tolist():
            mine = np.flatnonzero(at // PRODUCT_WIDTH == block)
            if self._centroids is None or self._centroids[0] != block:
                rows = self.queries[block * PRODUCT_WIDTH : (block + 1) * PRODUCT_WIDTH]
                self._centroids = None  # its memory free before the next block's
                products = stable_products(self.means[rows], self.padded_means, len(self.means))
                values = centroid_bound(
                    self.inputs.ground_cost, products, self.sq_means[rows], self.sq_means
                )
                self._centroids = (block, values)
            out[mine] = self._centroids[1][at[mine] - block * PRODUCT_WIDTH]
        return out

    def _undefined(self, matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``matrix`` (rows of queries ``rows``) with NaN, in place, where either document
        is empty."""
        matrix[:, self.inputs.empty] = np.nan
        matrix[self.inputs.empty[rows]] = np.nan
        return matrix

    def _overlap(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What OMR adds to each side, float64 [len(rows), n] each: over the words query q
        and document c share, the excess weight times the distance to the nearest other
        word (of c for q -> c, of q for c -> q)."""
        weights, n = self.weights, self.inputs.n
        indptr, documents, position = self.postings
        forward = np.zeros((len(rows), n))
        backward = np.zeros((len(rows), n))
        _overlap_sums(
            np.asarray(rows, dtype=np.int64),
            weights.indptr,
            weights.indices,
            weights.data,
            indptr,
            documents,
            position,
            self.second,
            forward,
            backward,
        )
        return forward, backward


@_kernel
def _overlap_sums(
    rows,
    indptr,
    indices,
    data,
    post_indptr,
    post_documents,
    post_position,
    second,
    forward,
    backward,
):  # pragma: no cover - compiled
    """forward[r, c] (backward[r, c]) += the excess weight of query rows[r]'s (of document
    c's) shared words times the distance from each to the nearest other word of c (of the
    query): over the query's entries in CSR order, then the postings of each word in
    order (the order a bincount of the flattened pairs added them in, so the same sums
    without its arrays of every word-sharing pair). A word without excess adds nothing."""
    for r in range(len(rows)):
        q = rows[r]
        for e in range(indptr[q], indptr[q + 1]):
            word = indices[e]
            a = data[e]
            for p in range(post_indptr[word], post_indptr[word + 1]):
                at_c = post_position[p]
                b = data[at_c]
                if a > b:
                    forward[r, post_documents[p]] += (a - b) * second[at_c]
                elif b > a:
                    backward[r, post_documents[p]] += (b - a) * second[e]


@_kernel
def _weighted_rows(indptr, indices, data, table, out):  # pragma: no cover - compiled
    """out[b] += sum of data[e] * table[indices[e]] over the entries e of CSR row b, in
    float64 from the float32 ``table`` as it is (a sparse product wanted the table cast
    to float64 first: the whole [query vocabulary x documents] table per call)."""
    for b in range(len(indptr) - 1):
        acc = out[b]
        for e in range(indptr[b], indptr[b + 1]):
            weight = data[e]
            source = table[indices[e]]
            for j in range(len(acc)):
                acc[j] += weight * source[j]


@_kernel
def _weighted_columns(indices, data, table, columns, out):  # pragma: no cover - compiled
    """out[j] += sum of data[e] * table[indices[e], columns[j]] over the entries e in
    order: :func:`_weighted_rows`' sum of one row, for chosen columns alone (the same
    float64 operations in the same order per column, so the same bits). A table row at a
    time, its columns in the order given (ascending, from the search: the reads then run
    forward through the row, where a column at a time read a scattered entry per word:
    85,635 passages, 4,700 columns of 29 words, 5.8 ms a query)."""
    for e in range(len(indices)):
        weight = data[e]
        source = table[indices[e]]
        for j in range(len(columns)):
            out[j] += weight * source[columns[j]]


@_kernel
def _forward_columns(
    words,
    data,
    block,
    at,
    indptr,
    columns,
    slot,
    out,
    overlap,
    q,
    weights,
    second,
    forward,
    backward,
):  # pragma: no cover - compiled
    """:func:`_weighted_columns` over the table :func:`_group_minimum` would write, from
    the distance block it would read (``block``: transposed, [words x rows]; ``at``:
    each CSR entry's row): out[j] += data[e] * (the minimum of block[words[e], at[f]]
    over document columns[j]'s entries f; 0 for an empty document), over the entries e
    in order. A minimum is exact, so each term is the table's float32 value and the
    sums the same bits; the cost is the candidates' words times the query's, not the
    corpus's.

    The block's entries the candidates need are first copied into a small table, a row
    per distinct document word, a column per query word, four of the query words'
    rows of the block at a time; each candidate's minima then read a short contiguous row per
    word it holds. Read from the block directly, every term was a scattered read
    (85,635 passages: 15.5 ms a query, this 5.7). ``slot``: -1 per block row (scratch,
    left so).

    ``overlap``: also :func:`_overlap_columns`' terms (into ``forward`` and
    ``backward``; ``weights``: its ``data``; ``second``: the query's own entries). A
    candidate's nearest other word to a word it shares with the query is the minimum of
    the block's distances from that word to its other words (:func:`_other_minimum`'s
    value, inf alone), read here from the small table, which holds them; its entries
    find the query's entry of their word from the row they read (a row is a distinct
    word), not from a table over the vocabulary. The same terms in the same order, so
    the same bits. On 85,635 passages the forward and overlap terms took 4.5 ms a query
    this way, 5.1 in two kernels, the second reading the block (the least of six
    replays of a shard's calls each)."""
    count = 0
    for j in range(len(columns)):
        count += indptr[columns[j] + 1] - indptr[columns[j]]
    taken = np.empty(count, dtype=np.int64)  # the block rows, in order of first need
    entry_slot = np.empty(count, dtype=np.int64)
    starts = np.zeros(len(columns) + 1, dtype=np.int64)
    k = 0
    distinct = 0
    for j in range(len(columns)):
        c = columns[j]
        for f in range(indptr[c], indptr[c + 1]):
            r = at[f]
            if slot[r] < 0:
                slot[r] = distinct
                taken[distinct] = r
                distinct += 1
            entry_slot[k] = slot[r]
            k += 1
        starts[j + 1] = k
    width = len(words)
    near = np.empty((distinct, width), dtype=np.float32)
    # four of the query's block rows at a time: four reads in flight per row taken and
    # one short run written in `near` (one row at a time, its writes stride the table:
    # 85,635 passages, the least of 16 replays of a shard's calls, 3.7 ms a query
    # against 4.4)
    e = 0
    while e + 4 <= width:
        source0 = block[words[e]]
        source1 = block[words[e + 1]]
        source2 = block[words[e + 2]]
        source3 = block[words[e + 3]]
        for i in range(distinct):
            r = taken[i]
            row = near[i]
            row[e] = source0[r]
            row[e + 1] = source1[r]
            row[e + 2] = source2[r]
            row[e + 3] = source3[r]
        e += 4
    while e < width:
        source = block[words[e]]
        for i in range(distinct):
            near[i, e] = source[taken[i]]
        e += 1
    # with ``overlap``: the query's entry of each distinct row that is one of its words
    # (a row is a distinct word), -1 for the others, so that a candidate's entries find
    # their shared words from the row they read anyway
    first = indptr[q] if overlap else 0
    shared = np.full(distinct if overlap else 0, -1, dtype=np.int64)
    if overlap:
        for e in range(first, indptr[q + 1]):
            s = slot[at[e]]
            if s >= 0:
                shared[s] = e
    low = np.empty(width, dtype=np.float32)
    for j in range(len(columns)):
        if starts[j] == starts[j + 1]:
            low[:] = 0.0
        else:
            low[:] = np.inf
            for f in range(starts[j], starts[j + 1]):
                row = near[entry_slot[f]]
                for e in range(width):
                    low[e] = min(low[e], row[e])
        acc = out[j]
        for e in range(width):
            acc += data[e] * low[e]
        out[j] = acc
        if not overlap:
            continue
        # _overlap_columns' terms, in its order (the candidate's entries in order), the
        # nearest other word read from `near`
        c = columns[j]
        ahead = 0.0
        behind = 0.0
        for f in range(starts[j], starts[j + 1]):
            e = shared[entry_slot[f]]
            if e < 0:
                continue
            a = weights[e]
            b = weights[indptr[c] + f - starts[j]]
            if a > b:
                column = e - first
                other = np.inf
                for g in range(starts[j], starts[j + 1]):
                    if g != f:
                        other = min(other, near[entry_slot[g], column])
                ahead += (a - b) * other
            elif b > a:
                behind += (b - a) * second[e]
        forward[j] += ahead
        backward[j] += behind
    for i in range(distinct):
        slot[taken[i]] = -1


@_kernel
def _overlap_columns(
    q, indptr, indices, data, second, columns, entry, forward, backward
):  # pragma: no cover - compiled
    """forward[j] (backward[j]) += :func:`_overlap_sums`' terms of the pair (query q,
    document columns[j]), for chosen documents alone, in the order that kernel adds them:
    over q's entries in CSR order, which is the order of their words, as the document's
    own entries run (both CSR rows are sorted). ``entry``: -1 per vocabulary row (scratch,
    left so): q's entry of each of its words while this runs, so a document's entries
    find theirs without a search. ``second`` whole (with the distance block,
    :func:`_forward_columns` adds these terms instead)."""
    for e in range(indptr[q], indptr[q + 1]):
        entry[indices[e]] = e
    for j in range(len(columns)):
        c = columns[j]
        ahead = 0.0
        behind = 0.0
        for f in range(indptr[c], indptr[c + 1]):
            e = entry[indices[f]]
            if e < 0:
                continue
            a = data[e]
            b = data[f]
            if a > b:
                ahead += (a - b) * second[f]
            elif b > a:
                behind += (b - a) * second[e]
        forward[j] += ahead
        backward[j] += behind
    for e in range(indptr[q], indptr[q + 1]):
        entry[indices[e]] = -1


class LazyRow:
    """One query's :meth:`LowerBounds.rows` value, computed entry by entry as asked:
    ``cheap`` (its lower bound, :meth:`LowerBounds.cheap_rows`) for every document from
    the start, the value itself (:meth:`values`) only for the documents asked for, kept
    in ``full`` (``done`` marks them). ``seconds``: the thread CPU of :meth:`values`,
    ``computed``: the entries it computed."""

    __slots__ = (
        "lower",
        "at",
        "cheap",
        "full",
        "done",
        "seconds",
        "computed",
    )

    def __init__(self, lower: LowerBounds, at: int, cheap: np.ndarray):
        self.lower, self.at, self.cheap = lower, at, cheap
        self.full = np.full(len(cheap), np.nan)
        self.done = np.zeros(len(cheap), dtype=bool)
        self.seconds = 0.0
        self.computed = 0

    def values(self, candidates: np.ndarray) -> np.ndarray:
        """The values of ``candidates`` (positions), computing those not yet computed."""
        missing = candidates[~self.done[candidates]]
        if len(missing):
            t0 = time.thread_time()
            self.full[missing] = self.lower.full_values(self.at, missing, self.cheap)
            self.done[missing] = True
            self.computed += len(missing)
            self.seconds += time.thread_time() - t0
        return self.full[candidates]

    def __getitem__(self, c: int) -> float:
        if not self.done[c]:
            self.values(np.array([c], dtype=np.int64))
        return self.full[c]


@_kernel
def take_below(candidates, lower, threshold, fresh):  # pragma: no cover - compiled
    """Moves the candidates whose ``lower`` is at most ``threshold`` (every one, NaN too,
    where the threshold is inf) to ``fresh``, in order, and packs the others with their
    lower parts to the front of ``candidates`` and ``lower``, in order: (taken, left).
    One pass in place, where a boolean mask and three copies made new arrays."""
    every = threshold == np.inf
    taken = 0
    left = 0
    for i in range(len(candidates)):
        v = lower[i]
        if every or v <= threshold:
            fresh[taken] = candidates[i]
            taken += 1
        else:
            candidates[left] = candidates[i]
            lower[left] = v
            left += 1
    return taken, left


def forward_block(inputs: WmdInputs) -> bool:
    """Whether :class:`LowerBounds` keeps its distance block ([distinct document words x
    query words]) instead of the query -> c table ([query words x documents]): where the
    vocabulary is no larger than the documents, so the block is no larger than the table
    it replaces (the set-up's memory, :func:`~.pairs.setup_batches`, counts the table).
    The block spares the set-up a pass over every document's words per query word, and a
    lazy search (``search.LAZY_BOUNDS``) reads it only for the few candidates whose full
    cheap bound it computes. The bits are the same either way."""
    return len(inputs.vectors) <= inputs.n


#: :func:`setup_seconds_estimate` computes one chunk of query words in SETUP_EVERY.
SETUP_EVERY = 8


def setup_seconds_estimate(
    inputs: WmdInputs, queries: np.ndarray, every: int = SETUP_EVERY
) -> float:
    """Estimated thread CPU seconds of ``LowerBounds(inputs, queries)``, from a build that
    computes one chunk of the queries' words in ``every`` (chunks of equal size, in
    vocabulary order, so the ones taken span the words): its other work as it ran, plus
    its chunks' CPU scaled to all chunks, :func:`_back_minimum`'s part by the queries'
    word occurrences (it loops over them, and a chunk of frequent words has many) and
    the rest by chunks. A cost forecast times a job's set-up this way at about
    1/``every`` of its chunks' cost, instead of building what the job will build again
    (reviews, 7,700 queries at 300-d: 38.3 s built, scaled by chunks alone 47.8 s)."""
    started = time.thread_time()
    lower = LowerBounds(inputs, queries, _every=every)
    seconds = time.thread_time() - started
    timing = lower.timing
    if not timing.get("chunks_done"):
        return seconds
    chunk, back = timing["chunk_seconds"], timing["back_seconds"]
    estimate = seconds - chunk - back + chunk * timing["chunks"] / timing["chunks_done"]
    if timing["back_pairs_done"]:
        estimate += back * timing["back_pairs"] / timing["back_pairs_done"]
    return estimate


def relaxed_wmd(inputs: WmdInputs, rows: np.ndarray, omr: bool = False) -> np.ndarray:
    """RWMD (the larger one-sided relaxation; with ``omr``, tightened by overlapping mass
    reduction) between documents ``rows`` and every document, float64 [len(rows), n], by
    the linear-complexity method; NaN where either document is empty. Each value is <=
    the exact WMD (up to rounding, see :func:`safety_margin`)."""
    bounds = LowerBounds(inputs, rows, overlap=omr)
    return bounds.rows(np.arange(len(bounds.queries)), omr=omr, wcd=False)


def lower_bounds(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """max(WCD, RWMD with OMR) between documents ``rows`` and every document, float64
    [len(rows), n]; NaN where either document is empty."""
    bounds = LowerBounds(inputs, rows)
    return bounds.rows(np.arange(len(bounds.queries)))


# ---------------------------------------------------------------------------------------------
# Iterative constrained transfers (ICT), one query against chosen candidates

#: Cost-matrix columns (candidate words) per call of :func:`constrained_transfers`'s
#: kernel: bounds its working matrices to u_query x this x 8 B, twice.
TRANSFER_COLUMNS = 4096

#: Nearest targets a word's mass is sent to by repeated selection before the kernel
#: sorts the row instead (a word's mass usually fills one to three targets).
_SELECTIONS = 8


def constrained_transfers(
    inputs: WmdInputs,
    query: int,
    candidates: np.ndarray,
    costs: dict | None = None,
    word_costs: WordCosts | None = None,
) -> np.ndarray:
    """The ICT lower bound (Atasu and Mittelholzer 2019) between document ``query`` and
    each of ``candidates`` (positions in ``inputs``, none empty), float64.

    One side, a -> b: every word i of a sends its weight a_i to the words of b in
    increasing cost order, at most b_j to word j, as if no other word of a competed for
    b_j. That relaxes the exact problem (which also needs the b_j's to add up: any plan
    has x_ij <= b_j and sum_j x_ij = a_i), and each word's greedy fill is the optimum of
    its own relaxed problem, so the result is <= the WMD; with the constraint dropped it
    is RWMD's side, and keeping only the first step's is OMR's, so it is >= both. The
    bound is the larger of the two sides. Costs are the exact solves' (:func:`word
    distances`, a word's cost to itself exactly 0), so the bound's rounding is the
    float64 rounding of its sums, far inside :func:`safety_margin`.

    Computed per query for the candidates the search is about to solve, never for the
    whole collection: its cost is that of the cost matrices plus a few passes over them.
    With ``costs`` (a dict), each candidate's cost matrix [query words, its words] is
    stored there under its position, for :func:`dual_bound` to take instead of computing
    it again. ``word_costs``: the query's :class:`WordCosts`, which gives the matrices
    (the same bits).
    """
    candidates = np.asarray(candidates, dtype=np.int64)
    out = np.empty(len(candidates))
    words_q = inputs.indices[query]
    mass_q = inputs.weights[query]
    sizes = inputs.sizes[candidates]
    start = 0
    while start < len(candidates):
        # as many candidates as fit TRANSFER_COLUMNS (at least one)
        stop = start + max(1, int(np.searchsorted(np.cumsum(sizes[start:]), TRANSFER_COLUMNS)))
        stop = min(stop, len(candidates))
        part = candidates[start:stop].tolist()
        words = np.concatenate([inputs.indices[c] for c in part])
        mass = np.concatenate([inputs.weights[c] for c in part])
        starts = np.zeros(len(part) + 1, dtype=np.int64)
        np.cumsum(sizes[start:stop], out=starts[1:])
        if word_costs is None:
            cost = word_distances(inputs, words_q, words)
        else:
            cost = word_costs.matrix(words)
        out[start:stop] = _transfers(cost, np.ascontiguousarray(cost.T), mass_q, mass, starts)
        if costs is not None:
            for k, c in enumerate(part):
                costs[c] = cost[:, starts[k] : starts[k + 1]].copy()
        start = stop
    return out


@_kernel
def _fill(cost, mass, capacity):  # pragma: no cover - compiled
    """Cost of sending ``mass`` to the cheapest entries of ``cost`` first, at most
    ``capacity[j]`` to entry j. Entries are taken in (cost, position) order: by repeated
    selection for the first few, then from a stable sort (the same order)."""
    m = cost.shape[0]
    total = 0.0
    left = mass
    prev_cost = -np.inf
    prev_at = -1
    taken = 0
    while left > 0.0 and taken < m:
        if taken == _SELECTIONS:
            order = np.argsort(cost, kind="mergesort")
            for t in range(taken, m):
                j = order[t]
                move = min(left, capacity[j])
                total += move * cost[j]
                left -= move
                if left <= 0.0:
                    break
            return total
        best_cost = np.inf
        best_at = -1
        for j in range(m):
            c = cost[j]
            after = c > prev_cost or (c == prev_cost and j > prev_at)
            if after and c < best_cost:
                best_cost = c
                best_at = j
        move = min(left, capacity[best_at])
        total += move * best_cost
        left -= move  # exactly 0 once the capacity covers what was left
        prev_cost = best_cost
        prev_at = best_at
        taken += 1
    return total


@_kernel
def _transfers(cost, cost_t, mass_q, mass, starts):  # pragma: no cover - compiled
    """ICT of the query (rows of ``cost``, weights ``mass_q``) against each candidate k,
    whose words are the columns starts[k]:starts[k + 1] (weights ``mass``); ``cost_t``
    is ``cost`` transposed, contiguous."""
    out = np.empty(len(starts) - 1)
    for k in range(len(starts) - 1):
        lo = starts[k]
        hi = starts[k + 1]
        capacity = mass[lo:hi]
        forward = 0.0
        for i in range(cost.shape[0]):
            forward += _fill(cost[i, lo:hi], mass_q[i], capacity)
        backward = 0.0
        for j in range(lo, hi):
            backward += _fill(cost_t[j], mass[j], mass_q)
        out[k] = max(forward, backward)
    return out


# ---------------------------------------------------------------------------------------------
# Dual bounds from the query's solved pairs


def query_potential(
    inputs: WmdInputs,
    query: int,
    other: tuple[np.ndarray, np.ndarray],
    known: tuple[np.ndarray, np.ndarray] | None = None,
):
    """A potential on every word of document ``query`` from an optimal dual of one of its
    solved pairs: ``other`` = (words, values) of the other document's side. The
    c-transform f(w) = min_l (cost(w, l) - h_l), float64 over ``inputs.indices[query]``,
    centred (any constant shift gives the same bound, and small values keep its rounding
    small). It is the dual's query side wherever the query kept mass, and defined on the
    words the shared-mass reduction dropped too.

    ``known``: (positions into ``inputs.indices[query]``, their costs to ``other``'s
    words), the matrix the solve had (:func:`~.solver.solve_pair_costs`); only the other
    words' costs are computed (by :func:`pair_costs`). A potential only feeds bounds,
    each computed from its candidate's own costs, so where the costs come from changes no
    bound's validity (on 20 Newsgroups at 300 dimensions these matrices were 7 % of a
    search's CPU)."""
    words, values = other
    rows = inputs.indices[query]
    f = np.empty(len(rows))
    rest = np.ones(len(rows), dtype=bool)  # the rows whose costs are computed here
    if known is not None:
        keep, cost = known
        f[keep] = (cost - values[None, :]).min(axis=1)
        rest[keep] = False
    if rest.any():
        f[rest] = (pair_costs(inputs, rows[rest], words) - values[None, :]).min(axis=1)
    return f - f.mean()


def dual_bound(
    inputs: WmdInputs,
    query: int,
    candidate: int,
    potentials: np.ndarray,
    enough: float,
    cost: np.ndarray | None = None,
) -> float:
    """The best dual lower bound of WMD(query, candidate) over ``potentials``, float64
    [P, words of ``query``] (from :func:`query_potential`), stopping at the first one above
    ``enough``; -inf without potentials.

    For any potential f on the query's words, g_j = min_i (cost_ij - f_i) and then
    f'_i = min_j (cost_ij - g_j) >= f_i satisfy f'_i + g_j <= cost_ij, so by weak duality
    sum a_i f'_i + sum b_j g_j is <= the WMD: a bound for every candidate, whatever pair
    the potential came from. The potentials of the query's nearest documents transport
    its words much as its other near documents do, so theirs are tight where RWMD and
    ICT are loose (20 Newsgroups' long posts).

    ``cost``: the pair's word costs [query words, candidate words] if already at hand
    (:func:`constrained_transfers` keeps them); else computed by :func:`pair_costs`.
    """
    if cost is None:
        cost = pair_costs(inputs, inputs.indices[query], inputs.indices[candidate])
    order = np.arange(len(potentials), dtype=np.int64)
    value, _, _ = _dual_kernel(
        cost, inputs.weights[query], inputs.weights[candidate], potentials, order, enough, -1, 0.0
    )
    return float(value)


#: A candidate's dual bound stops after its first DUAL_FIRST potentials unless their best
#: bound reached DUAL_NEAR of ``enough``. On 20 Newsgroups (30 queries, one thread) the
#: proving potential is the first in 91 % of the calls that prove, while a candidate
#: that is solved in the end fails about four calls with all of its fresh potentials,
#: 89 % of the tries in 5 dimensions; one that fails its first 8 and is then proven was
#: within 0.98 of ``enough`` in 79 % (5-d) and 95 % (50-d) of the cases. Against trying
#: them all: 5-d 0.66 -> 0.56 s per query for 192 -> 195 solves, 50-d 0.53 -> 0.50 s for
#: 117.7 -> 118.5.
DUAL_FIRST = 8
DUAL_NEAR = 0.98


def first_dual_bound(
    inputs: WmdInputs,
    query: int,
    candidate: int,
    potentials: np.ndarray,
    order: np.ndarray,
    enough: float,
    cost: np.ndarray | None = None,
) -> tuple[float, int]:
    """(:func:`dual_bound` over the potentials ``potentials[order]``, taken in that order,
    the position in ``potentials`` of the one whose bound passed ``enough``, or -1 if
    none did). The search orders the potentials by how near their source document is
    to the candidate, so a pruned candidate meets its proof after a few potentials, not
    after all of them; after DUAL_FIRST of them the rest are tried only if the best
    bound so far is within DUAL_NEAR of ``enough`` (a bound that far short rarely
    passes later), so the value is that of the potentials actually tried."""
    if cost is None:
        cost = pair_costs(inputs, inputs.indices[query], inputs.indices[candidate])
    value, at, _ = _dual_kernel(
        cost,
        inputs.weights[query],
        inputs.weights[candidate],
        potentials,
        np.asarray(order, dtype=np.int64),
        enough,
        DUAL_FIRST,
        DUAL_NEAR,
    )
    return float(value), int(at)


def nearest_dual_bound(
    inputs: WmdInputs,
    query: int,
    candidate: int,
    potentials: np.ndarray,
    sources: np.ndarray,
    centre: np.ndarray,
    fresh: tuple[int, int],
    tries: int,
    enough: float,
    cost: np.ndarray | None = None,
) -> tuple[float, int]:
    """(:func:`first_dual_bound`'s value over the potentials ``fresh`` = (lo, hi) of
    ``potentials``, taken in increasing squared distance between the centroid of the
    document each was solved against (``sources``, float64 [P, dim]) and the candidate's,
    ``centre`` (:func:`centroids`; stable, so ties keep their order), at most ``tries``, and
    the position in ``potentials`` of the one that gave it, -1 if none was tried: where
    :func:`dual_ascent` starts). One compiled call, the candidate's word costs included
    (:func:`pair_costs`' kernel, unless ``cost`` is given): the search makes one per
    candidate it cannot prune otherwise, thousands per query in 5 dimensions, where the
    Python around three small calls cost as much as their arithmetic."""
    value, _, best = _nearest_dual_kernel(
        inputs.vectors,
        inputs.indices[query],
        inputs.indices[candidate],
        inputs.ground_cost == "cosine",
        _NO_COST if cost is None else cost,
        inputs.weights[query],
        inputs.weights[candidate],
        potentials,
        sources,
        centre,
        fresh[0],
        fresh[1],
        tries,
        enough,
        DUAL_FIRST,
        DUAL_NEAR,
    )
    return float(value), int(best)


_NO_COST = np.empty((0, 0))


@_kernel
def _nearest_dual_kernel(  # pragma: no cover - compiled
    vectors,
    words_q,
    words_c,
    cosine,
    cost,
    mass_q,
    mass_c,
    potentials,
    sources,
    centre,
    lo,
    hi,
    tries,
    enough,
    first,
    near,
):
    if cost.shape[0] == 0:
        cost = _pair_costs(vectors, words_q, words_c, cosine)
    apart = np.empty(hi - lo)
    for t in range(hi - lo):
        total = 0.0
        for k in range(len(centre)):
            step = sources[lo + t, k] - centre[k]
            total += step * step
        apart[t] = total
    order = np.argsort(apart, kind="mergesort")[:tries] + lo
    return _dual_kernel(cost, mass_q, mass_c, potentials, order, enough, first, near)


#: Query words from which :func:`_dual_kernel` (after a candidate's first potential)
#: and :func:`dual_ascent` take their second minima down a transposed copy of the
#: costs: there both minima run along contiguous rows and vectorise (86 x 86 words, 8
#: potentials: 28 us a call against 38), where the copy costs more than it saves on a
#: few words (5 x 120: 8.6 us against 4.5).
DUAL_ACROSS = 16
#: Potentials whose dual bounds :func:`_dual_kernel` computes in one pass over each side
#: of the costs (from DUAL_ACROSS query words, after the first potential alone).
DUAL_BATCH = 4


@_kernel
def _dual_kernel(cost, mass_q, mass_c, potentials, order, enough, first, near):  # pragma: no cover
    n, m = cost.shape
    best = -np.inf
    best_at = -1
    tried = 0
    g = np.empty(m)
    totals = np.empty(DUAL_BATCH)
    costs_t = np.empty((0, 0))
    at = 0
    while at < len(order):
        # the first potential alone, along the rows of the costs (it proves most of the
        # candidates that are proven, and a transposed copy costs about one potential's
        # bound); from DUAL_ACROSS query words the rest DUAL_BATCH at a time, down the
        # copy. Each batch's bounds are then taken in order, as one at a time would take
        # them, and each is the same value either way, so the result is the same
        if at == 0 or n < DUAL_ACROSS:
            size = 1
            totals[0] = _dual_one(cost, mass_q, mass_c, potentials[order[at]], g)
        else:
            if costs_t.shape[0] == 0:
                costs_t = np.ascontiguousarray(cost.T)
            size = min(DUAL_BATCH, len(order) - at)
            _dual_batch(cost, costs_t, mass_q, mass_c, potentials, order[at : at + size], totals)
        for b in range(size):
            p = order[at + b]
            total = totals[b]
            if total > best:
                best = total
                best_at = p
            if best > enough:
                return best, p, p
            tried += 1
            if tried == first and best < near * enough:
                return best, -1, best_at
        at += size
    return best, -1, best_at


@_kernel
def _dual_one(cost, mass_q, mass_c, f, g):  # pragma: no cover - compiled
    """The dual bound of one potential ``f`` (:func:`dual_bound`'s sums in its order),
    along the rows of ``cost``; ``g``: scratch of its columns."""
    n, m = cost.shape
    g[:] = np.inf
    # min() rather than a compare and store, and four running minima in the row
    # minimum, so that both loops vectorise (1.6x on 150-word documents; a minimum
    # is exact in any order, so the bound is the same)
    for i in range(n):
        fi = f[i]
        for j in range(m):
            g[j] = min(g[j], cost[i, j] - fi)
    total = 0.0
    for j in range(m):
        total += mass_c[j] * g[j]
    for i in range(n):
        l0 = l1 = l2 = l3 = np.inf
        j = 0
        while j + 4 <= m:
            l0 = min(l0, cost[i, j] - g[j])
            l1 = min(l1, cost[i, j + 1] - g[j + 1])
            l2 = min(l2, cost[i, j + 2] - g[j + 2])
            l3 = min(l3, cost[i, j + 3] - g[j + 3])
            j += 4
        while j < m:
            l0 = min(l0, cost[i, j] - g[j])
            j += 1
        total += mass_q[i] * min(min(l0, l1), min(l2, l3))
    return total


@_kernel
def _dual_batch(cost, costs_t, mass_q, mass_c, potentials, batch, totals):  # pragma: no cover
    """totals[b] = the dual bound of potential batch[b] (:func:`dual_bound`'s sums in
    its order), for a batch of them in one pass over each side of the costs: a row of
    ``cost`` (a column, of ``costs_t``) is read once for the batch and stays in cache
    while each of its potentials takes its minima along it."""
    n, m = cost.shape
    size = len(batch)
    g = np.empty((size, m))
    h = np.empty((size, n))
    g[:] = np.inf
    h[:] = np.inf
    for i in range(n):
        row = cost[i]
        for b in range(size):
            fi = potentials[batch[b], i]
            gb = g[b]
            for j in range(m):
                gb[j] = min(gb[j], row[j] - fi)
    for j in range(m):
        row = costs_t[j]
        for b in range(size):
            gj = g[b, j]
            hb = h[b]
            for i in range(n):
                hb[i] = min(hb[i], row[i] - gj)
    for b in range(size):
        total = 0.0
        for j in range(m):
            total += mass_c[j] * g[b, j]
        for i in range(n):
            total += mass_q[i] * h[b, i]
        totals[b] = total


#: :func:`dual_ascent`'s steps at most, and the share of ``enough`` its bound must reach
#: within its first ASCENT_TRIAL steps to go on (a candidate it cannot prove is solved
#: after all, so every step spent on it is lost).
ASCENT_STEPS = 20
ASCENT_TRIAL = 5
ASCENT_NEAR = 0.99
#: The value a step aims at, over ``enough`` (Polyak's step needs a target; the optimum,
#: the WMD, is unknown, and a target just above what must be proven reaches it soonest).
ASCENT_TARGET = 1.02


def dual_ascent(
    inputs: WmdInputs,
    query: int,
    candidate: int,
    start: np.ndarray,
    enough: float,
    cost: np.ndarray | None = None,
) -> float:
    """A dual lower bound of WMD(query, candidate) raised by supergradient steps from the
    potential ``start`` on the query's words, until it passes ``enough`` or ASCENT_STEPS
    are taken (or fewer, see ASCENT_TRIAL); the best value seen.

    :func:`dual_bound` of a potential f is D(f) = a.f'' + b.f^c with f^c_j = min_i
    (cost_ij - f_i) and f''_i = min_j (cost_ij - f^c_j): a lower bound for every f, and
    concave in f, with the WMD as its maximum (LP duality). A query's potentials come from
    its solves against other documents; near a candidate they bound it within a few per
    cent, not always beyond the k-th distance. Each step moves f'' along a supergradient,
    a - (the mass of b each word i is the c-transform's minimiser for; a minimiser for f is
    one for f'', as f''^c = f^c), by Polyak's step toward ASCENT_TARGET x ``enough``. On 20
    Newsgroups (50 dimensions) 20 such steps from the query's best potential proved every
    candidate the search solved outside its final top k beyond that k-th distance (the
    potential alone: 80 %), at two passes over the word costs a step. Each value is
    a dual bound as :func:`dual_bound`'s is, so the same safety margin covers it."""
    if cost is None:
        cost = pair_costs(inputs, inputs.indices[query], inputs.indices[candidate])
    return float(
        _ascent_kernel(
            cost,
            inputs.weights[query],
            inputs.weights[candidate],
            np.asarray(start, dtype=np.float64),
            enough,
            ASCENT_STEPS,
            ASCENT_TRIAL,
            ASCENT_NEAR,
            ASCENT_TARGET,
        )
    )


@_kernel
def _ascent_kernel(
    cost, mass_q, mass_c, start, enough, steps, trial, near, target
):  # pragma: no cover - compiled
    n, m = cost.shape
    f = start.copy()
    g = np.empty(m)
    low_at = np.empty(m, dtype=np.int64)
    grad = np.empty(n)
    best = -np.inf
    top = 0.0
    for i in range(n):
        for j in range(m):
            top = max(top, cost[i, j])
    across = n >= DUAL_ACROSS  # the second minima down a transposed copy, as _dual_kernel
    h = np.empty(n)
    costs_t = np.ascontiguousarray(cost.T) if across else np.empty((0, 0))
    for step in range(steps):
        g[:] = np.inf
        for i in range(n):
            fi = f[i]
            for j in range(m):
                v = cost[i, j] - fi
                if v < g[j]:
                    g[j] = v
                    low_at[j] = i
        total = 0.0
        for j in range(m):
            total += mass_c[j] * g[j]
        if across:
            h[:] = np.inf
            for j in range(m):
                gj = g[j]
                row = costs_t[j]
                for i in range(n):
                    h[i] = min(h[i], row[i] - gj)
            for i in range(n):
                f[i] = h[i]
                total += mass_q[i] * h[i]
        else:
            for i in range(n):
                low = np.inf
                for j in range(m):
                    low = min(low, cost[i, j] - g[j])
                f[i] = low
                total += mass_q[i] * low
        if total > best:
            best = total
        if best > enough:
            return best
        if step + 1 == trial and best < near * enough:
            return best
        for i in range(n):
            grad[i] = mass_q[i]
        for j in range(m):
            grad[low_at[j]] -= mass_c[j]
        # the step moves no mass onto a constant shift of f, which changes D only by the
        # rounding of sum(a) - sum(b): unchecked, it drove f to 1e16 and D's sums to
        # nonsense (a one-word query: its supergradient is that rounding alone)
        shift = 0.0
        for i in range(n):
            shift += grad[i]
        shift /= n
        norm = 0.0
        largest = 0.0
        for i in range(n):
            grad[i] -= shift
            norm += grad[i] * grad[i]
            largest = max(largest, abs(grad[i]))
        if largest <= 1e-12:
            return best  # every word's mass is matched: f'' is optimal, D is the WMD
        # Polyak's step, no longer than the largest cost per word (f stays of the costs'
        # magnitude, so D's rounding stays that of dual_bound's sums)
        move = min((target * enough - total) / norm, top / largest)
        centre = 0.0
        for i in range(n):
            f[i] += move * grad[i]
            centre += f[i]
        centre /= n
        for i in range(n):
            f[i] -= centre
    return best


__all__ = [
    "MAX_ENTRIES",
    "RELATIVE_MARGIN",
    "weight_matrix",
    "nearest_other_word",
    "word_distances",
    "safety_margin",
    "margin_scale",
    "scaled_margin",
    "pair_costs",
    "centroids",
    "PRODUCT_WIDTH",
    "stable_products",
    "word_centroid_distance",
    "centroid_bound",
    "LowerBounds",
    "SETUP_EVERY",
    "setup_seconds_estimate",
    "relaxed_wmd",
    "lower_bounds",
    "TRANSFER_COLUMNS",
    "constrained_transfers",
    "query_potential",
    "dual_bound",
    "first_dual_bound",
    "nearest_dual_bound",
    "ASCENT_STEPS",
    "dual_ascent",
]
