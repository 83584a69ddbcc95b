"""Word Rotator's Distance (weighting "wrd"): the solver, blocks, bounds and the knn search."""

import numpy as np
import ot
import pyarrow as pa
import pytest
from test_search import five_folds, full_matrix, knn_tables, labelled, one_fold
from test_wmd import block_tables, documents, upper_pairs

from wmdeval.classification import knn
from wmdeval.core import io, schemas
from wmdeval.core.roles import query_roles
from wmdeval.distances.factory import prepare_variant
from wmdeval.distances.wmd import blocks, bounds, search, solver


def embeddings_with_norms(
    vectors: dict[str, list[float]], norms: dict[str, float] | None = None
) -> pa.Table:
    """An embeddings table whose ``norm`` column is each vector's norm (or ``norms``)."""
    words = sorted(vectors)
    matrix = np.array([vectors[w] for w in words], dtype=np.float32)
    given = norms or {}
    norm = [given.get(w, float(np.linalg.norm(matrix[k]))) for k, w in enumerate(words)]
    return pa.table(
        {
            "word": words,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1]),
            "norm": np.array(norm, dtype=np.float32),
        },
        schema=schemas.embeddings_schema(matrix.shape[1]),
    )


def random_wrd_corpus(
    seed: int,
    n_docs: int,
    n_words: int = 30,
    dim: int = 6,
    max_len: int = 12,
    unit_vectors: bool = False,
    zero_words: int = 0,
) -> tuple[pa.Table, pa.Table]:
    """Documents over a small vocabulary, vectors of norms between 0.3 and 3. With
    ``unit_vectors`` the ``vector`` column holds the directions (as after normalisation)
    and ``norm`` the norms; ``zero_words``: that many words with a zero vector."""
    rng = np.random.default_rng(seed)
    vocab = [f"w{k:02d}" for k in range(n_words)]
    directions = rng.standard_normal((n_words, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    norms = rng.uniform(0.3, 3.0, n_words)
    vectors = directions * norms[:, None]
    vectors[:zero_words] = 0.0
    norms[:zero_words] = 0.0
    table_vectors = directions if unit_vectors else vectors
    table_vectors = np.where(norms[:, None] > 0, table_vectors, 0.0)
    bags = []
    for _ in range(n_docs):
        chosen = rng.choice(vocab, int(rng.integers(1, max_len + 1)), replace=False)
        bags.append({w: int(rng.integers(1, 5)) for w in chosen})
    emb = embeddings_with_norms(
        dict(zip(vocab, table_vectors.tolist(), strict=True)),
        dict(zip(vocab, norms.tolist(), strict=True)),
    )
    return documents(bags), emb


def plain_wrd(docs: pa.Table, emb: pa.Table, i: int, j: int) -> float:
    """WRD by the definition: loops for the cost matrix, ot.emd2 for the transport."""
    table = {r["word"]: r for r in emb.to_pylist()}
    rows = docs.to_pylist()

    def side(k: int) -> tuple[list[np.ndarray], np.ndarray]:
        directions, mass = [], []
        for word, count in zip(rows[k]["words"], rows[k]["counts"], strict=True):
            vector = np.array(table[word]["vector"], dtype=np.float64)
            length = np.linalg.norm(vector)
            if length > 0 and table[word]["norm"] > 0:
                directions.append(vector / length)
                mass.append(count * table[word]["norm"])
        mass = np.array(mass, dtype=np.float64)
        return directions, mass / mass.sum() if len(mass) else mass

    u, a = side(i)
    v, b = side(j)
    if not len(a) or not len(b):
        return float("nan")
    cost = np.zeros((len(u), len(v)))
    for p in range(len(u)):
        for q in range(len(v)):
            cost[p, q] = 1.0 - float(np.dot(u[p], v[q]))
    return float(ot.emd2(a, b, cost))


# --------------------------------------------------------------------------- hand-computed


def test_identical_documents_are_at_distance_zero():
    emb = embeddings_with_norms({"a": [1.0, 2.0], "b": [-3.0, 0.5], "c": [0.0, 4.0]})
    docs = documents([{"a": 2, "b": 1}, {"a": 2, "b": 1}, {"a": 4, "b": 2}, {"c": 1}])
    inputs = solver.prepare(docs, emb, "wrd")
    assert inputs.ground_cost == "cosine"
    assert solver.wmd_pair(inputs, 0, 1) == 0.0
    assert solver.wmd_pair(inputs, 0, 2) == 0.0  # the same marginal: counts doubled
    assert solver.wmd_pair(inputs, 0, 3) > 0.0


def test_two_one_word_documents_are_one_minus_the_cosine_of_their_vectors():
    u, v = np.array([3.0, 4.0]), np.array([-1.0, 2.0])
    emb = embeddings_with_norms({"a": u.tolist(), "b": v.tolist()})
    inputs = solver.prepare(documents([{"a": 2}, {"b": 5}]), emb, "wrd")
    expected = 1.0 - u @ v / (np.linalg.norm(u) * np.linalg.norm(v))
    assert solver.wmd_pair(inputs, 0, 1) == pytest.approx(expected, abs=1e-12)
    matrix = blocks.gather(2, block_tables(inputs, 1))
    np.testing.assert_allclose(matrix, [[0, expected], [expected, 0]], rtol=1e-6)


def test_norms_decide_the_mass():
    # a and c point the same way, b is orthogonal: a -> c costs 0, b -> c costs 1, so
    # WRD({a, b}, {c}) is the mass of b, which is its share of the norms.
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [2.0, 0.0]}
    docs = documents([{"a": 1, "b": 1}, {"c": 1}])
    equal = solver.prepare(docs, embeddings_with_norms(vectors, {"a": 1.0, "b": 1.0}), "wrd")
    assert solver.wmd_pair(equal, 0, 1) == pytest.approx(0.5, abs=1e-15)
    heavy_a = solver.prepare(docs, embeddings_with_norms(vectors, {"a": 3.0, "b": 1.0}), "wrd")
    assert solver.wmd_pair(heavy_a, 0, 1) == pytest.approx(0.25, abs=1e-15)
    np.testing.assert_allclose(heavy_a.weights[0], [0.75, 0.25])
    # counts multiply the norms: two b's of norm 1 weigh as much as one a of norm 2
    docs = documents([{"a": 1, "b": 2}, {"c": 1}])
    mixed = solver.prepare(docs, embeddings_with_norms(vectors, {"a": 2.0, "b": 1.0}), "wrd")
    assert solver.wmd_pair(mixed, 0, 1) == pytest.approx(0.5, abs=1e-15)
    # bow ignores the norms and uses Euclidean costs
    bow = solver.prepare(docs, embeddings_with_norms(vectors, {"a": 2.0, "b": 1.0}), "bow")
    assert bow.ground_cost == "euclidean"


def test_the_direction_not_the_stored_length_sets_the_cost():
    # The `vector` column may be unit-normalised already: the same WRD either way.
    raw = random_wrd_corpus(3, 15)
    unit = random_wrd_corpus(3, 15, unit_vectors=True)
    a = solver.prepare(*raw, "wrd")
    b = solver.prepare(*unit, "wrd")
    np.testing.assert_allclose(a.vectors, b.vectors, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(a.vectors, axis=1), 1.0, atol=1e-12)
    for i, j in ((0, 1), (2, 7), (5, 14)):
        assert solver.wmd_pair(a, i, j) == pytest.approx(solver.wmd_pair(b, i, j), abs=1e-6)


def test_a_word_without_direction_has_no_mass():
    vectors = {"a": [1.0, 0.0], "b": [0.0, 1.0], "z": [0.0, 0.0], "n": [1.0, 1.0]}
    emb = embeddings_with_norms(vectors, {"z": 0.0, "n": 0.0})  # n: norm 0 as read
    docs = documents([{"a": 1, "z": 5, "n": 2}, {"b": 1}, {"z": 1}, {"n": 3}])
    inputs = solver.prepare(docs, emb, "wrd")
    assert list(inputs.words[inputs.indices[0]]) == ["a"]
    assert solver.wmd_pair(inputs, 0, 1) == pytest.approx(1.0, abs=1e-15)
    assert list(inputs.empty) == [False, False, True, True]
    assert np.isnan(solver.wmd_pair(inputs, 0, 2))
    assert np.isnan(solver.wmd_pair(inputs, 3, 1))


def test_a_word_costs_exactly_zero_to_itself():
    docs, emb = random_wrd_corpus(4, 10)
    inputs = solver.prepare(docs, emb, "wrd")
    rows = np.arange(len(inputs.vectors))
    cost = solver.cost_matrix(inputs, rows, rows)
    assert (np.diagonal(cost) == 0.0).all()
    assert (cost >= 0.0).all() and (cost <= 2.0 + 1e-12).all()
    np.testing.assert_array_equal(cost, bounds.word_distances(inputs, rows, rows))


def test_wrd_needs_norms_that_are_finite_and_not_negative():
    docs = documents([{"a": 1}])
    emb = embeddings_with_norms({"a": [1.0, 0.0]})
    with pytest.raises(io.WmdevalError, match="`norm` column"):
        solver.prepare(docs, emb.drop_columns(["norm"]), "wrd")
    bad = embeddings_with_norms({"a": [1.0, 0.0]}, {"a": -1.0})
    with pytest.raises(io.WmdevalError, match="negative or not finite"):
        solver.prepare(docs, bad, "wrd")
    with pytest.raises(ValueError, match="unknown weighting"):
        solver.prepare(docs, emb, "cosine")


# --------------------------------------------------------------------------- against the definition


@pytest.mark.parametrize("unit_vectors", [False, True])
def test_pairs_and_blocks_match_a_plain_emd2_loop(unit_vectors):
    docs, emb = random_wrd_corpus(0, 18, unit_vectors=unit_vectors, zero_words=2)
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in docs.to_pylist()]
    bags[5] = {}
    bags[6] = {"w00": 2, "w01": 1}  # zero vectors only: no mass
    docs = documents(bags)
    inputs = solver.prepare(docs, emb, "wrd")
    got = {}
    for table in block_tables(inputs, 3, threads=2):
        got.update(upper_pairs(table))
    assert len(got) == 18 * 17 // 2
    for i in range(18):
        for j in range(i + 1, 18):
            expected = plain_wrd(docs, emb, i, j)
            if np.isnan(expected):
                assert np.isnan(got[i, j]) and (i in (5, 6) or j in (5, 6))
                continue
            assert got[i, j] == pytest.approx(expected, abs=1e-9)
            assert solver.wmd_pair(inputs, j, i) == pytest.approx(expected, abs=1e-9)


def test_stored_blocks_gather_to_the_plain_matrix(tmp_path):
    """Through the CLI (wmd-block --weighting wrd, wmd-gather), as the workflow calls it."""
    from wmdeval.cli import main

    docs, emb = random_wrd_corpus(1, 16, unit_vectors=True)
    documents_path, embeddings_path = tmp_path / "documents.parquet", tmp_path / "emb.parquet"
    io.write_table(docs, documents_path, schemas.DOCUMENTS)
    io.write_table(emb, embeddings_path)
    written = {}
    for n_blocks in (1, 4):
        paths = [str(tmp_path / f"{n_blocks}-{k}.parquet") for k in range(1, n_blocks + 1)]
        for k, path in enumerate(paths, 1):
            argv = ["wmd-block", "--documents", str(documents_path)]
            argv += ["--embeddings", str(embeddings_path), "--weighting", "wrd"]
            argv += ["--block", f"{k}-of-{n_blocks}", "--threads", "2", "--out", path]
            assert main(argv) == 0
        out = tmp_path / f"wrd-{n_blocks}.parquet"
        argv = ["wmd-gather", "--documents", str(documents_path), "--blocks", *paths]
        assert main([*argv, "--method", "WRD", "--out", str(out)]) == 0
        written[n_blocks] = out.read_bytes()
    assert written[1] == written[4]
    doc_ids, matrix = io.read_distances(tmp_path / "wrd-4.parquet")
    np.testing.assert_array_equal(doc_ids, np.arange(16))
    for i in range(16):
        assert matrix[i, i] == 0.0
        for j in range(i + 1, 16):
            expected = np.float32(plain_wrd(docs, emb, i, j))
            assert matrix[i, j] == matrix[j, i] == pytest.approx(expected, rel=1e-6, abs=1e-7)


# --------------------------------------------------------------------------- bounds and search


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_never_exceed_the_exact_wrd(seed):
    docs, emb = random_wrd_corpus(seed, 40, n_words=60, dim=8, max_len=15)
    inputs = solver.prepare(docs, emb, "wrd")
    n = inputs.n
    exact = np.array(
        [
            [solver.wmd_pair(inputs, min(i, j), max(i, j)) if i != j else 0.0 for j in range(n)]
            for i in range(n)
        ]
    )
    margin = bounds.safety_margin(inputs, exact)
    for omr, wcd in ((True, True), (False, False), (False, True)):
        lower = bounds.LowerBounds(inputs, np.arange(n)).rows(np.arange(n), omr=omr, wcd=wcd)
        defined = np.isfinite(exact)
        assert np.array_equal(np.isfinite(lower), defined)
        assert (lower[defined] <= exact[defined] + margin[defined]).all()
    assert (lower[defined] > 0.5 * exact[defined]).mean() > 0.5  # and they are not trivial


def test_the_centroid_bound_is_half_the_squared_distance_of_the_mean_directions():
    docs, emb = random_wrd_corpus(6, 30, n_words=40, dim=4, max_len=3)
    inputs = solver.prepare(docs, emb, "wrd")
    means = bounds.centroids(inputs)
    sq = np.einsum("ij,ij->i", means, means)
    got = bounds.centroid_bound("cosine", means @ means.T, sq, sq)
    for i in range(inputs.n):
        for j in range(inputs.n):
            half_squared = 0.5 * np.sum((means[i] - means[j]) ** 2)
            assert got[i, j] == pytest.approx(half_squared, abs=1e-12)
            if i < j:
                exact = solver.wmd_pair(inputs, i, j)
                assert got[i, j] <= exact + bounds.safety_margin(inputs, exact)
    # one-word documents: the mean direction is the word's, the bound is exact
    one = np.flatnonzero(inputs.sizes == 1)[:2]
    assert got[one[0], one[1]] == pytest.approx(solver.wmd_pair(inputs, *one), abs=1e-12)


def assert_stored_distances_are_the_matrix(pair_table: pa.Table, matrix: np.ndarray) -> None:
    """Every NEIGHBOUR_PAIRS distance equals the gathered matrix's entry (doc_id = position)."""
    q = pair_table.column("query").to_numpy().astype(np.int64)
    c = pair_table.column("candidate").to_numpy().astype(np.int64)
    assert len(q) > 0
    np.testing.assert_array_equal(pair_table.column("distance").to_numpy(), matrix[q, c])


def wrd_variants(docs, emb, splits, settings=None, **kwargs):
    """The full WRD matrix and the pruned search's tables, as variants (slug "wmd": the
    slug only names the matrix; the random corpora have no zero vectors, so the empty
    documents are those without words, as the variant assumes for it)."""
    inputs = solver.prepare(docs, emb, "wrd")
    doc_ids = docs.column("doc_id").to_numpy()
    matrix = full_matrix(inputs, splits)
    tables = knn_tables(inputs, splits, settings, **kwargs)
    dense = prepare_variant(docs, splits, {"wmd": (doc_ids, matrix)})
    pruned = prepare_variant(docs, splits, {}, {"wmd": tables})
    return inputs, matrix, tables, dense, pruned


@pytest.mark.parametrize("folds", ["five", "one"])
def test_knn_search_finds_the_neighbours_of_the_full_wrd_matrix(folds):
    docs, emb = random_wrd_corpus(7, 90, n_words=50, dim=6, max_len=12)
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in docs.to_pylist()]
    bags[4] = {}
    for k in range(20, 30):
        bags[k] = {"w01": 1, "w02": 1}  # ties at the k-th distance
    docs = labelled(documents(bags))
    splits = five_folds(90) if folds == "five" else one_fold(90)
    settings = {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 5}}
    inputs, matrix, tables, dense, pruned = wrd_variants(docs, emb, splits, settings)
    # the search stored the exact distances of the full mode, bit for bit
    assert_stored_distances_are_the_matrix(tables[0], matrix)
    roles = query_roles(dense.folds, dense.wmd["wmd"].empty, settings)
    assert roles
    for role in roles:
        got = pruned.wmd["wmd"].nearest(role.queries, role.candidates, role.k)
        want = dense.wmd["wmd"].nearest(role.queries, role.candidates, role.k)
        np.testing.assert_array_equal(got.index, want.index)
        np.testing.assert_array_equal(got.distance, want.distance)
    doc_ids = docs.column("doc_id").to_numpy()
    full_scores = knn.evaluate_dataset(
        docs, splits, {"wmd": (doc_ids, matrix)}, settings, "t", "original"
    )
    pruned_scores = knn.evaluate_dataset(
        docs, splits, {}, settings, "t", "original", neighbour_tables={"wmd": tables}
    )
    assert pruned_scores.to_pylist() == full_scores.to_pylist()


def test_wmd_search_command_runs_with_wrd(tmp_path):
    from wmdeval.cli import main

    docs, emb = random_wrd_corpus(8, 40, n_words=30, dim=5)
    docs = labelled(docs)
    splits = five_folds(40)
    paths = {name: tmp_path / f"{name}.parquet" for name in ("docs", "splits", "emb")}
    io.write_table(docs, paths["docs"], schemas.DOCUMENTS)
    io.write_table(splits, paths["splits"], schemas.SPLITS)
    io.write_table(emb, paths["emb"])
    argv = ["wmd-search", "--documents", str(paths["docs"]), "--splits", str(paths["splits"])]
    argv += ["--embeddings", str(paths["emb"]), "--weighting", "wrd", "--settings", "null"]
    argv += ["--shard", "1-of-1", "--threads", "2"]
    argv += ["--out-pairs", str(tmp_path / "p.parquet")]
    argv += ["--out-certificates", str(tmp_path / "c.parquet")]
    assert main(argv) == 0
    pair_table, certificates = search.read_neighbour_tables(
        tmp_path / "p.parquet", tmp_path / "c.parquet"
    )
    inputs = solver.prepare(docs, emb, "wrd")
    matrix = full_matrix(inputs, splits)
    assert_stored_distances_are_the_matrix(pair_table, matrix)
    assert pair_table.num_rows > 0 and certificates.num_rows > 0
