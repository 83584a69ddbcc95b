"""What the five analyses (N2O, crossmatch, corpus distances, KSC, WMD vs BOW) add to the demo.

Each repeat runs the demo from scratch in two temporary directories with
``snakemake --cores N``: once with every ``analyses.*.enabled`` set to false and once as
shipped. Wall time and CPU time (Snakemake and every job, from the kernel's accounting
of child processes) of the two runs give what the analyses add to the run.

Whole runs vary by ±10 % on a shared machine, more than the analyses cost, so the
analyses are also measured on their own: in the finished directory, a forced rerun of
just the analysis rules, less a run with nothing to do (Snakemake's own start-up).

    .venv/bin/python benchmarks/analysis_overhead.py [--cores 2] [--repeats 3]

Run it with the Python of the demo's install (``pip install -e .``): the test extras add
pandas, which pyarrow then imports in every job (0.3-0.4 s each).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANALYSES = ("n2o", "crossmatch", "corpus_distances", "ksc", "wmd_vs_bow")
NO_ANALYSES = "analyses:\n" + "".join(f"  {name}: {{enabled: false}}\n" for name in ANALYSES)
ANALYSIS_RULES = (
    "analyses",
    "wmd_vs_bow_table",
    "n2o_report",
    "crossmatch_table",
    "corpus_distance_table",
    "ksc_report",
)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def snakemake(workdir: Path, cores: int, *args: str) -> tuple[float, float]:
    """(wall s, CPU s) of one Snakemake run in ``workdir``."""
    command = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--quiet", *args]
    # The rules call `wmdeval`: the one installed next to this Python.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    start, start_cpu = time.perf_counter(), children_cpu()
    subprocess.run(command, cwd=workdir, env=env, check=True, capture_output=True)
    return time.perf_counter() - start, children_cpu() - start_cpu


def fresh_copy(tmp: str) -> Path:
    workdir = Path(tmp)
    shutil.copy(REPO / "Snakefile", workdir)
    for part in ("workflow/rules", "workflow/report", "config", "envs", "profiles"):
        shutil.copytree(REPO / part, workdir / part)
    (workdir / "no_analyses.yaml").write_text(NO_ANALYSES)
    return workdir


def one_repeat(cores: int) -> dict[str, float]:
    with (
        tempfile.TemporaryDirectory(prefix="wmdeval-overhead-") as without_dir,
        tempfile.TemporaryDirectory(prefix="wmdeval-overhead-") as with_dir,
    ):
        without = fresh_copy(without_dir)
        wall_without, cpu_without = snakemake(
            without, cores, "--configfile", "config/config.yaml", "no_analyses.yaml"
        )
        full = fresh_copy(with_dir)
        wall_with, cpu_with = snakemake(full, cores)
        wall_noop, cpu_noop = snakemake(full, cores)
        wall_rerun, cpu_rerun = snakemake(full, cores, "--forcerun", *ANALYSIS_RULES)
    return {
        "wall_without": wall_without,
        "cpu_without": cpu_without,
        "wall_with": wall_with,
        "cpu_with": cpu_with,
        "wall_analyses": wall_rerun - wall_noop,
        "cpu_analyses": cpu_rerun - cpu_noop,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"demo, snakemake --cores {args.cores}; analyses: {', '.join(ANALYSES)}")
    print(
        "repeat   without analyses      with analyses   added (whole runs)"
        "   analyses alone       share of the run without"
    )
    runs = []
    for repeat in range(args.repeats):
        r = one_repeat(args.cores)
        r["added_wall"] = r["wall_with"] / r["wall_without"] - 1
        r["added_cpu"] = r["cpu_with"] / r["cpu_without"] - 1
        r["share_wall"] = r["wall_analyses"] / r["wall_without"]
        r["share_cpu"] = r["cpu_analyses"] / r["cpu_without"]
        runs.append(r)
        print(
            f"{repeat + 1:>6}   {r['wall_without']:5.1f} s, {r['cpu_without']:5.1f} s CPU"
            f"   {r['wall_with']:5.1f} s, {r['cpu_with']:5.1f} s CPU"
            f"   {100 * r['added_wall']:+5.1f} %, {100 * r['added_cpu']:+5.1f} % CPU"
            f"   {r['wall_analyses']:4.1f} s, {r['cpu_analyses']:4.1f} s CPU"
            f"   {100 * r['share_wall']:4.1f} %, {100 * r['share_cpu']:4.1f} % CPU"
        )
    med = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    print(
        f"median   {med['wall_without']:5.1f} s, {med['cpu_without']:5.1f} s CPU"
        f"   {med['wall_with']:5.1f} s, {med['cpu_with']:5.1f} s CPU"
        f"   {100 * med['added_wall']:+5.1f} %, {100 * med['added_cpu']:+5.1f} % CPU"
        f"   {med['wall_analyses']:4.1f} s, {med['cpu_analyses']:4.1f} s CPU"
        f"   {100 * med['share_wall']:4.1f} %, {100 * med['share_cpu']:4.1f} % CPU"
    )


if __name__ == "__main__":
    main()
