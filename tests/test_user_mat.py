"""A user's own Kusner-layout .mat file, run from the user's own directory with
``snakemake -s path/to/Snakefile``: the config names the dataset and nothing else (a .mat
carries its vectors, so no ``embeddings:``), and ``wmd.mode: auto`` goes by the document
count in the file's header."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from scipy.io import savemat
from workflow_helpers import record_rules

REPO = Path(__file__).resolve().parents[1]
WORDS = [f"w{k}" for k in range(60)]


def user_mat(path: Path, n: int, seed: int = 0) -> None:
    """A five-fold Kusner .mat of ``n`` documents of 3 words each (4-d vectors, with word
    strings), two classes whose documents draw from their own half of the words."""
    rng = np.random.default_rng(seed)
    vectors = {w: rng.normal(size=4) for w in WORDS}
    x, bow, strings = (np.empty((1, n), dtype=object) for _ in range(3))
    for k in range(n):
        half = WORDS[: len(WORDS) // 2] if k % 2 else WORDS[len(WORDS) // 2 :]
        words = rng.choice(half, size=3, replace=False)
        x[0, k] = np.array([vectors[w] for w in words]).T
        bow[0, k] = rng.integers(1, 4, size=(1, 3)).astype(np.float64)
        strings[0, k] = np.empty((1, 3), dtype=object)
        for j, word in enumerate(words):
            strings[0, k][0, j] = np.array([word])
    test = np.array([np.arange(f, n, 5) + 1 for f in range(5)], dtype=np.float64)
    train = np.array([np.setdiff1d(np.arange(1, n + 1), t) for t in test], dtype=np.float64)
    labels = (np.arange(n) % 2 + 1).astype(np.float64)[None, :]
    savemat(path, {"X": x, "BOW_X": bow, "words": strings, "Y": labels, "TR": train, "TE": test})


def snakemake_elsewhere(workdir: Path, config: dict, *args: str) -> subprocess.CompletedProcess:
    """``snakemake -s <repo>/Snakefile`` run in ``workdir``, which holds nothing of the repo."""
    (workdir / "my.yaml").write_text(yaml.safe_dump(config))
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    command = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2"]
    run = subprocess.run(
        [*command, *args, "--configfile", "my.yaml"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    record_rules(run)
    return run


def mat_only_config() -> dict:
    """The whole config: the dataset, nothing else (the repository's demo config is not
    merged when Snakemake runs elsewhere)."""
    return {"datasets": {"mine": {"format": "kusner-mat", "path": "mine.mat"}}}


def test_a_large_mat_gets_knn_by_its_header_in_a_dry_run_from_another_directory(tmp_path):
    user_mat(tmp_path / "mine.mat", 2500)
    plan = snakemake_elsewhere(tmp_path, mat_only_config(), "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert (
        "WMD mode per dataset: mine=knn (auto: 2,500 documents (mine.mat: its .mat header) "
        ">= 2,000)"
    ) in plan.stderr
    assert "wmd_search" in plan.stdout and "wmd_block " not in plan.stdout
    assert not (tmp_path / "results").exists()


def test_a_mat_of_a_name_unknown_before_download_says_so_and_takes_full(tmp_path):
    config = {
        "datasets": {
            "remote": {
                "format": "kusner-mat",
                "url": "http://127.0.0.1:9/mine-emd.mat",
                "sha256": "0" * 64,
            }
        }
    }
    plan = snakemake_elsewhere(tmp_path, config, "-n")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert (
        "remote=full (auto: size unknown (mine-emd.mat is not downloaded while planning), "
        "so full matrices)"
    ) in plan.stderr


@pytest.mark.e2e
def test_a_mat_only_config_runs_from_another_directory(tmp_path):
    user_mat(tmp_path / "mine.mat", 60)
    run = snakemake_elsewhere(tmp_path, mat_only_config())
    assert run.returncode == 0, run.stderr[-5000:]
    scores = pq.read_table(tmp_path / "results" / "scores.parquet").to_pylist()
    assert {row["dataset"] for row in scores} == {"mine"}
    assert (tmp_path / "results" / "tables" / "table2.md").exists()
    # written where the user ran it, nothing in the repository
    assert not (REPO / "results" / "mine").exists()
