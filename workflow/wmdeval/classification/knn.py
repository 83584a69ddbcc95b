"""kNN and weighted kNN classification with validation tuning (docs/protocol.md §6, §7).

Distances come through the one interface :class:`wmdeval.core.variant.Distances`, in
which NaN means "undefined": the distance from or to a document without words (or, for
WMD-TF-IDF, without TF-IDF mass). Such a document is never a neighbour, and as a query
it gets no prediction (-1), which every accuracy counts as an error. Classification
reads only neighbours (``Distances.nearest``), never a whole block.

Tie rules, all deterministic:
- neighbours are ranked by (distance, column); columns are positions in the fold's
  training list, which is sorted by doc_id, so ties go to the lower doc_id. The
  validation split's fit documents are sorted the same way before ranking, whatever
  order ``train_test_split`` returned them in;
- a vote tie goes to the smallest label code;
- a tuning tie goes to the smallest k or gamma.

Settings are the ``evaluation:`` config; a missing key takes the schema's default
(:func:`wmdeval.core.config.defaults`), the one place defaults live.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from ..core import io, schemas
from ..core.methods import WMD_METHODS, Method, as_method
from ..core.progress import Progress
from ..core.roles import (
    complete_settings,
    fold_lists,
    k_above_training,
    query_roles,
    validation_split,
    validation_splits,
)
from ..core.variant import Distances, Neighbours, Variant, rank_neighbours, tie_key
from ..distances.factory import (
    BaselineDistances,
    MatrixSource,
    method_distances,
    prepare_variant,
)

log = logging.getLogger("wmdeval.classification.knn")

NO_PREDICTION = -1


def _n_labels(y_train: np.ndarray) -> int:
    return int(y_train.max()) + 1 if y_train.size else 1


def _vote(neighbours: np.ndarray, y_train: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """Label with the largest (weighted) vote per row; ties to the smallest label."""
    n_rows = neighbours.shape[0]
    valid = neighbours >= 0
    if not y_train.size:
        return np.full(n_rows, NO_PREDICTION, dtype=np.int64)
    n_labels = _n_labels(y_train)
    labels = y_train[np.where(valid, neighbours, 0)]
    # one bincount for all rows: row r's labels live in bins [r*n_labels, (r+1)*n_labels)
    bins = (np.arange(n_rows)[:, None] * n_labels + labels)[valid]
    votes = np.bincount(
        bins, weights=None if weights is None else weights[valid], minlength=n_rows * n_labels
    ).reshape(n_rows, n_labels)
    predictions = votes.argmax(axis=1)  # argmax returns the first maximum
    predictions[~valid.any(axis=1)] = NO_PREDICTION
    return predictions


def knn_predict(neighbours: np.ndarray, y_train: np.ndarray, k: int) -> np.ndarray:
    """Majority label among the first k neighbours of every query.

    ``neighbours``: int [queries, >= k] indices into ``y_train`` (the training list),
    nearest first, -1 = none (ignored). ``y_train``: int label codes >= 0. Returns int64
    [queries]: the label with the most votes, a tie to the smallest label; -1 (no
    prediction) for a query without any neighbour.
    """
    neighbours = np.asarray(neighbours, dtype=np.int64)[:, :k]
    return _vote(neighbours, np.asarray(y_train, dtype=np.int64), None)


def wknn_predict(
    dist: np.ndarray, neighbours: np.ndarray, y_train: np.ndarray, gamma: float
) -> tuple[np.ndarray, int]:
    """Weighted vote: a neighbour at distance d votes with weight exp(-d / gamma).

    ``dist``: [queries, training list] distances (NaN = undefined); ``neighbours``: int
    [queries, k] column indices as :func:`rank_neighbours` returns them (-1 = none);
    ``y_train``: label codes of the training list. Returns (int64 [queries] predictions,
    a tie to the smallest label, -1 without any neighbour; the underflow count of
    :func:`wknn_vote`).
    """
    neighbours = np.asarray(neighbours, dtype=np.int64)
    valid = neighbours >= 0
    d = np.take_along_axis(
        np.asarray(dist, dtype=np.float64), np.where(valid, neighbours, 0), axis=1
    )
    return wknn_vote(Neighbours(neighbours, np.where(valid, d, np.nan)), y_train, gamma)


def wknn_vote(neighbours: Neighbours, y_train: np.ndarray, gamma: float) -> tuple[np.ndarray, int]:
    """Weighted vote of ranked neighbours (:meth:`Distances.nearest`): a neighbour at
    distance d votes with weight exp(-d / gamma); a tie goes to the smallest label, and
    a query without any neighbour gets -1.

    The weights are computed as exp(-(d - d_nearest) / gamma), the same up to a
    per-row factor, so the winning label is unchanged but the nearest neighbour
    always weighs 1 and the weights cannot all underflow to 0. d is the distance's
    :func:`~wmdeval.core.variant.tie_key`, as ranked. Returns the
    predictions (int64 [queries]) and the number of queries whose naive weights would
    all have been 0 (exp(-d_nearest / gamma) == 0).
    """
    index = np.asarray(neighbours.index, dtype=np.int64)
    valid = index >= 0
    # Weights from the distances as the ranking compared them, so that tied neighbours
    # weigh exactly the same and rounding noise cannot decide a vote either.
    d = tie_key(neighbours.distance)
    nearest = d[:, :1]  # neighbours are ordered, so slot 0 holds the row's minimum
    weights = np.where(valid, np.exp(-(d - nearest) / gamma), 0.0)
    has_neighbour = valid[:, 0] if valid.shape[1] else np.zeros(len(valid), dtype=bool)
    n_underflow = int(np.count_nonzero(has_neighbour & (np.exp(-nearest[:, 0] / gamma) == 0)))
    predictions = _vote(index, np.asarray(y_train, dtype=np.int64), weights)
    return predictions, n_underflow


def accuracy(predictions: np.ndarray, y_true: np.ndarray) -> float:
    """Fraction of correct predictions (predictions and labels: int [queries]); a -1 (no
    prediction) is always wrong. Raises ValueError for no queries."""
    if len(y_true) == 0:
        raise ValueError("accuracy of an empty set of queries")
    return float(np.mean(np.asarray(predictions) == np.asarray(y_true)))


def select_k(
    dist_val_fit: np.ndarray, y_fit: np.ndarray, y_val: np.ndarray, ks: Iterable[int] = range(1, 20)
) -> tuple[int, float]:
    """The k with the highest kNN validation accuracy (a tie to the smallest k), and
    that accuracy. ``dist_val_fit``: [validation, fit] distances, NaN = undefined; the
    fit columns sorted by position."""
    ks = sorted({int(k) for k in ks})
    return best_k(rank_neighbours(dist_val_fit, max(ks)), y_fit, y_val, ks)


def best_k(
    neighbours: np.ndarray, y_fit: np.ndarray, y_val: np.ndarray, ks: Iterable[int]
) -> tuple[int, float]:
    """:func:`select_k` from the validation documents' ranked fit neighbours (int
    [validation, >= max(ks)], -1 = none): prefixes serve every smaller k."""
    ks = sorted({int(k) for k in ks})
    chosen_k, best_accuracy = ks[0], -1.0
    for k in ks:
        acc = accuracy(knn_predict(neighbours, y_fit, k), y_val)
        if acc > best_accuracy:
            chosen_k, best_accuracy = k, acc
    return chosen_k, best_accuracy


def select_gamma(
    dist_val_fit: np.ndarray,
    y_fit: np.ndarray,
    y_val: np.ndarray,
    gammas: Iterable[float],
    k: int,
) -> tuple[float, float]:
    """The gamma with the highest wkNN validation accuracy (a tie to the smallest gamma),
    and that accuracy, with k neighbours. ``dist_val_fit`` as for :func:`select_k`."""
    dist = np.asarray(dist_val_fit, dtype=np.float64)
    index = rank_neighbours(dist, k)
    valid = index >= 0
    distance = np.where(valid, np.take_along_axis(dist, np.where(valid, index, 0), axis=1), np.nan)
    return best_gamma(Neighbours(index, distance), y_fit, y_val, gammas)


def best_gamma(
    neighbours: Neighbours, y_fit: np.ndarray, y_val: np.ndarray, gammas: Iterable[float]
) -> tuple[float, float]:
    """:func:`select_gamma` from the validation documents' ranked fit neighbours."""
    gammas = sorted({float(g) for g in gammas})
    chosen_gamma, best_accuracy = gammas[0], -1.0
    for gamma in gammas:
        predictions, _ = wknn_vote(neighbours, y_fit, gamma)
        acc = accuracy(predictions, y_val)
        if acc > best_accuracy:
            chosen_gamma, best_accuracy = gamma, acc
    return chosen_gamma, best_accuracy


# --------------------------------------------------------------------------- one fold


def evaluate_fold(
    distances: Distances,
    y: np.ndarray,
    train_pos: np.ndarray,
    test_pos: np.ndarray,
    settings: Mapping | None = None,
    with_predictions: bool = False,
) -> list[dict]:
    """Tune and test kNN and wkNN on one fold of one method.

    ``distances``: the method's distances over the variant's positions (for TF-IDF,
    with the IDF of this fold's training list as evaluated: sorted, without the empty
    documents in "drop" mode); ``y``: int label code >= 0 per position; ``train_pos``,
    ``test_pos``: the fold's positions (any order). Only neighbours are read
    (``distances.nearest``): each test document's among the training list, each
    validation document's among the fit documents of its split.

    A test document that is empty (``distances.empty``), or has no defined distance to
    any training document, gets no prediction: an error ("error" mode); "drop" mode
    removes the empty documents first. Returns one dict per classifier ("knn", then
    "wknn") with the SCORES fields that belong to the fold plus diagnostics
    (n_val_empty: validation documents without a neighbour; n_underflow). With
    ``with_predictions``, each dict also holds "test" (the test positions evaluated) and
    "predictions" (int64 label code per test position, -1 = no prediction).
    """
    settings = complete_settings(settings)
    y = np.asarray(y, dtype=np.int64)
    empty = distances.empty
    dropping = settings["empty_documents"] == "drop"
    train, test = fold_lists(train_pos, test_pos, empty, dropping)
    if len(test) == 0:
        raise io.WmdevalError("a fold has no test documents left to evaluate")
    splits = validation_splits(len(train), settings)
    y_train, y_test = y[train], y[test]
    knn, wknn = settings["knn"], settings["wknn"]
    ks, wknn_k = [int(k) for k in knn["k"]], int(wknn["k"])

    test_neighbours = distances.nearest(test, train, max(max(ks), wknn_k))
    # A query whose distances are all undefined is empty too, whatever the flags say.
    test_empty = empty[test] | (test_neighbours.index[:, 0] < 0)
    # "drop": the empty test documents that were removed; "error": those counted as errors
    n_test_empty = (
        int(np.count_nonzero(empty[np.asarray(test_pos, dtype=np.int64)]))
        if dropping
        else int(np.count_nonzero(test_empty))
    )
    results = []

    fit, val = splits["knn"]
    val_neighbours = distances.nearest(train[val], train[fit], max(ks))
    chosen_k, val_acc = best_k(val_neighbours.index, y_train[fit], y_train[val], ks)
    knn_predictions = knn_predict(test_neighbours.index, y_train, chosen_k)
    results.append(
        _fold_result(
            "knn",
            chosen_k,
            val_acc,
            knn_predictions,
            y_test,
            n_test_empty,
            _without_neighbour(val_neighbours, empty[train[val]]),
            0,
        )
    )

    fit, val = splits["wknn"]
    val_neighbours = distances.nearest(train[val], train[fit], wknn_k)
    chosen_gamma, val_acc = best_gamma(val_neighbours, y_train[fit], y_train[val], wknn["gammas"])
    nearest_k = Neighbours(test_neighbours.index[:, :wknn_k], test_neighbours.distance[:, :wknn_k])
    predictions, n_underflow = wknn_vote(nearest_k, y_train, chosen_gamma)
    results.append(
        _fold_result(
            "wknn",
            chosen_gamma,
            val_acc,
            predictions,
            y_test,
            n_test_empty,
            _without_neighbour(val_neighbours, empty[train[val]]),
            n_underflow,
        )
    )
    if with_predictions:
        for result, predicted in zip(results, (knn_predictions, predictions), strict=True):
            result["test"], result["predictions"] = test, predicted
    return results


def _without_neighbour(neighbours: Neighbours, empty: np.ndarray) -> np.ndarray:
    return empty | (neighbours.index[:, 0] < 0)


def _fold_result(
    classifier: str,
    param: float,
    val_accuracy: float,
    predictions: np.ndarray,
    y_test: np.ndarray,
    n_test_empty: int,
    val_empty: np.ndarray,
    n_underflow: int,
) -> dict:
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


def _fold_work(n_train: int, n_test: int, settings: Mapping) -> int:
    """Distances one fold's evaluation asks for: each split's validation x fit documents
    and the test x training documents."""
    work = n_test * n_train
    for fit, val in validation_splits(n_train, settings).values():
        work += len(val) * len(fit)
    return work


def fold_distances(
    variant: Variant,
    method: Method,
    folds: list[tuple[np.ndarray, np.ndarray]],
    settings: Mapping | None = None,
    n_jobs: int = 1,
) -> Callable[[np.ndarray], Distances]:
    """``training list -> Distances`` of ``method`` for :func:`evaluate_fold` over ``folds``.

    TF-IDF baselines depend on the fold (IDF of the training list as evaluated), so each
    fold gets its own distances. WMD and BOW do not: one object serves every fold. When
    the folds overlap enough (five-fold data: every document is a query of some folds and
    a training document of the others), the BOW rankings of every fold are done ahead,
    a block of queries at a time against every training document of any fold
    (:meth:`BaselineDistances.rank_roles`: each block's distances computed once, memory
    bounded by the block), and each fold reads its neighbours from them (the same
    numbers, bit for bit).
    """
    if method.weighting == "tfidf" and not method.is_wmd:
        return lambda training: method_distances(variant, method, training=training, n_jobs=n_jobs)
    distances = method_distances(variant, method, n_jobs=n_jobs)
    if isinstance(distances, BaselineDistances) and folds:
        settings = complete_settings(settings)
        queries = np.unique(np.concatenate([np.concatenate(fold) for fold in folds]))
        training = np.unique(np.concatenate([train for train, _ in folds]))
        per_fold_work = sum(_fold_work(len(train), len(test), settings) for train, test in folds)
        if len(queries) * len(training) < per_fold_work:  # not for one-fold data, e.g.
            distances.rank_roles(query_roles(folds, distances.empty, settings))
    return lambda training: distances


def evaluate_dataset(
    documents: pa.Table,
    splits: pa.Table,
    wmd_matrices: Mapping[str, MatrixSource],
    settings: Mapping | None,
    dataset: str,
    variant: str,
    n_jobs: int = 1,
    neighbour_tables: Mapping[str, tuple[pa.Table, pa.Table]] | None = None,
) -> pa.Table:
    """The SCORES table of :func:`evaluate_variant` (same arguments)."""
    scores, _ = evaluate_variant(
        documents, splits, wmd_matrices, settings, dataset, variant, n_jobs, neighbour_tables
    )
    return scores


def evaluate_variant(
    documents: pa.Table,
    splits: pa.Table,
    wmd_matrices: Mapping[str, MatrixSource],
    settings: Mapping | None,
    dataset: str,
    variant: str,
    n_jobs: int = 1,
    neighbour_tables: Mapping[str, tuple[pa.Table, pa.Table]] | None = None,
    report: str | None = None,
    methods: Sequence[str] | None = None,
) -> tuple[pa.Table, pa.Table]:
    """SCORES rows for every method x classifier x fold of one dataset variant, and the
    PREDICTIONS behind them (one row per test document of each).

    ``documents``, ``splits``: DOCUMENTS and SPLITS tables; ``wmd_matrices`` maps a WMD
    method slug ("wmd", "wmd-tfidf", "wmd-pca5") to (doc_ids, square matrix) holding
    every document, or to a function returning that (each matrix is then read in its
    method's turn and dropped after it); ``neighbour_tables`` maps the WMD methods
    searched in ``wmd.mode: knn`` to their (NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES)
    tables, which give the same scores; a WMD method with neither is skipped. Methods in
    Table 2 order, then PCA WMD by dimension; folds in order; "knn" before "wknn".
    ``n_jobs``: threads of the baseline distances (the scores do not depend on it).
    ``report``: the subject of the progress lines in the log (folds evaluated, of every
    method; None: no lines). ``methods``: only these (names or slugs; None: every method
    with distances), in the same order, so that the rows of parts evaluated apart and
    concatenated in method order are those of one evaluation (``wmdeval evaluate
    --methods``, :func:`run_gather`); a method named without distances is an error.
    """
    settings = complete_settings(settings)
    data = prepare_variant(documents, splits, wmd_matrices, neighbour_tables)
    for line in k_above_training(
        [len(tr) for tr, _ in data.folds], settings, f"{dataset}/{variant}"
    ):
        log.warning("%s", line)
    y = data.y
    if y.size and y.min() < 0:
        raise io.WmdevalError(f"{dataset}/{variant}: negative label codes in documents")
    no_words = data.no_words
    if no_words.any():
        log.warning(
            "%s/%s: %d document(s) without words (doc_id %s)",
            dataset,
            variant,
            int(no_words.sum()),
            _preview(data.doc_ids[no_words]),
        )
    for method in WMD_METHODS:
        if methods is None and method.slug not in data.wmd:
            log.info("%s/%s: no %s distances given, skipped", dataset, variant, method.name)

    evaluated = _chosen_methods(data.methods, methods, f"{dataset}/{variant}")
    dropping = settings["empty_documents"] == "drop"
    rows = []
    progress = Progress(
        log if report is not None else None,
        report or "",
        len(evaluated) * len(data.folds),
        "folds",
    )
    for method in evaluated:
        empty = data.empty(method)
        extra = empty & ~no_words
        if extra.any():
            log.warning(
                "%s/%s: %s is undefined for %d document(s) with words (doc_id %s); "
                "treated as empty",
                dataset,
                variant,
                method.name,
                int(extra.sum()),
                _preview(data.doc_ids[extra]),
            )
        distances_for = fold_distances(data, method, data.folds, settings, n_jobs)
        method_rows = []
        for fold, (train_pos, test_pos) in enumerate(data.folds):
            method_rows += [
                {
                    "dataset": dataset,
                    "variant": variant,
                    "method": method.name,
                    "fold": fold,
                    **result,
                }
                for result in evaluate_fold(
                    distances_for(fold_lists(train_pos, test_pos, empty, dropping)[0]),
                    y,
                    train_pos,
                    test_pos,
                    settings,
                    with_predictions=True,
                )
            ]
            progress.advance()
        _log_method(f"{dataset}/{variant} {method.name}", method_rows, settings["empty_documents"])
        rows += method_rows
        del distances_for  # its matrix may go before the next method's is read
    progress.finish()
    columns = {name: [row[name] for row in rows] for name in schemas.SCORES.names}
    scores = pa.table(columns).cast(schemas.SCORES)
    return scores, _predictions_table(rows, data)


def _chosen_methods(
    available: Sequence[Method], chosen: Sequence[str] | None, where: str
) -> tuple[Method, ...]:
    """The methods of ``available`` (table order) that ``chosen`` names (names or slugs;
    None: all of them), in table order; a name without distances is an error."""
    if chosen is None:
        return tuple(available)
    wanted = set()
    for name in chosen:
        try:
            wanted.add(as_method(name).name)
        except (KeyError, ValueError, io.WmdevalError):
            raise io.WmdevalError(f"{where}: --methods: {name!r} is not a method") from None
    found = tuple(m for m in available if m.name in wanted)
    missing = wanted - {m.name for m in found}
    if missing:
        raise io.WmdevalError(
            f"{where}: --methods: no distances given for {', '.join(sorted(missing))}"
        )
    return found


def _predictions_table(rows: list[dict], data: Variant) -> pa.Table:
    """PREDICTIONS from evaluate_fold's results (with predictions), in their order."""
    label_of_code = {int(code): str(label) for code, label in zip(data.y, data.labels, strict=True)}
    columns: dict[str, list] = {name: [] for name in schemas.PREDICTIONS.names}
    for row in rows:
        n = len(row["test"])
        for name in ("dataset", "variant", "method", "classifier", "fold"):
            columns[name] += [row[name]] * n
        columns["doc_id"] += data.doc_ids[row["test"]].tolist()
        columns["true_label"] += data.labels[row["test"]].tolist()
        columns["predicted_label"] += [label_of_code.get(int(p)) for p in row["predictions"]]
    return pa.table(columns).cast(schemas.PREDICTIONS)


def _preview(ids: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(str(int(i)) for i in ids[:limit])
    return shown + (", ..." if len(ids) > limit else "")


def _log_method(where: str, rows: list[dict], mode: str) -> None:
    """One line per method for empty documents and one for wkNN underflow, over all folds."""
    knn = [r for r in rows if r["classifier"] == "knn"]
    if any(r["n_test_empty"] or r["n_val_empty"] for r in knn):
        action = "dropped" if mode == "drop" else "counted as errors"
        log.info(
            "%s: empty test documents per fold %s (%s); empty validation documents per fold %s",
            where,
            [r["n_test_empty"] for r in knn],
            action,
            [r["n_val_empty"] for r in knn],
        )
    wknn = [r for r in rows if r["classifier"] == "wknn"]
    n_underflow = sum(r["n_underflow"] for r in wknn)
    if n_underflow:
        log.warning(
            "%s wkNN: the naive weights exp(-d/gamma) of all neighbours underflow to "
            "0 for %d of %d test documents over %d fold(s) (gammas %s); weights are "
            "shifted by the nearest distance, so these still get a prediction",
            where,
            n_underflow,
            sum(r["n_test"] for r in wknn),
            len(wknn),
            [r["param"] for r in wknn],
        )


def run_evaluate(
    documents_path: str | os.PathLike,
    splits_path: str | os.PathLike,
    wmd_paths: Mapping[str, str | os.PathLike],
    settings: Mapping | None,
    dataset: str,
    variant: str,
    out_path: str | os.PathLike,
    neighbour_paths: Mapping[str, tuple[str, str]] | None = None,
    predictions_path: str | os.PathLike | None = None,
    methods: Sequence[str] | None = None,
) -> pa.Table:
    """Read the inputs (DOCUMENTS, SPLITS, method slug -> DISTANCES file, WMD slug ->
    [NEIGHBOUR_PAIRS, NEIGHBOUR_CERTIFICATES] files), evaluate (only ``methods``, slugs,
    if given: one part of the evaluation, see :func:`run_gather`), write SCORES
    atomically to ``out_path`` (and PREDICTIONS to ``predictions_path``); returns the
    scores."""
    from ..distances.wmd.search import read_neighbour_tables

    documents = io.read_documents(documents_path)
    splits = io.read_splits(splits_path)
    # read when each method's turn comes, one matrix in memory at a time
    wmd_matrices = {
        slug: functools.partial(io.read_distances, path) for slug, path in wmd_paths.items()
    }
    tables = {
        slug: read_neighbour_tables(*paths) for slug, paths in (neighbour_paths or {}).items()
    }
    scores, predictions = evaluate_variant(
        documents,
        splits,
        wmd_matrices,
        settings,
        dataset,
        variant,
        neighbour_tables=tables,
        report=f"evaluate {dataset}/{variant}",
        methods=methods,
    )
    if predictions_path is not None:
        io.write_table(predictions, predictions_path, schemas.PREDICTIONS)
    io.write_table(scores, out_path, schemas.SCORES)
    return scores


def run_gather(
    scores_paths: Sequence[str | os.PathLike],
    predictions_paths: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    predictions_path: str | os.PathLike,
    expected=None,
) -> None:
    """One evaluation's SCORES and PREDICTIONS from its parts (``wmdeval evaluate
    --methods``, each part a run of consecutive methods in table order), given in method
    order: the rows concatenated in that order, the same bytes as one job evaluating every
    method writes. With ``expected`` ({column: values}, :mod:`wmdeval.core.coverage`) the
    scores and the predictions must each cover exactly those datasets, variants, methods
    and classifiers; a (dataset, variant, method, classifier, fold) in two parts is an
    error."""
    if len(scores_paths) != len(predictions_paths):
        raise io.WmdevalError(
            f"gather-evaluate: {len(scores_paths)} scores file(s) but"
            f" {len(predictions_paths)} predictions file(s)"
        )
    scores = io.read_tables(scores_paths, schemas.SCORES, expected)
    predictions = io.read_tables(predictions_paths, schemas.PREDICTIONS, expected)
    key = ("dataset", "variant", "method", "classifier", "fold")
    if scores.select(list(key)).group_by(list(key)).aggregate([]).num_rows != scores.num_rows:
        raise io.WmdevalError(
            f"gather-evaluate: a method's fold appears in two parts of"
            f" {', '.join(map(str, scores_paths))}"
        )
    # one chunk per column, as the single evaluation's table is, before writing
    io.write_table(predictions.combine_chunks(), predictions_path, schemas.PREDICTIONS)
    io.write_table(scores.combine_chunks(), out_path, schemas.SCORES)


__all__ = [
    "NO_PREDICTION",
    "rank_neighbours",
    "knn_predict",
    "wknn_predict",
    "wknn_vote",
    "accuracy",
    "select_k",
    "best_k",
    "select_gamma",
    "best_gamma",
    "validation_split",
    "complete_settings",
    "evaluate_fold",
    "fold_distances",
    "evaluate_dataset",
    "evaluate_variant",
    "run_evaluate",
    "run_gather",
]
