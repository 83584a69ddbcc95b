"""Exact WMD of document pairs: prepared inputs, cost matrices, one exact solve, a block of pairs.

WMD between two documents is the optimal-transport cost between their word
weights (L1-normalised counts, or tf-idf for WMD-TF-IDF), with the Euclidean
distance between word embeddings as ground cost, solved exactly with POT's
network simplex (docs/protocol.md §5).

Word Rotator's Distance (WRD, Yokoi et al. 2020) is the same transport problem with
other marginals and another ground cost: each word weighs count x the norm of its
vector, and two words cost the cosine distance 1 - cos(u, v) of their directions. It is
the weighting "wrd" of :func:`prepare`; :attr:`WmdInputs.ground_cost` tells every
cost computation (here, in the bounds and in the search) which cost to use.

Every distance is a function of its pair alone (never of the block layout, the thread
count or the mode): :func:`wmd_pair` is the one way a pair is solved, by the blocks of
the full mode and by the kNN search alike (see :func:`_solve_row` for why).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from threadpoolctl import ThreadpoolController

from ...core import io, schemas
from ...core.progress import Progress
from .compiled import (
    LEFT,
    SOLVE,
    UNDEFINED,
    _pair_costs,
    _pair_problem,
    _row_problems,
    _solve_problems,
)
from .pairs import plan_blocks, row_segments
from .pot_simplex import emd_c, emd_wrap

# The package's name, as the blocks and the search log under.
LOG = logging.getLogger("wmdeval.distances.wmd")

#: Network-simplex iteration cap; far above what documents of a few hundred words need.
MAX_ITER = 1_000_000
#: POT's network-simplex result codes.
_OPTIMAL = 1
_FAILURES = {
    0: "infeasible (marginals of unequal mass?)",
    2: "unbounded",
    3: "iteration limit reached before optimality",
}

#: Weightings of :func:`prepare` -> the ground cost between their words.
GROUND_COSTS = {"bow": "euclidean", "tfidf": "euclidean", "wrd": "cosine"}
#: Ground costs that are metrics: their exact solves drop the mass two documents share
#: (:func:`residual_problem`). WRD's cosine cost breaks the triangle inequality.
METRIC_COSTS = frozenset({"euclidean"})


@dataclass(frozen=True)
class WmdInputs:
    """Documents prepared for WMD: word rows into ``vectors`` and marginal weights.

    ``vectors`` holds only the words some document uses (in embedding-table order);
    an empty document (no words, no tf-idf mass, or only zero vectors under "wrd") has
    empty ``indices``/``weights``. ``ground_cost`` is the cost between two words:
    "euclidean" (|u - v|, WMD) or "cosine" (1 - u.v, WRD, whose ``vectors`` are unit
    directions).
    """

    doc_ids: np.ndarray  # int32 [n]
    words: np.ndarray  # object [V]: the word of each row of `vectors`
    vectors: np.ndarray  # float64 [V, dim]
    sq_norms: np.ndarray  # float64 [V]: squared L2 norm of each row of `vectors`
    offsets: np.ndarray  # int64 [n + 1]: document k owns flat entries offsets[k]:offsets[k+1]
    flat_indices: np.ndarray  # int32 [total]: rows into `vectors`, document after document
    indices: tuple[np.ndarray, ...]  # per document: views into flat_indices
    weights: tuple[np.ndarray, ...]  # per document: float64 marginals summing to 1
    twin: np.ndarray  # int64 [n]: equal for documents with identical marginals; -1 if empty
    ground_cost: str = "euclidean"  # "euclidean" or "cosine", see GROUND_COSTS

    @property
    def n(self) -> int:
        """Number of documents."""
        return len(self.doc_ids)

    # Computed once (read-only): the search asks for them per candidate batch, and at
    # 85,635 documents each was a pass over the offsets (3 % of a query's CPU).
    @functools.cached_property
    def sizes(self) -> np.ndarray:
        """Distinct words (with positive weight) per document, int64 [n]."""
        sizes = np.diff(self.offsets)
        sizes.flags.writeable = False
        return sizes

    @functools.cached_property
    def empty(self) -> np.ndarray:
        """bool [n]: documents without mass, whose every distance is NaN."""
        empty = self.sizes == 0
        empty.flags.writeable = False
        return empty


# ---------------------------------------------------------------------------------------------
# Preparation


def prepare(documents: pa.Table, embeddings: pa.Table, weighting: str) -> WmdInputs:
    """Word rows and marginals of every document (``weighting``: "bow", "tfidf" or "wrd").

    ``documents``: DOCUMENTS table (n rows, kept in their order); ``embeddings``: a table
    with ``word`` and fixed-size-list ``vector`` columns holding every word of the
    documents (and, for "wrd", a ``norm`` column). "bow": L1-normalised counts. "tfidf":
    counts * ln(N / df) over these documents, L1-normalised; a document whose words all
    have idf 0 has no mass and is empty. "wrd": counts * ``norm`` (the vector's norm as
    read, before any normalisation), L1-normalised, and the vectors replaced by their
    directions vector / |vector|; a word whose vector or norm is 0 has no direction and
    gets no mass. Only words with positive weight are kept. Vectors become float64. A
    word without a vector, a word listed twice, a non-finite vector or (for "wrd") a
    missing, negative or non-finite norm is a WmdevalError.
    """
    if weighting not in GROUND_COSTS:
        raise ValueError(
            f"unknown weighting {weighting!r} (expected one of {', '.join(GROUND_COSTS)})"
        )
    n = documents.num_rows
    doc_ids = documents.column("doc_id").to_numpy().astype(np.int32)
    words_col = documents.column("words").combine_chunks()
    counts_col = documents.column("counts").combine_chunks()
    lengths = pc.list_value_length(words_col).to_numpy(zero_copy_only=False).astype(np.int64)
    if not np.array_equal(lengths, pc.list_value_length(counts_col).to_numpy(zero_copy_only=False)):
        raise io.WmdevalError("documents: `words` and `counts` differ in length")
    flat_words = pc.list_flatten(words_col)
    counts = pc.list_flatten(counts_col).to_numpy(zero_copy_only=False).astype(np.float64)
    doc_of = np.repeat(np.arange(n, dtype=np.int64), lengths)

    vocabulary = embeddings.column("word").combine_chunks()
    rows = pc.index_in(flat_words, value_set=vocabulary)
    if rows.null_count:
        first = int(np.flatnonzero(rows.is_null().to_numpy(zero_copy_only=False))[0])
        raise io.WmdevalError(
            f"word {flat_words[first].as_py()!r} of document {doc_ids[doc_of[first]]} "
            "has no embedding"
        )
    rows = rows.to_numpy(zero_copy_only=False).astype(np.int64)
    _check_distinct(rows, doc_of, len(vocabulary), doc_ids)

    mass = counts
    if weighting == "tfidf":
        df = np.bincount(rows[counts > 0], minlength=len(vocabulary))
        mass = counts * np.log(n / np.maximum(df[rows], 1))
    elif weighting == "wrd":
        mass = counts * _wrd_word_mass(embeddings)[rows]
    keep = mass > 0
    rows, mass, doc_of = rows[keep], mass[keep], doc_of[keep]
    total = np.bincount(doc_of, weights=mass, minlength=n)
    weights = mass / total[doc_of] if len(mass) else mass

    # Keep only the embedding rows in use: smaller matrix, smaller per-row cost blocks.
    used, flat_indices = np.unique(rows, return_inverse=True)
    flat_indices = flat_indices.astype(np.int32)
    vectors = _vector_matrix(embeddings.column("vector"))[used].astype(np.float64)
    if not np.isfinite(vectors).all():
        raise io.WmdevalError("embeddings: a vector has non-finite values")
    if weighting == "wrd":
        # every kept word has a non-zero vector (_wrd_word_mass gave the others no mass)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(doc_of, minlength=n), out=offsets[1:])
    indices = tuple(flat_indices[offsets[k] : offsets[k + 1]] for k in range(n))
    marginals = tuple(weights[offsets[k] : offsets[k + 1]] for k in range(n))
    return WmdInputs(
        doc_ids=doc_ids,
        words=np.asarray(vocabulary.take(pa.array(used)).to_pylist(), dtype=object),
        vectors=vectors,
        sq_norms=np.einsum("ij,ij->i", vectors, vectors),
        offsets=offsets,
        flat_indices=flat_indices,
        indices=indices,
        weights=marginals,
        twin=_twins(indices, marginals),
        ground_cost=GROUND_COSTS[weighting],
    )


def _wrd_word_mass(embeddings: pa.Table) -> np.ndarray:
    """WRD's mass per count of each embedding row, float64 [rows]: its ``norm`` column,
    and 0 where the vector is zero (no direction, so nowhere to put the mass)."""
    if "norm" not in embeddings.column_names:
        raise io.WmdevalError("embeddings: WRD needs the `norm` column")
    norms = embeddings.column("norm").to_numpy(zero_copy_only=False).astype(np.float64)
    if not (np.isfinite(norms) & (norms >= 0)).all():
        raise io.WmdevalError("embeddings: a norm is negative or not finite")
    vectors = _vector_matrix(embeddings.column("vector"))
    has_direction = np.any(vectors != 0, axis=1)
    return np.where(has_direction, norms, 0.0)


def _check_distinct(
    rows: np.ndarray, doc_of: np.ndarray, n_words: int, doc_ids: np.ndarray
) -> None:
    # A word listed twice would be counted twice in df and be two points in the transport.
    key = np.sort(doc_of * n_words + rows)
    repeated = np.flatnonzero(key[1:] == key[:-1])
    if len(repeated):
        doc = doc_ids[key[repeated[0]] // n_words]
        raise io.WmdevalError(f"document {doc} lists the same word twice")


def _vector_matrix(column: pa.ChunkedArray) -> np.ndarray:
    array = column.combine_chunks()
    dim = array.type.list_size
    return array.flatten().to_numpy(zero_copy_only=False).reshape(-1, dim)


def _twins(indices: tuple[np.ndarray, ...], weights: tuple[np.ndarray, ...]) -> np.ndarray:
    """Class number of each document's marginal (same words, same weights); -1 if empty."""
    classes: dict[bytes, int] = {}
    twin = np.full(len(indices), -1, dtype=np.int64)
    for k, (idx, w) in enumerate(zip(indices, weights, strict=True)):
        if len(idx):
            twin[k] = classes.setdefault(idx.tobytes() + w.tobytes(), len(classes))
    return twin


def reorder(inputs: WmdInputs, order: np.ndarray) -> WmdInputs:
    """The same documents in another order: document k of the result is ``order[k]``.

    ``order``: int64 positions into ``inputs`` (the solve order of
    :func:`~wmdeval.distances.wmd.pairs.solve_order`). Vectors and words are shared.
    """
    indices = tuple(inputs.indices[k] for k in order)
    sizes = np.array([len(x) for x in indices], dtype=np.int64)
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate(indices) if len(indices) else inputs.flat_indices[:0]
    return WmdInputs(
        doc_ids=inputs.doc_ids[order],
        words=inputs.words,
        vectors=inputs.vectors,
        sq_norms=inputs.sq_norms,
        offsets=offsets,
        flat_indices=flat.astype(np.int32),
        indices=tuple(flat[offsets[k] : offsets[k + 1]] for k in range(len(order))),
        weights=tuple(inputs.weights[k] for k in order),
        twin=inputs.twin[order],
        ground_cost=inputs.ground_cost,
    )


# ---------------------------------------------------------------------------------------------
# One pair


def cost_matrix(inputs: WmdInputs, rows_a: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """Ground costs between embedding rows, float64 [len(rows_a), len(rows_b)].

    ``rows_a``, ``rows_b``: integer rows into ``inputs.vectors``, e.g. ``inputs.indices[i]``.
    Euclidean |a - b| or cosine max(1 - a.b, 0) of unit directions, each entry summed
    over the dimensions in one fixed order by ``compiled._pair_costs``: a function of the
    two words alone, whatever else the matrix holds, symmetric bit for bit, and exactly 0
    for a word to itself. Every exact solve and every per-pair bound computes its costs
    so; only the bounds' large nearest-word tables use matrix products (:func:`word_costs`).
    """
    rows_a = np.asarray(rows_a, dtype=np.int64)  # one compiled signature for every caller
    rows_b = np.asarray(rows_b, dtype=np.int64)
    if inputs.ground_cost not in GROUND_COSTS.values():
        raise ValueError(f"unknown ground cost {inputs.ground_cost!r}")
    return _pair_costs(inputs.vectors, rows_a, rows_b, inputs.ground_cost == "cosine")


def word_costs(
    ground_cost: str, products: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray
) -> np.ndarray:
    """Ground costs from the products a.b of word vectors, computed in place in ``products``.

    ``products``: float64 [p, q]; ``sq_a`` [p], ``sq_b`` [q]: the vectors' squared norms
    (unused for "cosine", whose vectors are unit directions). "euclidean":
    :func:`_distances`; "cosine": max(1 - a.b, 0). The definition of each ground cost's
    arithmetic, used where costs come from one large matrix product (the bounds'
    nearest-word tables: ``bounds._costs32`` repeats its operations in its order, and the
    tests hold it to its bits). Within float64 rounding of :func:`cost_matrix`'s
    fixed-order sums, not bit for bit.
    """
    if ground_cost == "euclidean":
        return _distances(products, sq_a, sq_b)
    if ground_cost == "cosine":
        return _cosine_distances(products)
    raise ValueError(f"unknown ground cost {ground_cost!r}")


def _cosine_distances(products: np.ndarray) -> np.ndarray:
    """max(1 - a.b, 0) for unit directions, computed in place in ``products``."""
    d = products
    np.subtract(1.0, d, out=d)
    return np.maximum(d, 0.0, out=d)


def _distances(products: np.ndarray, sq_a: np.ndarray, sq_b: np.ndarray) -> np.ndarray:
    """sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), computed in place in ``products``.

    In place because the per-row cost matrices of solve_block can be tens of MB.
    """
    d = products
    d *= -2.0
    d += sq_a[:, None]
    d += sq_b[None, :]
    np.maximum(d, 0.0, out=d)
    return np.sqrt(d, out=d)


def wmd_pair(inputs: WmdInputs, i: int, j: int) -> float:
    """Exact WMD (or WRD, by ``inputs.ground_cost``) of documents i and j (positions in
    ``inputs``), symmetric.

    NaN if either is empty; exactly 0.0 for documents with identical marginals. Under a
    metric ground cost the solve is of the :func:`residual_problem` alone (the words
    whose weights differ). A network simplex that stops short of optimality is a
    WmdevalError.

    Symmetric bit for bit: the document with the lower doc_id is always the source, so
    the value does not depend on the order a caller names the pair in, nor on the solve
    order of a block layout (the transposed problem can come out an ulp apart).
    """
    return solve_pair(inputs, i, j)[0]


def solve_pair(inputs: WmdInputs, i: int, j: int) -> tuple[float, Potentials | None]:
    """(:func:`wmd_pair`, the optimal dual potentials of the problem it solved).

    The potentials: (words, values) of each side, source first (the lower doc_id), on
    the words the solve kept (the :func:`residual_problem`'s under a metric cost), with
    u_k + v_l <= cost(k, l) and value = sum a_k u_k + sum b_l v_l. None when no
    transport problem was solved (an empty document, identical marginals, an empty
    residual). The value is computed the same way with or without them.
    """
    value, potentials, _ = solve_pair_costs(inputs, i, j)
    return value, potentials


def solve_pair_costs(
    inputs: WmdInputs, i: int, j: int
) -> tuple[float, Potentials | None, SolvedCosts | None]:
    """(:func:`solve_pair`'s value and potentials, the word costs it solved with): the
    positions of the kept words in each document's ``indices`` (source first, as the
    potentials) and the cost matrix [source kept, target kept]; None with the potentials.
    The same solve, so the same bits: for a caller that needs those costs again (the
    search's potentials on a document's words)."""
    if inputs.doc_ids[j] < inputs.doc_ids[i]:
        i, j = j, i
    a, b = inputs.weights[i], inputs.weights[j]
    if not len(a) or not len(b):
        return float("nan"), None, None
    if inputs.twin[i] == inputs.twin[j]:
        return 0.0, None, None
    if inputs.ground_cost not in GROUND_COSTS.values():
        raise ValueError(f"unknown ground cost {inputs.ground_cost!r}")
    rows_i, rows_j = inputs.indices[i], inputs.indices[j]
    # under a metric cost the residual_problem over the shared words, then cost_matrix's
    # costs of the words kept: one compiled call (the same bits as the two steps)
    a, b, keep_a, keep_b, cost = _pair_problem(
        inputs.vectors,
        rows_i,
        rows_j,
        a,
        b,
        inputs.ground_cost in METRIC_COSTS,
        inputs.ground_cost == "cosine",
    )
    if not len(a) or not len(b):
        return 0.0, None, None
    value, u, v = _wmd_duals(a, b, cost)
    return value, ((rows_i[keep_a], u), (rows_j[keep_b], v)), (keep_a, keep_b, cost)


#: Dual potentials of a solved pair: ((source words, u), (target words, v)).
Potentials = tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
#: Word costs of a solved pair: (source positions kept, target positions kept, costs).
SolvedCosts = tuple[np.ndarray, np.ndarray, np.ndarray]


def residual_problem(
    a: np.ndarray, b: np.ndarray, shared_a: np.ndarray, shared_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(left_a, left_b, keep_a, keep_b): the transport problem left once the mass two
    documents share stays where it is (Kantorovich-Rubinstein).

    ``a``, ``b``: the marginals; ``shared_a[k]`` and ``shared_b[k]`` the positions of the
    k-th common word in each. Under a metric ground cost the optimal transport depends
    only on a - b: some optimal plan keeps min(a_w, b_w) on every common word w (moving
    it elsewhere and back never beats the triangle inequality). What is left is
    ``left_a`` (on ``a``'s positions ``keep_a``) against ``left_b`` (``b``'s ``keep_b``),
    of equal mass 1 - sum min(a_w, b_w), with disjoint supports. a_w - min(a_w, b_w) is
    exactly 0 where a_w <= b_w, so a common word leaves at most one side, and identical
    marginals leave nothing (both sides empty: the distance is 0).
    """
    kept = np.minimum(a[shared_a], b[shared_b])
    left_a = a.copy()
    left_b = b.copy()
    left_a[shared_a] -= kept
    left_b[shared_b] -= kept
    keep_a = np.flatnonzero(left_a > 0)
    keep_b = np.flatnonzero(left_b > 0)
    return left_a[keep_a], left_b[keep_b], keep_a, keep_b


def _wmd(a: np.ndarray, b: np.ndarray, cost: np.ndarray) -> float:
    """Optimal transport cost between marginals a and b (both non-empty, of equal mass)."""
    return _wmd_duals(a, b, cost)[0]


def _wmd_duals(
    a: np.ndarray, b: np.ndarray, cost: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """(optimal transport cost, u, v): :func:`_wmd` and optimal dual potentials."""
    # One word on one side: its whole mass goes to every word of the other side (whose
    # costs to it are then an optimal dual, with 0 for the one word).
    if len(a) == 1:
        return float(np.dot(b, cost[0])), np.zeros(1), cost[0].copy()
    if len(b) == 1:
        return float(np.dot(a, cost[:, 0])), cost[:, 0].copy(), np.zeros(1)
    # emd_c is what ot.emd2 calls once it has converted and checked its inputs. Called
    # directly it skips ~75 us of Python per pair (ot.emd2 takes ~80 us on a 10 x 10
    # problem, emd_c ~6 us). It wants contiguous float64 arrays.
    _, value, u, v, code = emd_c(a, b, cost, MAX_ITER, 1)
    _check_code(code)
    return float(value), u, v


def _check_code(code: int) -> None:
    # a network simplex that stopped short of optimality is an error, never a distance
    if code != _OPTIMAL:
        failure = _FAILURES.get(code, f"result code {code}")
        raise io.WmdevalError(f"network simplex did not reach optimality: {failure}")


#: POT's C++ entry point that ``emd_c`` calls, by its C++ (mangled) name, which spells its
#: parameter types: int EMD_wrap(int n1, int n2, double *a, double *b, double *costs,
#: double *plan, double *u, double *v, double *value, uint64_t max_iter,
#: double *u_init, double *v_init) (POT 0.9.6 on; earlier versions spell it otherwise).
_EMD_WRAP = "_Z8EMD_wrapiiPdS_S_S_S_S_S_mS_S_"


@functools.cache
def _network_simplex_address() -> int:
    """The address of POT's ``EMD_wrap`` for :func:`_solve_row`'s compiled loop, or 0
    where it cannot be used (then each pair goes through ``emd_c`` as before).

    Used only where the installed POT exports it under :data:`_EMD_WRAP` and where, called
    so, it gives ``emd_c``'s result bit for bit (value, duals, code) on a few problems
    with ties (so that every distance is the same whichever way it is solved, as the
    search solves its pairs through ``emd_c``).
    """
    try:
        address = ctypes.cast(
            getattr(ctypes.CDLL(emd_wrap.__file__), _EMD_WRAP), ctypes.c_void_p
        ).value
    except (OSError, AttributeError):
        return 0
    if not address or not _same_as_emd_c(address):
        LOG.debug("POT's EMD_wrap is not usable directly; solving each pair through emd_c")
        return 0
    return address


def _same_as_emd_c(address: int) -> bool:
    """Whether the compiled loop at ``address`` solves some fixed problems (sizes 2-40,
    costs with ties, as rounded embeddings give) exactly as ``emd_c`` does."""
    rng = np.random.default_rng(45)
    for size_a, size_b in ((2, 2), (3, 7), (12, 5), (40, 33)):
        a = rng.integers(1, 5, size_a).astype(np.float64)
        b = rng.integers(1, 5, size_b).astype(np.float64)
        a /= a.sum()
        b /= b.sum()
        cost = np.round(rng.random((size_a, size_b)), 1)
        _, value, u, v, code = emd_c(a, b, cost, MAX_ITER, 1)
        out = np.full(1, np.nan)
        codes = _solve_problems(
            address,
            np.array([SOLVE], dtype=np.int8),
            a,
            b,
            cost.ravel(),
            np.array([0, size_a]),
            np.array([0, size_b]),
            np.array([0, size_a * size_b]),
            0,
            1,
            out,
            MAX_ITER,
        )
        if codes[0] != code or out[0].tobytes() != np.float64(value).tobytes():
            return False
    return True


def transport(
    inputs: WmdInputs, i: int, j: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(plan, cost, words_i, words_j): the optimal transport of one pair, via ``ot.emd``.

    ``plan`` and ``cost`` are float64 [u_i, u_j] (plan sums to 1, ``(plan * cost).sum()``
    is the WMD up to rounding); ``words_i`` [u_i] and ``words_j`` [u_j] label their rows
    and columns. An empty document is a WmdevalError (it has no plan).
    """
    a, b = inputs.weights[i], inputs.weights[j]
    if not len(a) or not len(b):
        raise io.WmdevalError(
            f"document {inputs.doc_ids[i] if not len(a) else inputs.doc_ids[j]} is empty"
        )
    import ot  # all of POT (pot_simplex.py says why not at the top): the analyses' plans

    cost = cost_matrix(inputs, inputs.indices[i], inputs.indices[j])
    plan = ot.emd(a, b, cost, numItermax=MAX_ITER)
    return plan, cost, inputs.words[inputs.indices[i]], inputs.words[inputs.indices[j]]


# ---------------------------------------------------------------------------------------------
# Solving a block


def solve_block(
    inputs: WmdInputs,
    block: int,
    n_blocks: int,
    threads: int = 1,
    n_rows: int | None = None,
    report: str | None = "wmd block",
) -> pa.Table:
    """WMD of the pairs of block ``block`` (0-based) of ``n_blocks``: a WMD_BLOCK table.

    ``inputs`` are in solve order, ``n_rows`` as in
    :func:`~wmdeval.distances.wmd.pairs.plan_blocks`. One row per pair of the block, in
    rank order (i, then j ascending): ``i`` < ``j`` int32 positions in ``inputs``,
    ``distance`` float64, NaN where a document is empty. Rows of the pair grid are
    independent tasks for ``threads`` worker threads (the network simplex runs without
    the GIL); results do not depend on the thread count, nor on the block layout.
    ``report``: the subject of the progress lines in the log (pairs done of the block's,
    their rate, the time left; :mod:`wmdeval.core.progress`), or None for none.
    """
    if not 0 <= block < n_blocks:
        raise ValueError(f"block {block} is not in 0..{n_blocks - 1}")
    if threads < 1:
        raise ValueError("threads must be >= 1")
    start, stop = plan_blocks(inputs.sizes, n_blocks, n_rows)[block]
    segments = row_segments(inputs.n, start, stop, n_rows)
    n_pairs = stop - start
    i_out = np.empty(n_pairs, dtype=np.int32)
    j_out = np.empty(n_pairs, dtype=np.int32)
    d_out = np.empty(n_pairs, dtype=np.float64)
    for i, j0, j1, offset in segments:
        i_out[offset : offset + j1 - j0] = i
        j_out[offset : offset + j1 - j0] = np.arange(j0, j1)

    flat_weights = _flat_weights(inputs)
    # Set when solving stops early (an error, Ctrl-C): running rows return after their
    # current pair instead of the pool finishing every row before the job can end.
    stop = threading.Event()
    progress = Progress(LOG if report is not None else None, report or "", n_pairs, "pairs")

    def work(k: int) -> None:
        i, j0, j1, offset = segments[k]
        out = d_out[offset : offset + j1 - j0]
        _solve_row(inputs, i, j0, j1, out, stop, flat_weights)
        # counted by row, not by pair: a row of pairs takes far longer than the count,
        # and a 20 Newsgroups row (18,846 pairs) ten-odd seconds, well within a line's
        # interval. A row cut short by `stop` is not done: a failing job says no more.
        if not stop.is_set():
            progress.advance(j1 - j0)

    # One BLAS thread: parallelism comes from our threads (the pairs' costs come from
    # the compiled kernel, not BLAS; the limit keeps any product on one thread, as the
    # search's do).
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        pending = {pool.submit(work, k) for k in range(len(segments))}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in finished:
                    if future.exception() is not None:
                        raise future.exception()
        except BaseException:
            stop.set()
            for future in pending:
                future.cancel()
            raise
    progress.finish()
    return pa.table({"i": i_out, "j": j_out, "distance": d_out}, schema=schemas.WMD_BLOCK)


@functools.cache
def _blas() -> ThreadpoolController:
    # Finding the loaded BLAS libraries takes milliseconds; do it once per process.
    return ThreadpoolController()


#: Cost entries (8 B each) a row's problems hold at once: :func:`_solve_row` prepares
#: them in chunks of its pairs of at most this many (one pair at least), ~8 MB.
ROW_ENTRIES = 1 << 20
#: Pairs per call of the compiled solve loop (:func:`_solve_row` checks ``stop`` between).
SOLVE_STEP = 64


def _flat_weights(inputs: WmdInputs) -> np.ndarray:
    """Every document's marginals concatenated, float64 aligned with ``flat_indices``."""
    return np.concatenate(inputs.weights) if inputs.n else np.zeros(0)


def _solve_row(
    inputs: WmdInputs,
    i: int,
    j0: int,
    j1: int,
    out: np.ndarray,
    stop: threading.Event | None = None,
    flat_weights: np.ndarray | None = None,
) -> None:
    """Fill out[k] with WMD(i, j0 + k) for j0 <= j < j1 (until ``stop`` is set).

    Each pair is :func:`wmd_pair`'s problem solved by its call, bit for bit, as the kNN
    search solves it: ``compiled._row_problems`` states a chunk of the row's problems in
    one compiled call (oriented by doc_id, the shared mass dropped, each cost an entry of
    ``compiled._pair_costs``, whose bits depend on its two words alone, whatever matrix
    computes it), and each is handed to the network simplex as it is: by
    ``compiled._solve_problems``, one compiled loop over the chunk's pairs that calls POT's
    ``EMD_wrap`` as ``emd_c`` does (:func:`_network_simplex_address`; at 10 words ~20 %
    of a pair was the Python around each ``emd_c`` call), or by ``emd_c`` per pair where
    that cannot be used. (One BLAS product
    per row of the grid was cheaper than one per pair, but BLAS may round an entry
    differently in a product of another shape: on 10-word documents 698 of 11,175 pairs
    came out up to 3e-16 apart, enough to split a tie the protocol's rule must see, and
    to make the two modes differ. The kernel's fixed-order sums cannot.)
    ``flat_weights``: :func:`_flat_weights` of ``inputs`` (a block computes it once).
    """
    if flat_weights is None:
        flat_weights = _flat_weights(inputs)
    metric = inputs.ground_cost in METRIC_COSTS
    cosine = inputs.ground_cost == "cosine"
    size_i = max(int(inputs.sizes[i]), 1)
    # a chunk ends where its pairs' cost entries (at most size_i x the words of j) pass
    # ROW_ENTRIES
    reach = np.cumsum(inputs.sizes[j0:j1]) * size_i
    start = j0
    while start < j1:
        before = int(reach[start - j0 - 1]) if start > j0 else 0
        end = start + max(
            1, int(np.searchsorted(reach[start - j0 :], before + ROW_ENTRIES, "right"))
        )
        end = min(end, j1)
        kind, left_s, left_t, costs, at_s, at_t, at_c = _row_problems(
            inputs.vectors,
            inputs.offsets,
            inputs.flat_indices,
            flat_weights,
            inputs.twin,
            inputs.doc_ids,
            i,
            start,
            end,
            metric,
            cosine,
        )
        address = _network_simplex_address()
        pairs = end - start
        codes = np.full(pairs, LEFT, dtype=np.int32)
        # the compiled loop in steps of SOLVE_STEP pairs, so that `stop` is seen between
        for p0 in range(0, pairs if address else 0, SOLVE_STEP):
            if stop is not None and stop.is_set():
                return
            p1 = min(p0 + SOLVE_STEP, pairs)
            o = start - j0
            codes[p0:p1] = _solve_problems(
                address,
                kind,
                left_s,
                left_t,
                costs,
                at_s,
                at_t,
                at_c,
                p0,
                p1,
                out[o + p0 : o + p1],
                MAX_ITER,
            )
        # what the loop left (or every pair, without it): no problem to solve, a side of
        # one word, or a failure to report
        at_s, at_t, at_c = at_s.tolist(), at_t.tolist(), at_c.tolist()
        kinds = kind.tolist()
        for p in np.flatnonzero(codes != _OPTIMAL).tolist():
            if stop is not None and stop.is_set():
                return
            if codes[p] != LEFT:
                _check_code(int(codes[p]))
            k = start - j0 + p
            if kinds[p] == SOLVE:
                a = left_s[at_s[p] : at_s[p + 1]]
                b = left_t[at_t[p] : at_t[p + 1]]
                out[k] = _wmd(a, b, costs[at_c[p] : at_c[p + 1]].reshape(len(a), len(b)))
            else:
                out[k] = np.nan if kinds[p] == UNDEFINED else 0.0
        start = end
