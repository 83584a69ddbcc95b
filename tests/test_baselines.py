"""The 12 BOW / TF-IDF baselines (wmdeval.distances.baselines) against dense numpy and gensim."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
import scipy.sparse as sp
from gensim.models import TfidfModel
from sklearn.metrics import pairwise_distances

from wmdeval.classification import knn
from wmdeval.core import methods, schemas
from wmdeval.core.methods import BASELINES, BY_NAME
from wmdeval.distances import baselines
from wmdeval.ingest import corpora

N_DOCS, N_TERMS = 16, 14
TRAIN = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14])  # fold training rows; the rest: test


def random_counts(seed: int) -> np.ndarray:
    """Dense counts with the awkward cases: an empty document, a term in every training
    document (idf 0) and a term seen only in test documents (no idf: weight 0)."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, (N_DOCS, N_TERMS)) * (rng.uniform(size=(N_DOCS, N_TERMS)) < 0.5)
    counts[:, 0] = 0
    counts[[4, 7], 0] = 2  # term 0: test documents only
    counts[TRAIN, 1] = rng.integers(1, 4, len(TRAIN))  # term 1: every training document
    counts[10] = 0  # a test document without words
    counts[3] = 0  # a training document without words
    return counts.astype(np.float64)


def documents_table(counts: np.ndarray) -> pa.Table:
    words, values = [], []
    for row in counts:
        terms = np.flatnonzero(row)
        words.append([f"t{t:02d}" for t in terms])  # sorted: zero-padded term numbers
        values.append([float(row[t]) for t in terms])
    return pa.table(
        {
            "doc_id": pa.array(np.arange(len(counts), dtype=np.int32)),
            "label": ["x"] * len(counts),
            "y": pa.array(np.zeros(len(counts), dtype=np.int32)),
            "words": words,
            "counts": values,
        }
    ).cast(schemas.DOCUMENTS)


def dense_distances(
    counts: np.ndarray, weighting: str, norm: str, metric: str, train: np.ndarray
) -> np.ndarray:
    x = counts.copy()
    if weighting == "tfidf":
        df = np.count_nonzero(x[train], axis=0)
        idf = np.zeros(x.shape[1])
        idf[df > 0] = np.log2(len(train) / df[df > 0])
        x = x * idf
    if norm != "None":
        size = np.abs(x).sum(axis=1) if norm == "L1" else np.sqrt((x**2).sum(axis=1))
        x = np.divide(x, size[:, None], out=np.zeros_like(x), where=size[:, None] > 0)
    diff = x[:, None, :] - x[None, train, :]
    if metric == "L1":
        return np.abs(diff).sum(axis=-1)
    return np.sqrt((diff**2).sum(axis=-1))


@pytest.mark.parametrize("seed", range(3))
def test_count_matrix(seed):
    counts = random_counts(seed)
    matrix, vocabulary = baselines.count_matrix(documents_table(counts))
    present = np.flatnonzero(counts.sum(axis=0))  # terms used by some document
    assert vocabulary == [f"t{t:02d}" for t in present]
    assert np.array_equal(matrix.toarray(), counts[:, present])
    assert matrix.has_sorted_indices


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("method", BASELINES, ids=lambda m: m.slug)
def test_baseline_matches_dense(method, seed):
    counts = random_counts(seed)
    matrix, _ = baselines.count_matrix(documents_table(counts))
    dense = matrix.toarray()
    got = baselines.baseline_distances(matrix, method, TRAIN, np.arange(N_DOCS), TRAIN)
    expected = dense_distances(dense, method.weighting, method.norm, method.metric, TRAIN)
    assert got.shape == (N_DOCS, len(TRAIN))
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    # the ranking relies on exact zeros: a training document against itself, the empty ones
    assert np.array_equal(got == 0, expected == 0)


def test_idf_from_training_fold():
    counts = random_counts(0)
    matrix = sp.csr_matrix(counts)
    for train in (TRAIN, TRAIN[TRAIN != 3]):  # with and without the empty training document
        idf = baselines.idf_from_training(matrix, train)
        df = np.count_nonzero(counts[train], axis=0)
        assert idf[0] == 0  # unseen in training
        seen = df > 0
        np.testing.assert_allclose(idf[seen], np.log2(len(train) / df[seen]), rtol=1e-15)
    assert idf[1] == 0  # in every (non-empty) training document: log(N/N)


def test_idf_counts_a_duplicated_entry_once():
    # scipy reads duplicate (row, column) entries as their sum: still one document.
    dup = sp.csr_matrix(
        (np.array([1.0, 2.0, 1.0]), np.array([0, 0, 1]), np.array([0, 2, 3])), shape=(2, 2)
    )
    assert not dup.has_canonical_format
    np.testing.assert_allclose(baselines.idf_from_training(dup, np.array([0, 1])), [1.0, 1.0])
    assert np.array_equal(baselines.canonical(dup).toarray(), [[3.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "name", ["TF-IDF (None/L2)", "TF-IDF (None/L1)", "TF-IDF (L1/L1)", "TF-IDF (L2/L2)"]
)
def test_tfidf_agrees_with_gensim(name, seed):
    """gensim's TfidfModel(normalize=False) fitted on the training fold, as the paper's code
    computes TF-IDF: the same idf (log base 2), so the same distances, normalised or not."""
    method = BY_NAME[name]
    counts = random_counts(seed)
    matrix, _ = baselines.count_matrix(documents_table(counts))
    dense = matrix.toarray()
    bows = [[(int(t), float(row[t])) for t in np.flatnonzero(row)] for row in dense]
    model = TfidfModel([bows[i] for i in TRAIN], normalize=False)
    weights = np.zeros_like(dense)
    for i, bow in enumerate(bows):
        for t, w in model[bow]:
            weights[i, t] = w
    if method.norm != "None":
        ord_ = 1 if method.norm == "L1" else 2
        size = np.linalg.norm(weights, ord=ord_, axis=1)
        weights = np.divide(
            weights, size[:, None], out=np.zeros_like(weights), where=size[:, None] > 0
        )
    diff = weights[:, None, :] - weights[None, TRAIN, :]
    gensim_dist = (
        np.abs(diff).sum(axis=-1) if method.metric == "L1" else np.sqrt((diff**2).sum(axis=-1))
    )
    ours = baselines.baseline_distances(matrix, method, TRAIN, np.arange(N_DOCS), TRAIN)
    np.testing.assert_allclose(ours, gensim_dist, rtol=1e-9, atol=1e-7)
    # hence the same neighbours, ties aside
    assert np.array_equal(
        np.argsort(np.round(ours, 9), axis=1, kind="stable"),
        np.argsort(np.round(gensim_dist, 9), axis=1, kind="stable"),
    )


def test_idf_is_gensims_to_the_bit_on_a_real_corpus():
    """The paper's code takes its idf from gensim's TfidfModel(normalize=False): on the 200
    real posts gensim ships, fitted on a 70 % training sample, every term's idf has the
    same bits as gensim's own (base 2, its default)."""
    texts, labels = corpora.load_mini_newsgroup()
    bags = [Counter(corpora.tokenize(text, frozenset())) for text in texts]
    matrix, _ = baselines.count_matrix(corpora.documents_table(bags, labels))
    train = np.sort(np.random.default_rng(0).permutation(matrix.shape[0])[:140])
    ours = baselines.idf_from_training(matrix, train)
    model = TfidfModel(
        [
            list(zip(matrix[i].indices.tolist(), matrix[i].data.tolist(), strict=True))
            for i in train
        ],
        normalize=False,
    )
    theirs = np.zeros_like(ours)  # gensim knows only the terms seen in training: 0 elsewhere
    for term, idf in model.idfs.items():
        theirs[term] = idf
    assert np.count_nonzero(ours) > 1000
    assert np.array_equal(ours, theirs)


def test_the_idf_base_decides_an_unnormalised_wknn_vote():
    """Where the base matters: weighted kNN of an unnormalised TF-IDF row, whose distances
    scale with 1 / ln(base) while gamma is absolute.

    Training: t0 {p, q} (label 0), t1 {p, r: 2} and t2 {p, s: 2} (label 1); the query {p}.
    p is in every training document (idf 0), q, r, s in one each (idf log(3)). So the query's
    row is 0 and its L2 distances are the rows' norms: L to t0, 2L to t1 and t2, L = log(3).
    Label 0 wins iff exp(-L / gamma) > 2 exp(-2L / gamma), iff gamma < L / ln 2: 2.29 in base
    2 (gensim's), 1.58 in base e. At gamma = 2 the base decides, and base 2 votes as gensim's
    TF-IDF vectors do.
    """
    bags = [{"p": 1, "q": 1}, {"p": 1, "r": 2}, {"p": 1, "s": 2}, {"p": 1}]
    counts = np.array([[bag.get(t, 0) for t in "pqrs"] for bag in bags], dtype=np.float64)
    matrix, _ = baselines.count_matrix(documents_table(counts))
    train, query, y_train, gamma = np.arange(3), np.array([3]), np.array([0, 1, 1]), 2.0
    method = BY_NAME["TF-IDF (None/L2)"]
    ours = baselines.baseline_distances(matrix, method, train, query, train)
    np.testing.assert_allclose(ours, [[np.log2(3), 2 * np.log2(3), 2 * np.log2(3)]], rtol=1e-15)

    dense = matrix.toarray()
    model = TfidfModel(
        [[(t, dense[i, t]) for t in np.flatnonzero(dense[i])] for i in train], normalize=False
    )
    vectors = np.zeros_like(dense)
    for i, row in enumerate(dense):
        for t, w in model[[(t, row[t]) for t in np.flatnonzero(row)]]:
            vectors[i, t] = w
    gensims = np.linalg.norm(vectors[query][:, None, :] - vectors[None, train, :], axis=-1)

    def vote(dist):
        order = np.argsort(dist, axis=1, kind="stable")
        return int(knn.wknn_predict(dist, order, y_train, gamma)[0][0])

    assert vote(gensims) == 0
    assert vote(ours) == 0
    assert vote(ours * np.log(2)) == 1  # the same distances in base e: the other label


def unsorted_csr(dense: np.ndarray) -> sp.csr_matrix:
    """The same matrix with the column indices of every row stored in reverse order."""
    m = sp.csr_matrix(dense)
    for r in range(m.shape[0]):
        lo, hi = m.indptr[r], m.indptr[r + 1]
        m.indices[lo:hi] = m.indices[lo:hi][::-1].copy()
        m.data[lo:hi] = m.data[lo:hi][::-1].copy()
    m.has_sorted_indices = False
    return m


def test_canonical_sorts_indices():
    dense = np.random.default_rng(5).uniform(size=(20, 30)) * (
        np.random.default_rng(6).uniform(size=(20, 30)) < 0.3
    )
    messy = unsorted_csr(dense)
    assert any(
        np.any(np.diff(messy.indices[messy.indptr[r] : messy.indptr[r + 1]]) < 0) for r in range(20)
    )
    clean = baselines.canonical(messy)
    assert clean.has_sorted_indices
    for r in range(20):
        assert np.all(np.diff(clean.indices[clean.indptr[r] : clean.indptr[r + 1]]) > 0)
    assert np.array_equal(clean.toarray(), dense)


def test_parallel_sparse_manhattan_on_unsorted_csr():
    """Regression: sparse Manhattan with n_jobs=2 on unsorted-index CSR input, once passed
    through canonical(), gives the dense values."""
    rng = np.random.default_rng(8)
    dense = np.round(rng.uniform(size=(60, 80)) * (rng.uniform(size=(60, 80)) < 0.2), 2)
    expected = np.abs(dense[:, None, :] - dense[None, :, :]).sum(axis=-1)
    messy = unsorted_csr(dense)
    clean = baselines.canonical(messy)
    got = pairwise_distances(clean, clean, metric="manhattan", n_jobs=2)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    rows, cols = np.arange(0, 60, 2), np.arange(1, 60, 3)
    got = baselines.distances(messy, rows, cols, "L1", n_jobs=2)
    np.testing.assert_allclose(got, expected[np.ix_(rows, cols)], rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- the kernels


def dense_pairwise(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
    diff = a[:, None, :] - b[None, :, :]
    return np.abs(diff).sum(axis=-1) if metric == "L1" else np.sqrt((diff**2).sum(axis=-1))


def sparse_rows(rng, n_rows, n_terms, density, signed=False):
    values = rng.uniform(0.01, 3, (n_rows, n_terms)) * (
        rng.uniform(size=(n_rows, n_terms)) < density
    )
    if signed:
        values *= rng.choice([-1.0, 1.0], values.shape)
    return values


@pytest.mark.parametrize("metric", ["L1", "L2"])
@pytest.mark.parametrize("signed", [False, True])
def test_sparse_distances_match_dense(metric, signed):
    rng = np.random.default_rng(20)
    a = sparse_rows(rng, 30, 50, 0.3, signed)
    a[3] = 0  # an empty row: its distance to b_j is |b_j|
    b = np.vstack([sparse_rows(rng, 25, 50, 0.3, signed), a[:5], np.zeros((1, 50))])
    got = baselines.sparse_distances(sp.csr_matrix(a), sp.csr_matrix(b), metric)
    expected = dense_pairwise(a, b, metric)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    assert np.all(got[np.arange(5), 25 + np.arange(5)] == 0.0)  # a_i against its copy
    assert got[3, 30] == 0.0  # two empty rows


@pytest.mark.parametrize("metric", ["L1", "L2"])
def test_identical_and_nearly_identical_rows(metric):
    """Size minus overlap cancels catastrophically for close pairs: they are recomputed, so
    duplicates are exactly 0 and a tiny difference keeps its digits."""
    rng = np.random.default_rng(21)
    base = rng.uniform(0.001, 1, 300)  # long rows: sizes far above the differences
    base /= base.sum()
    rows = [base, base.copy(), base.copy(), base[::-1].copy()]
    rows[1][7] += 1e-9
    rows[2][[3, 200]] = rows[2][[200, 3]]  # same values, two terms swapped
    x = np.array(rows)
    got = baselines.sparse_distances(sp.csr_matrix(x), sp.csr_matrix(x), metric)
    expected = dense_pairwise(x, x, metric)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    assert np.all(np.diag(got) == 0.0)
    assert got[0, 1] > 0


def test_sparse_distances_blocks_and_threads_do_not_change_the_result(monkeypatch):
    rng = np.random.default_rng(22)
    a = sp.csr_matrix(sparse_rows(rng, 40, 60, 0.2))
    b = sp.csr_matrix(sparse_rows(rng, 35, 60, 0.2))
    for metric in ("L1", "L2"):
        whole = baselines.sparse_distances(a, b, metric)
        monkeypatch.setattr(baselines, "_BLOCK_WORK", {metric: 50})  # ~ a row per block
        monkeypatch.setattr(baselines, "_PAIRS_PER_CHUNK", 7)
        assert np.array_equal(baselines.sparse_distances(a, b, metric), whole)
        assert np.array_equal(baselines.sparse_distances(a, b, metric, n_jobs=2), whole)
        monkeypatch.undo()


def test_sparse_distances_unsorted_and_duplicate_entries():
    dense = sparse_rows(np.random.default_rng(23), 12, 20, 0.4)
    sorted_ = sp.csr_matrix(dense)
    # each entry stored twice, half the value each time, the copies in reverse order
    rows = [slice(lo, hi) for lo, hi in zip(sorted_.indptr[:-1], sorted_.indptr[1:], strict=True)]
    doubled = sp.csr_matrix(
        (
            np.concatenate([np.r_[sorted_.data[r], sorted_.data[r][::-1]] / 2 for r in rows]),
            np.concatenate([np.r_[sorted_.indices[r], sorted_.indices[r][::-1]] for r in rows]),
            2 * sorted_.indptr,
        ),
        shape=sorted_.shape,
    )
    assert not doubled.has_canonical_format
    for metric in ("L1", "L2"):
        got = baselines.sparse_distances(doubled, unsorted_csr(dense), metric)
        expected = dense_pairwise(dense, dense, metric)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_sparse_distances_empty_shapes_and_bad_metric():
    a = sp.csr_matrix(np.ones((3, 4)))
    assert baselines.sparse_distances(a[:0], a, "L1").shape == (0, 3)
    assert baselines.sparse_distances(a, a[:0], "L2").shape == (3, 0)
    with pytest.raises(ValueError, match="metric"):
        baselines.sparse_distances(a, a, "cosine")


@pytest.mark.parametrize(
    "slug, tie",
    [
        ("bow-l1-l1", 2.0),
        ("bow-l2-l2", np.sqrt(2.0)),
        ("tfidf-l1-l1", 2.0),
        ("tfidf-l2-l2", np.sqrt(2.0)),
    ],
)
def test_documents_sharing_no_word_are_exactly_tied(slug, tie):
    """Exact ties must stay exact, or the kNN tie rule (lower index first) becomes noise:
    normalised rows sum to 1 +- ulps, so size-minus-overlap must use exactly 1."""
    rng = np.random.default_rng(0)
    n, vocabulary = 200, 3000
    indices = np.concatenate([rng.choice(vocabulary, 7, replace=False) for _ in range(n)])
    counts = baselines.canonical(
        sp.csr_matrix(
            (rng.integers(1, 4, size=7 * n).astype(float), indices, np.arange(0, 7 * n + 1, 7)),
            shape=(n, vocabulary),
        )
    )
    everyone = np.arange(n)
    d = baselines.baseline_distances(counts, methods.BY_SLUG[slug], everyone, everyone, everyone)
    disjoint = (counts @ counts.T).toarray() == 0
    assert disjoint.sum() > 1000
    assert np.unique(d[disjoint]).tolist() == [tie]
