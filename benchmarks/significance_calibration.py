"""Type I error and power of the per-dataset significance tests under the protocol's splits.

Simulates datasets like the five-fold corpora: ``docs`` documents, ``splits`` random
train/test splits of them (30 % test), and two methods A and B whose test predictions are
right or wrong. A prediction is wrong with probability Φ(β_m + u_i + v_mi + t_mj)
(probit), for method m, document i, split j:

- u_i ~ N(0, difficulty²): how hard document i is, for both methods, in every split where
  it is a test document (outcomes correlate across splits and methods through documents);
- v_mi ~ N(0, method_effect²): how hard document i is for method m alone (what makes one
  method better than the other on a given sample of documents, though not in expectation);
- t_mj = training_effect · Σ_{k in train_j} h_mk / sqrt(n_train), h_mk ~ N(0, 1): how good
  method m's training set of split j happens to be; splits share 70 % of their training
  documents, so these effects correlate across splits through the training set.

The expected error of method m is then exactly Φ(β_m / sqrt(1 + difficulty² +
method_effect² + training_effect²)); under the null both methods have the same β. For each
setting the script draws ``datasets`` datasets and reports the share of them on which each
test rejects at α:

- pooled exact McNemar: the test the significance job used before issue 25, on the
  predictions pooled over the splits;
- plain paired t: Student's t on the per-split error differences, uncorrected;
- corrected resampled t: the test the significance job now uses on such datasets
  (wmdeval.analyses.significance.compare, the code path of the job);
- single-split McNemar: the exact McNemar test of the first split alone, the one-split
  design's test (a single training set: its variation is not in the test).

Usage: python benchmarks/significance_calibration.py [--datasets 2000] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wmdeval.analyses.significance import compare, mcnemar_exact

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402

#: The tests reported, in the order of the output's columns.
TESTS = ("pooled McNemar", "plain paired t", "corrected resampled t", "single-split McNemar")


@dataclass(frozen=True)
class Setting:
    """One simulated design; errors are expected test errors of A and B, in [0, 1]."""

    difficulty: float
    method_effect: float
    training_effect: float
    error_a: float = 0.15
    error_b: float = 0.15
    docs: int = 300
    splits: int = 5
    test_share: float = 0.3

    @property
    def n_test(self) -> int:
        return round(self.docs * self.test_share)


def probit_intercept(error: float, setting: Setting) -> float:
    """β with expected error Φ(β / sqrt(1 + total random-effect variance)) = ``error``."""
    from scipy.stats import norm

    variance = setting.difficulty**2 + setting.method_effect**2 + setting.training_effect**2
    return float(norm.ppf(error) * math.sqrt(1.0 + variance))


def simulate(
    setting: Setting, n_datasets: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(wrong_a, wrong_b), each [datasets, splits, n_test] booleans: the test predictions
    of A and B on every split of every simulated dataset (the same documents for both)."""
    from scipy.stats import norm

    n, n_test = setting.docs, setting.n_test
    n_train = n - n_test
    shape = (n_datasets, setting.splits, n)
    order = rng.permuted(np.broadcast_to(np.arange(n), shape), axis=-1)
    test, train = order[..., :n_test], order[..., n_test:]
    difficulty = rng.normal(0.0, setting.difficulty, (n_datasets, n))
    wrong = []
    for error in (setting.error_a, setting.error_b):
        beta = probit_intercept(error, setting)
        own = rng.normal(0.0, setting.method_effect, (n_datasets, n))
        helpfulness = rng.normal(0.0, 1.0, (n_datasets, n))
        rows = np.arange(n_datasets)[:, None, None]
        training = (
            setting.training_effect * helpfulness[rows, train].sum(axis=-1) / math.sqrt(n_train)
        )
        score = beta + (difficulty + own)[rows, test] + training[..., None]
        wrong.append(rng.random(test.shape) < norm.cdf(score))
    return wrong[0], wrong[1]


def p_values(wrong_a: np.ndarray, wrong_b: np.ndarray, test_train_ratio: float) -> np.ndarray:
    """[datasets, len(TESTS)] two-sided p-values of every test on every dataset."""
    from scipy.stats import ttest_1samp

    n_datasets, n_splits, n_test = wrong_a.shape
    fold = np.repeat(np.arange(n_splits), n_test)
    out = np.empty((n_datasets, len(TESTS)))
    differences = wrong_a.mean(axis=-1) - wrong_b.mean(axis=-1)  # [datasets, splits]
    with warnings.catch_warnings():  # identical differences: scipy warns, gives NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        plain = ttest_1samp(differences, 0.0, axis=1).pvalue
    for s in range(n_datasets):
        a, b = wrong_a[s], wrong_b[s]
        only_a_right = int(np.count_nonzero(~a & b))
        only_b_right = int(np.count_nonzero(a & ~b))
        corrected = compare(~a.ravel(), ~b.ravel(), fold, test_train_ratio, 0.95, 1, 0)
        first = (int(np.count_nonzero(~a[0] & b[0])), int(np.count_nonzero(a[0] & ~b[0])))
        out[s] = (
            mcnemar_exact(only_a_right, only_b_right),
            1.0 if np.isnan(plain[s]) else plain[s],  # identical differences: no evidence
            corrected.p_value,
            mcnemar_exact(*first),
        )
    return out


def rejection_rates(
    setting: Setting, n_datasets: int, seed: int, alpha: float = 0.05
) -> dict[str, float]:
    """Share of ``n_datasets`` simulated datasets on which each test rejects at ``alpha``."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, *_setting_key(setting)]))
    wrong_a, wrong_b = simulate(setting, n_datasets, rng)
    ratio = setting.n_test / (setting.docs - setting.n_test)
    rejected = p_values(wrong_a, wrong_b, ratio) < alpha
    return dict(zip(TESTS, rejected.mean(axis=0).tolist(), strict=True))


def _setting_key(setting: Setting) -> list[int]:
    """The setting as integers, so each setting draws its own stream from one seed."""
    values = (setting.difficulty, setting.method_effect, setting.training_effect)
    return [round(1000 * v) for v in (*values, setting.error_a, setting.error_b)]


#: Null settings: document difficulty always; method-specific document effects and
#: training-set effects switched on in turn. A training effect of 0.05-0.1 moves a method's
#: per-split error by about 1-2 points (the "training SD" column), the spread over folds
#: that Table 2 shows on the paper's larger corpora; 0.3 (about 5 points) is a stress test.
NULL_SETTINGS = [
    Setting(difficulty=1.0, method_effect=0.0, training_effect=0.0),
    Setting(difficulty=1.0, method_effect=0.5, training_effect=0.0),
    Setting(difficulty=1.0, method_effect=1.0, training_effect=0.0),
    Setting(difficulty=1.0, method_effect=0.0, training_effect=0.05),
    Setting(difficulty=1.0, method_effect=0.5, training_effect=0.05),
    Setting(difficulty=1.0, method_effect=1.0, training_effect=0.1),
    Setting(difficulty=1.5, method_effect=1.5, training_effect=0.1),
    Setting(difficulty=1.0, method_effect=0.5, training_effect=0.3),
]


def training_sd_points(setting: Setting, error: float) -> float:
    """Standard deviation, in points, that the training-set effect alone gives a method's
    expected per-split error: d error / d β = φ(β / r) / r with r = sqrt(1 + total
    variance), times the effect's standard deviation (first order)."""
    from scipy.stats import norm

    variance = setting.difficulty**2 + setting.method_effect**2 + setting.training_effect**2
    r = math.sqrt(1.0 + variance)
    return 100 * setting.training_effect * float(norm.pdf(norm.ppf(error))) / r


HEADER = [
    "difficulty",
    "method effect",
    "training effect",
    "training SD (points)",
    "error A",
    "error B",
    *TESTS,
]


def power_setting(setting: Setting) -> Setting:
    """``setting`` with B's expected error 3 points above A's."""
    return Setting(setting.difficulty, setting.method_effect, setting.training_effect, 0.15, 0.18)


def format_row(setting: Setting, rates: dict[str, float]) -> str:
    """One Markdown row of the output (the README quotes some, a test checks them)."""
    cells = [
        f"{setting.difficulty:g}",
        f"{setting.method_effect:g}",
        f"{setting.training_effect:g}",
        f"{training_sd_points(setting, setting.error_a):.1f}",
        f"{100 * setting.error_a:g} %",
        f"{100 * setting.error_b:g} %",
        *(f"{rates[t]:.4f}" for t in TESTS),
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000, help="simulated datasets per row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--alpha", type=float, default=0.05)
    record.add_argument(parser, "significance_calibration")
    args = parser.parse_args(argv)
    design = NULL_SETTINGS[0]
    print(
        f"{design.docs} documents, {design.splits} random {100 - 100 * design.test_share:g}/"
        f"{100 * design.test_share:g} splits, {args.datasets} simulated datasets per row, "
        f"alpha = {args.alpha:g}, seed {args.seed}; rejection rates (binomial standard error "
        f"at 0.05: {math.sqrt(0.05 * 0.95 / args.datasets):.4f})"
    )
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    powers = [power_setting(s) for s in NULL_SETTINGS]
    rows = []
    for setting in [*NULL_SETTINGS, *powers]:
        line = format_row(setting, rejection_rates(setting, args.datasets, args.seed, args.alpha))
        print(line)
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    figures = {
        "datasets": args.datasets,
        "seed": args.seed,
        "alpha": args.alpha,
        "table": {"header": HEADER, "rows": rows},
    }
    record.write(args.record, "significance_calibration", figures)


if __name__ == "__main__":
    main()
