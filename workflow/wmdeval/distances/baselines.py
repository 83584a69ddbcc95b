"""The 12 BOW / TF-IDF baselines (docs/protocol.md §5.1): 3 normalisations x 2 metrics.

Baseline distances are cheap and, for TF-IDF, depend on the fold (IDF from the
fold's training documents), so they are computed where they are used instead of
being stored as matrices.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ..core.methods import Method


def count_matrix(documents: pa.Table) -> tuple[sp.csr_matrix, list[str]]:
    """Documents (DOCUMENTS schema) -> (CSR count matrix [docs x vocabulary], vocabulary).

    Rows follow the table's row order; the matrix is float64 in :func:`canonical` form.
    The vocabulary is the sorted set of words of these documents, so the column
    order does not depend on document order.
    """
    words = documents.column("words").to_pylist()
    counts = documents.column("counts").to_pylist()
    vocabulary = sorted({w for ws in words for w in ws})
    column = {w: c for c, w in enumerate(vocabulary)}
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(ws) for ws in words])
    indices = np.fromiter(
        (column[w] for ws in words for w in ws), dtype=np.int32, count=int(indptr[-1])
    )
    data = np.fromiter((c for cs in counts for c in cs), dtype=np.float64, count=int(indptr[-1]))
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(words), len(vocabulary)))
    return canonical(matrix), vocabulary


def canonical(matrix: sp.spmatrix) -> sp.csr_matrix:
    """A float64 copy in CSR with sorted indices, no duplicate entries and no explicit zeros.

    The distance kernels read one entry per (row, term), so every matrix handed to
    them goes through here. (scikit-learn's sparse Manhattan distances, used before,
    were seen returning wrong values on CSR input with unsorted indices.) Duplicate
    (row, column) entries, which scipy reads as their sum, are summed so that
    document frequencies count each term once per document.
    """
    matrix = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    return matrix


#: The base of the TF-IDF baselines' idf: gensim's ``TfidfModel`` default, which the paper's
#: code uses. It cancels after normalisation and in every kNN ranking, but not in weighted
#: kNN of the unnormalised rows: there distances scale with 1 / ln(base) while the gamma
#: grid is absolute, so another base tunes another gamma.
IDF_LOG_BASE = 2.0


def idf_from_training(counts: sp.csr_matrix, train_rows: np.ndarray) -> np.ndarray:
    """idf(t) = log2(N_train / df_train(t)), float64 [terms]; 0 for terms unseen in training.

    ``counts``: [docs x terms]; ``train_rows``: the training documents' row positions.

    The idf of gensim's ``TfidfModel(normalize=False)`` fitted on the training documents
    (its default base, :data:`IDF_LOG_BASE`), as the paper's code computes it.
    """
    train = canonical(counts[np.asarray(train_rows)])  # one entry per term and document
    df = np.bincount(train.indices, minlength=counts.shape[1]).astype(np.float64)
    idf = np.zeros(counts.shape[1], dtype=np.float64)
    seen = df > 0
    # ln(N / df) / ln(base), the order of operations of gensim's df2idf: the same bits
    idf[seen] = np.log(train.shape[0] / df[seen]) / np.log(IDF_LOG_BASE)
    return idf


def weighted(counts: sp.csr_matrix, method: Method, idf: np.ndarray | None) -> sp.csr_matrix:
    """Apply the method's weighting and normalisation to count vectors, row by row.

    ``counts``: [docs x terms]; ``idf``: float64 [terms], required for TF-IDF methods.
    Returns a canonical float64 CSR matrix of the same shape; a row without mass stays a
    zero row (never NaN).
    """
    x = counts
    if method.weighting == "tfidf":
        if idf is None:
            raise ValueError("TF-IDF weighting needs an idf vector")
        x = canonical(x @ sp.diags(idf))
    if method.norm == "L1":
        x = _scale_rows(x, np.asarray(abs(x).sum(axis=1)).ravel())
    elif method.norm == "L2":
        x = _scale_rows(x, np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel()))
    return canonical(x)


def _scale_rows(x: sp.csr_matrix, norms: np.ndarray) -> sp.csr_matrix:
    # A row without mass stays a zero row: no division by zero, no NaN.
    inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.diags(inverse) @ x


#: A pair whose distance comes out below this fraction of its total size (|a|_1 + |b|_1 for
#: L1, |a|_2^2 + |b|_2^2 for L2) is recomputed from a - b. "size minus overlap" is off by a
#: few ulps of the total size: all noise for the closest pairs (duplicates must come out
#: exactly 0, and do once recomputed), a relative error of ~1e-13 at worst above the bar.
RECOMPUTE_BELOW = 1e-2

#: Shared-term meetings plus output cells per row block. For L1 this keeps numpy's
#: temporaries below 1 MB: in cache, and reused by the allocator instead of being mapped
#: afresh (page faults) every block, which made larger blocks several times slower. For L2
#: the meetings happen inside scipy's sparse product, and fewer, larger calls are faster.
_BLOCK_WORK = {"L1": 1 << 16, "L2": 1 << 20}
_PAIRS_PER_CHUNK = 4096


def distances(
    x: sp.spmatrix,
    rows: np.ndarray,
    cols: np.ndarray,
    metric: str,
    n_jobs: int = 1,
    unit_rows: bool = False,
) -> np.ndarray:
    """Dense float64 [len(rows), len(cols)] distances between rows ``rows`` and ``cols`` of ``x``.

    ``rows``, ``cols``: row positions of ``x``, in the order of the output; ``metric``
    and ``unit_rows`` as in :func:`sparse_distances`. Never NaN.
    """
    return sparse_distances(x[np.asarray(rows)], x[np.asarray(cols)], metric, n_jobs, unit_rows)


class Columns(NamedTuple):
    """The column side of :func:`sparse_distances`, prepared once for many row blocks:
    ``vectors`` canonical, ``postings`` the same by term (CSC), ``size`` of every row in
    the metric (taken as 1.0 for non-zero ``unit_rows``), ``signed``: any value < 0."""

    vectors: sp.csr_matrix
    postings: sp.csc_matrix
    size: np.ndarray
    signed: bool


def columns(b: sp.spmatrix, metric: str, unit_rows: bool = False) -> Columns:
    """:class:`Columns` of ``b`` (rows: the columns of the distances) for ``metric``."""
    if metric not in ("L1", "L2"):
        raise ValueError(f"metric must be 'L1' or 'L2', got {metric!r}")
    b = canonical(b)  # the kernels read one entry per term and row
    size = _size(b, metric)
    if unit_rows:
        size = np.where(size > 0, 1.0, 0.0)
    return Columns(b, sp.csc_matrix(b), size, bool(np.any(b.data < 0)))


def sparse_distances(
    a: sp.spmatrix,
    b: sp.spmatrix | Columns,
    metric: str,
    n_jobs: int = 1,
    unit_rows: bool = False,
) -> np.ndarray:
    """L1 or L2 distances, dense float64 [rows of a x rows of b], between sparse vectors.

    Never NaN: a zero row is at its size from every other row. ``b`` may be given as
    :class:`Columns` prepared (with the same ``metric`` and ``unit_rows``) for several
    calls; the numbers are the same.

    Both go through "size minus overlap", where only the terms two rows share cost work:
    L1 as |a|_1 + |b|_1 - 2 sum_t min(|a_t|, |b_t|) over shared terms of equal sign, L2
    as |a|^2 + |b|^2 - 2 a.b. Close pairs are then recomputed from a - b (see
    ``RECOMPUTE_BELOW``), so identical rows are exactly 0.0 apart. ``n_jobs`` threads
    share the row blocks; the result does not depend on it. A pair's distance depends on
    its two rows alone, not on the other rows or columns asked for (bit for bit).

    ``unit_rows``: every non-zero row was normalised in the metric's own norm (L1/L1,
    L2/L2), so its size is 1 by construction; it is taken as exactly 1.0. Computed, it
    is 1 +- a few ulps, which would break exact ties: two documents sharing no word with
    a query must both be exactly 2.0 (L1/L1) from it, or the kNN tie rule (lower index
    first) silently becomes rounding noise.
    """
    if metric not in ("L1", "L2"):
        raise ValueError(f"metric must be 'L1' or 'L2', got {metric!r}")
    side = b if isinstance(b, Columns) else columns(b, metric, unit_rows)
    b, postings, size_b = side.vectors, side.postings, side.size
    a = canonical(a)  # the kernels read one entry per term and row
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"vectors of different lengths: {a.shape[1]} and {b.shape[1]}")
    size_a = _size(a, metric)
    if unit_rows:
        size_a = np.where(size_a > 0, 1.0, 0.0)
    signed = bool(np.any(a.data < 0) or side.signed)
    out = np.empty((a.shape[0], b.shape[0]), dtype=np.float64)

    def fill(block: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Size minus overlap for rows [start, stop); returns the close pairs."""
        start, stop = block
        rows = _row_range(a, start, stop)
        overlap = (
            _shared_minimum(rows, postings, signed)
            if metric == "L1"
            else (rows @ postings.T).toarray()
        )  # csc.T is csr: no conversion
        total = size_a[start:stop, None] + size_b[None, :]
        result = out[start:stop]
        np.multiply(overlap, -2.0, out=result)
        result += total
        # rounding can leave a close pair slightly below 0: it is recomputed like the others
        total *= RECOMPUTE_BELOW
        close_rows, close_cols = np.nonzero(result < total)
        return close_rows + start, close_cols

    blocks = _row_blocks(_work_per_row(a, postings), _BLOCK_WORK[metric])
    if n_jobs > 1 and len(blocks) > 1:
        with ThreadPoolExecutor(n_jobs) as pool:  # numpy releases the GIL in the heavy parts
            close = list(pool.map(fill, blocks))
    else:
        close = [fill(block) for block in blocks]
    close_rows = np.concatenate([rows for rows, _ in close] or [np.zeros(0, np.int64)])
    close_cols = np.concatenate([cols for _, cols in close] or [np.zeros(0, np.int64)])
    out[close_rows, close_cols] = _exact(a, b, close_rows, close_cols, metric)
    if metric == "L2":
        np.sqrt(out, out=out)  # so far squared distances
    return out


def _size(x: sp.csr_matrix, metric: str) -> np.ndarray:
    """|x|_1 (L1) or |x|_2^2 (L2) of every row."""
    values = np.abs(x.data) if metric == "L1" else x.data * x.data
    return np.asarray(
        sp.csr_matrix((values, x.indices, x.indptr), shape=x.shape).sum(axis=1)
    ).ravel()


def _row_range(x: sp.csr_matrix, start: int, stop: int) -> sp.csr_matrix:
    """Rows [start, stop) of a CSR matrix, sharing its arrays (cheaper than x[start:stop])."""
    lo, hi = x.indptr[start], x.indptr[stop]
    return sp.csr_matrix(
        (x.data[lo:hi], x.indices[lo:hi], x.indptr[start : stop + 1] - lo),
        shape=(stop - start, x.shape[1]),
        copy=False,
    )


def _work_per_row(a: sp.csr_matrix, postings: sp.csc_matrix) -> np.ndarray:
    """Shared-term meetings plus output cells of every row of a."""
    document_frequency = np.diff(postings.indptr)
    meetings = np.bincount(
        np.repeat(np.arange(a.shape[0]), np.diff(a.indptr)),
        weights=document_frequency[a.indices],
        minlength=a.shape[0],
    )
    return meetings.astype(np.int64) + postings.shape[0]


def _row_blocks(work: np.ndarray, budget: int) -> list[tuple[int, int]]:
    """Consecutive row ranges of about ``budget`` work each (at least one row)."""
    done = np.concatenate(([0], np.cumsum(work)))
    blocks, start = [], 0
    while start < len(work):
        stop = int(np.searchsorted(done, done[start] + budget, side="right")) - 1
        stop = min(max(stop, start + 1), len(work))
        blocks.append((start, stop))
        start = stop
    return blocks


def _shared_minimum(a: sp.csr_matrix, postings: sp.csc_matrix, signed: bool) -> np.ndarray:
    """sum over the terms t both rows hold of min(|a_t|, |b_t|) (0 if the signs differ).

    Every entry (row, term) of a meets the posting list of its term in b; each meeting
    adds to cell (row, posting's document). The meetings are listed flat and summed
    with one bincount, in a fixed order, so the result is deterministic.
    """
    n_cols = postings.shape[0]
    starts = postings.indptr[a.indices]
    lengths = postings.indptr[a.indices + 1] - starts
    # position of every meeting in the postings: start of its list + rank in the run
    before = np.cumsum(lengths) - lengths
    where = np.repeat(starts - before, lengths)
    where += np.arange(len(where))
    row_offset = np.repeat(np.arange(a.shape[0], dtype=np.int64) * n_cols, np.diff(a.indptr))
    cell = np.repeat(row_offset, lengths)
    cell += postings.indices[where]
    a_values, b_values = np.repeat(a.data, lengths), postings.data[where]
    if signed:
        smaller = np.minimum(np.abs(a_values), np.abs(b_values))
        smaller[np.signbit(a_values) != np.signbit(b_values)] = 0.0
    else:
        smaller = np.minimum(a_values, b_values)
    return np.bincount(cell, weights=smaller, minlength=a.shape[0] * n_cols).reshape(
        a.shape[0], n_cols
    )


def _exact(
    a: sp.csr_matrix, b: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray, metric: str
) -> np.ndarray:
    """sum |a_t - b_t| (L1) or sum (a_t - b_t)^2 (L2) of the given pairs, term by term.

    No cancellation: identical rows give exactly 0.
    """
    out = np.empty(len(rows), dtype=np.float64)
    for lo in range(0, len(rows), _PAIRS_PER_CHUNK):
        pair = slice(lo, lo + _PAIRS_PER_CHUNK)
        difference = a[rows[pair]] - b[cols[pair]]  # scipy merges the sorted rows
        out[pair] = _size(sp.csr_matrix(difference), metric)
    return out


def baseline_distances(
    counts: sp.csr_matrix,
    method: Method,
    train_rows: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    n_jobs: int = 1,
) -> np.ndarray:
    """Distances of one baseline method for one fold, dense float64 [len(rows), len(cols)].

    ``counts``: [docs x terms] (:func:`count_matrix`); IDF from ``train_rows`` for TF-IDF
    methods; ``rows``, ``cols``: document positions, in the order of the output. Never NaN
    (an empty document is at distance 0 from another empty one).
    """
    idf = idf_from_training(counts, train_rows) if method.weighting == "tfidf" else None
    return distances(
        weighted(counts, method, idf),
        rows,
        cols,
        method.metric,
        n_jobs,
        unit_rows=has_unit_rows(method),
    )


def has_unit_rows(method: Method) -> bool:
    """Whether the method is normalised in the norm of its own metric (L1/L1, L2/L2): its
    non-zero rows then have size exactly 1."""
    return method.norm == method.metric
