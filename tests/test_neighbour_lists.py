"""knn mode's neighbour lists of the dense methods, a block of queries at a time
(wmdeval.distances.neighbour_lists): the rows are the full matrices' bit for bit, the lists
a plain loop's with ties at the k-th kept, and evaluation from them scores byte for byte
as from the matrices."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from test_embedding import awkward
from test_wmd import documents, embeddings

from wmdeval.classification.knn import evaluate_variant
from wmdeval.core import io, schemas
from wmdeval.core.roles import query_roles
from wmdeval.core.variant import DenseDistances, NeighbourTable, tie_key
from wmdeval.distances import embedding, external, neighbour_lists
from wmdeval.distances.factory import prepare_variant
from wmdeval.distances.wmd import solver
from wmdeval.planning import resources


def folds_of(n: int, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    folds = []
    for _ in range(count):
        order = rng.permutation(n)
        cut = int(0.7 * n)
        folds.append((np.sort(order[:cut]), np.sort(order[cut:])))
    return folds


def splits_table(doc_ids: np.ndarray, folds) -> pa.Table:
    rows = {"fold": [], "doc_id": [], "subset": []}
    for f, (train, test) in enumerate(folds):
        for name, where in (("train", train), ("test", test)):
            rows["doc_id"] += doc_ids[where].tolist()
            rows["fold"] += [f] * len(where)
            rows["subset"] += [name] * len(where)
    return pa.table(rows).cast(schemas.SPLITS)


SETTINGS = [
    {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 4}, "empty_documents": "drop"},
    {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 4}, "empty_documents": "error"},
]


def plain_lists(matrix: np.ndarray, empty: np.ndarray, folds, settings):
    """The lists by a plain loop: for each role and query, every candidate whose tie key
    is at most the k-th smallest key, and the smallest distance of the others."""
    pairs, certificates = {}, {}
    for role in query_roles(folds, empty, settings):
        candidates = role.candidates[~empty[role.candidates]]
        for q in role.queries.tolist():
            values = [float(matrix[q, c]) for c in candidates.tolist()]
            if not values or any(np.isnan(values)):
                bound = np.inf
            else:
                keys = sorted(float(tie_key(v)) for v in values)
                kth = keys[min(role.k, len(keys)) - 1]
                others = [v for v in values if float(tie_key(v)) > kth]
                for c, v in zip(candidates.tolist(), values, strict=True):
                    if float(tie_key(v)) <= kth:
                        pairs[(q, c)] = v
                bound = min(others) if others else np.inf
            key = (q, role.k)
            certificates.setdefault(key, set()).add(bound)
    return pairs, certificates


@pytest.mark.parametrize("settings", SETTINGS, ids=["drop", "error"])
@pytest.mark.parametrize("block", [1, 5, None])
def test_block_top_k_is_the_plain_loop_with_ties(settings, block):
    rng = np.random.default_rng(3)
    n = 40
    # small integers: many exact ties, at the k-th too; two documents without a distance
    matrix = rng.integers(0, 4, size=(n, n)).astype(np.float64)
    matrix = np.minimum(matrix, matrix.T)
    empty = np.zeros(n, dtype=bool)
    empty[[6, 17]] = True
    matrix[empty, :] = np.nan
    matrix[:, empty] = np.nan
    folds = folds_of(n, 3, 0)
    doc_ids = np.arange(n) * 10 + 1

    def rows_of(queries):
        return matrix[queries].copy()

    tables = [
        neighbour_lists.neighbour_lists(
            doc_ids, empty, np.zeros(n, dtype=bool), folds, settings, rows_of, s, 3, block
        )
        for s in range(3)
    ]
    pairs = pa.concat_tables([t[0] for t in tables])
    certificates = pa.concat_tables([t[1] for t in tables])
    want_pairs, want_certificates = plain_lists(matrix, empty, folds, settings)
    position = {int(d): p for p, d in enumerate(doc_ids)}
    got = {
        (position[q], position[c]): d
        for q, c, d in zip(
            pairs.column("query").to_pylist(),
            pairs.column("candidate").to_pylist(),
            pairs.column("distance").to_pylist(),
            strict=True,
        )
    }
    assert got == want_pairs
    got_certificates = {}
    for q, k, b in zip(
        certificates.column("query").to_pylist(),
        certificates.column("k").to_pylist(),
        certificates.column("unsolved_bound").to_pylist(),
        strict=True,
    ):
        got_certificates.setdefault((position[q], k), set()).add(b)
    assert got_certificates == want_certificates
    # and evaluation ranks from them exactly as from the matrix
    table = NeighbourTable.from_tables(doc_ids, pairs, certificates, empty, "lists")
    dense = DenseDistances(matrix, empty)
    for role in query_roles(folds, empty, settings):
        a = dense.nearest(role.queries, role.candidates, role.k)
        b = table.nearest(role.queries, role.candidates, role.k)
        np.testing.assert_array_equal(a.index, b.index)
        np.testing.assert_array_equal(a.distance, b.distance)


@pytest.mark.parametrize("method", embedding.METHODS)
@pytest.mark.parametrize("seed", [0, 1])
def test_embedding_rows_are_the_matrix_rows_bit_for_bit(method, seed):
    docs, emb = awkward(seed, n_docs=300)
    inputs = solver.prepare(docs, emb, "bow")
    matrix = embedding.embedding_matrix(inputs, method)
    rows_of, undefined = embedding.embedding_rows(inputs, method)
    np.testing.assert_array_equal(undefined, np.isnan(np.diagonal(matrix)))
    for start, stop in ((0, 300), (0, 1), (17, 80), (290, 300)):
        queries = np.arange(start, stop)
        np.testing.assert_array_equal(rows_of(queries), matrix[queries])
    scattered = np.array([299, 3, 150, 8, 1])
    np.testing.assert_array_equal(rows_of(scattered), matrix[scattered])


@pytest.mark.parametrize("metric", external.METRICS)
def test_vector_rows_are_the_matrix_rows_bit_for_bit(metric):
    rng = np.random.default_rng(5)
    n = 90
    doc_ids = np.arange(n) * 2
    vectors = rng.normal(size=(n + 4, 7))
    vectors[10] = np.nan  # undefined
    vectors[20] = 0.0  # no direction (cosine)
    vec_ids = np.concatenate([doc_ids, [1, 3, 5, 7]])[rng.permutation(n + 4)]
    vectors = vectors[np.argsort(np.argsort(vec_ids))]  # rows follow vec_ids
    matrix = external.vector_distance_matrix(doc_ids, vec_ids, vectors, metric, "v")
    rows_of, undefined = external.vector_rows(doc_ids, vec_ids, vectors, metric, "v")
    np.testing.assert_array_equal(undefined, np.isnan(np.diagonal(matrix)))
    for queries in (np.arange(n), np.array([89, 10, 20, 0, 33])):
        np.testing.assert_array_equal(rows_of(queries), matrix[queries])


def cancelling_corpus():
    """Documents over a few words, one of which has mean vector 0 (its words' vectors
    cancel): the cosine of mean vectors leaves it undefined though it has words."""
    rng = np.random.default_rng(2)
    vocab = [f"w{k}" for k in range(12)]
    vectors = {w: rng.normal(size=4).tolist() for w in vocab}
    vectors["w11"] = [-x for x in vectors["w10"]]
    bags = []
    for _ in range(60):
        chosen = rng.choice(vocab[:10], int(rng.integers(1, 5)), replace=False)
        bags.append({w: int(rng.integers(1, 3)) for w in chosen})
    bags[7] = {"w10": 1, "w11": 1}
    bags[30] = {}
    docs = documents(bags)
    labels = np.array([f"c{d % 3}" for d in range(60)], dtype=object)
    docs = docs.set_column(1, "label", pa.array(labels.tolist()))
    docs = docs.set_column(2, "y", pa.array((np.arange(60) % 3).astype(np.int32)))
    return docs, embeddings(vectors)


@pytest.mark.parametrize("mode", ["drop", "error"])
def test_evaluation_from_the_lists_is_the_matrices_byte_for_byte(mode, tmp_path):
    docs, emb = cancelling_corpus()
    doc_ids = docs.column("doc_id").to_numpy()
    splits = splits_table(doc_ids, folds_of(len(doc_ids), 3, 1))
    paths = {"documents": tmp_path / "documents.parquet", "splits": tmp_path / "splits.parquet"}
    io.write_table(docs, paths["documents"])
    io.write_table(splits, paths["splits"])
    emb_path = tmp_path / "embeddings.parquet"
    io.write_table(emb, emb_path)
    settings = {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 5}, "empty_documents": mode}
    matrices, tables = {}, {}
    for method in embedding.METHODS:
        out = tmp_path / f"{method}.parquet"
        embedding.run_embedding_matrix(paths["documents"], emb_path, method, out)
        matrices[method] = io.read_distances(out)
        parts = []
        for shard in range(2):
            pairs = tmp_path / f"{method}.{shard}.parquet"
            certificates = tmp_path / f"{method}.{shard}.certificates.parquet"
            embedding.run_embedding_neighbours(
                paths["documents"],
                paths["splits"],
                emb_path,
                method,
                settings,
                shard,
                2,
                pairs,
                certificates,
            )
            parts.append((io.read_table(pairs), io.read_table(certificates)))
        tables[method] = (
            pa.concat_tables([p[0] for p in parts]),
            pa.concat_tables([p[1] for p in parts]),
        )
    # the cosine leaves the cancelling document undefined: certified so
    certified = tables["cosine-mean"][1]
    marked = [
        q
        for q, key in zip(
            certified.column("query").to_pylist(),
            certified.column("candidates").to_pylist(),
            strict=True,
        )
        if key == neighbour_lists.UNDEFINED
    ]
    assert marked == [7]
    dense_scores, dense_predictions = evaluate_variant(
        docs, splits, matrices, settings, "d", "original"
    )
    listed_scores, listed_predictions = evaluate_variant(
        docs, splits, {}, settings, "d", "original", neighbour_tables=tables
    )
    assert listed_scores.equals(dense_scores)
    assert listed_predictions.equals(dense_predictions)
    assert listed_scores.num_rows == dense_scores.num_rows > 0
    # the variant knows the cosine's undefined document from the table alone
    variant = prepare_variant(docs, splits, {}, tables)
    assert np.flatnonzero(variant.wmd["cosine-mean"].empty).tolist() == [7, 30]


def test_block_sizes_agree_with_the_planning_model():
    assert resources.LISTED_BLOCK_ENTRIES == neighbour_lists.BLOCK_ENTRIES
    # no n x n: the 85,635-passage corpus's shards declare well under 4,000 MB
    for method in ("wcd", "cosine-mean", "rwmd", "vectors"):
        declared = resources.listed_resources("absent.parquet", method, 1, 1, 85_635)
        assert declared["mem_mb"] < 4000, method
