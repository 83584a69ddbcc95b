"""A benchmark's result as a file of the repository: ``benchmarks/results/<name>.json``.

The docs quote a benchmark's figures from these files, each quoted number marked with
``<!-- bench:<name>.<key> -->`` (benchmarks/results/README.md), and
``tests/test_doc_numbers.py`` checks every marked number against the file. A benchmark
run with ``--record`` writes its file again: the figures, the command, the machine and
the date, so the docs never quote a number that no file holds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def add_argument(parser: argparse.ArgumentParser, name: str) -> None:
    """``--record [PATH]``: write the results to PATH (default benchmarks/results/<name>.json)."""
    parser.add_argument(
        "--record",
        nargs="?",
        type=Path,
        const=RESULTS / f"{name}.json",
        default=None,
        metavar="PATH",
        help=f"write the results as JSON (default: benchmarks/results/{name}.json)",
    )


def machine() -> dict:
    """The CPU's model name and the cores this process may use."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": cores}


def write(path: Path | None, name: str, figures: dict) -> None:
    """Write ``figures`` with the command that made them, the machine and today's date."""
    if path is None:
        return
    words, skip = [], False
    for word in sys.argv[1:]:
        if skip and not word.startswith("-"):
            skip = False
            continue
        skip = word == "--record"
        if not skip and not word.startswith("--record="):
            words.append(word)
    command = shlex.join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *words])
    result = {
        "benchmark": name,
        "command": command,
        "machine": machine(),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "source": "measured by this command",
        "figures": figures,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"recorded: {path}")


def cell(text: str) -> str | int | float:
    """A Markdown table cell as the value it prints: ``7,128`` 7128, ``0.5`` 0.5, else text."""
    text = text.strip().strip("*")
    plain = text.replace(",", "")
    try:
        return int(plain)
    except ValueError:
        pass
    try:
        return float(plain)
    except ValueError:
        return text


def table(lines: list[str]) -> dict:
    """A Markdown table's lines (header, rule, rows) as {"header": [...], "rows": [[...]]}."""
    split = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return {"header": split[0], "rows": [[cell(c) for c in row] for row in split[2:]]}
