"""The bounds' compiled kernels against plain loops on small corpora."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from test_wmd import documents, random_corpus

from wmdeval.distances.wmd import bounds, solver


def plain_nearest_word(inputs, words, flat, starts) -> np.ndarray:
    """Each group's nearest word to each of ``words``, one pair at a time."""
    ends = list(starts[1:]) + [len(flat)]
    out = np.empty((len(starts), len(words)))
    for g, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        for k, w in enumerate(words):
            out[g, k] = min(
                0.0 if v == w else float(np.linalg.norm(inputs.vectors[v] - inputs.vectors[w]))
                for v in flat[lo:hi]
            )
    return out


@pytest.mark.parametrize("max_entries", [bounds.MAX_ENTRIES, 7])
def test_nearest_word_is_the_plain_minimum(monkeypatch, max_entries):
    monkeypatch.setattr(bounds, "MAX_ENTRIES", max_entries)  # one chunk, or many
    docs, emb = random_corpus(3, 30, n_words=40, dim=5, max_len=10)
    inputs = solver.prepare(docs, emb, "bow")
    weights = bounds.weight_matrix(inputs)
    flat = weights.indices.astype(np.int64)
    starts = weights.indptr[:-1]
    words = np.array([0, 2, 3, 11, 25, 39])
    got = bounds._nearest_word(inputs, words, flat, starts)
    assert got.dtype == np.float32
    want = plain_nearest_word(inputs, words, flat, starts)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # a word of the group is its own nearest, at exactly 0
    for g in range(len(starts)):
        held = np.isin(words, flat[starts[g] : starts[g] + inputs.sizes[g]])
        assert (got[g, held] == 0).all() and (got[g, ~held] > 0).all()


def test_group_minimum_is_the_rows_minimum():
    rng = np.random.default_rng(0)
    d = rng.random((9, 5)).astype(np.float32)
    at = rng.integers(0, 9, 20).astype(np.int64)
    starts = np.array([0, 3, 4, 12], dtype=np.int64)
    ends = np.array([3, 4, 12, 20], dtype=np.int64)
    # written transposed, from column g0 and row w0 of `out`, nothing else touched
    out = np.full((8, 7), -1.0, dtype=np.float32)
    bounds._group_minimum(d, at, starts, ends, out, 2, 1)
    for g in range(4):
        assert np.array_equal(out[1:6, 2 + g], d[at[starts[g] : ends[g]]].min(axis=0))
    assert (np.delete(np.delete(out, range(1, 6), 0), range(2, 6), 1) == -1).all()


def test_group_minimum_takes_groups_a_tile_at_a_time():
    # more groups than GROUP_TILE, the last tile short
    rng = np.random.default_rng(1)
    d = rng.random((30, 3)).astype(np.float32)
    n_groups = 2 * bounds.GROUP_TILE + 5
    at = rng.integers(0, 30, 3 * n_groups).astype(np.int64)
    starts = np.arange(0, 3 * n_groups, 3, dtype=np.int64)
    out = np.empty((3, n_groups), dtype=np.float32)
    bounds._group_minimum(d, at, starts, starts + 3, out, 0, 0)
    assert np.array_equal(out, d[at].reshape(n_groups, 3, 3).min(axis=1).T)


def test_weighted_rows_are_the_sparse_product_of_the_float32_table():
    rng = np.random.default_rng(4)
    table = rng.random((9, 13)).astype(np.float32)
    # CSR rows: one empty, one with a repeated column, one with every column
    indptr = np.array([0, 2, 2, 5, 14])
    indices = np.array([3, 8, 0, 0, 5] + list(range(9)), dtype=np.int32)
    data = rng.random(len(indices))
    out = np.full((4, 13), 0.5)  # added to, not overwritten
    bounds._weighted_rows(indptr, indices, data, table, out)
    for b in range(4):
        want = np.full(13, 0.5)
        for e in range(indptr[b], indptr[b + 1]):
            want = want + data[e] * table[indices[e]].astype(np.float64)
        np.testing.assert_allclose(out[b], want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
def test_overlap_sums_are_a_plain_loop_over_shared_words(weighting):
    # OMR's additions by a loop over every (query, document) pair and the words both hold,
    # summed in the order the kernel sums them (the query's words in CSR order, then the
    # documents holding each in order), so bit for bit
    docs, emb = random_corpus(6, 40, n_words=20, dim=5, max_len=10)
    inputs = solver.prepare(docs, emb, weighting)
    rows = np.array([3, 0, 17, 39, 8], dtype=np.int64)
    lower = bounds.LowerBounds(inputs, np.arange(inputs.n))
    weights, second = lower.weights, lower.second
    forward, backward = lower._overlap(rows)
    want_f = np.zeros((len(rows), inputs.n))
    want_b = np.zeros((len(rows), inputs.n))
    shared = 0
    for r, q in enumerate(rows.tolist()):
        for e in range(weights.indptr[q], weights.indptr[q + 1]):
            for c in range(inputs.n):
                found = np.flatnonzero(
                    weights.indices[weights.indptr[c] : weights.indptr[c + 1]] == weights.indices[e]
                )
                if not len(found):
                    continue
                at_c = weights.indptr[c] + int(found[0])
                a, b = weights.data[e], weights.data[at_c]
                shared += 1
                if a > b:
                    want_f[r, c] += (a - b) * second[at_c]
                elif b > a:
                    want_b[r, c] += (b - a) * second[e]
    assert shared > 100 and (want_f > 0).sum() > 20 and (want_b > 0).sum() > 20
    assert forward.tobytes() == want_f.tobytes() and backward.tobytes() == want_b.tobytes()


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_bounds_from_the_kept_cost_matrices_are_the_bounds_computed_afresh(weighting):
    docs, emb = random_corpus(4, 30, n_words=50, dim=6, max_len=14)
    inputs = solver.prepare(docs, emb, weighting)
    candidates = np.arange(1, inputs.n)
    kept: dict[int, np.ndarray] = {}
    ict = bounds.constrained_transfers(inputs, 0, candidates, kept)
    assert np.array_equal(ict, bounds.constrained_transfers(inputs, 0, candidates))
    assert sorted(kept) == candidates.tolist()
    _, duals = solver.solve_pair(inputs, 0, 1)
    side = 0 if inputs.doc_ids[0] < inputs.doc_ids[1] else 1
    potentials = bounds.query_potential(inputs, 0, duals[1 - side])[None, :]
    for c in candidates.tolist():
        cost = bounds.word_distances(inputs, inputs.indices[0], inputs.indices[c])
        np.testing.assert_allclose(kept[c], cost, rtol=1e-14, atol=1e-14)
        afresh = bounds.dual_bound(inputs, 0, c, potentials, np.inf)
        shared = bounds.dual_bound(inputs, 0, c, potentials, np.inf, kept[c])
        assert shared == pytest.approx(afresh, rel=1e-12, abs=1e-12)


def first_potentials(inputs, others) -> np.ndarray:
    """Document 0's potentials from its solves against ``others``, one row each."""
    potentials = []
    for other in others:
        _, duals = solver.solve_pair(inputs, 0, other)
        side = 0 if inputs.doc_ids[0] < inputs.doc_ids[other] else 1
        potentials.append(bounds.query_potential(inputs, 0, duals[1 - side]))
    return np.array(potentials)


def test_first_dual_bound_takes_the_potentials_in_the_order_given():
    docs, emb = random_corpus(6, 20, n_words=40, dim=5, max_len=12)
    inputs = solver.prepare(docs, emb, "bow")
    potentials = first_potentials(inputs, range(1, 6))
    for c in range(6, inputs.n):
        values = [bounds.dual_bound(inputs, 0, c, potentials[p : p + 1], np.inf) for p in range(5)]
        # none passes: the best of all, whatever the order
        best, winner = bounds.first_dual_bound(inputs, 0, c, potentials, [4, 2, 0, 1, 3], np.inf)
        assert winner == -1 and best == pytest.approx(max(values), rel=1e-12)
        assert bounds.dual_bound(inputs, 0, c, potentials, np.inf) == pytest.approx(best, rel=1e-12)
        # the first in the order given above `enough` stops the search
        enough = sorted(values)[1] - 1e-12  # all but the smallest pass it
        order = np.argsort(values)  # the smallest first, then one that passes
        value, winner = bounds.first_dual_bound(inputs, 0, c, potentials, order, enough)
        assert winner == order[1] and value == pytest.approx(values[order[1]], rel=1e-12)


def test_first_dual_bound_stops_after_its_first_tries_when_far_short(monkeypatch):
    docs, emb = random_corpus(6, 20, n_words=40, dim=5, max_len=12)
    inputs = solver.prepare(docs, emb, "bow")
    potentials = first_potentials(inputs, range(1, 6))
    monkeypatch.setattr(bounds, "DUAL_FIRST", 2)
    continued = 0
    for c in range(6, inputs.n):
        values = np.array(
            [bounds.dual_bound(inputs, 0, c, potentials[p : p + 1], np.inf) for p in range(5)]
        )
        order = np.argsort(values)  # the largest bound is tried last
        # far short of `enough` after two tries: the best of those two
        far = 10 * abs(values.max()) + 1.0
        value, winner = bounds.first_dual_bound(inputs, 0, c, potentials, order, far)
        assert winner == -1 and value == pytest.approx(values[order[1]], rel=1e-12)
        # within DUAL_NEAR after two: the others are tried too
        near = values[order[1]] / bounds.DUAL_NEAR
        if values[order[1]] > 0 and values.max() > near:
            value, winner = bounds.first_dual_bound(inputs, 0, c, potentials, order, near)
            assert winner != -1 and value > near
            continued += 1
    assert continued > 0


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
@pytest.mark.parametrize("dim", [5, bounds.DIRECT_DIMENSIONS + 4])
def test_nearest_dual_bound_is_the_first_dual_bound_in_centroid_order(weighting, dim):
    docs, emb = random_corpus(8, 16, n_words=40, dim=dim, max_len=12)
    inputs = solver.prepare(docs, emb, weighting)
    means = bounds.centroids(inputs)
    potentials = first_potentials(inputs, range(1, 7))
    sources = means[1:7].copy()  # the centroid of the document each was solved against
    sources[4] = sources[2]  # a tie: the earlier potential goes first
    for c in range(7, inputs.n):
        for lo, hi, tries in ((0, 6, 64), (2, 6, 3), (5, 6, 1)):
            fresh = np.arange(lo, hi)
            apart = ((sources[fresh] - means[c]) ** 2).sum(axis=1)
            order = fresh[np.argsort(apart, kind="stable")][:tries]
            for enough in (np.inf, 0.0):
                want, _ = bounds.first_dual_bound(inputs, 0, c, potentials, order, enough)
                got, at = bounds.nearest_dual_bound(
                    inputs, 0, c, potentials, sources, means[c], (lo, hi), tries, enough
                )
                assert got == pytest.approx(want, rel=1e-12, abs=1e-12)
                # where the ascent starts: the potential that gave the bound
                assert lo <= at < hi
                alone = bounds.dual_bound(inputs, 0, c, potentials[at : at + 1], np.inf)
                assert alone == pytest.approx(got, rel=1e-12, abs=1e-12)
                cost = bounds.word_distances(inputs, inputs.indices[0], inputs.indices[c])
                given, _ = bounds.nearest_dual_bound(
                    inputs, 0, c, potentials, sources, means[c], (lo, hi), tries, enough, cost
                )
                assert given == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
@pytest.mark.parametrize("dim", [3, bounds.DIRECT_DIMENSIONS + 4])
def test_pair_costs_are_the_word_distances(weighting, dim):
    docs, emb = random_corpus(7, 12, n_words=30, dim=dim, max_len=9)
    inputs = solver.prepare(docs, emb, weighting)
    for a in range(inputs.n):
        for b in range(inputs.n):
            words_a, words_b = inputs.indices[a], inputs.indices[b]
            got = bounds.pair_costs(inputs, words_a, words_b)
            want = bounds.word_distances(inputs, words_a, words_b)
            np.testing.assert_array_equal(got, want)  # one kernel, the same bits
            # a word's cost to itself is exactly 0, every other one's is not
            same = words_a[:, None] == words_b[None, :]
            assert (got[same] == 0).all() and (got[~same] > 0).all()


@pytest.mark.parametrize("max_entries", [bounds.MAX_ENTRIES, 7])
def test_nearest_words_back_and_other_are_the_plain_minima(monkeypatch, max_entries):
    monkeypatch.setattr(bounds, "MAX_ENTRIES", max_entries)  # one chunk, or many
    docs, emb = random_corpus(4, 30, n_words=40, dim=5, max_len=10)
    inputs = solver.prepare(docs, emb, "bow")
    weights = bounds.weight_matrix(inputs)
    flat = weights.indices.astype(np.int64)
    starts = weights.indptr[:-1]
    words = np.array([0, 2, 3, 11, 25, 39])
    # back groups: positions into `words`, one of them empty
    back = [[0, 3], [], [1, 2, 4, 5], [5]]
    indptr = np.cumsum([0] + [len(b) for b in back])
    indices = np.array([p for b in back for p in b], dtype=np.int64)
    near, toward, rows, at, other = bounds._nearest_words(
        inputs, words, flat, starts, indptr, indices
    )
    np.testing.assert_array_equal(near.T, bounds._nearest_word(inputs, words, flat, starts))
    np.testing.assert_array_equal(rows, np.unique(flat))
    np.testing.assert_array_equal(rows[at], flat)  # each entry's row of the block

    def cost(v, w):
        return 0.0 if v == w else float(np.linalg.norm(inputs.vectors[v] - inputs.vectors[w]))

    assert toward.dtype == np.float32 and toward.shape == (len(rows), len(back))
    for g, group in enumerate(back):
        for r, v in enumerate(rows):
            want = min((cost(v, words[p]) for p in group), default=np.inf)
            assert toward[r, g] == pytest.approx(want, rel=1e-6, abs=1e-7)
    ends = list(starts[1:]) + [len(flat)]
    for lo, hi in zip(starts, ends, strict=True):
        for e in range(lo, hi):
            if flat[e] not in words:
                assert np.isnan(other[e])
                continue
            want = min((cost(flat[f], flat[e]) for f in range(lo, hi) if f != e), default=np.inf)
            assert other[e] == pytest.approx(want, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_nearest_words_on_a_pool_are_the_same_bits(monkeypatch, weighting):
    # the set-up's work shared by a pool's threads, in slices of rows and of groups
    # (several of each here), gives the bits of one thread and of unsliced products
    docs, emb = random_corpus(6, 90, n_words=300, dim=20, max_len=30)
    inputs = solver.prepare(docs, emb, weighting)
    weights = bounds.weight_matrix(inputs)
    flat, starts = weights.indices.astype(np.int64), weights.indptr[:-1]
    queries = np.arange(0, 90, 3)
    local = weights[queries]
    words = np.unique(local.indices)
    indptr, indices = local.indptr, np.searchsorted(words, local.indices)
    monkeypatch.setattr(bounds, "MAX_ENTRIES", 7)  # chunks of 64 words

    def build(threads, processes, timing, **options):
        with ThreadPoolExecutor(max(threads, 1)) as pool:
            return bounds._nearest_words(
                inputs,
                words,
                flat,
                starts,
                indptr,
                indices,
                timing=timing,
                pool=pool if threads else None,
                processes=processes,
                **options,
            )

    built = {}
    for name, rows, groups, threads, processes in [
        ("unsliced", 1 << 30, 1 << 30, 0, 1),
        ("sliced", 64, 7, 0, 1),
        ("pool", 64, 7, 3, 1),
        # whole chunks in forked processes, the second table lowered under locks
        ("processes", 64, 7, 0, 3),
    ]:
        monkeypatch.setattr(bounds, "SLICE_ROWS", rows)
        monkeypatch.setattr(bounds, "SLICE_GROUPS", groups)
        timing: dict = {}
        got = build(threads, processes, timing)
        built[name] = [np.asarray(table).tobytes() for table in got]
        assert timing["chunks_done"] == timing["chunks"] > 1
        if threads or processes > 1:  # their CPU is counted, the waiting thread's is not
            assert 0 < timing["worker_seconds"] <= timing["chunk_seconds"] + timing["back_seconds"]
        else:
            assert timing["worker_seconds"] == 0.0
    assert len(words) > 64 and len(np.unique(flat)) > 2 * 64 and len(starts) > 2 * 7
    assert built["sliced"] == built["unsliced"]
    assert built["pool"] == built["unsliced"]
    assert built["processes"] == built["unsliced"]
    # with the distance block kept, written by its chunks' slices of rows straight into
    # their place (_costs32_into, several slices and chunks here): the same bits on
    # one thread, on a pool, on the threads that replace processes, and in forked
    # processes (a pool given too); the other tables the bits of the table's build,
    # the nearest other words for the query groups alone
    blocks = {}
    monkeypatch.setattr(bounds, "SLICE_ROWS", 64)
    monkeypatch.setattr(bounds, "SLICE_GROUPS", 7)
    for name, threads, processes in [
        ("one", 0, 1),
        ("pool", 3, 1),
        ("threads", 0, 3),
        ("processes", 2, 3),
    ]:
        timing = {}
        got = build(threads, processes, timing, block=True, other_groups=queries)
        blocks[name] = [np.asarray(table).tobytes() for table in got]
        assert timing["worker_processes"] == (name == "processes")
        assert timing["chunks_done"] == timing["chunks"] > 1
    assert blocks["pool"] == blocks["threads"] == blocks["processes"] == blocks["one"]
    block, toward, rows, at, other = got
    assert len(rows) > 64  # several slices of rows
    table = bounds._nearest_words(inputs, words, flat, starts, indptr, indices)
    assert toward.tobytes() == table[1].tobytes()
    ends = np.append(starts[1:], len(flat))
    mine = np.concatenate([np.arange(starts[g], ends[g]) for g in queries])
    assert np.array_equal(other[mine], table[4][mine], equal_nan=True)
    assert np.isnan(np.delete(other, mine)).all()
    for w in (0, 70, len(words) - 1):  # the block's distances, as the table's minima
        entries = np.arange(len(flat))
        for g in (0, 5, len(starts) - 1):
            in_group = entries[starts[g] : ends[g]]
            assert table[0][w, g] == block[w, at[in_group]].min()


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_lower_bounds_tables_from_one_block_are_the_separate_ones(weighting):
    docs, emb = random_corpus(5, 40, n_words=60, dim=5, max_len=12)
    rows = docs.to_pylist()
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in rows]
    bags[3] = {rows[0]["words"][0]: 2}  # a one-word document
    inputs = solver.prepare(documents(bags), emb, weighting)
    queries = np.array([1, 3, 7, 20])
    lower = bounds.LowerBounds(inputs, queries)
    weights = bounds.weight_matrix(inputs)
    # the query words' nearest other word: as nearest_other_word computes it
    second = bounds.nearest_other_word(inputs, weights)
    used = np.isin(weights.indices, lower.vocabulary)
    np.testing.assert_allclose(lower.second[used], second[used], rtol=1e-6, atol=1e-7)
    assert np.isnan(lower.second[~used]).all()
    # every word's distance to each query's nearest word, one pair at a time
    present = np.unique(weights.indices)
    for r, q in enumerate(queries.tolist()):
        d = bounds.word_distances(inputs, present, inputs.indices[q]).min(axis=1)
        np.testing.assert_allclose(lower.to_queries[present, r], d, rtol=1e-6, atol=1e-7)


def _word_vectors(seed, rows_a, rows_b, dim, cosine, equal):
    """Two sets of random word vectors (unit length for a cosine cost), ``equal`` = (i,
    j): b[i] = a[j], a pair of equal vectors (cancellation, clipped at 0); and their
    squared norms."""
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(rows_a, dim)), rng.normal(size=(rows_b, dim))
    if cosine:
        a /= np.linalg.norm(a, axis=1)[:, None]
        b /= np.linalg.norm(b, axis=1)[:, None]
    b[equal[0]] = a[equal[1]]
    return a, b, (a * a).sum(axis=1), (b * b).sum(axis=1)


@pytest.mark.parametrize("cosine", [False, True])
def test_costs32_is_word_costs_cast(cosine):
    a, b, sq_a, sq_b = _word_vectors(2, 7, 5, 4, cosine, (0, 0))
    out = np.empty((7, 5), dtype=np.float32)
    bounds._costs32(a @ b.T, sq_a, sq_b, cosine, out)
    want = solver.word_costs("cosine" if cosine else "euclidean", a @ b.T, sq_a, sq_b)
    np.testing.assert_array_equal(out, want.astype(np.float32))


@pytest.mark.parametrize("cosine", [False, True])
def test_costs32_into_writes_the_costs32_values_transposed_into_the_block(cosine):
    # the set-up's fused kernel with the distance block: _costs32's values, bit for bit,
    # at block[w0 + j, r0 + i], over several tiles and partial ones; nothing else written
    a, b, sq_a, sq_b = _word_vectors(4, 70, 37, 6, cosine, (3, 5))
    products = a @ b.T
    want = np.empty((70, 37), dtype=np.float32)
    bounds._costs32(products, sq_a, sq_b, cosine, want)
    block = np.full((50, 100), -1.0, dtype=np.float32)
    bounds._costs32_into(products, sq_a, sq_b, cosine, block, 9, 20)
    assert block[9:46, 20:90].tobytes() == np.ascontiguousarray(want.T).tobytes()
    block[9:46, 20:90] = -1.0
    assert (block == -1.0).all()


def test_centroid_bound_euclidean_is_solvers_distances_bit_for_bit():
    """The fused kernel of the centroid rows: every bit of solver._distances, an empty
    document's NaN, a cancelled pair's clip at 0 and a signed zero included."""
    rng = np.random.default_rng(3)
    means = rng.normal(size=(9, 6))
    means[4] = np.nan  # an empty document's centroid
    means[7] = means[1]  # equal centroids: cancellation, clipped at 0
    sq = np.einsum("ij,ij->i", means, means)
    products = means[:5] @ means.T
    products[2, 3] = -0.0
    want = solver._distances(products.copy(), sq[:5], sq)
    got = bounds.centroid_bound("euclidean", products.copy(), sq[:5], sq)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert np.isnan(got[:, 4]).all() and np.isnan(got[4]).all()
    assert not np.isnan(got[:4, :4]).any()
    assert got[1, 7] >= 0.0


def test_setup_seconds_estimate_scales_each_part_by_what_it_loops_over(monkeypatch):
    class Partial:
        def __init__(self, inputs, queries, _every):
            assert _every == 4
            self.timing = {
                "chunk_seconds": 2.0,
                "chunks_done": 2,
                "chunks": 8,
                "back_seconds": 1.0,
                "back_pairs_done": 10,
                "back_pairs": 40,
            }

    clock = iter([10.0, 16.0])  # the partial build: 6 s, 3 of them outside its chunks
    monkeypatch.setattr(bounds, "LowerBounds", Partial)
    monkeypatch.setattr(bounds.time, "thread_time", lambda: next(clock))
    assert bounds.setup_seconds_estimate(None, np.arange(3), every=4) == 3.0 + 2.0 * 4 + 1.0 * 4


def test_a_partial_build_computes_every_nth_chunk_as_the_full_one(monkeypatch):
    docs, emb = random_corpus(6, 40, n_words=60, dim=5, max_len=12)
    inputs = solver.prepare(docs, emb, "bow")
    queries = np.array([0, 3, 5, 11, 30])
    rows = len(np.unique(bounds.weight_matrix(inputs).indices))
    monkeypatch.setattr(bounds, "MAX_ENTRIES", 4 * rows)  # chunks of 4 query words
    monkeypatch.setattr(bounds, "PRODUCT_WIDTH", 4)
    full = bounds.LowerBounds(inputs, queries)
    partial = bounds.LowerBounds(inputs, queries, _every=3)
    timing = partial.timing
    chunks = -(-len(full.vocabulary) // 4)
    assert timing["chunks"] == full.timing["chunks"] == chunks > 3
    assert timing["chunks_done"] == len(range(0, chunks, 3))
    assert timing["back_pairs"] == full.local.nnz == full.timing["back_pairs_done"]
    taken = np.concatenate([np.arange(4 * k, 4 * k + 4) for k in range(0, chunks, 3)])
    taken = taken[taken < len(full.vocabulary)]
    assert timing["back_pairs_done"] == np.isin(full.local.indices, taken).sum()
    np.testing.assert_array_equal(partial.to_documents[taken], full.to_documents[taken])


def test_distinct_words_are_numpys_unique_with_inverse():
    rng = np.random.default_rng(3)
    for vocabulary, size in [(1, 5), (10, 0), (10, 3), (50, 400), (1000, 200)]:
        flat = rng.integers(0, vocabulary, size)
        rows, at = bounds._distinct(flat, vocabulary)
        want_rows, want_at = np.unique(flat, return_inverse=True)
        assert rows.dtype == at.dtype == np.int64
        assert rows.tolist() == want_rows.tolist() and at.tolist() == want_at.tolist()


def plain_first_dual_bound(cost, mass_q, mass_c, potentials, order, enough, first, near):
    """_dual_kernel by hand: each potential's dual bound (its sums in the kernel's order),
    taken one at a time in ``order``; stops at the first past ``enough``, or after
    ``first`` of them if the best is short of ``near`` x ``enough``."""
    n, m = cost.shape
    best, best_at = -np.inf, -1
    for tried, p in enumerate(order.tolist(), start=1):
        g = [min(cost[i, j] - potentials[p, i] for i in range(n)) for j in range(m)]
        total = 0.0
        for j in range(m):
            total += mass_c[j] * g[j]
        for i in range(n):
            total += mass_q[i] * min(cost[i, j] - g[j] for j in range(m))
        if total > best:
            best, best_at = total, p
        if best > enough:
            return best, p, p
        if tried == first and best < near * enough:
            break
    return best, -1, best_at


@pytest.mark.parametrize("shape", [(5, 40), (15, 9), (16, 16), (29, 31), (86, 86)])
def test_the_dual_kernel_is_a_plain_loop_bit_for_bit(shape):
    # both ways of the second minima (along the costs' rows below DUAL_ACROSS query words;
    # from it down a transposed copy, the first potential alone and the rest in batches
    # of DUAL_BATCH) give the plain loop's bound and potentials: the same minima, the
    # same sums in the same order, the same stops
    n, m = shape
    rng = np.random.default_rng(n * 1000 + m)
    cost = rng.random((n, m)) + 0.5
    mass_q, mass_c = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(m))
    potentials = rng.random((14, n)) * 0.4
    order = rng.permutation(14).astype(np.int64)
    values = [
        plain_first_dual_bound(cost, mass_q, mass_c, potentials, order[t : t + 1], np.inf, 8, 0.98)[
            0
        ]
        for t in range(14)
    ]
    ranked = sorted(values)
    cases = [
        np.inf,  # none is past it: the first 8, then a stop short of it
        (ranked[-1] + ranked[-2]) / 2,  # the best one alone is past it
        ranked[-1] * 1.001,  # none is past it, but the best is near: every potential
        ranked[0] / 2,  # the first is past it
    ]
    for enough in cases:
        for first in (1, 3, 8):
            want = plain_first_dual_bound(
                cost, mass_q, mass_c, potentials, order, enough, first, 0.98
            )
            got = bounds._dual_kernel(cost, mass_q, mass_c, potentials, order, enough, first, 0.98)
            assert got == want, (enough, first)


@pytest.mark.parametrize("threshold", [-1.0, 2.0, 2.5, 9.0, np.inf])
def test_take_below_is_the_masked_split(threshold):
    # bounds.take_below: the candidates whose lower part is at most the threshold, in
    # order, and the others packed in front, in order, with their lower parts: the split
    # a boolean mask gives; an infinite threshold takes every one, NaN too; ties taken
    rng = np.random.default_rng(5)
    lower = rng.integers(0, 10, 500).astype(np.float64)
    lower[rng.random(500) < 0.1] = np.nan
    candidates = np.sort(rng.choice(5000, 500, replace=False)).astype(np.int64)
    inside = lower <= threshold if threshold < np.inf else np.ones(500, dtype=bool)
    want_fresh, want_left, want_lower = candidates[inside], candidates[~inside], lower[~inside]
    fresh = np.full(500, -7, dtype=np.int64)
    packed, packed_lower = candidates.copy(), lower.copy()
    taken, left = bounds.take_below(packed, packed_lower, threshold, fresh)
    assert taken + left == 500 and (taken == 0) == (threshold < 0)
    assert np.array_equal(fresh[:taken], want_fresh) and (fresh[taken:] == -7).all()
    assert np.array_equal(packed[:left], want_left)
    assert np.array_equal(packed_lower[:left], want_lower, equal_nan=True)
