"""How long a plan takes on a given number of cores, before it runs.

Pure functions over a list of :class:`Job` (a name, its CPU seconds, its threads, the
jobs it waits for), scheduled the way Snakemake schedules local jobs:

* **the speed-up of threads** (:func:`speedup`): Amdahl's law with one serial share for
  every job whose work its threads share: :data:`EXPECTED_SERIAL_SHARE`, as measured, for
  the expected wall time; :data:`SEARCH_SERIAL_SHARE`, larger, for every runtime
  declaration that divides a job's CPU by its threads (:mod:`wmdeval.planning.forecast`,
  :mod:`wmdeval.planning.resources`), so that a job is declared longer rather than
  shorter than it runs. A job that asks for more threads than there are cores runs with
  the cores (Snakemake scales it down);
* **the schedule** (:func:`schedule`): a list scheduler. Whenever cores are free, ready
  jobs (every job they wait for finished) start. Snakemake's default scheduler (``ilp``,
  Snakemake 9) picks among the ready jobs first by priority, then so as to use as many
  cores as possible; here that is approximated by the highest priority first, then first
  fit in decreasing threads (the widest ready job that fits first), ties in the order of
  the jobs given. The workflow gives every job the priority :func:`by_remaining` says:
  the expected time from its start to the plan's end (``workflow/rules/common.smk``). The
  schedule ignores what Snakemake weighs after that (temporary files, input sizes),
  memory (local runs limit only cores unless ``--resources`` says otherwise) and the
  start-up gaps between jobs;
* **the critical path** (:func:`critical_path`): the longest chain of jobs, each waiting
  for the one before, at their times on those cores: no schedule is shorter, so the wall
  time is at least its length, and at least the longest single job.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from ..core.errors import WmdevalError

#: The serial share ``s`` of a search (or block) job's work: ``t`` threads run it
#: ``1 / (s + (1 - s) / t)`` times as fast as one. 0.15: what a search's threads gave
#: before its workers were processes (issue 40: 1.74x at two threads on a 2-core VM).
#: Kept, not lowered, though its worker processes (set-up and queries) now give 1.85x to
#: 1.95x at two on the same machine, by the day (benchmarks/thread_scaling.py, s = 0.08 to
#: 0.03): nobody has measured it at 16 cores, where the cores' slowing of each other (its
#: CPU grew by 6 % on two one day) may be worse, so a smaller s could declare a 16-thread
#: job shorter than it runs.
SEARCH_SERIAL_SHARE = 0.15

#: The serial share of the plan's *expected* wall time (the schedules below), as measured,
#: not padded: 2 / 1.95 - 1 from a search job's two workers against one
#: (benchmarks/results/thread_scaling.json, checked by tests/test_wall.py). The paper
#: plan's jobs ask for 2 threads, the count it was measured at; a runtime declaration
#: keeps :data:`SEARCH_SERIAL_SHARE`.
EXPECTED_SERIAL_SHARE = 0.03

#: The core counts the wall time is forecast for besides ``--cores``.
CORE_COUNTS = (2, 16, 64)


def speedup(threads: int, serial_share: float = SEARCH_SERIAL_SHARE) -> float:
    """How many times faster ``threads`` threads run a job than one (Amdahl's law)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if not 0.0 <= serial_share <= 1.0:
        raise ValueError(f"the serial share must be within [0, 1], got {serial_share}")
    return 1.0 / (serial_share + (1.0 - serial_share) / threads)


@dataclass(frozen=True)
class Job:
    """One job of a plan: ``seconds`` of CPU at one thread; ``threads`` it asks for;
    ``scales``: whether its threads share its work (:func:`speedup`), else they do not
    shorten it; ``after``: the names of the jobs it waits for; ``priority``: Snakemake's
    (higher first)."""

    name: str
    seconds: float
    threads: int = 1
    after: tuple[str, ...] = ()
    scales: bool = True
    priority: int = 0

    def cores(self, cores: int) -> int:
        """The cores it holds on ``cores`` cores: its threads, at most the cores."""
        return max(1, min(self.threads, cores))

    def wall(self, cores: int, serial_share: float = SEARCH_SERIAL_SHARE) -> float:
        """Its wall seconds on a machine of ``cores`` cores."""
        if not self.scales:
            return self.seconds
        return self.seconds / speedup(self.cores(cores), serial_share)


def _checked(jobs: Sequence[Job], cores: int) -> dict[str, int]:
    """{name: position}; refuses duplicate names, unknown dependencies, cycles, no cores."""
    if cores < 1:
        raise WmdevalError(f"wall time: cores must be >= 1, got {cores}")
    index: dict[str, int] = {}
    for k, job in enumerate(jobs):
        if job.name in index:
            raise WmdevalError(f"wall time: job {job.name!r} is listed twice")
        if job.seconds < 0 or job.threads < 1:
            raise WmdevalError(f"wall time: job {job.name!r} has negative time or no thread")
        index[job.name] = k
    for job in jobs:
        for name in job.after:
            if name not in index:
                raise WmdevalError(f"wall time: job {job.name!r} waits for unknown {name!r}")
    _topological(jobs, index)
    return index


def _topological(jobs: Sequence[Job], index: dict[str, int]) -> list[int]:
    """Positions of ``jobs`` with every job after those it waits for (Kahn's algorithm,
    smallest position first); a cycle stops with one line."""
    waiting = [len(set(job.after)) for job in jobs]
    followers: list[list[int]] = [[] for _ in jobs]
    for k, job in enumerate(jobs):
        for name in set(job.after):
            followers[index[name]].append(k)
    ready = [k for k, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for f in followers[k]:
            waiting[f] -= 1
            if waiting[f] == 0:
                heapq.heappush(ready, f)
    if len(order) != len(jobs):
        stuck = next(job.name for k, job in enumerate(jobs) if waiting[k])
        raise WmdevalError(f"wall time: the jobs wait for each other in a cycle ({stuck!r})")
    return order


@dataclass(frozen=True)
class Schedule:
    """When each job starts and ends (seconds from the start), by name; ``wall``: when
    the last ends."""

    cores: int
    start: dict[str, float]
    end: dict[str, float]

    @property
    def wall(self) -> float:
        return max(self.end.values(), default=0.0)


def schedule(
    jobs: Sequence[Job], cores: int, serial_share: float = EXPECTED_SERIAL_SHARE
) -> Schedule:
    """The list schedule of ``jobs`` on ``cores`` cores (see the module's docstring)."""
    index = _checked(jobs, cores)
    waiting = [len(set(job.after)) for job in jobs]
    followers: list[list[int]] = [[] for _ in jobs]
    for k, job in enumerate(jobs):
        for name in set(job.after):
            followers[index[name]].append(k)
    ready = {k for k, n in enumerate(waiting) if n == 0}
    running: list[tuple[float, int]] = []  # (end, position)
    start: dict[str, float] = {}
    end: dict[str, float] = {}
    free, now = cores, 0.0
    while ready or running:
        # priority first, then the widest job that fits, ties in the order given
        for k in sorted(ready, key=lambda k: (-jobs[k].priority, -jobs[k].cores(cores), k)):
            need = jobs[k].cores(cores)
            if need <= free:
                free -= need
                ready.discard(k)
                start[jobs[k].name] = now
                finish = now + jobs[k].wall(cores, serial_share)
                end[jobs[k].name] = finish
                heapq.heappush(running, (finish, k))
        # the next job to end (and every job ending at the same time) frees its cores
        now, k = heapq.heappop(running)
        done = [k]
        while running and running[0][0] == now:
            done.append(heapq.heappop(running)[1])
        for k in done:
            free += jobs[k].cores(cores)
            for f in followers[k]:
                waiting[f] -= 1
                if waiting[f] == 0:
                    ready.add(f)
    return Schedule(cores, start, end)


def critical_path(
    jobs: Sequence[Job], cores: int, serial_share: float = EXPECTED_SERIAL_SHARE
) -> tuple[float, list[str]]:
    """(seconds, names in order) of the longest chain of jobs each waiting for the one
    before, at their wall times on ``cores`` cores; of equal chains, the one ending in
    the job listed first."""
    index = _checked(jobs, cores)
    longest: dict[int, float] = {}
    before: dict[int, int | None] = {}
    for k in _topological(jobs, index):
        job = jobs[k]
        prior = max(
            (index[name] for name in job.after),
            key=lambda p: (longest[p], -p),
            default=None,
        )
        longest[k] = job.wall(cores, serial_share) + (longest[prior] if prior is not None else 0)
        before[k] = prior
    if not longest:
        return 0.0, []
    last = max(longest, key=lambda k: (longest[k], -k))
    chain = []
    k: int | None = last
    while k is not None:
        chain.append(jobs[k].name)
        k = before[k]
    return longest[last], chain[::-1]


def remaining_seconds(
    jobs: Sequence[Job], cores: int, serial_share: float = EXPECTED_SERIAL_SHARE
) -> dict[str, float]:
    """Per job (by name): the longest chain of jobs from its start to the plan's end, its
    own wall time on ``cores`` cores included (its "bottom level"). A list scheduler that
    starts the ready job of the longest such chain first keeps the critical path moving;
    the workflow gives these to Snakemake as its jobs' priorities (``common.smk``), and a
    job at the head of the critical path has the critical path's length."""
    index = _checked(jobs, cores)
    followers: list[list[int]] = [[] for _ in jobs]
    for k, job in enumerate(jobs):
        for name in set(job.after):
            followers[index[name]].append(k)
    remaining = [0.0] * len(jobs)
    for k in reversed(_topological(jobs, index)):
        after = max((remaining[f] for f in followers[k]), default=0.0)
        remaining[k] = jobs[k].wall(cores, serial_share) + after
    return {job.name: remaining[k] for k, job in enumerate(jobs)}


def by_remaining(
    jobs: Sequence[Job], cores: int, serial_share: float = EXPECTED_SERIAL_SHARE
) -> list[Job]:
    """``jobs`` at the priorities the workflow gives Snakemake on ``cores`` cores: each
    its :func:`remaining_seconds`, rounded to whole seconds (``common.smk``); a job whose
    own priority is higher (Snakemake's highest, a ``--prioritize`` target) keeps it."""
    remaining = remaining_seconds(jobs, cores, serial_share)
    return [
        replace(job, priority=max(job.priority, int(round(remaining[job.name])))) for job in jobs
    ]


def wall_summary(
    jobs: Sequence[Job], cores: Iterable[int], serial_share: float = EXPECTED_SERIAL_SHARE
) -> list[dict]:
    """Per core count (in the order given, each once): ``{"cores", "wall_seconds",
    "critical_seconds", "critical_path", "longest_job", "longest_job_seconds",
    "cpu_seconds"}``: the schedule's wall time, its critical path, and the longest
    single job at that many cores; ``cpu_seconds``: the jobs' core-seconds held."""
    rows = []
    given = jobs
    for n in dict.fromkeys(cores):
        jobs = by_remaining(given, n, serial_share)
        plan = schedule(jobs, n, serial_share)
        seconds, chain = critical_path(jobs, n, serial_share)
        longest = max(jobs, key=lambda job: job.wall(n, serial_share), default=None)
        rows.append(
            {
                "cores": n,
                "wall_seconds": plan.wall,
                "critical_seconds": seconds,
                "critical_path": chain,
                "longest_job": longest.name if longest else "",
                "longest_job_seconds": longest.wall(n, serial_share) if longest else 0.0,
                "cpu_seconds": sum(job.wall(n, serial_share) * job.cores(n) for job in jobs),
            }
        )
    return rows


def describe_path(chain: Sequence[str], limit: int = 40) -> str:
    """The critical path in a line: its jobs joined by " > ", the middle left out past
    ``limit`` jobs."""
    if len(chain) <= limit:
        return " > ".join(chain)
    head, tail = chain[: limit // 2], chain[-(limit - limit // 2) :]
    return " > ".join([*head, f"({len(chain) - limit} more)", *tail])


__all__ = [
    "SEARCH_SERIAL_SHARE",
    "EXPECTED_SERIAL_SHARE",
    "CORE_COUNTS",
    "speedup",
    "Job",
    "Schedule",
    "schedule",
    "critical_path",
    "remaining_seconds",
    "by_remaining",
    "wall_summary",
    "describe_path",
]
