"""Duplicate detection and removal (PROTOCOL §2, the paper's "Misleading Point 1").

Two documents are duplicates when their bags of words are identical. Detection is
linear: documents are grouped by their canonical bag (sorted (word, count) pairs)
used directly as a dictionary key, so equal keys mean equal bags and a hash
collision can never merge two different bags.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa

from . import schemas
from .io import read_documents, read_splits, write_table


def canonical_bags(documents: pa.Table) -> list[tuple]:
    """Per document, its bag as a hashable, order-free key."""
    words = documents.column("words").to_pylist()
    counts = documents.column("counts").to_pylist()
    return [tuple(sorted(zip(ws, cs, strict=True))) for ws, cs in zip(words, counts, strict=True)]


def duplicate_groups(documents: pa.Table) -> list[np.ndarray]:
    """Groups (each of >= 2 doc ids, ascending) of documents with identical bags,
    ordered by their smallest doc id."""
    members: dict[tuple, list[int]] = defaultdict(list)
    for doc_id, bag in zip(documents.column("doc_id").to_pylist(), canonical_bags(documents),
                           strict=True):
        members[bag].append(doc_id)
    groups = [np.array(sorted(ids), dtype=np.int64) for ids in members.values() if len(ids) > 1]
    return sorted(groups, key=lambda g: int(g[0]))


def kept_documents(doc_ids: np.ndarray, groups: list[np.ndarray], seed: int) -> np.ndarray:
    """Doc ids of the clean variant: exactly one survivor per duplicate group.

    Documents are visited in a random permutation (``np.random.RandomState(seed)``, as
    in the paper's code) and a document is dropped if a duplicate of it is already kept,
    so the survivor of a group is its member visited first.
    """
    doc_ids = np.asarray(doc_ids)
    group_of = {int(d): g for g, ids in enumerate(groups) for d in ids}
    order = np.random.RandomState(seed).permutation(len(doc_ids))
    seen_groups: set[int] = set()
    keep = np.zeros(len(doc_ids), dtype=bool)
    for position in order:
        group = group_of.get(int(doc_ids[position]))
        if group is None:
            keep[position] = True
        elif group not in seen_groups:
            seen_groups.add(group)
            keep[position] = True
    return doc_ids[keep]


def pair_count(group_sizes: np.ndarray) -> int:
    return int((group_sizes * (group_sizes - 1) // 2).sum())


def summarise(documents: pa.Table, splits: pa.Table, groups: list[np.ndarray],
              dataset: str) -> dict:
    """The Table 1 counts and their diagnostics for one dataset."""
    labels = dict(zip(documents.column("doc_id").to_pylist(), documents.column("label").to_pylist(),
                      strict=True))
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    mixed_label_pairs = 0
    for g in groups:
        per_label = np.unique([labels[int(d)] for d in g], return_counts=True)[1]
        mixed_label_pairs += pair_count(np.array([len(g)])) - pair_count(per_label)
    cross = cross_split_pairs(splits, groups)
    return {
        "dataset": dataset,
        "documents": documents.num_rows,
        "duplicate_pairs": pair_count(sizes),
        "duplicate_samples": int(sizes.sum()),
        "groups": len(groups),
        "largest_group": int(sizes.max()) if len(sizes) else 0,
        "pairs_different_labels": mixed_label_pairs,
        "pairs_across_train_test_any_fold": int(cross.any(axis=0).sum()) if cross.size else 0,
        "pairs_across_train_test_per_fold": cross.sum(axis=1).astype(int).tolist(),
    }


def cross_split_pairs(splits: pa.Table, groups: list[np.ndarray]) -> np.ndarray:
    """Boolean [folds, duplicate pairs]: the pair has one member in train, one in test."""
    folds = splits.column("fold").to_numpy()
    ids = splits.column("doc_id").to_numpy()
    is_test = np.asarray(splits.column("subset").to_pylist()) == "test"
    pairs = [(int(a), int(b)) for g in groups for x, a in enumerate(g) for b in g[x + 1:]]
    fold_values = np.unique(folds)
    out = np.zeros((len(fold_values), len(pairs)), dtype=bool)
    for f, fold in enumerate(fold_values):
        sel = folds == fold
        side = dict(zip(ids[sel].tolist(), is_test[sel].tolist(), strict=True))
        for p, (a, b) in enumerate(pairs):
            if a in side and b in side and side[a] != side[b]:
                out[f, p] = True
    return out


def groups_table(documents: pa.Table, groups: list[np.ndarray], kept: np.ndarray) -> pa.Table:
    labels = dict(zip(documents.column("doc_id").to_pylist(), documents.column("label").to_pylist(),
                      strict=True))
    kept_set = set(kept.tolist())
    rows = [(g, int(d), labels[int(d)], int(d) in kept_set) for g, ids in enumerate(groups)
            for d in ids]
    group, doc_id, label, keep = (list(c) for c in zip(*rows, strict=True)) if rows else ([],) * 4
    return pa.table({"group": pa.array(group, pa.int32()), "doc_id": pa.array(doc_id, pa.int32()),
                     "label": pa.array(label, pa.string()), "kept": pa.array(keep, pa.bool_())},
                    schema=schemas.DUPLICATE_GROUPS)


def summary_table(summary: dict) -> pa.Table:
    return pa.Table.from_pylist([summary])


def run_duplicates(documents_path: str, splits_path: str, dataset: str, seed: int,
                   groups_path: str, summary_path: str, kept_path: str) -> None:
    documents = read_documents(documents_path)
    splits = read_splits(splits_path)
    groups = duplicate_groups(documents)
    kept = kept_documents(documents.column("doc_id").to_numpy(), groups, seed)
    write_table(groups_table(documents, groups, kept), groups_path, schemas.DUPLICATE_GROUPS)
    write_table(summary_table(summarise(documents, splits, groups, dataset)), summary_path)
    write_table(pa.table({"doc_id": pa.array(kept, pa.int32())}), kept_path)
