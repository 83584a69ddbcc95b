"""The one distance interface (wmdeval.core.variant) and its factory
(wmdeval.distances.factory): positions, the NaN rule, ranking, the neighbour table."""

from __future__ import annotations

import numpy as np
import pytest
from test_n2o import empty_document, synthetic_dataset

from wmdeval.core import io
from wmdeval.core.methods import BY_SLUG, METHODS, as_method
from wmdeval.core.variant import DenseDistances, NeighbourTable, positions, rank_neighbours
from wmdeval.distances import baselines
from wmdeval.distances.factory import method_distances, prepare_variant

# --------------------------------------------------------------------------- positions


def test_positions_hand_computed():
    doc_ids = np.array([40, 10, 30, 20])
    assert positions(doc_ids, np.array([20, 40, 20, 10]), "x").tolist() == [3, 0, 3, 1]
    assert positions(doc_ids, np.array([], dtype=int), "x").tolist() == []


def test_positions_name_what_lacks_a_document():
    with pytest.raises(
        io.WmdevalError,
        match=r"^WMD distances lack 2 document\(s\), e.g. "
        r"doc_id 5$",
    ):
        positions(np.array([1, 2, 3]), np.array([2, 5, 9]), "WMD distances")
    with pytest.raises(io.WmdevalError, match="hold doc_id 2 more than once"):
        positions(np.array([2, 1, 2]), np.array([1]), "the documents")


def test_fold_indices_use_positions():
    documents, splits, _ = synthetic_dataset()
    ids = documents.column("doc_id").to_numpy()
    folds = io.fold_indices(splits, ids)
    for fold, (train, test) in enumerate(folds):
        rows = [r for r in splits.to_pylist() if r["fold"] == fold]
        where = {int(d): p for p, d in enumerate(ids)}  # the plain loop
        assert train.tolist() == sorted(where[r["doc_id"]] for r in rows if r["subset"] == "train")
        assert test.tolist() == sorted(where[r["doc_id"]] for r in rows if r["subset"] == "test")
    with pytest.raises(io.WmdevalError, match="the documents .* lack 1 document"):
        io.fold_indices(splits, ids[1:])


# --------------------------------------------------------------------------- dense


def test_dense_block_applies_the_nan_rule_and_reorders_once():
    matrix = np.arange(16, dtype=np.float32).reshape(4, 4)
    ids = np.array([7, 5, 6, 8])  # the matrix's order; the variant's is 5, 6, 7, 8
    dense = DenseDistances.from_matrix(
        np.array([5, 6, 7, 8]), ids, matrix, "M", empty=np.array([False, False, False, True])
    )
    assert dense.empty.tolist() == [False, False, False, True]
    block = dense.block(np.array([0, 2, 3]), np.array([1, 0, 3]))
    assert block.dtype == np.float64
    # position 0 = doc 5 = matrix row 1; position 2 = doc 7 = matrix row 0
    np.testing.assert_array_equal(block, [[6, 5, np.nan], [2, 1, np.nan], [np.nan, np.nan, np.nan]])
    block[0, 0] = -1.0  # a fresh array: the matrix is untouched
    assert dense.block(np.array([0]), np.array([1]))[0, 0] == 6
    with pytest.raises(io.WmdevalError, match="M lack 1 document"):
        DenseDistances.from_matrix(np.array([5, 9]), ids, matrix, "M")


def test_all_nan_rows_are_empty():
    matrix = np.ones((3, 3))
    matrix[1, :] = matrix[:, 1] = np.nan
    assert DenseDistances(matrix).empty.tolist() == [False, True, False]


def test_nearest_is_rank_neighbours_of_the_block():
    rng = np.random.default_rng(3)
    matrix = np.round(rng.uniform(size=(30, 30)), 1)  # many ties
    matrix[4, :] = matrix[:, 4] = np.nan
    dense = DenseDistances(matrix)
    rows, cols = np.array([0, 4, 9, 17]), np.arange(2, 25)
    found = dense.nearest(rows, cols, 6)
    want = rank_neighbours(dense.block(rows, cols), 6)
    np.testing.assert_array_equal(found.index, want)
    assert (found.index[1] == -1).all() and np.isnan(found.distance[1]).all()
    for r, row in enumerate(rows):  # a plain loop: by distance, ties to the lower column
        ranked = sorted(
            (matrix[row, c], j)
            for j, c in enumerate(cols)
            if c != 4 and np.isfinite(matrix[row, c])
        )
        if row != 4:
            assert found.index[r].tolist() == [j for _, j in ranked[:6]]
            assert found.distance[r].tolist() == [d for d, _ in ranked[:6]]


# --------------------------------------------------------------------------- the factory


def test_method_distances_baseline_uses_the_folds_training_idf():
    documents, splits, matrices = synthetic_dataset()
    variant = prepare_variant(documents, splits, matrices)
    train, test = variant.folds[1]
    counts, _ = baselines.count_matrix(documents)
    method = BY_SLUG["tfidf-l1-l1"]
    want = baselines.baseline_distances(counts, method, train, test, train)
    empty = empty_document(splits)
    want[test == empty, :] = np.nan
    want[:, train == empty] = np.nan
    np.testing.assert_array_equal(method_distances(variant, method, 1).block(test, train), want)
    by_positions = method_distances(variant, "TF-IDF (L1/L1)", training=train)
    np.testing.assert_array_equal(by_positions.block(test, train), want)
    everyone = np.arange(len(variant.doc_ids))
    all_idf = baselines.baseline_distances(counts, method, everyone, test, train)
    assert not np.allclose(
        all_idf[test != empty][:, train != empty], want[test != empty][:, train != empty]
    )
    np.testing.assert_array_equal(
        method_distances(variant, method).block(test, train)[test != empty][:, train != empty],
        all_idf[test != empty][:, train != empty],
    )


def test_method_distances_index_wmd_matrices_by_doc_id():
    documents, splits, matrices = synthetic_dataset()
    variant = prepare_variant(documents, splits, matrices)
    rows, cols = np.array([0, 7, 20]), np.array([3, 30, 1])
    _, wmd = matrices["wmd"]
    np.testing.assert_allclose(
        method_distances(variant, "wmd", 0).block(rows, cols), wmd[np.ix_(rows, cols)]
    )
    # stored in reverse doc_id order, scaled by 1.5: realigned on read
    np.testing.assert_allclose(
        method_distances(variant, "WMD-TF-IDF").block(rows, cols), 1.5 * wmd[np.ix_(rows, cols)]
    )


def test_documents_without_words_have_nan_distances_under_every_method():
    documents, splits, matrices = synthetic_dataset()
    variant = prepare_variant(documents, splits, matrices)
    everyone = np.arange(len(variant.doc_ids))
    empty = empty_document(splits)
    for method in METHODS:
        distances = method_distances(variant, method, 0)
        assert np.flatnonzero(distances.empty).tolist() == [empty], method.name
        dist = distances.block(everyone, everyone)
        assert np.isnan(dist[empty]).all() and np.isnan(dist[:, empty]).all(), method.name
        assert np.isfinite(np.delete(np.delete(dist, empty, 0), empty, 1)).all(), method.name


def test_missing_wmd_documents_are_an_error():
    documents, splits, matrices = synthetic_dataset()
    ids, matrix = matrices["wmd"]
    with pytest.raises(io.WmdevalError, match="WMD distances lack 1 document"):
        prepare_variant(documents, splits, {"wmd": (ids[:-1], matrix[:-1, :-1])})
    variant = prepare_variant(documents, splits, {})
    with pytest.raises(io.WmdevalError, match="no WMD distances were given"):
        method_distances(variant, "wmd")


def test_methods_without_a_matrix_are_left_out():
    documents, splits, matrices = synthetic_dataset()
    variant = prepare_variant(documents, splits, {"wmd": matrices["wmd"]})
    names = [m.name for m in variant.methods]
    assert "WMD" in names and "WMD-TF-IDF" not in names and len(names) == 13
    pca = prepare_variant(
        documents, splits, {"wmd-pca10": matrices["wmd"], "wmd-pca5": matrices["wmd"]}
    )
    assert [m.name for m in pca.methods][-2:] == ["WMD (5-d PCA)", "WMD (10-d PCA)"]


def test_variant_without_splits():
    documents, _, matrices = synthetic_dataset(empty_doc=False)
    variant = prepare_variant(documents, None, matrices)
    assert variant.folds == []
    assert np.array_equal(variant.training(None), np.arange(documents.num_rows))
    with pytest.raises(io.WmdevalError, match="fold"):
        variant.training(0)


def test_unknown_method_is_an_error():
    assert as_method("bow-l1-l1") is as_method("BOW (L1/L1)") is BY_SLUG["bow-l1-l1"]
    with pytest.raises(io.WmdevalError, match="unknown method"):
        as_method("cosine")


# --------------------------------------------------------------------------- neighbour table


@pytest.fixture
def dense():
    rng = np.random.default_rng(9)
    matrix = np.round(rng.uniform(size=(40, 40)), 1)
    matrix = (matrix + matrix.T) / 2
    matrix[5, :] = matrix[:, 5] = np.nan
    return DenseDistances(matrix)


def _role(queries, candidates, k):
    from wmdeval.core.roles import QueryRole

    return QueryRole(0, "test", np.asarray(queries), np.asarray(candidates), k)


def test_neighbour_table_gives_the_nearest_of_the_lists_it_was_searched_for(dense):
    candidates = np.sort(np.append(np.arange(0, 40, 2), 5))  # even positions, and 5 (empty)
    queries = np.arange(1, 40, 2)
    table = NeighbourTable.from_distances(dense, [_role(queries, candidates, 8)])
    held = table.held.tocoo()
    assert 5 not in held.row and 5 not in held.col  # an empty document is never a neighbour
    for k in (1, 3, 8):
        got, want = table.nearest(queries, candidates, k), dense.nearest(queries, candidates, k)
        np.testing.assert_array_equal(got.index, want.index)
        np.testing.assert_array_equal(got.distance, want.distance)
    got = table.nearest(np.array([5, 7]), candidates, 2)  # an empty row has none
    assert (got.index[0] == -1).all() and (got.index[1] >= 0).all()


def test_neighbour_table_refuses_what_it_cannot_know(dense):
    candidates = np.arange(0, 40, 2)
    table = NeighbourTable.from_distances(dense, [_role(np.arange(1, 40, 2), candidates, 3)])
    with pytest.raises(io.WmdevalError, match="not proven complete"):
        table.nearest(np.array([31]), candidates, 4)
    with pytest.raises(io.WmdevalError, match="no search was made among these candidates"):
        table.nearest(np.array([31]), candidates[1:], 1)
    with pytest.raises(io.WmdevalError, match="some rows were not searched"):
        table.nearest(np.array([30]), candidates, 1)
    # block: the pairs the table holds (and NaN for empty documents), else an error
    held = table.nearest(np.array([31]), candidates, 3).index[0]
    np.testing.assert_array_equal(
        table.block(np.array([31]), candidates[held]), dense.block(np.array([31]), candidates[held])
    )
    assert np.isnan(table.block(np.array([5]), np.array([1, 2]))).all()
    with pytest.raises(io.WmdevalError, match="pairs the table does not hold"):
        table.block(np.array([31]), candidates)


def test_neighbour_table_checks_the_nan_rule():
    empty = np.array([False, True, False])
    with pytest.raises(io.WmdevalError, match="empty document"):
        NeighbourTable(np.array([0]), np.array([1]), np.array([0.5]), {}, empty)
    with pytest.raises(io.WmdevalError, match="listed twice"):
        NeighbourTable(np.array([0, 0]), np.array([2, 2]), np.array([0.5, 0.5]), {}, empty)
