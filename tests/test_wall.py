"""The plan's wall time (wmdeval.planning.wall): hand-made DAGs, hand-computed makespans."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wmdeval.core.errors import WmdevalError
from wmdeval.planning.wall import (
    EXPECTED_SERIAL_SHARE,
    Job,
    by_remaining,
    critical_path,
    describe_path,
    remaining_seconds,
    schedule,
    speedup,
    wall_summary,
)


def test_the_speed_up_is_amdahls_law():
    # 1 / (s + (1 - s) / t)
    assert speedup(1, 0.15) == 1.0
    assert speedup(2, 0.15) == pytest.approx(1 / 0.575)  # 1.739
    assert speedup(16, 0.15) == pytest.approx(1 / (0.15 + 0.85 / 16))  # 4.92
    assert speedup(16, 0.0) == pytest.approx(16.0)
    assert speedup(16, 1.0) == 1.0
    with pytest.raises(ValueError):
        speedup(0)
    with pytest.raises(ValueError):
        speedup(2, 1.5)


def test_a_chain_takes_the_sum_of_its_jobs():
    jobs = [Job("a", 10), Job("b", 20, after=("a",)), Job("c", 5, after=("b",))]
    plan = schedule(jobs, 4, serial_share=0.0)
    assert plan.wall == 35.0
    assert plan.start == {"a": 0.0, "b": 10.0, "c": 30.0}
    assert critical_path(jobs, 4, 0.0) == (35.0, ["a", "b", "c"])


def test_a_fan_out_wider_than_the_cores_runs_in_waves():
    # r (1 s), then five 10 s jobs on 2 cores: [1, 11], [11, 21], [21, 31]
    jobs = [Job("r", 1)] + [Job(f"x{k}", 10, after=("r",)) for k in range(5)]
    plan = schedule(jobs, 2)
    assert plan.wall == 31.0
    assert [plan.start[f"x{k}"] for k in range(5)] == [1.0, 1.0, 11.0, 11.0, 21.0]
    assert critical_path(jobs, 2) == (11.0, ["r", "x0"])
    # enough cores: the critical path is the wall time
    assert schedule(jobs, 8).wall == 11.0


def test_a_diamond_waits_for_its_longer_side():
    jobs = [
        Job("a", 2),
        Job("b", 10, after=("a",)),
        Job("c", 4, after=("a",)),
        Job("d", 1, after=("b", "c")),
    ]
    assert schedule(jobs, 2).wall == 13.0
    # one core: b and c one after the other (b first, as listed)
    one = schedule(jobs, 1)
    assert one.wall == 17.0 and one.start["c"] == 12.0
    assert critical_path(jobs, 1) == (13.0, ["a", "b", "d"])


def test_a_job_with_more_threads_than_cores_runs_with_the_cores():
    job = Job("search", 100.0, threads=4)
    # 2 cores: 100 / speed-up(2) = 100 x 0.575 = 57.5 s
    assert schedule([job], 2, 0.15).wall == pytest.approx(57.5)
    # 4 cores: 100 x (0.15 + 0.85 / 4) = 36.25 s
    assert schedule([job], 4, 0.15).wall == pytest.approx(36.25)
    assert schedule([job], 64, 0.15).wall == pytest.approx(36.25)
    # a job whose threads do not share its work
    assert schedule([Job("rwmd", 100.0, threads=4, scales=False)], 4).wall == 100.0


def test_the_widest_ready_job_starts_first_and_priority_before_that():
    # 2 cores: the two-thread job first (uses both), then the two one-thread jobs
    jobs = [Job("one", 10), Job("two", 10), Job("wide", 10, threads=2)]
    plan = schedule(jobs, 2, serial_share=0.0)
    assert plan.start == {"wide": 0.0, "one": 5.0, "two": 5.0}
    assert plan.wall == 15.0
    first = [Job("one", 10, priority=1), Job("wide", 10, threads=2)]
    plan = schedule(first, 2, serial_share=0.0)
    assert plan.start == {"one": 0.0, "wide": 10.0} and plan.wall == 15.0


def test_each_jobs_remaining_chain_by_hand():
    # a -> b -> d, a -> c -> d: a's chain is a + the longer of b, c + d
    jobs = [
        Job("a", 2),
        Job("b", 5, after=("a",)),
        Job("c", 1, after=("a",)),
        Job("d", 3, after=("b", "c")),
        Job("lone", 4),
    ]
    assert remaining_seconds(jobs, 4, 0.0) == {"a": 10, "b": 8, "c": 4, "d": 3, "lone": 4}
    # at the job's wall time: a two-thread job on 2 cores takes 10 / 1.739... s
    wide = [Job("w", 10, threads=2), Job("z", 1, after=("w",))]
    assert remaining_seconds(wide, 2, 0.15)["w"] == pytest.approx(10 / speedup(2, 0.15) + 1)
    # as priorities: whole seconds, and a higher priority of its own kept (--prioritize)
    ranked = by_remaining([*jobs[:4], Job("lone", 4, priority=1000)], 4, 0.0)
    assert [job.priority for job in ranked] == [10, 8, 4, 3, 1000]


def test_the_longest_remaining_chain_starts_first():
    # 2 cores: the chain a -> c (11 s) against two 5 s jobs listed first. In the order
    # given, x1 and x2 take both cores and the chain ends at 5 + 1 + 10 = 16 s; started
    # by their remaining chain (as the workflow's priorities make Snakemake start them),
    # a and then c run at once beside x1 and x2: 11 s, the critical path
    jobs = [Job("x1", 5), Job("x2", 5), Job("a", 1), Job("c", 10, after=("a",))]
    assert schedule(jobs, 2, 0.0).wall == 16.0
    plan = schedule(by_remaining(jobs, 2, 0.0), 2, 0.0)
    assert plan.start == {"a": 0.0, "x1": 0.0, "c": 1.0, "x2": 5.0} and plan.wall == 11.0
    assert wall_summary(jobs, [2], 0.0)[0]["wall_seconds"] == 11.0


def test_the_expected_serial_share_is_the_measured_one():
    """EXPECTED_SERIAL_SHARE: Amdahl's share of the recorded two-worker speed-up."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "thread_scaling.json"
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    assert figures["workers"] == 2
    assert EXPECTED_SERIAL_SHARE == round(2 / figures["speedup"] - 1, 2)


def test_the_summary_per_core_count():
    jobs = [Job("r", 1)] + [Job(f"x{k}", 10, after=("r",)) for k in range(5)]
    rows = wall_summary(jobs, [2, 8, 2])
    assert [row["cores"] for row in rows] == [2, 8]
    assert rows[0]["wall_seconds"] == 31.0 and rows[1]["wall_seconds"] == 11.0
    assert rows[0]["critical_path"] == ["r", "x0"] and rows[0]["critical_seconds"] == 11.0
    assert rows[0]["longest_job"] == "x0" and rows[0]["longest_job_seconds"] == 10.0
    assert rows[0]["cpu_seconds"] == 51.0
    assert wall_summary([], [4]) == [
        {
            "cores": 4,
            "wall_seconds": 0.0,
            "critical_seconds": 0.0,
            "critical_path": [],
            "longest_job": "",
            "longest_job_seconds": 0.0,
            "cpu_seconds": 0,
        }
    ]


def test_the_wall_time_is_bounded_by_the_path_and_the_work():
    """On random DAGs: wall >= critical path >= longest job; wall >= work / cores;
    every job starts after those it waits for; the path is a chain of them."""
    import random

    rng = random.Random(3)
    for _ in range(50):
        jobs = []
        for k in range(rng.randint(1, 25)):
            picks = rng.randint(0, 2) if k else 0
            after = tuple(sorted({f"j{rng.randrange(k)}" for _ in range(picks)}))
            jobs.append(Job(f"j{k}", rng.uniform(0, 50), rng.choice([1, 1, 2, 4]), after))
        for cores in (1, 2, 3, 16):
            plan = schedule(jobs, cores)  # at EXPECTED_SERIAL_SHARE
            path, chain = critical_path(jobs, cores)
            share = EXPECTED_SERIAL_SHARE
            longest = max(job.wall(cores, share) for job in jobs)
            work = sum(job.wall(cores, share) * job.cores(cores) for job in jobs)
            assert plan.wall >= path - 1e-9 >= longest - 2e-9
            assert plan.wall >= work / cores - 1e-9
            for job in jobs:  # every job after those it waits for
                assert all(plan.start[job.name] >= plan.end[a] for a in job.after)
            by_name = {job.name: job for job in jobs}
            assert all(b in by_name[a].after for a, b in zip(chain[1:], chain, strict=False))


def test_bad_plans_stop_with_one_line():
    with pytest.raises(WmdevalError, match="'b' waits for unknown 'z'"):
        schedule([Job("a", 1), Job("b", 1, after=("z",))], 2)
    with pytest.raises(WmdevalError, match="listed twice"):
        schedule([Job("a", 1), Job("a", 1)], 2)
    with pytest.raises(WmdevalError, match="cycle"):
        schedule([Job("a", 1, after=("b",)), Job("b", 1, after=("a",))], 2)
    with pytest.raises(WmdevalError, match="cores must be >= 1"):
        schedule([Job("a", 1)], 0)


def test_a_long_path_is_described_in_one_line():
    assert describe_path(["a", "b"]) == "a > b"
    chain = [f"j{k}" for k in range(10)]
    assert describe_path(chain, 6) == "j0 > j1 > j2 > (4 more) > j7 > j8 > j9"
    assert describe_path(chain) == " > ".join(chain)


def test_each_jobs_expected_time_by_hand(tmp_path):
    """planning/plan.py: the planning model before any file exists, the forecast's
    figures once it does."""
    import json

    from wmdeval.planning import plan

    wmd = {"forecast_queries": 30}
    absent = {"forecast": str(tmp_path / "absent.json"), "documents": str(tmp_path / "no.parquet")}
    search = {"dataset": "d", "variant": "original", "method": "wmd", "shard": "2-of-4"}
    # 0.025 s x 18,821 documents / 4 shards + a shard's fixed 2 s and 0.23 ms per document
    seconds, scales, source = plan.job_seconds("wmd_search", search, absent, 18_821, wmd)
    expected = 0.025 * 18_821 / 4 + 2.0 + 2.3e-4 * 18_821
    assert seconds == pytest.approx(expected) and scales and source == "model"
    # the forecast's shard once it exists
    forecast = tmp_path / "wmd.json"
    shards = [{"shard": f"{k}-of-4", "cpu_seconds": 10.0 * k} for k in range(1, 5)]
    measured = {"cpu_seconds": 7.0, "setup_cpu_seconds": 2.0}
    forecast.write_text(json.dumps({"forecast": {"shards": shards}, "measured": measured}))
    inputs = {**absent, "forecast": str(forecast)}
    assert plan.job_seconds("wmd_search_with_rwmd", search, inputs, 18_821, wmd) == (
        20.0,
        True,
        "forecast",
    )
    with pytest.raises(WmdevalError, match="no shard 2-of-3"):
        plan.job_seconds("wmd_search", {**search, "shard": "2-of-3"}, inputs, 10, wmd)
    # a forecast job: 4 x 30 queries at 0.15 s and a shard's fixed cost; measured: 7 + 2 s
    at = {"dataset": "d", "variant": "v", "method": "m"}
    assert plan.job_seconds("wmd_forecast", at, {}, None, wmd)[:2] == (4 * 30 * 0.15 + 2.0, True)
    assert plan.job_seconds("wmd_forecast", at, {}, 1000, wmd)[0] == pytest.approx(18 + 2.23)
    assert plan.forecast_seconds(forecast, 30) == (9.0, True)
    # a block of 64 before its documents exist: 1,000 documents' pairs at 0.3 ms
    block = {"dataset": "d", "variant": "v", "method": "wmd", "block": "3-of-64"}
    seconds, scales, source = plan.job_seconds("wmd_sample_block", block, absent, 1000, wmd)
    assert seconds == pytest.approx(0.3e-3 * 1000 * 999 / 2 / 64) and scales
    # ... and with 69.3 distinct words per document planned (20 Newsgroups in the paper):
    # the block plan's work model of a pair, (u^1.1)^2 + 350 units of 0.023 us
    seconds = plan.job_seconds("wmd_block", block, absent, 1000, wmd, 69.3)[0]
    per_pair = ((69.3**1.1) ** 2 + 350) * 0.023e-6
    assert per_pair == pytest.approx(0.266e-3, rel=1e-3)
    assert seconds == pytest.approx(per_pair * 1000 * 999 / 2 / 64)
    # evaluate: 2 s, and per entry of the 1,000 x 1,000 matrix 0.13 us and 0.12 us per
    # fold: the planned folds, five if unknown, the splits file's once it exists
    at = {"dataset": "d"}
    assert plan.job_seconds("evaluate", at, absent, 1000, wmd, None, 1)[:2] == (
        pytest.approx(2.0 + (1.3e-7 + 1.2e-7) * 1e6),
        False,
    )
    five = pytest.approx(2.0 + (1.3e-7 + 5 * 1.2e-7) * 1e6)
    assert plan.job_seconds("evaluate", at, absent, 1000, wmd)[0] == five
    splits = tmp_path / "splits.parquet"
    pq.write_table(pa.table({"fold": pa.array([0, 0, 1, 2], pa.int16())}), splits)
    documents = tmp_path / "documents.parquet"
    pq.write_table(pa.table({"doc_id": list(range(500))}), documents)
    written = {"documents": str(documents), "splits": str(splits)}
    assert plan.job_seconds("evaluate", at, written, 1000, wmd, None, 1)[0] == pytest.approx(
        2.0 + (1.3e-7 + 3 * 1.2e-7) * 500 * 500
    )
    assert plan.job_seconds("evaluate", at, {}, None, wmd) == (10.0, False, "other")
    # a dense matrix: 2 s and 0.11 us per entry, not divided by its threads
    dense = plan.job_seconds("embedding_matrix", {"embedding_method": "wcd"}, absent, 1000, wmd)
    assert dense == (pytest.approx(2.0 + 1.1e-7 * 1000 * 1000), False, "model")
    assert plan.job_seconds("sample_embedding_matrix", at, written, 1000, wmd)[0] == pytest.approx(
        2.0 + 1.1e-7 * 500 * 500
    )
    # everything else, and the target rule
    assert plan.job_seconds("ingest_kusner", {"dataset": "d"}, {}, 1000, wmd) == (
        10.0,
        False,
        "other",
    )
    assert plan.job_seconds("all", {}, {}, None, wmd) == (0.0, False, "other")
    assert plan.job_name("wmd_search", search) == "wmd_search d/original/wmd/2-of-4"
    assert plan.job_name("tables", {}) == "tables"


def _paper_rows() -> dict:
    """benchmarks/results/paper_cost.json's plan rows by dataset, with each dataset's
    documents and folds as planned (its .mat file in config/paper.yaml)."""
    import json
    from pathlib import Path

    import yaml

    from wmdeval.planning import modes

    repo = Path(__file__).resolve().parents[1]
    path = repo / "benchmarks" / "results" / "paper_cost.json"
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]["plan"]
    paper = yaml.safe_load((repo / "config" / "paper.yaml").read_text(encoding="utf-8"))
    rows = {}
    for values in figures["rows"]:
        row = dict(zip(figures["header"], values, strict=True))
        if row["dataset"] == "all":
            continue
        member = paper["datasets"][row["dataset"]]["member"]
        row["documents"] = modes.KUSNER_DOCUMENTS[member]
        row["folds"] = modes.KUSNER_FOLDS[member]
        row["words"] = modes.KUSNER_WORDS[member]
        rows[row["dataset"]] = row
    assert len(rows) == 8
    return rows


def test_the_planned_search_rate_is_the_recorded_forecasts():
    """PLANNED_SEARCH_SECONDS_PER_DOCUMENT: paper_cost.json's knn transport (one shard
    per search) less what it counts that the plan counts on its own (each knn dataset's 5
    sample matrices of 1,000 documents by their model, its 8 forecast jobs by theirs, and
    each of its 8 searches' one shard's fixed cost), per document of the knn datasets, 4
    methods and 2 variants, rounded up to 0.001 s."""
    import math

    from wmdeval.planning import plan

    knn = [row for row in _paper_rows().values() if row["mode"] == "knn"]
    documents = sum(row["documents"] for row in knn)
    samples = sum(5 * 1000 * 999 / 2 * plan.planned_pair_seconds(row["words"]) for row in knn)
    forecasts = sum(8 * plan.forecast_seconds(None, 30, row["documents"])[0] for row in knn)
    fixed = sum(8 * plan.shard_fixed_seconds(row["documents"]) for row in knn)
    transport = sum(row["transport CPU h"] for row in knn) * 3600
    rate = (transport - samples - forecasts - fixed) / (documents * 8)
    assert 0.024 < rate < 0.025
    assert plan.PLANNED_SEARCH_SECONDS_PER_DOCUMENT == math.ceil(rate * 1000) / 1000


def test_a_shards_fixed_cost_is_the_measured_one():
    """SHARD_START_SECONDS and SHARD_SECONDS_PER_DOCUMENT: thread_scaling.json's shard of
    20 Newsgroups (18,846 posts) as two one-worker processes against one: the second
    process's extra search CPU per document, and each process's start-up, to 2 digits."""
    import json
    from pathlib import Path

    from wmdeval.planning import plan

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "thread_scaling.json"
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    one = next(row for row in figures["rows"] if row["workers"] == 1)
    processes = figures["processes"]
    assert processes["processes"] == 2
    per_document = (processes["search_cpu_s"] - one["cpu_s"]) / 18_846
    start = (processes["cpu_s"] - processes["search_cpu_s"]) / processes["processes"]
    assert plan.SHARD_SECONDS_PER_DOCUMENT == float(f"{per_document:.1e}")
    assert plan.SHARD_START_SECONDS == round(start, 1)
    assert plan.shard_fixed_seconds(18_846) == pytest.approx(2.0 + 2.3e-4 * 18_846)
    assert plan.shard_fixed_seconds(None) == 2.0


def test_the_dense_and_evaluate_models_are_fitted_to_the_recorded_costs():
    """DENSE_* and EVALUATE_*: least squares over paper_cost.json's eight datasets, to 2
    digits. Dense: per variant WCD and the cosine at n documents, and RWMD's matrix at n
    (full mode) or of the 1,000-document sample (knn mode), each a + b n^2. Evaluate: per
    variant a + (b + folds c) n^2. Each dataset's fit within 10 s of its figure."""
    import numpy as np

    from wmdeval.planning import plan

    rows = _paper_rows()
    dense, dense_cpu, evaluate, evaluate_cpu = [], [], [], []
    for row in rows.values():
        n, folds = row["documents"], row["folds"]
        sizes = [n, n, n] if row["mode"] == "full" else [n, n, min(n, 1000)]
        dense.append([2 * len(sizes), 2 * sum(s * s for s in sizes)])
        dense_cpu.append(row["dense CPU h"] * 3600)
        evaluate.append([2, 2 * n * n, 2 * folds * n * n])
        evaluate_cpu.append(row["evaluate CPU h"] * 3600)
    fits = {}
    for name, a, y in (("dense", dense, dense_cpu), ("evaluate", evaluate, evaluate_cpu)):
        fits[name] = np.linalg.lstsq(np.array(a, float), np.array(y), rcond=None)[0]
    a, b = fits["dense"]
    assert plan.DENSE_JOB_SECONDS == round(a, 1)
    assert plan.DENSE_SECONDS_PER_ENTRY == float(f"{b:.1e}")
    a, b, c = fits["evaluate"]
    assert plan.EVALUATE_JOB_SECONDS == round(a, 1)
    assert plan.EVALUATE_SECONDS_PER_ENTRY == float(f"{b:.1e}")
    assert plan.EVALUATE_SECONDS_PER_FOLD_ENTRY == float(f"{c:.1e}")
    # the rounded constants, as the plan uses them, per dataset
    for row, x, y in zip(rows.values(), dense, dense_cpu, strict=True):
        modelled = plan.DENSE_JOB_SECONDS * x[0] + plan.DENSE_SECONDS_PER_ENTRY * x[1]
        assert abs(modelled - y) < 10, row["dataset"]
    for row, x, y in zip(rows.values(), evaluate, evaluate_cpu, strict=True):
        modelled = (
            plan.EVALUATE_JOB_SECONDS * x[0]
            + plan.EVALUATE_SECONDS_PER_ENTRY * x[1]
            + plan.EVALUATE_SECONDS_PER_FOLD_ENTRY * x[2]
        )
        assert abs(modelled - y) < 10, row["dataset"]


def test_auto_search_shards_by_hand():
    from wmdeval.planning import plan

    # the paper plan's knn datasets, 2 threads: 0.025 x 18,821 = 470.5 s of search; each
    # job at most 120 s of wall: 120 x speed-up(2) = 208.7 s of CPU, less a shard's fixed
    # 2 + 0.23 ms x 18,821 = 6.3 s: 470.5 / 202.4 = 2.32 -> 3 shards
    paper = [3108, 4370, 9152, 7093, 7674, 8000, 18_821]
    assert plan.search_shard_count("auto", paper, 2)[0] == 3
    assert "18,821 documents" in plan.search_shard_count("auto", paper, 2)[1]
    # one thread: 470.5 / (120 - 6.3) = 4.1 -> 5
    assert plan.search_shard_count("auto", paper, 1)[0] == 5
    assert plan.search_shard_count("auto", [200, None], 1)[0] == 1
    assert plan.search_shard_count("auto", [None], 4) == (
        1,
        "auto: no dataset in knn mode of known size",
    )
    assert plan.search_shard_count(3, paper, 2) == (3, "set in config")


def test_auto_list_shards_by_hand():
    from wmdeval.planning import plan, resources

    # knn mode's neighbour lists of WCD, the cosine, vectors: 0.13 us per entry of n x n,
    # each job at most 120 s less its 2 s: 20 Newsgroups' 18,821 documents 46 s -> 1
    assert plan.listed_shard_count("auto", 18_821)[0] == 1
    # 85,635 passages: 1.3e-7 x 85,635^2 = 953 s over 118 s -> 9
    assert plan.listed_shard_count("auto", 85_635) == (
        9,
        "auto: 85,635 documents, at most 2 min a job",
    )
    assert plan.listed_shard_count("auto", None) == (1, "size unknown")
    # a dataset in knn mode that lists none of them (the paper's 14 methods alone)
    assert plan.listed_shard_count("auto", 85_635, set()) == (1, "no method listed")
    assert plan.listed_shard_count(4, 85_635) == (4, "set in config")
    # the costliest listed method decides: document vectors, 2.4e-7 an entry -> 15;
    # RWMD (listed without WMD) adds 1 us per document and planned word (50,000) -> 45
    assert plan.listed_shard_count("auto", 85_635, {"wcd", "vectors"})[0] == 15
    assert plan.listed_shard_count("auto", 85_635, {"rwmd"})[0] == 45
    # each of the 9 is planned within the 2 minutes
    assert resources.listed_seconds(None, "wcd", 9, 85_635) <= 120
    # and the plan reads a shard's expected time from its wildcards
    at = {"dataset": "d", "variant": "original", "listed_embedding": "wcd", "shard": "2-of-9"}
    seconds = plan.job_seconds("embedding_neighbours", at, {}, 85_635, {})
    assert seconds == (pytest.approx(2.0 + 1.3e-7 * 85_635**2 / 9), False, "model")
    vectors = {"dataset": "d", "variant": "original", "shard": "1-of-1"}
    assert plan.job_seconds("vector_neighbours", vectors, {}, 1000, {})[0] == pytest.approx(
        2.0 + 2.4e-7 * 1000**2
    )


def test_a_training_jobs_expected_time_by_hand(tmp_path):
    """planning/plan.py: train_embeddings from the bytes of the texts it trains on (a
    file's size, a Parquet table's uncompressed bytes), its epochs and its shape against
    the measured 50 x 5; no model while a text is missing (a download not done yet), or
    for an embedding that is not trained."""
    from wmdeval.planning import plan

    table = tmp_path / "texts.tsv"
    table.write_text("label\ttext\n" + "a\tone two three\n" * 1000)
    size = table.stat().st_size
    spec = {"format": "train-word2vec", "epochs": 20, "vector_size": 50, "window": 5}
    at = {"trained": "w2v"}
    seconds, scales, source = plan.job_seconds(
        "train_embeddings", at, {"texts": [str(table)]}, None, {}, embedding=spec
    )
    assert seconds == pytest.approx(2.0 + 0.8e-6 * size * 20) and source == "model"
    assert not scales  # one worker: its threads cannot share the work
    # twice the vector size and twice the window: four times the work per byte and epoch
    bigger = {**spec, "vector_size": 100, "window": 10}
    assert plan.training_seconds([str(table)], bigger) == pytest.approx(2.0 + 3.2e-6 * size * 20)
    # two files add up
    assert plan.training_seconds([str(table)] * 2, spec) == pytest.approx(2.0 + 1.6e-6 * size * 20)
    # Parquet: the uncompressed bytes its footer records, not the compressed file's
    texts = pa.table({"text": [f"word{i} " * 200 for i in range(500)], "label": ["x"] * 500})
    pq.write_table(texts, tmp_path / "texts.parquet", compression="zstd")
    meta = pq.ParquetFile(tmp_path / "texts.parquet").metadata
    raw = sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
    assert raw > 500_000 > 50_000 > (tmp_path / "texts.parquet").stat().st_size
    assert plan.text_bytes([str(tmp_path / "texts.parquet")]) == raw
    # not there yet, or not trained: not forecast individually
    missing = {"texts": [str(tmp_path / "absent.tsv")]}
    assert plan.job_seconds("train_embeddings", at, missing, None, {}, embedding=spec) == (
        plan.OTHER_JOB_SECONDS,
        False,
        "other",
    )
    assert plan.job_seconds("train_embeddings", at, {"texts": [str(table)]}, None, {})[2] == (
        "other"
    )


#: The paper's 14 methods in table order, as slugs, and which a knn-mode evaluation reads
#: from neighbour tables (WMD and WMD-TF-IDF).
PAPER_SLUGS = [
    "bow-l1-l1",
    "tfidf-l1-l1",
    "wmd",
    "wmd-tfidf",
    *(f"{w}-{p}" for w in ("bow", "tfidf") for p in ("none-l2", "none-l1")),
    *(f"{w}-{p}" for w in ("bow",) for p in ("l1-l2", "l2-l1", "l2-l2")),
    *(f"tfidf-{p}" for p in ("l1-l2", "l2-l1", "l2-l2")),
]
PAPER_LISTED = [slug.startswith("wmd") for slug in PAPER_SLUGS]


def test_auto_evaluate_parts_keeps_every_paper_dataset_whole_and_cuts_the_passages():
    from pathlib import Path

    import yaml

    from wmdeval.planning import plan
    from wmdeval.planning.modes import planned_documents, planned_folds

    paper = yaml.safe_load((Path(__file__).parents[1] / "config" / "paper.yaml").read_text())
    for name, spec in paper["datasets"].items():
        n, folds = planned_documents(spec)[0], planned_folds(spec)
        # the paper plan's 18 methods, 6 listed in knn mode (all but bbcsport)
        listed = [False] * 12 + [name != "bbcsport"] * 6
        seconds = plan.evaluate_part_seconds(listed, n, folds)
        assert seconds <= plan.AUTO_EVALUATE_SECONDS, name
        parts, _ = plan.evaluate_parts("auto", list(map(str, range(18))), listed, n, folds)
        assert len(parts) == 1, name
    # 85,635 passages, one fold: each baseline alone (1/18 of 0.25 us x n^2 = 102 s, above
    # the 90 s less a part's fixed cost), WMD and WMD-TF-IDF, read from their neighbour
    # tables, together apart from the baselines: 13 parts, in table order
    parts, why = plan.evaluate_parts("auto", PAPER_SLUGS, PAPER_LISTED, 85_635, 1)
    assert len(parts) == 13 and sum(parts, []) == PAPER_SLUGS
    assert ["wmd", "wmd-tfidf"] in parts and all(len(p) == 1 for p in parts if "wmd" not in p)
    assert why.startswith("auto: 85,635 documents, 14 methods")
    # the whole evaluation is planned 20 min, each part about 2 at most
    whole = plan.evaluate_part_seconds(PAPER_LISTED, 85_635, 1)
    largest = max(
        plan.evaluate_part_seconds([PAPER_LISTED[PAPER_SLUGS.index(s)] for s in p], 85_635, 1)
        for p in parts
    )
    assert largest < whole / 10 and largest <= 2.1 * 60
    # a number: the runs of least cost at most, never more parts than methods
    parts, why = plan.evaluate_parts(3, PAPER_SLUGS, PAPER_LISTED, 85_635, 1)
    assert (len(parts), why) == (3, "set in config") and sum(parts, []) == PAPER_SLUGS
    assert len(plan.evaluate_parts(99, PAPER_SLUGS, PAPER_LISTED, 85_635, 1)[0]) == 14
    assert plan.evaluate_parts("auto", PAPER_SLUGS, PAPER_LISTED, None, 1) == (
        [PAPER_SLUGS],
        "auto: size unknown",
    )


def test_an_evaluate_job_is_priced_by_its_methods():
    from wmdeval.planning import plan

    # one baseline from an n x n source: 2 s, 0.17 ms a document, 1/18 of the n^2 terms
    n, folds = 10_000, 5
    baseline = (plan.EVALUATE_SECONDS_PER_ENTRY + 5 * plan.EVALUATE_SECONDS_PER_FOLD_ENTRY) / 18
    assert plan.job_seconds("evaluate_part", {}, {}, n, {}, None, folds, [False]) == (
        pytest.approx(
            plan.EVALUATE_JOB_SECONDS + plan.EVALUATE_SECONDS_PER_DOCUMENT * n + baseline * n * n
        ),
        False,
        "model",
    )
    # the paper plan's 18 methods from n x n sources: the fitted whole job, and its per
    # document part
    whole = plan.job_seconds("evaluate", {}, {}, n, {}, None, folds)[0]
    priced = plan.job_seconds("evaluate", {}, {}, n, {}, None, folds, [False] * 18)[0]
    assert priced == pytest.approx(whole + plan.EVALUATE_SECONDS_PER_DOCUMENT * n)
    # a method read from its neighbour table costs per document, not per entry
    listed = plan.job_seconds("evaluate_part", {}, {}, n, {}, None, folds, [True])[0]
    assert listed == pytest.approx(
        plan.EVALUATE_JOB_SECONDS
        + (plan.EVALUATE_SECONDS_PER_DOCUMENT + plan.EVALUATE_SECONDS_PER_LISTED_DOCUMENT) * n
    )


def test_the_training_model_is_the_whole_runs_measured_job():
    """TRAIN_SECONDS_PER_BYTE_EPOCH against the recorded whole run of the passages
    (benchmarks/results/scale_run.json, made with scale_run.CONFIG's Word2Vec: 50 x 5, 20
    epochs): its train_embeddings job's CPU within 15 % of the model for the table it
    trained on."""
    import json
    from pathlib import Path

    from wmdeval.planning import plan

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "scale_run.json"
    figures = json.loads(path.read_text(encoding="utf-8"))["figures"]
    header, rows = figures["table"]["header"], figures["table"]["rows"]
    row = next(r for r in rows if r[0] == "train_embeddings")
    measured = row[header.index("max CPU s")]
    spec = {"format": "train-word2vec", "epochs": 20, "vector_size": 50, "window": 5}
    modelled = (
        plan.TRAIN_JOB_SECONDS
        + plan.TRAIN_SECONDS_PER_BYTE_EPOCH * figures["corpus_bytes"] * spec["epochs"]
    )
    assert abs(modelled / measured - 1) < 0.15, (modelled, measured)
