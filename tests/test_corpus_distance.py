"""Corpus distances and Known-Similarity Corpora (wmdeval.analyses.corpus_distance)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_n2o import empty_document, synthetic_dataset, write_dataset

from wmdeval.analyses import corpus_distance as cd
from wmdeval.analyses import per_variant as analyses
from wmdeval.core import io
from wmdeval.core.methods import METHODS
from wmdeval.distances.factory import prepare_variant


def euclidean(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.atleast_2d(x.T).T, np.atleast_2d(y.T).T  # 1-D points become column vectors
    return np.sqrt(((x[:, None, :] - y[None, :, :]) ** 2).sum(-1))


def energy_of(x: np.ndarray, y: np.ndarray, within: str = "all") -> float:
    return cd.energy_distance(euclidean(x, y), euclidean(x, x), euclidean(y, y), within)


# --------------------------------------------------------------------------- measures


def test_energy_distance_is_zero_for_identical_groups():
    x = np.random.default_rng(0).normal(size=30)
    assert energy_of(x, x) == pytest.approx(0.0, abs=1e-12)


def test_energy_distance_grows_with_a_shift():
    x = np.random.default_rng(1).normal(size=40)
    energies = [energy_of(x, x + shift) for shift in (0.0, 0.5, 1.0, 2.0, 4.0)]
    assert energies[0] == pytest.approx(0.0, abs=1e-12)
    assert all(a < b for a, b in zip(energies, energies[1:], strict=False))
    # far apart, E -> 2 |shift| - E|X - X'| - E|Y - Y'| ~ 2 shift - 2 mean within
    far = energy_of(x, x + 100.0)
    within = euclidean(x, x).sum() / len(x) ** 2
    assert far == pytest.approx(200.0 - 2 * within, rel=1e-9)


def test_energy_distance_hand_computed():
    # X = {0, 2}, Y = {5}: mean d(X, Y) = 4; within X (all 4 ordered pairs) = 4/4 = 1
    x, y = np.array([0.0, 2.0]), np.array([5.0])
    assert energy_of(x, y) == pytest.approx(2 * 4 - 1 - 0)
    # distinct pairs only: within X = 2
    assert energy_of(x, y, within="distinct") == pytest.approx(2 * 4 - 2 - 0)
    with pytest.raises(ValueError, match="within"):
        energy_of(x, y, within="some")


def test_average_hausdorff_hand_computed_in_2d():
    x = np.array([[0.0, 0.0], [1.0, 0.0]])
    y = np.array([[0.0, 1.0], [3.0, 0.0]])
    # from X: (0,0) -> (0,1) at 1; (1,0) -> (0,1) at √2. From Y: (0,1) -> 1; (3,0) -> 2.
    expected = ((1 + math.sqrt(2)) / 2 + (1 + 2) / 2) / 2
    assert cd.average_hausdorff(euclidean(x, y)) == pytest.approx(expected)
    assert cd.average_hausdorff(euclidean(x, x)) == 0.0


def test_group_distances_are_scale_free_where_promised():
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(size=(15, 2)), rng.normal(3, 1, size=(10, 2))])
    in_first = np.arange(25) < 15
    base = cd.group_distances(euclidean(x, x), in_first)
    scaled = cd.group_distances(7.0 * euclidean(x, x), in_first)
    assert scaled["energy"] == pytest.approx(7.0 * base["energy"])
    assert scaled["energy_coefficient"] == pytest.approx(base["energy_coefficient"])
    assert scaled["ahd_relative"] == pytest.approx(base["ahd_relative"])
    assert 0 < base["energy_coefficient"] < 1


# --------------------------------------------------------------------------- KSC


def test_double_lottery_proportions():
    assert cd.share_from_b(10, 4).tolist() == [0, 3, 5, 8, 10]  # 2.5 and 7.5 round up
    assert cd.share_from_b(50, 15)[[0, 1, 15]].tolist() == [0, 3, 50]
    source_a, source_b = np.arange(0, 30), np.arange(100, 130)
    corpora = cd.double_lottery(source_a, source_b, 4, 10, np.random.default_rng(0))
    assert corpora.shape == (5, 10)
    from_b = (corpora >= 100).sum(axis=1)
    assert from_b.tolist() == [0, 3, 5, 8, 10]
    assert all(len(set(c.tolist())) == 10 for c in corpora)  # no document twice in a corpus
    again = cd.double_lottery(source_a, source_b, 4, 10, np.random.default_rng(0))
    assert np.array_equal(corpora, again)


def test_double_lottery_needs_big_enough_sources():
    with pytest.raises(io.WmdevalError, match="corpus size"):
        cd.double_lottery(np.arange(5), np.arange(10, 30), 2, 8, np.random.default_rng(0))


def test_double_lottery_draws_uniformly():
    rng = np.random.default_rng(1)
    source_a, source_b = np.arange(20), np.arange(20, 40)
    counts = np.zeros(40)
    for _ in range(2000):
        np.add.at(counts, cd.double_lottery(source_a, source_b, 2, 10, rng)[1], 1)
    # corpus 1 of K = 2: 5 of 20 from each source, each document with probability 1/4
    np.testing.assert_allclose(counts / 2000, 0.25, atol=0.04)


def test_ksc_trajectories_on_1d_data_are_monotone():
    rng = np.random.default_rng(3)
    points = np.concatenate([rng.normal(0, 1, 300), rng.normal(3, 1, 300)])
    dist = euclidean(points, points)
    source_a, source_b = np.arange(300), np.arange(300, 600)
    separations, values = [], {"energy": [], "ahd": []}
    for repetition in range(3):
        corpora = cd.double_lottery(
            source_a, source_b, 5, 30, np.random.default_rng([0, repetition])
        )
        by_measure = cd.ksc_pair_distances(dist, corpora)
        for i in range(6):
            for j in range(i + 1, 6):
                separations.append(j - i)
                for measure in cd.MEASURES:
                    values[measure].append(by_measure[measure][i, j])
    separations = np.array(separations)
    for measure in cd.MEASURES:
        v = np.array(values[measure])
        means = [v[separations == s].mean() for s in range(1, 6)]
        assert all(a < b for a, b in zip(means, means[1:], strict=False)), measure
        assert cd.monotonicity(separations, v)["spearman_rho"] > 0.8, measure


def test_ksc_pair_distances_of_shared_documents():
    dist = euclidean(np.arange(6.0), np.arange(6.0))
    corpora = np.array([[0, 1, 2], [0, 1, 2], [3, 4, 5]])
    by_measure = cd.ksc_pair_distances(dist, corpora)
    assert by_measure["energy"][0, 1] == pytest.approx(0.0, abs=1e-12)
    assert by_measure["ahd"][0, 1] == 0.0
    assert by_measure["energy"][0, 2] == pytest.approx(
        energy_of(np.arange(3.0), np.arange(3.0, 6.0))
    )
    assert by_measure["ahd"][0, 2] == pytest.approx(cd.average_hausdorff(dist[:3, 3:]))


def test_standardise_and_monotonicity():
    z = cd.standardise(np.array([1.0, 2.0, 3.0, 4.0]))
    assert z.mean() == pytest.approx(0.0) and z.std(ddof=1) == pytest.approx(1.0)
    assert cd.standardise(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]
    perfect = cd.monotonicity(np.array([1, 1, 2, 3]), np.array([0.1, 0.2, 0.5, 0.9]))
    assert perfect["order_accuracy"] == 1.0 and perfect["spearman_rho"] > 0.9
    reverse = cd.monotonicity(np.array([1, 2, 3]), np.array([3.0, 2.0, 1.0]))
    assert reverse["spearman_rho"] == pytest.approx(-1.0) and reverse["order_accuracy"] == 0.0
    flat = cd.monotonicity(np.array([1, 2]), np.array([1.0, 1.0]))
    assert flat["order_accuracy"] == 0.5 and math.isnan(flat["spearman_rho"])


def test_two_largest_classes():
    labels = np.array(["b", "a", "c", "c", "b", "b", "a", "c"])
    assert cd.two_largest_classes(labels) == ("b", "c")
    assert cd.two_largest_classes(np.array(["z", "y"])) == ("y", "z")


# --------------------------------------------------------------------------- datasets


def test_corpus_distance_rows_on_a_dataset(tmp_path):
    documents, splits, matrices = synthetic_dataset()
    docs, spl, wmd_paths = write_dataset(tmp_path, documents, splits, matrices)
    out = tmp_path / "corpus.parquet"
    table = analyses.run_analyses(
        docs,
        spl,
        wmd_paths,
        "toy",
        "original",
        {"corpus_distances": {"m": 50}},
        {"corpus_distances": out},
        seed=0,
    )["corpus_distances"]
    assert table.num_rows == len(METHODS) * (3 + 2)
    rows = table.to_pylist()
    wmd_classes = [r for r in rows if r["method"] == "WMD" and "train" not in r["comparison"]]
    wmd_splits = [r for r in rows if r["method"] == "WMD" and "train" in r["comparison"]]
    # far class centres: classes differ much more than train and test do
    assert min(r["energy_coefficient"] for r in wmd_classes) > max(
        r["energy_coefficient"] for r in wmd_splits
    )
    csv_path, md_path = tmp_path / "cd.csv", tmp_path / "cd.md"
    cd.run_corpus_distance_table([out], csv_path, md_path)
    assert len(csv_path.read_text().splitlines()) == 1 + table.num_rows
    assert "## Between classes" in md_path.read_text()


def test_run_ksc_writes_table_and_the_report_draws_figures(tmp_path):
    documents, splits, matrices = synthetic_dataset(per_class=20)
    corpus = prepare_variant(documents, None, matrices)
    out, png = tmp_path / "ksc.parquet", tmp_path / "ksc.png"
    table = cd.ksc_results(
        corpus, "toy", "original", K=4, R=2, corpus_size=8, seed=0, classes=("apple", "cherry")
    )
    io.write_table(table, out, cd.KSC)
    assert table.num_rows == len(METHODS) * 2 * 2 * (5 * 4 // 2)
    rows = table.to_pylist()
    assert {r["class_a"] for r in rows} == {"apple"} and {r["corpus_size"] for r in rows} == {8}
    for method in {r["method"] for r in rows}:
        for measure in cd.MEASURES:
            z = [
                r["standardised"] for r in rows if (r["method"], r["measure"]) == (method, measure)
            ]
            assert np.mean(z) == pytest.approx(0.0, abs=1e-9)
    assert cd.ksc_title(table).startswith(
        "Known-similarity corpora, toy (original): corpus i has a share i/K of 'cherry', "
        "the rest 'apple'\nK = 4, 2 draws, 8 documents per corpus"
    )
    summary = {(s["method"], s["measure"]): s for s in cd.ksc_summary(table)}
    assert summary["WMD", "energy"]["spearman_rho"] > 0.8  # far classes: clear trend

    csv_path, md_path = tmp_path / "ksc.csv", tmp_path / "ksc.md"
    cd.run_ksc_report([out], [png], csv_path, md_path)
    assert len(csv_path.read_text().splitlines()) == 1 + len(METHODS) * 2
    assert "toy (original) energy" in md_path.read_text()
    first = png.read_bytes()
    assert first.startswith(b"\x89PNG")
    cd.run_ksc_report([out], [png], csv_path, md_path)
    assert png.read_bytes() == first and not png.with_suffix(".svg").exists()


def test_ksc_report_needs_one_figure_per_table(tmp_path):
    with pytest.raises(io.WmdevalError, match="2 KSC table.*1 figure path"):
        cd.run_ksc_report(
            [tmp_path / "a.parquet", tmp_path / "b.parquet"],
            [tmp_path / "a.png"],
            tmp_path / "k.csv",
            tmp_path / "k.md",
        )
    assert not list(tmp_path.iterdir())


def test_ksc_default_classes_and_capped_size():
    documents, splits, matrices = synthetic_dataset(per_class=6)
    corpus = prepare_variant(documents, None, matrices)
    rows = cd.ksc_rows(corpus, "toy", "original", K=2, R=1, corpus_size=50, seed=0)
    # the class of the document without words has 5 usable documents, the others 6
    short = corpus.labels[empty_document(splits)]
    expected = tuple(sorted({"apple", "banana", "cherry"} - {short}))
    assert {(r["class_a"], r["class_b"]) for r in rows} == {expected}
    assert {r["corpus_size"] for r in rows} == {6}
