"""One dataset variant, and the interface to its document distances under a method.

Classification and every analysis see a variant the same way:

- its documents in doc_id order; a *position* is an index into that order, and every
  list of documents (a fold's training list, a query sample, a group) is a position
  array. :func:`positions` is the one doc_id -> position mapping;
- the distances of the variant under one method, a :class:`Distances`: ``block(rows,
  cols)`` for dense distances between positions, ``nearest(rows, cols, k)`` for the k
  nearest columns of each row by the kNN tie rule (distances compared at
  :data:`TIE_BITS` significant bits, :func:`tie_key`; ties to the lower index), ``empty``
  for the documents without any defined distance. The rule "an empty document has no
  defined distance" (NaN in its row and column) is applied in :meth:`Distances.block`,
  nowhere else; the tie rule in :func:`rank_neighbours`, nowhere else.

Implementations here: :class:`DenseDistances` (a full matrix, e.g. a WMD DISTANCES file
reordered to doc_id order once) and :class:`NeighbourTable` (the pairs an exact kNN
search solved, with what proves each query's top k complete: ``wmd.mode: knn``). The 12
BOW / TF-IDF baselines, computed on the fly, and the factory that gives any method's
distances for a variant live in the distances layer (:mod:`wmdeval.distances.factory`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .errors import WmdevalError
from .methods import METHODS, Method, method_by_slug, name_order

log = logging.getLogger("wmdeval.core.variant")


# --------------------------------------------------------------------------- positions


def positions(doc_ids: np.ndarray, wanted_ids: np.ndarray, what: str) -> np.ndarray:
    """Position in ``doc_ids`` of every id of ``wanted_ids``, in the order of ``wanted_ids``.

    ``doc_ids`` (any order, each id once) are the ids of the documents ``what`` holds;
    int64 positions [len(wanted_ids)]. An id ``doc_ids`` lacks, or an id it holds twice,
    is a WmdevalError naming ``what``: "WMD distances lack 2 document(s), e.g. doc_id 7".
    """
    doc_ids = np.asarray(doc_ids, dtype=np.int64).ravel()
    wanted_ids = np.asarray(wanted_ids, dtype=np.int64).ravel()
    order = np.argsort(doc_ids, kind="stable")
    ordered = doc_ids[order]
    repeated = ordered[1:] == ordered[:-1]
    if repeated.any():
        raise WmdevalError(f"{what} hold doc_id {int(ordered[1:][repeated][0])} more than once")
    found = np.searchsorted(ordered, wanted_ids)
    inside = found < len(ordered)
    inside[inside] = ordered[found[inside]] == wanted_ids[inside]
    if not inside.all():
        missing = wanted_ids[~inside]
        raise WmdevalError(
            f"{what} lack {len(np.unique(missing))} document(s), e.g. doc_id {int(missing[0])}"
        )
    return order[found].astype(np.int64, copy=False)


# --------------------------------------------------------------------------- ranking

#: Significant bits a distance keeps when distances are compared (docs/protocol.md §11,
#: "Exact ties"): 32 bits, about 9.6 decimal digits. Distances equal in exact arithmetic
#: come out of float64 sums and solves a few ulps (~1e-16 relative) apart; rounded to 32
#: bits they almost always coincide (they straddle a rounding boundary with probability
#: about their difference / 2**-32, ~1e-6), so the protocol's tie rule (lower index
#: first) decides, not the rounding noise. Distances more than 2**-31 apart relative
#: always keep their order.
TIE_BITS = 32

#: Relative width that covers every value rounding to the same key as x: |y - x| <=
#: |x| * TIE_SPAN (1.5 quanta of the larger binade, rounded up to 2**-30).
TIE_SPAN = 2.0**-30


def tie_key(values: np.ndarray | float) -> np.ndarray:
    """The value every ranking compares: each distance rounded to TIE_BITS significant
    bits (round half to even), float64, of the same shape.

    A function of the value alone, so it cannot depend on the order of evaluation, and
    monotone (x <= y gives tie_key(x) <= tie_key(y)), so a lower bound on a distance is a
    lower bound on its key. Exact zeros stay 0.0 (and -0.0 becomes 0.0); inf and NaN are
    kept. Two distances tie when their keys are equal.
    """
    x = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(x)  # x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1
    with np.errstate(over="ignore"):
        key = np.ldexp(np.round(np.ldexp(mantissa, TIE_BITS)), exponent - TIE_BITS)
    # Rounding up the largest finite doubles gives inf, which would rank as "undefined".
    finite_max = np.finfo(np.float64).max
    key = np.where(np.isfinite(x), np.clip(key, -finite_max, finite_max), x)
    return key + 0.0


def scalar_tie_key(value: float) -> float:
    """:func:`tie_key` of one Python float, bit for bit, without numpy: a search ranks one
    solved distance at a time, where tie_key's array calls cost ten times the rounding."""
    if not math.isfinite(value):
        return value
    mantissa, exponent = math.frexp(value)
    try:
        # round(): half to even, as np.round; mantissa * 2**TIE_BITS is exact
        key = math.ldexp(round(mantissa * _TIE_SCALE), exponent - TIE_BITS)
    except OverflowError:
        key = math.copysign(_FINITE_MAX, value)
    return key + 0.0


_TIE_SCALE = float(2**TIE_BITS)
_FINITE_MAX = float(np.finfo(np.float64).max)


def rank_neighbours(dist: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k nearest columns of every row, nearest first.

    ``dist``: [rows, cols] distances of any float dtype. Order is by (:func:`tie_key` of
    the distance, column index): distances equal at TIE_BITS significant bits tie, and
    ties go to the lower column. Non-finite distances (NaN: undefined) are never
    neighbours: where a row has fewer than k finite distances the remaining slots hold
    -1. Returns int64 [rows, k].
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dist = np.asarray(dist, dtype=np.float64)
    n_rows, n_cols = dist.shape
    keys = np.where(np.isfinite(dist), dist, np.inf)
    kk = min(k, n_cols)
    neighbours = np.full((n_rows, k), -1, dtype=np.int64)
    if kk == 0 or n_rows == 0:
        return neighbours
    if kk < n_cols:
        # argpartition finds the k-th smallest value, but which of several columns
        # tied with it land in the first k is arbitrary; so take every column whose
        # value could round to the k-th's key (the key is monotone, so the k-th
        # smallest key is the key of the k-th smallest value) and order those exactly.
        part = np.argpartition(keys, kk - 1, axis=1)
        kth = np.take_along_axis(keys, part[:, kk - 1 : kk], axis=1)
        candidate = keys <= kth + np.abs(kth) * TIE_SPAN  # all, where kth is inf
    else:
        candidate = np.ones_like(keys, dtype=bool)
    rows, cols = np.nonzero(candidate)  # row-major: columns ascending within a row
    # Keys only for the candidates (about k per row), not the whole block. lexsort is
    # stable, so equal keys keep ascending column order.
    order = np.lexsort((tie_key(keys[rows, cols]), rows))
    per_row = np.count_nonzero(candidate, axis=1)  # >= kk for every row
    starts = np.concatenate(([0], np.cumsum(per_row)[:-1]))
    nearest = cols[order[starts[:, None] + np.arange(kk)]]
    defined = np.isfinite(np.take_along_axis(keys, nearest, axis=1))
    neighbours[:, :kk] = np.where(defined, nearest, -1)
    return neighbours


#: Working memory (bytes) one block of rows may take while it is ranked among its columns
#: (:meth:`Distances.nearest`): the block's float64 distances, what :func:`rank_neighbours`
#: makes of them (float64 keys, int64 partition, masks) and what computing them takes (a
#: baseline's dense result), :data:`RANKING_BYTES_PER_CELL` per (row, column).
#: ``wmdeval.planning.resources`` declares the evaluate job's memory from it.
RANKING_BLOCK_BYTES = 256 * 2**20

#: Bytes one (row, column) of a ranked block takes at the peak, counted from the arrays
#: alive together: 8 (distances) + 8 (keys) + 8 (partition) + 2 (masks) + 8 (a slice of a
#: larger block taken to rank a role's rows,
#: :meth:`wmdeval.distances.factory.BaselineDistances.rank_roles`) = 34, rounded up.
RANKING_BYTES_PER_CELL = 40


def ranking_rows(n_cols: int, budget: int | None = None) -> int:
    """Rows of one block ranked among ``n_cols`` columns within ``budget`` bytes
    (default :data:`RANKING_BLOCK_BYTES`), at least one."""
    budget = RANKING_BLOCK_BYTES if budget is None else budget
    return max(1, budget // (RANKING_BYTES_PER_CELL * max(n_cols, 1)))


class Neighbours(NamedTuple):
    """The k nearest columns of some rows: what :meth:`Distances.nearest` returns.

    ``index``: int64 [rows, k], indices into the ``cols`` asked for, nearest first, -1
    where a row has fewer than k defined distances. ``distance``: float64 [rows, k], the
    distance of each neighbour, NaN where ``index`` is -1.
    """

    index: np.ndarray
    distance: np.ndarray


def _with_distances(index: np.ndarray, dist: np.ndarray) -> Neighbours:
    defined = index >= 0
    gathered = np.take_along_axis(dist, np.where(defined, index, 0), axis=1)
    return Neighbours(index, np.where(defined, gathered, np.nan))


def ranked(dist: np.ndarray, k: int) -> Neighbours:
    """:class:`Neighbours` of every row of a block of distances (NaN = undefined): the
    k nearest columns by :func:`rank_neighbours`, with their distances."""
    return _with_distances(rank_neighbours(dist, k), dist)


# --------------------------------------------------------------------------- the interface


class Distances:
    """The distances between the documents of one variant under one method.

    Positions index the variant's documents in doc_id order. Subclasses give the raw
    distances of a block (:meth:`_pairs`); this class applies the NaN rule and ranks.

    - ``empty``: bool [n documents]; True for a document without any defined distance
      (no words, or none the method can use). It is never a neighbour, and as a query
      it has none.
    - ``block(rows, cols)``: float64 [len(rows), len(cols)], a fresh array the caller may
      write to; NaN = undefined, always in the rows and columns of empty documents.
    - ``nearest(rows, cols, k)``: :class:`Neighbours` of every row among ``cols`` by the
      kNN tie rule (:func:`tie_key` of the distance, then lower index in ``cols``; with
      ``cols`` sorted, as fold lists are, the lower position, i.e. the lower doc_id); -1
      where fewer than k are defined. Exactly :func:`rank_neighbours` of ``block(rows,
      cols)``. Every ranking of the workflow goes through here.

    Extension point: an implementation that holds only some pairs (a neighbour table from
    an exact kNN search, :class:`NeighbourTable`) overrides ``nearest`` and ``block``, and
    raises a WmdevalError naming the pairs it cannot give; callers that only rank (kNN,
    N2O, nearest-neighbour agreement) then never need the dense block.
    """

    def __init__(self, empty: np.ndarray):
        self.empty = np.asarray(empty, dtype=bool)

    @property
    def n_documents(self) -> int:
        """Documents of the variant: the length of ``empty``, the range of positions."""
        return len(self.empty)

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Raw float64 distances [len(rows), len(cols)], a fresh array."""
        raise NotImplementedError

    def block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Distances float64 [len(rows), len(cols)] between positions, a fresh array the
        caller may write to; NaN = undefined, always in the rows and columns of the
        ``empty`` documents."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        out = self._pairs(rows, cols)
        # The one place of the rule: a document without words has no defined distance
        # under any method (a baseline would otherwise give it the norm of the other
        # document, a matrix could hold a stray value).
        out[self.empty[rows], :] = np.nan
        out[:, self.empty[cols]] = np.nan
        return out

    def nearest(self, rows: np.ndarray, cols: np.ndarray, k: int) -> Neighbours:
        """The k nearest of ``cols`` for every row: indices into ``cols`` int64 [len(rows),
        k] and their distances float64, ranked by (distance, index in ``cols``); -1 (and
        NaN) where a row has fewer than k defined distances.

        Ranked a block of rows at a time (:func:`ranking_rows`): memory follows
        :data:`RANKING_BLOCK_BYTES`, not len(rows) x len(cols), and a row's neighbours do
        not depend on the other rows asked for."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        step = ranking_rows(len(cols))
        if len(rows) <= step:
            return ranked(self.block(rows, cols), k)
        index = np.empty((len(rows), k), dtype=np.int64)
        distance = np.empty((len(rows), k), dtype=np.float64)
        for start in range(0, len(rows), step):
            found = ranked(self.block(rows[start : start + step], cols), k)
            index[start : start + step], distance[start : start + step] = found
        return Neighbours(index, distance)


def _nan_per_row(matrix: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """NaN count of every row, a chunk of rows at a time (matrices can be large)."""
    counts = [np.isnan(matrix[i : i + chunk]).sum(axis=1) for i in range(0, len(matrix), chunk)]
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


class DenseDistances(Distances):
    """A full square matrix over the variant's positions (float64 as stored; any float).

    ``empty`` defaults to the all-NaN rows of the matrix; pass the documents without
    words to add them (a document can be empty for a method though the matrix holds a
    value for it). ``unsolved``: documents whose pairs among each other the matrix may
    leave NaN (the test documents of a one-fold dataset, whose test x test pairs WMD
    skips, config ``wmd.skip_test_pairs``); NaN anywhere else is warned of in the log.
    """

    def __init__(
        self,
        matrix: np.ndarray,
        empty: np.ndarray | None = None,
        what: str = "distances",
        unsolved: np.ndarray | None = None,
    ):
        matrix = np.asarray(matrix)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise WmdevalError(f"{what}: need a square matrix, got shape {matrix.shape}")
        self.matrix = matrix
        nan_per_row = _nan_per_row(matrix)
        all_nan = nan_per_row == len(matrix)
        unexpected = nan_per_row - np.count_nonzero(all_nan)
        if unsolved is not None and np.any(unexpected[~all_nan]):
            # NaN among the unsolved documents (not counting the all-NaN ones) is expected
            among = np.flatnonzero(np.asarray(unsolved, dtype=bool) & ~all_nan)
            for start in range(0, len(among), 2048):
                rows = among[start : start + 2048]
                unexpected[rows] -= np.isnan(matrix[rows][:, among]).sum(axis=1)
        if np.any(unexpected[~all_nan] != 0):
            log.warning(
                "%s have NaN outside the rows and columns of empty documents; "
                "those pairs are never neighbours",
                what,
            )
        super().__init__(all_nan if empty is None else all_nan | np.asarray(empty, dtype=bool))

    @classmethod
    def from_matrix(
        cls,
        doc_ids: np.ndarray,
        matrix_ids: np.ndarray,
        matrix: np.ndarray,
        what: str,
        empty: np.ndarray | None = None,
        unsolved: np.ndarray | None = None,
    ) -> DenseDistances:
        """A matrix whose rows and columns follow ``matrix_ids``, reordered once to
        ``doc_ids`` (the variant's order); ``what`` names it in errors; ``empty`` and
        ``unsolved`` per document of ``doc_ids`` (see the class)."""
        matrix = np.asarray(matrix)
        if matrix.shape != (len(matrix_ids), len(matrix_ids)):
            raise WmdevalError(
                f"{what}: matrix {matrix.shape} does not match {len(matrix_ids)} doc ids"
            )
        index = positions(matrix_ids, doc_ids, what)
        if not np.array_equal(index, np.arange(len(matrix_ids))):
            matrix = matrix[np.ix_(index, index)]  # else: no copy of a possibly large matrix
        return cls(matrix, empty, what, unsolved)

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        # fancy indexing copies; the cast copies again only for a non-float64 matrix
        return self.matrix[np.ix_(rows, cols)].astype(np.float64, copy=False)


class NeighbourTable(Distances):
    """The result of an exact kNN search: solved pairs, and per query and candidate
    list what proves its top k complete (``wmd.mode: knn``).

    ``pairs``: NEIGHBOUR_PAIRS rows as positions (``query``, ``candidate`` int64 arrays
    and ``distance``, the stored float64 values), each pair once per query;
    ``certificates``: candidate-list key (:func:`wmdeval.core.roles.candidates_key`) ->
    (sorted query positions, k, unsolved bound) arrays. A certificate says that every
    candidate of the list that is not among the query's pairs has a WMD lower bound of
    at least the unsolved bound, whose :func:`tie_key` exceeds the key of the query's k-th
    distance in the list (so it can neither be nearer nor tie with it).

    ``nearest(rows, cols, k)`` ranks the solved pairs of each row inside ``cols`` exactly
    as :func:`rank_neighbours` ranks a dense block, after checking that ``cols`` was
    searched for every (non-empty) row, with k at most the certificate's, and that the
    certificate holds; anything else is a WmdevalError. ``block`` gives held pairs only.
    """

    def __init__(
        self,
        query: np.ndarray,
        candidate: np.ndarray,
        distance: np.ndarray,
        certificates: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]],
        empty: np.ndarray,
    ):
        super().__init__(empty)
        n = self.n_documents
        query = np.asarray(query, dtype=np.int64)
        candidate = np.asarray(candidate, dtype=np.int64)
        self.values = np.asarray(distance, dtype=np.float64)
        if not (len(query) == len(candidate) == len(self.values)):
            raise ValueError("neighbour table: query, candidate and distance do not match")
        # data: 1 + the pair's index into `values` (0 = not held); duplicates would add up
        held = sp.csr_matrix(
            (np.arange(1, len(query) + 1, dtype=np.int64), (query, candidate)), shape=(n, n)
        )
        if held.nnz != len(query):
            raise WmdevalError("neighbour table: a (query, candidate) pair is listed twice")
        self.held = held
        if np.any(self.empty[query]) or np.any(self.empty[candidate]):
            raise WmdevalError("neighbour table: an empty document has a neighbour or is one")
        self.certificates = {
            key: tuple(np.asarray(a) for a in value) for key, value in certificates.items()
        }

    @classmethod
    def from_tables(
        cls, doc_ids: np.ndarray, pairs, certificates, empty: np.ndarray, what: str
    ) -> NeighbourTable:
        """From NEIGHBOUR_PAIRS and NEIGHBOUR_CERTIFICATES tables over doc_ids (the
        variant's, ascending); ``what`` names the tables in errors."""
        query = positions(doc_ids, pairs.column("query").to_numpy(), what)
        candidate = positions(doc_ids, pairs.column("candidate").to_numpy(), what)
        cert_query = positions(doc_ids, certificates.column("query").to_numpy(), what)
        keys = np.asarray(certificates.column("candidates").to_pylist(), dtype=object)
        k = certificates.column("k").to_numpy().astype(np.int64)
        bound = certificates.column("unsolved_bound").to_numpy().astype(np.float64)
        by_key = {}
        for key in sorted(set(keys.tolist())):
            mine = np.flatnonzero(keys == key)
            order = mine[np.argsort(cert_query[mine], kind="stable")]
            if np.any(np.diff(cert_query[order]) == 0):
                raise WmdevalError(f"{what}: a query is certified twice for one candidate list")
            by_key[key] = (cert_query[order], k[order], bound[order])
        return cls(query, candidate, pairs.column("distance").to_numpy(), by_key, empty)

    @classmethod
    def from_distances(cls, distances: Distances, roles) -> NeighbourTable:
        """The tightest table for ``roles`` (:class:`wmdeval.core.roles.QueryRole`) from
        known distances: each query holds its candidates up to its k-th distance (ties under
        :func:`tie_key` included), and the smallest distance whose key is larger serves as
        the unsolved bound."""
        from .roles import candidates_key

        queries, candidates, values, certificates = [], [], [], {}
        kept: dict[tuple[int, int], float] = {}
        for role in roles:
            dist = distances.block(role.queries, role.candidates)
            found = rank_neighbours(dist, role.k)
            cert_q, cert_k, cert_bound = certificates.setdefault(
                candidates_key(role.candidates), ([], [], [])
            )
            for r, q in enumerate(role.queries.tolist()):
                row = dist[r]
                last = found[r][found[r] >= 0]
                kth = tie_key(row[last[-1]]) if len(last) == role.k else np.inf
                key = tie_key(row)
                inside = np.isfinite(row) & (key <= kth)
                for c in np.flatnonzero(inside).tolist():
                    kept[(q, int(role.candidates[c]))] = row[c]
                beyond = row[np.isfinite(row) & (key > kth)]
                cert_q.append(q)
                cert_k.append(role.k)
                cert_bound.append(beyond.min() if len(beyond) else np.inf)
        for (q, c), d in sorted(kept.items()):
            queries.append(q)
            candidates.append(c)
            values.append(d)
        by_key = {}
        for key, (cert_q, cert_k, cert_bound) in certificates.items():
            order = np.argsort(cert_q, kind="stable")
            by_key[key] = tuple(np.asarray(a)[order] for a in (cert_q, cert_k, cert_bound))
        return cls(
            np.asarray(queries, dtype=np.int64),
            np.asarray(candidates, dtype=np.int64),
            np.asarray(values),
            by_key,
            distances.empty,
        )

    def _held(self, rows: np.ndarray, cols: np.ndarray, missing: float) -> np.ndarray:
        index = self.held[rows][:, cols].toarray()
        out = np.full(index.shape, missing)
        at = index > 0
        out[at] = self.values[index[at] - 1]
        return out

    def nearest(self, rows: np.ndarray, cols: np.ndarray, k: int) -> Neighbours:
        """As :meth:`Distances.nearest`, from the solved pairs, once the certificates of
        ``cols`` prove every row's k nearest are among them."""
        from .roles import candidates_key

        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if np.any(np.diff(cols) <= 0):
            raise WmdevalError("neighbour table: nearest() needs sorted, distinct columns")
        index = np.full((len(rows), k), -1, dtype=np.int64)
        distance = np.full((len(rows), k), np.nan)
        inner = np.flatnonzero(~self.empty[rows])
        if not len(inner):
            return Neighbours(index, distance)
        certificate = self.certificates.get(candidates_key(cols))
        if certificate is None:
            raise WmdevalError(
                "neighbour table: no search was made among these candidates (was it "
                "searched with other splits or evaluation settings?)"
            )
        cert_queries, cert_k, cert_bound = certificate
        found = np.searchsorted(cert_queries, rows[inner])
        found = np.minimum(found, len(cert_queries) - 1)
        if not np.array_equal(cert_queries[found], rows[inner]):
            raise WmdevalError(
                "neighbour table: some rows were not searched among these candidates"
            )
        step = ranking_rows(len(cols))  # rows x cols of dense working arrays per block
        for start in range(0, len(inner), step):
            part = inner[start : start + step]
            dist = self._held(rows[part], cols, np.inf)  # inf: never a neighbour
            got = rank_neighbours(dist, k)
            index[part] = got
            got_distance = _with_distances(got, dist).distance
            distance[part] = got_distance
            at = found[start : start + step]
            # Compared as the ranking compares: a candidate left unsolved has a key above
            # the k-th's, so it can neither be nearer nor tie with it.
            complete = np.isinf(cert_bound[at]) | (
                (k <= cert_k[at])
                & (got[:, -1] >= 0)
                & (tie_key(cert_bound[at]) > tie_key(got_distance[:, -1]))
            )
            if not complete.all():
                raise WmdevalError(
                    f"neighbour table: the {k} nearest of {int(np.count_nonzero(~complete))} "
                    "row(s) are not proven complete (searched for fewer neighbours?)"
                )
        return Neighbours(index, distance)

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = self._held(rows, cols, np.nan)
        missing = np.isnan(out) & ~self.empty[rows][:, None] & ~self.empty[cols][None, :]
        if missing.any():
            raise WmdevalError(
                "neighbour table: block() asks for pairs the table does not "
                "hold (it holds each query's nearest candidates only)"
            )
        return out


# --------------------------------------------------------------------------- a variant


@dataclass(frozen=True)
class Variant:
    """The documents of one dataset variant, in doc_id order, with what every method needs.

    Built by :func:`wmdeval.distances.factory.prepare_variant` from DOCUMENTS, SPLITS and
    WMD DISTANCES tables; the distances of any method come from
    :func:`wmdeval.distances.factory.method_distances`.
    """

    doc_ids: np.ndarray  # int, ascending
    labels: np.ndarray  # label string per document (object array)
    y: np.ndarray  # int64 label code per document
    counts: sp.csr_matrix  # word counts [documents x vocabulary]
    folds: list[tuple[np.ndarray, np.ndarray]]  # (train, test) sorted positions; [] = no splits
    # every method but the baselines (WMD, WRD, WCD, users' ...): slug -> its matrix or
    # neighbour table (the name is from when WMD was the only one)
    wmd: Mapping[str, Distances]

    @property
    def no_words(self) -> np.ndarray:
        """bool per document: no words at all, so no defined distance under any method."""
        return np.diff(self.counts.indptr) == 0

    @property
    def methods(self) -> tuple[Method, ...]:
        """Methods with distances, in table order (:func:`name_order`): every baseline
        and the other methods given distances (WMD, WMD-TF-IDF, WMD on PCA embeddings
        by dimension, the built-in methods beyond the paper, users' methods by name)."""
        held = [method_by_slug(slug) for slug in self.wmd]
        methods = [*(m for m in METHODS if not m.is_wmd), *held]
        return tuple(sorted(methods, key=lambda m: name_order(m.name)))

    def empty(self, method: Method) -> np.ndarray:
        """bool per document: no defined distance under ``method``. Documents without
        words, under every method; a WMD matrix can leave more undefined (all-NaN rows:
        WMD-TF-IDF of a document whose words all have IDF 0)."""
        if method.is_wmd:
            return self.wmd[method.slug].empty  # which includes no_words
        return self.no_words

    def training(self, fold: int | None) -> np.ndarray:
        """Where TF-IDF takes its IDF: the fold's training list (as the kNN evaluation
        does), or every document when no fold is given."""
        if fold is None:
            return np.arange(len(self.doc_ids))
        if not 0 <= fold < len(self.folds):
            raise WmdevalError(f"fold {fold} does not exist ({len(self.folds)} fold(s))")
        return self.folds[fold][0]


__all__ = [
    "positions",
    "TIE_BITS",
    "tie_key",
    "rank_neighbours",
    "ranked",
    "RANKING_BLOCK_BYTES",
    "ranking_rows",
    "Neighbours",
    "Distances",
    "DenseDistances",
    "NeighbourTable",
    "Variant",
]
