"""knn mode: what the clean variant's search saves by taking the original's solved pairs.

On a seeded sample of a prepared dataset (the documents, splits and embeddings files a
workflow run wrote, e.g. ``results/amazon/original/`` of benchmarks/knn_pruning.py's
work directory), WMD (bag-of-words weights), all in this process:

1. the duplicates of the sample are found and one survivor per group kept (seed 0), as
   the workflow's ``duplicates`` job does: the clean variant;
2. the original variant is searched (one shard, as ``wmd_search`` jobs do);
3. the clean variant is searched from nothing, then with the original's pairs
   (``known``, distances/wmd/reuse.py), then with its pairs and the floors of its lists
   (lists within an original list of the query settled without a search), then also
   with the floors of single candidates (``reuse.CandidateFloors``: each original
   certificate of the same document bounds its list's unsolved candidates), as its
   ``wmd_search`` jobs now do.

Printed: exact solves and process CPU of each search, the distances taken, and whether
the clean variant's scores (kNN and wkNN through the evaluation) are the same every way.

    python benchmarks/clean_reuse.py --dir DIR [--sample 1500] [--threads 2]

``DIR`` holds documents.parquet, splits.parquet and embeddings.parquet.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from wmdeval.classification import knn
from wmdeval.cleaning.duplicates import duplicate_groups, kept_documents
from wmdeval.cleaning.vocabulary import select_variant
from wmdeval.core import io
from wmdeval.core.roles import query_roles
from wmdeval.distances.wmd import reuse, search, solver


def searched(inputs, splits, threads, known=None, floors=None):
    stats = search.SearchStats()
    folds = io.fold_indices(splits, inputs.doc_ids)
    t0 = time.process_time()
    tables = search.search_shard(inputs, folds, None, 0, 1, threads, stats, known, floors)
    # the worker processes' CPU too (threads > 1)
    return tables, stats, time.process_time() - t0 + stats.worker_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--sample", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    documents = io.read_documents(args.dir / "documents.parquet")
    splits = io.read_splits(args.dir / "splits.parquet")
    embeddings = io.read_table(args.dir / "embeddings.parquet")
    ids = documents.column("doc_id").to_numpy()
    if len(ids) > args.sample:
        chosen = np.sort(np.random.default_rng(args.seed).choice(ids, args.sample, replace=False))
        documents, splits = select_variant(documents, splits, chosen)
    ids = documents.column("doc_id").to_numpy()
    kept = kept_documents(ids, duplicate_groups(documents), 0)
    clean_docs, clean_splits = select_variant(documents, splits, np.sort(kept))
    print(f"{len(ids)} documents, {len(ids) - len(kept)} dropped as duplicates", flush=True)

    original = solver.prepare(documents, embeddings, "bow")
    (pairs, certificates), stats, cpu = searched(original, splits, args.threads)
    print(f"original: {stats.solves:,} solves, {cpu:.1f} s CPU", flush=True)

    clean = solver.prepare(clean_docs, embeddings, "bow")
    fresh, fresh_stats, fresh_cpu = searched(clean, clean_splits, args.threads)
    print(f"clean from nothing: {fresh_stats.solves:,} solves, {fresh_cpu:.1f} s CPU", flush=True)
    t0 = time.process_time()
    known = reuse.known_pairs(pairs, clean.doc_ids, "original")
    keyed = time.process_time() - t0
    reused, reused_stats, reused_cpu = searched(clean, clean_splits, args.threads, known)
    print(
        f"clean with the original's {len(known):,} pairs: {reused_stats.solves:,} solves, "
        f"{reused_stats.reused:,} distances taken, {reused_cpu:.1f} s CPU (+{keyed:.2f} s "
        "keying the pairs)",
        flush=True,
    )
    t0 = time.process_time()
    floors = reuse.certificate_floors(
        clean.doc_ids,
        clean.empty,
        query_roles(io.fold_indices(clean_splits, clean.doc_ids), clean.empty, None),
        original.doc_ids,
        original.empty,
        query_roles(io.fold_indices(splits, original.doc_ids), original.empty, None),
        certificates,
        "original certificates",
    )
    floored_keyed = time.process_time() - t0
    # the list floors alone (as before candidate floors), then with them
    listed, listed_stats, listed_cpu = searched(
        clean, clean_splits, args.threads, known, reuse.Floors(dict(floors))
    )
    print(
        f"clean with the original's pairs and list floors alone ({len(floors):,} lists "
        f"floored, {listed_stats.floored:,} settled): {listed_stats.solves:,} solves, "
        f"{listed_stats.reused:,} distances taken, {listed_cpu:.1f} s CPU",
        flush=True,
    )
    floored, floored_stats, floored_cpu = searched(clean, clean_splits, args.threads, known, floors)
    print(
        f"clean with the original's pairs and certificates ({len(floors):,} lists floored, "
        f"{floored_stats.floored:,} settled, {floored_stats.floored_candidates:,} candidates' "
        f"bounds raised): {floored_stats.solves:,} solves, "
        f"{floored_stats.reused:,} distances taken, {floored_cpu:.1f} s CPU (+{keyed:.2f} s "
        f"keying the pairs, +{floored_keyed:.2f} s the floors)",
        flush=True,
    )
    scores = [
        knn.evaluate_dataset(
            clean_docs, clean_splits, {}, None, "b", "clean", neighbour_tables={"wmd": tables}
        ).to_pylist()
        for tables in (fresh, reused, listed, floored)
    ]
    same = "yes" if scores[0] == scores[1] == scores[2] == scores[3] else "no"
    print(
        f"clean_reuse: {fresh_stats.solves / max(reused_stats.solves, 1):.1f}x fewer solves, "
        f"{fresh_cpu / max(reused_cpu + keyed, 1e-9):.1f}x less CPU with the pairs; with the "
        f"certificates too {fresh_stats.solves / max(floored_stats.solves, 1):.1f}x, "
        f"{fresh_cpu / max(floored_cpu + keyed + floored_keyed, 1e-9):.1f}x; "
        f"scores identical: {same}"
    )


if __name__ == "__main__":
    main()
