"""Progress lines in a long job's log: how much is done, how fast, how long is left.

On a cluster a job's log (``results/logs/...``, its stderr) is all a user has to tell a
slow job from a stuck one. Every job that can run for minutes (the WMD search shards and
their forecast, WMD blocks, the dense embedding matrices, ``evaluate``, the analyses)
counts its work through one :class:`Progress`, which writes a line to the job's logger

- when the interval has passed since the last line (INTERVAL_VARIABLE, default
  DEFAULT_SECONDS), on the first item done after it, and
- when the last item is done (or :meth:`Progress.finish` is called), whatever the time:

    wmd_search shard 1/1: 1,210/7,674 queries (15.8%), 4.0 queries/s, 26m56s left;
    96,211 solves, 79.5 per query

One reporter serves all of a job's threads: counting and the clock check are under one
lock, and the time of the next line moves forward under it, so a job writes one line per
interval, not one per thread. Counting costs a lock and a monotonic clock read per call
(well under a microsecond), so callers count per query, per row or per fold, never per
inner step. Nothing here reads or changes what a job computes: its outputs are the same
bytes whatever the interval.

The interval is an environment variable, not a config key: it changes no result, and a
config key would make Snakemake rerun every job whose settings it reaches.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable

from .errors import WmdevalError

#: The environment variable that sets the seconds between two progress lines (0: a line
#: for every item counted, as the tests use).
INTERVAL_VARIABLE = "WMDEVAL_PROGRESS_SECONDS"

#: Seconds between two progress lines when INTERVAL_VARIABLE is not set.
DEFAULT_SECONDS = 30.0


def interval_seconds() -> float:
    """The interval set by INTERVAL_VARIABLE, else DEFAULT_SECONDS. A value that is not a
    finite number >= 0 is a WmdevalError (the job stops at its start, not after hours)."""
    text = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise WmdevalError(f"{INTERVAL_VARIABLE}={text!r}: expected seconds, a number >= 0")
    return value


def duration(seconds: float) -> str:
    """``42s``, ``12m05s``, ``3h07m12s``; ``unknown`` for an infinite or NaN time."""
    if not math.isfinite(seconds):
        return "unknown"
    whole = max(int(round(seconds)), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def rate_text(rate: float, unit: str) -> str:
    """Items per second, or per minute or hour when fewer than one a second."""
    if rate >= 100:
        return f"{rate:,.0f} {unit}/s"
    if rate >= 1:
        return f"{rate:.1f} {unit}/s"
    if rate * 60 >= 1:
        return f"{rate * 60:.1f} {unit}/min"
    return f"{rate * 3600:.2f} {unit}/h"


class Progress:
    """Counts a job's items and logs a progress line at most every ``interval`` seconds
    and once when all ``total`` are done. Thread-safe.

    ``log``: the job's logger (lines at INFO), or None to count without writing (a
    search inside another job's loop, whose own reporter speaks for it). ``what``: the
    line's subject (``wmd_search shard 1/4``); ``unit``: the items' plural (``queries``).
    ``detail(done)``: more to say, appended after a semicolon (the search's solves).
    ``interval``: seconds, :func:`interval_seconds` when None. ``clock``: seconds on a
    monotonic clock (tests give their own).
    """

    def __init__(
        self,
        log: logging.Logger | None,
        what: str,
        total: int,
        unit: str,
        *,
        detail: Callable[[int], str] | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.log = log
        self.what = what
        self.total = int(total)
        self.unit = unit
        self.detail = detail
        self.interval = interval_seconds() if interval is None else float(interval)
        self.clock = clock
        self.done = 0
        self.finished = False
        self._lock = threading.Lock()
        self.started = clock()
        self._due = self.started + self.interval

    def advance(self, count: int = 1) -> None:
        """``count`` more items are done; a line if one is due or all are done."""
        with self._lock:
            self.done += count
            if self.log is None or self.finished:
                return
            now = self.clock()
            if self.done >= self.total:
                self._final(now)
            elif now >= self._due:
                self._due = now + self.interval
                self.log.info("%s", self.line(now))

    def finish(self) -> None:
        """The final line, if the last item's count has not written it (a job that
        counted fewer items than it expected, or none of none)."""
        with self._lock:
            if self.log is not None and not self.finished:
                self._final(self.clock())

    def _final(self, now: float) -> None:
        self.finished = True
        self.log.info("%s", self.line(now, final=True))

    def line(self, now: float, final: bool = False) -> str:
        """The progress line at time ``now`` (``final``: the line that says all is done)."""
        elapsed = now - self.started
        if elapsed > 0:
            rate = self.done / elapsed
        else:  # no time measured yet (a clock that has not moved)
            rate = math.inf if self.done else 0.0
        shown = rate_text(rate, self.unit) if math.isfinite(rate) else f"- {self.unit}/s"
        share = 100.0 * self.done / self.total if self.total else 100.0
        head = f"{self.what}: {self.done:,}/{self.total:,} {self.unit} ({share:.1f}%)"
        if final:
            text = f"{head} done in {duration(elapsed)}, {shown}"
        else:
            left = (self.total - self.done) / rate if rate > 0 else math.inf
            text = f"{head}, {shown}, {duration(left)} left"
        if self.detail is not None:
            text += f"; {self.detail(self.done)}"
        return text


__all__ = ["INTERVAL_VARIABLE", "DEFAULT_SECONDS", "interval_seconds", "duration", "Progress"]
