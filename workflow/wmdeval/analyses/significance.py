"""Is one method's test error really lower than another's? Paired tests on predictions.

Per dataset, a test that fits how its splits were drawn (docs/protocol.md §10.2):

- one train/test split: the exact McNemar test of the two methods' test predictions, with
  a paired bootstrap interval of the difference in error;
- several random train/test splits of the same documents (the five-fold datasets): the
  corrected resampled t-test of Nadeau and Bengio (2003) on the per-split error differences,
  with its t interval. Pooling such predictions into one McNemar test treats them as
  independent and ignores the training sets' variation, and rejects a true null far more
  often than its level (benchmarks/significance_calibration.py measures both).

Holm's correction runs across the methods compared with one reference.

Across datasets (at least MIN_DATASETS of them): pairwise Wilcoxon signed-rank tests of
each method against each reference on the per-dataset errors, Holm-corrected, and the
Bayesian signed-rank test with a region of practical equivalence (Benavoli et al. 2016,
2017); beside them the Friedman test with the Nemenyi critical difference and Demšar's
(2006) diagram.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import io, schemas
from ..core.methods import REFERENCE
from ..core.stats import (
    average_ranks,
    bayesian_signed_rank,
    corrected_resampled_t,
    corrected_t_interval,
    wilcoxon_signed_rank,
)
from ..reporting.tables import CLASSIFIER_ORDER, VARIANT_ORDER, markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# The tables written here are documented with the others in schemas.py.
SIGNIFICANCE = schemas.SIGNIFICANCE
SIGNIFICANCE_DATASETS = schemas.SIGNIFICANCE_DATASETS

#: The per-dataset tests, as the `test` column names them.
MCNEMAR = "exact McNemar"
CORRECTED_T = "corrected resampled t"

#: Fewer datasets than this: no across-dataset test is computed (the Wilcoxon test cannot
#: reach p < 0.05 two-sided below 6, and the Bayesian test's posterior is mostly prior).
MIN_DATASETS = 5
#: Posterior draws of each Bayesian signed-rank test (Monte Carlo error of a probability
#: <= 0.5 / sqrt(50,000) = 0.0022).
BAYES_SAMPLES = 50_000

#: Shown in the CD figure instead of a diagram when there is a single dataset.
TOO_FEW_DATASETS = "Friedman test needs at least 2 datasets"
TOO_FEW_METHODS = "Friedman test needs at least 2 methods present on every dataset"


# --------------------------------------------------------------------------- tests
#
# scipy.stats is imported inside the functions that use it: the import alone costs an
# analysis job about half a second (see core/stats.py), and the table job only needs it
# once it computes something.


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value from the discordant counts of two classifiers.

    ``b``: documents A gets right and B wrong; ``c``: A wrong and B right. Under the
    null hypothesis each discordant document is equally likely to go either way, so
    min(b, c) is binomial(b + c, 1/2) and p = min(1, 2 P(X <= min(b, c))).
    1.0 when there is no discordant document (b + c == 0).
    """
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    from scipy.stats import binom

    return float(min(1.0, 2.0 * binom.cdf(min(b, c), n, 0.5)))


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the input order.

    The i-th smallest of m p-values (i = 1..m) is multiplied by m - i + 1, capped at 1,
    and made non-decreasing along the sorted order (an adjusted p-value is never below
    that of a smaller raw p-value). NaN entries stay NaN and do not count in m.
    """
    p = np.asarray(p_values, dtype=np.float64)
    adjusted = np.full(p.shape, np.nan)
    defined = np.flatnonzero(~np.isnan(p))
    m = len(defined)
    if m == 0:
        return adjusted
    order = defined[np.argsort(p[defined], kind="stable")]
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def _holm_adjusted(rows: list[dict], p_column: str, alpha: float) -> None:
    """Add ``p_holm`` (Holm across ``rows``, one family) and ``significant`` (p_holm <
    ``alpha``) to every row, from its ``p_column``."""
    adjusted = holm([r[p_column] for r in rows])
    for row, p in zip(rows, adjusted.tolist(), strict=True):
        row["p_holm"] = p
        row["significant"] = bool(p < alpha)


def paired_bootstrap(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    n_resamples: int,
    seed: int | np.random.SeedSequence,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap interval (two-sided, ``level``) of error(a) - error(b).

    ``correct_a`` and ``correct_b`` are aligned per document (the same document at the
    same position). Documents are resampled with replacement, the same documents for
    both methods (a paired bootstrap). Each document contributes wrong(a) - wrong(b) in
    {-1, 0, 1}, so a resample's difference depends only on how many of its documents fall
    in each of the three cases: drawing those counts from the multinomial distribution
    of a resample of n documents is exactly the index resampling, in O(B) instead of
    O(B n) time and memory (20news: 10,000 x 18,846 indices would be 1.5 GB).

    Deterministic for a given seed (numpy ``default_rng``); (NaN, NaN) for no document.
    """
    correct_a = np.asarray(correct_a, dtype=bool)
    correct_b = np.asarray(correct_b, dtype=bool)
    if correct_a.shape != correct_b.shape or correct_a.ndim != 1:
        raise ValueError(f"need two aligned vectors, got {correct_a.shape}, {correct_b.shape}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    n = len(correct_a)
    if n == 0:
        return math.nan, math.nan
    only_a_wrong = int(np.count_nonzero(~correct_a & correct_b))  # contributes +1
    only_b_wrong = int(np.count_nonzero(correct_a & ~correct_b))  # contributes -1
    shares = np.array([only_a_wrong, only_b_wrong, n - only_a_wrong - only_b_wrong]) / n
    counts = np.random.default_rng(seed).multinomial(n, shares, size=n_resamples)
    differences = (counts[:, 0] - counts[:, 1]) / n
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(differences, [tail, 1.0 - tail])
    return float(low), float(high)


def friedman(errors: np.ndarray) -> tuple[float, float, np.ndarray]:
    """Friedman test of ``errors`` [datasets x methods]: (chi-square statistic, p-value,
    average rank of each method).

    Ranks are taken within each dataset, rank 1 for the lowest error, tied errors
    sharing their average rank. The statistic carries the tie correction
    1 - Σ(t³ - t) / (N k (k² - 1)) as scipy.stats.friedmanchisquare computes it, and
    the p-value is that of chi-square with k - 1 degrees of freedom. Needs at least 2
    datasets and 2 methods (ValueError otherwise); when every dataset ties all methods
    the statistic is undefined: (NaN, NaN, ranks).
    """
    errors = np.asarray(errors, dtype=np.float64)
    if errors.ndim != 2:
        raise ValueError(f"need a [datasets x methods] matrix, got shape {errors.shape}")
    n_datasets, n_methods = errors.shape
    if n_datasets < 2 or n_methods < 2:
        raise ValueError(f"need >= 2 datasets and >= 2 methods, got {errors.shape}")
    if np.isnan(errors).any():
        raise ValueError("errors must not contain NaN")
    ranks = np.vstack([average_ranks(row) for row in errors])
    ties = 0.0
    for row in errors:
        _, sizes = np.unique(row, return_counts=True)
        ties += float(np.sum(sizes.astype(np.float64) ** 3 - sizes))
    correction = 1.0 - ties / (n_methods * (n_methods**2 - 1) * n_datasets)
    mean_ranks = ranks.mean(axis=0)
    if correction <= 0:
        return math.nan, math.nan, mean_ranks
    rank_sums = ranks.sum(axis=0)
    statistic = (
        12.0 / (n_methods * n_datasets * (n_methods + 1)) * float(rank_sums @ rank_sums)
        - 3.0 * n_datasets * (n_methods + 1)
    ) / correction
    from scipy.stats import chi2

    return float(statistic), float(chi2.sf(statistic, n_methods - 1)), mean_ranks


def nemenyi_q(n_methods: int, alpha: float) -> float:
    """Critical value q_alpha of the Nemenyi test: the studentized range quantile with
    infinite degrees of freedom, divided by sqrt(2) (Demšar 2006, Table 5)."""
    if n_methods < 2:
        raise ValueError(f"need >= 2 methods, got {n_methods}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    from scipy.stats import studentized_range

    return float(studentized_range.ppf(1.0 - alpha, n_methods, np.inf) / math.sqrt(2.0))


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float) -> float:
    """CD = q_alpha sqrt(k (k + 1) / (6 N)): two methods whose average ranks over N
    datasets differ by at least CD perform significantly differently (Demšar 2006)."""
    if n_datasets < 1:
        raise ValueError(f"need >= 1 dataset, got {n_datasets}")
    k = n_methods
    return nemenyi_q(k, alpha) * math.sqrt(k * (k + 1) / (6.0 * n_datasets))


# --------------------------------------------------------------------------- predictions


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, list[str]]:
    """Integer code of every value and the distinct values, in order of first appearance."""
    encoded = column.combine_chunks().dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary.to_pylist()


def _ordered(values: Sequence[str], order: Sequence[str]) -> list[str]:
    """``values`` in the order of ``order``; unknown values after, alphabetically."""
    return sorted(values, key=lambda v: (order.index(v), "") if v in order else (len(order), v))


@dataclass(frozen=True)
class _Predictions:
    """The PREDICTIONS columns as numpy arrays, rows grouped by (dataset, variant,
    classifier, method) and sorted by (fold, doc_id) inside each group."""

    datasets: list[str]  # order of first appearance
    variants: list[str]  # VARIANT_ORDER, then alphabetical
    classifiers: list[str]  # CLASSIFIER_ORDER, then alphabetical
    methods: list[str]  # order of first appearance
    keys: dict[tuple[str, str, str, str], np.ndarray]  # -> (fold << 32 | doc_id), sorted
    correct: dict[tuple[str, str, str, str], np.ndarray]  # -> aligned with keys


def _group_predictions(predictions: pa.Table) -> _Predictions:
    missing = [n for n in schemas.PREDICTIONS.names if n not in predictions.column_names]
    if missing:
        raise io.WmdevalError(f"predictions: missing column(s) {', '.join(missing)}")
    dataset, datasets = _codes(predictions.column("dataset"))
    variant, variants = _codes(predictions.column("variant"))
    classifier, classifiers = _codes(predictions.column("classifier"))
    method, methods = _codes(predictions.column("method"))
    fold = predictions.column("fold").to_numpy().astype(np.int64)
    doc_id = predictions.column("doc_id").to_numpy().astype(np.int64)
    # A null prediction (no neighbour to vote) compares as null: an error.
    same = pc.equal(predictions.column("predicted_label"), predictions.column("true_label"))
    correct = pc.fill_null(same, False).to_numpy(zero_copy_only=False).astype(bool)
    # (fold, doc_id) as one sortable integer: doc_id is an int32, so it fits the low half.
    key = (fold << 32) | (doc_id & 0xFFFFFFFF)

    order = np.lexsort((key, method, classifier, variant, dataset))
    group = np.column_stack([dataset, variant, classifier, method])[order]
    starts = np.flatnonzero(np.r_[True, (group[1:] != group[:-1]).any(axis=1)])
    starts = starts[starts < len(order)]  # no group at all in an empty table
    ends = np.r_[starts[1:], len(order)][: len(starts)]
    keys, correct_by_group = {}, {}
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        d, v, c, m = group[start].tolist()
        name = (datasets[d], variants[v], classifiers[c], methods[m])
        rows = order[start:end]
        group_keys = key[rows]
        if (np.diff(group_keys) == 0).any():
            repeated = int(group_keys[np.flatnonzero(np.diff(group_keys) == 0)[0]])
            raise io.WmdevalError(
                f"predictions: {'/'.join(name)} has two rows for fold {repeated >> 32}, "
                f"doc_id {repeated & 0xFFFFFFFF}"
            )
        keys[name] = group_keys
        correct_by_group[name] = correct[rows]
    return _Predictions(
        datasets,
        _ordered(variants, VARIANT_ORDER),
        _ordered(classifiers, CLASSIFIER_ORDER),
        methods,
        keys,
        correct_by_group,
    )


def _paired_correct(
    grouped: _Predictions, group: tuple[str, str, str], method: str, reference: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(correct of ``method``, correct of ``reference``, fold) on the same (fold, doc_id)s."""
    method_keys = grouped.keys[(*group, method)]
    reference_keys = grouped.keys[(*group, reference)]
    if not np.array_equal(method_keys, reference_keys):
        only_method = len(np.setdiff1d(method_keys, reference_keys))
        only_reference = len(np.setdiff1d(reference_keys, method_keys))
        raise io.WmdevalError(
            f"predictions: {'/'.join(group)}: {method} and {reference} were not tested on "
            f"the same (fold, doc_id) set ({only_method} only in {method}, "
            f"{only_reference} only in {reference}); an unpaired comparison is refused"
        )
    return (
        grouped.correct[(*group, method)],
        grouped.correct[(*group, reference)],
        method_keys >> 32,
    )


# --------------------------------------------------------------------------- split designs


@dataclass(frozen=True)
class SplitDesign:
    """The train/test splits of one dataset variant, as the per-dataset test needs them:
    the folds, and the mean over folds of test size / training size (n2/n1 of the
    corrected resampled t-test)."""

    folds: tuple[int, ...]
    test_train_ratio: float


def split_design(splits: pa.Table, source: str = "splits") -> SplitDesign:
    """The :class:`SplitDesign` of a SPLITS table; every fold needs training and test
    documents (WmdevalError naming ``source`` otherwise)."""
    fold = splits.column("fold").to_numpy().astype(np.int64)
    is_test = np.asarray(splits.column("subset").to_pylist()) == "test"
    folds = np.unique(fold)
    if len(folds) == 0:
        raise io.WmdevalError(f"{source}: no split")
    ratios = []
    for f in folds.tolist():
        n_test = int(np.count_nonzero(is_test & (fold == f)))
        n_train = int(np.count_nonzero(~is_test & (fold == f)))
        if n_test == 0 or n_train == 0:
            raise io.WmdevalError(
                f"{source}: fold {f} has {n_train} training and {n_test} test documents; "
                "expected at least one of each"
            )
        ratios.append(n_test / n_train)
    return SplitDesign(tuple(folds.tolist()), float(np.mean(ratios)))


# --------------------------------------------------------------------------- one comparison


@dataclass(frozen=True)
class Comparison:
    """One method against one reference on one dataset, variant and classifier."""

    test: str  # MCNEMAR or CORRECTED_T
    folds: int
    n: int
    error: float  # mean over folds of the per-fold test error
    reference_error: float
    b: int  # method right, reference wrong
    c: int  # method wrong, reference right
    p_value: float
    ci_low: float
    ci_high: float

    @property
    def difference(self) -> float:
        return self.error - self.reference_error


def compare(
    correct: np.ndarray,
    reference_correct: np.ndarray,
    fold: np.ndarray,
    test_train_ratio: float | None,
    level: float,
    n_resamples: int,
    seed: int | np.random.SeedSequence,
) -> Comparison:
    """The paired test of a method against a reference that fits the split design.

    ``correct``, ``reference_correct`` and ``fold`` are aligned per prediction. One fold:
    the exact McNemar test and the paired bootstrap interval (``n_resamples``, ``seed``):
    the test documents are independent draws and the training set is fixed, which both
    assume. Several folds (random splits of the same documents, ``test_train_ratio`` =
    n2/n1): the corrected resampled t-test on the per-fold error differences, and its t
    interval; the bootstrap would resample predictions as if independent, so it is not
    used. The interval's level is ``level`` in both cases.
    """
    correct = np.asarray(correct, dtype=bool)
    reference_correct = np.asarray(reference_correct, dtype=bool)
    fold = np.asarray(fold)
    folds, fold_index = np.unique(fold, return_inverse=True)
    b = int(np.count_nonzero(correct & ~reference_correct))
    c = int(np.count_nonzero(~correct & reference_correct))
    n = len(correct)
    if n == 0:
        nan = math.nan
        return Comparison(MCNEMAR, 0, 0, nan, nan, 0, 0, mcnemar_exact(0, 0), nan, nan)
    per_fold = np.bincount(fold_index)
    error_by_fold = np.bincount(fold_index, weights=~correct) / per_fold
    reference_by_fold = np.bincount(fold_index, weights=~reference_correct) / per_fold
    error, reference_error = float(error_by_fold.mean()), float(reference_by_fold.mean())
    if len(folds) == 1:
        low, high = paired_bootstrap(correct, reference_correct, n_resamples, seed, level)
        return Comparison(
            MCNEMAR, 1, n, error, reference_error, b, c, mcnemar_exact(b, c), low, high
        )
    if test_train_ratio is None:
        raise ValueError("several folds need the test/train size ratio of their splits")
    result = corrected_resampled_t(error_by_fold - reference_by_fold, test_train_ratio)
    low, high = corrected_t_interval(result, level)
    return Comparison(
        CORRECTED_T, len(folds), n, error, reference_error, b, c, result.p_value, low, high
    )


def comparison_seed(seed: int, *names: str) -> np.random.SeedSequence:
    """The random stream of one comparison: ``seed`` and a CRC-32 of its names.

    CRC-32, unlike Python's hash(), is the same in every process, so a comparison's
    interval depends only on the seed and the names, not on row order or on what else
    the table holds.
    """
    digest = zlib.crc32("\x1f".join(names).encode("utf-8"))
    return np.random.SeedSequence([int(seed), digest])


def significance_table(
    predictions: pa.Table,
    reference_methods: Sequence[str],
    alpha: float,
    n_resamples: int,
    seed: int,
    level: float | None = None,
    designs: Mapping[tuple[str, str], SplitDesign] | None = None,
) -> pa.Table:
    """The SIGNIFICANCE table: every method against every reference, per dataset,
    variant and classifier.

    For each (dataset, variant, classifier) and each reference of ``reference_methods``
    that has predictions there, every other method is paired with the reference on
    (fold, doc_id) over all folds (WmdevalError if the two sets differ) and tested by
    :func:`compare` (interval level ``level``, default 1 - ``alpha``; bootstrap seeded by
    :func:`comparison_seed`), with Holm's adjustment over the methods of that reference
    (significant: p_holm < ``alpha``). ``designs``: the :class:`SplitDesign` of each
    (dataset, variant); required for every one whose predictions span several folds, and
    its folds must be those of the predictions. A reference absent from the whole table is
    an error.

    Rows: datasets in order of first appearance, variants and classifiers in report
    order, references in the given order, methods in order of first appearance.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    level = 1.0 - alpha if level is None else level
    designs = designs or {}
    grouped = _group_predictions(predictions)
    references = list(dict.fromkeys(reference_methods))
    for reference in references:
        if reference not in grouped.methods:
            raise io.WmdevalError(f"predictions: no rows for the reference method {reference!r}")

    rows: list[dict] = []
    for dataset in grouped.datasets:
        for variant in grouped.variants:
            for classifier in grouped.classifiers:
                group = (dataset, variant, classifier)
                present = [m for m in grouped.methods if (*group, m) in grouped.keys]
                if not present:
                    continue
                ratio = _test_train_ratio(grouped, group, present, designs.get(group[:2]))
                for reference in references:
                    if reference in present:
                        others = [m for m in present if m != reference]
                        rows += _reference_rows(
                            grouped,
                            group,
                            reference,
                            others,
                            alpha,
                            level,
                            n_resamples,
                            seed,
                            ratio,
                        )
    return pa.table({n: [r[n] for r in rows] for n in SIGNIFICANCE.names}).cast(SIGNIFICANCE)


def _test_train_ratio(
    grouped: _Predictions,
    group: tuple[str, str, str],
    methods: Sequence[str],
    design: SplitDesign | None,
) -> float | None:
    """n2/n1 of the group's splits; None for a one-fold group without a design. The folds
    of the predictions must be those of the splits: a missing fold would go unnoticed."""
    folds = sorted(set(np.unique(grouped.keys[(*group, methods[0])] >> 32).tolist()))
    name = "/".join(group[:2])
    if design is None:
        if len(folds) > 1:
            raise io.WmdevalError(
                f"predictions: {name} spans {len(folds)} folds but no splits were given for "
                "it; the corrected resampled t-test needs their test/train sizes"
            )
        return None
    if folds != sorted(design.folds):
        raise io.WmdevalError(
            f"predictions: {'/'.join(group)} has folds {folds}, its splits {list(design.folds)}"
        )
    return design.test_train_ratio


def _reference_rows(
    grouped: _Predictions,
    group: tuple[str, str, str],
    reference: str,
    methods: Sequence[str],
    alpha: float,
    level: float,
    n_resamples: int,
    seed: int,
    test_train_ratio: float | None,
) -> list[dict]:
    rows = []
    for method in methods:
        correct, reference_correct, fold = _paired_correct(grouped, group, method, reference)
        result = compare(
            correct,
            reference_correct,
            fold,
            test_train_ratio,
            level,
            n_resamples,
            comparison_seed(seed, *group, reference, method),
        )
        dataset, variant, classifier = group
        rows.append(
            {
                "dataset": dataset,
                "variant": variant,
                "classifier": classifier,
                "method": method,
                "reference": reference,
                "test": result.test,
                "folds": result.folds,
                "n": result.n,
                "error": result.error,
                "reference_error": result.reference_error,
                "difference": result.difference,
                "b": result.b,
                "c": result.c,
                "p_value": result.p_value,
                "ci_low": result.ci_low,
                "ci_high": result.ci_high,
            }
        )
    _holm_adjusted(rows, "p_value", alpha)
    return rows


# --------------------------------------------------------------------------- across datasets


@dataclass(frozen=True)
class CriticalDifference:
    """The Friedman test and Nemenyi critical difference of one variant and classifier.

    ``errors`` [datasets x methods] is the mean test error over folds. Only methods
    with predictions on every dataset take part (the test needs complete blocks);
    ``left_out`` names the others. With fewer than 2 datasets or methods the statistic,
    p-value and cd are NaN and ``note`` says why.
    """

    variant: str
    classifier: str
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    errors: np.ndarray
    statistic: float
    p_value: float
    average_ranks: dict[str, float]
    cd: float
    alpha: float
    left_out: tuple[str, ...] = ()
    note: str = ""


def error_matrix(
    predictions: pa.Table, variant: str, classifier: str
) -> tuple[list[str], list[str], np.ndarray, list[str]]:
    """(datasets, methods, errors [datasets x methods], left-out methods) of one variant
    and classifier: each error is the mean over folds of the per-fold test error (as in
    Table 2 and the SIGNIFICANCE table). Methods missing from some dataset are left out
    (in order of first appearance).
    """
    grouped = _group_predictions(predictions)
    datasets = [
        d for d in grouped.datasets if any(k[:3] == (d, variant, classifier) for k in grouped.keys)
    ]
    present = [
        m
        for m in grouped.methods
        if any((d, variant, classifier, m) in grouped.keys for d in datasets)
    ]
    methods = [
        m for m in present if all((d, variant, classifier, m) in grouped.keys for d in datasets)
    ]
    left_out = [m for m in present if m not in methods]
    errors = np.array(
        [
            [_mean_fold_error(grouped, (d, variant, classifier, m)) for m in methods]
            for d in datasets
        ],
        dtype=np.float64,
    ).reshape(len(datasets), len(methods))
    return datasets, methods, errors, left_out


def _mean_fold_error(grouped: _Predictions, key: tuple[str, str, str, str]) -> float:
    """Mean over folds of the per-fold test error: a dataset's error as Table 2 gives it."""
    _, fold_index = np.unique(grouped.keys[key] >> 32, return_inverse=True)
    wrong = np.bincount(fold_index, weights=~grouped.correct[key])
    return float(np.mean(wrong / np.bincount(fold_index)))


def critical_difference(
    predictions: pa.Table, variant: str, classifier: str, alpha: float
) -> CriticalDifference:
    """Friedman test over datasets of the methods' test errors, average ranks
    (1 = lowest error) and the Nemenyi critical difference at ``alpha``."""
    datasets, methods, errors, left_out = error_matrix(predictions, variant, classifier)
    if not datasets:
        raise io.WmdevalError(
            f"predictions: no rows for variant {variant!r} with classifier {classifier!r}"
        )
    if len(methods) >= 1:
        ranks = np.vstack([average_ranks(row) for row in errors]).mean(axis=0)
    else:
        ranks = np.zeros(0)
    statistic = p_value = cd = math.nan
    note = ""
    if len(datasets) < 2:
        note = TOO_FEW_DATASETS
    elif len(methods) < 2:
        note = TOO_FEW_METHODS
    else:
        statistic, p_value, ranks = friedman(errors)
        cd = nemenyi_critical_difference(len(methods), len(datasets), alpha)
    return CriticalDifference(
        variant=variant,
        classifier=classifier,
        datasets=tuple(datasets),
        methods=tuple(methods),
        errors=errors,
        statistic=statistic,
        p_value=p_value,
        average_ranks={m: float(r) for m, r in zip(methods, ranks.tolist(), strict=True)},
        cd=cd,
        alpha=alpha,
        left_out=tuple(left_out),
        note=note,
    )


def critical_differences(predictions: pa.Table, alpha: float) -> list[CriticalDifference]:
    """:func:`critical_difference` of every variant x classifier with predictions."""
    grouped = _group_predictions(predictions)
    present = {k[1:3] for k in grouped.keys}
    return [
        critical_difference(predictions, v, c, alpha)
        for v in grouped.variants
        for c in grouped.classifiers
        if (v, c) in present
    ]


def across_datasets_table(
    predictions: pa.Table,
    reference_methods: Sequence[str],
    alpha: float,
    rope: float,
    seed: int,
) -> pa.Table:
    """The SIGNIFICANCE_DATASETS table: each method against each reference across the
    datasets, for every variant and classifier with at least MIN_DATASETS datasets.

    On the methods present on every dataset (:func:`error_matrix`), the differences
    error(method) - error(reference), one per dataset, get Wilcoxon's signed-rank test,
    Holm-adjusted over the methods compared with that reference (significant:
    p_holm < ``alpha``), and the Bayesian signed-rank test with the region of practical
    equivalence [-``rope``, ``rope``] (``BAYES_SAMPLES`` draws seeded by
    :func:`comparison_seed`). A pair's result depends on those two methods alone, unlike
    the Nemenyi test's, which depends on every method ranked. A reference missing on some
    dataset compares with nothing.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    grouped = _group_predictions(predictions)
    present = {k[1:3] for k in grouped.keys}
    rows: list[dict] = []
    for variant in grouped.variants:
        for classifier in grouped.classifiers:
            if (variant, classifier) not in present:
                continue
            datasets, methods, errors, _ = error_matrix(predictions, variant, classifier)
            if len(datasets) < MIN_DATASETS:
                continue
            for reference in dict.fromkeys(reference_methods):
                if reference not in methods:
                    continue
                column = errors[:, methods.index(reference)]
                block = []
                for index, method in enumerate(methods):
                    if method == reference:
                        continue
                    differences = errors[:, index] - column
                    statistic, p_value = wilcoxon_signed_rank(differences)
                    posterior = bayesian_signed_rank(
                        differences,
                        rope,
                        BAYES_SAMPLES,
                        comparison_seed(
                            seed, "across datasets", variant, classifier, reference, method
                        ),
                    )
                    block.append(
                        {
                            "variant": variant,
                            "classifier": classifier,
                            "method": method,
                            "reference": reference,
                            "datasets": len(datasets),
                            "mean_difference": float(np.mean(differences)),
                            "wilcoxon": statistic,
                            "p_wilcoxon": p_value,
                            "rope": rope,
                            "p_method_better": posterior.left,
                            "p_equivalent": posterior.rope,
                            "p_reference_better": posterior.right,
                        }
                    )
                _holm_adjusted(block, "p_wilcoxon", alpha)
                rows += block
    names = SIGNIFICANCE_DATASETS.names
    return pa.table({n: [r[n] for r in rows] for n in names}).cast(SIGNIFICANCE_DATASETS)


def rank_groups(average_ranks: Mapping[str, float], cd: float) -> list[tuple[int, int]]:
    """Maximal runs of the methods sorted by rank whose ranks differ by less than ``cd``:
    (first, last) positions in that sorted order, runs of at least two methods only.
    These are the groups the diagram joins with a bar (no significant difference)."""
    ranks = np.sort(np.asarray(list(average_ranks.values()), dtype=np.float64))
    groups: list[tuple[int, int]] = []
    if not np.isfinite(cd):
        return groups
    for first in range(len(ranks)):
        last = int(np.searchsorted(ranks, ranks[first] + cd, side="left")) - 1
        # A run inside the previous one is not maximal.
        if last > first and (not groups or last > groups[-1][1]):
            groups.append((first, last))
    return groups


# --------------------------------------------------------------------------- figure

# Layout of the diagram in inches (the axes' data units on y are inches from its top).
_LABEL_WIDTH = 2.4  # room for a method name and its rank on either side
_CD_Y, _AXIS_Y = 0.35, 0.8
_GROUP_STEP, _LINE_STEP = 0.12, 0.24
_TITLE_HEIGHT = 0.65


def _format_number(value: float, digits: int = 3) -> str:
    return "n/a" if not np.isfinite(value) else f"{value:.{digits}f}"


def _format_p(p: float) -> str:
    if not np.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def draw_message(title: str, message: str) -> Figure:
    """A figure with ``title`` and ``message`` alone, where no diagram can be drawn."""
    import matplotlib
    from matplotlib.figure import Figure

    from ..reporting.figures import _RC

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(8.0, 1.6))
        fig.suptitle(title, y=0.94)
        fig.text(0.5, 0.4, message, ha="center", va="center", fontsize=11)
    return fig


def draw_critical_difference(
    average_ranks: Mapping[str, float],
    cd: float,
    title: str,
    statistic: float,
    p_value: float,
) -> Figure:
    """The critical difference diagram (Demšar 2006, Fig. 1).

    A rank axis 1..k (best on the left); each method a line from its average rank down
    to its label (the better half labelled on the left, the rest on the right); a bar of
    length ``cd`` above the axis; thick bars under it joining the maximal groups of
    methods whose average ranks differ by less than ``cd`` (:func:`rank_groups`). A
    NaN ``cd`` draws no group bars. Fewer than two methods: a message figure instead.
    """
    import matplotlib
    from matplotlib.figure import Figure

    from ..reporting.figures import _RC

    names = sorted(average_ranks, key=lambda m: (average_ranks[m], m))
    ranks = [float(average_ranks[m]) for m in names]
    k = len(names)
    subtitle = (
        f"Friedman χ² = {_format_number(statistic, 2)}, p = {_format_p(p_value)}; "
        f"Nemenyi CD = {_format_number(cd, 2)} (lower rank is better)"
    )
    if k < 2:
        return draw_message(f"{title}\n{subtitle}", TOO_FEW_METHODS)

    groups = rank_groups(dict(zip(names, ranks, strict=True)), cd)
    n_left = math.ceil(k / 2)
    first_line = _AXIS_Y + _GROUP_STEP * (len(groups) + 1) + 0.2
    bottom = first_line + _LINE_STEP * (max(n_left, k - n_left) - 1) + 0.25
    axis_width = max(3.5, 0.32 * (k - 1))
    per_inch = (k - 1) / axis_width  # rank units per inch
    width = axis_width + 2 * _LABEL_WIDTH
    height = bottom + _TITLE_HEIGHT

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, height))
        fig.suptitle(f"{title}\n{subtitle}", y=1 - 0.08 / height, va="top")
        ax = fig.add_axes((0.0, 0.0, 1.0, bottom / height))
        ax.set_axis_off()
        ax.set_xlim(1 - _LABEL_WIDTH * per_inch, k + _LABEL_WIDTH * per_inch)
        ax.set_ylim(bottom, 0)  # y grows downwards, in inches from the top of the axes
        line = {"color": "black", "linewidth": 0.9, "solid_capstyle": "butt"}

        # The rank axis with a tick and a number at every integer rank.
        ax.plot([1, k], [_AXIS_Y, _AXIS_Y], **line)
        tick_step = 1 if k <= 15 else 2
        for rank in range(1, k + 1):
            major = (rank - 1) % tick_step == 0
            ax.plot([rank, rank], [_AXIS_Y - (0.08 if major else 0.04), _AXIS_Y], **line)
            if major:
                ax.text(rank, _AXIS_Y - 0.11, str(rank), ha="center", va="bottom", fontsize=8)

        # The CD bar, from rank 1; a CD longer than the axis is cut at rank k (and says so).
        if np.isfinite(cd):
            end = min(1 + cd, k)
            ax.plot([1, end], [_CD_Y, _CD_Y], color="black", linewidth=1.4)
            for x in (1, end):
                ax.plot([x, x], [_CD_Y - 0.05, _CD_Y + 0.05], **line)
            longer = " (longer than the axis)" if 1 + cd > k else ""
            ax.text((1 + end) / 2, _CD_Y - 0.07, f"CD = {cd:.2f}{longer}", ha="center", va="bottom")

        # Methods: the leftmost of each side gets the shallowest line, so lines never cross.
        for index, (name, rank) in enumerate(zip(names, ranks, strict=True)):
            on_left = index < n_left
            depth = index if on_left else k - 1 - index
            y = first_line + _LINE_STEP * depth
            edge = 1 - 0.15 * per_inch if on_left else k + 0.15 * per_inch
            ax.plot([rank, rank, edge], [_AXIS_Y, y, y], **line)
            ax.text(
                edge + (-0.05 if on_left else 0.05) * per_inch,
                y,
                f"{name} ({rank:.2f})" if on_left else f"({rank:.2f}) {name}",
                ha="right" if on_left else "left",
                va="center",
                fontsize=8,
            )

        # Groups without a significant difference: thick bars under the axis.
        pad = 0.06 * per_inch
        for number, (first, last) in enumerate(groups):
            y = _AXIS_Y + _GROUP_STEP * (number + 1)
            ax.plot(
                [ranks[first] - pad, ranks[last] + pad],
                [y, y],
                color="black",
                linewidth=3.0,
                solid_capstyle="round",
            )
    return fig


# --------------------------------------------------------------------------- report


def significance_rows(table: pa.Table) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of the SIGNIFICANCE table as the Markdown shows them: errors and
    differences in percent, p-values rounded, "*" for a significant row."""
    header = [
        "dataset",
        "variant",
        "classifier",
        "reference",
        "method",
        "test",
        "folds",
        "n",
        "error (%)",
        "reference error (%)",
        "difference (pp) [CI]",
        "b",
        "c",
        "p",
        "p (Holm)",
        "",
    ]
    rows = [
        [
            r["dataset"],
            r["variant"],
            r["classifier"],
            r["reference"],
            r["method"],
            r["test"],
            str(r["folds"]),
            str(r["n"]),
            f"{100 * r['error']:.2f}",
            f"{100 * r['reference_error']:.2f}",
            f"{100 * r['difference']:+.2f} [{100 * r['ci_low']:+.2f}, {100 * r['ci_high']:+.2f}]",
            str(r["b"]),
            str(r["c"]),
            _format_p(r["p_value"]),
            _format_p(r["p_holm"]),
            "*" if r["significant"] else "",
        ]
        for r in table.to_pylist()
    ]
    return header, rows


def across_datasets_rows(table: pa.Table) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of a SIGNIFICANCE_DATASETS table as the Markdown shows them."""
    header = [
        "reference",
        "method",
        "N",
        "mean difference (pp)",
        "Wilcoxon",
        "p",
        "p (Holm)",
        "",
        "P(method better)",
        "P(equivalent)",
        "P(reference better)",
    ]
    rows = [
        [
            r["reference"],
            r["method"],
            str(r["datasets"]),
            f"{100 * r['mean_difference']:+.2f}",
            f"{r['wilcoxon']:g}",
            _format_p(r["p_wilcoxon"]),
            _format_p(r["p_holm"]),
            "*" if r["significant"] else "",
            f"{r['p_method_better']:.3f}",
            f"{r['p_equivalent']:.3f}",
            f"{r['p_reference_better']:.3f}",
        ]
        for r in table.to_pylist()
    ]
    return header, rows


def too_few_datasets(n_datasets: int) -> str:
    return (
        f"No across-dataset test: {n_datasets} dataset{'s' if n_datasets != 1 else ''}. With "
        f"fewer than {MIN_DATASETS}, none is meaningful (two-sided, Wilcoxon's test cannot "
        "reach p < 0.05 below 6 datasets, and Friedman's and Nemenyi's rank tests rest on "
        "as few blocks)."
    )


def across_datasets_markdown(
    across: pa.Table, results: Sequence[CriticalDifference], alpha: float, rope: float
) -> str:
    """The across-dataset section: per variant and classifier, the Friedman test and the
    pairwise tests against each reference, or why there are none."""
    caption = (
        "Per variant and classifier, on each dataset's test error (mean over folds), for the "
        "methods present on every dataset: Wilcoxon's signed-rank test of each method "
        "against each reference, Holm-adjusted across the methods compared with that "
        f"reference (`*`: p (Holm) < {alpha:g}); and the Bayesian signed-rank test "
        "(Benavoli et al. 2017; Dirichlet-process prior with one pseudo-observation at 0 "
        f"of weight 0.5, {BAYES_SAMPLES} posterior draws) with a region of practical "
        f"equivalence of ±{100 * rope:g} percentage points: the posterior probability that "
        "the method's error is lower by more than that, that the two are equivalent, and "
        "that the reference's is lower. Beside them the Friedman test; the Nemenyi "
        "critical-difference diagram is results/figures/critical_difference.png."
    )
    parts = ["## Across datasets", caption]
    rows = across.to_pylist()
    for result in results:
        title = f"### {result.variant}, {result.classifier}"
        n = len(result.datasets)
        if n < MIN_DATASETS:
            parts += [title, too_few_datasets(n)]
            continue
        left_out = f"; left out (not on every dataset): {', '.join(result.left_out)}"
        friedman_line = (
            f"{n} datasets, {len(result.methods)} methods. Friedman χ² = "
            f"{_format_number(result.statistic, 2)}, p = {_format_p(result.p_value)}"
            f"{left_out if result.left_out else ''}."
        )
        keep = [
            r
            for r in rows
            if (r["variant"], r["classifier"]) == (result.variant, result.classifier)
        ]
        header, body = across_datasets_rows(pa.Table.from_pylist(keep, SIGNIFICANCE_DATASETS))
        table = markdown_table(body, header) if body else "No reference method on every dataset."
        parts += [title, friedman_line, table]
    return "\n\n".join(parts)


def significance_markdown(
    table: pa.Table,
    alpha: float,
    n_resamples: int,
    seed: int,
    level: float | None = None,
    across: str = "",
) -> str:
    """The SIGNIFICANCE rows as a readable Markdown table with a caption that says
    what was tested; significant rows are marked. ``across``: the across-dataset section
    (:func:`across_datasets_markdown`), appended."""
    level = round(100 * (1 - alpha if level is None else level), 6)
    caption = (
        "Per dataset, the test fits how its splits were drawn. One train/test split: the "
        "exact McNemar test on the test predictions (b: only the method right, c: only "
        "the reference right), with a paired bootstrap percentile interval "
        f"(B = {n_resamples}, seed {seed}). Several random train/test splits of the same "
        "documents (the five-fold datasets): the corrected resampled t-test (Nadeau and "
        "Bengio 2003) on the per-fold error differences, their variance inflated by "
        "1/J + n_test/n_train for the documents the splits share, J - 1 degrees of freedom, "
        "with its t interval; pooling those predictions into one McNemar test would treat "
        "them as independent (b and c are shown for reference). Holm-adjusted across the "
        f"methods compared with each reference; `*`: p (Holm) < {alpha:g}. Errors: mean "
        "over folds. Difference: error of the method minus error of the reference, in "
        f"percentage points, with its {level:g}% interval."
    )
    header, rows = significance_rows(table)
    body = markdown_table(rows, header) if rows else "No comparison: no reference method found."
    text = f"# Paired significance tests\n\n## Per dataset\n\n{caption}\n\n{body}\n"
    return text + (f"\n{across}\n" if across else "")


def critical_difference_figure(result: CriticalDifference) -> Figure:
    """The diagram of ``result``, or a figure saying why there is none."""
    title = (
        f"Critical difference diagram (Nemenyi test): {result.classifier} test error, "
        f"{result.variant} data, "
        f"{len(result.datasets)} dataset{'s' if len(result.datasets) != 1 else ''}, "
        f"α = {result.alpha:g}"
    )
    if result.note:
        return draw_message(title, result.note)
    if len(result.datasets) < MIN_DATASETS:
        return draw_message(
            title, f"No across-dataset test is meaningful with fewer than {MIN_DATASETS} datasets"
        )
    return draw_critical_difference(
        result.average_ranks, result.cd, title, result.statistic, result.p_value
    )


def read_designs(
    splits_paths: Mapping[str, str | os.PathLike],
) -> dict[tuple[str, str], SplitDesign]:
    """{(dataset, variant): its SplitDesign} from ``{"dataset/variant": SPLITS path}``."""
    designs = {}
    for name, path in splits_paths.items():
        dataset, slash, variant = name.rpartition("/")
        if not slash or not dataset or not variant:
            raise io.WmdevalError(f"splits: expected DATASET/VARIANT=PATH, got {name!r}={path}")
        designs[dataset, variant] = split_design(io.read_splits(path), str(path))
    return designs


def run_significance(
    predictions_path: str | os.PathLike,
    out_csv: str | os.PathLike,
    out_md: str | os.PathLike,
    out_png: str | os.PathLike,
    out_svg: str | os.PathLike,
    reference: str,
    alpha: float,
    n_resamples: int,
    seed: int,
    variant: str,
    classifier: str,
    splits: Mapping[str, str | os.PathLike],
    out_datasets_csv: str | os.PathLike,
    rope: float,
    level: float | None = None,
    expected: Mapping[str, Sequence[str]] | None = None,
) -> pa.Table:
    """Read PREDICTIONS and the splits of every dataset variant (``splits``:
    ``{"dataset/variant": path}``, exactly those of the predictions); write the
    SIGNIFICANCE table (CSV, and Markdown with the across-dataset section) against the
    references BOW (L1/L1) and ``reference``, the SIGNIFICANCE_DATASETS table
    (``rope`` in percentage points), and the critical difference diagram of ``variant``
    and ``classifier`` (PNG and SVG). With ``expected`` (:mod:`wmdeval.core.coverage`) the
    predictions must cover exactly those datasets, variants, methods and classifiers.
    Everything is computed before the first file is written, and each file is written
    atomically. Returns the SIGNIFICANCE table."""
    if not rope >= 0:
        raise io.WmdevalError(f"significance.rope: expected a number >= 0, got {rope}")
    predictions = io.read_tables([predictions_path], schemas.PREDICTIONS, expected)
    designs = read_designs(splits)
    covered = {
        (d, v)
        for d, v in zip(
            predictions.column("dataset").to_pylist(),
            predictions.column("variant").to_pylist(),
            strict=True,
        )
    }
    if covered != set(designs):
        missing = sorted("/".join(k) for k in covered - set(designs))
        extra = sorted("/".join(k) for k in set(designs) - covered)
        raise io.WmdevalError(
            f"splits: expected exactly the predictions' dataset variants; without splits: "
            f"{', '.join(missing) or 'none'}; without predictions: {', '.join(extra) or 'none'}"
        )
    references = list(dict.fromkeys([REFERENCE, reference]))
    table = significance_table(predictions, references, alpha, n_resamples, seed, level, designs)
    across = across_datasets_table(predictions, references, alpha, rope / 100.0, seed)
    markdown = significance_markdown(
        table,
        alpha,
        n_resamples,
        seed,
        level,
        across_datasets_markdown(
            across, critical_differences(predictions, alpha), alpha, rope / 100.0
        ),
    )
    figure = critical_difference_figure(
        critical_difference(predictions, variant, classifier, alpha)
    )
    io.write_csv(out_csv, table)
    io.write_csv(out_datasets_csv, across)
    io.write_text(out_md, markdown)
    from ..reporting.figures import save_figure  # matplotlib: loaded only to draw

    save_figure(figure, out_png, svg=out_svg)
    return table


__all__ = [
    "SIGNIFICANCE",
    "SIGNIFICANCE_DATASETS",
    "MCNEMAR",
    "CORRECTED_T",
    "MIN_DATASETS",
    "SplitDesign",
    "split_design",
    "read_designs",
    "Comparison",
    "compare",
    "across_datasets_table",
    "across_datasets_rows",
    "across_datasets_markdown",
    "too_few_datasets",
    "mcnemar_exact",
    "holm",
    "paired_bootstrap",
    "friedman",
    "nemenyi_q",
    "nemenyi_critical_difference",
    "comparison_seed",
    "significance_table",
    "CriticalDifference",
    "error_matrix",
    "critical_difference",
    "critical_differences",
    "rank_groups",
    "draw_critical_difference",
    "draw_message",
    "critical_difference_figure",
    "significance_rows",
    "significance_markdown",
    "run_significance",
]
