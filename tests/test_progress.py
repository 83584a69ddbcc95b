"""Progress lines in a job's log (wmdeval.core.progress), on a clock the test moves."""

import logging
import threading

import pytest

from wmdeval.core import progress
from wmdeval.core.errors import WmdevalError


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
        "job 1/2: 25/100 queries (25.0%), 37.5 queries/min, 2m00s left; "
        "75 solves, 3.0 per query"
    ]
    clock.now += 29  # the next line is due 30 s after the last one
    p.advance(25)
    assert len(lines()) == 1
    clock.now += 1  # 70 s in: 50 done -> 0.714 a second, 50 left -> 70 s
    p.advance(0)
    assert lines()[-1] == (
        "job 1/2: 50/100 queries (50.0%), 42.9 queries/min, 1m10s left; "
        "150 solves, 3.0 per query"
    )
    clock.now += 5  # the last item: a line whatever the time, and only one
    p.advance(50)
    p.finish()
    assert lines()[-1] == (
        "job 1/2: 100/100 queries (100.0%) done in 1m15s, 1.3 queries/s; "
        "300 solves, 3.0 per query"
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
