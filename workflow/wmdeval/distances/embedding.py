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
matrix is exactly symmetric. Word costs follow ``inputs.ground_cost`` like the exact
WMD's (RWMD's are its knn search's bounds', rounded to float32: see
:func:`relaxed_wmd_matrix`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.spatial.distance import cdist

from ..core import io
from ..core.methods import BEYOND_METHODS
from ..core.progress import Progress
from .wmd import bounds
from .wmd.blocks import _log_empty
from .wmd.solver import WmdInputs, _blas, prepare

LOG = logging.getLogger("wmdeval.distances.embedding")

#: Method slugs of :func:`embedding_matrix` (and of ``wmdeval embedding-matrix --method``):
#: the built-in methods computed as one full matrix.
METHODS = tuple(m.slug for m in BEYOND_METHODS if m.kind == "matrix")

#: Rows of one band of :func:`_spread`.
ROW_CHUNK = 256

#: Documents whose RWMD rows are computed together as one task of the RWMD matrix: a
#: thread holds their words' float32 nearest-word costs to every document, [their
#: distinct words x n], and their rows (20 Newsgroups, 53,259 words at 300-d: 10,939
#: words, ~2 GB a thread in all). Each task's work grows with its distinct words, which
#: grow more slowly than its documents: 512 took 0.75x the CPU of 256 there.
QUERY_BAND = 512


def word_centroid_matrix(inputs: WmdInputs, progress: Progress | None = None) -> np.ndarray:
    """WCD between every two documents, float64 [n, n]: |m_i - m_j| of the weighted mean
    word vectors m (:func:`~wmdeval.distances.wmd.bounds.centroids`). NaN rows and
    columns for empty documents; diagonal 0 otherwise; exactly symmetric. ``progress``:
    counts the rows (:func:`_spread`)."""
    means = bounds.centroids(inputs)
    # cdist subtracts the vectors (no cancellation of a squared-norm expansion); _spread
    # fills each pair once, so the matrix is symmetric and its diagonal exactly 0.
    return _spread(np.flatnonzero(~inputs.empty), inputs.n, means, "euclidean", progress)


def mean_vector_cosine_matrix(inputs: WmdInputs, progress: Progress | None = None) -> np.ndarray:
    """Cosine distance 1 - cos(m_i, m_j) between the weighted mean word vectors, float64
    [n, n], clipped to [0, 2]. A document that is empty or whose mean vector is exactly
    zero (its words cancel out) has no direction: a NaN row and column, diagonal
    included. Diagonal 0 otherwise; exactly symmetric. ``progress``: counts the rows
    (:func:`_spread`)."""
    means = bounds.centroids(inputs)
    lengths = np.linalg.norm(means, axis=1)  # NaN for an empty document
    has_direction = np.flatnonzero(~inputs.empty & (lengths > 0))
    undirected = int(np.count_nonzero(~inputs.empty)) - len(has_direction)
    if progress is not None and undirected:  # such a row is done: it stays NaN
        progress.advance(undirected)
    matrix = _spread(has_direction, inputs.n, means, "cosine", progress)
    return np.clip(matrix, 0.0, 2.0, out=matrix)  # NaN stays NaN


def _spread(
    keep: np.ndarray, n: int, points: np.ndarray, metric: str, progress: Progress | None = None
) -> np.ndarray:
    """float64 [n, n]: the ``metric`` distance (scipy's) between points[keep] at rows and
    columns ``keep``, NaN elsewhere (diagonal included).

    A band of ROW_CHUNK rows at a time against the columns from the band on, mirrored:
    the matrix is exactly symmetric with the values pdist gives (each pair once, the lower
    position first), and the peak is the matrix and a band, not the matrix three times
    over (pdist's condensed vector and its square; 20 Newsgroups: 7.6 GB, now 3.6).
    ``progress`` counts the rows of ``keep`` done (the first bands are the widest, so its
    time left is high at first)."""
    matrix = np.full((n, n), np.nan)
    for r0 in range(0, len(keep), ROW_CHUNK):
        rows, columns = keep[r0 : r0 + ROW_CHUNK], keep[r0:]
        band = cdist(points[rows], points[columns], metric)
        band[np.arange(len(rows)), np.arange(len(rows))] = 0.0  # as pdist's squareform
        matrix[np.ix_(rows, columns)] = band
        matrix[np.ix_(columns, rows)] = band.T
        if progress is not None:
            progress.advance(len(rows))
    return matrix


def relaxed_wmd_matrix(
    inputs: WmdInputs, threads: int = 1, progress: Progress | None = None
) -> np.ndarray:
    """RWMD between every two documents, float64 [n, n]: max of the one-sided
    relaxations sum_w a_i(w) min_{v in j} c(w, v) and the same from j to i. NaN rows and
    columns for empty documents; diagonal 0 otherwise.

    Row i is the plain RWMD of document i's lower bounds as a kNN search computes them
    (:class:`~.wmd.bounds.LowerBounds` with i among its queries, the relaxation without
    OMR and WCD), bit for bit: so ``wmd.mode: knn`` ranks RWMD from the cheap bounds its
    WMD search computes anyway, with the values of this matrix, and the two modes score
    it alike. Those bounds' word costs are rounded to float32 (relative 6e-8), and their
    bits depend on the row's own document alone, never on the documents computed with
    it (:data:`~.wmd.bounds.PRODUCT_WIDTH`). A one-sided sum reads the same float32
    costs whichever of its two documents is the row's, as long as a word pair's cost has
    the same bits in either order, which these products of fixed shape gave in every
    test and on all 355 M entries of 20 Newsgroups at 300-d: the matrix comes out exactly
    symmetric (evaluate reads each query's own row either way).

    The linear-complexity way (Atasu et al. 2017): for a band of QUERY_BAND documents,
    the cost from each of their words to the nearest word of every document, and from
    every word to the nearest word of each of them; then one weighted sum per side.
    Bands are independent tasks for ``threads`` threads, each with one BLAS thread, so
    no bit of the result depends on ``threads``. ``progress``: counts the documents whose
    rows are done, a band at a time.
    """
    if threads < 1:
        raise ValueError("threads must be >= 1")
    n = inputs.n
    filled = np.flatnonzero(~inputs.empty)
    matrix = np.full((n, n), np.nan)

    def work(band: np.ndarray) -> None:
        # no OMR tables: plain RWMD never reads them (the rows' bits are the same)
        lower = bounds.LowerBounds(inputs, band, overlap=False)
        rows = lower.rows(np.arange(len(band)), omr=False, wcd=False)
        matrix[band] = rows
        if progress is not None:
            progress.advance(len(band))

    bands = [filled[k : k + QUERY_BAND] for k in range(0, len(filled), QUERY_BAND)]
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, bands))  # list(): re-raises a worker's exception
    matrix[filled, filled] = 0.0  # already 0 (each word is its own nearest), made explicit
    return matrix


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise io.WmdevalError(f"unknown method {method!r} (expected one of {', '.join(METHODS)})")


def embedding_matrix(
    inputs: WmdInputs, method: str, threads: int = 1, report: str | None = None
) -> np.ndarray:
    """The ``method`` matrix (one of METHODS) of ``inputs``, float64 [n, n]; ``threads``
    is used by "rwmd" only. An unknown method is a WmdevalError. ``report``: the subject
    of the progress lines in the log (documents whose rows are done; None: no lines)."""
    _check_method(method)
    # the documents with a row to compute: an empty one's (or a direction-less one's for
    # the cosine) stays NaN, and these are the rows the functions count
    progress = Progress(
        LOG if report is not None else None,
        report or "",
        int(np.count_nonzero(~inputs.empty)),
        "documents",
    )
    if method == "wcd":
        matrix = word_centroid_matrix(inputs, progress)
    elif method == "rwmd":
        matrix = relaxed_wmd_matrix(inputs, threads, progress)
    else:
        matrix = mean_vector_cosine_matrix(inputs, progress)
    progress.finish()
    return matrix


def embedding_rows(inputs: WmdInputs, method: str) -> tuple[Callable, np.ndarray]:
    """(rows_of, undefined) of the ``method`` (one of METHODS) for knn mode's neighbour
    lists (:mod:`.neighbour_lists`): ``rows_of(queries)`` gives float64 [len(queries), n],
    the rows of :func:`embedding_matrix` bit for bit (each entry is computed from its
    two documents alone: cdist's per-pair sums, RWMD's rows of their own query), without
    the matrix; ``undefined``: bool per document, the matrix's NaN rows."""
    _check_method(method)
    n = inputs.n
    if method == "rwmd":
        filled = ~inputs.empty

        def relaxed_rows(queries: np.ndarray) -> np.ndarray:
            out = np.full((len(queries), n), np.nan)
            at = np.flatnonzero(filled[queries])
            if len(at):
                band = queries[at]
                with _blas().limit(limits=1, user_api="blas"):
                    lower = bounds.LowerBounds(inputs, band, overlap=False)
                    out[at] = lower.rows(np.arange(len(band)), omr=False, wcd=False)
                out[at, band] = 0.0
            return out

        return relaxed_rows, inputs.empty.copy()
    means = bounds.centroids(inputs)
    if method == "wcd":
        keep, metric = np.flatnonzero(~inputs.empty), "euclidean"
    else:
        lengths = np.linalg.norm(means, axis=1)
        keep, metric = np.flatnonzero(~inputs.empty & (lengths > 0)), "cosine"
    kept = np.zeros(n, dtype=bool)
    kept[keep] = True

    def spread_rows(queries: np.ndarray) -> np.ndarray:
        out = np.full((len(queries), n), np.nan)
        at = np.flatnonzero(kept[queries])
        if len(at):
            rows = cdist(means[queries[at]], means[keep], metric)
            if metric == "cosine":
                np.clip(rows, 0.0, 2.0, out=rows)
            out[np.ix_(at, keep)] = rows
            out[at, queries[at]] = 0.0  # as _spread's diagonal
        return out

    return spread_rows, ~kept


__all__ = [
    "METHODS",
    "ROW_CHUNK",
    "QUERY_BAND",
    "word_centroid_matrix",
    "mean_vector_cosine_matrix",
    "relaxed_wmd_matrix",
    "embedding_matrix",
    "embedding_rows",
    "run_embedding_matrix",
    "run_embedding_neighbours",
]


# ---------------------------------------------------------------------------------------------
# Run function (file I/O at the edge)


def _read_inputs(documents_path, embeddings_path) -> tuple:
    """(DOCUMENTS sorted by doc_id, their WmdInputs under "bow"): what the matrix and the
    neighbour-list jobs read; a doc_id listed twice is a WmdevalError."""
    documents = io.read_documents(documents_path).sort_by("doc_id")
    if np.any(np.diff(documents.column("doc_id").to_numpy()) == 0):
        raise io.WmdevalError(f"{documents_path}: a doc_id is listed twice")
    inputs = prepare(documents, io.read_embeddings(embeddings_path), "bow")
    _log_empty(documents, inputs)
    return documents, inputs


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
    _check_method(method)
    if threads < 1:
        raise io.WmdevalError("threads must be >= 1")
    documents, inputs = _read_inputs(documents_path, embeddings_path)
    matrix = embedding_matrix(inputs, method, threads, report=f"embedding-matrix {method}")
    LOG.info(
        "%s: %d x %d matrix, %d document(s) with NaN rows",
        method,
        inputs.n,
        inputs.n,
        int(np.isnan(np.diagonal(matrix)).sum()),
    )
    io.write_distances(matrix, inputs.doc_ids, out_path, metadata={"method": method})


def run_embedding_neighbours(
    documents_path,
    splits_path,
    embeddings_path,
    method: str,
    settings: Mapping | None,
    shard: int,
    n_shards: int,
    out_pairs,
    out_certificates,
) -> None:
    """knn mode: write the ``method``'s neighbour tables (NEIGHBOUR_PAIRS and
    NEIGHBOUR_CERTIFICATES) of query shard ``shard`` (0-based) of ``n_shards``: each
    query role's top k under the evaluation ``settings`` and the splits, with the values
    of :func:`run_embedding_matrix`'s matrix, a block of rows at a time
    (:func:`~.neighbour_lists.neighbour_lists`). Bad input is a WmdevalError."""
    from .neighbour_lists import write_shard_lists

    _check_method(method)
    documents, inputs = _read_inputs(documents_path, embeddings_path)
    folds = io.fold_indices(io.read_splits(splits_path), inputs.doc_ids)
    rows_of, undefined = embedding_rows(inputs, method)
    write_shard_lists(
        documents,
        inputs.doc_ids,
        undefined,
        folds,
        settings,
        rows_of,
        shard,
        n_shards,
        f"embedding-neighbours {method} shard {shard + 1}/{n_shards}",
        out_pairs,
        out_certificates,
    )
