"""What the four analyses (N2O, crossmatch, corpus distances, KSC) add to the demo (prints numbers).

Runs the demo twice from scratch in temporary directories with ``snakemake --cores N``:
once as shipped and once with every ``analyses.*.enabled`` set to false. Prints, for
both, the wall time and the CPU summed over every job's benchmark file, and the share
the analysis jobs take of the full run.

    .venv/bin/python benchmarks/analysis_overhead.py [--cores 2] [--repeats 1]

Run it with the Python of the demo's install (``pip install -e .``): the test extras add
pandas, which pyarrow then imports in every job (0.3-0.4 s each).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ANALYSES = ("n2o", "crossmatch", "corpus_distances", "ksc")
NO_ANALYSES = "analyses:\n" + "".join(f"  {name}: {{enabled: false}}\n" for name in ANALYSES)


def job_cpu(workdir: Path) -> dict[str, float]:
    """CPU seconds per benchmark file (user + system of the job's processes)."""
    cpu = {}
    for path in sorted((workdir / "results" / "benchmarks").rglob("*.tsv")):
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        cpu[str(path.relative_to(workdir))] = sum(float(row["cpu_time"]) for row in rows)
    return cpu


def is_analysis(benchmark: str) -> bool:
    name = Path(benchmark).stem
    return any(name.startswith(a) for a in ("n2o", "crossmatch", "corpus_distance", "ksc"))


def run_demo(cores: int, analyses: bool) -> tuple[float, dict[str, float]]:
    with tempfile.TemporaryDirectory(prefix="wmdeval-overhead-") as tmp:
        workdir = Path(tmp)
        shutil.copy(REPO / "Snakefile", workdir)
        for part in ("workflow/rules", "workflow/report", "workflow/schemas", "config",
                     "envs", "profiles"):
            shutil.copytree(REPO / part, workdir / part)
        command = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--quiet"]
        if not analyses:
            (workdir / "no_analyses.yaml").write_text(NO_ANALYSES)
            command += ["--configfile", "config/config.yaml", "no_analyses.yaml"]
        # The rules call `wmdeval`: the one installed next to this Python.
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        start = time.perf_counter()
        subprocess.run(command, cwd=workdir, env=env, check=True, capture_output=True)
        return time.perf_counter() - start, job_cpu(workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    for repeat in range(args.repeats):
        wall_without, cpu_without = run_demo(args.cores, analyses=False)
        wall_with, cpu_with = run_demo(args.cores, analyses=True)
        analysis_cpu = {k: v for k, v in cpu_with.items() if is_analysis(k)}
        total_without = sum(cpu_without.values())
        total_with = sum(cpu_with.values())
        print(f"run {repeat + 1}, --cores {args.cores}")
        print(f"  without analyses: {wall_without:6.1f} s wall, {total_without:6.1f} s job CPU,"
              f" {len(cpu_without)} jobs")
        print(f"  with analyses:    {wall_with:6.1f} s wall, {total_with:6.1f} s job CPU,"
              f" {len(cpu_with)} jobs ({len(analysis_cpu)} analysis jobs,"
              f" {sum(analysis_cpu.values()):.1f} s CPU)")
        print(f"  added: {100 * (wall_with / wall_without - 1):+.1f} % wall,"
              f" {100 * sum(analysis_cpu.values()) / total_without:+.1f} % job CPU")
        for name, seconds in sorted(analysis_cpu.items(), key=lambda item: -item[1])[:8]:
            print(f"    {seconds:5.2f} s  {name}")


if __name__ == "__main__":
    main()
