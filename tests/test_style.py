"""The code's habits, checked by the README's test command: lint and format are clean.

ruff checks and formats the Python (rules and line length in pyproject.toml), snakefmt the
Snakefile and rules; ``snakemake --lint`` is tests/test_install.py::test_lint_is_clean.
To fix a failure: ``ruff check --fix workflow tests benchmarks``, ``ruff format workflow tests
benchmarks`` and ``snakefmt Snakefile workflow/rules``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PYTHON = ["workflow", "tests", "benchmarks"]
SNAKEMAKE = ["Snakefile", "workflow/rules"]


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    "command",
    [
        ("ruff", "check", *PYTHON),
        ("ruff", "format", "--check", *PYTHON),
        ("snakefmt", "--check", *SNAKEMAKE),
    ],
    ids=["ruff-check", "ruff-format", "snakefmt"],
)
def test_code_is_clean(command):
    result = run(*command)
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]


def test_benchmarks_name_no_machine_specific_path():
    """A benchmark runs on anyone's machine: data relative to the repository, tools given
    by an option or the environment, never an absolute path of one machine."""
    absolute = re.compile(r"""["'\s](/(?:work|home|root|opt|mnt|scratch|Users)/[^\s"']*)""")
    found = [
        f"{path.name}: {match}"
        for path in sorted((REPO / "benchmarks").glob("*.py"))
        for match in absolute.findall(path.read_text())
    ]
    assert not found, found
