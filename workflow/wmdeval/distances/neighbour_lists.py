"""Neighbour lists of a method whose every distance is cheap, a block of queries at a time
(``wmd.mode: knn``): no n x n matrix.

WCD, the cosine of mean word vectors, RWMD and a user's document vectors give the
distances from a few documents to every document for little (``rows_of``); kNN and wkNN
read only the k nearest candidates of each query role (:mod:`wmdeval.core.roles`). So
instead of a full matrix, a job computes the rows of a block of its queries, keeps each
candidate list's top k with ties at the k-th included (every candidate whose
:func:`~wmdeval.core.variant.tie_key` is at most the k-th's, as a search keeps the
candidates tied with its k-th), and as the list's certificate the smallest distance of
the others (inf if none), then drops the block. The result is the NEIGHBOUR_PAIRS and
NEIGHBOUR_CERTIFICATES tables a WMD search writes, which evaluation reads by the same
path (:class:`~wmdeval.core.variant.NeighbourTable`), giving the dense matrix's ranking
bit for bit when ``rows_of`` gives the matrix's rows bit for bit.

A document with words that the method leaves undefined (a cosine of a zero mean vector,
a user's NaN vector) is empty for it, as an all-NaN row of a matrix is: it gets one
certificate row under the key :data:`UNDEFINED` (k 0, bound inf), so that evaluation
knows it without the method's inputs (:func:`undefined_ids`).

Query documents are cut into ``n_shards`` contiguous runs of about equal count, one per
job, like a search's (``wmd.search_shards``); a query's part of the tables depends on its
own row and lists alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import io, schemas
from ..core.progress import Progress
from ..core.roles import query_roles
from ..core.variant import tie_key

LOG = logging.getLogger("wmdeval.distances.neighbour_lists")

#: The certificate key of a document with words that the method leaves undefined.
UNDEFINED = "undefined"

#: Entries (rows x documents) of one block of rows: 4 M float64 values, 32 MB, which its
#: ranking copies a few times over (20 Newsgroups' 18,846 documents: 222 rows a block).
BLOCK_ENTRIES = 1 << 22


def block_rows(n: int) -> int:
    """Query rows of one block for ``n`` documents (:data:`BLOCK_ENTRIES`)."""
    return max(1, BLOCK_ENTRIES // max(n, 1))


def no_words(documents: pa.Table) -> np.ndarray:
    """bool per row of DOCUMENTS: no words at all (no defined distance under any method)."""
    lengths = pc.list_value_length(documents.column("words")).fill_null(0)
    return lengths.to_numpy(zero_copy_only=False) == 0


def shard_queries(queries: np.ndarray, shard: int, n_shards: int) -> np.ndarray:
    """Shard ``shard`` (0-based) of ``n_shards`` contiguous runs of ``queries`` whose sizes
    differ by one at most."""
    if n_shards < 1 or not 0 <= shard < n_shards:
        raise io.WmdevalError(f"shard {shard + 1} is not in 1..{n_shards}")
    n = len(queries)
    return queries[shard * n // n_shards : (shard + 1) * n // n_shards]


def neighbour_lists(
    doc_ids: np.ndarray,
    empty: np.ndarray,
    undefined: np.ndarray,
    folds: list[tuple[np.ndarray, np.ndarray]],
    settings: Mapping | None,
    rows_of: Callable[[np.ndarray], np.ndarray],
    shard: int = 0,
    n_shards: int = 1,
    block: int | None = None,
    report: str | None = None,
) -> tuple[pa.Table, pa.Table]:
    """(NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES) of query shard ``shard`` of ``n_shards``.

    ``doc_ids``: the variant's, ascending (positions index them); ``empty``: bool per
    document, no defined distance under the method (it decides the query roles, as for
    evaluation); ``undefined``: those of them with words (certified under
    :data:`UNDEFINED`, by the first shard); ``folds``, ``settings``: the splits' (train,
    test) positions and the ``evaluation:`` config. ``rows_of(queries)``: float64
    [len(queries), n] distances from those positions to every document, NaN where
    undefined. ``block``: rows computed at a time (default :func:`block_rows`).
    ``report``: subject of the progress lines in the log (None: none).
    """
    from .wmd.search import query_tasks  # the search's grouping of a query's lists

    n = len(doc_ids)
    empty = np.asarray(empty, dtype=bool)
    roles = query_roles(folds, empty, settings)
    queries = (
        np.unique(np.concatenate([role.queries for role in roles]))
        if roles
        else np.zeros(0, dtype=np.int64)
    )
    mine = shard_queries(queries, shard, n_shards)
    tasks = query_tasks(roles, empty, mine)
    step = block if block else block_rows(n)
    progress = Progress(LOG if report else None, report or "", len(mine), "queries")
    pair_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    certificates: list[tuple[int, str, int, float]] = []
    for start in range(0, len(mine), step):
        queries_here = mine[start : start + step]
        rows = rows_of(queries_here)
        if rows.shape != (len(queries_here), n):
            raise ValueError(f"rows_of gave shape {rows.shape}, expected {(len(queries_here), n)}")
        found = _block_lists(queries_here, rows, tasks)
        pair_parts.append(found[0])
        certificates += found[1]
        progress.advance(len(queries_here))
    progress.finish()
    if shard == 0:
        certificates += [(int(q), UNDEFINED, 0, np.inf) for q in np.flatnonzero(undefined)]
    return _pairs_table(doc_ids, pair_parts), _certificates_table(doc_ids, certificates)


def _block_lists(
    queries: np.ndarray, rows: np.ndarray, tasks: Mapping[int, list]
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], list[tuple[int, str, int, float]]]:
    """The pairs (query, candidate, distance positions/values, each pair once, by query
    then candidate) and certificates of a block of ``queries`` from their ``rows``."""
    # the block's queries grouped by candidate list and k: one ranking per group
    groups: dict[tuple[str, int], tuple[np.ndarray, list[int]]] = {}
    for r, q in enumerate(queries.tolist()):
        for task in tasks.get(q, []):
            groups.setdefault((task.key, task.k), (task.candidates, []))[1].append(r)
    found_q, found_c, found_d = [], [], []
    certificates = []
    for (key, k), (candidates, members) in sorted(groups.items()):
        at = np.asarray(members, dtype=np.int64)
        values = rows[np.ix_(at, candidates)] if len(candidates) else np.zeros((len(at), 0))
        # a query without a defined distance to its (non-empty) candidates is empty: no
        # list, an infinite certificate (as the search and relaxed_lists leave it)
        defined = ~np.isnan(values).any(axis=1) & (values.shape[1] > 0)
        bound = np.full(len(at), np.inf)
        if defined.any():
            mine = values[defined]
            keys = tie_key(mine)
            last = min(k, mine.shape[1]) - 1
            kth = np.partition(keys, last, axis=1)[:, last]
            inside = keys <= kth[:, None]
            r, c = np.nonzero(inside)
            found_q.append(queries[at[defined][r]])
            found_c.append(candidates[c])
            found_d.append(mine[r, c])
            bound[defined] = np.where(inside, np.inf, mine).min(axis=1)
        certificates += [
            (int(queries[a]), key, int(k), float(b)) for a, b in zip(at, bound, strict=True)
        ]
    if not found_q:
        none = np.zeros(0, dtype=np.int64)
        return (none, none, np.zeros(0)), certificates
    q = np.concatenate(found_q)
    c = np.concatenate(found_c)
    d = np.concatenate(found_d)
    order = np.lexsort((c, q))
    q, c, d = q[order], c[order], d[order]
    # a candidate in two lists of its query: stored once (the same value from its row)
    first = np.ones(len(q), dtype=bool)
    first[1:] = (q[1:] != q[:-1]) | (c[1:] != c[:-1])
    return (q[first], c[first], d[first]), certificates


def _pairs_table(doc_ids: np.ndarray, parts: list) -> pa.Table:
    q = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    c = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    d = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    return pa.table(
        {
            "query": doc_ids[q].astype(np.int32),
            "candidate": doc_ids[c].astype(np.int32),
            "distance": d.astype(np.float64),
        },
        schema=schemas.NEIGHBOUR_PAIRS,
    )


def _certificates_table(doc_ids: np.ndarray, rows: list[tuple[int, str, int, float]]) -> pa.Table:
    rows = sorted(rows)
    return pa.table(
        {
            "query": np.array([int(doc_ids[r[0]]) for r in rows], dtype=np.int32),
            "candidates": pa.array([r[1] for r in rows], type=pa.string()),
            "k": np.array([r[2] for r in rows], dtype=np.int32),
            "unsolved_bound": np.array([r[3] for r in rows], dtype=np.float64),
        },
        schema=schemas.NEIGHBOUR_CERTIFICATES,
    )


def undefined_ids(certificates: pa.Table) -> tuple[np.ndarray, pa.Table]:
    """(doc_ids certified :data:`UNDEFINED`, the other certificates) of a method's
    NEIGHBOUR_CERTIFICATES table."""
    marked = pc.equal(certificates.column("candidates"), UNDEFINED).fill_null(False)
    ids = certificates.filter(marked).column("query").to_numpy().astype(np.int64)
    return ids, certificates.filter(pc.invert(marked))


def write_lists(tables: tuple[pa.Table, pa.Table], out_pairs, out_certificates) -> None:
    """Write a shard's two tables (atomically, each)."""
    io.write_table(tables[0], out_pairs, schemas.NEIGHBOUR_PAIRS)
    io.write_table(tables[1], out_certificates, schemas.NEIGHBOUR_CERTIFICATES)
    LOG.info("%d pairs, %d certificates", tables[0].num_rows, tables[1].num_rows)


def write_shard_lists(
    documents: pa.Table,
    doc_ids: np.ndarray,
    undefined: np.ndarray,
    folds: list,
    settings: Mapping | None,
    rows_of: Callable[[np.ndarray], np.ndarray],
    shard: int,
    n_shards: int,
    report: str,
    out_pairs,
    out_certificates,
) -> None:
    """A method's job: the lists of one query shard (:func:`neighbour_lists`), written.
    ``documents`` in ``doc_ids`` order; ``undefined``: the documents whose rows the method
    leaves NaN (those with words among them are certified as undefined)."""
    without_words = no_words(documents)
    tables = neighbour_lists(
        doc_ids,
        without_words | undefined,
        undefined & ~without_words,
        folds,
        settings,
        rows_of,
        shard,
        n_shards,
        report=report,
    )
    write_lists(tables, out_pairs, out_certificates)


__all__ = [
    "UNDEFINED",
    "BLOCK_ENTRIES",
    "block_rows",
    "no_words",
    "shard_queries",
    "neighbour_lists",
    "undefined_ids",
    "write_lists",
    "write_shard_lists",
]
