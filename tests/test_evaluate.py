"""kNN / wkNN classification and tuning (wmdeval.classification.knn) against plain-loop versions."""

from __future__ import annotations

import gc
import logging
import math
import re
import weakref
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from sklearn.model_selection import train_test_split

from wmdeval.classification import knn as evaluate
from wmdeval.core import config, io, schemas
from wmdeval.core.methods import BASELINES, METHODS
from wmdeval.core.variant import DenseDistances
from wmdeval.distances import baselines
from wmdeval.distances.factory import prepare_variant

GAMMAS = [round(0.005 * i, 3) for i in range(1, 21)]  # 0.005, 0.010, ..., 0.100


# --------------------------------------------------------------------------- plain loops


def loop_key(d):
    """The tie rule written out for one number: d rounded to 32 significant bits."""
    mantissa, exponent = math.frexp(float(d))
    return math.ldexp(round(mantissa * 2**32), exponent - 32)


def loop_neighbours(row, k):
    ranked = sorted((loop_key(d), j) for j, d in enumerate(row) if np.isfinite(d))
    chosen = [j for _, j in ranked[:k]]
    return chosen + [-1] * (k - len(chosen))


def loop_winner(totals):
    if not totals:
        return -1
    best = max(totals.values())
    return min(label for label, total in totals.items() if total == best)


def loop_knn(row, y_train, k):
    labels = [y_train[j] for j in loop_neighbours(row, k) if j >= 0]
    return loop_winner(Counter(labels))


def loop_wknn(row, y_train, k, gamma):
    chosen = [j for j in loop_neighbours(row, k) if j >= 0]
    if not chosen:
        return -1, False
    d = np.array([loop_key(row[j]) for j in chosen], dtype=np.float64)
    weights = np.exp(-(d - d[0]) / gamma)
    totals = {}
    for j, w in zip(chosen, weights, strict=True):
        totals[y_train[j]] = totals.get(y_train[j], 0.0) + float(w)
    return loop_winner(totals), bool(np.exp(-d[0] / gamma) == 0)


def loop_select(candidates, accuracy_of):
    best, best_acc = None, -1.0
    for c in sorted(candidates):
        acc = accuracy_of(c)
        if acc > best_acc:
            best, best_acc = c, acc
    return best, best_acc


def loop_accuracy(predictions, y_true):
    return sum(int(p == t) for p, t in zip(predictions, y_true, strict=True)) / len(y_true)


def tied_distances(rng, n_rows, n_cols, nan_cols=2, nan_rows=1, scale=1.0):
    """Distances rounded to 1 decimal (frequent ties), some NaN columns and all-NaN rows."""
    dist = np.round(rng.uniform(0, 1, (n_rows, n_cols)), 1) * scale
    dist[:, rng.choice(n_cols, nan_cols, replace=False)] = np.nan
    dist[rng.choice(n_rows, nan_rows, replace=False)] = np.nan
    dist[rng.uniform(size=dist.shape) < 0.03] = np.nan  # scattered undefined pairs too
    return dist


# --------------------------------------------------------------------------- ranking


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 3, 7, 19, 45])
def test_rank_neighbours_matches_sorted_loop(seed, k):
    rng = np.random.default_rng(seed)
    dist = tied_distances(rng, 25, 40)
    got = evaluate.rank_neighbours(dist, k)
    assert got.shape == (25, k)
    assert got.tolist() == [loop_neighbours(row, k) for row in dist]


def test_rank_neighbours_tie_at_kth_boundary_goes_to_lower_index():
    # 20 columns at 0.1, 20 at 0.2, 160 at 0.5, scattered: for k = 3, 41 or 43 the k-th
    # value is shared by many columns, and argpartition may pick any of them.
    row = np.random.default_rng(3).permutation(
        np.array([0.5, 0.1, 0.5, 0.5, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5] * 20)
    )
    for k in (1, 2, 3, 5, 41, 42, 43, 120):
        assert evaluate.rank_neighbours(row[None], k)[0].tolist() == loop_neighbours(row, k)


def test_rank_neighbours_nan_never_a_neighbour():
    dist = np.array([[np.nan, 0.3, np.nan, 0.1], [np.nan] * 4])
    assert evaluate.rank_neighbours(dist, 3).tolist() == [[3, 1, -1], [-1, -1, -1]]


def test_rank_neighbours_float32_input():
    dist = np.array([[0.2, 0.1, 0.1]], dtype=np.float32)
    assert evaluate.rank_neighbours(dist, 2).tolist() == [[1, 2]]


# --------------------------------------------------------------------------- predictions


def test_knn_hand_computed():
    dist = np.array([[0.3, 0.1, 0.2, 0.4]])
    y_train = np.array([1, 0, 1, 0])
    neighbours = evaluate.rank_neighbours(dist, 4)
    assert neighbours.tolist() == [[1, 2, 0, 3]]
    predictions = [int(evaluate.knn_predict(neighbours, y_train, k)[0]) for k in (1, 2, 3, 4)]
    # k=2 and k=4 are 1:1 and 2:2 ties between labels 0 and 1 -> the smaller label, 0
    assert predictions == [0, 0, 1, 0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 4, 19])
def test_knn_matches_loop(seed, k):
    rng = np.random.default_rng(100 + seed)
    dist = tied_distances(rng, 30, 35)
    y_train = rng.integers(0, 4, 35)
    got = evaluate.knn_predict(evaluate.rank_neighbours(dist, 19), y_train, k)
    assert got.tolist() == [loop_knn(row, y_train, k) for row in dist]
    assert (got[np.isnan(dist).all(axis=1)] == -1).all()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("gamma", [0.005, 0.05, 0.1, 1.0])
def test_wknn_matches_loop(seed, gamma):
    rng = np.random.default_rng(200 + seed)
    dist = tied_distances(rng, 30, 35, scale=0.2)
    y_train = rng.integers(0, 3, 35)
    neighbours = evaluate.rank_neighbours(dist, 19)
    got, n_underflow = evaluate.wknn_predict(dist, neighbours, y_train, gamma)
    expected = [loop_wknn(row, y_train, 19, gamma) for row in dist]
    assert got.tolist() == [p for p, _ in expected]
    assert n_underflow == sum(u for _, u in expected)


def test_wknn_hand_computed():
    dist = np.array([[0.1, 0.2, 0.2]])
    y_train = np.array([0, 1, 1])
    neighbours = evaluate.rank_neighbours(dist, 3)
    # gamma small: 1 vs 2 e^-10 -> label 0; gamma large: 1 vs 2 e^-0.01 -> label 1
    assert evaluate.wknn_predict(dist, neighbours, y_train, 0.01)[0].tolist() == [0]
    assert evaluate.wknn_predict(dist, neighbours, y_train, 10.0)[0].tolist() == [1]


def test_wknn_underflow_still_predicts_nearest_class():
    dist = np.array([[5.0, 5.02, 5.03], [0.01, 0.02, 0.5]])
    y_train = np.array([2, 0, 0])
    assert np.exp(-5.0 / 0.005) == 0  # the naive weights are all 0 for the first query
    neighbours = evaluate.rank_neighbours(dist, 3)
    predictions, n_underflow = evaluate.wknn_predict(dist, neighbours, y_train, 0.005)
    assert predictions.tolist() == [2, 2]
    assert n_underflow == 1


# --------------------------------------------------------------------------- tuning


def test_select_k_hand_computed():
    # Two validation queries against four fit documents.
    dist = np.array([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    y_fit = np.array([0, 1, 1, 1])
    y_val = np.array([1, 1])
    # k=1: [0, 1] -> 0.5; k=2: [0 (tie), 1] -> 0.5; k=3: [1, 1] -> 1.0; k=4: [1, 1] -> 1.0
    assert evaluate.select_k(dist, y_fit, y_val, range(1, 5)) == (3, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_select_k_and_gamma_match_loops(seed):
    rng = np.random.default_rng(300 + seed)
    dist = tied_distances(rng, 40, 60, scale=0.3)
    y_fit = rng.integers(0, 3, 60)
    y_val = rng.integers(0, 3, 40)

    def knn_accuracy(k):
        return loop_accuracy([loop_knn(row, y_fit, k) for row in dist], y_val)

    def wknn_accuracy(gamma):
        return loop_accuracy([loop_wknn(row, y_fit, 19, gamma)[0] for row in dist], y_val)

    assert evaluate.select_k(dist, y_fit, y_val) == loop_select(range(1, 20), knn_accuracy)
    assert evaluate.select_gamma(dist, y_fit, y_val, GAMMAS, 19) == loop_select(
        GAMMAS, wknn_accuracy
    )


def test_select_gamma_prefers_smallest_on_ties():
    dist = np.array([[0.1, 0.5], [0.5, 0.1]])
    y_fit = np.array([0, 1])
    y_val = np.array([0, 1])  # every gamma is perfect
    assert evaluate.select_gamma(dist, y_fit, y_val, [0.1, 0.02, 0.05], 2) == (0.02, 1.0)


@pytest.mark.parametrize("n_train", [2, 5, 17, 517])
@pytest.mark.parametrize("test_size", [0.2, 0.3])
def test_validation_split_is_sklearns(n_train, test_size):
    fit, val = evaluate.validation_split(n_train, test_size, 0)
    ref_fit, ref_val = train_test_split(np.arange(n_train), test_size=test_size, random_state=0)
    assert fit.tolist() == ref_fit.tolist()
    assert val.tolist() == ref_val.tolist()


def test_shuffle_split_is_sklearns_train_test_split_for_many_sizes_and_seeds():
    # written out to keep scikit-learn's import out of the jobs: the same positions in the
    # same order, test sizes whose product with n is whole or not (ceil), any seed
    from wmdeval.core.roles import shuffle_split

    checked = 0
    for n in [2, 3, 4, 7, 10, 11, 64, 100, 333, 1000, 4097]:
        for test_size in [0.01, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.7, 0.9, 0.99]:
            for seed in [0, 1, 5, 42, 2**31 - 1, 2**32 - 1]:
                try:
                    ref = train_test_split(np.arange(n), test_size=test_size, random_state=seed)
                except ValueError:  # sklearn: an empty train set
                    with pytest.raises(ValueError):
                        shuffle_split(n, test_size, seed)
                    continue
                train, test = shuffle_split(n, test_size, seed)
                assert train.dtype == test.dtype == np.int64
                assert (train.tolist(), test.tolist()) == (ref[0].tolist(), ref[1].tolist())
                checked += 1
    assert checked > 500
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError):
            shuffle_split(10, bad, 0)


def test_missing_settings_take_the_schemas_defaults():
    settings = evaluate.complete_settings({"knn": {"seed": 3}})
    assert settings["knn"] == {"k": list(range(1, 20)), "validation_size": 0.2, "seed": 3}
    assert settings["wknn"] == {"k": 19, "gammas": GAMMAS, "validation_size": 0.3, "seed": 0}
    assert settings["empty_documents"] == "error"
    assert evaluate.complete_settings(None) == config.defaults("evaluation")
    # a bad value is the schema's to reject, before any job runs
    with pytest.raises(io.WmdevalError, match="empty_documents"):
        config.validate(
            {"datasets": {}, "embeddings": {}, "evaluation": {"empty_documents": "ignore"}}
        )


# --------------------------------------------------------------------------- a fold


def loop_fold(dist, y, train, test, empty):
    """The whole protocol for one fold ("error" mode), with plain loops."""
    dist = dist.copy()
    dist[:, empty] = np.nan
    dist[empty] = np.nan
    train, test = sorted(train), sorted(test)
    out = {}
    for name, size, candidates in (("knn", 0.2, range(1, 20)), ("wknn", 0.3, GAMMAS)):
        fit, val = train_test_split(np.arange(len(train)), test_size=size, random_state=0)
        fit_docs = [train[i] for i in sorted(fit)]
        val_docs = [train[i] for i in val]

        def predict(doc, param, columns, name=name):
            row = [dist[doc, c] for c in columns]
            labels = [y[c] for c in columns]
            if name == "knn":
                return loop_knn(row, labels, param)
            return loop_wknn(row, labels, 19, param)[0]

        def val_accuracy(param, fit_docs=fit_docs, val_docs=val_docs, predict=predict):
            return loop_accuracy([predict(d, param, fit_docs) for d in val_docs], y[val_docs])

        param, acc = loop_select(candidates, val_accuracy)
        error = 1 - loop_accuracy([predict(d, param, train) for d in test], y[test])
        out[name] = (param, acc, error)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_evaluate_fold_matches_loop(seed):
    rng = np.random.default_rng(400 + seed)
    n = 60
    dist = np.round(rng.uniform(0, 0.3, (n, n)), 2)
    dist = (dist + dist.T) / 2
    np.fill_diagonal(dist, 0)
    y = rng.integers(0, 3, n)
    empty = np.zeros(n, dtype=bool)
    empty[[4, 50]] = True  # one training and one test document without words
    dist[empty] = np.nan
    dist[:, empty] = np.nan
    test = np.arange(45, n)
    train = rng.permutation(45)  # any order: the fold is sorted by position
    results = {
        r["classifier"]: r for r in evaluate.evaluate_fold(DenseDistances(dist), y, train, test)
    }
    expected = loop_fold(dist, y, train, test, empty)
    for name, (param, acc, error) in expected.items():
        assert results[name]["param"] == param
        assert results[name]["val_accuracy"] == pytest.approx(acc)
        assert results[name]["test_error"] == pytest.approx(error)
        assert results[name]["n_test"] == 15
        assert results[name]["n_test_empty"] == 1


def test_evaluate_fold_drop_mode_removes_empty_documents():
    rng = np.random.default_rng(7)
    n = 40
    dist = rng.uniform(0, 1, (n, n))
    y = rng.integers(0, 2, n)
    dist[[3, 35]] = np.nan
    dist[:, [3, 35]] = np.nan
    train, test = np.arange(30), np.arange(30, n)
    kept = np.setdiff1d(np.arange(n), [3, 35])
    dropped = evaluate.evaluate_fold(
        DenseDistances(dist), y, train, test, {"empty_documents": "drop"}
    )
    # dropping == evaluating the matrix without those documents
    sub = {
        r["classifier"]: r
        for r in evaluate.evaluate_fold(
            DenseDistances(dist[np.ix_(kept, kept)]), y[kept], np.arange(29), np.arange(29, n - 2)
        )
    }
    for r in dropped:
        assert r["n_test"] == 9 and r["n_test_empty"] == 1
        assert r["param"] == sub[r["classifier"]]["param"]
        assert r["test_error"] == sub[r["classifier"]]["test_error"]


# --------------------------------------------------------------------------- a dataset


def tiny_dataset(rng, n=40, n_classes=3):
    """Documents whose words lean to their class, two folds, one empty document (doc 7)."""
    y = np.arange(n) % n_classes
    words, counts = [], []
    for i in range(n):
        pool = [f"c{y[i]}w{j}" for j in range(6)] + [f"shared{j}" for j in range(6)]
        chosen = sorted(set(rng.choice(pool, 5)))
        words.append([] if i == 7 else chosen)
        counts.append([] if i == 7 else [float(c) for c in rng.integers(1, 4, len(chosen))])
    documents = pa.table(
        {
            "doc_id": pa.array(np.arange(n, dtype=np.int32) * 2),  # ids need not be positions
            "label": [f"class{c}" for c in y],
            "y": pa.array(y.astype(np.int32)),
            "words": words,
            "counts": counts,
        }
    ).cast(schemas.DOCUMENTS)
    rows = []
    for fold in range(2):
        test = set(range(3 * fold, n, 4))  # doc 7: training in fold 0, test in fold 1
        for i in range(n):
            rows.append((fold, 2 * i, "test" if i in test else "train"))
    fold, doc_id, subset = zip(*rows, strict=True)
    splits = pa.table(
        {
            "fold": pa.array(fold, pa.int16()),
            "doc_id": pa.array(doc_id, pa.int32()),
            "subset": list(subset),
        }
    ).cast(schemas.SPLITS)
    return documents, splits, y


def random_wmd(rng, y, empty):
    n = len(y)
    m = rng.uniform(0.3, 1.0, (n, n)) + 0.4 * (y[:, None] != y[None, :])
    m = (m + m.T) / 2
    np.fill_diagonal(m, 0)
    m[empty] = np.nan
    m[:, empty] = np.nan
    return m.astype(np.float32)


@pytest.fixture(scope="module")
def tiny():
    rng = np.random.default_rng(11)
    documents, splits, y = tiny_dataset(rng)
    empty = np.arange(len(y)) == 7
    doc_ids = documents.column("doc_id").to_numpy()
    wmd = {
        "wmd": (doc_ids, random_wmd(rng, y, empty)),
        "wmd-tfidf": (doc_ids, random_wmd(rng, y, empty)),
    }
    return documents, splits, wmd


def test_evaluate_dataset_rows(tiny, caplog):
    documents, splits, wmd = tiny
    with caplog.at_level(logging.INFO, logger="wmdeval.classification.knn"):
        scores = evaluate.evaluate_dataset(documents, splits, wmd, None, "tiny", "original")
    assert scores.schema == schemas.SCORES
    assert scores.num_rows == len(METHODS) * 2 * 2
    rows = scores.to_pylist()
    assert {r["method"] for r in rows} == {m.name for m in METHODS}
    assert {(r["classifier"], r["fold"]) for r in rows} == {
        (c, f) for c in ("knn", "wknn") for f in (0, 1)
    }
    for r in rows:
        assert (r["dataset"], r["variant"]) == ("tiny", "original")
        assert 0 <= r["test_error"] <= 1 and 0 <= r["val_accuracy"] <= 1
        assert r["n_test"] == 10
        assert r["n_test_empty"] == (1 if r["fold"] == 1 else 0)
        if r["fold"] == 1:
            assert r["test_error"] >= 0.1  # the empty test document is an error
        if r["classifier"] == "knn":
            assert r["param"] in range(1, 20)
        else:
            assert r["param"] in GAMMAS
    # class-leaning words: the normalised baselines do much better than chance (2/3 error)
    bow = [r["test_error"] for r in rows if r["method"] == "BOW (L1/L1)"]
    assert np.mean(bow) < 0.5
    assert "without words" in caplog.text
    assert "empty test documents per fold [0, 1] (counted as errors)" in caplog.text
    assert "underflow" in caplog.text  # the unnormalised baselines: distances of several units


def test_evaluate_dataset_without_wmd_and_with_shuffled_matrix(tiny):
    documents, splits, wmd = tiny
    baseline_only = evaluate.evaluate_dataset(documents, splits, {}, None, "tiny", "original")
    assert set(baseline_only.column("method").to_pylist()) == {m.name for m in BASELINES}
    # A matrix stored in another doc_id order gives the same scores.
    ids, matrix = wmd["wmd"]
    order = np.random.default_rng(0).permutation(len(ids))
    shuffled = {"wmd": (ids[order], matrix[np.ix_(order, order)])}
    a = evaluate.evaluate_dataset(documents, splits, {"wmd": wmd["wmd"]}, None, "t", "o")
    b = evaluate.evaluate_dataset(documents, splits, shuffled, None, "t", "o")
    assert a.equals(b)


def test_evaluate_dataset_drop_mode(tiny):
    documents, splits, wmd = tiny
    scores = evaluate.evaluate_dataset(
        documents, splits, wmd, {"empty_documents": "drop"}, "tiny", "original"
    ).to_pylist()
    assert {r["n_test"] for r in scores if r["fold"] == 1} == {9}
    assert {r["n_test_empty"] for r in scores if r["fold"] == 1} == {1}


def test_evaluate_dataset_missing_document_in_matrix(tiny):
    documents, splits, wmd = tiny
    ids, matrix = wmd["wmd"]
    with pytest.raises(io.WmdevalError, match="lack"):
        evaluate.evaluate_dataset(
            documents, splits, {"wmd": (ids[:-1], matrix[:-1, :-1])}, None, "tiny", "original"
        )


def _write_inputs(tiny, tmp_path):
    """The tiny dataset's documents.parquet, splits.parquet and one DISTANCES file per
    method in ``tmp_path``: {slug: its matrix's path}."""
    documents, splits, wmd = tiny
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, tmp_path / "splits.parquet", schemas.SPLITS)
    paths = {}
    for slug, (ids, matrix) in wmd.items():
        paths[slug] = tmp_path / f"{slug}.parquet"
        io.write_distances(matrix, ids, paths[slug])
    return paths


def test_run_evaluate_writes_scores(tiny, tmp_path, monkeypatch, caplog):
    # every progress line due (interval 0): one per method's fold, none changing a score
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="wmdeval.classification.knn")
    documents, splits, wmd = tiny
    paths = _write_inputs(tiny, tmp_path)
    out = tmp_path / "results" / "scores.parquet"
    returned = evaluate.run_evaluate(
        tmp_path / "documents.parquet",
        tmp_path / "splits.parquet",
        paths,
        None,
        "tiny",
        "original",
        out,
    )
    written = io.read_table(out, schemas.SCORES)
    assert written.equals(returned)
    expected = evaluate.evaluate_dataset(documents, splits, wmd, None, "tiny", "original")
    assert written.equals(expected)
    folds = len(set(zip(*written.select(["method", "fold"]).to_pydict().values(), strict=True)))
    lines = [m for m in caplog.messages if m.startswith("evaluate tiny/original: ")]
    done = [int(re.match(rf"evaluate tiny/original: (\d+)/{folds} folds", m)[1]) for m in lines]
    assert done == list(range(1, folds + 1))
    assert all(m.endswith(" left") for m in lines[:-1])
    assert "(100.0%) done in" in lines[-1]


def _write_parts(tiny, tmp_path, runs):
    """run_evaluate of each run of methods (slugs) as a part; (scores, predictions) paths."""
    documents, splits, wmd = tiny
    paths = _write_inputs(tiny, tmp_path)
    written = []
    for k, run in enumerate(runs):
        out = (tmp_path / f"part{k}.scores.parquet", tmp_path / f"part{k}.predictions.parquet")
        given = {slug: path for slug, path in paths.items() if run is None or slug in run}
        evaluate.run_evaluate(
            tmp_path / "documents.parquet",
            tmp_path / "splits.parquet",
            given,
            None,
            "tiny",
            "original",
            out[0],
            predictions_path=out[1],
            methods=run,
        )
        written.append(out)
    return written


def _table_order_slugs():
    return [m.slug for m in METHODS]  # Table 2 order: the tiny variant's 12 + WMD's two


@pytest.mark.parametrize("cuts", [(1,), (3, 8), (2, 4, 13), tuple(range(1, 14))])
def test_parts_of_methods_gathered_are_one_evaluations_bytes(tiny, tmp_path, cuts):
    """evaluate --methods over runs of consecutive methods, gathered: the same scores and
    predictions files, byte for byte, as one evaluation of every method writes."""
    slugs = _table_order_slugs()
    bounds = [0, *cuts, len(slugs)]
    runs = [slugs[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    (whole,) = _write_parts(tiny, tmp_path / "whole", [None])
    parts = _write_parts(tiny, tmp_path / "parts", runs)
    out = tmp_path / "scores.parquet", tmp_path / "predictions.parquet"
    expected = {
        "dataset": ["tiny"],
        "variant": ["original"],
        "method": [m.name for m in METHODS],
        "classifier": ["knn", "wknn"],
    }
    evaluate.run_gather([p[0] for p in parts], [p[1] for p in parts], *out, expected)
    assert out[0].read_bytes() == whole[0].read_bytes()
    assert out[1].read_bytes() == whole[1].read_bytes()


def test_gather_refuses_a_missing_or_repeated_method_and_writes_nothing(tiny, tmp_path):
    slugs = _table_order_slugs()
    parts = _write_parts(tiny, tmp_path, [slugs[:5], slugs[5:9], slugs[8:]])
    out = tmp_path / "scores.parquet", tmp_path / "predictions.parquet"
    expected = {
        "dataset": ["tiny"],
        "variant": ["original"],
        "method": [m.name for m in METHODS],
        "classifier": ["knn", "wknn"],
    }
    # the part of the first five methods lost: what is missing is named
    with pytest.raises(io.WmdevalError, match=re.escape(METHODS[0].name)) as missing:
        evaluate.run_gather([p[0] for p in parts[1:]], [p[1] for p in parts[1:]], *out, expected)
    assert "\n" not in str(missing.value)
    # the 9th method in two parts
    with pytest.raises(io.WmdevalError, match="two parts"):
        evaluate.run_gather([p[0] for p in parts], [p[1] for p in parts], *out, expected)
    assert not out[0].exists() and not out[1].exists()
    # a method without distances named in --methods: one line naming it
    with pytest.raises(io.WmdevalError, match="no distances given for WRD"):
        _write_parts(tiny, tmp_path / "wrd", [["wrd"]])


def test_matrices_given_as_readers_are_read_once_and_held_one_at_a_time(tiny):
    # run_evaluate hands over file readers: a variant's matrices (2.8 GB each on 20
    # Newsgroups) must not all be in memory at once, and none may be read twice.
    documents, splits, wmd = tiny
    reads, copies = [], []

    def reader(slug):
        def read():
            gc.collect()
            alive = [ref for ref in copies if ref() is not None]
            assert not alive, f"{len(alive)} matrix(es) still held when {slug} is read"
            ids, matrix = wmd[slug]
            matrix = matrix.copy()
            reads.append(slug)
            copies.append(weakref.ref(matrix))
            return ids, matrix

        return read

    lazy = {slug: reader(slug) for slug in wmd}
    scores = evaluate.evaluate_dataset(documents, splits, lazy, None, "tiny", "original")
    assert reads == ["wmd", "wmd-tfidf"]  # once each, in table order
    assert scores.equals(
        evaluate.evaluate_dataset(documents, splits, wmd, None, "tiny", "original")
    )
    variant = prepare_variant(documents, splits, lazy)
    assert "wmd" in variant.wmd and len(reads) == 2  # asking which methods exist reads nothing
    assert sorted(variant.wmd) == ["wmd", "wmd-tfidf"] and len(variant.wmd) == 2


def test_a_bad_matrix_file_is_refused_when_its_turn_comes(tiny, tmp_path):
    documents, splits, wmd = tiny
    io.write_table(documents, tmp_path / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, tmp_path / "splits.parquet", schemas.SPLITS)
    ids, matrix = wmd["wmd"]
    io.write_distances(matrix[:-1, :-1], ids[:-1], tmp_path / "wmd.parquet")
    out = tmp_path / "scores.parquet"
    with pytest.raises(io.WmdevalError, match="lack"):
        evaluate.run_evaluate(
            tmp_path / "documents.parquet",
            tmp_path / "splits.parquet",
            {"wmd": tmp_path / "wmd.parquet"},
            None,
            "tiny",
            "original",
            out,
        )
    assert not out.exists()


# --------------------------------------------------------------------------- baseline blocks


def five_folds(rng, n):
    """Five random 70/30 folds, as in the five-fold datasets."""
    folds = []
    for _ in range(5):
        order = rng.permutation(n)
        cut = round(0.7 * n)
        folds.append((np.sort(order[:cut]), np.sort(order[cut:])))
    return folds


@pytest.fixture
def distance_calls(monkeypatch):
    """The (rows, cols) sizes of every baseline distance kernel call, in order."""
    calls = []
    original = baselines.sparse_distances

    def counted(a, b, *args, **kwargs):
        cols = b.vectors if isinstance(b, baselines.Columns) else b
        calls.append((a.shape[0], cols.shape[0]))
        return original(a, b, *args, **kwargs)

    monkeypatch.setattr(baselines, "sparse_distances", counted)
    return calls


#: Rows of a ranked block among the tiny data's 40 documents in :func:`small_blocks`.
SMALL_BLOCK_ROWS = 3


@pytest.fixture
def small_blocks(monkeypatch):
    """Rankings a few rows at a time: a budget of SMALL_BLOCK_ROWS rows of 40 columns."""
    from wmdeval.core import variant

    budget = SMALL_BLOCK_ROWS * 40 * variant.RANKING_BYTES_PER_CELL
    monkeypatch.setattr(variant, "RANKING_BLOCK_BYTES", budget)
    return budget


def direct(counts, method, train, rows, cols):
    """The baseline's distances, IDF from ``train``, straight from the kernels."""
    return baselines.baseline_distances(counts, method, train, rows, cols)


def direct_neighbours(variant, method, train, rows, cols, k):
    """The k nearest by rank_neighbours of the whole dense block, with the NaN rule."""
    from wmdeval.core.variant import rank_neighbours

    dist = direct(variant.counts, method, train, rows, cols)
    dist[variant.no_words[rows]] = np.nan
    dist[:, variant.no_words[cols]] = np.nan
    index = rank_neighbours(dist, k)
    gathered = np.take_along_axis(dist, np.maximum(index, 0), axis=1)
    return index, np.where(index >= 0, gathered, np.nan)


def test_bow_rankings_of_five_folds_are_done_ahead_block_by_block(
    tiny, distance_calls, small_blocks
):
    """Five-fold data: BOW ranks every fold's roles ahead, a block of queries at a time
    against every training document (each pair computed once, never a queries x training
    matrix); each role's neighbours, and their prefixes, are those of the dense block."""
    from wmdeval.core.roles import query_roles

    documents, splits, _ = tiny
    variant = prepare_variant(documents, splits, {})
    folds = five_folds(np.random.default_rng(12), len(variant.doc_ids))
    roles = query_roles(folds, variant.no_words, None)
    queries = np.unique(np.concatenate([role.queries for role in roles]))
    training = np.unique(np.concatenate([role.candidates for role in roles]))
    step = SMALL_BLOCK_ROWS * 40 // len(training)
    for method in BASELINES:
        distance_calls.clear()
        distances_for = evaluate.fold_distances(variant, method, folds)
        ahead = list(distance_calls)
        if method.weighting == "bow":
            assert len(ahead) == math.ceil(len(queries) / step) > 1
            assert all(cols == len(training) for _, cols in ahead)
            assert sum(rows for rows, _ in ahead) == len(queries)
        else:
            assert ahead == []  # TF-IDF: each fold's own IDF
        for role in roles:
            train = folds[role.fold][0]
            distances = distances_for(train)
            shuffled = np.random.default_rng(role.fold).permutation(role.queries)
            for rows, k in ((role.queries, role.k), (shuffled[::2], role.k - 4)):
                distance_calls.clear()
                got = distances.nearest(rows, role.candidates, k)
                if method.weighting == "bow":
                    assert distance_calls == []  # answered from the rankings done ahead
                else:
                    rows_per_block = SMALL_BLOCK_ROWS * 40 // len(role.candidates)
                    assert max(rows for rows, _ in distance_calls) <= rows_per_block
                want = direct_neighbours(variant, method, train, rows, role.candidates, k)
                # the same neighbours and numbers, bit for bit
                assert np.array_equal(got.index, want[0])
                assert np.array_equal(got.distance, want[1], equal_nan=True)


def test_one_fold_is_ranked_a_block_of_queries_at_a_time(tiny, distance_calls, small_blocks):
    documents, splits, _ = tiny
    variant = prepare_variant(documents, splits, {})
    train, test = fold = variant.folds[0]
    for method in BASELINES:
        distance_calls.clear()
        distances = evaluate.fold_distances(variant, method, [fold])(train)
        assert distance_calls == []  # nothing computed ahead: the fold's own blocks are smaller
        got = distances.nearest(test, train, 19)
        step = SMALL_BLOCK_ROWS * 40 // len(train)  # rows within the budget
        assert len(distance_calls) == math.ceil(len(test) / step) > 1
        assert all(rows <= step and cols == len(train) for rows, cols in distance_calls)
        want = direct_neighbours(variant, method, train, test, train, 19)
        assert np.array_equal(got.index, want[0])
        assert np.array_equal(got.distance, want[1], equal_nan=True)


def five_fold_splits(n, folds):
    """A SPLITS table of ``folds`` over documents with doc_id 2 x position."""
    rows = []
    for fold, (_, test) in enumerate(folds):
        in_test = np.zeros(n, dtype=bool)
        in_test[test] = True
        rows += [(fold, 2 * i, "test" if in_test[i] else "train") for i in range(n)]
    fold, doc_id, subset = zip(*rows, strict=True)
    table = {"fold": pa.array(fold, pa.int16()), "doc_id": pa.array(doc_id, pa.int32())}
    return pa.table({**table, "subset": list(subset)}).cast(schemas.SPLITS)


@pytest.mark.parametrize("five", [False, True], ids=["two-folds", "five-folds"])
@pytest.mark.parametrize("mode", ["error", "drop"])
def test_small_ranking_blocks_give_the_same_scores_and_predictions(tiny, monkeypatch, five, mode):
    """Every method's neighbours ranked a few rows at a time (the baselines, WMD's dense
    matrix) give the scores and predictions of one block per ranking, bit for bit."""
    from wmdeval.core import variant

    documents, splits, wmd = tiny
    if five:
        splits = five_fold_splits(len(documents), five_folds(np.random.default_rng(3), 40))
    settings = {"empty_documents": mode}
    tables = {}
    for rows in (10**6, SMALL_BLOCK_ROWS):
        budget = rows * 40 * variant.RANKING_BYTES_PER_CELL
        monkeypatch.setattr(variant, "RANKING_BLOCK_BYTES", budget)
        tables[rows] = evaluate.evaluate_variant(documents, splits, wmd, settings, "toy", "x")
    (scores, predictions), (small_scores, small_predictions) = tables.values()
    assert len(scores) == 2 * 14 * (5 if five else 2)  # 12 baselines, WMD, WMD-TF-IDF
    assert scores.equals(small_scores)
    assert predictions.equals(small_predictions)


def test_evaluate_fold_reads_only_neighbours(tiny):
    """kNN never asks for a block: a neighbour table holding only each query role's k
    nearest (ties included) gives the scores of the full matrix."""
    from wmdeval.core.roles import query_roles
    from wmdeval.core.variant import NeighbourTable

    documents, splits, wmd = tiny
    variant = prepare_variant(documents, splits, wmd)
    y = variant.y
    dense = variant.wmd["wmd"]
    table = NeighbourTable.from_distances(dense, query_roles(variant.folds, dense.empty, None))
    assert table.held.nnz < 0.6 * len(y) ** 2
    for train, test in variant.folds:
        assert evaluate.evaluate_fold(table, y, train, test) == evaluate.evaluate_fold(
            dense, y, train, test
        )


def test_neighbour_table_ranks_a_block_of_rows_at_a_time(tiny, monkeypatch, small_blocks):
    """A neighbour table's rankings a few rows at a time (its dense working arrays are
    rows x candidates) are those of the dense matrix in one block."""
    from wmdeval.core.roles import query_roles
    from wmdeval.core.variant import NeighbourTable, rank_neighbours

    documents, splits, wmd = tiny
    variant = prepare_variant(documents, splits, wmd)
    dense = variant.wmd["wmd"]
    roles = query_roles(variant.folds, dense.empty, None)
    table = NeighbourTable.from_distances(dense, roles)
    blocks = []
    monkeypatch.setattr(NeighbourTable, "_held", counting(NeighbourTable._held, blocks))
    for role in roles:
        got = table.nearest(role.queries, role.candidates, role.k)
        want = rank_neighbours(dense.block(role.queries, role.candidates), role.k)
        assert np.array_equal(got.index, want)
    assert len(blocks) > len(roles)
    assert all(rows <= SMALL_BLOCK_ROWS * 40 // cols for rows, cols in blocks)


def counting(method, sizes):
    """``method`` (rows and cols its first arguments after self) noting their lengths."""

    def counted(self, rows, cols, *args):
        sizes.append((len(rows), len(cols)))
        return method(self, rows, cols, *args)

    return counted


def test_pca_wmd_matrices_are_evaluated_as_extra_methods(tiny):
    documents, splits, wmd = tiny
    matrices = {**wmd, "wmd-pca10": wmd["wmd"], "wmd-pca5": wmd["wmd"]}
    scores = evaluate.evaluate_dataset(documents, splits, matrices, None, "toy", "original")
    names = list(dict.fromkeys(scores.column("method").to_pylist()))
    assert names[-2:] == ["WMD (5-d PCA)", "WMD (10-d PCA)"]
    errors = {}
    for row in scores.to_pylist():
        errors.setdefault(row["method"], []).append(row["test_error"])
    # the same matrix gives the same errors whatever the method is called
    assert errors["WMD (5-d PCA)"] == errors["WMD"] == errors["WMD (10-d PCA)"]
