"""Pairs another variant already solved, offered to a search so it never solves them again.

The clean variant's documents are a subset of the original's, unchanged (duplicates are
dropped, nothing else; docs/protocol.md §3). Under a weighting that depends on a
document alone (bag of words, WRD) and the same word vectors, a pair of two clean
documents has the same exact distance in both variants, bit for bit: the same
:func:`~.solver.solve_pair` on the same words and weights (oriented by doc_id, so the
cost matrix has the same shape and order), stored in float64. TF-IDF weights depend on
the corpus, so WMD-TF-IDF is never reused.

:func:`known_pairs` turns the original's merged NEIGHBOUR_PAIRS table into the
``known`` argument of :func:`~.search.search_queries` (pair id over the clean
variant's positions -> distance); :func:`check_same_documents` refuses a shared doc_id
whose words or counts differ between the two files.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import numpy as np
import pyarrow as pa

from ...core import io, schemas
from ...core.variant import positions

LOG = logging.getLogger("wmdeval.distances.wmd")


class KnownPairs(Mapping):
    """Read-only {pair id: distance} over sorted int64 pair ids (16 bytes a pair, where a
    dict of Python objects would take about 100)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        self._keys = np.asarray(keys, dtype=np.int64)
        self._values = np.asarray(values, dtype=np.float64)
        if np.any(np.diff(self._keys) <= 0):
            raise ValueError("pair ids must be strictly increasing")

    def __getitem__(self, pair: int) -> float:
        value = self.get(pair)
        if value is None:
            raise KeyError(pair)
        return value

    def get(self, pair: int, default=None):
        at = int(np.searchsorted(self._keys, pair))
        if at < len(self._keys) and self._keys[at] == pair:
            return float(self._values[at])
        return default

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys.tolist())

    def __len__(self) -> int:
        return len(self._keys)


def check_same_documents(documents: pa.Table, other: pa.Table, what: str) -> None:
    """Refuse (WmdevalError naming ``what``) unless every document of ``documents`` is in
    ``other`` with the same words and counts."""
    ids = documents.column("doc_id").to_numpy()
    rows = other.take(pa.array(positions(other.column("doc_id").to_numpy(), ids, what)))
    for column in ("words", "counts"):
        mine = documents.column(column).combine_chunks()
        theirs = rows.column(column).combine_chunks()
        if mine.equals(theirs):
            continue
        for k, (a, b) in enumerate(zip(mine.to_pylist(), theirs.to_pylist(), strict=True)):
            if a != b:
                raise io.WmdevalError(
                    f"{what}: doc_id {int(ids[k])} has other {column} than in this variant, "
                    "so its distances cannot be reused"
                )


def known_pairs(pairs: pa.Table, doc_ids: np.ndarray, what: str) -> KnownPairs:
    """The pairs of a NEIGHBOUR_PAIRS table between two of ``doc_ids`` (ascending, the
    search's documents), keyed like the search's solved pairs: min * n + max over
    positions in ``doc_ids``. A pair listed twice (by both of its documents) must have
    the same distance both times, else WmdevalError naming ``what``."""
    doc_ids = np.asarray(doc_ids, dtype=np.int64)
    n = len(doc_ids)
    ends = []
    inside = np.ones(pairs.num_rows, dtype=bool)
    for column in ("query", "candidate"):
        ids = pairs.column(column).to_numpy().astype(np.int64)
        at = np.minimum(np.searchsorted(doc_ids, ids), max(n - 1, 0))
        inside &= (doc_ids[at] == ids) if n else False
        ends.append(at)
    q, c = ends[0][inside], ends[1][inside]
    distance = pairs.column("distance").to_numpy()[inside].astype(np.float64, copy=False)
    key = np.minimum(q, c) * n + np.maximum(q, c)
    order = np.argsort(key, kind="stable")
    key, distance = key[order], distance[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    # the same pair read by both of its documents: the same bits (one solve_pair)
    bits = distance.view(np.int64)
    differs = bits != bits[first][np.cumsum(first) - 1]
    if differs.any():
        k = int(key[np.flatnonzero(differs)[0]])
        raise io.WmdevalError(
            f"{what}: the pair of doc_ids {int(doc_ids[k // n])} and {int(doc_ids[k % n])} "
            "has two different distances"
        )
    return KnownPairs(key[first], distance[first])


def read_known(pairs_path, documents_path, documents: pa.Table) -> KnownPairs:
    """The pairs of the NEIGHBOUR_PAIRS file ``pairs_path`` between two of ``documents``
    (the searching variant's, doc_id ascending), once the DOCUMENTS file
    ``documents_path`` the pairs were solved on is checked to hold each of ``documents``
    with the same words and counts."""
    other = io.read_documents(documents_path)
    check_same_documents(documents, other, str(documents_path))
    pairs = io.read_table(pairs_path, schemas.NEIGHBOUR_PAIRS)
    io.require_float64(pairs, "distance", pairs_path)
    return known_pairs(
        pairs.cast(schemas.NEIGHBOUR_PAIRS), documents.column("doc_id").to_numpy(), str(pairs_path)
    )


def read_reused(reuse_pairs, reuse_documents, documents: pa.Table) -> KnownPairs | None:
    """A search job's ``--reuse-pairs``/``--reuse-documents``: the pairs it takes
    (:func:`read_known`), or None without them; one without the other is refused."""
    if (reuse_pairs is None) != (reuse_documents is None):
        raise io.WmdevalError("reusing pairs needs both their pairs and documents files")
    if reuse_pairs is None:
        return None
    known = read_known(reuse_pairs, reuse_documents, documents)
    LOG.info("%d solved pair(s) of these documents in %s", len(known), reuse_pairs)
    return known


__all__ = ["KnownPairs", "check_same_documents", "known_pairs", "read_known", "read_reused"]
