"""Which neighbours the kNN protocol reads: the query roles of every fold (docs/protocol.md §6-7).

Per fold, the evaluation ranks
- the test documents among the fold's training list (k = the largest k either
  classifier uses);
- the kNN validation split's documents among its fit documents (k = the largest k of
  the grid);
- the wkNN validation split's documents among its fit documents (k = wkNN's k).

Classification (:mod:`wmdeval.classification.knn`) and the exact kNN search
(:mod:`wmdeval.distances.wmd.search`) both take these lists from here, so the search
solves exactly the neighbourhoods the evaluation reads, and the evaluation can check
that a neighbour table was searched for its lists (:func:`candidates_key`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from .errors import WmdevalError


@functools.cache
def _schema_defaults() -> dict:
    from . import config  # jsonschema and the schema: only when a setting is missing

    return config.defaults("evaluation")


def complete_settings(settings: Mapping | None) -> dict:
    """The evaluation settings ``settings`` (the ``evaluation:`` config, perhaps partial or
    None) with the schema's default for every key it lacks; a new dict. Not checked
    again: the workflow validates the config against the schema before any job."""
    resolved = copy.deepcopy(_schema_defaults())
    for key, value in (settings or {}).items():
        if isinstance(value, Mapping) and isinstance(resolved.get(key), dict):
            resolved[key].update(value)
        else:
            resolved[key] = value
    return resolved


def k_above_training(train_sizes: Sequence[int], settings: Mapping, where: str) -> list[str]:
    """One line per classifier whose k exceeds the training documents it is tuned with:
    the smallest fold's training documents (``train_sizes``, one per fold) less the
    validation split held out from them. Such a k votes with every training document
    (kNN's grid then holds candidates that all mean the same, and one of them may be
    recorded as chosen); the result is a meaningless one, said in the evaluate job's log
    and at the end of the run. ``settings``: the complete ``evaluation:`` config."""
    if not len(train_sizes):
        return []
    n_train = int(min(train_sizes))
    lines = []
    for name, key in (("knn", "evaluation.knn.k"), ("wknn", "evaluation.wknn.k")):
        ks = settings[name]["k"]
        ks = ks if isinstance(ks, list | tuple) else [ks]
        n_fit = n_train - math.ceil(settings[name]["validation_size"] * n_train)
        over = sorted(k for k in ks if k > n_fit)
        if over:
            listed = ", ".join(map(str, over))
            lines.append(
                f"{where}: {key}: {listed} above the {n_fit} training documents it is tuned "
                f"with (the smallest fold's {n_train} less the validation split): such k "
                "vote with every training document"
            )
    return lines


def shuffle_split(n: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train positions, test positions) of ``n`` items, int64, in shuffled order: exactly
    sklearn's ``train_test_split(np.arange(n), test_size=test_size, random_state=seed)``
    for a fraction ``test_size`` in (0, 1) (``ceil(test_size * n)`` test items, the first
    of ``RandomState(seed).permutation(n)``, the rest train). Written out because
    importing scikit-learn costs a job about 1.2 s CPU (it pulls in scipy.stats), paid
    by every job that reads the query roles; ``tests/test_evaluate.py`` holds it to
    sklearn's for many sizes and seeds."""
    if not 0 < test_size < 1:
        raise ValueError(f"test_size={test_size} is not a fraction in (0, 1)")
    n_test = math.ceil(test_size * n)
    if n - n_test <= 0:
        raise ValueError(f"with {n} items and test_size={test_size} the train set is empty")
    permutation = np.random.RandomState(seed).permutation(n).astype(np.int64)
    return permutation[n_test:], permutation[:n_test]


def validation_split(n_train: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit positions, validation positions) into the fold's training list, int64.

    Exactly sklearn's ``train_test_split(np.arange(n_train), ...)``, shuffled order
    included (:func:`shuffle_split`); callers sort the fit positions before ranking
    neighbours.
    """
    if n_train < 2:
        raise WmdevalError(f"cannot split {n_train} training document(s) for validation")
    return shuffle_split(n_train, test_size, seed)


def validation_splits(n_train: int, settings: Mapping) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per classifier ("knn", "wknn"): (sorted fit positions, validation positions) into
    the training list; ``settings`` complete (:func:`complete_settings`)."""
    splits = {}
    for name in ("knn", "wknn"):
        fit, val = validation_split(
            n_train, settings[name]["validation_size"], settings[name]["seed"]
        )
        splits[name] = (np.sort(fit), val)
    return splits


def fold_lists(
    train_pos: np.ndarray, test_pos: np.ndarray, empty: np.ndarray, dropping: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The fold's (training list, test list) as evaluated: sorted positions, without the
    empty documents in "drop" mode."""
    train = np.sort(np.asarray(train_pos, dtype=np.int64))
    test = np.sort(np.asarray(test_pos, dtype=np.int64))
    if dropping:
        train, test = train[~empty[train]], test[~empty[test]]
    return train, test


class QueryRole(NamedTuple):
    """One ranking the evaluation does: ``queries`` (positions) among ``candidates``
    (sorted positions), the ``k`` nearest of each."""

    fold: int
    name: str  # "test", "knn-validation" or "wknn-validation"
    queries: np.ndarray
    candidates: np.ndarray
    k: int


def query_roles(
    folds: list[tuple[np.ndarray, np.ndarray]], empty: np.ndarray, settings: Mapping | None
) -> list[QueryRole]:
    """Every ranking the kNN evaluation of one method does, fold by fold.

    ``folds``: (train, test) positions per fold; ``empty``: bool per document, no
    defined distance under the method (it decides the lists in "drop" mode). The
    lists are exactly those :func:`wmdeval.classification.knn.evaluate_fold` ranks.
    """
    settings = complete_settings(settings)
    dropping = settings["empty_documents"] == "drop"
    ks = [int(k) for k in settings["knn"]["k"]]
    wknn_k = int(settings["wknn"]["k"])
    roles = []
    for fold, (train_pos, test_pos) in enumerate(folds):
        train, test = fold_lists(train_pos, test_pos, empty, dropping)
        roles.append(QueryRole(fold, "test", test, train, max(max(ks), wknn_k)))
        splits = validation_splits(len(train), settings)
        for name, k in (("knn", max(ks)), ("wknn", wknn_k)):
            fit, val = splits[name]
            roles.append(QueryRole(fold, f"{name}-validation", train[val], train[fit], k))
    return roles


def candidates_key(candidates: np.ndarray) -> str:
    """A short name of a candidate list (sorted positions): the same list, the same key.
    A neighbour table stores, per query and key, what proves its top k complete."""
    data = np.ascontiguousarray(np.asarray(candidates, dtype=np.int64))
    return hashlib.blake2b(data.tobytes(), digest_size=12).hexdigest()


__all__ = [
    "complete_settings",
    "validation_split",
    "validation_splits",
    "fold_lists",
    "QueryRole",
    "query_roles",
    "candidates_key",
]
