"""Any method's distances over a dataset variant: the one factory classification and the
analyses get them from.

A WMD method's distances are its matrix, read and reordered to doc_id order once
(:class:`wmdeval.core.variant.DenseDistances`); matrices given as files are read when
first asked for, one held at a time (:class:`MatricesOneAtATime`). The 12 baselines are
computed on the fly (:class:`BaselineDistances`): they are cheap, and TF-IDF depends on
which documents the IDF comes from (a fold's training list in the kNN evaluation).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ..core import io
from ..core.methods import Method, as_method, method_by_slug
from ..core.roles import QueryRole, candidates_key
from ..core.variant import (
    DenseDistances,
    Distances,
    Neighbours,
    NeighbourTable,
    Variant,
    positions,
    ranked,
    ranking_rows,
)
from . import baselines
from .neighbour_lists import undefined_ids


class BaselineDistances(Distances):
    """One of the 12 BOW / TF-IDF baselines between the documents of a variant.

    ``counts``: word counts [documents x vocabulary] in doc_id order; ``training``: the
    positions TF-IDF takes its IDF from (ignored by BOW); ``empty``: the documents
    without words. The vectors are weighted once; each block costs only its pairs, and a
    pair's distance does not depend on the block it is computed in (bit for bit), so
    :meth:`nearest` ranks a block of rows at a time (never a dense rows x cols matrix) and
    :meth:`rank_roles` answers many rankings from one block. ``n_jobs`` threads share a
    block; the numbers do not depend on it.
    """

    def __init__(
        self,
        counts: sp.csr_matrix,
        method: Method,
        training: np.ndarray,
        empty: np.ndarray,
        n_jobs: int = 1,
    ):
        if method.is_wmd:
            raise ValueError(f"{method.name} is not a baseline")
        super().__init__(empty)
        idf = baselines.idf_from_training(counts, training) if method.weighting == "tfidf" else None
        self.method = method
        self.vectors = baselines.weighted(counts, method, idf)
        self.n_jobs = n_jobs
        self._unit_rows = baselines.has_unit_rows(method)
        # the column side of the last columns asked for: the row blocks of one ranking share it
        self._columns: tuple[np.ndarray, baselines.Columns] | None = None
        # candidates key -> rankings done ahead (rank_roles): (sorted queries, k, Neighbours)
        self._ranked: dict[str, list[tuple[np.ndarray, int, Neighbours]]] = {}

    def _pairs(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        cols = np.asarray(cols, dtype=np.int64)
        if self._columns is None or not np.array_equal(self._columns[0], cols):
            self._columns = None  # dropped before the next is built
            side = baselines.columns(self.vectors[cols], self.method.metric, self._unit_rows)
            self._columns = (cols, side)
        return baselines.sparse_distances(
            self.vectors[np.asarray(rows, dtype=np.int64)],
            self._columns[1],
            self.method.metric,
            self.n_jobs,
            unit_rows=self._unit_rows,
        )

    def rank_roles(self, roles: Iterable[QueryRole]) -> None:
        """Rank every role's queries among its candidates now, a block of queries at a
        time: each block's distances to the candidates of every role are computed once,
        every role ranks its queries of the block from them, and the block is dropped.
        :meth:`nearest` then answers these rankings (or any with a smaller k) from what
        was kept: k neighbours per query and role. Peak memory: one block, within
        :data:`~wmdeval.core.variant.RANKING_BLOCK_BYTES`, whatever the number of folds.
        The same numbers as ranking each role alone (a pair's distance does not depend on
        its block)."""
        roles = list(roles)
        if not roles:
            return
        queries = np.unique(np.concatenate([role.queries for role in roles]))
        training = np.unique(np.concatenate([role.candidates for role in roles]))
        plans = []
        for role in roles:
            order = np.argsort(role.queries, kind="stable")
            sorted_queries = np.asarray(role.queries, dtype=np.int64)[order]
            at_candidates = np.searchsorted(training, role.candidates)
            found = Neighbours(
                np.empty((len(order), role.k), dtype=np.int64),
                np.empty((len(order), role.k), dtype=np.float64),
            )
            plans.append((role, sorted_queries, at_candidates, found))
        step = ranking_rows(len(training))
        for start in range(0, len(queries), step):
            block_queries = queries[start : start + step]
            dist = self.block(block_queries, training)  # the NaN rule applied
            for role, sorted_queries, at_candidates, found in plans:
                lo = np.searchsorted(sorted_queries, block_queries[0])
                hi = np.searchsorted(sorted_queries, block_queries[-1], side="right")
                if lo == hi:
                    continue
                at_rows = np.searchsorted(block_queries, sorted_queries[lo:hi])
                part = dist[np.ix_(at_rows, at_candidates)]
                found.index[lo:hi], found.distance[lo:hi] = ranked(part, role.k)
                del part
            del dist
        for role, sorted_queries, _, found in plans:
            key = candidates_key(role.candidates)
            self._ranked.setdefault(key, []).append((sorted_queries, role.k, found))

    def nearest(self, rows: np.ndarray, cols: np.ndarray, k: int) -> Neighbours:
        """As :meth:`Distances.nearest`; from the rankings :meth:`rank_roles` kept when
        one of ``cols`` holds every row with at least k neighbours (the first k of a
        query's ranked neighbours are its k nearest: the order is total)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        for sorted_queries, kept_k, found in self._ranked.get(candidates_key(cols), []):
            if k > kept_k:
                continue
            at = np.minimum(np.searchsorted(sorted_queries, rows), len(sorted_queries) - 1)
            if len(sorted_queries) and np.array_equal(sorted_queries[at], rows):
                return Neighbours(found.index[at, :k], found.distance[at, :k])
        return super().nearest(rows, cols, k)


def method_distances(
    variant: Variant,
    method: Method | str,
    fold: int | None = None,
    *,
    training: np.ndarray | None = None,
    n_jobs: int = 1,
) -> Distances:
    """The distances of ``variant``'s documents under ``method`` (a Method, its slug or
    its paper name).

    TF-IDF baselines take their IDF from ``training`` (positions) if given, else from
    ``fold``'s training list, else from every document; BOW baselines and WMD methods
    do not depend on either. A WMD method needs its matrix in the variant.
    """
    method = as_method(method)
    if method.is_wmd:
        if method.slug not in variant.wmd:
            raise io.WmdevalError(f"no {method.name} distances were given")
        return variant.wmd[method.slug]
    if training is not None and fold is not None:
        raise ValueError("give the IDF's training documents as a fold or as positions, not both")
    if training is None:
        training = variant.training(fold)
    return BaselineDistances(variant.counts, method, training, variant.empty(method), n_jobs)


def _matrix_name(slug: str) -> str:
    try:
        return f"{method_by_slug(slug).name} distances"
    except KeyError:
        return f"{slug} distances"


#: A matrix as (doc_ids, square matrix), or how to read it (called when it is needed).
MatrixSource = tuple[np.ndarray, np.ndarray] | Callable[[], tuple[np.ndarray, np.ndarray]]


class MatricesOneAtATime(Mapping[str, Distances]):
    """Method slug -> distances, where some are built on first use from a loader and only
    the last one built is held: the evaluation reads a variant's matrices one method after
    the other, so it needs one matrix in memory, not all of them (20 Newsgroups: 2.8 GB
    each, a dozen per variant). ``held``: distances kept throughout (neighbour tables,
    matrices given in memory). Iterates loaders first, then ``held``, in their orders."""

    def __init__(
        self, loaders: Mapping[str, Callable[[], Distances]], held: Mapping[str, Distances]
    ):
        self._loaders, self._held = dict(loaders), dict(held)
        self._current: tuple[str, Distances] | None = None

    def __getitem__(self, slug: str) -> Distances:
        if slug in self._held:
            return self._held[slug]
        if self._current is not None and self._current[0] == slug:
            return self._current[1]
        load = self._loaders[slug]  # KeyError for an unknown slug, as a dict
        self._current = None  # drop the previous matrix before reading the next
        distances = load()
        self._current = (slug, distances)
        return distances

    def __contains__(self, slug: object) -> bool:  # Mapping's would load the matrix
        return slug in self._loaders or slug in self._held

    def __iter__(self) -> Iterator[str]:
        yield from self._loaders
        yield from (slug for slug in self._held if slug not in self._loaders)

    def __len__(self) -> int:
        return len(self._loaders.keys() | self._held.keys())


def prepare_variant(
    documents: pa.Table,
    splits: pa.Table | None,
    wmd_matrices: Mapping[str, MatrixSource],
    neighbour_tables: Mapping[str, tuple[pa.Table, pa.Table]] | None = None,
) -> Variant:
    """A :class:`Variant` from DOCUMENTS, SPLITS (or None: no folds) and WMD matrices
    (method slug -> (doc_ids, square matrix), as :func:`wmdeval.core.io.read_distances`
    returns them, or a function returning that when called, e.g. a reader of the file:
    then the matrix is read when first used and dropped when the next one is, see
    :class:`MatricesOneAtATime`); each matrix must hold every document.
    ``neighbour_tables``: methods searched or listed in ``wmd.mode: knn`` instead, slug
    -> (NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES) tables; empty documents are those without
    mass under the method's weighting, and those certified undefined
    (:data:`~.neighbour_lists.UNDEFINED`: WCD, the cosine, a user's vectors)."""
    documents = documents.sort_by("doc_id")
    doc_ids = documents.column("doc_id").to_numpy()
    counts, _ = baselines.count_matrix(documents)
    no_words = np.diff(counts.indptr) == 0
    folds = io.fold_indices(splits, doc_ids) if splits is not None else []
    # one fold: WMD may skip the test x test pairs (wmd.skip_test_pairs), left NaN
    unsolved = None
    if len(folds) == 1:
        unsolved = np.zeros(len(doc_ids), dtype=bool)
        unsolved[folds[0][1]] = True

    def dense(slug: str, ids: np.ndarray, matrix: np.ndarray) -> DenseDistances:
        return DenseDistances.from_matrix(
            doc_ids, ids, matrix, _matrix_name(slug), no_words, unsolved
        )

    def loader(slug: str, read: Callable[[], tuple[np.ndarray, np.ndarray]]):
        return lambda: dense(slug, *read())

    loaders = {slug: loader(slug, m) for slug, m in wmd_matrices.items() if callable(m)}
    held: dict[str, Distances] = {
        slug: dense(slug, *m) for slug, m in wmd_matrices.items() if not callable(m)
    }
    for slug, (pairs, certificates) in (neighbour_tables or {}).items():
        if slug in held or slug in loaders:
            raise io.WmdevalError(f"{_matrix_name(slug)}: given as a matrix and a neighbour table")
        empty = _no_tfidf_mass(counts) if slug == "wmd-tfidf" else no_words
        # the documents with words a listed method leaves undefined (neighbour_lists)
        undefined, certificates = undefined_ids(certificates)
        if len(undefined):
            empty = empty.copy()
            empty[positions(doc_ids, undefined, f"{_matrix_name(slug)} (neighbour table)")] = True
        held[slug] = NeighbourTable.from_tables(
            doc_ids, pairs, certificates, empty, f"{_matrix_name(slug)} (neighbour table)"
        )
    return Variant(
        doc_ids=doc_ids,
        labels=np.asarray(documents.column("label").to_pylist(), dtype=object),
        y=documents.column("y").to_numpy().astype(np.int64),
        counts=counts,
        folds=folds,
        wmd=MatricesOneAtATime(loaders, held) if loaders else held,
    )


def _no_tfidf_mass(counts: sp.csr_matrix) -> np.ndarray:
    """bool per document: no word with positive IDF (each occurs in every document), so
    WMD-TF-IDF gives it no mass, as :func:`wmdeval.distances.wmd.solver.prepare` weighs."""
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    informative = (df < counts.shape[0]).astype(np.float64)
    return np.asarray(counts @ informative).ravel() == 0


def read_variant(
    documents_path: str | os.PathLike,
    splits_path: str | os.PathLike | None,
    wmd_paths: Mapping[str, str | os.PathLike],
    neighbour_paths: Mapping[str, tuple[str, str]] | None = None,
) -> Variant:
    """:func:`prepare_variant` from files: DOCUMENTS, SPLITS (or None), WMD method slug
    -> DISTANCES file, and slug -> (NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES) files."""
    from .wmd.search import read_neighbour_tables

    splits = io.read_splits(splits_path) if splits_path is not None else None
    return prepare_variant(
        io.read_documents(documents_path),
        splits,
        {slug: io.read_distances(path) for slug, path in wmd_paths.items()},
        {slug: read_neighbour_tables(*paths) for slug, paths in (neighbour_paths or {}).items()},
    )


__all__ = [
    "BaselineDistances",
    "MatrixSource",
    "MatricesOneAtATime",
    "method_distances",
    "prepare_variant",
    "read_variant",
]
