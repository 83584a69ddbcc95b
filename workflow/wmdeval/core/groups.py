"""The groups of documents the crossmatch test and the corpus distances compare.

Every pair of classes, and train vs test of every fold, each group a seeded sample of
documents with words, the same for every method (:func:`comparisons`); and the documents
of a group whose distances are all defined under a method (:func:`defined_subset`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .variant import Variant

#: How the name of a train-vs-test comparison starts ("train vs test fold 3").
SPLIT_COMPARISON = "train vs test"


@dataclass(frozen=True)
class Comparison:
    """Two groups of documents to compare under every method."""

    name: str
    fold: int | None  # whose training IDF the TF-IDF methods use; None = all documents
    first: np.ndarray  # document positions of group 1
    second: np.ndarray


def _sample(positions: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    if len(positions) <= m:
        return np.asarray(positions)
    return np.sort(rng.choice(positions, size=m, replace=False))


def comparisons(
    corpus: Variant, m: int, seed: int, class_fold: int | None = None
) -> list[Comparison]:
    """Every pair of classes, then train vs test of every fold, each group a seeded
    sample of up to ``m`` documents with words (the same samples for every method).

    Classes come from all documents (``class_fold`` None) or that fold's training set.
    """
    has_words = ~corpus.no_words
    scope = np.arange(len(corpus.doc_ids)) if class_fold is None else corpus.training(class_fold)
    scope = scope[has_words[scope]]
    out = []
    labels = sorted(set(corpus.labels[scope].tolist()))
    for index, (a, b) in enumerate(itertools.combinations(labels, 2)):
        rng = np.random.default_rng([seed, 0, index])
        out.append(
            Comparison(
                f"{a} vs {b}",
                class_fold,
                _sample(scope[corpus.labels[scope] == a], m, rng),
                _sample(scope[corpus.labels[scope] == b], m, rng),
            )
        )
    for fold, (train, test) in enumerate(corpus.folds):
        rng = np.random.default_rng([seed, 1, fold])
        out.append(
            Comparison(
                f"{SPLIT_COMPARISON} fold {fold}",
                fold,
                _sample(train[has_words[train]], m, rng),
                _sample(test[has_words[test]], m, rng),
            )
        )
    return out


def defined_subset(dist: np.ndarray) -> np.ndarray:
    """Indices of the points whose distances are all defined.

    Undefined documents have NaN rows and columns; drop the all-NaN rows, then (should
    stray NaNs remain) the row with the most of them until none is left.
    """
    finite = np.isfinite(dist)
    np.fill_diagonal(finite, True)
    keep = finite.sum(axis=1) > 1 if len(dist) > 1 else np.ones(len(dist), dtype=bool)
    while keep.any():
        bad = (~finite[np.ix_(keep, keep)]).sum(axis=1)
        if not bad.any():
            break
        keep[np.flatnonzero(keep)[int(bad.argmax())]] = False
    return np.flatnonzero(keep)


__all__ = ["SPLIT_COMPARISON", "Comparison", "comparisons", "defined_subset"]
