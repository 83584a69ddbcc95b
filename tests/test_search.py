"""Exact kNN search with lower-bound pruning (wmd.mode: knn): bounds, search, neighbour tables."""

import os
import signal

import numpy as np
import ot
import pyarrow as pa
import pytest
from test_wmd import documents, embeddings, random_corpus

from wmdeval.classification import knn
from wmdeval.core import io, schemas
from wmdeval.core.roles import query_roles
from wmdeval.core.variant import NeighbourTable
from wmdeval.distances.factory import prepare_variant
from wmdeval.distances.wmd import blocks, bounds, pairs, search, solver


def labelled(docs: pa.Table, n_classes: int = 3) -> pa.Table:
    y = np.arange(docs.num_rows) % n_classes
    return (
        docs.set_column(docs.schema.get_field_index("y"), "y", pa.array(y.astype(np.int32)))
        .set_column(
            docs.schema.get_field_index("label"), "label", pa.array([f"c{c}" for c in y.tolist()])
        )
        .cast(schemas.DOCUMENTS)
    )


def five_folds(n: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    rows = []
    for fold in range(5):
        test = set(rng.choice(n, n // 5, replace=False).tolist())
        rows += [(fold, i, "test" if i in test else "train") for i in range(n)]
    return _splits(rows)


def one_fold(n: int) -> pa.Table:
    return _splits([(0, i, "test" if i % 3 == 0 else "train") for i in range(n)])


def _splits(rows) -> pa.Table:
    fold, doc_id, subset = zip(*rows, strict=True)
    return pa.table(
        {
            "fold": pa.array(fold, pa.int16()),
            "doc_id": pa.array(doc_id, pa.int32()),
            "subset": subset,
        }
    ).cast(schemas.SPLITS)


def full_matrix(inputs: solver.WmdInputs, splits: pa.Table | None) -> np.ndarray:
    """The full mode's matrix: blocks in the solve order, gathered."""
    order, n_rows = pairs.solve_order(inputs.doc_ids, splits)
    ordered = solver.reorder(inputs, order)
    tables = [
        blocks.to_document_positions(solver.solve_block(ordered, b, 3, n_rows=n_rows), order)
        for b in range(3)
    ]
    unsolved = np.zeros(inputs.n, dtype=bool)
    unsolved[order[n_rows:]] = True
    return blocks.gather(inputs.n, tables, unsolved)


def knn_tables(inputs, splits, settings=None, n_shards=1, threads=1, stats=None):
    folds = io.fold_indices(splits, inputs.doc_ids)
    parts = [
        search.search_shard(inputs, folds, settings, s, n_shards, threads, stats)
        for s in range(n_shards)
    ]
    return pa.concat_tables([p for p, _ in parts]), pa.concat_tables([c for _, c in parts])


def scores_both_ways(docs, emb, splits, weighting, settings=None, **kwargs):
    inputs = solver.prepare(docs, emb, weighting)
    slug = "wmd" if weighting == "bow" else "wmd-tfidf"
    doc_ids = docs.column("doc_id").to_numpy()
    full = knn.evaluate_dataset(
        docs, splits, {slug: (doc_ids, full_matrix(inputs, splits))}, settings, "t", "original"
    )
    tables = knn_tables(inputs, splits, settings, **kwargs)
    pruned = knn.evaluate_dataset(
        docs, splits, {}, settings, "t", "original", neighbour_tables={slug: tables}
    )
    return full.to_pylist(), pruned.to_pylist()


# --------------------------------------------------------------------------- bounds


@pytest.mark.parametrize("weighting", ["bow", "tfidf"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounds_never_exceed_the_exact_wmd(weighting, seed):
    docs, emb = random_corpus(seed, 40, n_words=60, dim=8, max_len=15)
    inputs = solver.prepare(docs, emb, weighting)
    n = inputs.n
    exact = np.array(
        [
            [solver.wmd_pair(inputs, min(i, j), max(i, j)) if i != j else 0.0 for j in range(n)]
            for i in range(n)
        ]
    )
    lower = bounds.lower_bounds(inputs, np.arange(n))
    defined = np.isfinite(exact)
    assert np.array_equal(np.isfinite(lower), defined)
    assert (lower[defined] <= exact[defined] + bounds.safety_margin(inputs, exact[defined])).all()
    assert (lower[defined] > 0.5 * exact[defined]).mean() > 0.9  # and they are not trivial


def test_relaxed_wmd_is_the_plain_definition():
    docs, emb = random_corpus(5, 25, n_words=40, dim=5, max_len=10)
    inputs = solver.prepare(docs, emb, "bow")
    got = bounds.relaxed_wmd(inputs, np.array([3, 0, 17]))
    for r, i in enumerate([3, 0, 17]):
        for j in range(inputs.n):
            cost = solver.cost_matrix(inputs, inputs.indices[i], inputs.indices[j])
            plain = max(inputs.weights[i] @ cost.min(axis=1), inputs.weights[j] @ cost.min(axis=0))
            assert got[r, j] == pytest.approx(plain, rel=1e-6)  # float32 word distances
    # WCD by hand: the distance of the weighted means
    wcd = bounds.word_centroid_distance(inputs, np.array([3]))
    mean = lambda k: inputs.weights[k] @ inputs.vectors[inputs.indices[k]]  # noqa: E731
    assert wcd[0, 8] == pytest.approx(np.linalg.norm(mean(3) - mean(8)), abs=1e-7)


def test_a_one_word_document_has_a_bound_equal_to_its_wmd():
    docs = documents([{"a": 1}, {"b": 1, "c": 3}, {"a": 2, "c": 1}])
    emb = embeddings({"a": [0.0, 0.0], "b": [3.0, 4.0], "c": [1.0, 0.0]})
    inputs = solver.prepare(docs, emb, "bow")
    lower = bounds.lower_bounds(inputs, np.array([0]))
    # one word: its whole mass goes to every word of the other side, so RWMD = WMD
    assert lower[0, 1] == pytest.approx(0.25 * 5 + 0.75 * 1, abs=1e-15)
    assert lower[0, 1] == pytest.approx(solver.wmd_pair(inputs, 0, 1), abs=1e-15)


def plain_constrained_transfers(a, b, cost) -> float:
    """ICT the straightforward way: every word of one side fills the other side's words
    in increasing cost order, each up to its weight; the larger side."""

    def side(mass, capacity, cost):
        total = 0.0
        for i in range(len(mass)):
            left = mass[i]
            for j in sorted(range(len(capacity)), key=lambda j: cost[i, j]):
                move = min(left, capacity[j])
                total += move * cost[i, j]
                left -= move
        return total

    return max(side(a, b, cost), side(b, a, cost.T))


def test_constrained_transfers_by_hand():
    # a: x 1/2, y 1/2; b: x 1/4, z 3/4 on a line x = 0, y = 1, z = 3.
    # a -> b: x keeps 1/4 in place and sends 1/4 to z (3); y sends 1/2 to z (2) -> 1.75.
    # b -> a: x 1/4 stays (0); z 3/4 fills y (1/2 at 2), then x (1/4 at 3) -> 1.75.
    # RWMD: a -> b sends all of x to x: 1/2 * 2 = 1; b -> a: 3/4 * 2 = 1.5. WMD: 1.75.
    docs = documents([{"x": 1, "y": 1}, {"x": 1, "z": 3}])
    emb = embeddings({"x": [0.0], "y": [1.0], "z": [3.0]})
    inputs = solver.prepare(docs, emb, "bow")
    got = bounds.constrained_transfers(inputs, 0, np.array([1]))
    assert got[0] == pytest.approx(1.75, abs=1e-15)
    assert bounds.relaxed_wmd(inputs, np.array([0]))[0, 1] == pytest.approx(1.5, abs=1e-6)
    assert solver.wmd_pair(inputs, 0, 1) == pytest.approx(1.75, abs=1e-15)


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_constrained_transfers_lie_between_rwmd_and_the_exact_wmd(weighting, seed):
    # long documents over a small vocabulary: many shared words, many words per side (the
    # kernel's sorted fallback), and one-word documents
    docs, emb = random_corpus(seed, 40, n_words=50, dim=6, max_len=45)
    rows = docs.to_pylist()
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in rows]
    bags[5] = {rows[0]["words"][0]: 1}
    bags[6] = {w: 1 for w in rows[1]["words"][:2]}
    bags[7] = {w: 40 if k == 0 else 1 for k, w in enumerate(rows[2]["words"])}  # one heavy word
    inputs = solver.prepare(documents(bags), emb, weighting)
    tighter = 0
    for q in range(0, inputs.n, 3):
        others = np.array([c for c in range(inputs.n) if c != q])
        got = bounds.constrained_transfers(inputs, q, others)
        rwmd = bounds.lower_bounds(inputs, np.array([q]))[0, others]
        exact = np.array([solver.wmd_pair(inputs, min(q, c), max(q, c)) for c in others])
        for value, c in zip(got, others, strict=True):
            cost = solver.cost_matrix(inputs, inputs.indices[q], inputs.indices[c])
            plain = plain_constrained_transfers(inputs.weights[q], inputs.weights[c], cost)
            assert value == pytest.approx(plain, rel=1e-12, abs=1e-15)
            full = ot.emd2(inputs.weights[q], inputs.weights[c], cost)
            assert value <= full + 1e-12
        assert (got <= exact + bounds.safety_margin(inputs, exact)).all()
        # at least RWMD with OMR (stored in float32 word costs: within the margin)
        relaxed = bounds.LowerBounds(inputs, np.array([q])).rows(np.array([0]), wcd=False)[0]
        assert (got >= relaxed[others] - bounds.safety_margin(inputs, relaxed[others])).all()
        tighter += int(np.count_nonzero(got > rwmd + 1e-9))
    assert tighter > 50  # and often strictly tighter than every cheap bound


def plain_dual_bound(a, b, cost, f) -> float:
    """Weak duality by hand: g_j = min_i (cost_ij - f_i), then f'_i = min_j (cost_ij - g_j)."""
    g = [min(cost[i, j] - f[i] for i in range(len(a))) for j in range(len(b))]
    f2 = [min(cost[i, j] - g[j] for j in range(len(b))) for i in range(len(a))]
    return float(np.dot(a, f2) + np.dot(b, g))


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
@pytest.mark.parametrize("seed", [0, 1])
def test_dual_bounds_from_solved_pairs_lie_below_the_exact_wmd(weighting, seed):
    docs, emb = random_corpus(seed, 30, n_words=40, dim=6, max_len=25)
    inputs = solver.prepare(docs, emb, weighting)
    rng = np.random.default_rng(seed)
    near = 0
    for q in range(0, inputs.n, 5):
        others = [c for c in range(inputs.n) if c != q]
        potentials = []
        for c in others[:4]:
            value, duals = solver.solve_pair(inputs, q, c)
            assert value == solver.wmd_pair(inputs, q, c)  # the same solve, bit for bit
            (rows_s, u), (rows_t, v) = duals
            cost = solver.cost_matrix(inputs, rows_s, rows_t)
            assert (u[:, None] + v[None, :] <= cost + 1e-12).all()  # a feasible dual...
            source = inputs.doc_ids[q] < inputs.doc_ids[c]
            potentials.append(bounds.query_potential(inputs, q, duals[1 if source else 0]))
        potentials.append(rng.standard_normal(len(inputs.indices[q])))  # any f is valid
        stack = np.array(potentials)
        for c in others[4:]:
            exact = solver.wmd_pair(inputs, q, c)
            got = bounds.dual_bound(inputs, q, c, stack, np.inf)
            cost = solver.cost_matrix(inputs, inputs.indices[q], inputs.indices[c])
            a, b = inputs.weights[q], inputs.weights[c]
            plain = max(plain_dual_bound(a, b, cost, f) for f in stack)
            assert got == pytest.approx(plain, rel=1e-12, abs=1e-14)
            assert got <= exact + 1e-12
            near += got > 0.9 * exact
            # stopping at the first potential above `enough` still gives a bound
            first = plain_dual_bound(a, b, cost, stack[0])
            assert bounds.dual_bound(inputs, q, c, stack, first - 1.0) == pytest.approx(
                first, abs=1e-14
            )
    assert near > 20  # and the potentials of solved pairs make them tight


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_a_querys_word_costs_give_each_pairs_matrix_bit_for_bit(monkeypatch, weighting):
    # WordCosts computes each candidate word's costs to the query's words once; every
    # matrix it gathers is pair_costs' of the pair, bit for bit (Euclidean and WRD's
    # cosine, 40 dimensions, a word the query holds too), in any order of asking, and
    # past its byte limit it computes the matrix whole, the same bits again
    docs, emb = random_corpus(5, 60, n_words=80, dim=40, max_len=20)
    inputs = solver.prepare(docs, emb, weighting)
    for q in (0, 7):
        costs = bounds.WordCosts(inputs, q)
        for c in [*range(inputs.n), *range(inputs.n - 1, -1, -3)]:
            want = bounds.pair_costs(inputs, inputs.indices[q], inputs.indices[c])
            got = costs.matrix(inputs.indices[c])
            assert got.tobytes() == want.tobytes() and got.flags.c_contiguous, (q, c)
        assert costs.count == len(np.unique(np.concatenate(inputs.indices)))
    monkeypatch.setattr(bounds, "WORD_COST_BYTES", 8 * 5 * len(inputs.indices[3]))
    costs = bounds.WordCosts(inputs, 3)
    for c in range(inputs.n):
        want = bounds.pair_costs(inputs, inputs.indices[3], inputs.indices[c])
        assert costs.matrix(inputs.indices[c]).tobytes() == want.tobytes()
    assert costs.count <= 5
    # several documents' words at once, repeated words among them: ICT's batches
    costs = bounds.WordCosts(inputs, 0)
    batch = np.arange(1, 30)
    both = np.concatenate([inputs.indices[c] for c in batch])
    assert len(np.unique(both)) < len(both)
    want = bounds.pair_costs(inputs, inputs.indices[0], both)
    assert costs.matrix(both).tobytes() == want.tobytes()
    plain, fresh = {}, {}
    ict = bounds.constrained_transfers(inputs, 0, batch, plain)
    assert bounds.constrained_transfers(inputs, 0, batch, fresh, costs).tobytes() == ict.tobytes()
    assert all(fresh[c].tobytes() == plain[c].tobytes() for c in batch.tolist())


@pytest.mark.parametrize("weighting", ["bow", "wrd"])
def test_potentials_from_the_solves_own_costs_are_the_recomputed_ones(weighting):
    # solve_pair_costs: the same solve as solve_pair, plus the matrix it solved with;
    # query_potential given it (either side, shared words dropped or not) computes only
    # the other rows and agrees with the potential computed from scratch
    docs, emb = random_corpus(5, 24, n_words=25, dim=6, max_len=14)
    inputs = solver.prepare(docs, emb, weighting)
    checked = 0
    for q in range(inputs.n):
        for c in range(inputs.n):
            value, duals, costs = solver.solve_pair_costs(inputs, q, c)
            plain, plain_duals = solver.solve_pair(inputs, q, c)
            assert np.array_equal([value], [plain], equal_nan=True)  # the same bits
            assert (duals is None) == (plain_duals is None)
            if duals is None:
                assert costs is None
                continue
            keep_s, keep_t, cost = costs
            source, target = (q, c) if inputs.doc_ids[q] < inputs.doc_ids[c] else (c, q)
            assert np.array_equal(duals[0][0], inputs.indices[source][keep_s])
            assert np.array_equal(duals[1][0], inputs.indices[target][keep_t])
            assert np.array_equal(cost, solver.cost_matrix(inputs, duals[0][0], duals[1][0]))
            for doc, other, known in (
                (source, duals[1], (keep_s, cost)),
                (target, duals[0], (keep_t, cost.T)),
            ):
                fresh = bounds.query_potential(inputs, doc, other)
                reused = bounds.query_potential(inputs, doc, other, known)
                assert reused == pytest.approx(fresh, rel=1e-12, abs=1e-12)
                checked += 1
    assert checked > 300


def plain_ascent(a, b, cost, f, enough, steps, trial, near, target) -> float:
    """dual_ascent by hand, in plain loops: the dual bound of f, then Polyak steps along a -
    (the mass of b whose c-transform minimiser is i), the step's mean removed, capped at
    the largest cost over the step's largest entry, f centred after each. Every sum in the
    kernel's order: the ascent's path turns on near-ties of the c-transform's minimisers,
    so sums rounded in another order end at another (equally valid) bound."""
    n, m = len(a), len(b)
    f = [float(x) for x in f]
    best = -np.inf
    top = max(float(cost[i, j]) for i in range(n) for j in range(m))
    for step in range(steps):
        g, low_at = [], []
        for j in range(m):
            values = [cost[i, j] - f[i] for i in range(n)]
            low_at.append(min(range(n), key=lambda i, values=values: (values[i], i)))
            g.append(values[low_at[-1]])
        total = 0.0
        for j in range(m):
            total += b[j] * g[j]
        for i in range(n):
            f[i] = min(cost[i, j] - g[j] for j in range(m))
            total += a[i] * f[i]
        best = max(best, total)
        if best > enough or (step + 1 == trial and best < near * enough):
            return best
        grad = [float(x) for x in a]
        for j, i in enumerate(low_at):
            grad[i] -= b[j]
        shift = 0.0
        for x in grad:
            shift += x
        grad = [x - shift / n for x in grad]
        norm = 0.0
        for x in grad:
            norm += x * x
        largest = max(abs(x) for x in grad)
        if largest <= 1e-12:
            return best
        move = min((target * enough - total) / norm, top / largest)
        f = [x + move * d for x, d in zip(f, grad, strict=True)]
        centre = 0.0
        for x in f:
            centre += x
        f = [x - centre / n for x in f]
    return best


@pytest.mark.parametrize("weighting", ["bow", "tfidf", "wrd"])
def test_dual_ascent_is_a_dual_bound_raised_toward_the_exact_wmd(weighting):
    # every value dual_ascent returns is a dual bound: below the exact WMD (ot.emd2 on
    # the whole problem), at least the dual bound of its start, the plain loop's value;
    # from the potential of another of the query's solves, as the search starts it, it
    # passes 0.9 of the WMD in most pairs, far more often than that potential alone (its
    # median here: 0.85 of the WMD)
    docs, emb = random_corpus(6, 30, n_words=40, dim=6, max_len=20)
    inputs = solver.prepare(docs, emb, weighting)
    rng = np.random.default_rng(6)
    raised = proven = alone = pairs_seen = 0
    for q in range(0, inputs.n, 3):
        if inputs.empty[q]:
            continue
        value, duals = solver.solve_pair(inputs, q, (q + 1) % inputs.n)
        source = inputs.doc_ids[q] < inputs.doc_ids[(q + 1) % inputs.n]
        solved = bounds.query_potential(inputs, q, duals[1 if source else 0])
        for c in range(2, inputs.n, 4):
            if c in (q, (q + 1) % inputs.n) or inputs.empty[c]:
                continue
            a, b = inputs.weights[q], inputs.weights[c]
            cost = solver.cost_matrix(inputs, inputs.indices[q], inputs.indices[c])
            exact = ot.emd2(a, b, cost)
            for start in (rng.standard_normal(len(a)) * 0.1, solved):
                first = bounds.dual_bound(inputs, q, c, start[None, :], np.inf, cost)
                for enough in (0.98 * exact, 2.0 * exact):
                    got = bounds.dual_ascent(inputs, q, c, start, enough, cost)
                    assert got <= exact + 1e-12
                    assert got >= first - 1e-12
                    plain = plain_ascent(
                        a,
                        b,
                        cost,
                        start,
                        enough,
                        bounds.ASCENT_STEPS,
                        bounds.ASCENT_TRIAL,
                        bounds.ASCENT_NEAR,
                        bounds.ASCENT_TARGET,
                    )
                    assert got == pytest.approx(plain, rel=1e-12, abs=1e-14)
                raised += got > first + 1e-9
            pairs_seen += 1
            proven += bounds.dual_ascent(inputs, q, c, solved, 0.9 * exact, cost) > 0.9 * exact
            alone += first > 0.9 * exact
    assert raised > pairs_seen
    assert proven > pairs_seen // 2 and proven > 1.5 * alone, (proven, alone, pairs_seen)


def test_dual_ascent_of_a_one_word_document_is_its_exact_wmd():
    # a one-word query sends its whole mass to every word of the other document: WMD =
    # sum_j b_j cost_1j, which any potential's dual bound already is; the ascent must
    # not move its potential (its supergradient is the rounding of sum(a) - sum(b)
    # alone; unchecked, that drove the potential to 1e16 and the bound above the WMD)
    docs = documents([{"w01": 1}, {"w01": 2, "w02": 1, "w05": 3}])
    emb = embeddings({"w01": [0.0, 0.0], "w02": [3.0, 4.0], "w05": [1.0, 0.0]})
    inputs = solver.prepare(docs, emb, "bow")
    want = (1 * 0.0 + 1 * 5.0 + 3 * 1.0) / 6
    for start in (0.0, 0.5, -3.0):
        got = bounds.dual_ascent(inputs, 0, 1, np.array([start]), 10.0)
        assert got == pytest.approx(want, rel=1e-12)
        assert got <= solver.wmd_pair(inputs, 0, 1) + bounds.safety_margin(inputs, want)


def test_a_potential_of_the_pair_itself_gives_its_exact_wmd():
    docs, emb = random_corpus(3, 12, n_words=30, dim=5, max_len=12)
    inputs = solver.prepare(docs, emb, "bow")
    for q, c in ((0, 1), (5, 2), (7, 11)):
        value, duals = solver.solve_pair(inputs, q, c)
        source = inputs.doc_ids[q] < inputs.doc_ids[c]
        f = bounds.query_potential(inputs, q, duals[1 if source else 0])
        got = bounds.dual_bound(inputs, q, c, f[None, :], np.inf)
        assert got == pytest.approx(value, rel=1e-12)  # strong duality


# --------------------------------------------------------------------------- identical scores


@pytest.mark.parametrize("weighting", ["bow", "tfidf"])
@pytest.mark.parametrize("folds", ["five", "one"])
def test_knn_mode_gives_the_scores_of_the_full_matrix(weighting, folds):
    docs, emb = random_corpus(7, 90, n_words=50, dim=6, max_len=12)
    docs = labelled(docs)
    splits = five_folds(90) if folds == "five" else one_fold(90)
    full, pruned = scores_both_ways(docs, emb, splits, weighting)
    assert pruned == full


def awkward_labelled() -> tuple[pa.Table, pa.Table]:
    """Exact ties at the k-th distance, duplicates (distance 0), empty and one-word
    documents: the cases where a pruned search could go wrong."""
    docs, emb = random_corpus(3, 70, n_words=30, dim=4, max_len=8)
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in docs.to_pylist()]
    bags[4] = bags[11] = {}
    for k in range(20, 44):  # many copies: every query ties with all of them
        bags[k] = {"w01": 1, "w02": 1}
    for k in range(50, 56):
        bags[k] = dict(bags[5])  # duplicates of document 5
    bags[60] = {"w03": 2}
    bags[61] = {"w03": 1}
    bags[62] = {"w07": 1}
    return labelled(documents(bags)), emb


@pytest.mark.parametrize("weighting", ["bow", "tfidf"])
@pytest.mark.parametrize("mode", ["error", "drop"])
def test_identical_scores_with_ties_duplicates_empty_and_one_word_documents(weighting, mode):
    docs, emb = awkward_labelled()
    settings = {"empty_documents": mode, "knn": {"k": [1, 3, 5]}, "wknn": {"k": 5}}
    full, pruned = scores_both_ways(docs, emb, five_folds(70, seed=2), weighting, settings)
    assert pruned == full


def relaxed_tables(inputs, splits, settings=None, n_shards=1):
    folds = io.fold_indices(splits, inputs.doc_ids)
    parts = [
        search.search_shard(inputs, folds, settings, s, n_shards, relaxed=True)
        for s in range(n_shards)
    ]
    return tuple(pa.concat_tables([p[k] for p in parts]) for k in range(4))


@pytest.mark.parametrize("corpus", ["awkward", "random"])
def test_rwmd_lists_from_the_search_score_as_the_dense_rwmd_matrix(corpus):
    """RWMD as a method in knn mode: the WMD search's lists (from its cheap bounds) give
    the dense matrix's scores, ties at the k-th distance and empty documents included;
    the WMD tables are those of a search without them."""
    from wmdeval.distances import embedding

    if corpus == "awkward":
        docs, emb = awkward_labelled()
        splits = five_folds(70, seed=2)
        settings = {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 5}}
    else:
        docs, emb = random_corpus(7, 90, n_words=50, dim=6, max_len=12)
        docs, splits, settings = labelled(docs), one_fold(90), None
    inputs = solver.prepare(docs, emb, "bow")
    doc_ids = docs.column("doc_id").to_numpy()
    dense = embedding.relaxed_wmd_matrix(inputs)
    full = knn.evaluate_dataset(docs, splits, {"rwmd": (doc_ids, dense)}, settings, "t", "o")
    wmd_pairs, wmd_certs, pairs_table, certs = relaxed_tables(inputs, splits, settings, 3)
    listed = knn.evaluate_dataset(
        docs, splits, {}, settings, "t", "o", neighbour_tables={"rwmd": (pairs_table, certs)}
    )
    assert listed.to_pylist() == full.to_pylist()
    plain_pairs, plain_certs = knn_tables(inputs, splits, settings, n_shards=3)
    assert wmd_pairs.equals(plain_pairs) and wmd_certs.equals(plain_certs)
    # every listed value is the dense matrix's, and the lists are far from every pair
    q = np.searchsorted(doc_ids, pairs_table.column("query").to_numpy())
    c = np.searchsorted(doc_ids, pairs_table.column("candidate").to_numpy())
    assert pairs_table.column("distance").to_numpy().tobytes() == dense[q, c].tobytes()
    assert len(pairs_table) < 0.5 * np.isfinite(dense).sum()


def test_ties_at_the_kth_distance_are_solved_not_pruned():
    docs, emb = awkward_labelled()
    inputs = solver.prepare(docs, emb, "bow")
    splits = five_folds(70, seed=2)
    settings = {"knn": {"k": [1, 3]}, "wknn": {"k": 3}}
    matrix = full_matrix(inputs, splits).astype(np.float64)
    pair_table, _ = knn_tables(inputs, splits, settings)
    held = set(
        zip(
            pair_table.column("query").to_pylist(),
            pair_table.column("candidate").to_pylist(),
            strict=True,
        )
    )
    folds = io.fold_indices(splits, inputs.doc_ids)
    tied = 0
    for role in query_roles(folds, inputs.empty, settings):
        for q in role.queries[~inputs.empty[role.queries]].tolist():
            row = matrix[q, role.candidates]
            kth = np.sort(row[np.isfinite(row)])[role.k - 1]
            at_kth = role.candidates[row == kth].tolist()
            tied += len(at_kth) > 1
            # every candidate at or below the k-th distance was solved
            assert {c for c in role.candidates[row <= kth].tolist()} <= {
                c for (qq, c) in held if qq == q
            }
    assert tied > 50  # the copies make many exact ties at the k-th distance


# --------------------------------------------------------------------------- work and layout


def clustered(
    n: int, seed: int = 0, per_topic: int = 25, sizes: tuple[int, int] = (4, 12)
) -> tuple[pa.Table, pa.Table]:
    """Documents drawn from topics over separate word groups: neighbours are few and
    clear, as in real corpora, so bounds prune most candidates. ``sizes``: the range of
    distinct words per document."""
    rng = np.random.default_rng(seed)
    n_topics = 6
    centres = rng.standard_normal((n_topics, 10)) * 3
    vectors = {
        f"t{t}w{w}": (centres[t] + rng.standard_normal(10)).tolist()
        for t in range(n_topics)
        for w in range(per_topic)
    }
    bags = []
    for i in range(n):
        topic = i % n_topics
        chosen = rng.choice(per_topic, int(rng.integers(*sizes)), replace=False)
        bags.append({f"t{topic}w{w}": int(rng.integers(1, 4)) for w in chosen})
    y = np.arange(n) % n_topics
    docs = documents(bags)
    docs = docs.set_column(docs.schema.get_field_index("y"), "y", pa.array(y.astype(np.int32)))
    return docs.cast(schemas.DOCUMENTS), embeddings(vectors)


def test_pruning_solves_a_fraction_of_the_pairs_with_identical_scores():
    docs, emb = clustered(300)
    splits = five_folds(300)
    stats = search.SearchStats()
    full, pruned = scores_both_ways(docs, emb, splits, "bow", stats=stats)
    assert pruned == full
    all_pairs = 300 * 299 // 2
    assert stats.solves < 0.35 * all_pairs, (stats.solves, all_pairs)
    assert stats.pairs < stats.candidates


def test_the_tighter_bound_saves_solves_not_scores(monkeypatch):
    docs, emb = clustered(300, per_topic=40, sizes=(10, 30))
    splits = five_folds(300)
    with_ict = search.SearchStats()
    full, pruned = scores_both_ways(docs, emb, splits, "bow", stats=with_ict)
    # without ICT: the tight bound of a candidate is its cheap bound
    monkeypatch.setattr(
        search,
        "constrained_transfers",
        lambda inputs, q, c, costs=None, word_costs=None: np.zeros(len(c)),
    )
    without = search.SearchStats()
    _, pruned_without = scores_both_ways(docs, emb, splits, "bow", stats=without)
    assert pruned == pruned_without == full
    # (this corpus is near the floor of k solves per list already; 20 Newsgroups is not:
    # benchmarks/knn_pruning.py)
    assert with_ict.solves < without.solves, (with_ict.solves, without.solves)
    assert with_ict.tight >= with_ict.solves  # every solved pair passed the bound first


def test_a_query_stops_computing_ict_bounds_that_prove_nothing(monkeypatch):
    docs, emb = clustered(300, per_topic=40, sizes=(10, 30))
    splits = five_folds(300)
    total = {}
    for trial in (8, 10**9):  # judged after 8 bounds, never judged
        monkeypatch.setattr(search, "ICT_TRIAL", trial)
        calls: dict[int, int] = {}

        def useless(inputs, q, c, costs=None, word_costs=None, calls=calls):  # never above 0
            calls[q] = calls.get(q, 0) + len(c)
            return np.zeros(len(c))

        monkeypatch.setattr(search, "constrained_transfers", useless)
        stats = search.SearchStats()
        full, pruned = scores_both_ways(docs, emb, splits, "bow", stats=stats)
        assert pruned == full
        total[trial] = sum(calls.values())
    # after the trial, none (bounds computed before a list's k nearest were known, with
    # no finite limit to prove anything against, are not judged and still computed)
    assert total[8] < 0.8 * total[10**9], total


@pytest.mark.parametrize("weighting", ["bow", "tfidf"])
def test_a_candidate_its_tight_bound_leaves_first_skips_the_heap(monkeypatch, weighting):
    # _Search._wait_tightened hands a stream's head straight to the visit where a push
    # and the next pop would give it back (ICT left its bound, none waiting is below
    # it): the search that always pushes makes the same tables, byte for byte, and the
    # same bounds and solves; with ICT judged useless early, many candidates take it
    docs, emb = clustered(300, per_topic=40, sizes=(10, 30))
    splits = five_folds(300)
    inputs = solver.prepare(docs, emb, weighting)
    monkeypatch.setattr(search, "ICT_TRIAL", 8)
    wait = search._Search._wait_tightened
    runs = {}
    for always_push in (False, True):
        taken = []

        def counted(self, query, visit, c, lb, always_push=always_push, taken=taken):
            straight = wait(self, query, visit, c, lb)
            if straight and always_push:
                search.heapq.heappush(visit.waiting, (query.tight[c], c))
                return False
            taken.append(straight)
            return straight

        monkeypatch.setattr(search._Search, "_wait_tightened", counted)
        stats = search.SearchStats()
        tables = knn_tables(inputs, splits, stats=stats)
        runs[always_push] = (tables, stats, taken)
    (tables, stats, taken), (pushed, pushed_stats, _) = runs[False], runs[True]
    assert tables[0].equals(pushed[0]) and tables[1].equals(pushed[1])
    for field in ("solves", "tight", "duals", "ascents", "full_bounds"):
        assert getattr(stats, field) == getattr(pushed_stats, field), field
    assert sum(taken) > len(taken) // 20, (sum(taken), len(taken))


@pytest.mark.parametrize("first", [1, bounds.DUAL_FIRST, search.POTENTIALS])
def test_the_dual_bounds_tries_change_solves_not_scores(monkeypatch, first):
    monkeypatch.setattr(bounds, "DUAL_FIRST", first)  # tries before judging the bound
    docs, emb = clustered(300, per_topic=40, sizes=(10, 30))
    splits = five_folds(300)
    results = {}
    for tries in (1, search.POTENTIALS):
        monkeypatch.setattr(search, "DUAL_TRIES", tries)
        stats = search.SearchStats()
        full, pruned = scores_both_ways(docs, emb, splits, "bow", stats=stats)
        assert pruned == full
        results[tries] = stats.solves
    assert results[search.POTENTIALS] <= results[1], results


def test_shards_and_threads_do_not_change_a_byte():
    docs, emb = clustered(120, seed=3)
    splits = five_folds(120)
    inputs = solver.prepare(docs, emb, "tfidf")
    one = knn_tables(inputs, splits)
    for n_shards, threads in ((3, 1), (4, 2)):
        other = knn_tables(inputs, splits, n_shards=n_shards, threads=threads)
        assert other[0].equals(one[0]) and other[1].equals(one[1])


def test_set_up_batches_do_not_change_a_byte(monkeypatch):
    # a shard whose bounds' tables exceed SETUP_TABLE_BYTES sets up and searches a batch
    # of its queries at a time: the four tables (RWMD's too) are the same bytes as in one
    # piece, on one worker and on two, and every batch's tables fit the budget
    docs, emb = clustered(120, seed=3)
    inputs = solver.prepare(docs, emb, "bow")
    folds = io.fold_indices(five_folds(120), inputs.doc_ids)
    whole = search.SearchStats()
    one = search.search_shard(inputs, folds, None, 0, 2, 1, whole, relaxed=True)
    queries = np.unique(np.concatenate([np.concatenate(f) for f in folds]))
    mine = search.query_shards(inputs.sizes, queries, 2)[0]
    assert len(search.shard_batches(inputs, mine)) == 1  # the default budget: one piece
    budget = 4 * (12 * inputs.n + len(inputs.vectors) * 3)
    monkeypatch.setattr(pairs, "SETUP_TABLE_BYTES", budget)
    batches = search.shard_batches(inputs, mine)
    assert len(batches) > 5 and np.array_equal(np.concatenate(batches), mine)
    words = [inputs.indices[q] for q in mine.tolist()]
    runs = pairs.setup_batches(words, inputs.n, len(inputs.vectors))
    assert pairs.setup_table_bytes(words, inputs.n, len(inputs.vectors), runs) <= budget
    for workers in (1, 2):
        stats = search.SearchStats()
        batched = search.search_shard(inputs, folds, None, 0, 2, workers, stats, relaxed=True)
        assert all(t.equals(u) for t, u in zip(batched, one, strict=True))
        assert stats.queries == whole.queries and stats.pairs == whole.pairs


def test_set_up_batches_by_hand():
    # 10 documents, 6 words: tables of a run cost 4 x (its distinct words x 10 + 6 x its
    # queries) bytes
    words = [np.array([0, 1]), np.array([1, 2]), np.array([3]), np.array([4, 5]), np.array([0])]
    # 2 words, 1 query: 104; 3 words, 2 queries: 168; 4 words, 3: 232; 6, 4: 336; 6, 5: 360
    assert pairs.setup_batches(words, 10, 6, budget=360) == [(0, 5)]
    assert pairs.setup_batches(words, 10, 6, budget=359) == [(0, 4), (4, 5)]
    assert pairs.setup_batches(words, 10, 6, budget=232) == [(0, 3), (3, 5)]
    assert pairs.setup_batches(words, 10, 6, budget=200) == [(0, 2), (2, 4), (4, 5)]
    # a query alone above the budget is a run of its own
    assert pairs.setup_batches(words, 10, 6, budget=1) == [(i, i + 1) for i in range(5)]
    assert pairs.setup_batches([], 10, 6) == []
    runs = [(0, 2), (2, 5)]
    assert pairs.setup_table_bytes(words, 10, 6, runs) == max(4 * (3 * 10 + 12), 4 * (4 * 10 + 18))


#: SearchStats counts that depend on each query's own search alone: the same for any
#: number of workers (the solves differ by the duplicates only)
PER_QUERY = ("pairs", "candidates", "reused", "floored", "floored_candidates", "tight", "duals")


def test_workers_change_no_byte_and_their_stats_add_up():
    # the queries run in worker processes, a chunk at a time: the four tables (RWMD's
    # too) are the same bytes for 1, 2 and 3 workers, and the workers' counts add up to
    # the one-worker search's, plus one solve per pair a second worker solved again
    docs, emb = clustered(150, seed=4)
    inputs = solver.prepare(docs, emb, "bow")
    folds = io.fold_indices(five_folds(150, seed=2), inputs.doc_ids)
    runs = {}
    for workers in (1, 2, 3):
        stats = search.SearchStats()
        tables = search.search_shard(inputs, folds, None, 0, 1, workers, stats, relaxed=True)
        runs[workers] = (tables, stats)
    one_tables, one = runs[1]
    assert one.duplicates == 0 and one.worker_seconds == 0.0
    for workers in (2, 3):
        tables, stats = runs[workers]
        assert len(tables) == 4
        assert all(t.equals(u) for t, u in zip(tables, one_tables, strict=True))
        assert stats.solves == one.solves + stats.duplicates
        assert 0 < stats.duplicates < stats.solves
        for name in (*PER_QUERY, "ascents", "queries"):
            assert getattr(stats, name) == getattr(one, name), name
        assert stats.worker_seconds > 0 and stats.tight_seconds > 0


def test_query_chunks_cover_the_job_and_shrink_toward_its_end():
    assert search._chunks(10, 1) == [(0, 3), (3, 5), (5, 7), (7, 8), (8, 9), (9, 10)]
    assert search._chunks(0, 4) == []
    for count, workers in ((1, 3), (241, 2), (814, 16), (5000, 3)):
        chunks = search._chunks(count, workers)
        sizes = [r1 - r0 for r0, r1 in chunks]
        assert chunks[0][0] == 0 and chunks[-1][1] == count
        assert all(a[1] == b[0] for a, b in zip(chunks[:-1], chunks[1:], strict=True))
        assert sizes == sorted(sizes, reverse=True) and max(sizes) <= search.BOUND_ROWS
        assert sizes[-1] == 1


def test_a_workers_error_fails_the_search_with_its_message(monkeypatch):
    docs, emb = clustered(90, seed=5)
    inputs = solver.prepare(docs, emb, "bow")
    folds = io.fold_indices(five_folds(90), inputs.doc_ids)
    parent = os.getpid()
    solve = search.solve_pair_costs

    def failing(inputs, q, c):
        if os.getpid() != parent and q == 40:
            raise ValueError(f"no solve for query {q}")
        return solve(inputs, q, c)

    monkeypatch.setattr(search, "solve_pair_costs", failing)
    with pytest.raises(ValueError, match="no solve for query 40"):
        search.search_shard(inputs, folds, None, 0, 1, 2)

    def killed(inputs, q, c):
        if os.getpid() != parent and q == 40:
            os.kill(os.getpid(), signal.SIGKILL)
        return solve(inputs, q, c)

    monkeypatch.setattr(search, "solve_pair_costs", killed)
    with pytest.raises(io.WmdevalError, match="a worker process died"):
        search.search_shard(inputs, folds, None, 0, 1, 2)


def test_cheap_bounds_do_not_depend_on_the_queries_computed_with_them():
    # a shard's bounds are computed for its queries together (the set-up over their
    # words, the rows BOUND_ROWS at a time); BLAS rounds a product's entry differently
    # when the product's shape differs (seen with OpenBLAS on an AMD EPYC), so a row
    # computed among other queries must still have the bits it has alone
    docs, emb = clustered(150, seed=7)
    inputs = solver.prepare(docs, emb, "bow")
    every = bounds.LowerBounds(inputs, np.arange(150)).rows(np.arange(150))
    for chosen in (np.arange(40, 77), np.array([3]), np.arange(0, 150, 7)):
        alone = bounds.LowerBounds(inputs, chosen).rows(np.arange(len(chosen)))
        assert np.array_equal(alone, every[chosen], equal_nan=True)


def test_cheap_bounds_do_not_depend_on_the_calls_that_ask_for_them():
    # the centroid bound's products are whole blocks of PRODUCT_WIDTH queries, the
    # latest kept for the next call: rows asked a few at a time, in order, out of order,
    # one by one or all at once have the same bits (150 queries: two whole blocks and a
    # short one)
    docs, emb = clustered(150, seed=7)
    inputs = solver.prepare(docs, emb, "bow")
    every = bounds.LowerBounds(inputs, np.arange(150)).rows(np.arange(150))
    every_plain = bounds.LowerBounds(inputs, np.arange(150)).rows(np.arange(150), omr=False)
    lower = bounds.LowerBounds(inputs, np.arange(150))
    for at in (
        np.arange(60, 70),  # across the first two blocks
        np.arange(0, 16),
        np.array([149]),
        np.arange(16, 32),
        np.array([5, 64, 128, 140]),
    ):
        assert np.array_equal(lower.rows(at), every[at], equal_nan=True)
        assert np.array_equal(lower.rows(at, omr=False), every_plain[at], equal_nan=True)


@pytest.mark.parametrize("size", [1, 255, 1023, 1024, 1025, 1300, 5000])
def test_stream_is_the_stable_order_of_the_cheap_bounds(size):
    # a list's candidates sorted a part at a time (search._Stream) come out as one stable
    # argsort of their bounds orders them: by bound, ties by position, NaN last
    rng = np.random.default_rng(size)
    values = rng.integers(0, max(size // 8, 2), size).astype(np.float64)  # many ties
    values[rng.random(size) < 0.05] = np.nan
    candidates = np.sort(rng.choice(10 * size, size, replace=False))
    want = np.argsort(values, kind="stable")
    head = search._Stream(candidates, values)
    assert head.has(9) == (size > 9)
    assert head.order[:10] == candidates[want[:10]].tolist()  # only its first part sorted
    stream = search._Stream(candidates, values)
    got = 0
    while stream.has(got):
        got += 1
    assert stream.order == candidates[want].tolist()
    assert np.array_equal(np.array(stream.loose), values[want], equal_nan=True)
    assert not stream.has(size)


class _ListedRow:
    """A stand-in for bounds.LazyRow: given cheap bounds and lower parts, counting the
    candidates whose cheap bound was asked for."""

    def __init__(self, cheap, full):
        self.cheap, self.full = cheap, full
        self.asked: list[int] = []

    def values(self, candidates):
        self.asked.extend(candidates.tolist())
        return self.full[candidates]


def _lazy_list(size: int, seed: int):
    """A list of ``size`` candidates' cheap bounds (many ties) and lower parts (equal to
    the bound for some, far below it for others), NaN (empty) in both: (values, lower,
    candidates, and both by position, -1 elsewhere, for _ListedRow)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, max(size // 8, 2), size).astype(np.float64)
    lower = values - rng.choice([0.0, 0.0, 0.5, 3.0, 40.0], size)
    empty = rng.random(size) < 0.05
    values[empty] = lower[empty] = np.nan
    candidates = np.sort(rng.choice(10 * size, size, replace=False))
    cheap, full = np.full(10 * size, -1.0), np.full(10 * size, -1.0)
    cheap[candidates], full[candidates] = lower, values
    return values, lower, candidates, cheap, full


@pytest.mark.parametrize("size", [1, 255, 1300, 5000])
def test_lazy_stream_under_a_falling_limit_lists_the_same_order(size):
    # the visit's pruning limit (finite once a list has k distances, then only falling)
    # may end a part early (search._LazyStream): the order, the bounds listed and each
    # computed once stay those of the stable sort, whatever the limit, ties and NaN
    # included; a visit that stops at its first candidate beyond a limit computes fewer
    # bounds than without the limit (the parts' sizes alone), never one more than once
    values, lower, candidates, cheap, full = _lazy_list(size, seed=size + 1)
    want = np.argsort(values, kind="stable")
    ranked = values[want]
    for start in (0, size // 10, size // 3):
        row = _ListedRow(cheap, full)
        stream = search._LazyStream(candidates, row)
        limit, got = np.inf, 0
        while stream.has(got, limit):
            assert stream.order[got] == candidates[want[got]]
            if got >= start and np.isfinite(ranked[min(got + 40, size - 1)]):
                limit = min(limit, ranked[min(got + 40, size - 1)])  # falls, some ties
            got += 1
        assert stream.order == candidates[want].tolist()
        assert np.array_equal(np.array(stream.loose), ranked, equal_nan=True)
        assert sorted(row.asked) == candidates.tolist()
    if size < 4 * search.STREAM_PART:
        return
    stop = ranked[size // 5]  # a visit whose limit is the bound of its 1,000th candidate
    asked = {}
    for limit in (np.inf, stop):
        row = _ListedRow(cheap, full)
        stream = search._LazyStream(candidates, row)
        got = 0
        while stream.has(got, limit) and stream.loose[got] <= stop:
            got += 1
        assert got == np.searchsorted(ranked, stop, side="right")
        assert stream.order[: got + 1] == candidates[want[: got + 1]].tolist()
        assert len(row.asked) == len(set(row.asked))
        asked[limit] = len(row.asked)
    assert asked[stop] < asked[np.inf]
    assert asked[stop] <= (lower <= stop).sum() + search.STREAM_TAIL


@pytest.mark.parametrize("window", [None, 1500, 1])
@pytest.mark.parametrize("size", [255, 1300, 5000, 12000])
def test_lazy_stream_thresholds_are_the_smallest_left(size, window, monkeypatch):
    # each part's threshold (_LazyStream._smallest) is np.partition(lower left, i)[i],
    # taken from the window of the smallest lower parts where the rank lies in it, and
    # partitioned from those left where it does not: windows that hold every part's
    # rank (None: STREAM_WINDOW), some (1,500) and none (1), under limits that end parts
    # early and that do not, ties and NaN included. The order is the stable sort
    if window is not None:
        monkeypatch.setattr(search, "STREAM_WINDOW", window)
    values, lower, candidates, cheap, full = _lazy_list(size, seed=size + 3)
    want = np.argsort(values, kind="stable")
    ranked = values[want]
    checked = []
    smallest = search._LazyStream._smallest

    def checked_smallest(stream, i):
        at = stream._count - len(stream._lower) + i - stream._base
        checked.append(0 <= at < len(stream._ranked))
        got = smallest(stream, i)
        expected = np.partition(stream._lower, i)[i]
        assert got == expected or (np.isnan(got) and np.isnan(expected))
        return got

    monkeypatch.setattr(search._LazyStream, "_smallest", checked_smallest)
    for start in (None, 0, size // 3):
        stream = search._LazyStream(candidates, _ListedRow(cheap, full))
        limit, got = np.inf, 0
        while stream.has(got, limit):
            if start is not None and got >= start:
                ahead = ranked[min(got + 40, size - 1)]
                if np.isfinite(ahead):
                    limit = min(limit, ahead)
            got += 1
        assert stream.order == candidates[want].tolist()
    # (whether each rank lay in the window): the first part partitions those left
    if size > 4 * search.STREAM_PART:
        assert not all(checked)
        assert any(checked) == (window != 1)


@pytest.mark.parametrize("size", [1, 255, 1023, 1024, 1025, 1300, 5000])
def test_lazy_stream_is_the_eager_stream_and_computes_only_what_it_lists(size):
    # search._LazyStream lists a list's candidates in the order of search._Stream over
    # their cheap bounds, computing a cheap bound only once its lower part is below the
    # part's threshold: many ties in both, lower parts equal to the bound for some, far
    # below it for others (listed out of their lower parts' order), NaN (empty) in both
    values, lower, candidates, cheap, full = _lazy_list(size, seed=size)
    shared = candidates.copy()
    want = np.argsort(values, kind="stable")
    row = _ListedRow(cheap, full)
    stream = search._LazyStream(candidates, row)
    got = 0
    while stream.has(got):
        assert stream.order[got] == candidates[want[got]]
        assert np.array_equal(stream.loose[got], values[want[got]], equal_nan=True)
        # every computed candidate has a lower part at most the stream's threshold so far
        got += 1
    assert stream.order == candidates[want].tolist()
    assert np.array_equal(np.array(stream.loose), values[want], equal_nan=True)
    assert sorted(row.asked) == candidates.tolist()  # each once
    # the list's candidates, which every query's stream shares, are left as they were
    assert np.array_equal(candidates, shared)
    if size >= 4 * search.STREAM_PART:  # its first entries compute a first part, not the list
        head = _ListedRow(cheap, full)
        first = search._LazyStream(candidates, head)
        assert first.has(20) and first.order[:21] == candidates[want[:21]].tolist()
        assert len(head.asked) < size // 2


@pytest.mark.parametrize("block", [False, True])
def test_lazy_cheap_bounds_are_the_rows_bit_for_bit(block):
    # LowerBounds.cheap_rows (every candidate) and full_values (chosen ones) give the
    # bits of rows(): WCD and OMR included, any candidates in any order, and the lower
    # part is a lower bound of every entry; empty documents NaN in both. With the
    # distance block kept (`block`), the full values are taken from it, and rows() from
    # the table built from it when first read: the bits of the table built by the set-up.
    # The centroid bound decides some entries here (full_values then reads its rows),
    # not most; under WRD's cosine cost too
    corpora = (
        ("bow", clustered(150, seed=7)),
        ("tfidf", awkward_labelled()),
        ("wrd", clustered(120, seed=8)),
    )
    for weighting, (docs, emb) in corpora:
        inputs = solver.prepare(docs, emb, weighting)
        n = inputs.n
        queries = np.arange(0, n, 3)
        lower = bounds.LowerBounds(inputs, queries, block=block)
        table = bounds.LowerBounds(inputs, queries, block=False)
        every = table.rows(np.arange(len(queries)))
        at = np.arange(len(queries))
        cheap = lower.cheap_rows(at)
        rng = np.random.default_rng(0)
        for a in at.tolist():
            row = bounds.LazyRow(lower, a, cheap[a])
            chosen = rng.permutation(n)[: n // 2]
            got = row.values(chosen)
            assert got.tobytes() == every[a, chosen].tobytes()
            assert row[int(chosen[0])] == every[a, chosen[0]] or np.isnan(got[0])
            assert row.values(np.arange(n)).tobytes() == every[a].tobytes()
            assert row.computed == n
            defined = ~np.isnan(every[a])
            assert np.array_equal(np.isnan(cheap[a]), ~defined)
            assert (cheap[a][defined] <= every[a][defined]).all()
        # the lower part is a weaker bound (else nothing would be left to skip)
        assert (cheap < every).sum() > 0.1 * np.isfinite(every).sum()
        # of chosen documents alone (a search's candidates): their bits, NaN elsewhere
        documents = np.flatnonzero(rng.random(n) < 0.4)
        part = lower.cheap_rows(at, documents)
        assert part[:, documents].tobytes() == cheap[:, documents].tobytes()
        assert np.isnan(np.delete(part, documents, axis=1)).all()
        assert lower.cheap_rows(at[::2], documents).tobytes() == part[::2].tobytes()
        computed = len(at) * (n + n // 2)
        assert 0 < lower.centroid_checks < computed // 2, weighting
        assert lower.block == block and (lower._to_documents is None) == block
        assert lower.to_documents.tobytes() == table.to_documents.tobytes()
        assert lower.rows(at).tobytes() == every.tobytes()
        assert lower.to_queries.tobytes() == table.to_queries.tobytes()
        assert np.array_equal(lower.second, table.second, equal_nan=True)


def test_full_values_after_rows_without_omr_are_the_rows_bits():
    # with the distance block, rows() without OMR builds the table from the block but
    # not the whole nearest-other-word table: full_values then completes that and takes
    # the overlap terms from it, not from its own gather of the block; the same bits
    docs, emb = clustered(150, seed=7)
    inputs = solver.prepare(docs, emb, "bow")
    queries = np.arange(0, inputs.n, 3)
    at = np.arange(len(queries))
    lower = bounds.LowerBounds(inputs, queries, block=True)
    every = bounds.LowerBounds(inputs, queries, block=False).rows(at)
    lower.rows(at, omr=False)
    assert lower._to_documents is not None and not lower._second_whole
    cheap = lower.cheap_rows(at)
    for a in at.tolist():
        row = bounds.LazyRow(lower, a, cheap[a])
        assert row.values(np.arange(inputs.n)).tobytes() == every[a].tobytes()
    assert lower._second_whole


@pytest.mark.parametrize("ground_cost", ["euclidean", "cosine"])
def test_centroid_below_never_claims_a_bound_that_is_not_below(ground_cost):
    # bounds._centroid_below: where it says a centroid bound is below a ceiling, the
    # bound the BLAS product gives (stable_products, as _centroid_rows computes it) is;
    # ceilings at the bound itself, one unit in the last place either side, and a part
    # per million above; it says so for the last of these where the centroids are not
    # nearly equal (its slack is far below their distances), and never for a NaN
    # (empty) centroid
    rng = np.random.default_rng(3)
    for dim, scale in ((5, 1.0), (300, 0.05), (300, 30.0)):
        means = rng.standard_normal((400, dim)) * scale
        means[:200] = means[0] + 1e-9 * rng.standard_normal((200, dim))  # near, equal
        means[7] = np.nan
        if ground_cost == "cosine":
            means /= np.linalg.norm(means, axis=1, keepdims=True)
        sq = np.einsum("ij,ij->i", means, means)
        padded = bounds.padded_rows(means)
        for q in (0, 3, 7, 250):  # 7: an empty query
            products = bounds.stable_products(means[[q]], padded, len(means))
            exact = bounds.centroid_bound(ground_cost, products, sq[[q]], sq)[0]
            candidates = np.arange(len(means), dtype=np.int64)
            for ceiling in (
                exact,
                np.nextafter(exact, np.inf),
                np.nextafter(exact, -np.inf),
                exact * (1 + 1e-6) + 1e-6,
            ):
                below = np.empty(len(means), dtype=bool)
                bounds._centroid_below(
                    means, sq, q, candidates, ceiling, ground_cost == "cosine", below
                )
                assert (exact[below] < ceiling[below]).all()
                assert not below[7] and (not below.any() if q == 7 else True)
            apart = np.isfinite(exact)
            apart[:200] = apart[q] = False
            assert below[apart].all()


def test_the_distance_block_is_kept_where_it_is_no_larger_than_the_table():
    # forward_block: the block [document words x query words] replaces the table [query
    # words x documents] where the vocabulary is no larger than the documents; its set-up
    # shared by 2 (threads, not processes: the block is the process's own memory), its
    # tables are the same bits
    docs, emb = clustered(600, seed=4, per_topic=20)
    inputs = solver.prepare(docs, emb, "bow")
    assert len(inputs.vectors) <= inputs.n and bounds.forward_block(inputs)
    queries = np.arange(0, inputs.n, 7)
    lower = bounds.LowerBounds(inputs, queries, processes=2)
    assert lower.block and lower._block.nbytes <= 4 * len(lower.vocabulary) * inputs.n
    assert lower.timing["worker_processes"] is False
    table = bounds.LowerBounds(inputs, queries, block=False)
    assert lower.to_documents.tobytes() == table.to_documents.tobytes()
    assert lower.to_queries.tobytes() == table.to_queries.tobytes()
    few, _ = clustered(40, seed=4, per_topic=20)
    assert not bounds.forward_block(solver.prepare(few, emb, "bow"))


@pytest.mark.parametrize("corpus", ["awkward", "clustered"])
def test_lazy_cheap_bounds_change_no_byte_of_the_search(monkeypatch, corpus):
    # the search with cheap bounds computed as the visits reach them (LAZY_BOUNDS) and
    # with every candidate's computed first: the same tables, byte for byte, with one
    # worker and two, ties at the k-th distance included; and fewer bounds computed
    if corpus == "awkward":
        docs, emb = awkward_labelled()
        splits, settings = five_folds(70, seed=2), {"knn": {"k": [1, 3, 5]}, "wknn": {"k": 5}}
    else:
        docs, emb = clustered(300, seed=3)
        splits, settings = five_folds(300), None
    for weighting in ("bow", "tfidf"):
        inputs = solver.prepare(docs, emb, weighting)
        runs = {}
        # and the lazy search from the distance block (forward_block), or from the table
        for lazy, threads, block in (
            (False, 1, False),
            (True, 1, False),
            (True, 2, False),
            (True, 1, True),
            (True, 2, True),
        ):
            monkeypatch.setattr(search, "LAZY_BOUNDS", lazy)
            monkeypatch.setattr(bounds, "forward_block", lambda inputs, block=block: block)
            stats = search.SearchStats()
            tables = knn_tables(inputs, splits, settings, threads=threads, stats=stats)
            runs[lazy, threads, block] = (tables, stats)
        eager = runs[False, 1, False][0]
        for key, (tables, stats) in runs.items():
            assert tables[0].equals(eager[0]) and tables[1].equals(eager[1]), key
            assert stats.solves >= runs[False, 1, False][1].solves
        lazy, eager_stats = runs[True, 1, False][1], runs[False, 1, False][1]
        assert lazy.full_bounds == runs[True, 2, False][1].full_bounds
        assert lazy.full_bounds == runs[True, 1, True][1].full_bounds
        # a list here is about as long as a stream's first part: few are skipped
        assert 0 < lazy.full_bounds < eager_stats.full_bounds


@pytest.mark.parametrize("n_right", [300, 320, 1])
def test_stable_products_are_the_product_row_by_row(n_right):
    # 300 columns end in a partial tile, where OpenBLAS's SkylakeX kernels rounded by a
    # row's place in the product before the other side was padded (rows 12 and 13 of
    # slice(5, 70) differed); run with either kernel set (OPENBLAS_CORETYPE) to see it
    rng = np.random.default_rng(0)
    right = rng.standard_normal((n_right, 37))
    left = rng.standard_normal((150, 37))
    every = bounds.stable_products(left, right)
    assert every.shape == (150, n_right)
    assert every == pytest.approx(left @ right.T, rel=1e-12, abs=1e-12)
    for rows in (slice(0, 1), slice(5, 70), slice(64, 150), slice(149, 150), [7, 3, 140]):
        assert np.array_equal(bounds.stable_products(left[rows], right), every[rows])
    padded = bounds.padded_rows(right)
    assert len(padded) % bounds.PRODUCT_WIDTH == 0
    assert np.array_equal(bounds.stable_products(left, padded, n_right), every)


def test_a_pair_is_solved_once_for_every_fold_and_role():
    docs, emb = clustered(150, seed=4)
    inputs = solver.prepare(docs, emb, "bow")
    stats = search.SearchStats()
    pair_table, _ = knn_tables(inputs, five_folds(150), stats=stats)
    q = pair_table.column("query").to_numpy().astype(np.int64)
    c = pair_table.column("candidate").to_numpy().astype(np.int64)
    distinct = len(np.unique(np.minimum(q, c) * 1000 + np.maximum(q, c)))
    assert stats.solves == distinct  # one shard: each unordered pair solved once
    assert pair_table.num_rows > distinct  # and read by both of its documents


# --------------------------------------------------------------------------- the table's checks


def test_the_table_refuses_what_it_cannot_prove():
    docs, emb = clustered(90, seed=5)
    splits = five_folds(90)
    inputs = solver.prepare(docs, emb, "bow")
    settings = {"knn": {"k": [1, 3]}, "wknn": {"k": 3}}
    data = prepare_variant(docs, splits, {}, {"wmd": knn_tables(inputs, splits, settings)})
    table = data.wmd["wmd"]
    assert isinstance(table, NeighbourTable)
    train, test = data.folds[0]
    got = table.nearest(test, train, 3)
    assert (got.index >= 0).all()
    with pytest.raises(io.WmdevalError, match="not proven complete"):
        table.nearest(test, train, 10)  # searched for 3
    with pytest.raises(io.WmdevalError, match="no search was made among these candidates"):
        table.nearest(test, train[1:], 3)
    with pytest.raises(io.WmdevalError, match="does not hold"):
        table.block(test, train)


def test_table_from_known_distances_ranks_like_the_dense_matrix():
    docs, emb = awkward_labelled()
    splits = five_folds(70, seed=2)
    inputs = solver.prepare(docs, emb, "bow")
    doc_ids = docs.column("doc_id").to_numpy()
    data = prepare_variant(docs, splits, {"wmd": (doc_ids, full_matrix(inputs, splits))})
    dense = data.wmd["wmd"]
    roles = query_roles(data.folds, dense.empty, None)
    table = NeighbourTable.from_distances(dense, roles)
    for role in roles:
        got, want = (
            table.nearest(role.queries, role.candidates, role.k),
            dense.nearest(role.queries, role.candidates, role.k),
        )
        np.testing.assert_array_equal(got.index, want.index)
        np.testing.assert_array_equal(got.distance, want.distance)


@pytest.mark.parametrize("shape", [(5, 30), (16, 12), (30, 25)])
def test_the_ascent_kernel_is_the_plain_loop_on_both_sides_of_dual_across(shape):
    # below DUAL_ACROSS query words the kernel takes the second minima along the cost
    # rows, from it down a transposed copy: either way the plain loop's value, bit for bit
    n, m = shape
    rng = np.random.default_rng(n + 7 * m)
    cost = rng.random((n, m)) + 0.2
    a, b = rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(m))
    start = rng.standard_normal(n) * 0.1
    exact = ot.emd2(a, b, cost)
    for enough in (0.98 * exact, 2.0 * exact):
        args = (bounds.ASCENT_STEPS, bounds.ASCENT_TRIAL, bounds.ASCENT_NEAR, bounds.ASCENT_TARGET)
        got = bounds._ascent_kernel(cost, a, b, start, enough, *args)
        assert got == plain_ascent(a, b, cost, start, enough, *args)
        assert got <= exact + 1e-12
