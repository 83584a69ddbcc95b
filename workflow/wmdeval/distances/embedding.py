"""Dense document distances from word embeddings without a transport solve.

Three cheap relatives of WMD, each a full float64 [n, n] matrix over documents prepared
by :func:`~wmdeval.distances.wmd.solver.prepare` (weighting "bow": the marginals are
L1-normalised counts):

- WCD, the word centroid distance (Kusner et al. 2015): the Euclidean distance between
  the documents' weighted mean word vectors;
- RWMD, the relaxed WMD (Kusner et al. 2015): the larger of the two one-sided
  relaxations, where each word of one document sends its whole weight to the nearest
  word of the other (plain RWMD, not tightened by overlapping mass reduction);
- cosine-mean: the cosine distance 1 - cos between the weighted mean word vectors.

An empty document (``inputs.empty``) has a NaN row and column, its diagonal included,
as in a gathered WMD matrix; the diagonal of every other document is 0 and every
matrix is exactly symmetric. Word costs come from
:func:`~wmdeval.distances.wmd.bounds.word_distances`, so they follow
``inputs.ground_cost`` like the exact WMD.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from ..core import io
from ..core.methods import BEYOND_METHODS
from .wmd import bounds
from .wmd.blocks import _log_empty
from .wmd.solver import WmdInputs, _blas, prepare

LOG = logging.getLogger("wmdeval.distances.embedding")

#: Method slugs of :func:`embedding_matrix` (and of ``wmdeval embedding-matrix --method``):
#: the built-in methods computed as one full matrix.
METHODS = tuple(m.slug for m in BEYOND_METHODS if m.kind == "matrix")

#: Rows of one band of the in-place symmetric maximum.
ROW_CHUNK = 256

#: Documents whose nearest-word costs are computed together as one task of the RWMD
#: matrix: their costs to every vocabulary word, [vocabulary x this] float64 (~240 MB
#: per thread at 30,000 words), and their column of the matrix, [n x this].
COLUMN_BAND = 1024


def word_centroid_matrix(inputs: WmdInputs) -> np.ndarray:
    """WCD between every two documents, float64 [n, n]: |m_i - m_j| of the weighted mean
    word vectors m (:func:`~wmdeval.distances.wmd.bounds.centroids`). NaN rows and
    columns for empty documents; diagonal 0 otherwise; exactly symmetric."""
    means = bounds.centroids(inputs)
    # cdist subtracts the vectors (no cancellation of a squared-norm expansion); _spread
    # fills each pair once, so the matrix is symmetric and its diagonal exactly 0.
    return _spread(np.flatnonzero(~inputs.empty), inputs.n, means, "euclidean")


def mean_vector_cosine_matrix(inputs: WmdInputs) -> np.ndarray:
    """Cosine distance 1 - cos(m_i, m_j) between the weighted mean word vectors, float64
    [n, n], clipped to [0, 2]. A document that is empty or whose mean vector is exactly
    zero (its words cancel out) has no direction: a NaN row and column, diagonal
    included. Diagonal 0 otherwise; exactly symmetric."""
    means = bounds.centroids(inputs)
    lengths = np.linalg.norm(means, axis=1)  # NaN for an empty document
    has_direction = np.flatnonzero(~inputs.empty & (lengths > 0))
    matrix = _spread(has_direction, inputs.n, means, "cosine")
    return np.clip(matrix, 0.0, 2.0, out=matrix)  # NaN stays NaN


def _spread(keep: np.ndarray, n: int, points: np.ndarray, metric: str) -> np.ndarray:
    """float64 [n, n]: the ``metric`` distance (scipy's) between points[keep] at rows and
    columns ``keep``, NaN elsewhere (diagonal included).

    A band of ROW_CHUNK rows at a time against the columns from the band on, mirrored:
    the matrix is exactly symmetric with the values pdist gives (each pair once, the lower
    position first), and the peak is the matrix and a band, not the matrix three times
    over (pdist's condensed vector and its square; 20 Newsgroups: 7.6 GB, now 3.6)."""
    matrix = np.full((n, n), np.nan)
    for r0 in range(0, len(keep), ROW_CHUNK):
        rows, columns = keep[r0 : r0 + ROW_CHUNK], keep[r0:]
        band = cdist(points[rows], points[columns], metric)
        band[np.arange(len(rows)), np.arange(len(rows))] = 0.0  # as pdist's squareform
        matrix[np.ix_(rows, columns)] = band
        matrix[np.ix_(columns, rows)] = band.T
    return matrix


def relaxed_wmd_matrix(inputs: WmdInputs, threads: int = 1) -> np.ndarray:
    """RWMD between every two documents, float64 [n, n]: max of the one-sided
    relaxations sum_w a_i(w) min_{v in j} c(w, v) and the same from j to i, with the
    ground cost c of ``inputs`` computed in float64. NaN rows and columns for empty
    documents; diagonal 0 otherwise; exactly symmetric.

    The linear-complexity way (Atasu et al. 2017): for a band of documents j, the cost
    from every vocabulary word w to the nearest word of j, Z[w, j]; then one sparse
    product (every document's weights x Z) gives the band's column of one-sided
    relaxations. Each word cost is computed once per band, never once per pair, so the
    work grows with n x vocabulary, not n^2 x words^2 (20 Newsgroups: minutes, not hours).

    Column bands of COLUMN_BAND documents are independent tasks for ``threads`` threads,
    each with one BLAS thread; the bands do not depend on ``threads``, so neither does
    any bit of the result.
    """
    if threads < 1:
        raise ValueError("threads must be >= 1")
    n = inputs.n
    weights = bounds.weight_matrix(inputs)
    filled = np.flatnonzero(~inputs.empty)
    one_sided = np.full((n, n), np.nan)  # [i, j]: i's words to their nearest word of j

    def work(band: np.ndarray) -> None:
        column = np.asarray(weights @ _nearest_word_costs(inputs, weights, band))
        one_sided[:, band] = column

    bands = [filled[k : k + COLUMN_BAND] for k in range(0, len(filled), COLUMN_BAND)]
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, bands))  # list(): re-raises a worker's exception
    one_sided[inputs.empty] = np.nan  # an empty row sends nothing: 0, but undefined
    matrix = _symmetric_maximum(one_sided)
    matrix[filled, filled] = 0.0  # already 0 (each word is its own nearest), made explicit
    return matrix


def _nearest_word_costs(inputs: WmdInputs, weights: sp.csr_matrix, band: np.ndarray) -> np.ndarray:
    """float64 [vocabulary rows, len(band)]: the cost from every word to the nearest word
    of each document of ``band`` (ascending positions, none empty).

    Costs are computed from the band's distinct words to a slice of the vocabulary at a
    time, then reduced per document, so the working matrices stay under
    bounds.MAX_ENTRIES entries whatever the band.
    """
    # a band is ascending positions; the empty documents between them own no entries,
    # so the band's words are one contiguous run of the CSR arrays
    first, last = weights.indptr[band[0]], weights.indptr[band[-1] + 1]
    occurrences = weights.indices[first:last].astype(np.int64)
    words, flat = np.unique(occurrences, return_inverse=True)
    groups = weights.indptr[band] - first
    n_words = len(inputs.vectors)
    out = np.empty((n_words, len(band)))
    step = max(1, bounds.MAX_ENTRIES // max(len(occurrences), len(words), 1))
    for w0 in range(0, n_words, step):
        costs = bounds.word_distances(inputs, words, np.arange(w0, min(w0 + step, n_words)))
        out[w0 : w0 + step] = np.minimum.reduceat(costs[flat], groups, axis=0).T
    return out


def _symmetric_maximum(matrix: np.ndarray) -> np.ndarray:
    """max(matrix, matrix.T) in place, a band of rows at a time (no second n x n
    matrix); NaN wins over a number. Returns ``matrix``."""
    n = len(matrix)
    for r0 in range(0, n, ROW_CHUNK):
        r1 = min(r0 + ROW_CHUNK, n)
        # rows r0:r1 from column r0 on, and their mirror; later bands never touch them
        band = np.maximum(matrix[r0:r1, r0:], matrix[r0:, r0:r1].T)
        matrix[r0:r1, r0:] = band
        matrix[r0:, r0:r1] = band.T
    return matrix


def embedding_matrix(inputs: WmdInputs, method: str, threads: int = 1) -> np.ndarray:
    """The ``method`` matrix (one of METHODS) of ``inputs``, float64 [n, n]; ``threads``
    is used by "rwmd" only. An unknown method is a WmdevalError."""
    if method == "wcd":
        return word_centroid_matrix(inputs)
    if method == "rwmd":
        return relaxed_wmd_matrix(inputs, threads)
    if method == "cosine-mean":
        return mean_vector_cosine_matrix(inputs)
    raise io.WmdevalError(f"unknown method {method!r} (expected one of {', '.join(METHODS)})")


__all__ = [
    "METHODS",
    "ROW_CHUNK",
    "COLUMN_BAND",
    "word_centroid_matrix",
    "mean_vector_cosine_matrix",
    "relaxed_wmd_matrix",
    "embedding_matrix",
    "run_embedding_matrix",
]


# ---------------------------------------------------------------------------------------------
# Run function (file I/O at the edge)


def run_embedding_matrix(
    documents_path, embeddings_path, method: str, out_path, threads: int = 1
) -> None:
    """Write the ``method`` matrix (one of METHODS) of a documents file as a DISTANCES
    file: float64, rows and columns in doc_id order, ``{"method": method}`` metadata.

    Reads DOCUMENTS and an embeddings table (``word``, ``vector``), prepared with the
    "bow" weighting. An unknown method, ``threads`` < 1, a doc_id listed twice or bad
    input is a WmdevalError.
    """
    # Checked before reading anything: a typo should not cost a read of the embeddings.
    if method not in METHODS:
        raise io.WmdevalError(f"unknown method {method!r} (expected one of {', '.join(METHODS)})")
    if threads < 1:
        raise io.WmdevalError("threads must be >= 1")
    documents = io.read_documents(documents_path).sort_by("doc_id")
    doc_ids = documents.column("doc_id").to_numpy()
    if np.any(np.diff(doc_ids) == 0):
        raise io.WmdevalError(f"{documents_path}: a doc_id is listed twice")
    inputs = prepare(documents, io.read_embeddings(embeddings_path), "bow")
    _log_empty(documents, inputs)
    matrix = embedding_matrix(inputs, method, threads)
    LOG.info(
        "%s: %d x %d matrix, %d document(s) with NaN rows",
        method,
        inputs.n,
        inputs.n,
        int(np.isnan(np.diagonal(matrix)).sum()),
    )
    io.write_distances(matrix, doc_ids, out_path, metadata={"method": method})
