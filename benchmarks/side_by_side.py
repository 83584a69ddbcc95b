"""A search job of this working tree's package beside another revision's, alternately.

The VMs this project is measured on change speed by the hour (the same search by up to
1.8x within an evening), so two figures recorded an hour apart cannot tell a change of a
few per cent. Per size of ``--sizes`` (default 10,704 and 85,635 documents), this runs
one search job (``scale_growth.search_size``: the first shard of about
``--shard-queries`` queries of the passage corpus, ``--threads`` (2) workers, as a
``wmd_search`` job runs it) with the package of ``--base`` (a git revision, its
``workflow/wmdeval`` taken with ``git archive``) and with the working tree's, in turn,
each in a fresh process, ``--repeats`` times, so that both meet the same hours. It
prints each pair, then per size and side the least and the median CPU per query (the
job's processes, ``knn_pruning.Clock``), the median of the cheap bounds' (set-up
included), and the tables' hash (the two sides must agree where a change keeps the
tables), and a line

    side_by_side: <size> documents, CPU per query least <x> / <y> s, median <u> / <v> s

    python benchmarks/side_by_side.py --base REV [--sizes 10704 85635] [--repeats 5] [--record]

``--record`` writes benchmarks/results/side_by_side.json (an entry per size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import record  # noqa: E402


def one_search(args) -> None:
    """In a child process: one search job of the package on ``sys.path``; prints JSON."""
    import scale_growth

    from wmdeval.distances.wmd import search

    documents, splits, embeddings = scale_growth.prepare(args.workdir, args.data)
    inputs, folds = scale_growth.subset(documents, splits, embeddings, args.sizes[0], args.seed)
    row = scale_growth.search_size(inputs, folds, args.shard_queries, args.threads)
    row["package"] = str(Path(search.__file__).resolve().parents[3])
    print(json.dumps(row))


def run_child(args, package: Path, size: int) -> dict:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")])
    )
    command = [sys.executable, __file__, "--child", "--sizes", str(size)]
    command += ["--workdir", str(args.workdir), "--data", str(args.data)]
    command += ["--seed", str(args.seed), "--shard-queries", str(args.shard_queries)]
    command += ["--threads", str(args.threads)]
    done = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if Path(result["package"]) != package.resolve():
        raise SystemExit(f"side_by_side: the child imported {result['package']}, not {package}")
    return result


def main() -> None:
    import scale_growth  # the defaults

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the git revision to compare with")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[scale_growth.SIZES[0], scale_growth.SIZES[-1]]
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsets")
    parser.add_argument("--shard-queries", type=int, default=240)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=scale_growth.passages.NEWS)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "scale-passages"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    record.add_argument(parser, "side_by_side")
    args = parser.parse_args()
    if args.child:
        one_search(args)
        return
    if not args.base:
        parser.error("--base is required")
    scale_growth.prepare(args.workdir, args.data)  # once, before the children read it
    figures = {}
    if args.record is not None and args.record.exists():
        figures = json.loads(args.record.read_text(encoding="utf-8"))["figures"]
    with tempfile.TemporaryDirectory() as base_dir:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.base, "workflow/wmdeval"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", base_dir], input=archive, check=True)
        packages = {"base": Path(base_dir) / "workflow", "here": REPO / "workflow"}
        runs = {size: {side: [] for side in packages} for size in args.sizes}
        for repeat in range(args.repeats):
            for size in args.sizes:
                for side, package in packages.items():
                    runs[size][side].append(run_child(args, package, size))
                print(
                    f"pair {repeat + 1}, {size:,} documents: base "
                    f"{runs[size]['base'][-1]['cpu_per_query_s']:.4f}, here "
                    f"{runs[size]['here'][-1]['cpu_per_query_s']:.4f} s CPU per query",
                    flush=True,
                )
    for size in args.sizes:
        figures[str(size)] = {"base": args.base, **summarise(runs[size], size)}
    if args.record is not None:
        record.write(args.record, "side_by_side", figures)


def summarise(runs: dict[str, list[dict]], size: int) -> dict:
    """Per side the least, median and every CPU per query, the cheap bounds' median and
    the tables' hashes; printed, and returned with the pairs where ``here`` was lower."""
    summary = {}
    for side, results in runs.items():
        cpu = [r["cpu_per_query_s"] for r in results]
        bounds = statistics.median(r["bounds_per_query_s"] for r in results)
        summary[side] = {
            "least_s": round(min(cpu), 4),
            "median_s": round(statistics.median(cpu), 4),
            "bounds_median_s": round(bounds, 4),
            "every_s": [round(c, 4) for c in cpu],
            "hashes": sorted({r["hash"] for r in results}),
        }
        print(
            f"{size:,} documents, {side}: CPU per query least {summary[side]['least_s']:.4f}, "
            f"median {summary[side]['median_s']:.4f} s; cheap bounds median {bounds:.4f} s; "
            f"tables {', '.join(summary[side]['hashes'])}"
        )
    pairs = zip(summary["base"]["every_s"], summary["here"]["every_s"], strict=True)
    lower = sum(here < base for base, here in pairs)
    print(
        f"side_by_side: {size:,} documents, CPU per query least "
        f"{summary['base']['least_s']:.4f} / {summary['here']['least_s']:.4f} s, median "
        f"{summary['base']['median_s']:.4f} / {summary['here']['median_s']:.4f} s "
        f"(base / here; here lower in {lower} of {len(runs['here'])} pairs)"
    )
    return {"pairs": len(runs["here"]), "here_lower": lower, **summary}


if __name__ == "__main__":
    main()
