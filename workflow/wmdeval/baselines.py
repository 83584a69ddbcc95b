"""The 12 BOW / TF-IDF baselines (PROTOCOL §4): 3 normalisations x 2 metrics.

Baseline distances are cheap and, for TF-IDF, depend on the fold (IDF from the
fold's training documents), so they are computed where they are used instead of
being stored as matrices.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from sklearn.metrics import pairwise_distances

from .methods import Method


def count_matrix(documents: pa.Table) -> tuple[sp.csr_matrix, list[str]]:
    """Documents (DOCUMENTS schema) -> (CSR count matrix [docs x vocabulary], vocabulary).

    The vocabulary is the sorted set of words of these documents, so the column
    order does not depend on document order.
    """
    words = documents.column("words").to_pylist()
    counts = documents.column("counts").to_pylist()
    vocabulary = sorted({w for ws in words for w in ws})
    column = {w: c for c, w in enumerate(vocabulary)}
    indptr = np.zeros(len(words) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(ws) for ws in words])
    indices = np.fromiter((column[w] for ws in words for w in ws), dtype=np.int32,
                          count=int(indptr[-1]))
    data = np.fromiter((c for cs in counts for c in cs), dtype=np.float64, count=int(indptr[-1]))
    matrix = sp.csr_matrix((data, indices, indptr), shape=(len(words), len(vocabulary)))
    return canonical(matrix), vocabulary


def canonical(matrix: sp.spmatrix) -> sp.csr_matrix:
    """CSR with sorted indices, no duplicate entries and no explicit zeros.

    scikit-learn's sparse Manhattan distances with n_jobs > 1 were seen returning
    wrong values on CSR input with unsorted indices, so every matrix handed to it
    goes through here. Duplicate (row, column) entries, which scipy reads as their
    sum, are summed so that document frequencies count each term once per document.
    """
    matrix = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    return matrix


def idf_from_training(counts: sp.csr_matrix, train_rows: np.ndarray) -> np.ndarray:
    """idf(t) = log(N_train / df_train(t)); 0 for terms unseen in training.

    Matches gensim's ``TfidfModel(normalize=False)`` up to the base of the log,
    which only scales every distance of a method by the same factor.
    """
    train = canonical(counts[np.asarray(train_rows)])  # one entry per term and document
    df = np.bincount(train.indices, minlength=counts.shape[1]).astype(np.float64)
    idf = np.zeros(counts.shape[1], dtype=np.float64)
    seen = df > 0
    idf[seen] = np.log(train.shape[0] / df[seen])
    return idf


def weighted(counts: sp.csr_matrix, method: Method, idf: np.ndarray | None) -> sp.csr_matrix:
    """Apply the method's weighting and normalisation to count vectors."""
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


def distances(x: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray, metric: str,
              n_jobs: int = 1) -> np.ndarray:
    """Dense float64 distances between rows ``rows`` and ``cols`` of ``x``."""
    name = {"L1": "manhattan", "L2": "euclidean"}[metric]
    a = canonical(x[np.asarray(rows)])
    b = canonical(x[np.asarray(cols)])
    return pairwise_distances(a, b, metric=name, n_jobs=n_jobs)


def baseline_distances(counts: sp.csr_matrix, method: Method, train_rows: np.ndarray,
                       rows: np.ndarray, cols: np.ndarray, n_jobs: int = 1) -> np.ndarray:
    """Distances of one baseline method for one fold (IDF from ``train_rows``)."""
    idf = idf_from_training(counts, train_rows) if method.weighting == "tfidf" else None
    return distances(weighted(counts, method, idf), rows, cols, method.metric, n_jobs)
