"""Duplicate detection and removal (docs/protocol.md §3, the paper's "Misleading Point 1").

Two documents are duplicates when their bags of words are identical. DOCUMENTS stores
each document's words sorted and distinct, so the (word, count) sequence *is* the
canonical bag. Detection is linear: every bag gets a 64-bit hash, documents are grouped
by equal hashes, and membership is confirmed by comparing the bags element by element,
so a hash collision can never merge two different bags.

Everything works on the flattened Arrow columns with numpy (words dictionary-encoded to
integer ids); no per-document Python objects are built except when a hash collision has
to be resolved.

The summary has two rows per dataset: ``original`` and ``clean`` (the survivors and their
restricted splits). The clean row is computed from scratch on the clean variant, so its
zero duplicate pairs double as a check of the cleaning.

Near duplicates (optional): pairs of non-identical documents whose L1-normalised bags are
within a given L1 distance, found by prefix filtering (see :func:`near_duplicate_pairs`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import schemas
from ..core.errors import WmdevalError
from ..core.io import read_documents, read_splits, write_table
from .vocabulary import select_variant

log = logging.getLogger("wmdeval.cleaning.duplicates")

#: The per-dataset report (``duplicates/summary.parquet``): one row per variant.
SUMMARY = pa.schema(
    [
        pa.field("dataset", pa.string()),
        pa.field("variant", pa.string()),
        pa.field("documents", pa.int64()),
        pa.field("duplicate_pairs", pa.int64()),
        pa.field("duplicate_samples", pa.int64()),
        pa.field("groups", pa.int64()),
        pa.field("largest_group", pa.int64()),
        pa.field("pairs_different_labels", pa.int64()),
        pa.field("pairs_across_train_test_any_fold", pa.int64()),
        pa.field("pairs_across_train_test_per_fold", pa.list_(pa.int64())),
    ]
)

#: Optional near-duplicate report (``duplicates/near.parquet``), sorted by (doc_a, doc_b).
NEAR_DUPLICATES = pa.schema(
    [
        pa.field("doc_a", pa.int32()),
        pa.field("doc_b", pa.int32()),
        pa.field("l1_distance", pa.float64()),
        pa.field("label_a", pa.string()),
        pa.field("label_b", pa.string()),
    ]
)

NOT_A_DUPLICATE = -1
TRAIN, TEST = 1, 2  # fold membership states; 0 = not in the fold


# ----------------------------------------------------------------------------- corpus
@dataclass(frozen=True)
class Corpus:
    """DOCUMENTS flattened to numpy: document ``d`` owns entries ``offsets[d]:offsets[d+1]``."""

    doc_ids: np.ndarray  # int64 [n], in table order
    labels: np.ndarray  # int64 [n], codes into label_names
    label_names: np.ndarray  # str [labels]
    offsets: np.ndarray  # int64 [n + 1]
    word_ids: np.ndarray  # int64 [entries], codes of the words (same word = same code)
    counts: np.ndarray  # float64 [entries]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.doc_ids)


def flatten_documents(documents: pa.Table) -> Corpus:
    words = documents.column("words").combine_chunks()
    counts = documents.column("counts").combine_chunks()
    lengths = pc.fill_null(pc.list_value_length(words), 0).to_numpy().astype(np.int64)
    count_lengths = pc.fill_null(pc.list_value_length(counts), 0).to_numpy()
    if not np.array_equal(lengths, count_lengths):
        raise WmdevalError("documents: 'words' and 'counts' differ in length for some document")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    word_codes = pc.list_flatten(words).dictionary_encode()
    labels = documents.column("label").combine_chunks().dictionary_encode()
    return Corpus(
        doc_ids=documents.column("doc_id").to_numpy().astype(np.int64),
        labels=labels.indices.to_numpy().astype(np.int64),
        label_names=np.asarray(labels.dictionary.to_pylist(), dtype=object),
        offsets=offsets,
        word_ids=word_codes.indices.to_numpy().astype(np.int64),
        counts=pc.list_flatten(counts).to_numpy().astype(np.float64),
    )


def concatenated_ranges(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(concatenation of ``arange(s, s + l)`` for every (s, l), index of the range of each)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    range_start = np.cumsum(lengths) - lengths
    within = np.arange(int(lengths.sum())) - range_start[owner]
    return np.asarray(starts, dtype=np.int64)[owner] + within, owner


def positions_of(doc_ids: np.ndarray, wanted: np.ndarray, what: str) -> np.ndarray:
    """Row positions of the ``wanted`` doc ids among ``doc_ids``."""
    if not len(wanted):
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(doc_ids, kind="stable")
    found = order[np.minimum(np.searchsorted(doc_ids, wanted, sorter=order), len(doc_ids) - 1)]
    if not len(doc_ids) or np.any(doc_ids[found] != wanted):
        raise WmdevalError(f"{what} name documents that are not in the documents")
    return found


def document_totals(corpus: Corpus) -> np.ndarray:
    """Sum of the counts of every document (0 for an empty one)."""
    owner = np.repeat(np.arange(len(corpus)), corpus.lengths)
    return np.bincount(owner, weights=corpus.counts, minlength=len(corpus))


# ----------------------------------------------------------------------------- exact groups
def _splitmix64(x: np.ndarray) -> np.ndarray:
    """A bijective 64-bit mixer: nearby inputs get unrelated outputs (uint64 wraps)."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def bag_hashes(corpus: Corpus) -> np.ndarray:
    """A uint64 hash of every document's bag.

    Each (word, count) entry is mixed to 64 bits and a document's hash is the (wrapping)
    sum of its entries: a word occurs once per bag, so the sum is a hash of the set of
    entries, and per-document sums are two lookups in one cumulative sum.
    """
    with np.errstate(over="ignore"):
        key = corpus.word_ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        entry = _splitmix64(key ^ corpus.counts.view(np.uint64))
        cumulative = np.zeros(len(entry) + 1, dtype=np.uint64)
        np.cumsum(entry, out=cumulative[1:])
        return cumulative[corpus.offsets[1:]] - cumulative[corpus.offsets[:-1]]


def bags_equal(corpus: Corpus, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per pair (a[k], b[k]) of row positions: are the two bags identical?"""
    lengths = corpus.lengths
    equal = lengths[a] == lengths[b]
    same_length = np.flatnonzero(equal)
    entries_a, pair = concatenated_ranges(corpus.offsets[a[same_length]], lengths[a[same_length]])
    entries_b, _ = concatenated_ranges(corpus.offsets[b[same_length]], lengths[b[same_length]])
    differs = (corpus.word_ids[entries_a] != corpus.word_ids[entries_b]) | (
        corpus.counts[entries_a] != corpus.counts[entries_b]
    )
    mismatches = np.bincount(pair[differs], minlength=len(same_length))
    equal[same_length] = mismatches == 0
    return equal


def _exact_classes(corpus: Corpus, rows: np.ndarray) -> np.ndarray:
    """For each row, the first of ``rows`` with the identical bag (slow path, collisions only)."""
    first_with_bag: dict[tuple[bytes, bytes], int] = {}
    out = np.empty(len(rows), dtype=np.int64)
    for k, row in enumerate(rows.tolist()):
        start, end = corpus.offsets[row], corpus.offsets[row + 1]
        bag = (corpus.word_ids[start:end].tobytes(), corpus.counts[start:end].tobytes())
        out[k] = first_with_bag.setdefault(bag, row)
    return out


def duplicate_group_numbers(corpus: Corpus) -> np.ndarray:
    """Per document, its duplicate group number (-1: no duplicate).

    Groups are numbered 0, 1, ... in the order of their smallest doc_id.
    """
    n = len(corpus)
    out = np.full(n, NOT_A_DUPLICATE, dtype=np.int64)
    if n < 2:
        return out
    hashes = bag_hashes(corpus)
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    block_start = np.flatnonzero(np.r_[True, sorted_hashes[1:] != sorted_hashes[:-1]])
    block_size = np.diff(np.r_[block_start, n])
    block = np.repeat(np.arange(len(block_start)), block_size)
    in_shared_block = block_size[block] > 1
    candidates = order[in_shared_block]
    # Confirm: every candidate is compared with its hash block's first document; the rare
    # ones that differ (hash collisions) are partitioned exactly by their bags.
    representative = order[block_start][block[in_shared_block]]
    same = bags_equal(corpus, candidates, representative)
    klass = representative.copy()
    klass[~same] = _exact_classes(corpus, candidates[~same])

    classes, class_of, class_size = np.unique(klass, return_inverse=True, return_counts=True)
    smallest_id = np.full(len(classes), np.iinfo(np.int64).max)
    np.minimum.at(smallest_id, class_of, corpus.doc_ids[candidates])
    real = class_size > 1
    number = np.full(len(classes), NOT_A_DUPLICATE, dtype=np.int64)
    number[real] = np.argsort(np.argsort(smallest_id[real], kind="stable"), kind="stable")
    out[candidates] = number[class_of]
    return out


def groups_from_numbers(doc_ids: np.ndarray, group_numbers: np.ndarray) -> list[np.ndarray]:
    members = np.flatnonzero(group_numbers >= 0)
    by_group = members[np.lexsort((doc_ids[members], group_numbers[members]))]
    bounds = np.flatnonzero(np.diff(group_numbers[by_group])) + 1
    return [doc_ids[g] for g in np.split(by_group, bounds)] if len(by_group) else []


def duplicate_groups(documents: pa.Table) -> list[np.ndarray]:
    """Groups (each of >= 2 doc ids, ascending) of documents with identical bags,
    ordered by their smallest doc id."""
    corpus = flatten_documents(documents)
    return groups_from_numbers(corpus.doc_ids, duplicate_group_numbers(corpus))


# ----------------------------------------------------------------------------- cleaning
def survivor_mask(group_numbers: np.ndarray, seed: int) -> np.ndarray:
    """Per document: does the clean variant keep it?

    The paper's rule visits documents in ``np.random.RandomState(seed).permutation(n)``
    order and drops a document if a duplicate of it is already kept; so every document
    without duplicates is kept, and of each group exactly its first-visited member.
    """
    n = len(group_numbers)
    visit_rank = np.empty(n, dtype=np.int64)
    visit_rank[np.random.RandomState(seed).permutation(n)] = np.arange(n)
    keep = group_numbers < 0
    members = np.flatnonzero(~keep)
    if not len(members):
        return keep
    by_group_then_visit = members[np.lexsort((visit_rank[members], group_numbers[members]))]
    group = group_numbers[by_group_then_visit]
    keep[by_group_then_visit[np.r_[True, group[1:] != group[:-1]]]] = True
    return keep


def kept_documents(doc_ids: np.ndarray, groups: list[np.ndarray], seed: int) -> np.ndarray:
    """Doc ids of the clean variant (in the order of ``doc_ids``): one survivor per group."""
    doc_ids = np.asarray(doc_ids)
    group_numbers = np.full(len(doc_ids), NOT_A_DUPLICATE, dtype=np.int64)
    if groups:
        members = np.concatenate(groups)
        group_numbers[positions_of(doc_ids, members, "duplicate groups")] = np.repeat(
            np.arange(len(groups)), [len(g) for g in groups]
        )
    return doc_ids[survivor_mask(group_numbers, seed)]


# ----------------------------------------------------------------------------- report
def pair_count(sizes: np.ndarray) -> int:
    sizes = np.asarray(sizes, dtype=np.int64)
    return int((sizes * (sizes - 1) // 2).sum())


def fold_states(corpus: Corpus, splits: pa.Table) -> np.ndarray:
    """int8 [documents, folds]: 0 not in the fold, TRAIN or TEST (folds in sorted order)."""
    folds = splits.column("fold").to_numpy().astype(np.int64)
    subset = splits.column("subset").combine_chunks()
    is_test = pc.equal(subset, "test").to_numpy(zero_copy_only=False)
    is_train = pc.equal(subset, "train").to_numpy(zero_copy_only=False)
    if not np.all(is_test | is_train):
        raise WmdevalError("splits: 'subset' must be 'train' or 'test'")
    fold_values, fold = np.unique(folds, return_inverse=True)
    rows = positions_of(
        corpus.doc_ids, splits.column("doc_id").to_numpy().astype(np.int64), "splits"
    )
    states = np.zeros((len(corpus), len(fold_values)), dtype=np.int8)
    states[rows, fold] = np.where(is_test, TEST, TRAIN)
    return states


def crossing_pairs_per_fold(group: np.ndarray, states: np.ndarray, n_groups: int) -> np.ndarray:
    """Per fold, duplicate pairs with one member in train and one in test.

    ``group`` and ``states`` describe the group members only. Within a group and fold,
    every train member pairs with every test member, so the count is a product.
    """
    train = np.zeros((n_groups, states.shape[1]), dtype=np.int64)
    test = np.zeros_like(train)
    np.add.at(train, group, states == TRAIN)
    np.add.at(test, group, states == TEST)
    return (train * test).sum(axis=0)


def crossing_pairs_any_fold(group: np.ndarray, states: np.ndarray) -> int:
    """Duplicate pairs that cross train/test in at least one fold.

    Members of a group with the same fold states (a row of ``states``) never cross each
    other, so the members are first collapsed to (group, states) patterns with counts;
    only pairs of distinct patterns of one group are compared (at most 3**folds per group,
    however big the group).
    """
    patterns, size = np.unique(np.column_stack([group, states]), axis=0, return_counts=True)
    pattern_group = patterns[:, 0]
    group_end = np.searchsorted(pattern_group, pattern_group, side="right")
    first = np.arange(len(patterns))
    second, owner = concatenated_ranges(first + 1, group_end - first - 1)
    a, b = patterns[first[owner], 1:], patterns[second, 1:]
    crosses = (((a == TRAIN) & (b == TEST)) | ((a == TEST) & (b == TRAIN))).any(axis=1)
    return int((size[first[owner]] * size[second])[crosses].sum())


def summarise(
    corpus: Corpus, group_numbers: np.ndarray, splits: pa.Table, dataset: str, variant: str
) -> dict:
    """The Table 1 counts and their diagnostics for one dataset variant."""
    members = np.flatnonzero(group_numbers >= 0)
    group = group_numbers[members]
    n_groups = int(group.max()) + 1 if len(group) else 0
    sizes = np.bincount(group, minlength=n_groups)
    n_labels = len(corpus.label_names)
    same_label_sizes = np.bincount(group * n_labels + corpus.labels[members])
    member_states = fold_states(corpus, splits)[members]
    return {
        "dataset": dataset,
        "variant": variant,
        "documents": len(corpus),
        "duplicate_pairs": pair_count(sizes),
        "duplicate_samples": int(sizes.sum()),
        "groups": n_groups,
        "largest_group": int(sizes.max()) if n_groups else 0,
        "pairs_different_labels": pair_count(sizes) - pair_count(same_label_sizes),
        "pairs_across_train_test_any_fold": crossing_pairs_any_fold(group, member_states),
        "pairs_across_train_test_per_fold": crossing_pairs_per_fold(
            group, member_states, n_groups
        ).tolist(),
    }


def groups_table(corpus: Corpus, group_numbers: np.ndarray, keep: np.ndarray) -> pa.Table:
    """DUPLICATE_GROUPS: every document that has a duplicate, by group then doc_id."""
    members = np.flatnonzero(group_numbers >= 0)
    rows = members[np.lexsort((corpus.doc_ids[members], group_numbers[members]))]
    return pa.table(
        {
            "group": pa.array(group_numbers[rows].astype(np.int32)),
            "doc_id": pa.array(corpus.doc_ids[rows].astype(np.int32)),
            "label": pa.array(corpus.label_names[corpus.labels[rows]].tolist(), pa.string()),
            "kept": pa.array(keep[rows]),
        },
        schema=schemas.DUPLICATE_GROUPS,
    )


# ----------------------------------------------------------------------------- near duplicates
#: Widening of the prefix threshold so that rounding can only add candidates, never lose one.
PREFIX_SLACK = 1e-9
#: Bounds on the memory of the exact check: cells of its dense rows (32 MB of float64)
#: and words of second documents handled at once (~100 MB of temporaries).
DENSE_CELLS = 1 << 22
ENTRIES_PER_BATCH = 1 << 21


def prefix_entries(corpus: Corpus, max_l1: float) -> np.ndarray:
    """Entry positions forming every document's *prefix*: its rarest words, in a global
    order (ascending document frequency, then word code), up to and including the word
    at which the prefix first carries more than ``max_l1 / 2`` of the document's mass.

    Why no near-duplicate pair is lost. For L1-normalised p and q,
    ||p - q||_1 = 2 - 2 * sum_w min(p_w, q_w), so ||p - q||_1 <= t requires a shared mass
    sum_w min(p_w, q_w) >= 1 - t/2. Suppose the prefixes P(p) and P(q) shared no word.
    Let w_p, w_q be their last words in the global order and say w_p <= w_q. A word of
    P(p) that q also contains comes no later than w_q, so it lies in P(q), which is
    impossible; hence every word the two documents share lies outside P(p), and the
    shared mass is at most p's mass outside P(p), which is < 1 - t/2 by construction.
    So every pair within distance t shares a prefix word, and pairing documents through
    an inverted index of prefix words finds them all.
    """
    lengths = corpus.lengths
    owner = np.repeat(np.arange(len(corpus)), lengths)
    document_frequency = np.bincount(corpus.word_ids)
    word_rank = np.empty(len(document_frequency), dtype=np.int64)
    word_rank[np.lexsort((np.arange(len(document_frequency)), document_frequency))] = np.arange(
        len(document_frequency)
    )
    # Each document's entries, rarest word first (rare words keep the inverted lists of
    # candidate_pairs short); documents stay in place, so offsets still delimit them.
    # One int64 key (document, rank) sorts faster than a two-key lexsort.
    entries = np.argsort(owner * len(word_rank) + word_rank[corpus.word_ids])
    # Mass before each entry within its document, from counts (integers in practice, so
    # these running sums are exact; PREFIX_SLACK covers the rest).
    counts = corpus.counts[entries]
    running = np.cumsum(counts) - counts
    before = running - running[corpus.offsets[owner]]
    limit = (max_l1 / 2 + PREFIX_SLACK) * document_totals(corpus)[owner]
    return entries[before <= limit]


def candidate_pairs(corpus: Corpus, max_l1: float) -> tuple[np.ndarray, np.ndarray]:
    """Row positions (a < b) of the document pairs sharing a prefix word, each once."""
    prefix = prefix_entries(corpus, max_l1)
    owner = np.repeat(np.arange(len(corpus)), corpus.lengths)[prefix]
    word = corpus.word_ids[prefix]
    by_word = np.lexsort((owner, word))
    owner, word = owner[by_word], word[by_word]
    word_end = np.searchsorted(word, word, side="right")
    first = np.arange(len(word))
    second, pair = concatenated_ranges(first + 1, word_end - first - 1)
    keys = np.unique(owner[first[pair]] * len(corpus) + owner[second])
    return keys // max(len(corpus), 1), keys % max(len(corpus), 1)


def pair_batches(
    first: np.ndarray, second_lengths: np.ndarray, max_firsts: int, max_entries: int
) -> Iterator[slice]:
    """Consecutive slices of pairs (sorted by their ``first`` document) with at most
    ``max_firsts`` distinct first documents and about ``max_entries`` words of second
    documents each (at least one pair, however long)."""
    distinct = np.cumsum(np.r_[True, first[1:] != first[:-1]]) - 1
    entries = np.cumsum(second_lengths)
    start = 0
    while start < len(first):
        end_by_rows = np.searchsorted(distinct, distinct[start] + max_firsts)
        done = entries[start - 1] if start else 0
        end_by_entries = np.searchsorted(entries, done + max_entries, side="right")
        end = max(start + 1, min(end_by_rows, end_by_entries))
        yield slice(start, end)
        start = end


def l1_distances(corpus: Corpus, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """||p_a - p_b||_1 of the L1-normalised bags of each pair (a[k], b[k]).

    The first documents are spread, a batch at a time, into dense rows over the
    vocabulary; each pair then costs one gather per word of its second document:
    ||p - q||_1 = sum_{w in q} |p_w - q_w| + sum_{w in p only} p_w
                = |p|_1 + sum_{w in q} (|p_w - q_w| - p_w).
    """
    lengths = corpus.lengths
    totals = document_totals(corpus)
    weights = corpus.counts / np.repeat(totals, lengths)
    mass = np.divide(totals, totals, out=np.zeros(len(corpus)), where=totals > 0)
    vocabulary_size = int(corpus.word_ids.max()) + 1 if len(corpus.word_ids) else 1
    rows_per_batch = max(1, DENSE_CELLS // vocabulary_size)
    dense = np.zeros((min(rows_per_batch, len(a)), vocabulary_size))
    distances = np.empty(len(a))
    by_first = np.argsort(a, kind="stable")
    for batch in pair_batches(a[by_first], lengths[b[by_first]], rows_per_batch, ENTRIES_PER_BATCH):
        pairs = by_first[batch]
        firsts, row_of_pair = np.unique(a[pairs], return_inverse=True)
        spread, row = concatenated_ranges(corpus.offsets[firsts], lengths[firsts])
        dense[row, corpus.word_ids[spread]] = weights[spread]
        second, pair = concatenated_ranges(corpus.offsets[b[pairs]], lengths[b[pairs]])
        p = dense[row_of_pair[pair], corpus.word_ids[second]]
        excess = np.bincount(pair, weights=np.abs(p - weights[second]) - p, minlength=len(pairs))
        # clipped: rounding may leave -1e-17 for proportional bags
        distances[pairs] = np.maximum(mass[a[pairs]] + excess, 0.0)
        dense[row, corpus.word_ids[spread]] = 0.0
    return distances


def near_duplicate_pairs(corpus: Corpus, group_numbers: np.ndarray, max_l1: float) -> pa.Table:
    """NEAR_DUPLICATES: pairs of documents with different bags whose L1-normalised bags are
    within ``max_l1`` (L1). Empty documents have no distribution and are never paired;
    proportional bags (distance 0 but different counts) are included, and a document near
    an exact duplicate group is paired with each of its members."""
    if not 0 <= max_l1 < 2:
        raise WmdevalError(f"duplicates.near.max_l1 must be in [0, 2), got {max_l1}")
    a, b = candidate_pairs(corpus, max_l1)
    identical = (group_numbers[a] == group_numbers[b]) & (group_numbers[a] >= 0)
    a, b = a[~identical], b[~identical]
    distance = l1_distances(corpus, a, b)
    near = distance <= max_l1
    id_a, id_b = corpus.doc_ids[a[near]], corpus.doc_ids[b[near]]
    row_a = np.where(id_a < id_b, a[near], b[near])
    row_b = np.where(id_a < id_b, b[near], a[near])
    order = np.lexsort((corpus.doc_ids[row_b], corpus.doc_ids[row_a]))
    row_a, row_b = row_a[order], row_b[order]
    return pa.table(
        {
            "doc_a": pa.array(corpus.doc_ids[row_a].astype(np.int32)),
            "doc_b": pa.array(corpus.doc_ids[row_b].astype(np.int32)),
            "l1_distance": pa.array(distance[near][order]),
            "label_a": pa.array(corpus.label_names[corpus.labels[row_a]].tolist(), pa.string()),
            "label_b": pa.array(corpus.label_names[corpus.labels[row_b]].tolist(), pa.string()),
        },
        schema=NEAR_DUPLICATES,
    )


# ----------------------------------------------------------------------------- entry
@dataclass(frozen=True)
class DuplicateReport:
    groups: pa.Table  # DUPLICATE_GROUPS
    summary: pa.Table  # SUMMARY: the original and the clean row
    kept: np.ndarray  # doc ids of the clean variant, in table order
    corpus: Corpus  # the original documents, flattened
    group_numbers: np.ndarray


def duplicate_report(
    documents: pa.Table, splits: pa.Table, dataset: str, seed: int
) -> DuplicateReport:
    corpus = flatten_documents(documents)
    group_numbers = duplicate_group_numbers(corpus)
    keep = survivor_mask(group_numbers, seed)
    kept = corpus.doc_ids[keep]
    # The clean row is recomputed from the clean variant itself (built exactly as the
    # select-variant stage builds it), so its zero duplicate pairs check the cleaning.
    clean_documents, clean_splits = select_variant(documents, splits, kept)
    clean = flatten_documents(clean_documents)
    rows = [
        summarise(corpus, group_numbers, splits, dataset, "original"),
        summarise(clean, duplicate_group_numbers(clean), clean_splits, dataset, "clean"),
    ]
    if rows[1]["duplicate_pairs"]:
        raise RuntimeError(
            f"{dataset}: the clean variant still has {rows[1]['duplicate_pairs']} duplicate pairs"
        )
    return DuplicateReport(
        groups=groups_table(corpus, group_numbers, keep),
        summary=pa.Table.from_pylist(rows, schema=SUMMARY),
        kept=kept,
        corpus=corpus,
        group_numbers=group_numbers,
    )


def run_duplicates(
    documents_path: str,
    splits_path: str,
    dataset: str,
    seed: int,
    groups_path: str,
    summary_path: str,
    kept_path: str,
    near_path: str | None = None,
    near_max_l1: float | None = None,
) -> None:
    """Write the duplicate groups, the two-row summary and the survivors' doc ids; with
    ``near_path``, also the near-duplicate pairs (of the original variant) within L1
    distance ``near_max_l1`` (``duplicates.near.max_l1`` of the config)."""
    if near_path and near_max_l1 is None:
        raise WmdevalError("near-duplicate pairs need their largest L1 distance (near_max_l1)")
    report = duplicate_report(
        read_documents(documents_path), read_splits(splits_path), dataset, seed
    )
    original = report.summary.to_pylist()[0]
    log.info(
        "%s: %d duplicate pairs, %d duplicate samples in %d groups; %d of %d documents kept",
        dataset,
        original["duplicate_pairs"],
        original["duplicate_samples"],
        original["groups"],
        len(report.kept),
        original["documents"],
    )
    near = None
    if near_path:
        near = near_duplicate_pairs(report.corpus, report.group_numbers, near_max_l1)
        log.info("%s: %d near-duplicate pairs within L1 %g", dataset, near.num_rows, near_max_l1)
    write_table(report.groups, groups_path, schemas.DUPLICATE_GROUPS)
    write_table(report.summary, summary_path, SUMMARY)
    write_table(pa.table({"doc_id": pa.array(report.kept.astype(np.int32))}), kept_path)
    if near is not None:
        write_table(near, near_path, NEAR_DUPLICATES)
