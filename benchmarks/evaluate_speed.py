"""Speed of the evaluation stage on a synthetic five-fold dataset (prints numbers only).

3,000 documents of 50 distinct words drawn from a 5,000-word vocabulary, 5 classes,
5 random 70/30 folds, and random symmetric WMD / WMD-TF-IDF matrices: all 14 methods
x kNN and wkNN with the default tuning grids, baseline distances included.

Words are drawn uniformly by default, so two documents share few words. With ``--zipf``
they are drawn with probability ~ 1/rank, as in real text, so documents share many
words: the harder case for the baseline distances, whose work grows with shared words.

    .venv/bin/python benchmarks/evaluate_speed.py [--docs 3000] [--zipf]
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np
import pyarrow as pa

from wmdeval.classification import knn as evaluate
from wmdeval.core import io, schemas
from wmdeval.core.methods import BASELINES, BY_NAME
from wmdeval.core.variant import DenseDistances
from wmdeval.distances.factory import prepare_variant


def synthetic_documents(
    rng: np.random.Generator,
    n_docs: int,
    n_words: int,
    words_per_doc: int,
    n_classes: int,
    zipf: bool = False,
) -> pa.Table:
    vocabulary = np.array([f"w{i:05d}" for i in range(n_words)])
    frequency = None
    if zipf:
        frequency = 1.0 / np.arange(1, n_words + 1)
        frequency /= frequency.sum()
    words = [
        np.sort(rng.choice(n_words, words_per_doc, replace=False, p=frequency))
        for _ in range(n_docs)
    ]
    y = rng.integers(0, n_classes, n_docs)
    return pa.table(
        {
            "doc_id": pa.array(np.arange(n_docs, dtype=np.int32)),
            "label": [f"class{c}" for c in y],
            "y": pa.array(y.astype(np.int32)),
            "words": [vocabulary[w].tolist() for w in words],
            "counts": [rng.integers(1, 6, words_per_doc).astype(float).tolist() for _ in words],
        }
    ).cast(schemas.DOCUMENTS)


def synthetic_splits(
    rng: np.random.Generator, n_docs: int, n_folds: int, train_fraction: float
) -> pa.Table:
    folds, ids, subsets = [], [], []
    n_train = round(train_fraction * n_docs)
    for fold in range(n_folds):
        order = rng.permutation(n_docs)
        folds += [fold] * n_docs
        ids += order.tolist()
        subsets += ["train"] * n_train + ["test"] * (n_docs - n_train)
    return pa.table(
        {
            "fold": pa.array(folds, pa.int16()),
            "doc_id": pa.array(ids, pa.int32()),
            "subset": subsets,
        }
    ).cast(schemas.SPLITS)


def random_symmetric(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.uniform(0.5, 1.5, (n, n)).astype(np.float32)
    m = (m + m.T) / 2
    np.fill_diagonal(m, 0)
    return m


def timed(label: str, fn):
    cpu, wall = time.process_time(), time.perf_counter()
    result = fn()
    print(
        f"{label:<58} {time.process_time() - cpu:8.2f} s CPU {time.perf_counter() - wall:8.2f}"
        " s wall"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--vocabulary", type=int, default=5000)
    parser.add_argument("--words-per-doc", type=int, default=50)
    parser.add_argument(
        "--zipf", action="store_true", help="word frequencies ~ 1/rank instead of uniform"
    )
    args = parser.parse_args()
    # Random distances make wkNN underflow warnings for every method: not what we measure.
    logging.getLogger("wmdeval.classification.knn").setLevel(logging.ERROR)

    rng = np.random.default_rng(0)
    documents = synthetic_documents(
        rng, args.docs, args.vocabulary, args.words_per_doc, 5, args.zipf
    )
    splits = synthetic_splits(rng, args.docs, 5, 0.7)
    doc_ids = np.arange(args.docs, dtype=np.int32)
    wmd = {
        "wmd": (doc_ids, random_symmetric(rng, args.docs)),
        "wmd-tfidf": (doc_ids, random_symmetric(rng, args.docs)),
    }
    print(
        f"{args.docs} documents, vocabulary {args.vocabulary}, {args.words_per_doc} words/doc "
        f"({'Zipf' if args.zipf else 'uniform'}), 5 classes, 5 folds 70/30"
    )

    scores = timed(
        "evaluate_dataset: 14 methods x {knn, wknn} x 5 folds",
        lambda: evaluate.evaluate_dataset(documents, splits, wmd, None, "bench", "original"),
    )
    assert scores.num_rows == 14 * 2 * 5

    # Where the time goes: classification alone (one WMD matrix), and the baseline blocks.
    y = documents.column("y").to_numpy()
    folds = io.fold_indices(splits, doc_ids)
    dense = DenseDistances(wmd["wmd"][1])
    timed(
        "  of which per method: tuning + classification (5 folds)",
        lambda: [evaluate.evaluate_fold(dense, y, tr, te) for tr, te in folds],
    )
    variant = prepare_variant(documents, splits, {})
    settings = evaluate.complete_settings(None)
    blocks = [fold_blocks(train, test, settings) for train, test in folds]
    for method in (
        BY_NAME["BOW (L1/L1)"],
        BY_NAME["TF-IDF (L1/L1)"],
        BY_NAME["BOW (None/L2)"],
        BY_NAME["TF-IDF (None/L2)"],
    ):
        timed(
            f"  of which per method: {method.name} distance blocks, 5 folds",
            lambda method=method: baseline_blocks(variant, method, folds, blocks),
        )
    timed(
        f"  of which: the distance blocks of all {len(BASELINES)} baselines, 5 folds",
        lambda: [baseline_blocks(variant, method, folds, blocks) for method in BASELINES],
    )


def fold_blocks(
    train: np.ndarray, test: np.ndarray, settings: dict
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, cols) of the blocks evaluate_fold ranks (no empty documents): test x
    training documents, and validation x fit documents of each split."""
    blocks = [(test, train)]
    for c in ("knn", "wknn"):
        fit, val = evaluate.validation_split(
            len(train), settings[c]["validation_size"], settings[c]["seed"]
        )
        blocks.append((train[val], train[np.sort(fit)]))
    return blocks


def baseline_blocks(variant, method, folds, blocks) -> list[np.ndarray]:
    """Every fold's distance blocks of one baseline, computed as evaluate_dataset does."""
    distances_for = evaluate.fold_distances(variant, method, folds)
    return [
        distances_for(train).block(rows, cols)
        for (train, _), fold in zip(folds, blocks, strict=True)
        for rows, cols in fold
    ]


if __name__ == "__main__":
    main()
