import logging
import math
import re

import numpy as np
import ot
import pyarrow as pa
import pytest
from scipy.spatial.distance import cdist

from wmdeval.core import io, methods, schemas
from wmdeval.distances import baselines
from wmdeval.distances.wmd import blocks, compiled, pairs, solver


def documents(bags: list[dict[str, float]]) -> pa.Table:
    """DOCUMENTS table of bags of words, doc_id = position."""
    words = [sorted(bag) for bag in bags]
    return pa.table(
        {
            "doc_id": np.arange(len(bags), dtype=np.int32),
            "label": ["x"] * len(bags),
            "y": np.zeros(len(bags), dtype=np.int32),
            "words": words,
            "counts": [[float(bag[w]) for w in ws] for bag, ws in zip(bags, words, strict=True)],
        },
        schema=schemas.DOCUMENTS,
    )


def embeddings(vectors: dict[str, list[float]]) -> pa.Table:
    words = sorted(vectors)
    dim = len(vectors[words[0]])
    flat = np.array([vectors[w] for w in words], dtype=np.float32).ravel()
    return pa.table(
        {
            "word": words,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat), dim),
            "norm": np.ones(len(words), dtype=np.float32),
        },
        schema=schemas.embeddings_schema(dim),
    )


def random_corpus(
    seed: int, n_docs: int, n_words: int = 30, dim: int = 6, max_len: int = 12
) -> tuple[pa.Table, pa.Table]:
    """Documents over a small vocabulary (so they share words), unit vectors."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{k:02d}" for k in range(n_words)]
    vectors = rng.standard_normal((n_words, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    bags = []
    for _ in range(n_docs):
        chosen = rng.choice(vocab, int(rng.integers(1, max_len + 1)), replace=False)
        bags.append({w: int(rng.integers(1, 5)) for w in chosen})
    return documents(bags), embeddings(dict(zip(vocab, vectors.tolist(), strict=True)))


def awkward_corpus() -> tuple[pa.Table, pa.Table]:
    """Random documents plus an empty one, a duplicate and one-word documents."""
    docs, emb = random_corpus(1, 26)
    rows = docs.to_pylist()
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in rows]
    bags[4] = {}
    bags[9] = dict(bags[2])
    bags[13] = {"w03": 2}
    bags[20] = {"w03": 1}
    return documents(bags), emb


def block_tables(inputs: solver.WmdInputs, n_blocks: int, threads: int = 1) -> list[pa.Table]:
    return [solver.solve_block(inputs, s, n_blocks, threads) for s in range(n_blocks)]


def upper_pairs(table: pa.Table) -> dict[tuple[int, int], float]:
    return {(r["i"], r["j"]): r["distance"] for r in table.to_pylist()}


# --- hand-computed distances -------------------------------------------------------------


def test_one_word_documents_are_the_distance_between_their_vectors():
    emb = embeddings({"a": [0.0, 0.0], "b": [3.0, 4.0]})
    inputs = solver.prepare(documents([{"a": 2}, {"b": 7}]), emb, "bow")
    assert solver.wmd_pair(inputs, 0, 1) == 5.0
    matrix = blocks.gather(2, block_tables(inputs, 1))
    np.testing.assert_array_equal(matrix, np.array([[0, 5], [5, 0]], dtype=np.float32))


def test_two_words_against_two_words_by_hand():
    # Points on a line: a=0, b=10 with mass 1/2 each; c=1 (1/4), d=9 (3/4).
    # Optimal: a->c 1/4 (cost 1), a->d 1/4 (cost 9), b->d 1/2 (cost 1) = 3.
    emb = embeddings({"a": [0, 0], "b": [10, 0], "c": [1, 0], "d": [9, 0]})
    inputs = solver.prepare(documents([{"a": 1, "b": 1}, {"c": 1, "d": 3}]), emb, "bow")
    assert solver.wmd_pair(inputs, 0, 1) == pytest.approx(3.0, abs=1e-12)
    assert solver.wmd_pair(inputs, 1, 0) == pytest.approx(3.0, abs=1e-12)
    plan, cost, words_i, words_j = solver.transport(inputs, 0, 1)
    np.testing.assert_allclose(plan, [[0.25, 0.25], [0.0, 0.5]], atol=1e-15)
    np.testing.assert_array_equal(cost, [[1, 9], [9, 1]])
    assert list(words_i) == ["a", "b"] and list(words_j) == ["c", "d"]


def test_matches_a_plain_emd2_loop():
    docs, emb = random_corpus(0, 20)
    inputs = solver.prepare(docs, emb, "bow")
    (table,) = block_tables(inputs, 1)
    got = upper_pairs(table)
    vectors = {r["word"]: np.array(r["vector"], dtype=np.float64) for r in emb.to_pylist()}
    rows = docs.to_pylist()
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            a = np.array(rows[i]["counts"]) / sum(rows[i]["counts"])
            b = np.array(rows[j]["counts"]) / sum(rows[j]["counts"])
            cost = cdist(
                [vectors[w] for w in rows[i]["words"]], [vectors[w] for w in rows[j]["words"]]
            )
            expected = ot.emd2(a, b, cost)
            assert got[i, j] == pytest.approx(expected, abs=1e-9)
            assert solver.wmd_pair(inputs, i, j) == pytest.approx(expected, abs=1e-9)


def test_residual_problem_by_hand():
    # a: x 0.5, y 0.5; b: y 0.25, z 0.75. y keeps 0.25 in place; x 0.5 and y 0.25 must
    # reach z, which takes 0.75.
    a, b = np.array([0.5, 0.5]), np.array([0.25, 0.75])
    left_a, left_b, keep_a, keep_b = solver.residual_problem(a, b, np.array([1]), np.array([0]))
    assert left_a.tolist() == [0.5, 0.25] and keep_a.tolist() == [0, 1]
    assert left_b.tolist() == [0.75] and keep_b.tolist() == [1]
    # identical marginals leave nothing, exactly
    same = np.array([0.1, 0.2, 0.7])
    left_a, left_b, _, _ = solver.residual_problem(same, same.copy(), np.arange(3), np.arange(3))
    assert len(left_a) == len(left_b) == 0
    # on a line: x = 0, y = 1, z = 3: x -> z costs 0.5 * 3, y -> z 0.25 * 2
    docs = documents([{"x": 1, "y": 1}, {"y": 1, "z": 3}])
    emb = embeddings({"x": [0.0], "y": [1.0], "z": [3.0]})
    inputs = solver.prepare(docs, emb, "bow")
    assert solver.wmd_pair(inputs, 0, 1) == pytest.approx(1.5 + 0.5, abs=1e-15)
    (table,) = block_tables(inputs, 1)
    assert upper_pairs(table)[0, 1] == solver.wmd_pair(inputs, 0, 1)


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_mass_reduction_gives_emd2_of_the_full_problem(weighting, seed):
    # a small vocabulary: most pairs share several words, some share all of them
    docs, emb = random_corpus(seed, 30, n_words=14, dim=5, max_len=10)
    rows = docs.to_pylist()
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in rows]
    bags[7] = dict(bags[3])  # a duplicate
    bags[8] = {w: 2 * c for w, c in bags[3].items()}  # the same marginals, other counts
    docs = documents(bags)
    inputs = solver.prepare(docs, emb, weighting)
    (table,) = block_tables(inputs, 1)
    got = upper_pairs(table)
    shared = 0
    for i in range(inputs.n):
        for j in range(i + 1, inputs.n):
            a, b = inputs.weights[i], inputs.weights[j]
            if not len(a) or not len(b):
                continue
            cost = solver.cost_matrix(inputs, inputs.indices[i], inputs.indices[j])
            expected = ot.emd2(a, b, cost, numItermax=10**7)
            pair = solver.wmd_pair(inputs, i, j)
            assert got[i, j] == pair  # both modes' solver, bit for bit
            assert abs(pair - expected) <= 1e-12 * expected
            shared += bool(np.intersect1d(inputs.indices[i], inputs.indices[j]).size)
    assert got[3, 7] == got[3, 8] == got[7, 8] == 0.0
    assert shared > 100  # the reduction had work to do


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
def test_compiled_solve_steps_are_the_numpy_ones(weighting):
    # solve_pair's compiled steps against what they replace: np.intersect1d and
    # residual_problem for the shared mass (bit for bit: any bit apart would change every
    # stored distance), word_costs' expansion and a same-word mask for the costs (within
    # float64 rounding: the kernel sums each cost over the dimensions in its own order)
    docs, emb = random_corpus(5, 40, n_words=16, dim=7, max_len=12)
    inputs = solver.prepare(docs, emb, weighting)
    shared = 0
    for i in range(inputs.n):
        for j in range(inputs.n):
            rows_i, rows_j = inputs.indices[i], inputs.indices[j]
            a, b = inputs.weights[i], inputs.weights[j]
            products = inputs.vectors[rows_i] @ inputs.vectors[rows_j].T
            want = solver.word_costs(
                inputs.ground_cost, products, inputs.sq_norms[rows_i], inputs.sq_norms[rows_j]
            )
            want[rows_i[:, None] == rows_j[None, :]] = 0.0
            got = solver.cost_matrix(inputs, rows_i, rows_j)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
            _, shared_a, shared_b = np.intersect1d(
                rows_i, rows_j, assume_unique=True, return_indices=True
            )
            shared += len(shared_a)
            want = solver.residual_problem(a, b, shared_a, shared_b)
            got = compiled._residual(rows_i, rows_j, a, b)
            for x, y in zip(got, want, strict=True):
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
            # both steps in one call: the same bits as each alone
            metric = weighting != "wrd"
            *left, cost = compiled._pair_problem(
                inputs.vectors, rows_i, rows_j, a, b, metric, not metric
            )
            if metric:
                for x, y in zip(left, got, strict=True):
                    assert x.tobytes() == y.tobytes()
            keep_a, keep_b = left[2], left[3]
            alone = solver.cost_matrix(inputs, rows_i[keep_a], rows_j[keep_b])
            assert cost.tobytes() == alone.tobytes()
    assert shared > 1000  # most pairs share words


@pytest.mark.parametrize("seed", range(20))
def test_residual_problem_of_identical_supports_without_twin(seed):
    # equal supports, weights that differ on some words only: 0 where equal, and the
    # residual's optimum is the full problem's (relative 1e-12)
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 12))
    x = rng.standard_normal((m, 4))
    cost = cdist(x, x)
    a = rng.integers(1, 5, m).astype(float)
    b = a.copy()
    b[rng.choice(m, max(1, m // 3), replace=False)] += rng.integers(1, 4)
    a, b = a / a.sum(), b / b.sum()
    left_a, left_b, keep_a, keep_b = solver.residual_problem(a, b, np.arange(m), np.arange(m))
    assert not np.intersect1d(keep_a, keep_b).size  # disjoint supports
    assert left_a.sum() == pytest.approx(left_b.sum(), abs=1e-15)
    reduced = ot.emd2(left_a, left_b, cost[np.ix_(keep_a, keep_b)])
    assert reduced == pytest.approx(ot.emd2(a, b, cost), rel=1e-12)
    left_a, left_b, _, _ = solver.residual_problem(a, a.copy(), np.arange(m), np.arange(m))
    assert len(left_a) == len(left_b) == 0


@pytest.mark.parametrize(("scale", "tolerance"), [(1.0, 1e-12), (math.sqrt(2), 1e-7)])
def test_proposition_1_one_hot_embeddings_give_bow_l1_l1(scale, tolerance):
    # Cost between distinct words = scale * sqrt(2); for scale sqrt(2) (the paper's 2)
    # the float32 rounding of sqrt(2) in the embedding table limits the agreement.
    rng = np.random.default_rng(3)
    vocab = [f"v{k}" for k in range(12)]
    emb = embeddings({w: (scale * np.eye(12)[k]).tolist() for k, w in enumerate(vocab)})
    bags = [
        {
            w: int(rng.integers(1, 6))
            for w in rng.choice(vocab, int(rng.integers(1, 9)), replace=False)
        }
        for _ in range(15)
    ]
    docs = documents(bags)
    inputs = solver.prepare(docs, emb, "bow")
    got = np.zeros((15, 15))
    for table in block_tables(inputs, 2):
        for (i, j), d in upper_pairs(table).items():
            got[i, j] = got[j, i] = d
    counts, _ = baselines.count_matrix(docs)
    everything = np.arange(15)
    l1 = baselines.baseline_distances(
        counts, methods.BY_SLUG["bow-l1-l1"], everything, everything, everything
    )
    cost = np.float64(np.float32(scale)) * math.sqrt(2)
    np.testing.assert_allclose(got, l1 * cost / 2, rtol=tolerance, atol=1e-12)


# --- weighting ----------------------------------------------------------------------------


def test_bow_weights_are_l1_normalised_counts():
    emb = embeddings({"a": [1, 0], "b": [0, 1], "c": [1, 1]})
    inputs = solver.prepare(documents([{"a": 1, "c": 3}, {}, {"b": 2}]), emb, "bow")
    assert list(inputs.words[inputs.indices[0]]) == ["a", "c"]
    np.testing.assert_array_equal(inputs.weights[0], [0.25, 0.75])
    assert len(inputs.weights[1]) == 0
    np.testing.assert_array_equal(inputs.weights[2], [1.0])
    assert inputs.indices[0].dtype == np.int32 and inputs.weights[0].dtype == np.float64


def test_tfidf_weights_by_hand():
    emb = embeddings({w: [k, 1.0] for k, w in enumerate("abcd")})
    bags = [{"a": 2, "b": 1, "c": 1}, {"a": 1, "b": 3}, {"c": 2, "d": 1}, {"a": 1, "d": 1}]
    inputs = solver.prepare(documents(bags), emb, "tfidf")
    # N = 4; df: a 3, b 2, c 2, d 2
    idf = {"a": math.log(4 / 3), "b": math.log(2), "c": math.log(2), "d": math.log(2)}
    for k, bag in enumerate(bags):
        words = sorted(bag)
        mass = np.array([bag[w] * idf[w] for w in words])
        assert list(inputs.words[inputs.indices[k]]) == words
        np.testing.assert_allclose(inputs.weights[k], mass / mass.sum(), rtol=1e-15)
    a = inputs.weights[0]
    b = inputs.weights[2]
    cost = cdist(np.array([[0, 1], [1, 1], [2, 1]]), np.array([[2, 1], [3, 1]]))
    assert solver.wmd_pair(inputs, 0, 2) == pytest.approx(ot.emd2(a, b, cost), abs=1e-12)


def test_tfidf_without_mass_is_empty_and_idf_zero_words_are_dropped():
    emb = embeddings({"a": [0, 1], "b": [1, 0]})
    inputs = solver.prepare(documents([{"a": 1, "b": 1}, {"a": 2}, {"a": 1, "b": 2}]), emb, "tfidf")
    # "a" is in every document: idf 0, so document 1 has no mass.
    assert inputs.empty.tolist() == [False, True, False]
    assert list(inputs.words[inputs.indices[0]]) == ["b"]
    np.testing.assert_array_equal(inputs.weights[0], [1.0])
    matrix = blocks.gather(3, block_tables(inputs, 2))
    assert np.isnan(matrix[1]).all() and np.isnan(matrix[:, 1]).all()
    assert matrix[0, 2] == 0.0  # both are all "b" now
    assert not solver.prepare(documents([{"a": 1, "b": 1}, {"a": 2}]), emb, "bow").empty.any()


def test_a_word_without_embedding_is_named():
    emb = embeddings({"a": [0, 1]})
    with pytest.raises(io.WmdevalError, match="'zebra'"):
        solver.prepare(documents([{"a": 1}, {"a": 1, "zebra": 2}]), emb, "bow")


# --- matrices -----------------------------------------------------------------------------


def test_gathered_matrix_is_symmetric_with_zero_diagonal():
    docs, emb = random_corpus(2, 18)
    matrix = blocks.gather(18, block_tables(solver.prepare(docs, emb, "bow"), 4))
    assert matrix.dtype == np.float64 and matrix.shape == (18, 18)
    np.testing.assert_array_equal(matrix, matrix.T)
    np.testing.assert_array_equal(np.diagonal(matrix), 0.0)
    assert (matrix[~np.eye(18, dtype=bool)] > 0).all()


def test_empty_documents_give_nan_rows_and_columns():
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, "bow")
    matrix = blocks.gather(inputs.n, block_tables(inputs, 3))
    assert np.isnan(matrix[4]).all() and np.isnan(matrix[:, 4]).all()
    others = np.delete(np.delete(matrix, 4, axis=0), 4, axis=1)
    assert not np.isnan(others).any()
    assert matrix[2, 9] == 0.0  # duplicates
    assert matrix[13, 20] == 0.0  # same single word, different counts
    assert math.isnan(solver.wmd_pair(inputs, 4, 5))


def test_one_word_shortcut_is_the_weighted_sum_of_costs():
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, "bow")
    for j in (0, 1, 2, 25):
        cost = solver.cost_matrix(inputs, inputs.indices[13], inputs.indices[j])
        expected = ot.emd2(inputs.weights[13], inputs.weights[j], cost)
        assert solver.wmd_pair(inputs, 13, j) == pytest.approx(expected, abs=1e-12)
        assert solver.wmd_pair(inputs, j, 13) == pytest.approx(expected, abs=1e-12)


def test_block_layout_does_not_change_a_bit(tmp_path):
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, "bow")
    matrices = [blocks.gather(inputs.n, block_tables(inputs, k)) for k in (1, 3, 37)]
    assert matrices[0].tobytes() == matrices[1].tobytes() == matrices[2].tobytes()

    io.write_table(docs, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(emb, tmp_path / "embeddings.parquet")
    written = []
    for n_blocks in (1, 3, 37):
        paths = [tmp_path / f"{n_blocks}" / f"block{s}.parquet" for s in range(n_blocks)]
        for s, path in enumerate(paths):
            blocks.run_block(
                tmp_path / "documents.parquet",
                tmp_path / "embeddings.parquet",
                "bow",
                s,
                n_blocks,
                1,
                path,
            )
        out = tmp_path / f"wmd-{n_blocks}.parquet"
        blocks.run_gather(tmp_path / "documents.parquet", paths, out, "WMD")
        written.append(out.read_bytes())
    assert written[0] == written[1] == written[2]
    doc_ids, matrix = io.read_distances(tmp_path / "wmd-3.parquet")
    assert matrix.tobytes() == matrices[0].tobytes()
    assert doc_ids.tolist() == list(range(inputs.n))


def test_stored_units_gather_to_the_same_bytes_for_any_count_and_match_emd2(tmp_path):
    """Through the CLI, as the workflow calls it: 1, 2, 5 and 16 units per matrix give
    byte-identical matrix files, and every entry is a plain ot.emd2 solve."""
    from wmdeval.cli import main

    docs, emb = random_corpus(7, 23)
    documents_path, embeddings_path = tmp_path / "documents.parquet", tmp_path / "emb.parquet"
    io.write_table(docs, documents_path, schemas.DOCUMENTS)
    io.write_table(emb, embeddings_path)
    written = {}
    for n_blocks in (1, 2, 5, 16):
        paths = [
            str(tmp_path / f"{n_blocks}" / f"{k}-of-{n_blocks}.parquet")
            for k in range(1, n_blocks + 1)
        ]
        for k, path in enumerate(paths, 1):
            assert (
                main(
                    [
                        "wmd-block",
                        "--documents",
                        str(documents_path),
                        "--embeddings",
                        str(embeddings_path),
                        "--weighting",
                        "bow",
                        "--block",
                        f"{k}-of-{n_blocks}",
                        "--threads",
                        "1",
                        "--out",
                        path,
                    ]
                )
                == 0
            )
        out = tmp_path / f"wmd-{n_blocks}.parquet"
        assert (
            main(
                [
                    "wmd-gather",
                    "--documents",
                    str(documents_path),
                    "--blocks",
                    *paths,
                    "--method",
                    "WMD",
                    "--out",
                    str(out),
                ]
            )
            == 0
        )
        written[n_blocks] = out.read_bytes()
    assert len(set(written.values())) == 1

    _, matrix = io.read_distances(tmp_path / "wmd-5.parquet")
    vectors = {r["word"]: np.array(r["vector"], dtype=np.float64) for r in emb.to_pylist()}
    rows = docs.to_pylist()
    expected = np.zeros((len(rows), len(rows)))
    for i, row_i in enumerate(rows):
        for j, row_j in enumerate(rows):
            a = np.array(row_i["counts"]) / sum(row_i["counts"])
            b = np.array(row_j["counts"]) / sum(row_j["counts"])
            cost = cdist([vectors[w] for w in row_i["words"]], [vectors[w] for w in row_j["words"]])
            expected[i, j] = 0.0 if i == j else ot.emd2(a, b, cost)
    np.testing.assert_allclose(matrix, expected.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_thread_count_does_not_change_a_bit():
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, "tfidf")
    one = block_tables(inputs, 2, threads=1)
    for threads in (2, 4):
        for a, b in zip(one, block_tables(inputs, 2, threads=threads), strict=True):
            for name in ("i", "j", "distance"):  # bytes: Arrow's equals() says NaN != NaN
                assert a.column(name).to_numpy().tobytes() == b.column(name).to_numpy().tobytes()


def test_gather_refuses_missing_or_repeated_pairs():
    docs, emb = random_corpus(4, 10)
    tables = block_tables(solver.prepare(docs, emb, "bow"), 3)
    with pytest.raises(io.WmdevalError, match="missing"):
        blocks.gather(10, tables[:2])
    with pytest.raises(io.WmdevalError, match="duplicated"):
        blocks.gather(10, tables + tables[1:2])
    swapped = pa.concat_tables(tables)
    repeated = swapped.slice(0, 1)
    broken = pa.concat_tables([swapped.slice(0, swapped.num_rows - 1), repeated])
    with pytest.raises(io.WmdevalError, match="missing"):
        blocks.gather(10, [broken])


def test_submatrix_and_run_subset(tmp_path):
    matrix = np.arange(25, dtype=np.float32).reshape(5, 5)
    doc_ids = np.array([2, 3, 5, 8, 9], dtype=np.int32)
    io.write_distances(matrix, doc_ids, tmp_path / "full.parquet", metadata={"method": "WMD"})
    np.testing.assert_array_equal(
        io.read_distances(tmp_path / "full.parquet", np.array([3, 8]))[1], [[6, 8], [16, 18]]
    )
    with pytest.raises(io.WmdevalError, match="doc_id 4"):
        io.read_distances(tmp_path / "full.parquet", np.array([3, 4]))

    kept = documents([{"a": 1}] * 5).filter(pa.array([False, True, False, True, True]))
    kept = kept.set_column(0, "doc_id", pa.array([3, 8, 9], pa.int32()))
    io.write_table(kept, tmp_path / "clean.parquet", schemas.DOCUMENTS)
    blocks.run_subset(
        tmp_path / "full.parquet", tmp_path / "clean.parquet", tmp_path / "sub.parquet"
    )
    ids, sub = io.read_distances(tmp_path / "sub.parquet")
    assert ids.tolist() == [3, 8, 9]
    np.testing.assert_array_equal(sub, matrix[np.ix_([1, 3, 4], [1, 3, 4])])


# --- blocks -------------------------------------------------------------------------------


def test_plan_covers_every_pair_once_in_order():
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, "bow")
    total = inputs.n * (inputs.n - 1) // 2
    for n_blocks in (1, 2, 7, 37, total + 5):
        plan = pairs.plan_blocks(inputs.sizes, n_blocks)
        assert len(plan) == n_blocks and plan[0][0] == 0 and plan[-1][1] == total
        assert all(plan[k][1] == plan[k + 1][0] for k in range(n_blocks - 1))
        assert all(start <= stop for start, stop in plan)
        assert plan == pairs.plan_blocks(inputs.sizes, n_blocks)
    assert pairs.plan_blocks(solver.prepare(documents([{}]), emb, "bow").sizes, 3) == [(0, 0)] * 3


def test_blocks_enumerate_pairs_row_major():
    docs, emb = random_corpus(5, 9)
    inputs = solver.prepare(docs, emb, "bow")
    tables = block_tables(inputs, 4)
    solved = [(r["i"], r["j"]) for t in tables for r in t.to_pylist()]
    assert solved == [(i, j) for i in range(9) for j in range(i + 1, 9)]
    assert tables[0].schema.equals(schemas.WMD_BLOCK)


def test_plan_balances_estimated_work_not_pairs():
    # One long document among short ones: its pairs are far more work.
    rng = np.random.default_rng(6)
    vocab = [f"w{k:03d}" for k in range(300)]
    emb = embeddings({w: rng.standard_normal(4).tolist() for w in vocab})
    bags = [
        {w: 1 for w in rng.choice(vocab, 200 if k == 0 else 5, replace=False)} for k in range(40)
    ]
    inputs = solver.prepare(documents(bags), emb, "bow")
    plan = pairs.plan_blocks(inputs.sizes, 4)
    sizes = inputs.sizes
    starts = pairs.row_starts(inputs.n)
    i = np.searchsorted(starts, np.arange(starts[-1]), side="right") - 1
    j = np.arange(starts[-1]) - starts[i] + i + 1
    work = (sizes[i] * sizes[j]) ** pairs.WORK_EXPONENT + pairs.PAIR_OVERHEAD
    per_block = np.array([work[a:b].sum() for a, b in plan])
    assert per_block.max() / per_block.min() < 1.1
    assert plan[0][1] - plan[0][0] < len(work) / 4 / 3  # far fewer pairs than a quarter


def test_work_model_by_hand():
    # 1, 2, 3 and 0 distinct words: documents of fewer than two words cost only the overhead
    s = pairs.document_work(np.array([1, 2, 3, 0]))
    e, overhead = pairs.WORK_EXPONENT, pairs.PAIR_OVERHEAD
    assert s.tolist() == pytest.approx([0.0, 2**e, 3**e, 0.0], rel=1e-15)
    by_row = [3 * overhead, (2 * 3) ** e + 2 * overhead, overhead, 0.0]
    assert pairs.row_work(s).tolist() == pytest.approx(by_row, rel=1e-15)
    # only the first two rows have pairs (a one-fold dataset's training documents)
    assert pairs.row_work(s, n_rows=2).tolist() == pytest.approx(by_row[:2] + [0, 0], rel=1e-15)


def test_plan_boundaries_follow_the_cumulative_work_of_the_pairs():
    # A plain loop over the pairs in rank order: block k ends at the last pair whose
    # cumulative work stays within k/n_blocks of the total.
    sizes = np.random.default_rng(11).integers(0, 60, 50)
    e, overhead = pairs.WORK_EXPONENT, pairs.PAIR_OVERHEAD
    factor = [float(u) ** e if u >= 2 else 0.0 for u in sizes]
    for n_rows in (None, 30):
        work = [
            factor[i] * factor[j] + overhead for i in range(n_rows or 50) for j in range(i + 1, 50)
        ]
        cumulative = np.cumsum(work)
        for n_blocks in (2, 5, 13):
            plan = pairs.plan_blocks(sizes, n_blocks, n_rows)
            targets = cumulative[-1] * np.arange(1, n_blocks) / n_blocks
            ends = [int(np.sum(cumulative <= target)) for target in targets]
            assert [stop for _, stop in plan[:-1]] == ends
            assert plan[-1][1] == len(work)


def test_row_segments_cut_a_rank_range_into_rows():
    # 5 documents: ranks 0-3 are row 0 (j = 1..4), 4-6 row 1, 7-8 row 2, 9 row 3
    assert pairs.row_segments(5, 2, 8) == [(0, 3, 5, 0), (1, 2, 5, 2), (2, 3, 4, 5)]
    assert pairs.row_segments(5, 9, 10) == [(3, 4, 5, 0)]
    assert pairs.row_segments(5, 4, 4) == []
    # with 2 rows of pairs there are 4 + 3 ranks
    assert pairs.row_starts(5, n_rows=2).tolist() == [0, 4, 7, 7, 7, 7]
    assert pairs.row_segments(5, 3, 7, n_rows=2) == [(0, 4, 5, 0), (1, 2, 5, 1)]


def block_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("block 1/2:")]


def test_progress_reports_the_end(caplog, monkeypatch):
    # the default interval: no line is due in so short a block, but the last is written
    monkeypatch.delenv("WMDEVAL_PROGRESS_SECONDS", raising=False)
    caplog.set_level(logging.INFO, logger="wmdeval.distances.wmd")
    docs, emb = random_corpus(7, 8)
    solver.solve_block(solver.prepare(docs, emb, "bow"), 0, 2, report="block 1/2")
    total = pairs.plan_blocks(solver.prepare(docs, emb, "bow").sizes, 2)[0][1]
    assert len(block_lines(caplog)) == 1
    assert block_lines(caplog)[0].startswith(f"block 1/2: {total}/{total} pairs (100.0%) done in")


def test_solver_failure_is_an_error(monkeypatch):
    docs, emb = random_corpus(8, 3, max_len=12)
    inputs = solver.prepare(docs, emb, "bow")
    monkeypatch.setattr(solver, "MAX_ITER", 1)
    big = [k for k in range(3) if len(inputs.indices[k]) > 3]
    with pytest.raises(io.WmdevalError, match="optimality"):
        solver.wmd_pair(inputs, big[0], big[1])


def test_progress_is_reported_while_solving(caplog, monkeypatch):
    # interval 0: a line for every row of pairs done, from both threads, counts rising
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="wmdeval.distances.wmd")
    docs, emb = random_corpus(9, 40, max_len=25)
    solver.solve_block(solver.prepare(docs, emb, "bow"), 0, 1, threads=2, report="block 1/2")
    lines = block_lines(caplog)
    done = [int(re.match(r"block 1/2: (\d+)/780 pairs", line)[1]) for line in lines]
    assert len(lines) == 39  # one per row of the 40 documents' triangle
    assert done == sorted(done) and done[-1] == 780
    assert all(line.endswith(" left") for line in lines[:-1])
    assert "(100.0%) done in" in lines[-1]


def test_solver_failure_in_a_worker_thread_is_raised(monkeypatch):
    docs, emb = random_corpus(10, 12)
    inputs = solver.prepare(docs, emb, "bow")
    monkeypatch.setattr(solver, "MAX_ITER", 1)
    with pytest.raises(io.WmdevalError, match="optimality"):
        solver.solve_block(inputs, 0, 1, threads=2)


def one_fold_splits(doc_ids, test_ids) -> pa.Table:
    from wmdeval.ingest.corpora import splits_table

    subsets = ["test" if d in test_ids else "train" for d in doc_ids]
    return splits_table([0] * len(doc_ids), list(doc_ids), subsets)


def test_one_fold_skips_exactly_the_test_by_test_pairs(tmp_path):
    docs, emb = awkward_corpus()
    n = docs.num_rows
    test_ids = {1, 4, 5, 11, 17, 18, 25}  # interleaved with training documents, one empty
    io.write_table(docs, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(emb, tmp_path / "embeddings.parquet")
    io.write_table(one_fold_splits(range(n), test_ids), tmp_path / "splits.parquet", schemas.SPLITS)
    full = blocks.gather(n, block_tables(solver.prepare(docs, emb, "bow"), 1))
    outputs = []
    for n_blocks in (1, 4, 9):
        paths = [tmp_path / f"{n_blocks}-{k}.parquet" for k in range(n_blocks)]
        for k, path in enumerate(paths):
            blocks.run_block(
                tmp_path / "documents.parquet",
                tmp_path / "embeddings.parquet",
                "bow",
                k,
                n_blocks,
                1,
                path,
                splits_path=tmp_path / "splits.parquet",
            )
        solved = sum(io.read_table(p).num_rows for p in paths)
        assert solved == n * (n - 1) // 2 - len(test_ids) * (len(test_ids) - 1) // 2
        out = tmp_path / f"wmd-{n_blocks}.parquet"
        blocks.run_gather(
            tmp_path / "documents.parquet",
            paths,
            out,
            "WMD",
            splits_path=tmp_path / "splits.parquet",
        )
        outputs.append(out.read_bytes())
        _, matrix = io.read_distances(out)
        test = np.isin(np.arange(n), sorted(test_ids))
        off_diagonal = ~np.eye(n, dtype=bool)
        # every pair kNN reads is the full matrix's value; test x test is not solved
        needed = ~(test[:, None] & test[None, :])
        np.testing.assert_array_equal(matrix[needed], full[needed])
        assert np.isnan(matrix[test[:, None] & test[None, :] & off_diagonal]).all()
        # the empty test document (4) still has an all-NaN row; other test rows are finite
        assert np.isnan(matrix[4]).all()
        assert np.isfinite(matrix[11][~test]).all() and matrix[11, 11] == 0
    assert outputs[0] == outputs[1] == outputs[2]


def test_five_fold_splits_keep_every_pair():
    docs, _ = random_corpus(3, 10)
    ids = docs.column("doc_id").to_numpy()
    from wmdeval.ingest.corpora import random_splits

    order, n_rows = pairs.solve_order(ids, random_splits(10, 5, 0.3, 0))
    assert n_rows == 10 and np.array_equal(order, np.arange(10))
    order, n_rows = pairs.solve_order(ids, one_fold_splits(ids, {0, 3}))
    assert n_rows == 8 and order[:8].tolist() == [1, 2, 4, 5, 6, 7, 8, 9]


def plain_costs(vectors, words_a, words_b, cosine):
    """The ground costs by a plain float64 loop, one word pair and one dimension at a time."""
    out = np.empty((len(words_a), len(words_b)))
    for i, a in enumerate(words_a):
        for j, b in enumerate(words_b):
            total = 0.0
            for x, y in zip(vectors[a].tolist(), vectors[b].tolist(), strict=True):
                total += x * y if cosine else (x - y) * (x - y)
            out[i, j] = max(1.0 - total, 0.0) if cosine else math.sqrt(total)
            if a == b:
                out[i, j] = 0.0
    return out


@pytest.mark.parametrize("cosine", [False, True])
@pytest.mark.parametrize("dim", [1, 3, 4, 7, 50, 301])
def test_pair_costs_kernel_is_a_plain_loop_and_the_expansion(cosine, dim):
    # odd and even word counts, a dimension count that leaves a remainder of the kernel's
    # passes of four, documents sharing words, and an empty side
    rng = np.random.default_rng(dim)
    vectors = rng.standard_normal((40, dim))
    if cosine:
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    sq = np.einsum("ij,ij->i", vectors, vectors)
    for n, m in ((1, 1), (3, 10), (9, 17), (12, 0), (25, 24)):
        words_a = rng.choice(40, n, replace=False).astype(np.int64)
        words_b = rng.choice(40, m, replace=False).astype(np.int64)
        got = compiled._pair_costs(vectors, words_a, words_b, cosine)
        assert got.shape == (n, m) and got.flags.c_contiguous
        plain = plain_costs(vectors, words_a, words_b, cosine)
        np.testing.assert_allclose(got, plain, rtol=1e-12, atol=1e-15)
        expansion = solver.word_costs(
            "cosine" if cosine else "euclidean",
            vectors[words_a] @ vectors[words_b].T,
            sq[words_a],
            sq[words_b],
        )
        expansion[words_a[:, None] == words_b[None, :]] = 0.0
        np.testing.assert_allclose(got, expansion, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("cosine", [False, True])
def test_pair_costs_kernel_is_exact_on_the_same_word_symmetric_and_shape_free(cosine):
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((60, 300))
    if cosine:
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[59] = vectors[58]  # two words, one vector
    words = np.arange(60, dtype=np.int64)
    every = compiled._pair_costs(vectors, words, words, cosine)
    assert (np.diagonal(every) == 0.0).all()  # exactly, not ~1e-8
    apart = ~np.eye(60, dtype=bool)
    apart[58, 59] = apart[59, 58] = False
    assert (every[apart] > 0).all()
    if not cosine:  # the same vector: no difference to sum
        assert every[58, 59] == every[59, 58] == 0.0
    # cost(a, b) == cost(b, a) bit for bit
    assert every.tobytes() == np.ascontiguousarray(every.T).tobytes()
    # an entry's bits do not depend on the matrix it is computed in: its shape, its
    # other words, its row's or column's place there (both modes rely on it)
    for _ in range(30):
        words_a = rng.choice(60, rng.integers(1, 14), replace=False).astype(np.int64)
        words_b = rng.choice(60, rng.integers(1, 30), replace=False).astype(np.int64)
        part = compiled._pair_costs(vectors, words_a, words_b, cosine)
        assert part.tobytes() == np.ascontiguousarray(every[np.ix_(words_a, words_b)]).tobytes()


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
def test_a_block_row_states_each_pair_as_wmd_pair_does(weighting, monkeypatch):
    # a solve order that is not the doc_id order (so a row's document is now the source,
    # now the target of its pairs), a duplicate, an empty document and rows cut into
    # chunks of a few pairs: every distance is wmd_pair's, bit for bit
    docs, emb = random_corpus(11, 36, n_words=18, dim=9, max_len=10)
    rows = docs.to_pylist()
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in rows]
    bags[5] = dict(bags[2])
    bags[9] = {}
    inputs = solver.prepare(documents(bags), emb, weighting)
    order = np.random.default_rng(1).permutation(inputs.n)
    ordered = solver.reorder(inputs, order)
    monkeypatch.setattr(solver, "ROW_ENTRIES", 300)  # about three pairs a chunk
    (table,) = block_tables(ordered, 1)
    got = upper_pairs(table)
    for (i, j), value in got.items():
        want = solver.wmd_pair(ordered, i, j)
        assert np.isnan(want) if np.isnan(value) else value == want, (i, j)
    assert sum(np.isnan(v) for v in got.values()) == inputs.n - 1
    twins = np.flatnonzero(np.isin(order, [2, 5]))
    assert got[tuple(twins)] == 0.0


def test_block_jobs_declare_the_memory_of_a_threads_row_of_problems():
    from wmdeval.planning import resources

    # the costs and the table they are read from, ROW_ENTRIES float64 entries each at most
    assert resources.ROW_MB * 1e6 >= 2 * 8 * solver.ROW_ENTRIES


def _pot_version() -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", ot.__version__)[:3])


def test_the_block_solve_loop_calls_pots_network_simplex_directly():
    # POT >= 0.9.6 exports EMD_wrap under the name the solver looks for, and calling it
    # so gives emd_c's results bit for bit (the check _network_simplex_address makes)
    address = solver._network_simplex_address()
    if _pot_version() >= (0, 9, 6):
        assert address != 0
    if address:
        assert solver._same_as_emd_c(address)


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_the_compiled_solve_loop_gives_emd_cs_bits(weighting, monkeypatch):
    # the awkward corpus (an empty document, twins, one-word documents) in the compiled
    # loop, a few pairs per call, against every pair through emd_c: the same bytes
    docs, emb = awkward_corpus()
    inputs = solver.prepare(docs, emb, weighting)
    monkeypatch.setattr(solver, "SOLVE_STEP", 3)
    compiled_loop = solver.solve_block(inputs, 0, 1, threads=2)
    monkeypatch.setattr(solver, "_network_simplex_address", lambda: 0)
    through_emd_c = solver.solve_block(inputs, 0, 1, threads=1)
    distances = compiled_loop.column("distance").to_numpy()
    assert distances.tobytes() == through_emd_c.column("distance").to_numpy().tobytes()
    assert compiled_loop.select(["i", "j"]).equals(through_emd_c.select(["i", "j"]))
    assert np.isnan(distances).sum() == inputs.n - 1 and (distances == 0).any()


def test_without_pots_entry_point_each_pair_goes_through_emd_c(monkeypatch):
    monkeypatch.setattr(solver, "_EMD_WRAP", "no_such_symbol")
    solver._network_simplex_address.cache_clear()
    try:
        assert solver._network_simplex_address() == 0
        docs, emb = random_corpus(3, 12)
        inputs = solver.prepare(docs, emb, "bow")
        (table,) = block_tables(inputs, 1)
        for (i, j), value in upper_pairs(table).items():
            assert value == solver.wmd_pair(inputs, i, j)
    finally:
        solver._network_simplex_address.cache_clear()


def test_a_failing_solve_in_the_compiled_loop_is_an_error(monkeypatch):
    docs, emb = random_corpus(10, 12)
    inputs = solver.prepare(docs, emb, "bow")
    monkeypatch.setattr(solver, "MAX_ITER", 1)
    with pytest.raises(io.WmdevalError, match="iteration limit"):
        solver.solve_block(inputs, 0, 1, threads=1)
