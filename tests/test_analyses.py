"""The per-variant analyses job (wmdeval.analyses.per_variant): one process, the same tables as each
analysis run on its own corpus, and clear errors that leave nothing behind."""

from __future__ import annotations

import json
import logging
import re

import pytest
from test_n2o import synthetic_dataset, write_dataset

from wmdeval.analyses import corpus_distance, crossmatch, n2o, wmd_vs_bow
from wmdeval.analyses import per_variant as analyses
from wmdeval.cli import main
from wmdeval.core import config, io
from wmdeval.distances.factory import read_variant

SETTINGS = {
    "n2o": {"ks": [2, 4], "queries": None},
    "crossmatch": {"m": 10},
    "corpus_distances": {"m": 20},
    "ksc": {"K": 3, "R": 2, "corpus_size": 6},
    "wmd_vs_bow": {"max_pairs": 50},
}


@pytest.fixture
def dataset(tmp_path):
    documents, splits, matrices = synthetic_dataset()
    paths = write_dataset(tmp_path, documents, splits, matrices)
    return documents, splits, matrices, paths


def test_one_job_gives_the_tables_of_each_analysis_on_its_own(
    dataset, tmp_path, monkeypatch, caplog
):
    # every progress line due (interval 0); the tables of analyses that write none
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="wmdeval.analyses")
    _, _, _, (docs, spl, wmd_paths) = dataset
    outputs = {name: tmp_path / f"{name}.parquet" for name in SETTINGS}
    analyses.run_analyses(docs, spl, wmd_paths, "toy", "clean", SETTINGS, outputs, seed=3)

    # each analysis on a corpus read for it alone (KSC without splits: it ignores folds)
    def corpus(splits_path=spl):
        return read_variant(docs, splits_path, wmd_paths)

    alone = {
        "n2o": n2o.n2o_results(corpus(), "toy", "clean", [2, 4], None, 3),
        "crossmatch": crossmatch.crossmatch_results(corpus(), "toy", "clean", 10, 3),
        "corpus_distances": corpus_distance.corpus_distance_results(
            corpus(), "toy", "clean", 20, 3
        ),
        "ksc": corpus_distance.ksc_results(corpus(None), "toy", "clean", 3, 2, 6, 3),
        "wmd_vs_bow": wmd_vs_bow.analysis_table(corpus(), "toy", "clean", 50, 3),
    }
    for name, (_, schema) in analyses.ANALYSES.items():
        written = io.read_table(outputs[name], schema)
        assert written.num_rows > 0
        assert written.equals(alone[name]), name
        # each analysis's own lines: counts rising to its total, the last one all done
        pattern = rf"analyses toy/clean {name}: (\d+)/(\d+) (\w+) \([\d.]+%\)"
        found = [re.match(pattern, m) for m in caplog.messages]
        found = [m for m in found if m]
        done, totals = [int(m[1]) for m in found], {int(m[2]) for m in found}
        assert len(totals) == 1 and done == list(range(1, totals.pop() + 1)), name
        assert found[-1].string.startswith(f"{found[-1][0]} done in"), name


def test_only_the_requested_analyses_run(dataset, tmp_path):
    _, _, _, (docs, spl, wmd_paths) = dataset
    out = tmp_path / "crossmatch.parquet"
    tables = analyses.run_analyses(
        docs, spl, wmd_paths, "toy", "original", SETTINGS, {"crossmatch": out}, seed=0
    )
    assert list(tables) == ["crossmatch"]
    assert sorted(p.name for p in tmp_path.glob("*.parquet") if p.name.startswith("cross")) == [
        "crossmatch.parquet"
    ]


@pytest.mark.parametrize(
    "outputs, settings, message",
    [
        (
            {"n2o": "a.parquet", "kcs": "b.parquet"},
            SETTINGS,
            r"unknown analysis 'kcs' \(expected one of n2o, crossmatch, corpus_distances, ksc, "
            r"wmd_vs_bow\)",
        ),
        (
            {"ksc": "b.parquet"},
            {"ksc": {"K": 3, "R": 2, "size": 6}},
            r"analysis 'ksc': unknown setting\(s\) \['size'\], expected some of "
            r"\['K', 'R', 'corpus_size'\]",
        ),
        (
            {"wmd_vs_bow": "a.parquet"},
            {"wmd_vs_bow": {"enabled": True}},
            r"analysis 'wmd_vs_bow': unknown setting\(s\) \['enabled'\]",
        ),
    ],
)
def test_bad_requests_stop_before_any_work(dataset, tmp_path, outputs, settings, message):
    _, _, _, (docs, spl, wmd_paths) = dataset
    outputs = {name: tmp_path / path for name, path in outputs.items()}
    with pytest.raises(io.WmdevalError, match=message):
        analyses.run_analyses(docs, spl, wmd_paths, "toy", "original", settings, outputs, 0)
    assert not any(path.exists() for path in outputs.values())


def test_settings_not_given_take_the_schemas_defaults():
    requested = analyses.check_request(
        {"ksc": "k.parquet", "wmd_vs_bow": "w.parquet"}, {"ksc": {"K": 3}}
    )
    assert requested == {
        "ksc": {"K": 3, "R": 5, "corpus_size": 50},
        "wmd_vs_bow": {"max_pairs": 1_000_000},
    }
    # the keys the job accepts are the schema's, whatever the schema adds later
    for name in analyses.ANALYSES:
        schema_keys = set(config.defaults("analyses", name)) - {"enabled"}
        assert set(analyses.check_request({name: "x"}, {})[name]) == schema_keys


def test_a_failing_analysis_leaves_no_table(dataset, tmp_path, monkeypatch):
    _, _, _, (docs, spl, wmd_paths) = dataset

    def fails(corpus, dataset, variant, seed, m, report):
        raise io.WmdevalError("crossmatch failed")

    # N2O runs first and succeeds; its table must not be written either
    monkeypatch.setitem(
        analyses.ANALYSES, "crossmatch", (fails, analyses.ANALYSES["crossmatch"][1])
    )
    outputs = {"n2o": tmp_path / "n2o.parquet", "crossmatch": tmp_path / "crossmatch.parquet"}
    with pytest.raises(io.WmdevalError, match="crossmatch failed"):
        analyses.run_analyses(docs, spl, wmd_paths, "toy", "original", SETTINGS, outputs, 0)
    assert not any(path.exists() for path in outputs.values())


def test_cli_runs_the_named_analyses(dataset, tmp_path, capsys):
    _, _, _, (docs, spl, wmd_paths) = dataset
    out = tmp_path / "ksc.parquet"
    argv = [
        "analyses",
        "--documents",
        docs,
        "--splits",
        spl,
        "--wmd",
        json.dumps(wmd_paths),
        "--dataset",
        "toy",
        "--variant",
        "original",
        "--settings",
        json.dumps(SETTINGS),
        "--seed",
        "0",
    ]
    assert main([*argv, "--out", f"ksc={out}"]) == 0
    assert io.read_table(out, corpus_distance.KSC).num_rows > 0
    with pytest.raises(SystemExit):
        main([*argv, "--out", "ksc"])
    assert "expected NAME=PATH, got 'ksc'" in capsys.readouterr().err
