"""Progress lines in a job's log (wmdeval.core.progress), on a clock the test moves."""

import logging
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from test_search import clustered, five_folds

from wmdeval.core import io, progress, schemas
from wmdeval.core.errors import WmdevalError
from wmdeval.distances.wmd import blocks, search, solver
from wmdeval.distances.wmd import pairs as pairs_plan


class Clock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def lines(caplog):
    caplog.set_level(logging.INFO, logger="test.progress")
    return lambda: [r.getMessage() for r in caplog.records if r.name == "test.progress"]


def reporter(clock, total=100, **options):
    options.setdefault("interval", 30.0)
    return progress.Progress(
        logging.getLogger("test.progress"), "job 1/2", total, "queries", clock=clock, **options
    )


def test_lines_by_hand(lines):
    clock = Clock()
    p = reporter(clock, detail=lambda done: f"{3 * done} solves, 3.0 per query")
    clock.now += 10
    p.advance(5)  # before the interval: counted, not written
    assert lines() == []
    clock.now += 30  # 40 s in: 25 done -> 0.625 a second, 75 left -> 120 s
    p.advance(20)
    assert lines() == [
        "job 1/2: 25/100 queries (25.0%), 37.5 queries/min, 2m00s left; 75 solves, 3.0 per query"
    ]
    clock.now += 29  # the next line is due 30 s after the last one
    p.advance(25)
    assert len(lines()) == 1
    clock.now += 1  # 70 s in: 50 done -> 0.714 a second, 50 left -> 70 s
    p.advance(0)
    assert lines()[-1] == (
        "job 1/2: 50/100 queries (50.0%), 42.9 queries/min, 1m10s left; 150 solves, 3.0 per query"
    )
    clock.now += 5  # the last item: a line whatever the time, and only one
    p.advance(50)
    p.finish()
    assert lines()[-1] == (
        "job 1/2: 100/100 queries (100.0%) done in 1m15s, 1.3 queries/s; 300 solves, 3.0 per query"
    )
    assert len(lines()) == 3


def test_finish_writes_the_last_line_of_a_job_that_counted_fewer(lines):
    clock = Clock()
    p = reporter(clock, total=0)
    clock.now += 3725
    p.finish()
    p.finish()
    assert lines() == ["job 1/2: 0/0 queries (100.0%) done in 1h02m05s, 0.00 queries/h"]


def test_nothing_done_yet_has_no_time_left(lines):
    clock = Clock()
    p = reporter(clock, total=7674, interval=0)
    clock.now += 2
    p.advance(0)
    assert lines() == ["job 1/2: 0/7,674 queries (0.0%), 0.00 queries/h, unknown left"]
    clock.now += 2
    p.advance(1234)  # 1,234 in 4 s; 6,440 left at 308.5 a second: 21 s
    assert lines()[-1] == "job 1/2: 1,234/7,674 queries (16.1%), 308 queries/s, 21s left"


def test_without_a_logger_it_counts_and_writes_nothing(caplog):
    caplog.set_level(logging.INFO)
    p = progress.Progress(None, "quiet", 3, "rows", interval=0)
    p.advance(3)
    p.finish()
    assert p.done == 3 and caplog.records == []


def test_many_threads_write_one_line_per_interval(lines):
    clock = Clock()
    p = reporter(clock, total=8 * 1000)
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(1000):
            p.advance()

    clock.now += 31  # every thread finds a line due; one writes it
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert p.done == 8000
    assert len(lines()) == 2  # the one due, then the last
    assert lines()[-1].startswith("job 1/2: 8,000/8,000 queries (100.0%) done in 31s")


@pytest.mark.parametrize(
    ("text", "seconds"), [(None, 30.0), ("", 30.0), ("0", 0.0), ("2.5", 2.5), (" 60 ", 60.0)]
)
def test_the_interval_comes_from_the_environment(monkeypatch, text, seconds):
    if text is None:
        monkeypatch.delenv(progress.INTERVAL_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(progress.INTERVAL_VARIABLE, text)
    assert progress.interval_seconds() == seconds
    assert progress.Progress(None, "x", 1, "rows").interval == seconds


@pytest.mark.parametrize("text", ["-1", "soon", "nan", "inf"])
def test_a_bad_interval_is_refused_in_one_line(monkeypatch, text):
    monkeypatch.setenv(progress.INTERVAL_VARIABLE, text)
    with pytest.raises(WmdevalError, match="WMDEVAL_PROGRESS_SECONDS"):
        progress.interval_seconds()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (42, "42s"), (725, "12m05s"), (11232, "3h07m12s"), (float("inf"), "unknown")],
)
def test_durations(seconds, text):
    assert progress.duration(seconds) == text


# --------------------------------------------------------------------------- real jobs

WMDEVAL = str(Path(sys.executable).parent / "wmdeval")
NUMBER = r"(\d[\d,]*)"


def count(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def job_corpus(tmp_path_factory):
    """300 clustered documents in five folds (test_search's): a search of all of them and
    a block of their 44,850 pairs take a few seconds each."""
    directory = tmp_path_factory.mktemp("corpus")
    docs, emb = clustered(300)
    paths = {
        "documents": directory / "documents.parquet",
        "splits": directory / "splits.parquet",
        "embeddings": directory / "embeddings.parquet",
    }
    io.write_table(docs, paths["documents"], schemas.DOCUMENTS)
    io.write_table(five_folds(300), paths["splits"], schemas.SPLITS)
    io.write_table(emb, paths["embeddings"])
    return docs, emb, paths


def run_job(arguments: list[str], log: Path) -> list[str]:
    """A wmdeval command as its rule runs it (stderr to its log), every progress line
    due at once: the job's log lines."""
    environment = {**os.environ, progress.INTERVAL_VARIABLE: "0"}
    with open(log, "w") as stderr:
        subprocess.run([WMDEVAL, *arguments], stderr=stderr, env=environment, check=True)
    return log.read_text().splitlines()


def progress_lines(lines: list[str], what: str, unit: str, detail: str = "") -> list[re.Match]:
    pattern = re.compile(
        rf"{re.escape(what)}: {NUMBER}/{NUMBER} {unit} \(([\d.]+)%\)"
        rf"(?:, [\d.,]+ {unit}/(?:s|min|h), (\w+) left| done in (\w+), [\d.,]+ {unit}/(?:s|min|h))"
        + detail
        + "$"
    )
    return [m for m in (pattern.search(line) for line in lines) if m]


def check_progress(found: list[re.Match], total: int) -> None:
    """Lines while the job ran (done/total, time left), counts rising, and a last line that
    says all of the total is done."""
    assert len(found) >= 3, found
    done = [count(m[1]) for m in found]
    assert {count(m[2]) for m in found} == {total}
    assert done == sorted(done) and 0 < done[0] < total
    for m in found[:-1]:
        assert m[4] is not None and count(m[1]) < total
        assert re.fullmatch(r"(\d+h)?(\d+m)?\d+s|unknown", m[4])
    last = found[-1]
    assert count(last[1]) == total and last[3] == "100.0" and last[5] is not None


def test_a_search_job_logs_its_progress(job_corpus, tmp_path):
    docs, emb, paths = job_corpus
    out = {"pairs": tmp_path / "pairs.parquet", "certificates": tmp_path / "c.parquet"}
    lines = run_job(
        [
            "wmd-search",
            "--documents",
            str(paths["documents"]),
            "--splits",
            str(paths["splits"]),
            "--embeddings",
            str(paths["embeddings"]),
            "--weighting",
            "bow",
            "--settings",
            "null",
            "--shard",
            "1-of-1",
            "--threads",
            "2",
            "--out-pairs",
            str(out["pairs"]),
            "--out-certificates",
            str(out["certificates"]),
        ],
        tmp_path / "1-of-1.log",
    )
    found = progress_lines(
        lines, "wmd_search shard 1/1", "queries", rf"; {NUMBER} solves, ([\d.]+) per query"
    )
    # the job's summary, its last line: as many queries and solves as the last progress line
    summary = re.search(r"shard 1/1: (\d+) queries, .* (\d+) exact solves", lines[-1])
    queries = int(summary[1])
    assert queries > 250  # the documents in a test set of some fold
    check_progress(found, queries)
    solves = [count(m[6]) for m in found]
    assert solves == sorted(solves) and solves[-1] == int(summary[2])
    assert float(found[-1][7]) == pytest.approx(solves[-1] / queries, abs=0.05)
    # and the lines change nothing: the tables of a search that writes none
    inputs = solver.prepare(docs, emb, "bow")
    folds = io.fold_indices(five_folds(300), inputs.doc_ids)
    pairs, certificates = search.search_shard(inputs, folds, None, 0, 1, report=None)
    assert io.read_table(out["pairs"]).equals(pairs)
    assert io.read_table(out["certificates"]).equals(certificates)


def test_a_block_job_logs_its_progress(job_corpus, tmp_path):
    docs, emb, paths = job_corpus
    out = tmp_path / "1-of-2.parquet"
    lines = run_job(
        [
            "wmd-block",
            "--documents",
            str(paths["documents"]),
            "--embeddings",
            str(paths["embeddings"]),
            "--weighting",
            "bow",
            "--block",
            "1-of-2",
            "--threads",
            "2",
            "--out",
            str(out),
        ],
        tmp_path / "1-of-2.log",
    )
    inputs = solver.prepare(docs, emb, "bow")
    start, stop = pairs_plan.plan_blocks(inputs.sizes, 2)[0]
    check_progress(progress_lines(lines, "wmd_block 1/2", "pairs"), stop - start)
    # and the lines change nothing
    expected = blocks.to_document_positions(
        solver.solve_block(inputs, 0, 2, report=None), np.arange(inputs.n)
    )
    assert io.read_table(out).equals(expected)
