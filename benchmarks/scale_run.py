"""Beyond the paper's scale: a whole run of the workflow on the passage corpus, beside its plan.

The corpus is benchmarks/passages.py's: 20 Newsgroups' posts cut into 60-token passages
(85,635), or every ``--every``-th of them. It is one ``format: table`` dataset, prepared
like ``knn_pruning.NEWS_CONFIG`` (kusner115 stop words, a seeded 50-d Word2Vec trained on
the corpus), ``variants: [original]``, and the default config otherwise (the schema's
defaults: the paper's 14 methods; ``wmd.mode: auto`` gives knn at this size).

1. The dry run in a fresh ``--workdir``: the plan's largest declared ``mem_mb`` per job
   kind, and its wall-time forecast on ``--cores`` and on 64 cores (work models only: no
   cost forecast exists yet); with ``--every`` above 1, the same of all 85,635 passages
   too (in ``--workdir``/all), recorded as ``all_passages``. A dry run declares a search
   job a nominal 2,000 MB (its documents do not exist yet); the job itself declares its
   set-up batch's tables when it runs.
2. With ``--run``: the workflow itself, ``snakemake --cores <cores>``, as a user runs it.
   Measured: its wall time, its CPU-hours (every process Snakemake started, from the
   operating system's account of the children it waited for), and per job kind the
   largest peak PSS (Snakemake's ``benchmark:`` files: ``max_pss``, summed over the job's
   processes, so a page shared between worker processes counts once) against the job's
   declared ``mem_mb``, flagging a peak above it (``OVER``) or above 4,000 MB (``4GB+``).

    python benchmarks/scale_run.py [--every 2] [--cores 2] [--run] [--workdir DIR] [--record]
    python benchmarks/scale_growth.py run ...   (the same, as scale_growth's ``run`` part)

A rerun with ``--run`` in the same workdir resumes the workflow where it stopped; the table
then holds each job's latest run, and the wall time and CPU are those of this rerun alone.
"""

from __future__ import annotations

import argparse
import collections
import csv
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import passages  # noqa: E402
import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: The memory the issue allows any job (MB).
JOB_LIMIT_MB = 4000
CONFIG = """\
datasets:
  passages:
    format: table
    path: {path}
    text_column: text
    label_column: label
    split_column: split
    embeddings: passages-word2vec
    stopwords: kusner115
embeddings:
  passages-word2vec:
    format: train-word2vec
    train_on: [passages]
    vector_size: 50
    epochs: 20
    min_count: 2
    seed: 0
variants: [original]
"""
FORECAST = re.compile(r"^wmdeval: wall time on (\d+) cores(?: \(--cores\))?: ([\d.,]+) min")


def snakemake(workdir: Path, *arguments: str) -> tuple[str, float, float]:
    """Run the workflow in ``workdir``: (its log, wall seconds, CPU seconds of every process
    it started). Stops the script on failure."""
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
    command += ["--configfile", "scale_run.yaml", *arguments]
    print("$ snakemake " + " ".join(command[5:]), flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    run = subprocess.run(command, cwd=workdir, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        sys.exit(f"scale_run: the workflow failed:\n{run.stderr[-4000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return run.stdout + run.stderr, wall, cpu


def jobs(log: str) -> list[tuple[str, str | None, dict[str, str]]]:
    """(rule, benchmark file or None, resources) of every job a Snakemake log lists."""
    found: list[tuple[str, str | None, dict[str, str]]] = []
    rule, bench = None, None
    for line in log.splitlines():
        if m := re.match(r"^(?:local)?rule (\S+):$", line):
            rule, bench = m.group(1), None
        elif m := re.match(r"^\s+benchmark: (\S+)$", line):
            bench = m.group(1)
        elif (m := re.match(r"^\s+resources: (.+)$", line)) and rule:
            values = dict(item.split("=", 1) for item in m.group(1).split(", ") if "=" in item)
            found.append((rule, bench, values))
            rule = None
    return found


def forecasts(log: str) -> dict[int, float]:
    """cores -> the dry run's forecast wall time in minutes."""
    return {
        int(m.group(1)): float(m.group(2).replace(",", ""))
        for line in log.splitlines()
        if (m := FORECAST.match(line))
    }


def declared_by_kind(log: str) -> dict[str, float]:
    """rule -> the largest mem_mb its jobs declare."""
    largest: dict[str, float] = {}
    for rule, _, resources in jobs(log):
        if "mem_mb" in resources:
            largest[rule] = max(largest.get(rule, 0.0), float(resources["mem_mb"]))
    return largest


def benchmark_row(path: Path) -> dict[str, str]:
    with path.open() as stream:
        return next(csv.DictReader(stream, delimiter="\t"))


def number(value: str) -> float:
    return float(value) if value not in ("", "-", "NA") else float("nan")


def measured_by_kind(workdir: Path, log: str) -> list[list]:
    """Per job kind: [rule, jobs, declared mem_mb (max), peak PSS MB (max), peak / declared
    (the job closest to its declaration), seconds (max), CPU seconds (max), flags]."""
    kinds: dict[str, dict[str, tuple]] = collections.defaultdict(dict)
    for rule, bench, resources in jobs(log):
        if bench and (workdir / bench).exists() and "mem_mb" in resources:
            row = benchmark_row(workdir / bench)
            # keyed by file: a job started again (resumed run) keeps its latest record
            kinds[rule][bench] = (
                float(resources["mem_mb"]),
                number(row["max_pss"]),
                float(row["s"]),
                number(row["cpu_time"]),
            )
    rows = []
    for rule, by_file in sorted(kinds.items()):
        runs = list(by_file.values())
        flags = []
        if any(pss > mem for mem, pss, _, _ in runs):
            flags.append("OVER")
        if any(pss > JOB_LIMIT_MB for _, pss, _, _ in runs):
            flags.append("4GB+")
        rows.append(
            [
                rule,
                len(runs),
                round(max(mem for mem, _, _, _ in runs)),
                round(max(pss for _, pss, _, _ in runs)),
                round(max(pss / mem for mem, pss, _, _ in runs), 2),
                round(max(s for _, _, s, _ in runs), 1),
                round(max(cpu for _, _, _, cpu in runs), 1),
                " ".join(flags),
            ]
        )
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """This part's options (also ``scale_growth.py run``'s)."""
    parser.add_argument("--every", type=int, default=2, help="every n-th passage (1: all)")
    parser.add_argument("--data", type=Path, default=passages.NEWS)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=Path("scale-run"))
    parser.add_argument("--run", action="store_true", help="run the workflow, not only plan it")
    record.add_argument(parser, "scale_run")


def dry_run(workdir: Path, data: Path, every: int, cores: int) -> tuple[dict, dict]:
    """The passages (every ``every``-th) written to ``workdir`` once, and the dry run of
    the workflow on them: (the figures to record, the forecasts by cores)."""
    corpus = workdir / "passages.tsv"
    if not corpus.exists():
        passages.write_passages(corpus, data=data, every=every)
    documents = sum(1 for _ in corpus.open()) - 1
    (workdir / "scale_run.yaml").write_text(CONFIG.format(path=corpus))
    print(f"scale_run: {documents:,} passages (every {every}), workdir {workdir}")
    plan, _, _ = snakemake(workdir, "-n", "--cores", str(cores))
    forecast = forecasts(plan)
    declared = declared_by_kind(plan)
    largest = max(declared, key=declared.get)
    print(
        f"  dry run: forecast {forecast[cores]:.1f} min on {cores} cores, "
        f"{forecast[64]:.1f} min on 64; largest declaration {declared[largest]:,.0f} MB "
        f"({largest})"
    )
    figures = {
        "documents": documents,
        "corpus_bytes": corpus.stat().st_size,
        "every": every,
        "cores": cores,
        "forecast_minutes": round(forecast[cores], 1),
        "forecast_minutes_64": round(forecast[64], 1),
        "largest_declared_mb": round(declared[largest]),
        "largest_declared_job": largest,
    }
    return figures, forecast


def run_whole(args) -> None:
    """The dry run, and with ``--run`` the run (module docstring); with ``--every`` above
    1, also the dry run of all the passages (in ``--workdir``/all), recorded beside."""
    workdir = args.workdir.resolve()
    figures, forecast = dry_run(workdir, args.data, args.every, args.cores)
    if args.every != 1:
        figures["all_passages"], _ = dry_run(workdir / "all", args.data, 1, args.cores)
    if args.run:
        log, wall, cpu = snakemake(workdir, "--cores", str(args.cores))
        rows = measured_by_kind(workdir, log)
        header = [
            "job",
            "jobs",
            "declared mem_mb",
            "peak PSS MB",
            "peak / declared",
            "max s",
            "max CPU s",
            "flag",
        ]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += [
            "| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in r) + " |"
            for r in rows
        ]
        print("\n".join(lines))
        print(
            f"  measured: {wall / 60:.1f} min wall, {cpu / 3600:.2f} CPU-hours; forecast "
            f"{forecast[args.cores]:.1f} min ({forecast[args.cores] * 60 / wall - 1:+.0%})"
        )
        figures |= {
            "wall_minutes": round(wall / 60, 1),
            "cpu_hours": round(cpu / 3600, 2),
            "forecast_error": round(forecast[args.cores] * 60 / wall - 1, 3),
            "table": record.table(lines),
        }
    record.write(args.record, "scale_run", figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_arguments(parser)
    run_whole(parser.parse_args())


if __name__ == "__main__":
    main()
