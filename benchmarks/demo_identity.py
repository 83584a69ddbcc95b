"""Are the demo's outputs the same bytes as recorded? Run the demo and compare.

Runs ``snakemake --cores N`` with the shipped demo config in a fresh temporary copy of
this checkout's workflow (or hashes an existing ``results/`` with ``--results``), then
compares the SHA-256 of every output under ``results/`` with ``demo_outputs.sha256``
next to this script. Logs and benchmark timings are left out: they hold times.

    python benchmarks/demo_identity.py            # run the demo, compare, exit 1 on a change
    python benchmarks/demo_identity.py --write    # run the demo, record its outputs
    python benchmarks/demo_identity.py --results /path/to/results   # compare a finished run

A refactoring that claims "behaviour unchanged" must leave every line identical.
tests/test_workflow.py checks the whole manifest on its run of the demo as shipped.

The recorded bytes are those of OpenBLAS's Haswell (AVX2) kernels, which the workflow's
jobs use by default on x86-64 (config ``blas_kernels``): OpenBLAS picks its kernels by
CPU, and another kernel rounds a product's entries differently (SkylakeX's, for AVX-512,
changed 106 of the 191 outputs, from the trained word vectors on).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = Path(__file__).with_name("demo_outputs.sha256")
#: Outputs that hold wall-clock times, never the same twice.
TIMED = ("results/logs/", "results/benchmarks/")
#: Files under results/ that the repository holds, not the workflow.
CHECKED_IN = ("results/README.md",)


def output_hashes(workdir: Path) -> dict[str, str]:
    """{path relative to workdir: SHA-256} of every untimed file under results/."""
    hashes = {}
    for path in sorted((workdir / "results").rglob("*")):
        name = path.relative_to(workdir).as_posix()
        if path.is_file() and not name.startswith(TIMED) and name not in CHECKED_IN:
            hashes[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def read_manifest(path: Path = MANIFEST) -> dict[str, str]:
    """The recorded ``sha256sum``-style lines: {path: SHA-256}."""
    hashes = {}
    for line in path.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        hashes[name] = digest
    return hashes


def run_demo(cores: int) -> tuple[Path, float]:
    """The demo in a fresh copy of the workflow; returns (its directory, wall seconds)."""
    workdir = Path(tempfile.mkdtemp(prefix="wmdeval-demo-"))
    shutil.copy(REPO / "Snakefile", workdir)
    for part in ("workflow/rules", "workflow/report", "config", "envs"):
        shutil.copytree(REPO / part, workdir / part)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", str(cores), "--quiet"],
        cwd=workdir,
        check=True,
    )
    return workdir, time.monotonic() - started


def compare(found: dict[str, str], recorded: dict[str, str]) -> dict[str, list[str]]:
    """Paths that differ, are missing from the run, or are new in it."""
    return {
        "differ": sorted(p for p in found.keys() & recorded.keys() if found[p] != recorded[p]),
        "missing": sorted(recorded.keys() - found.keys()),
        "new": sorted(found.keys() - recorded.keys()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="record the run's outputs")
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="a finished run's results/ directory (no new run)",
    )
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args()
    if args.results is not None:
        found = output_hashes(args.results.resolve().parent)
        print(f"hashed {len(found)} outputs of {args.results}")
    else:
        workdir, seconds = run_demo(args.cores)
        found = output_hashes(workdir)
        print(f"demo: {len(found)} outputs in {seconds:.0f} s wall ({workdir})")
    if args.write:
        MANIFEST.write_text("".join(f"{digest}  {name}\n" for name, digest in found.items()))
        print(f"recorded {len(found)} outputs in {MANIFEST.relative_to(REPO)}")
        return 0
    changes = compare(found, read_manifest())
    same = len(found.keys() & read_manifest().keys()) - len(changes["differ"])
    print(
        f"identical: {same}; differ: {len(changes['differ'])}; "
        f"missing: {len(changes['missing'])}; new: {len(changes['new'])}"
    )
    for kind, paths in changes.items():
        for path in paths:
            print(f"  {kind}: {path}")
    return 0 if not any(changes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
