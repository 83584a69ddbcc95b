"""Nearest-neighbour overlap (wmdeval.analyses.n2o)."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from wmdeval.analyses import n2o
from wmdeval.analyses import per_variant as analyses
from wmdeval.core import io
from wmdeval.core.methods import METHODS
from wmdeval.core.variant import rank_neighbours
from wmdeval.distances.factory import prepare_variant
from wmdeval.ingest.corpora import documents_table, random_splits

# --------------------------------------------------------------------------- a dataset


def empty_document(splits: pa.Table) -> int:
    """The document the synthetic dataset leaves without words: fold 0's first test one."""
    rows = splits.filter(pc.equal(splits.column("fold"), 0)).to_pylist()
    return min(r["doc_id"] for r in rows if r["subset"] == "test")


def synthetic_dataset(seed: int = 0, per_class: int = 12, empty_doc: bool = True):
    """Three classes with their own vocabularies (plus shared words), two folds, and
    WMD-like matrices: Euclidean distances between class-dependent points, NaN for the
    document without words (see :func:`empty_document`). The "wmd-tfidf" matrix lists
    its doc ids in reverse order."""
    rng = np.random.default_rng(seed)
    labels, bags = [], []
    for label in ["apple", "banana", "cherry"]:
        for _ in range(per_class):
            words = [f"{label}{i}" for i in rng.choice(8, 4, replace=False)]
            words += [f"shared{i}" for i in rng.choice(6, 2, replace=False)]
            bags.append(Counter({w: int(rng.integers(1, 4)) for w in words}))
            labels.append(label)
    splits = random_splits(len(bags), 2, 0.25, seed)
    points = rng.normal(size=(len(bags), 3)) + np.repeat(np.eye(3) * 10, per_class, axis=0)
    wmd = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    if empty_doc:
        empty = empty_document(splits)
        bags[empty] = Counter()
        wmd[empty, :] = wmd[:, empty] = np.nan
    documents = documents_table(bags, labels)
    ids = np.arange(len(bags), dtype=np.int32)
    reverse = ids[::-1].copy()
    matrices = {"wmd": (ids, wmd), "wmd-tfidf": (reverse, (1.5 * wmd)[np.ix_(reverse, reverse)])}
    return documents, splits, matrices


def write_dataset(tmp_path, documents, splits, matrices) -> tuple[str, str, dict[str, str]]:
    docs_path, splits_path = tmp_path / "documents.parquet", tmp_path / "splits.parquet"
    io.write_table(documents, docs_path)
    io.write_table(splits, splits_path)
    wmd_paths = {}
    for slug, (ids, matrix) in matrices.items():
        wmd_paths[slug] = str(tmp_path / f"{slug}.parquet")
        io.write_distances(matrix, ids, wmd_paths[slug])
    return str(docs_path), str(splits_path), wmd_paths


# --------------------------------------------------------------------------- overlap


def test_overlap_of_a_ranking_with_itself_is_one():
    dist = np.random.default_rng(1).uniform(size=(30, 50))
    neighbours = rank_neighbours(dist, 19)
    for k in (1, 5, 19):
        assert n2o.nearest_neighbour_overlap(neighbours, neighbours, k) == 1.0


def test_overlap_with_a_random_ranking_is_k_over_n():
    rng = np.random.default_rng(2)
    n_queries, n_train, k = 3000, 100, 10
    a = rank_neighbours(rng.uniform(size=(n_queries, n_train)), k)
    b = rank_neighbours(rng.uniform(size=(n_queries, n_train)), k)
    # |overlap| is hypergeometric with mean k²/n: N2O = k/n = 0.1, standard error ~0.002
    assert n2o.nearest_neighbour_overlap(a, b, k) == pytest.approx(k / n_train, abs=0.01)


def test_overlap_hand_made_case_with_a_tie_at_the_kth_neighbour():
    # query 0: A ranks 0, 1 | B ranks 1, 2       -> overlap 1 of 2
    # query 1: A has a tie at rank 2 between columns 2 and 3: the lower column (2)
    #          wins, as in kNN; B ranks 3, 2      -> overlap 2 of 2
    a = np.array([[0.1, 0.2, 0.3, 0.4], [0.9, 0.8, 0.5, 0.5]])
    b = np.array([[0.9, 0.1, 0.2, 0.8], [0.9, 0.8, 0.2, 0.1]])
    na, nb = rank_neighbours(a, 2), rank_neighbours(b, 2)
    assert na[1].tolist() == [2, 3]
    assert n2o.overlap_counts(na, nb, 2).tolist() == [1, 2]
    assert n2o.nearest_neighbour_overlap(na, nb, 2) == 0.75
    assert n2o.nearest_neighbour_overlap(na, nb, 1) == 0.0  # nearest: 0 vs 1, then 2 vs 3


def test_slots_without_a_neighbour_never_overlap():
    a = np.array([[0, -1, -1]])
    b = np.array([[0, -1, -1]])
    assert n2o.nearest_neighbour_overlap(a, b, 3) == pytest.approx(1 / 3)


# --------------------------------------------------------------------------- a dataset


def test_n2o_rows_cover_every_pair_k_and_fold():
    documents, splits, matrices = synthetic_dataset()
    corpus = prepare_variant(documents, splits, matrices)
    rows = n2o.n2o_rows(corpus, "toy", "original", ks=[3, 5], queries=None, seed=0)
    assert len(rows) == 14 * 15 // 2 * 2 * 2
    for row in rows:
        assert 0.0 <= row["n2o"] <= 1.0
        if row["method_a"] == row["method_b"]:
            assert row["n2o"] == 1.0
    order = [m.name for m in METHODS]
    assert all(order.index(r["method_a"]) <= order.index(r["method_b"]) for r in rows)
    # the document without words is a test document of fold 0: skipped and counted
    empty = empty_document(splits)
    for row in rows:
        test = corpus.folds[row["fold"]][1]
        skipped = int(empty in test)
        assert (row["queries"], row["empty_queries"]) == (len(test) - skipped, skipped)
    assert any(r["empty_queries"] for r in rows)


def test_query_sample_is_seeded_and_sized():
    test = np.arange(40)
    a = n2o.sample_queries(test, 10, seed=3, fold=0)
    assert len(a) == 10 and len(set(a.tolist())) == 10
    assert np.array_equal(a, n2o.sample_queries(test, 10, seed=3, fold=0))
    assert not np.array_equal(a, n2o.sample_queries(test, 10, seed=3, fold=1))
    assert np.array_equal(n2o.sample_queries(test, None, 0, 0), test)


def test_rank_robustness_of_identical_rankings_is_one():
    pairs = {
        (a, b): float(i)
        for i, (a, b) in enumerate(itertools.combinations(["A", "B", "C", "D", "E"], 2))
    }
    scaled = {p: v * 0.5 + 0.1 for p, v in pairs.items()}
    rows = n2o.rank_robustness({5: pairs, 10: scaled, 19: {p: -v for p, v in pairs.items()}})
    assert [(r["k_a"], r["k_b"]) for r in rows] == [(5, 10), (5, 19), (10, 19)]
    assert rows[0]["spearman_rho"] == pytest.approx(1.0)
    assert rows[1]["spearman_rho"] == pytest.approx(-1.0)
    assert rows[0]["pairs"] == 10


def test_n2o_table_and_report_write_files_deterministically(tmp_path):
    documents, splits, matrices = synthetic_dataset()
    docs, spl, wmd_paths = write_dataset(tmp_path, documents, splits, matrices)
    out = tmp_path / "n2o.parquet"
    table = analyses.run_analyses(
        docs,
        spl,
        wmd_paths,
        "toy",
        "original",
        {"n2o": {"ks": [2, 4, 6], "queries": 5}},
        {"n2o": out},
        seed=1,
    )["n2o"]
    assert io.read_table(out, n2o.N2O).num_rows == table.num_rows == 105 * 3 * 2
    assert set(table.column("queries").to_pylist()) <= {4, 5}
    png = tmp_path / "fig" / "n2o.png"
    csv_path, md_path = tmp_path / "rob.csv", tmp_path / "rob.md"
    n2o.run_n2o_report([out], png, csv_path, md_path)
    first = png.read_bytes()
    n2o.run_n2o_report([out], png, csv_path, md_path)
    assert png.read_bytes() == first and not png.with_suffix(".svg").exists()
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "dataset,variant,k_a,k_b,spearman_rho,pairs"
    assert len(lines) == 1 + 3
    assert "| toy | original | 2 | 4 |" in md_path.read_text()


def test_n2o_matrix_is_symmetric_in_table_order():
    pairs = {("WMD", "BOW (L1/L1)"): 0.3, ("BOW (L1/L1)", "BOW (L1/L1)"): 1.0, ("WMD", "WMD"): 1.0}
    names, matrix = n2o.n2o_matrix(pairs)
    assert names == ["BOW (L1/L1)", "WMD"]
    np.testing.assert_array_equal(matrix, [[1.0, 0.3], [0.3, 1.0]])
