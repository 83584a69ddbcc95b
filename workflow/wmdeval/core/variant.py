"""One dataset variant, and the interface to its document distances under a method.

Classification and every analysis see a variant the same way:

- its documents in doc_id order; a *position* is an index into that order, and every
  list of documents (a fold's training list, a query sample, a group) is a position
  array. :func:`positions` is the one doc_id -> position mapping;
- the distances of the variant under one method, a :class:`Distances`: ``block(rows,
  cols)`` for dense distances between positions, ``nearest(rows, cols, k)`` for the k
  nearest columns of each row by the kNN tie rule, ``empty`` for the documents without
  any defined distance. The rule "an empty document has no defined distance" (NaN in
  its row and column) is applied in :meth:`Distances.block`, nowhere else.

Implementations here: :class:`DenseDistances` (a full matrix, e.g. a WMD DISTANCES file
reordered to doc_id order once) and :class:`NeighbourTable` (per query only its k
nearest candidates, as an exact kNN search would produce). The 12 BOW / TF-IDF baselines,
computed on the fly, and the factory that gives any method's distances for a variant
live in the distances layer (:mod:`wmdeval.distances.factory`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .io import WmdevalError
from .methods import BY_SLUG, METHODS, Method, method_by_slug

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


def rank_neighbours(dist: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k nearest columns of every row, nearest first.

    ``dist``: [rows, cols] distances of any float dtype. Order is by (distance, column
    index): ties go to the lower column. Non-finite distances (NaN: undefined) are never
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
        # equal to it land in the first k is arbitrary; so take every column up to
        # and including that value and order those exactly.
        part = np.argpartition(keys, kk - 1, axis=1)
        kth = np.take_along_axis(keys, part[:, kk - 1 : kk], axis=1)
        candidate = keys <= kth
    else:
        candidate = np.ones_like(keys, dtype=bool)
    rows, cols = np.nonzero(candidate)  # row-major: columns ascending within a row
    # lexsort is stable, so equal distances keep ascending column order.
    order = np.lexsort((keys[rows, cols], rows))
    per_row = np.count_nonzero(candidate, axis=1)  # >= kk for every row
    starts = np.concatenate(([0], np.cumsum(per_row)[:-1]))
    nearest = cols[order[starts[:, None] + np.arange(kk)]]
    defined = np.isfinite(np.take_along_axis(keys, nearest, axis=1))
    neighbours[:, :kk] = np.where(defined, nearest, -1)
    return neighbours


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
      kNN tie rule (distance, then lower index in ``cols``; with ``cols`` sorted, as fold
      lists are, the lower position, i.e. the lower doc_id); -1 where fewer than k are
      defined. Exactly :func:`rank_neighbours` of ``block(rows, cols)``.

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
        NaN) where a row has fewer than k defined distances."""
        dist = self.block(rows, cols)
        return _with_distances(rank_neighbours(dist, k), dist)


def _nan_per_row(matrix: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """NaN count of every row, a chunk of rows at a time (matrices can be large)."""
    counts = [np.isnan(matrix[i : i + chunk]).sum(axis=1) for i in range(0, len(matrix), chunk)]
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


class DenseDistances(Distances):
    """A full square matrix over the variant's positions (float32 or float64).

    ``empty`` defaults to the all-NaN rows of the matrix; pass the documents without
    words to add them (a document can be empty for a method though the matrix holds a
    value for it).
    """

    def __init__(
        self, matrix: np.ndarray, empty: np.ndarray | None = None, what: str = "distances"
    ):
        matrix = np.asarray(matrix)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise WmdevalError(f"{what}: need a square matrix, got shape {matrix.shape}")
        self.matrix = matrix
        nan_per_row = _nan_per_row(matrix)
        all_nan = nan_per_row == len(matrix)
        if np.any(nan_per_row[~all_nan] != np.count_nonzero(all_nan)):
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
    ) -> DenseDistances:
        """A matrix whose rows and columns follow ``matrix_ids``, reordered once to
        ``doc_ids`` (the variant's order); ``what`` names it in errors."""
        matrix = np.asarray(matrix)
        if matrix.shape != (len(matrix_ids), len(matrix_ids)):
            raise WmdevalError(
                f"{what}: matrix {matrix.shape} does not match {len(matrix_ids)} doc ids"
            )
        index = positions(matrix_ids, doc_ids, what)
        if not np.array_equal(index, np.arange(len(matrix_ids))):
            matrix = matrix[np.ix_(index, index)]  # else: no copy of a possibly large matrix
        return cls(matrix, empty, what)

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        # fancy indexing copies; the cast copies again only for a float32 matrix
        return self.matrix[np.ix_(rows, cols)].astype(np.float64, copy=False)


class NeighbourTable(Distances):
    """Per query document, its k nearest documents among fixed candidates, with distances.

    What an exact kNN search that computes only the neighbours kNN reads would store.
    ``queries``: sorted positions; ``index``: int64 [queries, k] document positions of
    the neighbours among ``candidates`` (sorted positions), ordered by (distance,
    position), -1 after the last defined one; ``distance``: their distances, NaN at -1.
    Empty documents are never neighbours and have none (build the table from a
    :class:`Distances` with :meth:`from_distances` and the NaN rule holds by
    construction).

    ``nearest(rows, cols, k)`` is exact for query rows, ``cols`` a sorted subset of the
    candidates, and any k up to the table's: dropping the neighbours outside ``cols``
    keeps the ranking, and a row whose table is full (k defined neighbours) can only
    miss neighbours farther than its last one. Where that is not enough, and for
    ``block`` pairs the table does not hold, it raises a WmdevalError.
    """

    def __init__(
        self,
        queries: np.ndarray,
        index: np.ndarray,
        distance: np.ndarray,
        candidates: np.ndarray,
        empty: np.ndarray,
    ):
        super().__init__(empty)
        self.queries = np.asarray(queries, dtype=np.int64)
        self.index = np.asarray(index, dtype=np.int64)
        self.distance = np.asarray(distance, dtype=np.float64)
        self.candidates = np.asarray(candidates, dtype=np.int64)
        if self.index.shape != self.distance.shape or len(self.index) != len(self.queries):
            raise ValueError("neighbour table: index, distance and queries do not match")
        if np.any(np.diff(self.queries) <= 0) or np.any(np.diff(self.candidates) <= 0):
            raise ValueError("neighbour table: queries and candidates must be sorted, unique")
        held = self.index >= 0
        if np.any(self.empty[self.index[held]]) or np.any(held[self.empty[self.queries]]):
            raise ValueError("neighbour table: an empty document has a neighbour or is one")
        if not np.isin(self.index[held], self.candidates).all():
            raise ValueError("neighbour table: a neighbour is not among the candidates")

    @classmethod
    def from_distances(
        cls, distances: Distances, queries: np.ndarray, candidates: np.ndarray, k: int
    ) -> NeighbourTable:
        """The k nearest ``candidates`` of every query under ``distances``."""
        queries = np.unique(np.asarray(queries, dtype=np.int64))
        candidates = np.unique(np.asarray(candidates, dtype=np.int64))
        found = distances.nearest(queries, candidates, k)
        index = np.where(found.index >= 0, candidates[np.maximum(found.index, 0)], -1)
        return cls(queries, index, found.distance, candidates, distances.empty)

    @property
    def k(self) -> int:
        """Neighbours held per query (the table's width)."""
        return self.index.shape[1]

    def _table_rows(self, rows: np.ndarray) -> np.ndarray:
        return positions(self.queries, rows, "the neighbour table's queries")

    def nearest(self, rows: np.ndarray, cols: np.ndarray, k: int) -> Neighbours:
        """As :meth:`Distances.nearest`, from the table alone: ``rows`` must be queries and
        ``cols`` a sorted subset of the candidates; a WmdevalError where a full row keeps
        fewer than k neighbours inside ``cols`` (the k-th could lie outside the table)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        cols = np.asarray(cols, dtype=np.int64)
        if np.any(np.diff(cols) <= 0) or not np.isin(cols, self.candidates).all():
            raise WmdevalError(
                "neighbour table: nearest() needs sorted columns among the "
                "candidates the table was built from"
            )
        table = self._table_rows(np.asarray(rows, dtype=np.int64))
        index, distance = self.index[table], self.distance[table]
        wanted = np.isin(index, cols) & (index >= 0)
        kept = np.count_nonzero(wanted, axis=1)
        full = (index >= 0).all(axis=1)  # the row may have neighbours beyond its table
        if np.any(full & (kept < k)):
            raise WmdevalError(
                f"neighbour table of {self.k} per query cannot give the {k} "
                "nearest of these columns for every row"
            )
        out_index = np.full((len(index), k), -1, dtype=np.int64)
        out_distance = np.full((len(index), k), np.nan)
        # stable: the kept neighbours stay in table order (distance, then position)
        order = np.argsort(~wanted, axis=1, kind="stable")[:, :k]
        slots = np.take_along_axis(wanted, order, axis=1)
        found = np.take_along_axis(index, order, axis=1)
        out_index[:, : order.shape[1]] = np.where(slots, np.searchsorted(cols, found), -1)
        out_distance[:, : order.shape[1]] = np.where(
            slots, np.take_along_axis(distance, order, axis=1), np.nan
        )
        return Neighbours(out_index, out_distance)

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        out = np.full((len(rows), len(cols)), np.nan)
        inner = ~self.empty[rows]
        table = self._table_rows(rows[inner]) if inner.any() else np.zeros(0, dtype=np.int64)
        index, distance = self.index[table], self.distance[table]
        match = index[:, :, None] == cols[None, None, :]  # [rows, k, cols]
        held = match.any(axis=1)
        values = np.where(match, distance[:, :, None], 0.0).sum(axis=1)
        if np.any(~held[:, ~self.empty[cols]]):
            raise WmdevalError(
                "neighbour table: block() asks for pairs the table does not "
                "hold (it holds each query's nearest candidates only)"
            )
        out[inner] = np.where(held, values, np.nan)
        return out


# --------------------------------------------------------------------------- a variant


def _pca_dimension(slug: str) -> tuple[int, str]:
    digits = slug.removeprefix("wmd-pca")
    return (int(digits) if digits.isdigit() else 0, slug)


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
    wmd: Mapping[str, DenseDistances]  # WMD method slug -> its matrix in doc_id order

    @property
    def no_words(self) -> np.ndarray:
        """bool per document: no words at all, so no defined distance under any method."""
        return np.diff(self.counts.indptr) == 0

    @property
    def methods(self) -> tuple[Method, ...]:
        """Methods with distances, in Table 2 order: every baseline and the WMD methods
        given a matrix; then WMD on PCA embeddings ("wmd-pca5") by dimension."""
        extra = [
            method_by_slug(slug)
            for slug in sorted(self.wmd, key=_pca_dimension)
            if slug not in BY_SLUG
        ]
        return (*(m for m in METHODS if not m.is_wmd or m.slug in self.wmd), *extra)

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
    "rank_neighbours",
    "Neighbours",
    "Distances",
    "DenseDistances",
    "NeighbourTable",
    "Variant",
]
