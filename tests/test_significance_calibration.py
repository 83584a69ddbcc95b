"""The per-dataset test of random-split datasets keeps its level in a simulation of the
protocol's design (benchmarks/significance_calibration.py; its full run: docs/statistics.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import significance_calibration as calibration
finally:
    sys.path.pop(0)

#: The null design of issue 25: 300 documents, 5 random 70/30 splits, equal expected error,
#: outcomes correlated through documents (shared and method-specific) and training sets.
NULL = calibration.Setting(difficulty=1.0, method_effect=1.0, training_effect=0.1)


def test_simulated_errors_are_the_settings():
    setting = calibration.Setting(1.0, 0.5, 0.1, error_a=0.15, error_b=0.2)
    wrong_a, wrong_b = calibration.simulate(setting, 400, np.random.default_rng(0))
    assert wrong_a.shape == wrong_b.shape == (400, 5, 90)
    # 400 x 5 x 90 predictions, but correlated through documents: a loose tolerance.
    assert wrong_a.mean() == pytest.approx(0.15, abs=0.01)
    assert wrong_b.mean() == pytest.approx(0.20, abs=0.01)
    # A's and B's errors on a dataset correlate through the difficulty they share
    # (the sample correlation is about 0.27 here; independence would give 0 +- 0.05).
    a = wrong_a.reshape(400, -1).mean(axis=1)
    b = wrong_b.reshape(400, -1).mean(axis=1)
    assert np.corrcoef(a, b)[0, 1] > 0.15


def test_corrected_t_keeps_its_level_where_pooled_mcnemar_does_not():
    rates = calibration.rejection_rates(NULL, 2000, seed=1)
    assert rates["corrected resampled t"] <= 0.06
    # The simulation can tell an invalid test: today's pooled McNemar overshoots.
    assert rates["pooled McNemar"] > 0.08


def test_corrected_t_has_power_at_six_points():
    # Conservative, but not blind: a 6-point difference is found far above the null rate.
    setting = calibration.Setting(1.0, 1.0, 0.1, error_a=0.15, error_b=0.21)
    null = calibration.rejection_rates(NULL, 2000, seed=2)["corrected resampled t"]
    power = calibration.rejection_rates(setting, 2000, seed=2)["corrected resampled t"]
    assert power > null + 0.05


def test_readme_quotes_the_calibration_script():
    """Two rows of docs/statistics.md's calibration table (the issue's design with method and
    training effects: the null and the power at 3 points), recomputed as the script
    computes them (2,000 datasets, seed 0)."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "statistics.md").read_text()
    block = readme.split("<!-- significance-calibration -->")[1].split("<!-- /")[0]
    setting = calibration.NULL_SETTINGS[5]
    for row_setting in (setting, calibration.power_setting(setting)):
        rates = calibration.rejection_rates(row_setting, 2000, seed=0)
        row = calibration.format_row(row_setting, rates)
        assert row in block.splitlines(), f"docs/statistics.md's calibration table lacks: {row}"
    assert len([line for line in block.splitlines() if line.startswith("| 1")]) == 16
