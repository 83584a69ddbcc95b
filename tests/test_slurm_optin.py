"""The real-SLURM test is opt-in: without WMDEVAL_SLURM=1 it is skipped, even as root on
Debian, and installs or starts nothing.

tests/test_slurm.py is run by pytest in a subprocess whose PATH starts with stand-ins for
every program that could change the machine (apt-get, bash running the cluster scripts,
the SLURM and MariaDB daemons, ...). A stand-in only records that it was called and fails,
so even a regression that runs the module cannot install anything here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What start_cluster.sh and the fixtures of test_slurm.py run to install and start SLURM.
GUARDED_PROGRAMS = (
    "bash",
    "sh",
    "apt-get",
    "apt",
    "dpkg",
    "systemctl",
    "service",
    "sudo",
    "munged",
    "mariadbd",
    "mysqld",
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "sbatch",
    "srun",
    "sinfo",
    "sacct",
    "timeout",
)


def stand_ins(directory: Path, calls: Path) -> Path:
    directory.mkdir()
    for name in GUARDED_PROGRAMS:
        program = directory / name
        program.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\nexit 1\n')
        program.chmod(0o755)
    return directory


@pytest.mark.parametrize("opt_in", [None, "", "0", "yes", "true"])
def test_slurm_module_is_skipped_without_the_opt_in(tmp_path, opt_in):
    calls = tmp_path / "calls.log"
    guarded = stand_ins(tmp_path / "bin", calls)
    env = {k: v for k, v in os.environ.items() if k != "WMDEVAL_SLURM"}
    if opt_in is not None:
        env["WMDEVAL_SLURM"] = opt_in
    env["PATH"] = f"{guarded}:{Path(sys.executable).parent}:/usr/bin:/bin"
    env["WMDEVAL_SLURM_STATE"] = str(tmp_path / "state")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/test_slurm.py",
            "-rs",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = run.stdout + run.stderr
    assert not calls.exists(), f"ran {calls.read_text()!r}\n{output[-3000:]}"
    # a module skipped while being imported has no tests: pytest's exit status 5
    assert run.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, output[-3000:]
    assert "1 skipped" in output and "passed" not in output and "error" not in output, output
    # the skip reason says how to opt in
    assert "WMDEVAL_SLURM=1" in output, output


def test_ci_opts_in_and_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    test_command = next(
        line
        for line in readme.splitlines()
        if line.startswith("python3 -m venv") and "pytest" in line
    )
    commands = [
        line
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert commands[-2:] == ["export WMDEVAL_SLURM=1", test_command]
