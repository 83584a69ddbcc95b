"""Low-dimensional word embeddings by PCA (docs/protocol.md §8, the paper's Table 8 and the
bottom rows of Figures 4 and 5).

The paper fits PCA on the word vectors as stored in the dataset files, where every
document holds one vector per distinct word it contains. So a word is a row of the
fit as many times as there are documents containing it. Rather than building that
repeated matrix (20news: ~1.3 million rows of 300 floats), the fit here weights each
vocabulary vector by its document frequency, which gives the same mean and the same
covariance up to a constant factor, hence the same principal axes.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.errors import WmdevalError
from ..core.io import read_documents, read_table, write_table
from ..ingest.embeddings import embedding_matrix, embeddings_table

log = logging.getLogger("wmdeval.distances.pca")


@dataclass(frozen=True)
class WeightedPca:
    """Principal axes of weighted rows: ``project(x) = (x - mean) @ components.T``."""

    mean: np.ndarray  # float64 [D]
    components: np.ndarray  # float64 [dim, D]: unit rows, largest variance first
    explained_variance: np.ndarray  # float64 [dim]: weighted variance along each axis
    total_variance: float  # weighted variance of the data, all axes together

    @property
    def explained_share(self) -> float:
        """Fraction of the variance the kept axes carry (1 for data without variance)."""
        if self.total_variance <= 0:
            return 1.0
        return float(self.explained_variance.sum() / self.total_variance)

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """Vectors [m, D] (any float dtype) projected onto the axes: float64 [m, dim]."""
        return (np.asarray(vectors, dtype=np.float64) - self.mean) @ self.components.T


def fit_weighted_pca(vectors: np.ndarray, weights: np.ndarray, dim: int) -> WeightedPca:
    """PCA of ``vectors`` [n, D] where row r counts ``weights[r]`` times (float64 [n]).

    Keeps the ``dim`` axes of largest variance (1 <= dim <= D), largest first. Negative
    weights or no weight at all are a WmdevalError.

    Centred by the weighted mean; the axes are the leading eigenvectors of the
    weighted covariance. An eigenvector is only defined up to sign, so each is turned
    to make its largest-magnitude entry positive: the same data always gives the same
    projection, whatever the LAPACK build returns.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if vectors.ndim != 2 or weights.shape != (vectors.shape[0],):
        raise ValueError(
            f"need vectors [n, D] and weights [n], got {vectors.shape}, {weights.shape}"
        )
    if not 1 <= dim <= vectors.shape[1]:
        raise WmdevalError(
            f"PCA dimension must be between 1 and {vectors.shape[1]} "
            f"(the embedding dimension), not {dim}"
        )
    if (weights < 0).any() or weights.sum() <= 0:
        raise WmdevalError(
            "PCA needs non-negative weights with a positive sum "
            "(no document has a word with a vector?)"
        )
    total = weights.sum()
    mean = weights @ vectors / total
    centred = vectors - mean
    covariance = (centred * weights[:, None]).T @ centred / total
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)  # ascending eigenvalues
    leading = np.argsort(eigenvalues, kind="stable")[::-1][:dim]
    components = eigenvectors[:, leading].T
    return WeightedPca(
        mean, _positive_largest_entry(components), eigenvalues[leading], float(np.trace(covariance))
    )


def _positive_largest_entry(components: np.ndarray) -> np.ndarray:
    """Flip each row so that its largest-|value| entry (the first such) is positive."""
    largest = components[np.arange(len(components)), np.abs(components).argmax(axis=1)]
    return components * np.where(largest < 0, -1.0, 1.0)[:, None]


def document_frequency(documents: pa.Table, words: list[str]) -> np.ndarray:
    """How many documents contain each of ``words``: float64 [len(words)], in that order.

    0 for words no document uses; document words without a vector are not counted.

    Document words are distinct (DOCUMENTS schema), so each occurrence is one document.
    """
    flat = pc.list_flatten(documents.column("words").combine_chunks())
    rows = pc.index_in(flat, value_set=pa.array(words, pa.string()))
    known = rows.drop_null().to_numpy(zero_copy_only=False).astype(np.int64)
    missing = len(rows) - len(known)
    if missing:
        # Out-of-vocabulary words have no vector to fit on, as in the .mat files.
        log.info("%d word occurrence(s) without a vector are not part of the fit", missing)
    return np.bincount(known, minlength=len(words)).astype(np.float64)


def project_embeddings(embeddings: pa.Table, documents: pa.Table, dim: int) -> pa.Table:
    """Every vector of ``embeddings`` projected to ``dim`` dimensions by PCA, in the same
    word order: an embeddings table of ``dim``-dimensional vectors.

    The PCA is fit on the word vectors of ``documents``: one row per (document, word)
    occurrence. The projected vectors are kept as they are (not L2-normalised, as for
    the paper's Table 8), in float64, so ``norm`` is the norm of the projected vector.
    """
    words, matrix = embedding_matrix(embeddings)
    weights = document_frequency(documents, words)
    pca = fit_weighted_pca(matrix, weights, dim)
    projected = pca.project(matrix)
    log.info(
        "PCA to %d dimensions, fit on %d word occurrences (%d distinct words): "
        "%.1f%% of the variance kept",
        dim,
        int(weights.sum()),
        int(np.count_nonzero(weights)),
        100 * pca.explained_share,
    )
    # float64: rounding the projection to float32 would move its WMD by ~1e-7 relative,
    # far more than the tie rule's resolution (core.variant.TIE_BITS).
    return embeddings_table(words, projected, np.linalg.norm(projected, axis=1), np.float64)


def run_project(
    embeddings_path: str | os.PathLike,
    documents_path: str | os.PathLike,
    dim: int,
    out_path: str | os.PathLike,
) -> None:
    """Write the ``dim``-dimensional PCA embeddings table of a dataset (see
    :func:`project_embeddings`); a dimension out of range is a WmdevalError."""
    table = project_embeddings(read_table(embeddings_path), read_documents(documents_path), dim)
    write_table(table, out_path)
