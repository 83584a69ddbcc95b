"""The knn search's cost forecast (wmdeval.planning.forecast): arithmetic, job and table."""

import json
import logging
import math
import re

import numpy as np
import pytest
from test_search import five_folds, labelled
from test_wmd import random_corpus

from wmdeval import cli
from wmdeval.core import io, schemas
from wmdeval.core.errors import WmdevalError
from wmdeval.core.roles import query_roles
from wmdeval.distances.wmd import reuse, search, solver
from wmdeval.planning import forecast, resources


def test_forecast_totals_against_a_hand_computed_case():
    got = forecast.forecast_totals(
        n_queries=100,
        solves_per_query=10.0,
        cpu_per_query=2.0,
        solve_share=0.5,
        shared_share=0.2,
        setup_seconds=3.0,
        # 1 s for 100 words, 2 s for 200: 0.01 s per word
        bounds_setup={
            "sample_vocabulary": 100,
            "sample_cpu_seconds": 1.0,
            "widest_shard_vocabulary": 200,
            "widest_shard_cpu_seconds": 2.0,
        },
        shards=[
            {"queries": 60, "work": 0.5, "vocabulary": 100},
            {"queries": 40, "work": 0.5, "vocabulary": 200},
        ],
        threads=1,
        model_mem_mb=1000,
        peak_mb=900.0,
    )
    # a shared pair is solved once: 10 % of the solves saved, and half of each query's
    # CPU is solves: 100 x 2 x (1 - 0.5 x 0.1) = 190 s of queries
    assert got["solves"] == pytest.approx(900.0)
    # + per shard 3 s set-up and 0.01 s per word: 4 s and 5 s
    assert got["cpu_seconds"] == pytest.approx(190.0 + 4.0 + 5.0)
    first, second = got["shards"]
    # shard 1: the larger of 60 % of the queries and 50 % of the work -> 4 + 114 s;
    # 5 + 2 x 118 / 60 = 8.93 -> 9 minutes; 1.3 x 900 = 1170 MB > the model's 1000
    assert first == {
        "shard": "1-of-2",
        "queries": 60,
        "cpu_seconds": pytest.approx(118.0),
        "runtime": 9,
        "mem_mb": 1170,
    }
    # shard 2: 50 % of the work -> 5 + 95 s; 5 + 2 x 100 / 60 = 8.33 -> 9
    assert second["cpu_seconds"] == pytest.approx(100.0)
    assert second["runtime"] == 9 and second["mem_mb"] == 1170


def test_each_set_up_batch_of_a_shard_pays_its_set_up():
    # a shard set up in batches (search.shard_batches) pays a set-up per batch: 0.01 s
    # per word from 1 s at 100 words, for 150 and 120 words 1.5 + 1.2 s, against 2 s for
    # its 200 words in one piece
    setup = {
        "sample_vocabulary": 100,
        "sample_cpu_seconds": 1.0,
        "widest_shard_vocabulary": 200,
        "widest_shard_cpu_seconds": 2.0,
    }
    shared = dict(
        n_queries=10,
        solves_per_query=1.0,
        cpu_per_query=1.0,
        solve_share=1.0,
        shared_share=0.0,
        setup_seconds=3.0,
        bounds_setup=setup,
        threads=1,
        model_mem_mb=1000,
        peak_mb=0.0,
    )
    one = forecast.forecast_totals(
        shards=[{"queries": 10, "work": 1.0, "vocabulary": 200}], **shared
    )
    batched = forecast.forecast_totals(
        shards=[{"queries": 10, "work": 1.0, "vocabulary": 200, "batches": [150, 120]}],
        **shared,
    )
    assert one["cpu_seconds"] == pytest.approx(10.0 + 3.0 + 2.0)
    assert batched["cpu_seconds"] == pytest.approx(10.0 + 3.0 + 1.5 + 1.2)
    assert batched["shards"][0]["cpu_seconds"] == pytest.approx(15.7)


def test_forecast_totals_threads_divide_the_runtime_and_the_model_memory_can_win():
    got = forecast.forecast_totals(
        n_queries=10,
        solves_per_query=5.0,
        cpu_per_query=60.0,
        solve_share=1.0,
        shared_share=0.0,
        setup_seconds=0.0,
        bounds_setup={
            "sample_vocabulary": 7,
            "sample_cpu_seconds": 0.0,
            "widest_shard_vocabulary": 7,
            "widest_shard_cpu_seconds": 0.0,
        },
        shards=[{"queries": 10, "work": 1.0, "vocabulary": 7}],
        threads=2,
        model_mem_mb=2000,
        peak_mb=100.0,
    )
    assert got["solves"] == 50.0 and got["cpu_seconds"] == 600.0
    # 600 s on 2 threads at Amdahl's serial share 0.15: 600 x (0.15 + 0.85 / 2) = 345 s
    # wall; 5 + 2 x 5.75 = 16.5 -> 17 minutes
    assert got["shards"][0]["runtime"] == 17 and got["shards"][0]["mem_mb"] == 2000
    with pytest.raises(ValueError):
        forecast.forecast_totals(1, 1, 1, 0.5, 1.5, 0, {}, [], 1, 1, 1)


def test_the_runtime_divides_by_the_speed_up_of_the_threads_not_by_the_threads():
    """20 Newsgroups in one shard (issue 40): 10,927 queries at 0.15 CPU-s each, 16
    threads. Amdahl's law with the serial share 0.15: 16 threads run 1 / (0.15 + 0.85 /
    16) = 4.92x one thread, so 1,639 s of CPU take 333 s; declared 5 + 2 x 333 / 60 =
    16.1 -> 17 minutes. The old 0.9 x threads declared 5 + 2 x 1639 / 14.4 / 60 -> 9."""
    from wmdeval.planning import wall

    setup = {
        "sample_vocabulary": 1,
        "sample_cpu_seconds": 0.0,
        "widest_shard_vocabulary": 1,
        "widest_shard_cpu_seconds": 0.0,
    }
    got = forecast.forecast_totals(
        n_queries=10_927,
        solves_per_query=41.7,
        cpu_per_query=0.15,
        solve_share=0.5,
        shared_share=0.0,
        setup_seconds=0.0,
        bounds_setup=setup,
        shards=[{"queries": 10_927, "work": 1.0, "vocabulary": 1}],
        threads=16,
        model_mem_mb=1,
        peak_mb=1.0,
    )
    cpu = 10_927 * 0.15
    assert wall.speedup(16) == pytest.approx(4.923, abs=1e-3)
    predicted = cpu * (0.15 + 0.85 / 16)
    assert predicted == pytest.approx(332.9, abs=0.1)
    runtime = got["shards"][0]["runtime"]
    assert runtime == 17 and runtime * 60 >= predicted
    # every thread count: at least the predicted wall, never below the floor
    for threads in (1, 2, 4, 8, 16, 64):
        shards = [{"queries": 10_927, "work": 1.0, "vocabulary": 1}]
        one = forecast.forecast_totals(
            10_927, 41.7, 0.15, 0.5, 0.0, 0.0, setup, shards, threads, 1, 1.0
        )["shards"][0]
        assert one["runtime"] * 60 >= cpu / wall.speedup(threads)
        assert one["runtime"] >= forecast.RUNTIME_FLOOR


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_search_jobs_declared_runtime_covers_its_measured_wall(tmp_path, threads):
    """A real search of a small corpus at 1, 2 and 4 threads: the runtime the wmd_search
    job declares (its forecast's, as common.smk reads it) is at least its wall time."""
    import time

    docs, emb, splits, paths = corpus(tmp_path, n=80, seed=5)
    out = tmp_path / "wmd.json"
    argv = forecast_args(paths, out, shards=2)
    argv[argv.index("--threads") + 1] = str(threads)
    assert cli.main(argv) == 0
    for shard in (0, 1):
        start = time.perf_counter()
        search.run_search(
            paths["documents"],
            paths["splits"],
            paths["embeddings"],
            "bow",
            None,
            shard,
            2,
            threads,
            tmp_path / f"pairs{shard}.parquet",
            tmp_path / f"certificates{shard}.parquet",
        )
        measured = time.perf_counter() - start
        declared = resources.forecast_resources(out, f"{shard + 1}-of-2")["runtime"]
        assert declared * 60 >= measured


def test_the_bounds_set_up_is_the_line_through_its_two_timings():
    timed = {
        "sample_vocabulary": 1000,
        "sample_cpu_seconds": 5.0,
        "widest_shard_vocabulary": 9000,
        "widest_shard_cpu_seconds": 13.0,
    }
    assert forecast.bounds_setup_seconds(timed, 5000) == pytest.approx(9.0)
    assert forecast.bounds_setup_seconds(timed, 12000) == pytest.approx(16.0)
    assert forecast.bounds_setup_seconds({**timed, "sample_cpu_seconds": 30.0}, 9000) == 13.0
    assert forecast.bounds_setup_seconds({**timed, "sample_cpu_seconds": 30.0}, 100) > 0
    same = {**timed, "widest_shard_vocabulary": 1000}
    assert forecast.bounds_setup_seconds(same, 123) == 13.0


def corpus(tmp_path, n=60, seed=4):
    docs, emb = random_corpus(seed, n, n_words=50, dim=6, max_len=14)
    docs = labelled(docs)
    splits = five_folds(n, seed)
    paths = {
        "documents": tmp_path / "documents.parquet",
        "splits": tmp_path / "splits.parquet",
        "embeddings": tmp_path / "embeddings.parquet",
    }
    io.write_table(docs, paths["documents"], schemas.DOCUMENTS)
    io.write_table(splits, paths["splits"], schemas.SPLITS)
    io.write_table(emb, paths["embeddings"])
    return docs, emb, splits, paths


def forecast_args(paths, out, shards=2, seed=0, per_role=4, variant="original"):
    return [
        "wmd-forecast",
        "--documents",
        str(paths["documents"]),
        "--splits",
        str(paths["splits"]),
        "--embeddings",
        str(paths["embeddings"]),
        "--weighting",
        "bow",
        "--settings",
        "{}",
        "--shards",
        str(shards),
        "--threads",
        "1",
        "--queries-per-role",
        str(per_role),
        "--seed",
        str(seed),
        "--checks",
        "3",
        "--dataset",
        "tiny",
        "--variant",
        variant,
        "--method",
        "wmd",
        "--out",
        str(out),
    ]


def test_the_forecast_job_on_a_tiny_corpus(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="wmdeval")
    docs, emb, splits, paths = corpus(tmp_path)
    out = tmp_path / "forecast" / "wmd.json"
    assert cli.main(forecast_args(paths, out)) == 0
    record = json.loads(out.read_text())
    progress = [m for m in caplog.messages if re.search(r"\d+/\d+ queries \(", m)]
    inputs = solver.prepare(docs, emb, "bow")
    roles = query_roles(io.fold_indices(splits, inputs.doc_ids), inputs.empty, None)
    queries = np.unique(np.concatenate([r.queries for r in roles]))
    m = record["measured"]
    # 4 per kind of role (test, knn- and wknn-validation), from every query of the method
    assert m["queries"] == len(queries) and m["sampled_queries"] == 12
    assert set(m["sampled_doc_ids"]) <= set(inputs.doc_ids[queries].tolist())
    assert m["solves_per_query"] == m["solves"] / 12
    assert 0 <= m["bounds_share"] <= 1 and 0 <= m["sharing"]["shared_share"] <= 1
    assert "timings" in record["note"]  # which fields vary from run to run
    # progress lines of the sample's search (its solves as recorded) and of the checks,
    # none of each check's own search of one query
    subject, checks = "wmd_forecast tiny/original/wmd", m["sharing"]["checked_queries"]
    done = [p for p in progress if "(100.0%) done in" in p]
    assert len(done) == 2 and progress[-1] == done[1]
    assert done[0].startswith(f"{subject}: sampled queries: 12/12 queries (100.0%) done in ")
    assert done[0].endswith(f"; {m['solves']:,} solves, {m['solves'] / 12:.1f} per query")
    assert done[1].startswith(
        f"{subject}: sharing checks: {checks}/{checks} queries (100.0%) done in "
    )
    assert all(p.startswith(f"{subject}: ") for p in progress)
    assert len(progress) == 12 + max(checks, 1)
    f = record["forecast"]
    assert [s["shard"] for s in f["shards"]] == ["1-of-2", "2-of-2"]
    assert sum(s["queries"] for s in f["shards"]) == len(queries)
    assert all(s["runtime"] >= forecast.RUNTIME_FLOOR and s["mem_mb"] > 0 for s in f["shards"])
    # the same seed draws the same sample, and its solves and sharing are the same
    again = tmp_path / "again.json"
    assert cli.main(forecast_args(paths, again)) == 0
    second = json.loads(again.read_text())["measured"]
    for key in ("sampled_doc_ids", "solves", "sharing"):
        assert second[key] == m[key]
    # the wmd_search jobs take their resources from it, doubled per retry
    assert resources.forecast_resources(out, "2-of-2", attempt=2) == {
        "mem_mb": 2 * f["shards"][1]["mem_mb"],
        "runtime": 2 * f["shards"][1]["runtime"],
    }


def test_the_forecast_counts_solves_the_way_the_shards_do(tmp_path):
    """Every query sampled: the forecast's solves are the searched shards' own (the
    per-query sample shares nothing; the sharing correction takes the rest)."""
    docs, emb, splits, paths = corpus(tmp_path, n=40, seed=7)
    out = tmp_path / "wmd.json"
    assert cli.main(forecast_args(paths, out, shards=1, per_role=1000)) == 0
    record = json.loads(out.read_text())
    inputs = solver.prepare(docs, emb, "bow")
    stats = search.SearchStats()
    search.search_shard(inputs, io.fold_indices(splits, inputs.doc_ids), None, 0, 1, 1, stats)
    assert record["measured"]["sampled_queries"] == record["measured"]["queries"]
    assert record["measured"]["solves"] == stats.solves


def test_the_clean_variants_forecast_takes_the_pairs_its_search_reuses(tmp_path):
    """With the original's pairs and certificates (as the clean variant's wmd_search takes
    them), the forecast counts the solves of the search that reuses them, not of one from
    nothing."""
    docs, emb, splits, paths = corpus(tmp_path, n=40, seed=7)
    inputs = solver.prepare(docs, emb, "bow")
    folds = io.fold_indices(splits, inputs.doc_ids)
    pairs, certificates = search.search_shard(inputs, folds, None, 0, 1, 1)
    # "the original": the same documents searched from nothing, so the pairs taken
    # cover what the search visits
    io.write_table(pairs, tmp_path / "original_pairs.parquet", schemas.NEIGHBOUR_PAIRS)
    io.write_table(
        certificates, tmp_path / "original_certificates.parquet", schemas.NEIGHBOUR_CERTIFICATES
    )
    reused = [*forecast_args(paths, tmp_path / "with.json", shards=1, per_role=1000)]
    reused += [
        "--reuse-pairs",
        str(tmp_path / "original_pairs.parquet"),
        "--reuse-documents",
        str(paths["documents"]),
        "--reuse-certificates",
        str(tmp_path / "original_certificates.parquet"),
        "--reuse-splits",
        str(paths["splits"]),
    ]
    assert cli.main(reused) == 0
    assert cli.main(forecast_args(paths, tmp_path / "without.json", shards=1, per_role=1000)) == 0
    with_ = json.loads((tmp_path / "with.json").read_text())["measured"]
    without = json.loads((tmp_path / "without.json").read_text())["measured"]
    stats = search.SearchStats()
    known = reuse.known_pairs(pairs, inputs.doc_ids, "original")
    roles = query_roles(folds, inputs.empty, None)
    floors = reuse.certificate_floors(
        inputs.doc_ids, inputs.empty, roles, inputs.doc_ids, inputs.empty, roles, certificates, "o"
    )
    search.search_shard(inputs, folds, None, 0, 1, 1, stats, known, floors)
    assert with_["solves"] == stats.solves < without["solves"]
    assert with_["reused"] == stats.reused > 0 and without["reused"] == 0
    assert with_["floored"] == stats.floored > 0 and without["floored"] == 0


def test_bad_input_stops_with_one_line_and_no_file(tmp_path, capsys):
    _, _, _, paths = corpus(tmp_path)
    out = tmp_path / "wmd.json"
    assert cli.main(forecast_args(paths, out, shards=0)) == 1
    assert "shards must be >= 1" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".*tmp"))


def test_forecast_resources_before_and_with_a_forecast(tmp_path):
    path = tmp_path / "wmd.json"
    assert resources.forecast_resources(path, "1-of-1") is None  # a dry run
    path.write_text('{"forecast": {"shards": [{"shard": "1-of-1", "mem_mb": 700, "runtime": 9}]}}')
    assert resources.forecast_resources(path, "1-of-1") == {"mem_mb": 700, "runtime": 9}
    assert resources.forecast_resources(path, "1-of-1", attempt=3) == {
        "mem_mb": 2800,
        "runtime": 36,
    }
    with pytest.raises(WmdevalError, match=r"wmd.json: the forecast has no .* shard 2-of-4"):
        resources.forecast_resources(path, "2-of-4")
    path.write_text("{not json")
    with pytest.raises(WmdevalError, match="wmd.json: not a readable forecast"):
        resources.forecast_resources(path, "1-of-1")


def test_the_summary_table_covers_exactly_the_plans_forecasts(tmp_path, capsys):
    _, _, _, paths = corpus(tmp_path)
    original, clean = tmp_path / "original.json", tmp_path / "clean.json"
    assert cli.main(forecast_args(paths, original)) == 0
    assert cli.main(forecast_args(paths, clean, variant="clean")) == 0
    table = tmp_path / "cost_forecast.tsv"
    expect = json.dumps({"forecasts": ["tiny/original/wmd", "tiny/clean/wmd"]})
    argv = ["cost-forecast-table", "--forecasts", str(original), str(clean)]
    assert cli.main([*argv, "--expect", expect, "--out", str(table)]) == 0
    lines = [line.split("\t") for line in table.read_text().splitlines()]
    assert tuple(lines[0]) == forecast.TABLE_COLUMNS
    assert [row[:3] for row in lines[1:4]] == [
        ["tiny", "original", "wmd"],
        ["tiny", "clean", "wmd"],
        ["total", "", ""],
    ]
    # without --cores no wall rows; each method's wall time alone
    assert len(lines) == 4
    wall = forecast.TABLE_COLUMNS.index("wall_min")
    for row, path in zip(lines[1:3], (original, clean), strict=True):
        record = json.loads(path.read_text())
        assert float(row[wall]) == round(forecast.method_wall_seconds(record) / 60, 1)
    hours = [json.loads(p.read_text())["forecast"]["cpu_seconds"] / 3600 for p in (original, clean)]
    column = forecast.TABLE_COLUMNS.index("forecast_cpu_hours")
    assert math.isclose(float(lines[3][column]), round(sum(hours), 3))
    # a forecast the plan has but the inputs lack: one line, nothing written
    table.unlink()
    more = json.dumps({"forecasts": ["tiny/original/wmd", "tiny/clean/wmd", "tiny/clean/wrd"]})
    assert cli.main([*argv, "--expect", more, "--out", str(table)]) == 1
    assert "no forecast of tiny/clean/wrd" in capsys.readouterr().err
    assert not table.exists()
    # and one it does not plan
    fewer = json.dumps({"forecasts": ["tiny/original/wmd"]})
    assert cli.main([*argv, "--expect", fewer, "--out", str(table)]) == 1
    assert "clean.json: a forecast of tiny/clean/wmd" in capsys.readouterr().err
    # not a forecast
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    argv = ["cost-forecast-table", "--forecasts", str(bad), "--expect", fewer]
    assert cli.main([*argv, "--out", str(table)]) == 1
    assert "bad.json: not a forecast" in capsys.readouterr().err


def fake_record(dataset, variant, method, first, shards, threads=1):
    """A forecast's record as search_jobs reads it: its forecast job's CPU, its shards'."""
    return {
        "dataset": dataset,
        "variant": variant,
        "method": method,
        "threads": threads,
        "measured": {"cpu_seconds": first, "setup_cpu_seconds": 0.0},
        "forecast": {
            "cpu_seconds": first + sum(shards),
            "shards": [
                {"shard": f"{k}-of-{len(shards)}", "cpu_seconds": cpu}
                for k, cpu in enumerate(shards, start=1)
            ],
        },
    }


def test_the_searches_wall_time_by_hand():
    """The original's forecast (10 s), its shards (100 s, 60 s), their combining (10 s);
    the clean variant's search (reusing the original's pairs) only after that: forecast
    5 s, one 40 s shard, combining 10 s. One thread each (no speed-up model in play)."""
    from wmdeval.planning import plan, wall

    records = [
        fake_record("d", "original", "wmd", 10.0, [100.0, 60.0]),
        fake_record("d", "clean", "wmd", 5.0, [40.0]),
    ]
    jobs = plan.search_jobs(records, ["d/clean/wmd"])
    assert plan.OTHER_JOB_SECONDS == 10.0
    # chain: 10 + 100 + 10 + 5 + 40 + 10 = 175 s, on 2 cores or more
    for cores in (2, 64):
        assert wall.schedule(jobs, cores).wall == 175.0
    seconds, chain = wall.critical_path(jobs, 2)
    assert seconds == 175.0
    assert chain == [
        "wmd_forecast d/original/wmd",
        "wmd_search d/original/wmd/1-of-2",
        "wmd_neighbours d/original/wmd",
        "wmd_forecast d/clean/wmd",
        "wmd_search d/clean/wmd/1-of-1",
        "wmd_neighbours d/clean/wmd",
    ]
    # one core: the clean forecast has nothing to wait for without reuse, and runs first
    # or between; every job one after the other: 10 + 100 + 60 + 10 + 5 + 40 + 10 = 235
    assert wall.schedule(jobs, 1).wall == 235.0
    independent = plan.search_jobs(records)
    assert wall.schedule(independent, 2).wall == 120.0  # 10 + 100 + 10
    # 2 threads: the shards' and forecasts' CPU over speed-up(2) at the measured serial
    # share 0.03: 1 / (0.03 + 0.97 / 2) = 1 / 0.515
    assert wall.EXPECTED_SERIAL_SHARE == 0.03
    two = plan.search_jobs([fake_record("d", "original", "wmd", 10.0, [100.0], threads=2)])
    assert wall.schedule(two, 2).wall == pytest.approx(110 * 0.515 + 10)
    assert forecast.method_wall_seconds(
        fake_record("d", "original", "wmd", 10.0, [100.0, 60.0], threads=2)
    ) == pytest.approx(110 * 0.515)


def test_the_table_ends_with_the_searches_wall_time_per_core_count(tmp_path):
    records = [
        fake_record("d", "original", "wmd", 10.0, [100.0, 60.0]),
        fake_record("d", "clean", "wmd", 5.0, [40.0]),
    ]
    paths = []
    for r in records:
        path = tmp_path / f"{r['variant']}.json"
        record = {
            **r,
            "format": forecast.FORMAT,
            "documents": 10,
            "words_per_document": 5.0,
            "search_shards": len(r["forecast"]["shards"]),
        }
        record["measured"] = {
            **r["measured"],
            "queries": 10,
            "sampled_queries": 4,
            "solves_per_query": 3.0,
            "cpu_seconds_per_query": 1.0,
            "bounds_share": 0.5,
            "sharing": {"shared_share": 0.0},
        }
        record["forecast"] = {
            **r["forecast"],
            "solves": 30.0,
            "shards": [{**s, "runtime": 6, "mem_mb": 100} for s in r["forecast"]["shards"]],
        }
        path.write_text(json.dumps(record))
        paths.append(str(path))
    out = tmp_path / "cost_forecast.tsv"
    expect = json.dumps({"forecasts": ["d/original/wmd", "d/clean/wmd"], "reused": ["d/clean/wmd"]})
    argv = ["cost-forecast-table", "--forecasts", *paths, "--expect", expect]
    assert cli.main([*argv, "--cores", "1", "2", "1", "--out", str(out)]) == 0
    lines = [line.split("\t") for line in out.read_text().splitlines()]
    wall = forecast.TABLE_COLUMNS.index("wall_min")
    assert [row[:2] for row in lines[3:]] == [
        ["total", ""],
        ["searches_wall", "1 cores"],
        ["searches_wall", "2 cores"],
    ]
    # 235 s on one core, 175 s on two (test_the_searches_wall_time_by_hand)
    assert [row[wall] for row in lines[4:]] == [str(round(235 / 60, 1)), str(round(175 / 60, 1))]
    assert lines[5][2].startswith("wmd_forecast d/original/wmd > wmd_search d/original/wmd/1-of-2")
    assert cli.main([*argv, "--cores", "0", "--out", str(out)]) == 1


def test_a_plan_without_knn_datasets_gets_a_table_without_forecasts(tmp_path, capsys):
    """Every dataset in full mode: the rule passes no forecast; an empty table, not an
    argparse error."""
    out = tmp_path / "cost_forecast.tsv"
    argv = ["cost-forecast-table", "--forecasts", "--expect", '{"forecasts": [], "reused": []}']
    assert cli.main([*argv, "--cores", "2", "64", "--out", str(out)]) == 0
    lines = [line.split("\t") for line in out.read_text().splitlines()]
    assert tuple(lines[0]) == forecast.TABLE_COLUMNS
    assert [row[:3] for row in lines[1:]] == [
        ["total", "", ""],
        ["searches_wall", "2 cores", "-"],
        ["searches_wall", "64 cores", "-"],
    ]
    assert lines[1][forecast.TABLE_COLUMNS.index("forecast_cpu_hours")] == "0.0"


KNN_CONFIG = """\
run: [subjects]
variants: [original]
pca_dims: []
all_words: false
wmd:
  mode: knn
  search_shards: 2
  forecast_queries: 5
"""


def test_a_dry_run_plans_a_forecast_per_transport_method_and_the_summary(tmp_path):
    """The demo's subject lines in knn mode: a dry run plans a forecast per transport
    method, the summary table, and WMD's search jobs (which write RWMD's lists too). That
    every search job declares the runtime and mem_mb of its shard in its forecast is
    checked on a real knn run: test_workflow_small.py's
    test_search_jobs_request_what_the_forecast_says."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "knn.yaml").write_text(KNN_CONFIG)
    command = [sys.executable, "-m", "snakemake", "-s", str(repo / "Snakefile"), "--cores", "2"]
    command += ["--configfile", str(repo / "config" / "config.yaml"), "knn.yaml", "-n", "--"]
    command += ["results/tables/cost_forecast.tsv"] + [
        f"results/subjects/original/neighbour_shards/wmd/{k}-of-2.parquet" for k in (1, 2)
    ]
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    plan = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    counts = dict(
        line.split()[:2]
        for line in plan.stdout.splitlines()
        if line.split()[:1]
        in (["wmd_forecast"], ["cost_forecast"], ["wmd_search"], ["wmd_search_with_rwmd"])
    )
    # the demo lists RWMD: WMD's search jobs write its lists too
    assert counts == {"wmd_forecast": "3", "cost_forecast": "1", "wmd_search_with_rwmd": "2"}
    assert not (tmp_path / "results").exists()


def test_the_cost_forecast_job_runs_with_every_dataset_in_full_mode(tmp_path):
    """The demo (every dataset in full mode) asked for cost_forecast.tsv: the job has no
    forecast to read and writes the empty table with its wall rows (it stopped with an
    argparse error: --forecasts expected at least one argument)."""
    from workflow_helpers import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path / "w")
    run = snakemake(workdir, "--cores", "3", "results/tables/cost_forecast.tsv")
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    lines = (workdir / "results/tables/cost_forecast.tsv").read_text().splitlines()
    assert [line.split("\t")[:2] for line in lines[1:]] == [
        ["total", ""],
        ["searches_wall", "3 cores"],
        ["searches_wall", "2 cores"],
        ["searches_wall", "16 cores"],
        ["searches_wall", "64 cores"],
    ]
