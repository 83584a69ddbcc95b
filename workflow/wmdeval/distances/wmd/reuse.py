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
from ...core.roles import QueryRole, candidates_key, query_roles
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

    def lookup(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, distance) for many pair ids at once: bool per pair, and its distance
        where found (a search's whole candidate list in one call, not one by one)."""
        pairs = np.asarray(pairs, dtype=np.int64)
        if not len(self._keys):
            return np.zeros(len(pairs), dtype=bool), np.zeros(len(pairs))
        at = np.minimum(np.searchsorted(self._keys, pairs), len(self._keys) - 1)
        found = self._keys[at] == pairs
        return found, np.where(found, self._values[at], 0.0)

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


def _list_ids(role: QueryRole, empty: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """The doc_ids a role's query is ranked among (its searched candidates: without the
    documents empty under the method), ascending."""
    return doc_ids[role.candidates[~empty[role.candidates]]]


class Floors(dict):
    """The floors of :func:`certificate_floors`: (query position, candidate list key) ->
    the floor of a list (a dict, as the search's ``floors`` argument takes it), and in
    ``candidates`` the floors of single pairs (:class:`CandidateFloors`)."""

    def __init__(self, lists=(), candidates: CandidateFloors | None = None):
        super().__init__(lists)
        self.candidates = candidates if candidates is not None else CandidateFloors({}, {})


class CandidateFloors:
    """Lower bounds of single pairs from the original's certificates, for the lists no
    floor settles. An original certificate (query d, list L, bound F) bounds WMD(d, x) by
    F for every x of L that the original's search of d left unsolved, whatever list of
    the searching variant it is now in: as a candidate x of query d (a clean validation
    query's fit list is a new random subset of its training list, rarely within the
    original's, yet mostly inside the original's list of the same document), and, WMD
    being symmetric, as a candidate d of query x. ``members``: original list key -> bool
    over the searching variant's positions; ``by_query``: query position -> [(original
    list key, its bound)] of its own certificates; ``by_list``: original list key ->
    (positions of the documents certified on it, their bounds). A known pair (the
    original's solves) is not bounded by them: its distance is taken instead."""

    def __init__(
        self,
        members: dict[str, np.ndarray],
        by_query: dict[int, list[tuple[str, float]]],
        by_list: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
    ):
        self.members, self.by_query = members, by_query
        self.by_list = by_list if by_list is not None else {}

    def row(self, query: int, n: int) -> np.ndarray | None:
        """float64 [n]: the largest floor of the pair of ``query`` with each document
        (-inf where none, and at ``query`` itself), or None if it has none."""
        mine = self.by_query.get(query, ())
        theirs = [key for key in self.by_list if self.members[key][query]]
        if not mine and not theirs:
            return None
        row = np.full(n, -np.inf)
        for key, bound in mine:
            member = self.members[key]
            row[member] = np.maximum(row[member], bound)
        for key in theirs:
            certified, bounds = self.by_list[key]
            row[certified] = np.maximum(row[certified], bounds)
        row[query] = -np.inf  # its distance to itself is 0, never bounded
        return row


def certificate_floors(
    doc_ids: np.ndarray,
    empty: np.ndarray,
    roles: list[QueryRole],
    original_doc_ids: np.ndarray,
    original_empty: np.ndarray,
    original_roles: list[QueryRole],
    certificates: pa.Table,
    what: str,
) -> Floors:
    """Per (query position, candidate list key) of ``roles`` (the searching variant's,
    over ``doc_ids``): the largest ``unsolved_bound`` of the original's ``certificates``
    (NEIGHBOUR_CERTIFICATES over ``original_doc_ids``, searched for ``original_roles``)
    for the same document among a list that holds every candidate of this one, with a k
    at least this list's (the largest k of the roles sharing it). Only such a list
    proves something: its certificate bounds the candidates the original left unsolved,
    and a smaller k stops on a nearer k-th. Lists without one get no floor.

    And in ``.candidates`` (:class:`CandidateFloors`) every finite certificate of a
    document the searching variant holds, whatever its list and k: it bounds that
    document's pair with each member of its list the original left unsolved, one by
    one, from either side.

    A certificate whose query is not an original document, or whose key is not a list
    the original's roles give that query, was searched on other splits or settings:
    WmdevalError naming ``what``. Certificates may cover only some queries (a forecast's
    sample)."""
    original_doc_ids = np.asarray(original_doc_ids)
    lists: dict[str, np.ndarray] = {}
    wanted: dict[int, set[str]] = {}  # original doc_id -> keys its roles give it
    for role in original_roles:
        key = candidates_key(role.candidates)
        lists.setdefault(key, _list_ids(role, original_empty, original_doc_ids))
        for q in original_doc_ids[role.queries].tolist():
            wanted.setdefault(q, set()).add(key)
    cert_ids = certificates.column("query").to_numpy()
    keys = certificates.column("candidates").to_pylist()
    ks = certificates.column("k").to_numpy().astype(np.int64)
    bounds = certificates.column("unsolved_bound").to_numpy().astype(np.float64)
    by_query: dict[int, list[tuple[str, int, float]]] = {}
    for q, key, k, bound in zip(cert_ids.tolist(), keys, ks.tolist(), bounds.tolist(), strict=True):
        if key not in wanted.get(q, ()):
            raise io.WmdevalError(
                f"{what}: the certificate of doc_id {q} names a candidate list that the "
                "original's documents, splits and evaluation settings do not give it"
            )
        if np.isnan(bound):
            raise io.WmdevalError(f"{what}: unsolved_bound of doc_id {q} is NaN")
        by_query.setdefault(q, []).append((key, k, bound))

    # which original lists hold each of ours (a few lists each: folds x roles)
    holds: dict[str, set[str]] = {}
    needed: dict[tuple[int, str], int] = {}
    for role in roles:
        key = candidates_key(role.candidates)
        if key not in holds:
            mine = _list_ids(role, empty, doc_ids)
            holds[key] = {
                other
                for other, theirs in lists.items()
                if len(mine) <= len(theirs) and np.isin(mine, theirs).all()
            }
        for q in role.queries.tolist():
            needed[(q, key)] = max(needed.get((q, key), 0), role.k)
    floors = {}
    for (q, key), k in needed.items():
        found = [
            bound
            for other, k_other, bound in by_query.get(int(doc_ids[q]), ())
            if other in holds[key] and k_other >= k
        ]
        if found:
            floors[(q, key)] = max(found)
    # single pairs: each finite certificate of a document the searching variant holds,
    # by its query (for that query's candidates) and by its list (for the lists' members
    # as queries); a certificate of inf bounds nothing (every candidate was solved)
    members: dict[str, np.ndarray] = {}
    single: dict[int, list[tuple[str, float]]] = {}
    listed: dict[str, tuple[list[int], list[float]]] = {}
    position = {int(d): k for k, d in enumerate(np.asarray(doc_ids).tolist())}
    for q_id, certified in by_query.items():
        q = position.get(q_id)
        if q is None:
            continue  # dropped by the searching variant
        for other, _, bound in certified:
            if not np.isfinite(bound):
                continue
            if other not in members:
                members[other] = np.isin(doc_ids, lists[other])
            single.setdefault(q, []).append((other, bound))
            at, values = listed.setdefault(other, ([], []))
            at.append(q)
            values.append(bound)
    by_list = {
        key: (np.array(at, dtype=np.int64), np.array(values, dtype=np.float64))
        for key, (at, values) in listed.items()
    }
    return Floors(floors, CandidateFloors(members, single, by_list))


def read_floors(
    certificates_path,
    splits_path,
    documents_path,
    inputs,
    folds: list[tuple[np.ndarray, np.ndarray]],
    settings,
    embeddings: pa.Table,
    weighting: str,
) -> Floors:
    """:func:`certificate_floors` of the searching variant (``inputs``, ``folds``) from the
    original's merged NEIGHBOUR_CERTIFICATES file, its SPLITS and DOCUMENTS files: the
    original's lists are recomputed from them as its search computed them (the same
    ``settings``, its documents empty under ``weighting``).

    Under "bow" and "wrd" a document's emptiness is its own (no corpus statistic), and
    the searching variant's documents are the original's unchanged (:func:`read_known`
    checked them), so only the original's other documents are prepared to learn theirs:
    a second :func:`~.solver.prepare` of the whole original would double the job's peak
    memory for nothing."""
    from .solver import prepare

    if weighting == "tfidf":
        raise io.WmdevalError(
            f"{certificates_path}: TF-IDF weights depend on the corpus, so another "
            "variant's certificates do not hold"
        )
    original = io.read_documents(documents_path)
    original_ids = original.column("doc_id").to_numpy()
    if np.any(np.diff(original_ids) <= 0):
        raise io.WmdevalError(f"{documents_path}: doc_id must be ascending")
    original_empty = np.zeros(len(original_ids), dtype=bool)
    mine = np.isin(original_ids, inputs.doc_ids)
    original_empty[mine] = inputs.empty[np.searchsorted(inputs.doc_ids, original_ids[mine])]
    others = np.flatnonzero(~mine)
    if len(others):
        original_empty[others] = prepare(
            original.take(pa.array(others)), embeddings, weighting
        ).empty
    original_folds = io.fold_indices(io.read_splits(splits_path), original_ids)
    certificates = io.read_table(certificates_path, schemas.NEIGHBOUR_CERTIFICATES)
    try:
        certificates = certificates.cast(schemas.NEIGHBOUR_CERTIFICATES)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise io.WmdevalError(f"{certificates_path}: not neighbour certificates ({exc})") from None
    floors = certificate_floors(
        inputs.doc_ids,
        inputs.empty,
        query_roles(folds, inputs.empty, settings),
        original_ids,
        original_empty,
        query_roles(original_folds, original_empty, settings),
        certificates,
        str(certificates_path),
    )
    LOG.info("%d candidate list(s) of these queries floored by %s", len(floors), certificates_path)
    return floors


def read_reuse(
    documents: pa.Table,
    inputs,
    folds,
    settings,
    embeddings: pa.Table,
    weighting: str,
    reuse_pairs=None,
    reuse_documents=None,
    reuse_certificates=None,
    reuse_splits=None,
) -> tuple[KnownPairs | None, dict | None]:
    """A search job's four reuse files (``--reuse-pairs``, ``--reuse-documents``,
    ``--reuse-certificates``, ``--reuse-splits``): (known pairs, floors), or (None, None)
    without them; some but not all of them are refused."""
    given = [reuse_pairs, reuse_documents, reuse_certificates, reuse_splits]
    if any(p is None for p in given) and any(p is not None for p in given):
        raise io.WmdevalError(
            "reusing another variant's search needs all of --reuse-pairs, --reuse-documents, "
            "--reuse-certificates and --reuse-splits"
        )
    if reuse_pairs is None:
        return None, None
    known = read_reused(reuse_pairs, reuse_documents, documents)
    floors = read_floors(
        reuse_certificates,
        reuse_splits,
        reuse_documents,
        inputs,
        folds,
        settings,
        embeddings,
        weighting,
    )
    return known, floors


__all__ = [
    "CandidateFloors",
    "Floors",
    "KnownPairs",
    "certificate_floors",
    "check_same_documents",
    "known_pairs",
    "read_floors",
    "read_known",
    "read_reuse",
    "read_reused",
]
