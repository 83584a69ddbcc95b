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


def _nearest_word(
    inputs: WmdInputs, words: np.ndarray, flat: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """float32 [len(starts), len(words)]: for each group of vocabulary rows (``flat``
    concatenated, group g starting at ``starts[g]``; no empty group), the distance from
    each of ``words`` to the group's nearest word.

    Column chunks keep the working matrix under MAX_ENTRIES; rows are gathered (not
    columns), which is a copy of contiguous memory. float32 halves the traffic; its
    rounding (relative 6e-8) is far inside the safety margin.
    """
    out = np.empty((len(starts), len(words)), dtype=np.float32)
    step = max(1, MAX_ENTRIES // max(len(flat), 1))
    for w0 in range(0, len(words), step):
        chunk = words[w0 : w0 + step]
        d = word_distances(inputs, np.arange(len(inputs.vectors)), chunk).astype(np.float32)
        out[:, w0 : w0 + step] = np.minimum.reduceat(d[flat], starts, axis=0)
    return out


class LowerBounds:
    """Lower bounds of WMD between fixed query documents and every document.

    Built once per query set (a search job's shard): the query words' distance to the
    nearest word of every document, and every word's distance to the nearest word of
    every query. :meth:`rows` then costs two sparse products per block of queries.
    """

    def __init__(self, inputs: WmdInputs, queries: np.ndarray):
        self.inputs = inputs
        self.queries = np.asarray(queries, dtype=np.int64)
        weights = weight_matrix(inputs)
        self.weights = weights
        self.means = centroids(inputs)
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
        # query -> c: distance of each query word to the nearest word of each document
        self.to_documents = np.zeros((inputs.n, len(self.vocabulary)), dtype=np.float32)
        if len(self.filled) and len(self.vocabulary):
            self.to_documents[self.filled] = _nearest_word(
                inputs,
                self.vocabulary,
                inputs.flat_indices.astype(np.int64),
                inputs.offsets[self.filled],
            )
        # c -> query: distance of every word to the nearest word of each query. For the
        # query words themselves that is a part of `to_documents` (the queries are
        # documents too); only the other words need computing.
        self.to_queries = np.zeros((len(self.queries), len(inputs.vectors)), dtype=np.float32)
        self.to_queries[:, self.vocabulary] = self.to_documents[self.queries]
        others = np.setdiff1d(np.arange(len(inputs.vectors)), self.vocabulary)
        query_filled = np.diff(query_weights.indptr) > 0
        if query_filled.any() and len(others):
            self.to_queries[np.ix_(query_filled, others)] = _nearest_word(
                inputs,
                others,
                query_weights.indices.astype(np.int64),
                query_weights.indptr[:-1][query_filled],
            )

    def rows(self, at: np.ndarray) -> np.ndarray:
        """max(WCD, RWMD) from queries ``self.queries[at]`` to every document, float64
        [len(at), n]; NaN where either document is empty."""
        at = np.asarray(at, dtype=np.int64)
        rows = self.queries[at]
        forward = np.asarray(self.local[at] @ self.to_documents.T.astype(np.float64))
        backward = np.asarray(self.weights @ self.to_queries[at].T.astype(np.float64)).T
        wcd = _distances(self.means[rows] @ self.means.T, self.sq_means[rows], self.sq_means)
        bound = np.fmax(np.maximum(forward, backward), wcd)
        bound[:, self.inputs.empty] = np.nan
        bound[self.inputs.empty[rows]] = np.nan
        return bound


def relaxed_wmd(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """RWMD (the larger one-sided relaxation) between documents ``rows`` and every
    document, float64 [len(rows), n], by the linear-complexity method; NaN where either
    document is empty. Each value is <= the exact WMD (up to rounding, see
    :func:`safety_margin`)."""
    bounds = LowerBounds(inputs, rows)
    at = np.arange(len(bounds.queries))
    forward = np.asarray(bounds.local @ bounds.to_documents.T.astype(np.float64))
    backward = np.asarray(bounds.weights @ bounds.to_queries.T.astype(np.float64)).T
    out = np.maximum(forward, backward)[at]
    out[:, inputs.empty] = np.nan
    out[inputs.empty[bounds.queries]] = np.nan
    return out


def lower_bounds(inputs: WmdInputs, rows: np.ndarray) -> np.ndarray:
    """max(WCD, RWMD) between documents ``rows`` and every document, float64 [len(rows),
    n]; NaN where either document is empty."""
    bounds = LowerBounds(inputs, rows)
    return bounds.rows(np.arange(len(bounds.queries)))


__all__ = [
    "MAX_ENTRIES",
    "RELATIVE_MARGIN",
    "weight_matrix",
    "word_distances",
    "safety_margin",
    "centroids",
    "word_centroid_distance",
    "LowerBounds",
    "relaxed_wmd",
    "lower_bounds",
]
