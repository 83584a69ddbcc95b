"""Exact Word Mover's Distance matrices, solved in blocks (docs/protocol.md §5 and §7).

WMD between two documents is the optimal-transport cost between their word
weights (L1-normalised counts, or tf-idf for WMD-TF-IDF), with the Euclidean
distance between word embeddings as ground cost, solved exactly with POT's
network simplex. A dataset needs all n(n-1)/2 pairs i < j; they are numbered
row-major (i ascending, then j ascending) and cut into contiguous blocks of
about equal estimated work. A block is the stored unit of work (one file each): it
depends only on the documents and the number of blocks, never on how many jobs or
submissions solve them. One job solves one block; the blocks are gathered afterwards.

Every distance is a function of its pair alone (never of the block layout or of
the thread count), so any layout gives a bit-identical matrix: see
:func:`_row_costs` for the one place where that takes care.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np
import ot
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from ot.lp.emd_wrap import emd_c
from threadpoolctl import ThreadpoolController

from ..core import io, schemas

LOG = logging.getLogger("wmdeval.distances.wmd")

#: Network-simplex iteration cap; far above what documents of a few hundred words need.
MAX_ITER = 1_000_000
#: POT's network-simplex result codes.
_OPTIMAL = 1
_FAILURES = {
    0: "infeasible (marginals of unequal mass?)",
    2: "unbounded",
    3: "iteration limit reached before optimality",
}

#: Work model of one pair for block balancing: (u_i * u_j) ** WORK_EXPONENT + PAIR_OVERHEAD,
#: u = distinct words. Fitted to POT 0.9 network-simplex timings on 300-d word vectors,
#: 5 to 300 words per document: time grows like (u_i u_j)^1.05-1.2 (one unit ~0.023 us
#: on the machine measured) plus ~8 us of fixed cost per pair (~350 units).
WORK_EXPONENT = 1.1
PAIR_OVERHEAD = 350.0

#: Seconds per work unit on the machine the model was fitted on (see WORK_EXPONENT).
SECONDS_PER_UNIT = 0.023e-6

#: Seconds between two progress reports.
PROGRESS_SECONDS = 30.0


@dataclass(frozen=True)
class WmdInputs:
    """Documents prepared for WMD: word rows into ``vectors`` and marginal weights.

    ``vectors`` holds only the words some document uses (in embedding-table order);
    an empty document (no words, or no tf-idf mass) has empty ``indices``/``weights``.
    """

    doc_ids: np.ndarray  # int32 [n]
    words: np.ndarray  # object [V]: the word of each row of `vectors`
    vectors: np.ndarray  # float64 [V, dim]
    sq_norms: np.ndarray  # float64 [V]: squared L2 norm of each row of `vectors`
    offsets: np.ndarray  # int64 [n + 1]: document k owns flat entries offsets[k]:offsets[k+1]
    flat_indices: np.ndarray  # int32 [total]: rows into `vectors`, document after document
    indices: tuple[np.ndarray, ...]  # per document: views into flat_indices
    weights: tuple[np.ndarray, ...]  # per document: float64 marginals summing to 1
    twin: np.ndarray  # int64 [n]: equal for documents with identical marginals; -1 if empty

    @property
    def n(self) -> int:
        return len(self.doc_ids)

    @property
    def sizes(self) -> np.ndarray:
        """Distinct words (with positive weight) per document."""
        return np.diff(self.offsets)

    @property
    def empty(self) -> np.ndarray:
        return self.sizes == 0


# ---------------------------------------------------------------------------------------------
# Preparation


def prepare(documents: pa.Table, embeddings: pa.Table, weighting: str) -> WmdInputs:
    """Word rows and marginals of every document (``weighting``: "bow" or "tfidf").

    "bow": L1-normalised counts. "tfidf": counts * ln(N / df) over these documents,
    L1-normalised; a document whose words all have idf 0 has no mass and is empty.
    Only words with positive weight are kept.
    """
    if weighting not in ("bow", "tfidf"):
        raise ValueError(f"unknown weighting {weighting!r} (expected 'bow' or 'tfidf')")
    n = documents.num_rows
    doc_ids = documents.column("doc_id").to_numpy().astype(np.int32)
    words_col = documents.column("words").combine_chunks()
    counts_col = documents.column("counts").combine_chunks()
    lengths = pc.list_value_length(words_col).to_numpy(zero_copy_only=False).astype(np.int64)
    if not np.array_equal(lengths, pc.list_value_length(counts_col).to_numpy(zero_copy_only=False)):
        raise io.WmdevalError("documents: `words` and `counts` differ in length")
    flat_words = pc.list_flatten(words_col)
    counts = pc.list_flatten(counts_col).to_numpy(zero_copy_only=False).astype(np.float64)
    doc_of = np.repeat(np.arange(n, dtype=np.int64), lengths)

    vocabulary = embeddings.column("word").combine_chunks()
    rows = pc.index_in(flat_words, value_set=vocabulary)
    if rows.null_count:
        first = int(np.flatnonzero(rows.is_null().to_numpy(zero_copy_only=False))[0])
        raise io.WmdevalError(
            f"word {flat_words[first].as_py()!r} of document {doc_ids[doc_of[first]]} "
            "has no embedding"
        )
    rows = rows.to_numpy(zero_copy_only=False).astype(np.int64)
    _check_distinct(rows, doc_of, len(vocabulary), doc_ids)

    mass = counts
    if weighting == "tfidf":
        df = np.bincount(rows[counts > 0], minlength=len(vocabulary))
        mass = counts * np.log(n / np.maximum(df[rows], 1))
    keep = mass > 0
    rows, mass, doc_of = rows[keep], mass[keep], doc_of[keep]
    total = np.bincount(doc_of, weights=mass, minlength=n)
    weights = mass / total[doc_of] if len(mass) else mass

    # Keep only the embedding rows in use: smaller matrix, smaller per-row cost blocks.
    used, flat_indices = np.unique(rows, return_inverse=True)
    flat_indices = flat_indices.astype(np.int32)
    vectors = _vector_matrix(embeddings.column("vector"))[used].astype(np.float64)
    if not np.isfinite(vectors).all():
        raise io.WmdevalError("embeddings: a vector has non-finite values")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_of, minlength=n), out=offsets[1:])
    indices = tuple(flat_indices[offsets[k] : offsets[k + 1]] for k in range(n))
    marginals = tuple(weights[offsets[k] : offsets[k + 1]] for k in range(n))
    return WmdInputs(
        doc_ids=doc_ids,
        words=np.asarray(vocabulary.take(pa.array(used)).to_pylist(), dtype=object),
        vectors=vectors,
        sq_norms=np.einsum("ij,ij->i", vectors, vectors),
        offsets=offsets,
        flat_indices=flat_indices,
        indices=indices,
        weights=marginals,
        twin=_twins(indices, marginals),
    )


def _check_distinct(
    rows: np.ndarray, doc_of: np.ndarray, n_words: int, doc_ids: np.ndarray
) -> None:
    # A word listed twice would be counted twice in df and be two points in the transport.
    key = np.sort(doc_of * n_words + rows)
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if len(repeated):
        doc = doc_ids[key[repeated[0]] // n_words]
        raise io.WmdevalError(f"document {doc} lists the same word twice")


def _vector_matrix(column: pa.ChunkedArray) -> np.ndarray:
    array = column.combine_chunks()
    dim = array.type.list_size
    return array.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)


def _twins(indices: tuple[np.ndarray, ...], weights: tuple[np.ndarray, ...]) -> np.ndarray:
    """Class number of each document's marginal (same words, same weights); -1 if empty."""
    classes: dict[bytes, int] = {}
    twin = np.full(len(indices), -1, dtype=np.int64)
    for k, (idx, w) in enumerate(zip(indices, weights, strict=True)):
        if len(idx):
            twin[k] = classes.setdefault(idx.tobytes() + w.tobytes(), len(classes))
    return twin


# ---------------------------------------------------------------------------------------------
# One pair


def cost_matrix(inputs: WmdInputs, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """Euclidean distances between embedding rows, float64 [len(rows_a), len(rows_b)].

    Squared-norm expansion |a|^2 + |b|^2 - 2 a.b (one matrix product), clipped at 0
    before the square root. A word's distance to itself is set to exactly 0: the
    expansion can leave ~1e-8 there (the square root of a rounding error).
    """
    rows_a = np.asarray(rows_a)
    rows_b = np.asarray(rows_b)
    costs = _distances(
        inputs.vectors[rows_a] @ inputs.vectors[rows_b].T,
        inputs.sq_norms[rows_a],
        inputs.sq_norms[rows_b],
    )
    costs[rows_a[:, None] == rows_b[None, :]] = 0.0
    return costs


def _distances(products: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray) -> np.ndarray:
    """sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), computed in place in ``products``.

    In place because the per-row cost matrices of solve_block can be tens of MB.
    """
    d = products
    d *= -2.0
    d += sq_a[:, None]
    d += sq_b[None, :]
    np.maximum(d, 0.0, out=d)
    return np.sqrt(d, out=d)


def wmd_pair(inputs: WmdInputs, i: int, j: int) -> float:
    """Exact WMD of documents i and j (positions in ``inputs``); NaN if either is empty."""
    a, b = inputs.weights[i], inputs.weights[j]
    if not len(a) or not len(b):
        return float("nan")
    if inputs.twin[i] == inputs.twin[j]:
        return 0.0
    return _wmd(a, b, cost_matrix(inputs, inputs.indices[i], inputs.indices[j]))


def _wmd(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    """Optimal transport cost between marginals a and b (both non-empty, summing to 1)."""
    # One word on one side: its whole mass goes to every word of the other side.
    if len(a) == 1:
        return float(np.dot(b, cost[0]))
    if len(b) == 1:
        return float(np.dot(a, cost[:, 0]))
    # emd_c is what ot.emd2 calls once it has converted and checked its inputs. Called
    # directly it skips ~75 us of Python per pair (ot.emd2 takes ~80 us on a 10 x 10
    # problem, emd_c ~6 us). It wants contiguous float64 arrays.
    _, value, _, _, code = emd_c(a, b, cost, MAX_ITER, 1)
    if code != _OPTIMAL:
        failure = _FAILURES.get(code, f"result code {code}")
        raise io.WmdevalError(f"network simplex did not reach optimality: {failure}")
    return float(value)


def transport(
    inputs: WmdInputs, i: int, j: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Optimal plan and cost matrix of one pair, with the words of their rows and columns."""
    a, b = inputs.weights[i], inputs.weights[j]
    if not len(a) or not len(b):
        raise io.WmdevalError(
            f"document {inputs.doc_ids[i] if not len(a) else inputs.doc_ids[j]} is empty"
        )
    cost = cost_matrix(inputs, inputs.indices[i], inputs.indices[j])
    plan = ot.emd(a, b, cost, numItermax=MAX_ITER)
    return plan, cost, inputs.words[inputs.indices[i]], inputs.words[inputs.indices[j]]


# ---------------------------------------------------------------------------------------------
# Pairs and blocks


def row_starts(n: int, n_rows: int | None = None) -> np.ndarray:
    """Rank of the first pair of each row, int64 [n + 1]; the last entry is the number of
    pairs: n(n-1)/2, or with ``n_rows`` only the first n_rows rows have pairs (j > i)."""
    i = np.arange(n + 1, dtype=np.int64)
    starts = i * (n - 1) - i * (i - 1) // 2
    if n_rows is not None and n_rows < n:
        starts[n_rows + 1 :] = starts[n_rows]
    return starts


def solve_order(doc_ids: np.ndarray, splits: pa.Table | None) -> tuple[np.ndarray, int]:
    """(order, n_rows): the pair grid's document order and how many rows have pairs.

    Five-fold data needs every pair. A one-fold dataset's kNN never reads test x test
    distances, so its training documents come first and only their rows have pairs:
    train x train and train x test, each once (ohsumed: 32 % fewer solves).
    """
    n = len(doc_ids)
    identity = np.arange(n, dtype=np.int64)
    if splits is None or len(np.unique(splits.column("fold").to_numpy())) != 1:
        return identity, n
    is_train = np.isin(
        doc_ids,
        splits.filter(pc.equal(splits.column("subset"), "train")).column("doc_id").to_numpy(),
    )
    order = np.concatenate([identity[is_train], identity[~is_train]])
    return order, int(is_train.sum())


def reorder(inputs: WmdInputs, order: np.ndarray) -> WmdInputs:
    """The same documents in another order (the solve order of :func:`solve_order`)."""
    indices = tuple(inputs.indices[k] for k in order)
    sizes = np.array([len(x) for x in indices], dtype=np.int64)
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate(indices) if len(indices) else inputs.flat_indices[:0]
    return WmdInputs(
        doc_ids=inputs.doc_ids[order],
        words=inputs.words,
        vectors=inputs.vectors,
        sq_norms=inputs.sq_norms,
        offsets=offsets,
        flat_indices=flat.astype(np.int32),
        indices=tuple(flat[offsets[k] : offsets[k + 1]] for k in range(len(order))),
        weights=tuple(inputs.weights[k] for k in order),
        twin=inputs.twin[order],
    )


def _work_per_document(inputs: WmdInputs) -> np.ndarray:
    # Documents with fewer than two words never reach the solver: only the overhead.
    sizes = inputs.sizes.astype(np.float64)
    return np.where(sizes >= 2, sizes**WORK_EXPONENT, 0.0)


def plan_blocks(
    inputs: WmdInputs, n_blocks: int, n_rows: int | None = None
) -> list[tuple[int, int]]:
    """Contiguous [start, stop) pair-rank ranges of about equal estimated work.

    Depends only on the documents and n_blocks. Works a row at a time: the work of
    row i is s_i * sum_{j>i} s_j + overhead * (n-1-i) with s = u ** WORK_EXPONENT,
    and a boundary that falls inside a row is placed with that row's cumulative sum.
    """
    if n_blocks < 1:
        raise ValueError("n_blocks must be >= 1")
    n = inputs.n
    starts = row_starts(n, n_rows)
    total_pairs = int(starts[-1])
    if total_pairs == 0:
        return [(0, 0)] * n_blocks
    s = _work_per_document(inputs)
    later = np.append(np.cumsum(s[::-1])[::-1][1:], 0.0)  # sum of s over the rows below
    pairs_in_row = np.diff(starts)
    row_work = np.where(pairs_in_row > 0, s * later + PAIR_OVERHEAD * pairs_in_row, 0.0)
    before_row = np.concatenate([[0.0], np.cumsum(row_work)])
    total = before_row[-1]
    last_row = int(np.flatnonzero(pairs_in_row)[-1])  # the last row that has pairs

    bounds = [0]
    for k in range(1, n_blocks):
        target = total * k / n_blocks
        # the row where cumulative work reaches the target (never a row without pairs)
        i = min(int(np.searchsorted(before_row, target, side="right")) - 1, last_row)
        within = s[i] * np.cumsum(s[i + 1 :]) + PAIR_OVERHEAD * np.arange(1, n - i)
        # pairs of row i whose cumulative work stays within the target go to block k-1
        taken = int(np.searchsorted(within, target - before_row[i], side="right"))
        bounds.append(max(bounds[-1], int(starts[i]) + min(taken, int(pairs_in_row[i]))))
    bounds.append(total_pairs)
    return [(bounds[k], bounds[k + 1]) for k in range(n_blocks)]


def _row_segments(
    n: int, start: int, stop: int, n_rows: int | None = None
) -> list[tuple[int, int, int, int]]:
    """(i, j0, j1, offset) for the rows that pairs [start, stop) cross; offset is the
    position of pair (i, j0) within the range."""
    starts = row_starts(n, n_rows)
    segments = []
    if stop <= start:
        return segments
    first = int(np.searchsorted(starts, start, side="right")) - 1
    last = int(np.searchsorted(starts, stop - 1, side="right")) - 1
    for i in range(first, last + 1):
        lo = max(start, int(starts[i]))
        hi = min(stop, int(starts[i + 1]))
        if hi > lo:
            base = int(starts[i]) - (i + 1)  # rank of pair (i, j) is base + j
            segments.append((i, lo - base, hi - base, lo - start))
    return segments


# ---------------------------------------------------------------------------------------------
# Solving a block


def solve_block(
    inputs: WmdInputs,
    block: int,
    n_blocks: int,
    threads: int = 1,
    progress: Callable[[int, int], None] | None = None,
    n_rows: int | None = None,
) -> pa.Table:
    """WMD of the pairs of block ``block`` (0-based) of ``n_blocks``: a WMD_BLOCK table.

    Rows of the pair grid are independent tasks for ``threads`` worker threads (the
    network simplex runs without the GIL); results do not depend on the thread count.
    ``progress(pairs_done, pairs_total)`` is called every PROGRESS_SECONDS and at the end.
    """
    if not 0 <= block < n_blocks:
        raise ValueError(f"block {block} is not in 0..{n_blocks - 1}")
    if threads < 1:
        raise ValueError("threads must be >= 1")
    start, stop = plan_blocks(inputs, n_blocks, n_rows)[block]
    segments = _row_segments(inputs.n, start, stop, n_rows)
    n_pairs = stop - start
    i_out = np.empty(n_pairs, dtype=np.int32)
    j_out = np.empty(n_pairs, dtype=np.int32)
    d_out = np.empty(n_pairs, dtype=np.float64)
    for i, j0, j1, offset in segments:
        i_out[offset : offset + j1 - j0] = i
        j_out[offset : offset + j1 - j0] = np.arange(j0, j1)

    last_doc = _last_document_of_each_word(inputs)
    done = [0] * len(segments)  # pairs finished per segment; each slot has one writer
    # Set when solving stops early (an error, Ctrl-C): running rows return after their
    # current pair instead of the pool finishing every row before the job can end.
    stop = threading.Event()

    def work(k: int) -> None:
        i, j0, j1, offset = segments[k]
        out = d_out[offset : offset + j1 - j0]
        _solve_row(inputs, last_doc, i, j0, j1, out, done, k, stop)

    # One BLAS thread: parallelism comes from our threads, and the row blocks' matrix
    # products then take the same code path whatever the job's environment says.
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        pending = {pool.submit(work, k) for k in range(len(segments))}
        try:
            while pending:
                finished, pending = wait(
                    pending, timeout=PROGRESS_SECONDS, return_when=FIRST_EXCEPTION
                )
                for future in finished:
                    if future.exception() is not None:
                        raise future.exception()
                if progress is not None and pending:
                    progress(sum(done), n_pairs)
        except BaseException:
            stop.set()
            for future in pending:
                future.cancel()
            raise
    if progress is not None:
        progress(n_pairs, n_pairs)
    return pa.table({"i": i_out, "j": j_out, "distance": d_out}, schema=schemas.WMD_BLOCK)


@functools.cache
def _blas() -> ThreadpoolController:
    # Finding the loaded BLAS libraries takes milliseconds; do it once per process.
    return ThreadpoolController()


def _last_document_of_each_word(inputs: WmdInputs) -> np.ndarray:
    last = np.full(len(inputs.vectors), -1, dtype=np.int64)
    np.maximum.at(last, inputs.flat_indices, np.repeat(np.arange(inputs.n), inputs.sizes))
    return last


def _row_costs(inputs: WmdInputs, last_doc: np.ndarray, i: int) -> tuple[np.ndarray, np.ndarray]:
    """Distances from the words of document i to the words of the documents after it.

    Returns (costs float64 [u_i, m], column of every vocabulary word in ``costs``, -1
    if absent). One matrix product per row instead of one per pair: less arithmetic,
    since documents share words. Its columns depend on i only, never on which part
    of the row a block or thread solves, so no entry's rounding depends on the layout
    (BLAS may round an entry differently in a product of another shape).
    """
    rows_i = inputs.indices[i]
    later = np.flatnonzero(last_doc > i)
    column = np.full(len(inputs.vectors), -1, dtype=np.int64)
    column[later] = np.arange(len(later))
    costs = _distances(
        inputs.vectors[rows_i] @ inputs.vectors[later].T,
        inputs.sq_norms[rows_i],
        inputs.sq_norms[later],
    )
    also_later = np.flatnonzero(column[rows_i] >= 0)
    costs[also_later, column[rows_i[also_later]]] = 0.0  # a word's distance to itself
    return costs, column


def _solve_row(
    inputs: WmdInputs,
    last_doc: np.ndarray,
    i: int,
    j0: int,
    j1: int,
    out: np.ndarray,
    done: list[int],
    slot: int,
    stop: threading.Event | None = None,
) -> None:
    """Fill out[k] with WMD(i, j0 + k) for j0 <= j < j1 (until ``stop`` is set)."""
    a = inputs.weights[i]
    if not len(a):
        out[:] = np.nan
        done[slot] = j1 - j0
        return
    costs, column = _row_costs(inputs, last_doc, i)
    lo, hi = inputs.offsets[j0], inputs.offsets[j1]
    columns = column[inputs.flat_indices[lo:hi]]  # the cost columns of documents j0..j1-1
    bounds = (inputs.offsets[j0 : j1 + 1] - lo).tolist()
    is_twin = (inputs.twin[j0:j1] == inputs.twin[i]).tolist()
    for k, j in enumerate(range(j0, j1)):
        if stop is not None and stop.is_set():
            return
        b = inputs.weights[j]
        if not len(b):
            out[k] = np.nan
        elif is_twin[k]:
            out[k] = 0.0
        else:
            out[k] = _wmd(a, b, costs.take(columns[bounds[k] : bounds[k + 1]], axis=1))
        done[slot] = k + 1


# ---------------------------------------------------------------------------------------------
# Gathering blocks into a matrix


def gather(n: int, blocks: Iterable[pa.Table], unsolved: np.ndarray | None = None) -> np.ndarray:
    """Symmetric float32 [n, n] matrix from WMD_BLOCK tables covering every pair once.

    ``blocks`` may be any iterable (run_gather reads the files one at a time). Diagonal
    0; a document whose distances are all NaN (an empty document) gets NaN on its
    diagonal too. (With fewer than two non-empty documents that cannot be told apart
    from the data; such a matrix is all NaN.) ``unsolved``: boolean [n], documents whose
    pairs among themselves were not solved (a one-fold test set); those entries are NaN.
    """
    unseen = np.float32(-1.0)  # distances are >= 0 or NaN
    matrix = np.full((n, n), unseen, dtype=np.float32)
    rows = 0
    for table in blocks:
        rows += table.num_rows
        # In slices: a block of a large dataset has tens of millions of pairs.
        for start in range(0, table.num_rows, 1 << 22):
            part = table.slice(start, 1 << 22)
            i = part.column("i").to_numpy().astype(np.int64)
            j = part.column("j").to_numpy().astype(np.int64)
            if not ((0 <= i).all() and (i < j).all() and (j < n).all()):
                raise io.WmdevalError(f"a block has a pair outside 0 <= i < j < {n}")
            d = part.column("distance").to_numpy().astype(np.float32)
            matrix[i, j] = d
            matrix[j, i] = d
    k = 0 if unsolved is None else int(np.count_nonzero(unsolved))
    total = n * (n - 1) // 2 - k * (k - 1) // 2
    if rows != total:
        raise io.WmdevalError(
            f"blocks hold {rows} pairs but {n} documents have {total}: "
            f"{'some pairs are missing' if rows < total else 'some pairs are duplicated'}"
        )
    if k:
        block = np.flatnonzero(unsolved)
        matrix[np.ix_(block, block)] = np.nan
    np.fill_diagonal(matrix, np.nan)
    # As many pairs as needed and none left unseen: every pair came exactly once.
    for r0 in range(0, n, 1024):
        missing = np.argwhere(matrix[r0 : r0 + 1024] == unseen)
        if len(missing):
            r, c = int(missing[0][0]) + r0, int(missing[0][1])
            raise io.WmdevalError(
                f"pair ({min(r, c)}, {max(r, c)}) is missing from the blocks "
                "(and another is duplicated)"
            )
    # empty: no distance at all; with unsolved pairs, none to any solved partner
    solved = ~unsolved if k else slice(None)
    empty = np.array([np.isnan(row[solved]).all() for row in matrix], dtype=bool)
    np.fill_diagonal(matrix, np.where(empty, np.nan, 0.0))
    return matrix


def submatrix(doc_ids: np.ndarray, matrix: np.ndarray, keep_ids: np.ndarray) -> np.ndarray:
    """Rows and columns of ``matrix`` (ordered by ``doc_ids``) for ``keep_ids``, in that order."""
    position = {int(d): p for p, d in enumerate(doc_ids)}
    missing = [int(d) for d in keep_ids if int(d) not in position]
    if missing:
        raise io.WmdevalError(
            f"{len(missing)} document(s) not in the distance matrix, e.g. doc_id {missing[0]}"
        )
    keep = np.array([position[int(d)] for d in keep_ids], dtype=np.int64)
    return matrix[np.ix_(keep, keep)]


# ---------------------------------------------------------------------------------------------
# Run functions (file I/O at the edge)


def _read_embeddings(path: str | os.PathLike) -> pa.Table:
    table = io.read_table(path)
    missing = [c for c in ("word", "vector") if c not in table.column_names]
    if missing:
        raise io.WmdevalError(f"{path}: missing column(s) {', '.join(missing)}")
    return table


def _read_solve_order(doc_ids: np.ndarray, splits_path) -> tuple[np.ndarray, int]:
    splits = io.read_splits(splits_path) if splits_path else None
    return solve_order(doc_ids, splits)


def run_block(
    documents_path,
    embeddings_path,
    weighting: str,
    block: int,
    n_blocks: int,
    threads: int,
    out_path,
    splits_path=None,
) -> None:
    """Solve block ``block`` (0-based) of ``n_blocks`` and write it as a WMD_BLOCK file.

    With ``splits_path`` of a one-fold dataset, test x test pairs are not solved.
    """
    if n_blocks < 1 or not 0 <= block < n_blocks:
        raise io.WmdevalError(f"block {block} is not in 0..{n_blocks - 1}")
    if threads < 1:
        raise io.WmdevalError("threads must be >= 1")
    documents = io.read_documents(documents_path)
    inputs = prepare(documents, _read_embeddings(embeddings_path), weighting)
    _log_empty(documents, inputs)
    order, n_rows = _read_solve_order(inputs.doc_ids, splits_path)
    ordered = reorder(inputs, order)
    start, stop = plan_blocks(ordered, n_blocks, n_rows)[block]
    LOG.info(
        "%d documents, %d pairs; block %d/%d: pairs %d..%d (%d), %d thread(s)",
        inputs.n,
        int(row_starts(inputs.n, n_rows)[-1]),
        block + 1,
        n_blocks,
        start,
        stop,
        stop - start,
        threads,
    )
    table = solve_block(
        ordered, block, n_blocks, threads, progress=_progress_logger(), n_rows=n_rows
    )
    io.write_table(to_document_positions(table, order), out_path, schemas.WMD_BLOCK)


def to_document_positions(table: pa.Table, order: np.ndarray) -> pa.Table:
    """Pairs of the solve order -> pairs (i < j) of the documents' own order."""
    a = order[table.column("i").to_numpy()]
    b = order[table.column("j").to_numpy()]
    return pa.table(
        {
            "i": np.minimum(a, b).astype(np.int32),
            "j": np.maximum(a, b).astype(np.int32),
            "distance": table.column("distance"),
        },
        schema=schemas.WMD_BLOCK,
    )


def _log_empty(documents: pa.Table, inputs: WmdInputs) -> None:
    no_words = pc.list_value_length(documents.column("words")).to_numpy(zero_copy_only=False) == 0
    for label, mask in (
        ("have no words", no_words),
        ("have no tf-idf mass (every word in every document)", inputs.empty & ~no_words),
    ):
        if mask.any():
            ids = inputs.doc_ids[mask]
            LOG.warning(
                "%d document(s) %s; their distances are NaN: doc_id %s%s",
                len(ids),
                label,
                ", ".join(map(str, ids[:20])),
                ", ..." if len(ids) > 20 else "",
            )


def _progress_logger() -> Callable[[int, int], None]:
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-9)
        eta = (total - done) / rate if rate > 0 else float("inf")
        LOG.info(
            "%d/%d pairs done (%.1f%%), %.0f pairs/s, ETA %s",
            done,
            total,
            100.0 * done / max(total, 1),
            rate,
            _duration(eta),
        )

    return report


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "unknown"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def run_gather(
    documents_path, block_paths: list, out_path, method_name: str, splits_path=None
) -> None:
    """Gather block files into a DISTANCES file over the documents' doc_ids."""
    doc_ids = io.read_documents(documents_path).column("doc_id").to_numpy()
    blocks = (io.read_table(p, schemas.WMD_BLOCK) for p in block_paths)
    order, n_rows = _read_solve_order(doc_ids, splits_path)
    unsolved = np.zeros(len(doc_ids), dtype=bool)
    unsolved[order[n_rows:]] = True
    matrix = gather(len(doc_ids), blocks, unsolved)
    empty = int(np.isnan(np.diagonal(matrix)).sum())
    LOG.info(
        "%s: %d x %d matrix from %d block(s); %d empty document(s)",
        method_name,
        len(doc_ids),
        len(doc_ids),
        len(block_paths),
        empty,
    )
    io.write_distances(matrix, doc_ids, out_path, metadata={"method": method_name})


def run_subset(matrix_path, documents_path, out_path) -> None:
    """Write the sub-matrix of a DISTANCES file for the doc_ids of ``documents_path``."""
    doc_ids, matrix = io.read_distances(matrix_path)
    keep_ids = io.read_documents(documents_path).column("doc_id").to_numpy()
    metadata = pq.read_schema(matrix_path).metadata or {}
    kept = {k.decode(): v.decode() for k, v in metadata.items() if not k.startswith(b"ARROW:")}
    LOG.info("%d of %d documents kept", len(keep_ids), len(doc_ids))
    io.write_distances(
        submatrix(doc_ids, matrix, keep_ids), keep_ids, out_path, metadata=kept or None
    )


# ---------------------------------------------------------------------------------------------
# Resources of a block job (for the workflow's scheduler)


@functools.lru_cache(maxsize=64)
def _document_sizes(path: str, mtime_ns: int) -> np.ndarray:
    # Cached per file version: Snakemake asks once per block job, and a matrix has many.
    words = pq.read_table(path, columns=["words"]).column("words")
    return pc.list_value_length(words).to_numpy(zero_copy_only=False).astype(np.float64)


def block_resources(
    documents_path, n_blocks: int, threads: int, attempt: int = 1
) -> dict[str, int]:
    """mem_mb and runtime (minutes) of one block job, from the work it holds.

    Uses the same work model as the block plan: a block holds 1/n_blocks of the
    estimated work. Generous on purpose (3x the fitted time, as clusters' cores are
    often slower than the machine it was fitted on), and doubled per retry. Before the
    documents exist (a dry run), a nominal request.
    """
    try:
        stat = os.stat(documents_path)
    except OSError:
        return {"mem_mb": 1000 * attempt, "runtime": 60 * attempt}
    sizes = _document_sizes(str(documents_path), stat.st_mtime_ns)
    n = len(sizes)
    work = np.where(sizes >= 2, sizes**WORK_EXPONENT, 0.0)
    pairs = n * (n - 1) / 2
    units = (work.sum() ** 2 - (work**2).sum()) / 2 + PAIR_OVERHEAD * pairs
    seconds = units * SECONDS_PER_UNIT / n_blocks / max(threads * 0.9, 1.0)
    runtime = int(np.ceil(5 + 3 * seconds / 60))
    # the block's pairs (i, j, distance and numpy copies) plus the documents and vectors
    mem_mb = int(np.ceil(400 + 40 * pairs / n_blocks / 1e6 + 30 * stat.st_size / 1e6))
    factor = 2 ** (attempt - 1)
    return {"mem_mb": mem_mb * factor, "runtime": runtime * factor}


def gather_mem_mb(documents_path) -> int:
    """Memory of the gather job: the float32 n x n matrix about three times over."""
    try:
        n = pq.read_metadata(documents_path).num_rows
    except (OSError, pa.ArrowInvalid):
        return 2000
    return int(np.ceil(1000 + 3 * 4 * n * n / 1e6))
