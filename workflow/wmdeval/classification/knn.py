"""kNN and weighted kNN classification with validation tuning (docs/protocol.md §6, §7).

Everything here works on distance arrays in which NaN means "undefined": the
distance from or to a document without words (or, for WMD-TF-IDF, without TF-IDF
mass). Such a document is never a neighbour, and as a query it gets no prediction
(-1), which every accuracy counts as an error.

Tie rules, all deterministic:
- neighbours are ranked by (distance, column); columns are positions in the fold's
  training list, which is sorted by doc_id, so ties go to the lower doc_id. The
  validation split's fit documents are sorted the same way before ranking, whatever
  order ``train_test_split`` returned them in;
- a vote tie goes to the smallest label code;
- a tuning tie goes to the smallest k or gamma.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa

from ..core import io, schemas
from ..core.methods import BY_SLUG, METHODS, Method, method_by_slug
from ..distances import baselines

log = logging.getLogger("wmdeval.classification.knn")

#: ``block(rows, cols)`` -> float distances [len(rows), len(cols)] between document
#: positions, NaN where undefined.
DistanceBlock = Callable[[np.ndarray, np.ndarray], np.ndarray]

DEFAULT_SETTINGS: dict = {
    "knn": {"k": list(range(1, 20)), "validation_size": 0.2, "seed": 0},
    "wknn": {
        "k": 19,
        # 0.005, 0.010, ..., 0.100; rounded so the grid values print and compare cleanly
        "gammas": [round(0.005 * i, 3) for i in range(1, 21)],
        "validation_size": 0.3,
        "seed": 0,
    },
    "empty_documents": "error",
    "n_jobs": 1,
}

NO_PREDICTION = -1


# --------------------------------------------------------------------------- ranking


def rank_neighbours(dist: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the k nearest columns of every row, nearest first.

    Order is by (distance, column index). Non-finite distances (NaN: undefined) are
    never neighbours: where a row has fewer than k finite distances the remaining
    slots hold -1.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    dist = np.asarray(dist, dtype=np.float64)
    n_rows, n_cols = dist.shape
    keys = np.where(np.isfinite(dist), dist, np.inf)
    kk = min(k, n_cols)
    neighbours = np.full((n_rows, k), -1, dtype=np.int64)
    if kk == 0 or n_rows == 0:
        return neighbours
    if kk < n_cols:
        # argpartition finds the k-th smallest value, but which of several columns
        # equal to it land in the first k is arbitrary; so take every column up to
        # and including that value and order those exactly.
        part = np.argpartition(keys, kk - 1, axis=1)
        kth = np.take_along_axis(keys, part[:, kk - 1 : kk], axis=1)
        candidate = keys <= kth
    else:
        candidate = np.ones_like(keys, dtype=bool)
    rows, cols = np.nonzero(candidate)  # row-major: columns ascending within a row
    # lexsort is stable, so equal distances keep ascending column order.
    order = np.lexsort((keys[rows, cols], rows))
    per_row = np.count_nonzero(candidate, axis=1)  # >= kk for every row
    starts = np.concatenate(([0], np.cumsum(per_row)[:-1]))
    nearest = cols[order[starts[:, None] + np.arange(kk)]]
    defined = np.isfinite(np.take_along_axis(keys, nearest, axis=1))
    neighbours[:, :kk] = np.where(defined, nearest, -1)
    return neighbours


def _n_labels(y_train: np.ndarray) -> int:
    return int(y_train.max()) + 1 if y_train.size else 1


def _vote(neighbours: np.ndarray, y_train: np.ndarray,
          weights: np.ndarray | None) -> np.ndarray:
    """Label with the largest (weighted) vote per row; ties to the smallest label."""
    n_rows = neighbours.shape[0]
    valid = neighbours >= 0
    if not y_train.size:
        return np.full(n_rows, NO_PREDICTION, dtype=np.int64)
    n_labels = _n_labels(y_train)
    labels = y_train[np.where(valid, neighbours, 0)]
    # one bincount for all rows: row r's labels live in bins [r*n_labels, (r+1)*n_labels)
    bins = (np.arange(n_rows)[:, None] * n_labels + labels)[valid]
    votes = np.bincount(bins, weights=None if weights is None else weights[valid],
                        minlength=n_rows * n_labels).reshape(n_rows, n_labels)
    predictions = votes.argmax(axis=1)  # argmax returns the first maximum
    predictions[~valid.any(axis=1)] = NO_PREDICTION
    return predictions


def knn_predict(neighbours: np.ndarray, y_train: np.ndarray, k: int) -> np.ndarray:
    """Majority label among the first k neighbours (-1 slots ignored).

    A query without any neighbour gets -1 (no prediction).
    """
    neighbours = np.asarray(neighbours, dtype=np.int64)[:, :k]
    return _vote(neighbours, np.asarray(y_train, dtype=np.int64), None)


def wknn_predict(dist: np.ndarray, neighbours: np.ndarray, y_train: np.ndarray,
                 gamma: float) -> tuple[np.ndarray, int]:
    """Weighted vote: a neighbour at distance d votes with weight exp(-d / gamma).

    The weights are computed as exp(-(d - d_nearest) / gamma), the same up to a
    per-row factor, so the winning label is unchanged but the nearest neighbour
    always weighs 1 and the weights cannot all underflow to 0. Returns the
    predictions and the number of queries whose naive weights would all have been
    0 (exp(-d_nearest / gamma) == 0).
    """
    neighbours = np.asarray(neighbours, dtype=np.int64)
    valid = neighbours >= 0
    d = np.take_along_axis(np.asarray(dist, dtype=np.float64),
                           np.where(valid, neighbours, 0), axis=1)
    nearest = d[:, :1]  # neighbours are ordered, so slot 0 holds the row's minimum
    weights = np.where(valid, np.exp(-(d - nearest) / gamma), 0.0)
    has_neighbour = valid[:, 0] if valid.shape[1] else np.zeros(len(valid), dtype=bool)
    n_underflow = int(np.count_nonzero(has_neighbour & (np.exp(-nearest[:, 0] / gamma) == 0)))
    predictions = _vote(neighbours, np.asarray(y_train, dtype=np.int64), weights)
    return predictions, n_underflow


def accuracy(predictions: np.ndarray, y_true: np.ndarray) -> float:
    """Fraction of correct predictions; a -1 (no prediction) is always wrong."""
    if len(y_true) == 0:
        raise ValueError("accuracy of an empty set of queries")
    return float(np.mean(np.asarray(predictions) == np.asarray(y_true)))


def select_k(dist_val_fit: np.ndarray, y_fit: np.ndarray, y_val: np.ndarray,
             ks: Iterable[int] = range(1, 20)) -> tuple[int, float]:
    """The k with the highest validation accuracy (the smallest such k)."""
    ks = sorted({int(k) for k in ks})
    neighbours = rank_neighbours(dist_val_fit, max(ks))  # prefixes serve every smaller k
    best_k, best_accuracy = ks[0], -1.0
    for k in ks:
        acc = accuracy(knn_predict(neighbours, y_fit, k), y_val)
        if acc > best_accuracy:
            best_k, best_accuracy = k, acc
    return best_k, best_accuracy


def select_gamma(dist_val_fit: np.ndarray, y_fit: np.ndarray, y_val: np.ndarray,
                 gammas: Iterable[float], k: int = 19) -> tuple[float, float]:
    """The gamma with the highest wkNN validation accuracy (the smallest such gamma)."""
    gammas = sorted({float(g) for g in gammas})
    neighbours = rank_neighbours(dist_val_fit, k)
    best_gamma, best_accuracy = gammas[0], -1.0
    for gamma in gammas:
        predictions, _ = wknn_predict(dist_val_fit, neighbours, y_fit, gamma)
        acc = accuracy(predictions, y_val)
        if acc > best_accuracy:
            best_gamma, best_accuracy = gamma, acc
    return best_gamma, best_accuracy


def validation_split(n_train: int, test_size: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit positions, validation positions) into the fold's training list.

    Exactly sklearn's ``train_test_split(np.arange(n_train), ...)``, shuffled order
    included; callers sort the fit positions before ranking neighbours.
    """
    from sklearn.model_selection import train_test_split

    if n_train < 2:
        raise io.WmdevalError(f"cannot split {n_train} training document(s) for validation")
    fit, val = train_test_split(np.arange(n_train), test_size=test_size, random_state=seed)
    return np.asarray(fit, dtype=np.int64), np.asarray(val, dtype=np.int64)


# --------------------------------------------------------------------------- settings


def resolve_settings(settings: Mapping | None) -> dict:
    """Defaults (docs/protocol.md §6, §7) overridden by ``settings``; checked."""
    resolved = copy.deepcopy(DEFAULT_SETTINGS)
    for key, value in (settings or {}).items():
        if isinstance(value, Mapping) and isinstance(resolved.get(key), dict):
            resolved[key].update(value)
        else:
            resolved[key] = value
    knn, wknn = resolved["knn"], resolved["wknn"]
    problems = []
    if not knn["k"] or any(int(k) < 1 for k in knn["k"]):
        problems.append("knn.k must be a non-empty list of positive integers")
    if int(wknn["k"]) < 1:
        problems.append("wknn.k must be a positive integer")
    if not wknn["gammas"] or any(float(g) <= 0 for g in wknn["gammas"]):
        problems.append("wknn.gammas must be a non-empty list of positive numbers")
    for name, section in (("knn", knn), ("wknn", wknn)):
        if not 0 < float(section["validation_size"]) < 1:
            problems.append(f"{name}.validation_size must be in (0, 1)")
    if resolved["empty_documents"] not in ("error", "drop"):
        problems.append("empty_documents must be 'error' or 'drop'")
    if problems:
        raise io.WmdevalError("evaluation settings: " + "; ".join(problems))
    return resolved


# --------------------------------------------------------------------------- one fold


def _as_block(distances: np.ndarray | DistanceBlock) -> DistanceBlock:
    if callable(distances):
        return distances
    matrix = np.asarray(distances)
    return lambda rows, cols: matrix[np.ix_(rows, cols)]


def _nan_per_row(matrix: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """NaN count of every row, a chunk of rows at a time (matrices can be large)."""
    counts = [np.isnan(matrix[i : i + chunk]).sum(axis=1) for i in range(0, len(matrix), chunk)]
    return np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64)


def _empty_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows that are entirely NaN: the documents without words."""
    return _nan_per_row(matrix) == matrix.shape[1]


def _validation_splits(n_train: int, settings: Mapping) -> dict[str, tuple[np.ndarray,
                                                                           np.ndarray]]:
    """Per classifier: (sorted fit positions, validation positions) into the training list."""
    splits = {}
    for name in ("knn", "wknn"):
        fit, val = validation_split(n_train, settings[name]["validation_size"],
                                    settings[name]["seed"])
        splits[name] = (np.sort(fit), val)
    return splits


def _validation_union(splits: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    return np.unique(np.concatenate([val for _, val in splits.values()]))


def _n_queries(n_train: int, n_test: int, settings: Mapping) -> int:
    """Rows of a fold's distance block: its validation and test documents."""
    return len(_validation_union(_validation_splits(n_train, settings))) + n_test


def evaluate_fold(distances: np.ndarray | DistanceBlock, y: np.ndarray, train_pos: np.ndarray,
                  test_pos: np.ndarray, settings: Mapping | None = None,
                  empty: np.ndarray | None = None) -> list[dict]:
    """Tune and test kNN and wkNN on one fold of one method.

    ``distances`` is the full [n, n] matrix over document positions, or a callable
    ``block(rows, cols)``; it is called once, with ``cols`` = the fold's training
    positions as used (sorted, empty documents removed in "drop" mode), which is why
    the TF-IDF baselines may take their IDF from ``cols``. ``empty`` flags documents
    without words (default: the all-NaN rows of a matrix; none for a callable).
    Returns one dict per classifier with the SCORES fields that belong to the fold,
    plus diagnostics (n_val_empty, n_underflow).
    """
    settings = resolve_settings(settings)
    y = np.asarray(y, dtype=np.int64)
    block = _as_block(distances)
    if empty is None:
        empty = (np.zeros(len(y), dtype=bool) if callable(distances)
                 else _empty_rows(np.asarray(distances)))
    empty = np.asarray(empty, dtype=bool)
    train = np.sort(np.asarray(train_pos, dtype=np.int64))
    test = np.sort(np.asarray(test_pos, dtype=np.int64))
    dropping = settings["empty_documents"] == "drop"
    if dropping:
        n_test_dropped = int(np.count_nonzero(empty[test]))
        train, test = train[~empty[train]], test[~empty[test]]
    if len(test) == 0:
        raise io.WmdevalError("a fold has no test documents left to evaluate")

    splits = _validation_splits(len(train), settings)
    # One block for every query: validation documents of both splits and the test set,
    # against the whole training list; validation x fit is a column subset of it.
    val_union = _validation_union(splits)
    rows = np.concatenate([train[val_union], test])
    dist = np.array(block(rows, train), dtype=np.float64)  # a copy: we write NaNs below
    # A query whose distances are all undefined is empty too, whatever the flags say.
    query_empty = empty[rows] | np.isnan(dist).all(axis=1)
    dist[:, empty[train]] = np.nan  # an empty training document is never a neighbour
    dist[query_empty] = np.nan  # an empty query gets no prediction, i.e. an error
    row_of_val = np.full(len(train), -1, dtype=np.int64)
    row_of_val[val_union] = np.arange(len(val_union))
    dist_test = dist[len(val_union):]
    # "drop": the empty test documents that were removed; "error": those counted as errors
    n_test_empty = (n_test_dropped if dropping
                    else int(np.count_nonzero(query_empty[len(val_union):])))
    y_train, y_test = y[train], y[test]

    knn, wknn = settings["knn"], settings["wknn"]
    k_max = max(max(int(k) for k in knn["k"]), int(wknn["k"]))
    test_neighbours = rank_neighbours(dist_test, k_max)
    results = []

    fit, val = splits["knn"]
    best_k, val_acc = select_k(dist[np.ix_(row_of_val[val], fit)], y_train[fit], y_train[val],
                               knn["k"])
    predictions = knn_predict(test_neighbours, y_train, best_k)
    results.append(_fold_result("knn", best_k, val_acc, predictions, y_test, n_test_empty,
                                query_empty[row_of_val[val]], 0))

    fit, val = splits["wknn"]
    best_gamma, val_acc = select_gamma(dist[np.ix_(row_of_val[val], fit)], y_train[fit],
                                       y_train[val], wknn["gammas"], int(wknn["k"]))
    predictions, n_underflow = wknn_predict(dist_test, test_neighbours[:, : int(wknn["k"])],
                                            y_train, best_gamma)
    results.append(_fold_result("wknn", best_gamma, val_acc, predictions, y_test, n_test_empty,
                                query_empty[row_of_val[val]], n_underflow))
    return results


def _fold_result(classifier: str, param: float, val_accuracy: float, predictions: np.ndarray,
                 y_test: np.ndarray, n_test_empty: int, val_empty: np.ndarray,
                 n_underflow: int) -> dict:
    return {
        "classifier": classifier,
        "param": float(param),
        "val_accuracy": float(val_accuracy),
        "test_error": float(np.mean(predictions != y_test)),
        "n_test": int(len(y_test)),
        "n_test_empty": n_test_empty,
        "n_val_empty": int(np.count_nonzero(val_empty)),
        "n_underflow": n_underflow,
    }


# --------------------------------------------------------------------------- a dataset


def _wmd_block(doc_ids: np.ndarray, matrix_ids: np.ndarray, matrix: np.ndarray,
               method: Method) -> tuple[DistanceBlock, np.ndarray]:
    """Distance block over document positions, and the documents the matrix leaves empty."""
    where = {int(d): p for p, d in enumerate(np.asarray(matrix_ids))}
    missing = [int(d) for d in doc_ids if int(d) not in where]
    if missing:
        raise io.WmdevalError(f"{method.name} distances lack {len(missing)} document(s), "
                              f"e.g. doc_id {missing[0]}")
    if matrix.shape != (len(matrix_ids), len(matrix_ids)):
        raise io.WmdevalError(f"{method.name} distances: matrix {matrix.shape} does not match "
                              f"{len(matrix_ids)} doc ids")
    index = np.fromiter((where[int(d)] for d in doc_ids), dtype=np.int64, count=len(doc_ids))
    if np.array_equal(index, np.arange(len(matrix_ids))):
        square = matrix  # the usual case: no copy of a possibly large matrix
    else:
        square = matrix[np.ix_(index, index)]
    nan_per_row = _nan_per_row(square)
    empty = nan_per_row == len(square)
    if np.any(nan_per_row[~empty] != np.count_nonzero(empty)):
        log.warning("%s distances have NaN outside the rows and columns of empty documents; "
                    "those pairs are never neighbours", method.name)
    return (lambda rows, cols: square[np.ix_(rows, cols)]), empty


def baseline_block(counts, method: Method, folds: list[tuple[np.ndarray, np.ndarray]],
                   settings: Mapping | None = None) -> DistanceBlock:
    """Distance block of a baseline method for ``evaluate_fold`` over the given folds.

    TF-IDF distances depend on the fold (IDF of its training documents), so each fold
    computes its own block. BOW distances do not: when the folds' blocks overlap enough
    (five-fold data: every document is a query of some folds and a training document of
    the others), the distances from every query of any fold to every training document
    of any fold are computed once, and each fold's block is sliced from them.
    """
    settings = resolve_settings(settings)
    n_jobs = int(settings["n_jobs"])

    def per_fold(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        # evaluate_fold passes the fold's training positions as cols: the TF-IDF IDF source.
        return baselines.baseline_distances(counts, method, cols, rows, cols, n_jobs=n_jobs)

    if method.weighting == "tfidf" or not folds:
        return per_fold
    queries = np.unique(np.concatenate([np.concatenate(fold) for fold in folds]))
    training = np.unique(np.concatenate([train for train, _ in folds]))
    per_fold_work = sum(len(train) * _n_queries(len(train), len(test), settings)
                        for train, test in folds)
    if len(queries) * len(training) >= per_fold_work:  # one-fold data, for instance
        return per_fold
    shared = baselines.baseline_distances(counts, method, training, queries, training,
                                          n_jobs=n_jobs)
    return lambda rows, cols: shared[np.ix_(np.searchsorted(queries, rows),
                                            np.searchsorted(training, cols))]


def _pca_dimension(slug: str) -> tuple[int, str]:
    digits = slug.removeprefix("wmd-pca")
    return (int(digits) if digits.isdigit() else 0, slug)


def evaluate_dataset(documents: pa.Table, splits: pa.Table,
                     wmd_matrices: Mapping[str, tuple[np.ndarray, np.ndarray]],
                     settings: Mapping | None, dataset: str, variant: str) -> pa.Table:
    """SCORES rows for every method x classifier x fold of one dataset variant.

    ``wmd_matrices`` maps a WMD method slug ("wmd", "wmd-tfidf", "wmd-pca5") to
    (doc_ids, square matrix); a WMD method without a matrix is skipped.
    """
    settings = resolve_settings(settings)
    documents = documents.sort_by("doc_id")
    doc_ids = documents.column("doc_id").to_numpy()
    y = documents.column("y").to_numpy().astype(np.int64)
    if y.size and y.min() < 0:
        raise io.WmdevalError(f"{dataset}/{variant}: negative label codes in documents")
    folds = io.fold_indices(splits, doc_ids)
    counts, _ = baselines.count_matrix(documents)
    no_words = np.diff(counts.indptr) == 0
    if no_words.any():
        log.warning("%s/%s: %d document(s) without words (doc_id %s)", dataset, variant,
                    int(no_words.sum()), _preview(doc_ids[no_words]))

    # the 14 methods, then WMD on PCA embeddings ("wmd-pca5") for any such matrix given
    extra_wmd = [method_by_slug(slug) for slug in sorted(wmd_matrices, key=_pca_dimension)
                 if slug not in BY_SLUG]
    rows = []
    for method in (*METHODS, *extra_wmd):
        if method.is_wmd:
            if method.slug not in wmd_matrices:
                log.info("%s/%s: no %s distances given, skipped", dataset, variant, method.name)
                continue
            matrix_ids, matrix = wmd_matrices[method.slug]
            block, matrix_empty = _wmd_block(doc_ids, matrix_ids, np.asarray(matrix), method)
            extra = matrix_empty & ~no_words
            if extra.any():
                log.warning("%s/%s: %s is undefined for %d document(s) with words (doc_id %s); "
                            "treated as empty", dataset, variant, method.name,
                            int(extra.sum()), _preview(doc_ids[extra]))
            empty = no_words | matrix_empty
        else:
            block = baseline_block(counts, method, folds, settings)
            empty = no_words
        method_rows = [
            {"dataset": dataset, "variant": variant, "method": method.name, "fold": fold, **result}
            for fold, (train_pos, test_pos) in enumerate(folds)
            for result in evaluate_fold(block, y, train_pos, test_pos, settings, empty)
        ]
        _log_method(f"{dataset}/{variant} {method.name}", method_rows,
                    settings["empty_documents"])
        rows += method_rows
    columns = {name: [row[name] for row in rows] for name in schemas.SCORES.names}
    return pa.table(columns).cast(schemas.SCORES)


def _preview(ids: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(str(int(i)) for i in ids[:limit])
    return shown + (", ..." if len(ids) > limit else "")


def _log_method(where: str, rows: list[dict], mode: str) -> None:
    """One line per method for empty documents and one for wkNN underflow, over all folds."""
    knn = [r for r in rows if r["classifier"] == "knn"]
    if any(r["n_test_empty"] or r["n_val_empty"] for r in knn):
        action = "dropped" if mode == "drop" else "counted as errors"
        log.info("%s: empty test documents per fold %s (%s); empty validation documents per "
                 "fold %s", where, [r["n_test_empty"] for r in knn], action,
                 [r["n_val_empty"] for r in knn])
    wknn = [r for r in rows if r["classifier"] == "wknn"]
    n_underflow = sum(r["n_underflow"] for r in wknn)
    if n_underflow:
        log.warning("%s wkNN: the naive weights exp(-d/gamma) of all neighbours underflow to "
                    "0 for %d of %d test documents over %d fold(s) (gammas %s); weights are "
                    "shifted by the nearest distance, so these still get a prediction", where,
                    n_underflow, sum(r["n_test"] for r in wknn), len(wknn),
                    [r["param"] for r in wknn])


def run_evaluate(documents_path: str | os.PathLike, splits_path: str | os.PathLike,
                 wmd_paths: Mapping[str, str | os.PathLike], settings: Mapping | None,
                 dataset: str, variant: str, out_path: str | os.PathLike) -> pa.Table:
    """Read the inputs, evaluate, write SCORES atomically to ``out_path``."""
    documents = io.read_documents(documents_path)
    splits = io.read_splits(splits_path)
    wmd_matrices = {slug: io.read_distances(path) for slug, path in wmd_paths.items()}
    scores = evaluate_dataset(documents, splits, wmd_matrices, settings, dataset, variant)
    io.write_table(scores, out_path, schemas.SCORES)
    return scores


__all__ = [
    "DEFAULT_SETTINGS", "rank_neighbours", "knn_predict", "wknn_predict", "accuracy",
    "select_k", "select_gamma", "validation_split", "resolve_settings", "evaluate_fold",
    "baseline_block", "evaluate_dataset", "run_evaluate",
]
