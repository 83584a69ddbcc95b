"""The per-variant analyses job (wmdeval.analyses.per_variant): one process, the same tables as each
analysis run on its own corpus, and clear errors that leave nothing behind."""

from __future__ import annotations

import json

import pytest
from test_n2o import synthetic_dataset, write_dataset

from wmdeval.analyses import corpus_distance, crossmatch, n2o
from wmdeval.analyses import per_variant as analyses
from wmdeval.cli import main
from wmdeval.core import io

SETTINGS = {
    "n2o": {"ks": [2, 4], "queries": None},
    "crossmatch": {"m": 10},
    "corpus_distances": {"m": 20},
    "ksc": {"K": 3, "R": 2, "corpus_size": 6},
}


@pytest.fixture
def dataset(tmp_path):
    documents, splits, matrices = synthetic_dataset()
    paths = write_dataset(tmp_path, documents, splits, matrices)
    return documents, splits, matrices, paths


def test_one_job_gives_the_tables_of_each_analysis_on_its_own(dataset, tmp_path):
    _, _, _, (docs, spl, wmd_paths) = dataset
    outputs = {name: tmp_path / f"{name}.parquet" for name in SETTINGS}
    analyses.run_analyses(docs, spl, wmd_paths, "toy", "clean", SETTINGS, outputs, seed=3)

    # each analysis on a corpus read for it alone (KSC without splits: it ignores folds)
    def corpus(splits_path=spl):
        return n2o.read_corpus(docs, splits_path, wmd_paths)

    alone = {
        "n2o": n2o.n2o_results(corpus(), "toy", "clean", [2, 4], None, 3),
        "crossmatch": crossmatch.crossmatch_results(corpus(), "toy", "clean", 10, 3),
        "corpus_distances": corpus_distance.corpus_distance_results(corpus(), "toy", "clean",
                                                                    20, 3),
        "ksc": corpus_distance.ksc_results(corpus(None), "toy", "clean", 3, 2, 6, 3),
    }
    for name, (_, schema) in analyses.ANALYSES.items():
        written = io.read_table(outputs[name], schema)
        assert written.num_rows > 0
        assert written.equals(alone[name]), name


def test_only_the_requested_analyses_run(dataset, tmp_path):
    _, _, _, (docs, spl, wmd_paths) = dataset
    out = tmp_path / "crossmatch.parquet"
    tables = analyses.run_analyses(docs, spl, wmd_paths, "toy", "original", SETTINGS,
                                   {"crossmatch": out}, seed=0)
    assert list(tables) == ["crossmatch"]
    assert sorted(p.name for p in tmp_path.glob("*.parquet") if p.name.startswith("cross")) \
        == ["crossmatch.parquet"]


@pytest.mark.parametrize("outputs, settings, message", [
    ({"n2o": "a.parquet", "kcs": "b.parquet"}, SETTINGS,
     r"unknown analysis 'kcs' \(expected one of n2o, crossmatch, corpus_distances, ksc\)"),
    ({"ksc": "b.parquet"}, {"ksc": {"K": 3, "R": 2}},
     r"analysis 'ksc': settings \['K', 'R'\], expected exactly \['K', 'R', 'corpus_size'\]"),
    ({"n2o": "a.parquet"}, {}, r"analysis 'n2o': settings \[\], expected exactly"),
])
def test_bad_requests_stop_before_any_work(dataset, tmp_path, outputs, settings, message):
    _, _, _, (docs, spl, wmd_paths) = dataset
    outputs = {name: tmp_path / path for name, path in outputs.items()}
    with pytest.raises(io.WmdevalError, match=message):
        analyses.run_analyses(docs, spl, wmd_paths, "toy", "original", settings, outputs, 0)
    assert not any(path.exists() for path in outputs.values())


def test_a_failing_analysis_leaves_no_table(dataset, tmp_path, monkeypatch):
    _, _, _, (docs, spl, wmd_paths) = dataset

    def fails(corpus, dataset, variant, seed, m):
        raise io.WmdevalError("crossmatch failed")

    # N2O runs first and succeeds; its table must not be written either
    monkeypatch.setitem(analyses.ANALYSES, "crossmatch",
                        (fails, analyses.ANALYSES["crossmatch"][1]))
    outputs = {"n2o": tmp_path / "n2o.parquet", "crossmatch": tmp_path / "crossmatch.parquet"}
    with pytest.raises(io.WmdevalError, match="crossmatch failed"):
        analyses.run_analyses(docs, spl, wmd_paths, "toy", "original", SETTINGS, outputs, 0)
    assert not any(path.exists() for path in outputs.values())


def test_cli_runs_the_named_analyses(dataset, tmp_path, capsys):
    _, _, _, (docs, spl, wmd_paths) = dataset
    out = tmp_path / "ksc.parquet"
    argv = ["analyses", "--documents", docs, "--splits", spl, "--wmd", json.dumps(wmd_paths),
            "--dataset", "toy", "--variant", "original", "--settings", json.dumps(SETTINGS),
            "--seed", "0"]
    assert main([*argv, "--out", f"ksc={out}"]) == 0
    assert io.read_table(out, corpus_distance.KSC).num_rows > 0
    with pytest.raises(SystemExit):
        main([*argv, "--out", "ksc"])
    assert "expected NAME=PATH, got 'ksc'" in capsys.readouterr().err
