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
queries' vocabulary and the whole vocabulary, never a per-pair transport problem.

Both bounds hold exactly in real arithmetic; in floating point they may exceed the
solver's WMD by rounding (word distances come from the same squared-norm expansion,
computed in matrices of other shapes). :func:`safety_margin` is how far a bound must
lie above a distance before the search may trust the bound.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .solver import WmdInputs, _distances

#: Entries of one working matrix (float64): bounds memory to ~128 MB per step.
MAX_ENTRIES = 1 << 24

#: Relative part of the safety margin: well above float64 rounding of sums of a few
#: hundred terms and above float32's relative spacing (1.2e-7), in which distances are
#: stored and ranked.
RELATIVE_MARGIN = 1e-6


def weight_matrix(inputs: WmdInputs) -> sp.csr_matrix:
    """The documents' marginals as a CSR matrix [documents x vocabulary rows], float64."""
    data = np.concatenate(inputs.weights) if inputs.n else np.zeros(0)
    return sp.csr_matrix(
        (data, inputs.flat_indices.astype(np.int64), inputs.offsets),
        shape=(inputs.n, len(inputs.vectors)),
    )


def word_distances(inputs: WmdInputs, words_a: np.ndarray, words_b: np.ndarray) -> np.ndarray:
    """Euclidean distances between vocabulary rows, float64 [len(words_a), len(words_b)],
    by the same expansion as the exact costs; a word's distance to itself is exactly 0."""
    words_a = np.asarray(words_a, dtype=np.int64)
    words_b = np.asarray(words_b, dtype=np.int64)
    d = _distances(
        inputs.vectors[words_a] @ inputs.vectors[words_b].T,
        inputs.sq_norms[words_a],
        inputs.sq_norms[words_b],
    )
    same_a, same_b = np.nonzero(words_a[:, None] == words_b[None, :])
    d[same_a, same_b] = 0.0
    return d


def safety_margin(inputs: WmdInputs, distance: float | np.ndarray) -> float | np.ndarray:
    """How far a bound must exceed ``distance`` to prove the exact WMD exceeds it, even
    after the WMD is rounded to float32: relative to the distance, plus an absolute part
    for the expansion's cancellation on nearly equal vectors (~1e-8 x the vector norm)."""
    scale = float(np.sqrt(inputs.sq_norms.max())) if len(inputs.sq_norms) else 0.0
    return RELATIVE_MARGIN * (np.abs(distance) + scale)


def centroids(inputs: WmdInputs) -> np.ndarray:
    """Weighted mean word vector of each document, float64 [n, dim]; NaN if empty."""
    means = np.asarray(weight_matrix(inputs) @ inputs.vectors)
    means[inputs.empty] = np.nan
    return means


def word_centroid_distance(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """WCD between documents ``rows`` and every document, float64 [len(rows), n]; NaN
    where either is empty."""
    means = centroids(inputs)
    sq = np.einsum("ij,ij->i", means, means)
    rows = np.asarray(rows, dtype=np.int64)
    return _distances(means[rows] @ means.T, sq[rows], sq)


def _min_over_documents(
    distances: np.ndarray, flat: np.ndarray, starts: np.ndarray, axis: int
) -> np.ndarray:
    """Minimum of ``distances`` over each document's words along ``axis``; ``flat``: the
    documents' word columns (rows) concatenated, ``starts``: where each document begins
    in ``flat`` (non-empty documents only)."""
    gathered = distances.take(flat, axis=axis)
    return np.minimum.reduceat(gathered, starts, axis=axis)


def relaxed_wmd(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """RWMD (the larger one-sided relaxation) between documents ``rows`` and every
    document, float64 [len(rows), n], by the linear-complexity method; NaN where either
    document is empty. Each value is <= the exact WMD (up to rounding, see
    :func:`safety_margin`)."""
    rows = np.asarray(rows, dtype=np.int64)
    n, n_words = inputs.n, len(inputs.vectors)
    out = np.full((len(rows), n), np.nan)
    weights = weight_matrix(inputs)
    filled = np.flatnonzero(~inputs.empty)
    query = rows[~inputs.empty[rows]]
    if not len(query) or not len(filled):
        return out
    into_out = np.flatnonzero(~inputs.empty[rows])

    # The query documents' vocabulary; Q maps their marginals onto it.
    query_weights = weights[query]
    vocabulary = np.unique(query_weights.indices)
    local = sp.csr_matrix(
        (
            query_weights.data,
            np.searchsorted(vocabulary, query_weights.indices),
            query_weights.indptr,
        ),
        shape=(len(query), len(vocabulary)),
    )

    # query -> c: Z[w, c] = distance of query word w to the nearest word of c.
    flat = inputs.flat_indices.astype(np.int64)
    starts = inputs.offsets[filled]
    nearest_in_doc = np.zeros((len(vocabulary), n))
    step = max(1, MAX_ENTRIES // max(len(flat), n_words))
    all_words = np.arange(n_words)
    for w0 in range(0, len(vocabulary), step):
        d = word_distances(inputs, vocabulary[w0 : w0 + step], all_words)
        nearest_in_doc[w0 : w0 + step, filled] = _min_over_documents(d, flat, starts, axis=1)
    forward = np.asarray(local @ nearest_in_doc)  # [queries, n]

    # c -> query: Y[w, q] = distance of any word w to the nearest word of query q.
    q_flat = np.searchsorted(vocabulary, query_weights.indices)  # rows into `vocabulary`
    q_starts = query_weights.indptr[:-1]
    nearest_in_query = np.empty((n_words, len(query)))
    step = max(1, MAX_ENTRIES // max(len(q_flat), len(vocabulary)))
    for v0 in range(0, n_words, step):
        d = word_distances(inputs, vocabulary, all_words[v0 : v0 + step])  # [vocab, step]
        nearest_in_query[v0 : v0 + step] = _min_over_documents(d, q_flat, q_starts, axis=0).T
    backward = np.asarray(weights @ nearest_in_query).T  # [queries, n]

    bound = np.maximum(forward, backward)
    bound[:, inputs.empty] = np.nan
    out[into_out] = bound
    return out


def lower_bounds(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """max(WCD, RWMD) between documents ``rows`` and every document, float64 [len(rows),
    n]; NaN where either document is empty."""
    return np.fmax(word_centroid_distance(inputs, rows), relaxed_wmd(inputs, rows))


__all__ = [
    "MAX_ENTRIES",
    "RELATIVE_MARGIN",
    "weight_matrix",
    "word_distances",
    "safety_margin",
    "centroids",
    "word_centroid_distance",
    "relaxed_wmd",
    "lower_bounds",
]
