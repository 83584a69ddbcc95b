"""Speed of the duplicates stage on a synthetic corpus (prints numbers only).

20,000 documents of ~70 distinct words drawn from a 30,000-word vocabulary with
Zipf-like word frequencies, 20 classes, 5 random 70/30 folds; 2% of the documents are
exact copies of others (a few in large groups, like twitter's) and 1% are near copies
(one count changed). Times are CPU seconds (``time.process_time``) and wall seconds.

    .venv/bin/python benchmarks/duplicates_speed.py [--docs 20000] [--words 70]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from wmdeval.cleaning import duplicates
from wmdeval.core import io, schemas


def synthetic_documents(
    rng: np.random.Generator, n_docs: int, n_words: int, words_per_doc: int, n_classes: int
) -> pa.Table:
    frequency = 1 / np.arange(1, n_words + 1) ** 0.9
    cdf = np.cumsum(frequency) / frequency.sum()
    draws = np.searchsorted(cdf, rng.random((n_docs, int(words_per_doc * 1.1))))
    bags = [np.unique(np.minimum(d, n_words - 1)) for d in draws]
    # exact copies: 300 in pairs, 100 in five groups of 21 members
    for k in range(300):
        bags[n_docs - 1 - k] = bags[k]
    for k in range(100):
        bags[n_docs - 301 - k] = bags[300 + k % 5]
    counts = [rng.integers(1, 6, len(b)).astype(np.float64) for b in bags]
    for k in range(300):
        counts[n_docs - 1 - k] = counts[k]
    for k in range(100):
        counts[n_docs - 301 - k] = counts[300 + k % 5]
    # near copies: one count changed
    for k in range(200):
        bags[n_docs - 401 - k] = bags[1000 + k]
        counts[n_docs - 401 - k] = counts[1000 + k].copy()
        counts[n_docs - 401 - k][0] += 1
    vocabulary = pa.array([f"w{i:05d}" for i in range(n_words)])
    lengths = np.array([len(b) for b in bags])
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    words = pa.ListArray.from_arrays(offsets, vocabulary.take(pa.array(np.concatenate(bags))))
    values = pa.ListArray.from_arrays(offsets, pa.array(np.concatenate(counts)))
    y = rng.integers(0, n_classes, n_docs)
    return pa.table(
        {
            "doc_id": pa.array(np.arange(n_docs, dtype=np.int32)),
            "label": pa.array([f"class{c}" for c in y]),
            "y": pa.array(y.astype(np.int32)),
            "words": words,
            "counts": values,
        }
    ).cast(schemas.DOCUMENTS)


def synthetic_splits(rng: np.random.Generator, n_docs: int, n_folds: int) -> pa.Table:
    n_train = round(0.7 * n_docs)
    folds = np.repeat(np.arange(n_folds), n_docs)
    ids = np.concatenate([rng.permutation(n_docs) for _ in range(n_folds)])
    subsets = np.tile(np.r_[["train"] * n_train, ["test"] * (n_docs - n_train)], n_folds)
    return pa.table(
        {
            "fold": pa.array(folds.astype(np.int16)),
            "doc_id": pa.array(ids.astype(np.int32)),
            "subset": pa.array(subsets.tolist()),
        }
    ).cast(schemas.SPLITS)


def detect(documents: pa.Table, splits: pa.Table) -> dict:
    corpus = duplicates.flatten_documents(documents)
    groups = duplicates.duplicate_group_numbers(corpus)
    duplicates.survivor_mask(groups, 0)
    return duplicates.summarise(corpus, groups, splits, "synthetic", "original")


def run_from_files(documents: pa.Table, splits: pa.Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        io.write_table(documents, tmp / "documents.parquet", schemas.DOCUMENTS)
        io.write_table(splits, tmp / "splits.parquet", schemas.SPLITS)
        start = time.process_time(), time.perf_counter()
        duplicates.run_duplicates(
            tmp / "documents.parquet",
            tmp / "splits.parquet",
            "synthetic",
            0,
            tmp / "groups.parquet",
            tmp / "summary.parquet",
            tmp / "kept.parquet",
        )
        print(
            f"{'run_duplicates (read Parquet, both rows, write 3 files)':<56} "
            f"{time.process_time() - start[0]:7.3f} s CPU "
            f"{time.perf_counter() - start[1]:7.3f} s wall"
        )


def timed(label: str, fn, repeats: int = 3):
    """Best of ``repeats`` runs (the machine is shared)."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        result = fn()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    print(f"{label:<56} {best_cpu:7.3f} s CPU {best_wall:7.3f} s wall")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--words", type=int, default=70)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--near-max-l1", type=float, default=0.1)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    documents = synthetic_documents(rng, args.docs, args.vocabulary, args.words, 20)
    splits = synthetic_splits(rng, args.docs, 5)
    mean_words = np.mean([len(w) for w in documents.column("words").to_pylist()])
    print(
        f"{args.docs} documents, {mean_words:.1f} distinct words each, "
        f"vocabulary {args.vocabulary}, 5 folds"
    )

    corpus = timed(
        "read columns (flatten + dictionary-encode words)",
        lambda: duplicates.flatten_documents(documents),
    )
    groups = timed("hash + group + confirm", lambda: duplicates.duplicate_group_numbers(corpus))
    timed("survivors (seeded permutation)", lambda: duplicates.survivor_mask(groups, 0))
    timed(
        "summary of the original variant",
        lambda: duplicates.summarise(corpus, groups, splits, "synthetic", "original"),
    )
    timed("detection total: read + group + survivors + summary", lambda: detect(documents, splits))
    report = timed(
        "whole report (both variants, groups table)",
        lambda: duplicates.duplicate_report(documents, splits, "synthetic", 0),
    )
    for row in report.summary.to_pylist():
        print("   ", row)
    run_from_files(documents, splits)
    near = timed(
        f"near duplicates (max_l1 {args.near_max_l1})",
        lambda: duplicates.near_duplicate_pairs(corpus, groups, args.near_max_l1),
    )
    a, b = duplicates.candidate_pairs(corpus, args.near_max_l1)
    print(f"    {len(a)} candidate pairs, {near.num_rows} near-duplicate pairs")


if __name__ == "__main__":
    main()
