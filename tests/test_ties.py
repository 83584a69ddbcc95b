"""Exact ties are ties in every ranking (docs/protocol.md §11, "Exact ties").

Each family of methods gets documents whose distances to a query are equal in exact
arithmetic, by construction, yet come out of float64 a few ulps apart, with the
lower-indexed document the (falsely) larger one. The protocol gives such a tie to the
lower index; the workflow must too. Each case is also ranked with the rule switched off
(``tie_key`` replaced by the identity): the higher index then wins, so these tests can
fail.

How exactness is built:

- baselines: the second document is the first with words swapped in pairs (a_i <-> b_i)
  that the query holds with equal counts; every baseline, and TF-IDF's IDF over these
  documents, is invariant under renaming words, so both distances are equal. The word
  names decide the column order, hence the order of the float sums.
- WMD, WMD-TF-IDF, WRD, WCD, RWMD and the mean-vector cosine: the second document's word
  vectors are the first's with their coordinates rotated (x, y, z) -> (y, z, x), an
  isometry that fixes the query's words (on the axis t(1, 1, 1)); so every ground cost,
  weight and centroid distance is equal, but the sums of squares run in another order.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from test_wmd import documents, embeddings

from wmdeval.classification import knn
from wmdeval.core import io, roles, variant
from wmdeval.core.methods import BASELINES, BY_SLUG
from wmdeval.core.variant import TIE_BITS, DenseDistances, Neighbours, rank_neighbours, tie_key
from wmdeval.distances import embedding, external
from wmdeval.distances.factory import method_distances, prepare_variant
from wmdeval.distances.wmd import blocks, bounds, search, solver

QUERY, LOW, HIGH = 0, 1, 2


def no_rule(monkeypatch):
    """Rank raw float64 values: the rule switched off."""
    monkeypatch.setattr(variant, "tie_key", lambda values: np.asarray(values, dtype=np.float64))
    monkeypatch.setattr(knn, "tie_key", lambda values: np.asarray(values, dtype=np.float64))


# --------------------------------------------------------------------------- the key


def plain_key(d: float) -> float:
    """The rule for one number, written out: d rounded to TIE_BITS significant bits."""
    mantissa, exponent = math.frexp(d)
    return math.ldexp(round(mantissa * 2**TIE_BITS), exponent - TIE_BITS)


def test_tie_key_matches_a_plain_rounding():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.uniform(0, 3, 500),
            rng.lognormal(0, 20, 500),
            -rng.uniform(0, 1, 50),
            [0.0, 5e-324, 1e-300, 1.0, 2.0, 0.5, 1e308],
        ]
    )
    got = tie_key(values)
    for value, key in zip(values.tolist(), got.tolist(), strict=True):
        assert key == plain_key(value)


def test_tie_key_ties_a_few_ulps_and_keeps_real_differences():
    x = 0.4082482904638631
    assert tie_key(np.nextafter(x, 1)) == tie_key(x) == tie_key(np.nextafter(x, 0))
    # the squared L2 distances of the issue: 1/6 and 1/6, one ulp apart
    assert tie_key(0.4082482904638631) == tie_key(0.408248290463863)
    assert tie_key(0.1 + 0.2) == tie_key(0.3)
    # more than 2**-31 apart (relative): always apart, in order
    rng = np.random.default_rng(1)
    a = rng.uniform(1e-3, 1e3, 10_000)
    b = a * (1 + 2.0**-30)
    assert np.all(tie_key(b) > tie_key(a))


def test_tie_key_is_monotone_and_keeps_zero_inf_nan():
    rng = np.random.default_rng(2)
    values = np.sort(np.concatenate([rng.normal(0, 1, 2000), rng.lognormal(0, 5, 2000)]))
    assert np.all(np.diff(tie_key(values)) >= 0)
    assert tie_key(0.0) == 0.0 and not np.signbit(tie_key(-0.0))
    assert tie_key(np.inf) == np.inf and np.isnan(tie_key(np.nan))
    # the largest finite distance stays finite (a defined neighbour)
    assert np.isfinite(tie_key(np.finfo(np.float64).max))


def test_scalar_tie_key_is_tie_key_bit_for_bit():
    # the search ranks its solved distances one at a time with the scalar form: any bit
    # apart from tie_key would rank a pair differently in knn and full mode
    rng = np.random.default_rng(3)
    largest = np.finfo(np.float64).max
    values = np.concatenate(
        [
            rng.uniform(0, 3, 2000),
            rng.lognormal(0, 30, 2000),
            -rng.lognormal(0, 30, 500),
            # halfway cases: an odd and an even last kept bit, each exactly half a quantum up
            (rng.integers(2**31, 2**32, 200) + 0.5) * 2.0**-32,
            [0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1.0, 0.5, largest, -largest, 1e308],
            [np.inf, -np.inf, np.nan],
        ]
    )
    keys = tie_key(values)
    for value, key in zip(values.tolist(), keys.tolist(), strict=True):
        got = variant.scalar_tie_key(value)
        assert np.array(got).tobytes() == np.array(key).tobytes(), value


def test_rank_neighbours_orders_by_key_then_index_like_a_sorted_loop():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 1.5, (30, 8))
    # each value repeated with ulp-level noise, and neighbours that really differ
    noisy = np.repeat(base, 5, axis=1) * (1 + rng.integers(-4, 5, (30, 40)) * 2.0**-52)
    noisy[rng.uniform(size=noisy.shape) < 0.05] = np.nan
    for k in (1, 3, 5, 7, 19, 40):
        got = rank_neighbours(noisy, k)
        for row, ranked in zip(noisy, got.tolist(), strict=True):
            order = sorted((plain_key(d), j) for j, d in enumerate(row) if np.isfinite(d))
            want = [j for _, j in order[:k]]
            assert ranked == want + [-1] * (k - len(want))


def test_the_search_margin_is_far_wider_than_the_tie_rounding():
    # A candidate pruned by the knn search must have a key above the k-th's: the margin
    # (relative) must exceed the widest rounding of a key, 2**-(TIE_BITS - 1) relative.
    assert bounds.RELATIVE_MARGIN > 100 * 2.0 ** -(TIE_BITS - 1)


# --------------------------------------------------------------------------- baselines


def swapped_documents(rng) -> list[dict[str, int]]:
    """[query, low, high]: high is low with the query's equal-count word pairs swapped,
    and the words the query lacks renamed; every baseline distance to the query is equal."""
    m, f = int(rng.integers(2, 6)), int(rng.integers(0, 4))
    names = [f"w{n:02d}" for n in rng.permutation(100)[: 2 * m + f]]
    a, b, fixed = names[:m], names[m : 2 * m], names[2 * m :]
    swap = dict(zip(a, b, strict=True)) | dict(zip(b, a, strict=True))
    query = {}
    for x, y in zip(a, b, strict=True):
        query[x] = query[y] = int(rng.integers(1, 6))
    query |= {w: int(rng.integers(1, 6)) for w in fixed}
    pool = a + b + fixed
    chosen = rng.choice(pool, int(rng.integers(1, len(pool) + 1)), replace=False)
    low = {str(w): int(rng.integers(1, 6)) for w in chosen}
    low |= {f"x{k}": int(rng.integers(1, 4)) for k in range(int(rng.integers(0, 4)))}
    high = {swap.get(w, "y" + w[1:] if w.startswith("x") else w): c for w, c in low.items()}
    return [query, low, high]


def baseline_pair(method, bags) -> tuple[np.ndarray, object]:
    data = prepare_variant(documents(bags), None, {})
    distances = method_distances(data, method, training=np.arange(len(bags)))
    return distances.block(np.array([QUERY]), np.array([LOW, HIGH]))[0], distances


def exact_on_counts(method) -> bool:
    """Unnormalised BOW: integer counts, exact sums; its ties survive float64."""
    return method.weighting == "bow" and method.norm == "None"


def reversed_baseline_case(method) -> list[dict[str, int]]:
    """The first seeded construction whose float64 distances put the higher index first."""
    rng = np.random.default_rng(11)
    for _ in range(2000):
        bags = swapped_documents(rng)
        if bags[LOW] != bags[HIGH]:
            pair, _ = baseline_pair(method, bags)
            if pair[0] > pair[1]:
                return bags
    raise AssertionError(f"{method.name}: no construction came out of float64 reversed")


@pytest.mark.parametrize("method", BASELINES, ids=lambda m: m.name)
def test_equal_baseline_distances_go_to_the_lower_index(method, monkeypatch):
    # Unnormalised BOW ties in float64 too: nothing for rounding to decide there.
    exact = exact_on_counts(method)
    bags = swapped_documents(np.random.default_rng(5)) if exact else reversed_baseline_case(method)
    pair, distances = baseline_pair(method, bags)
    assert (pair[0] == pair[1]) if exact else (pair[0] > pair[1])
    assert tie_key(pair[0]) == tie_key(pair[1])
    cols = np.array([LOW, HIGH])
    assert distances.nearest(np.array([QUERY]), cols, 1).index.tolist() == [[0]]  # LOW
    if not exact:
        no_rule(monkeypatch)
        assert distances.nearest(np.array([QUERY]), cols, 1).index.tolist() == [[1]]


def test_the_swapped_bow_l1_distances_are_equal_in_exact_arithmetic():
    """An independent check of the construction, in rationals (BOW L1/L1 and L1/L2)."""
    bags = reversed_baseline_case(BY_SLUG["bow-l1-l1"])
    assert bags is not None
    query, low, high = bags
    words = sorted(set(query) | set(low) | set(high))

    def l1_normalised(bag):
        total = sum(bag.values())
        return [Fraction(bag.get(w, 0), total) for w in words]

    q, a, b = (l1_normalised(bag) for bag in (query, low, high))
    assert sum(abs(x - y) for x, y in zip(q, a, strict=True)) == sum(
        abs(x - y) for x, y in zip(q, b, strict=True)
    )
    assert sum((x - y) ** 2 for x, y in zip(q, a, strict=True)) == sum(
        (x - y) ** 2 for x, y in zip(q, b, strict=True)
    )


def test_documents_without_shared_words_are_exactly_two_apart():
    # BOW (L1/L1): no shared word means distance exactly 2.0, whatever the documents;
    # every one of them ties, so the k nearest are the lowest indices.
    bags = [{"q1": 3, "q2": 1}]
    rng = np.random.default_rng(4)
    for i in range(12):
        bags.append({f"z{i}{k}": int(rng.integers(1, 7)) for k in range(int(rng.integers(1, 9)))})
    data = prepare_variant(documents(bags), None, {})
    distances = method_distances(data, "bow-l1-l1", training=np.arange(len(bags)))
    cols = np.arange(1, len(bags))
    assert np.all(distances.block(np.array([0]), cols) == 2.0)
    assert distances.nearest(np.array([0]), cols, 5).index.tolist() == [[0, 1, 2, 3, 4]]


# --------------------------------------------------------------------------- embeddings


def rotated_corpus(seed: int, dim_extra: int = 0):
    """[query, low, high] with rotated word vectors (see the module docstring), plus
    training documents; returns (DOCUMENTS, embeddings)."""
    rng = np.random.default_rng(seed)
    vectors = {f"q{k}": [t, t, t] for k, t in enumerate(rng.uniform(-1, 1, 3).round(3))}
    n_words = int(rng.integers(2, 7))
    low, high = {}, {}
    for k in range(n_words):
        x, y, z = rng.standard_normal(3).astype(np.float32).tolist()
        vectors[f"a{k}"] = [x, y, z]
        vectors[f"r{k}"] = [y, z, x]
        low[f"a{k}"] = high[f"r{k}"] = int(rng.integers(1, 4))
    query = {f"q{k}": int(rng.integers(1, 4)) for k in range(3)}
    return documents([query, low, high]), embeddings(vectors)


def transport_pair(docs, emb, weighting):
    inputs = solver.prepare(docs, emb, weighting)
    return np.array([solver.wmd_pair(inputs, QUERY, LOW), solver.wmd_pair(inputs, QUERY, HIGH)])


def reversed_embedding_case(pair_of) -> tuple:
    for seed in range(400):
        docs, emb = rotated_corpus(seed)
        pair = pair_of(docs, emb)
        if pair[0] > pair[1]:
            return docs, emb, pair
    raise AssertionError("no construction came out of float64 reversed")


TRANSPORT = {"wmd": "bow", "wmd-tfidf": "tfidf", "wrd": "wrd"}


@pytest.mark.parametrize("slug", TRANSPORT)
def test_equal_transport_distances_go_to_the_lower_index_in_both_modes(slug, monkeypatch):
    weighting = TRANSPORT[slug]
    docs, emb, pair = reversed_embedding_case(lambda d, e: transport_pair(d, e, weighting))
    assert pair[0] != pair[1] and tie_key(pair[0]) == tie_key(pair[1])
    inputs = solver.prepare(docs, emb, weighting)
    # full mode: blocks gathered into the stored matrix
    matrix = blocks.gather(3, [solver.solve_block(inputs, 0, 1)])
    dense = DenseDistances(matrix)
    assert dense.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[0]]
    # knn mode: the search, with the query ranked among LOW and HIGH
    role = roles.QueryRole(0, "test", np.array([QUERY]), np.array([LOW, HIGH]), 1)
    tasks = search.query_tasks([role], inputs.empty, np.array([QUERY]))
    pairs, certificates = search.search_queries(inputs, tasks)
    table = variant.NeighbourTable.from_tables(
        inputs.doc_ids, pairs, certificates, inputs.empty, "test"
    )
    assert table.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[0]]
    assert pairs.column("distance").to_pylist() == [pair[0], pair[1]]  # both solved
    no_rule(monkeypatch)
    assert dense.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[1]]


def test_duplicates_are_at_exactly_zero_and_go_to_the_lower_index():
    query = {"a0": 2, "a1": 1}
    docs = documents([query, {"a1": 3}, dict(query), dict(query), {"a0": 1}])
    emb = embeddings({"a0": [0.3, -1.0], "a1": [0.5, 0.25]})
    inputs = solver.prepare(docs, emb, "bow")
    matrix = blocks.gather(5, [solver.solve_block(inputs, 0, 1)])
    assert matrix[0, 2] == matrix[0, 3] == 0.0
    got = DenseDistances(matrix).nearest(np.array([0]), np.array([1, 2, 3, 4]), 2)
    assert got.index.tolist() == [[1, 2]]  # positions in cols: documents 2 and 3


@pytest.mark.parametrize("method", [m for m in embedding.METHODS if m != "rwmd"])
def test_equal_embedding_matrix_distances_go_to_the_lower_index(method, monkeypatch):
    def pair_of(docs, emb):
        matrix = embedding.embedding_matrix(solver.prepare(docs, emb, "bow"), method)
        return matrix[QUERY, [LOW, HIGH]]

    docs, emb, pair = reversed_embedding_case(pair_of)
    assert pair[0] != pair[1] and tie_key(pair[0]) == tie_key(pair[1])
    dense = DenseDistances(embedding.embedding_matrix(solver.prepare(docs, emb, "bow"), method))
    assert dense.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[0]]
    no_rule(monkeypatch)
    assert dense.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[1]]


def test_equal_rwmd_distances_come_out_equal_and_go_to_the_lower_index():
    """RWMD's word costs are its knn bounds', rounded to float32 (embedding.
    relaxed_wmd_matrix): float64's noise on the rotated vectors is far below their
    rounding, so every construction comes out exactly equal, and the position decides."""
    for seed in range(400):
        docs, emb = rotated_corpus(seed)
        matrix = embedding.relaxed_wmd_matrix(solver.prepare(docs, emb, "bow"))
        low, high = matrix[QUERY, [LOW, HIGH]]
        assert low == high, seed
    dense = DenseDistances(matrix)
    assert dense.nearest(np.array([QUERY]), np.array([LOW, HIGH]), 1).index.tolist() == [[0]]


# --------------------------------------------------------------------------- users' matrices


def test_a_users_matrix_with_a_tie_goes_to_the_lower_index(tmp_path, monkeypatch):
    # 0.1 + 0.2 and 0.3 are equal in exact arithmetic; in float64 the first is larger.
    matrix = np.array(
        [[0.0, 0.1 + 0.2, 0.3, 0.7], [0.3, 0.0, 0.5, 0.5], [0.3, 0.5, 0.0, 0.5], [0.7] * 3 + [0]]
    )
    ids = np.array([10, 20, 30, 40])
    io.write_distances(matrix, ids, tmp_path / "mine.parquet")
    stored = external.read_precomputed_matrix(tmp_path / "mine.parquet", ids)
    assert stored[0, 1] == 0.1 + 0.2 and stored[0, 2] == 0.3  # float64 keeps them apart
    dense = DenseDistances(stored)
    assert dense.nearest(np.array([0]), np.array([1, 2, 3]), 1).index.tolist() == [[0]]
    no_rule(monkeypatch)
    assert dense.nearest(np.array([0]), np.array([1, 2, 3]), 1).index.tolist() == [[1]]


def test_old_float32_matrices_are_refused(tmp_path):
    import pyarrow as pa

    table = pa.table(
        {
            "doc_id": pa.array([1, 2], pa.int32()),
            "distances": pa.array([[0.0, 1.0], [1.0, 0.0]], pa.list_(pa.float32())),
        }
    )
    io.write_table(table, tmp_path / "old.parquet")
    with pytest.raises(io.WmdevalError, match="float32.*delete it and rerun"):
        io.read_distances(tmp_path / "old.parquet")


# --------------------------------------------------------------------------- the vote


def test_tied_neighbours_weigh_the_same_in_the_weighted_vote(monkeypatch):
    # Two neighbours tied in exact arithmetic; label 1's is a few ulps nearer in float64.
    # Tied, they weigh exactly the same, and the label tie goes to the smaller label.
    neighbours = Neighbours(np.array([[1, 0]]), np.array([[0.3, 0.1 + 0.2]]))
    y_train = np.array([0, 1])
    for gamma in (0.005, 0.05, 0.1):
        assert knn.wknn_vote(neighbours, y_train, gamma)[0].tolist() == [0]
    no_rule(monkeypatch)
    assert knn.wknn_vote(neighbours, y_train, 0.005)[0].tolist() == [1]


def test_figure4_nearest_pairs_follow_the_rule(monkeypatch):
    from wmdeval.reporting import figures

    matrix = np.array([[0.0, 0.1 + 0.2, 0.3], [0.1 + 0.2, 0.0, 0.4], [0.3, 0.4, 0.0]])
    pairs = figures.nearest_neighbour_pairs(matrix, np.array([0]), np.array([0, 1, 2]))
    assert pairs.tolist() == [[0, 1]]
    monkeypatch.setattr(figures, "rank_neighbours", lambda d, k: np.nanargmin(d, axis=1)[:, None])
    assert figures.nearest_neighbour_pairs(matrix, np.array([0]), np.array([0, 1, 2])).tolist() == [
        [0, 2]
    ]


def test_crossmatch_matching_ties_like_the_exact_distances(monkeypatch):
    from wmdeval.analyses import crossmatch

    # Points 0..3: matchings {01, 23} and {02, 13} both cost 0.6 in exact arithmetic;
    # in float64 0.1 + 0.2 (pair 02) makes the second a few ulps dearer.
    exact = np.array(
        [[0, 0.3, 0.1, 0.9], [0.3, 0, 0.9, 0.5], [0.1, 0.9, 0, 0.3], [0.9, 0.5, 0.3, 0]]
    )
    noisy = exact.copy()
    noisy[0, 2] = noisy[2, 0] = 0.1 + 0.2 - 0.2  # 0.10000000000000003
    assert noisy[0, 2] != exact[0, 2] and tie_key(noisy[0, 2]) == tie_key(exact[0, 2])
    want = crossmatch.min_distance_perfect_matching(exact).tolist()
    assert crossmatch.min_distance_perfect_matching(noisy).tolist() == want
    monkeypatch.setattr(crossmatch, "tie_key", lambda values: np.asarray(values, dtype=np.float64))
    assert crossmatch.min_distance_perfect_matching(noisy).tolist() != want
