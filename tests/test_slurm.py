"""SLURM: the demo workflow (its subjects corpus) through ``--profile profiles/slurm`` on a
real single-node cluster.

``tests/slurm/start_cluster.sh`` installs (apt) and starts SLURM with accounting on
127.0.0.1; every job except ``all`` then goes through ``sbatch``. The results must be the
same bytes as a local ``snakemake --cores 2`` run of the same workflow.

Opt-in, because it changes the machine: it apt-installs SLURM, munge, MariaDB and their
dependencies, writes /etc/slurm and starts daemons. It runs only with WMDEVAL_SLURM=1 (as
root on Debian); unset or any other value skips it. ``.ci/run`` opts in. The daemons the
fixture starts are stopped at the end (``tests/slurm/stop_cluster.sh``); ones already
running are reused and left alone. WMDEVAL_SLURM_STATE names the state file (default
/run/wmdeval-slurm-pytest.state).
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from workflow_helpers import record_rules

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "tests" / "slurm"
PLUGIN = "snakemake-executor-plugin-slurm"
PLUGIN_REQUIREMENT = f"{PLUGIN}==2.8.0"
# The plugin and what it needs beyond Snakemake's own dependencies (slurm_plugin says why
# they are installed apart)
PLUGIN_PACKAGES = (
    PLUGIN_REQUIREMENT,
    "snakemake-executor-plugin-slurm-jobstep==0.6.1",
    "pandas>=2",
    "tzdata",
)
# The demo on its subjects corpus only, two blocks per matrix: every rule still runs, in
# about half the SLURM jobs of the whole demo (each SLURM job costs ~5-10 s of Snakemake
# start-up on top of its command). Results are the same bytes for any block count.
TEST_CONFIG = "run: [subjects]\nwmd:\n  blocks: 2\n"
RUN_LIMIT = 1500  # seconds for one snakemake run, then SIGTERM (and SIGKILL 30 s later)
LOCK_WAIT = 1800  # seconds to wait for another SLURM test on this machine
LOCK_FILE = "/tmp/wmdeval-slurm-test.lock"

pytestmark = pytest.mark.e2e


def skip_reason() -> str | None:
    if os.environ.get("WMDEVAL_SLURM") == "1":
        return None
    return (
        "opt-in: set WMDEVAL_SLURM=1 to run it (as root on Debian); it apt-installs "
        "SLURM, munge and MariaDB, writes /etc/slurm and starts their daemons"
    )


if (reason := skip_reason()) is not None:
    pytest.skip(reason, allow_module_level=True)


def script(name: str, state: str, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "WMDEVAL_SLURM_STATE": state}
    return subprocess.run(
        ["bash", str(SCRIPTS / name), state],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def slurm_cluster():
    state = os.environ.get("WMDEVAL_SLURM_STATE", "/run/wmdeval-slurm-pytest.state")
    # One SLURM test at a time on a machine: another run would stop our daemons at its end.
    with open(LOCK_FILE, "w") as lock:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pytest.skip(f"another SLURM test held {lock.name} for {LOCK_WAIT} s")
                time.sleep(5)
        try:
            start = script("start_cluster.sh", state, timeout=1200)
            print(start.stdout)
            assert start.returncode == 0, (start.stdout + start.stderr)[-5000:]
            yield state
        finally:
            stop = script("stop_cluster.sh", state, timeout=300)
            print(stop.stdout, stop.stderr)


@pytest.fixture(scope="module")
def slurm_plugin(tmp_path_factory) -> tuple[str, str | None]:
    """(the executor plugin's version, the folder to put on the SLURM run's PYTHONPATH, or
    None where the environment has the plugin already).

    The test environment does not carry the plugin (pyproject's test extra): its import,
    which every Snakemake process does, runs `scontrol show config`, and that waits ~9 s
    wherever SLURM is installed but its controller is down (as after this test). So it is
    pip-installed here, into a folder that only this test's SLURM run sees; --no-deps, as
    all else it needs is Snakemake's and so installed already (PLUGIN_PACKAGES).
    """
    try:
        return importlib.metadata.version(PLUGIN), None
    except importlib.metadata.PackageNotFoundError:
        pass
    target = tmp_path_factory.mktemp("slurm-plugin")
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target)]
        + list(PLUGIN_PACKAGES),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    found = [
        d.version
        for d in importlib.metadata.distributions(path=[str(target)])
        if d.metadata["Name"] == PLUGIN
    ]
    assert found, f"{PLUGIN} not found in {target} after pip install"
    return found[0], str(target)


def workflow_copy(workdir: Path) -> Path:
    shutil.copy(REPO / "Snakefile", workdir)
    shutil.copytree(REPO / "workflow" / "rules", workdir / "workflow" / "rules")
    for name in ("config", "envs", "profiles"):
        shutil.copytree(REPO / name, workdir / name)
    (workdir / "test.yaml").write_text(TEST_CONFIG)
    return workdir


def snakemake(
    workdir: Path, *args: str, python_path: str | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    """Run snakemake in ``workdir`` under ``timeout -k``: SIGTERM alone does not end a
    snakemake that waits on cluster jobs. ``python_path``: PYTHONPATH of the run (and of its
    SLURM jobs)."""
    command = [
        "timeout",
        "-k",
        "30",
        str(RUN_LIMIT),
        sys.executable,
        "-m",
        "snakemake",
        "--configfile",
        "config/config.yaml",
        "test.yaml",
        *args,
    ]
    # sbatch exports this environment to the jobs (--export=ALL): `wmdeval` is found on PATH
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir), "LANG": "C.UTF-8"}
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    started = time.monotonic()
    run = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=RUN_LIMIT + 60
    )
    record_rules(run)
    return run, time.monotonic() - started


def compared_outputs(workdir: Path) -> list[str]:
    results = workdir / "results"
    paths = [
        results / "scores.parquet",
        *results.glob("*/*/distances/*.parquet"),
        *results.glob("tables/*.csv"),
    ]
    return sorted(str(p.relative_to(workdir)) for p in paths)


def _slurm_run(workdir: Path, python_path: str | None) -> tuple[subprocess.CompletedProcess, float]:
    """The workflow in ``workdir`` through profiles/slurm, every job but ``all`` by sbatch."""
    return snakemake(
        workdir,
        "--profile",
        "profiles/slurm",
        # Test settings: a short first status query, and more jobs queued than the node
        # runs at once, so SLURM starts the next one without waiting for Snakemake's poll.
        # SLURM's logs are kept to find every job's id. profiles/default (applied too, as
        # the workflow profile) sets `cores: all`, which keeps a group of block jobs within
        # this machine's cores, i.e. within the node.
        "--jobs",
        "8",
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--latency-wait",
        "5",
        "--retries",
        "0",
        "--slurm-keep-successful-logs",
        python_path=python_path,
    )


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """(workdir, its pending run): the same workflow run locally, started at once in the
    background, so that it runs while SLURM is installed and started and while the SLURM
    run waits on the cluster (load ~1.4 on 2 cores). ``runs`` asks for it first."""
    local_dir = workflow_copy(tmp_path_factory.mktemp("local"))
    with ThreadPoolExecutor(1) as beside:
        yield local_dir, beside.submit(snakemake, local_dir, "--cores", "2")


@pytest.fixture(scope="module")
def runs(local_run, slurm_cluster, slurm_plugin, tmp_path_factory):
    """The same workflow run locally and through SLURM, in two directories."""
    local_dir, pending = local_run
    slurm_dir = workflow_copy(tmp_path_factory.mktemp("slurm"))
    slurm, slurm_seconds = _slurm_run(slurm_dir, slurm_plugin[1])
    local, local_seconds = pending.result()
    assert local.returncode == 0, local.stderr[-5000:]
    print(
        f"local run {local_seconds:.0f} s, SLURM run {slurm_seconds:.0f} s "
        f"(plugin {slurm_plugin[0]})"
    )
    assert slurm.returncode == 0, (slurm.stdout + slurm.stderr)[-8000:]
    return {"local": local_dir, "slurm": slurm_dir, "log": slurm.stdout + slurm.stderr}


def submitted_jobs(log: str) -> dict[str, str]:
    """{Snakemake job or group id: SLURM job id} from the run's log."""
    return dict(re.findall(r"Job (\S+) has been submitted with SLURM jobid (\d+)", log))


def planned_jobs(log: str) -> dict[str, int]:
    """Job counts per rule from the run's "Job stats" table."""
    table = log.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, re.M)}


def test_every_job_but_all_went_through_sbatch(runs):
    log = runs["log"]
    counts = planned_jobs(log)
    # every job is printed once as "rule <name>:" (indented inside a group job), or as
    # "localrule <name>:" when it runs in the Snakemake process itself
    started = re.findall(r"^\s*(rule|localrule) (\w+):$", log, re.M)
    assert len(started) == counts["total"] > 30
    assert [name for kind, name in started if kind == "localrule"] == ["all"]
    submitted = submitted_jobs(log)
    assert len(submitted) >= 10
    logs = {p.stem: p for p in (runs["slurm"] / ".snakemake" / "slurm_logs").rglob("*.log")}
    # one SLURM log per SLURM job, named by its id; WMD blocks go to SLURM as group jobs
    assert set(submitted.values()) <= set(logs)
    groups = [logs[i] for i in submitted.values() if logs[i].parent.name.startswith("group_")]
    assert groups, "profiles/slurm groups the wmd_block jobs: expected group jobs"
    assert all("Finished jobid" in path.read_text() for path in groups)


def test_sacct_shows_every_job_completed(runs):
    run_id = re.search(r"SLURM run ID: (\S+)", runs["log"])[1]
    expected = set(submitted_jobs(runs["log"]).values())
    command = [
        "sacct",
        "-X",
        "-n",
        "-P",
        "--name",
        run_id,
        "-S",
        "now-1days",
        "-o",
        "JobID,State,ExitCode",
    ]
    deadline = time.monotonic() + 60
    while True:  # slurmdbd records a finished job a moment after slurmctld
        out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        rows = {line.split("|")[0]: line.split("|")[1:] for line in out.splitlines() if line}
        if set(rows) >= expected or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert set(rows) == expected
    assert all(state == ["COMPLETED", "0:0"] for state in rows.values()), rows


def test_results_are_the_bytes_of_a_local_run(runs):
    local, slurm = runs["local"], runs["slurm"]
    names = compared_outputs(local)
    assert "results/scores.parquet" in names
    assert any("/distances/" in name for name in names)
    assert any(name.startswith("results/tables/") for name in names)
    assert compared_outputs(slurm) == names
    different = [n for n in names if (local / n).read_bytes() != (slurm / n).read_bytes()]
    assert not different
