"""PCA projection of word embeddings (wmdeval.distances.pca)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from sklearn.decomposition import PCA

from wmdeval.core import io, schemas
from wmdeval.distances import pca
from wmdeval.ingest.embeddings import embedding_matrix, embeddings_table


def _random_vectors(n_words: int = 30, dim: int = 8, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # Distinct scales per axis: well-separated eigenvalues, so axes are unique up to sign.
    return rng.normal(size=(n_words, dim)) * np.linspace(3.0, 0.5, dim)


def _documents(word_lists: list[list[str]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "doc_id": k,
                "label": "x",
                "y": 0,
                "words": sorted(words),
                "counts": [1.0] * len(words),
            }
            for k, words in enumerate(word_lists)
        ],
        schema=schemas.DOCUMENTS,
    )


def _same_up_to_sign(a: np.ndarray, b: np.ndarray, atol: float = 1e-9) -> None:
    """Columns of a and b are equal up to one sign per column."""
    signs = np.sign(np.sum(a * b, axis=0))
    np.testing.assert_allclose(a, b * signs, atol=atol)


def test_weighted_fit_equals_sklearn_on_repeated_rows():
    vectors = _random_vectors()
    weights = np.random.default_rng(2).integers(0, 5, len(vectors)).astype(float)
    weights[0] = 3.0  # at least some weight
    repeated = np.repeat(vectors, weights.astype(int), axis=0)

    fitted = pca.fit_weighted_pca(vectors, weights, 3)
    reference = PCA(n_components=3, svd_solver="full").fit(repeated)

    np.testing.assert_allclose(fitted.mean, reference.mean_, atol=1e-12)
    _same_up_to_sign(fitted.components.T, reference.components_.T)
    _same_up_to_sign(fitted.project(vectors), reference.transform(vectors))
    # sklearn divides by n - 1, the weighted fit by the total weight n.
    n = len(repeated)
    np.testing.assert_allclose(
        fitted.explained_variance * n / (n - 1), reference.explained_variance_, rtol=1e-9
    )


def test_zero_weight_words_do_not_move_the_fit_but_are_projected():
    vectors = _random_vectors()
    weights = np.ones(len(vectors))
    weights[:5] = 0
    with_unused = pca.fit_weighted_pca(vectors, weights, 2)
    without = pca.fit_weighted_pca(vectors[5:], weights[5:], 2)
    np.testing.assert_allclose(with_unused.components, without.components, atol=1e-12)
    assert with_unused.project(vectors).shape == (len(vectors), 2)


def test_signs_are_deterministic_largest_entry_positive():
    vectors = _random_vectors()
    weights = np.ones(len(vectors))
    fitted = pca.fit_weighted_pca(vectors, weights, 4)
    largest = fitted.components[np.arange(4), np.abs(fitted.components).argmax(axis=1)]
    assert (largest > 0).all()
    # Negated data has the same covariance: whatever signs LAPACK returns, same axes.
    flipped = pca.fit_weighted_pca(-vectors, weights, 4)
    np.testing.assert_allclose(flipped.components, fitted.components, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(fitted.components, axis=1), 1.0)


def test_dimension_is_checked():
    vectors = _random_vectors(dim=4)
    with pytest.raises(io.WmdevalError, match="between 1 and 4"):
        pca.fit_weighted_pca(vectors, np.ones(len(vectors)), 5)
    with pytest.raises(io.WmdevalError, match="between 1 and 4"):
        pca.fit_weighted_pca(vectors, np.ones(len(vectors)), 0)
    with pytest.raises(io.WmdevalError, match="positive sum"):
        pca.fit_weighted_pca(vectors, np.zeros(len(vectors)), 2)


def test_document_frequency_counts_documents_and_skips_unknown_words():
    documents = _documents([["a", "b"], ["b", "oov"], ["b", "c"], []])
    assert pca.document_frequency(documents, ["a", "b", "c", "unused"]).tolist() == [
        1.0,
        3.0,
        1.0,
        0.0,
    ]


def test_project_embeddings_fits_one_row_per_word_occurrence(tmp_path):
    vectors = _random_vectors(n_words=6, dim=5)
    words = ["a", "b", "c", "d", "e", "f"]
    norms = np.linalg.norm(vectors, axis=1)
    embeddings = embeddings_table(words, vectors, norms)
    # "f" is in no document: it gets projected, but does not weigh in the fit.
    documents = _documents([["a", "b", "c"], ["a", "d"], ["a", "b", "e"], ["c", "d", "e"]])
    io.write_table(embeddings, tmp_path / "embeddings.parquet")
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    pca.run_project(
        tmp_path / "embeddings.parquet", tmp_path / "documents.parquet", 2, tmp_path / "pca.parquet"
    )
    projected = io.read_table(tmp_path / "pca.parquet")

    assert projected.schema == schemas.embeddings_schema(2, pa.float64())
    out_words, out_vectors = embedding_matrix(projected)
    assert out_words == words
    # The vectors as they would be stored in a .mat file: one per (document, word).
    stored = vectors[[0, 1, 2, 0, 3, 0, 1, 4, 2, 3, 4]]
    expected = PCA(n_components=2, svd_solver="full").fit(stored).transform(vectors)
    _same_up_to_sign(out_vectors, expected, atol=1e-5)  # the input vectors are float32
    # Not re-normalised: the norm column is the norm of the projected vector.
    np.testing.assert_allclose(
        projected.column("norm").to_numpy(), np.linalg.norm(out_vectors, axis=1), rtol=1e-6
    )
    assert not np.allclose(np.linalg.norm(out_vectors, axis=1), 1.0)
