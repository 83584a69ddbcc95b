"""Ctrl-C (SIGINT) or SIGTERM in a job: one line `wmdeval <command>: interrupted` on stderr,
exit status 128 + the signal (130, 143), no traceback, and no output or temporary file."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from workflow_helpers import stderr_lines_until

from wmdeval.core import io, schemas
from wmdeval.ingest.corpora import documents_table

WMDEVAL = str(Path(sys.executable).parent / "wmdeval")
SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> tuple[Path, Path]:
    """400 documents of 40-60 distinct words over 2,000 words in 50 dimensions: one block
    of all 79,800 pairs solves for about 50 s on one core here, so a signal sent a second
    into the solve lands mid-solve."""
    directory = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    vocabulary = np.array([f"w{k:04d}" for k in range(2000)])
    bags = [
        {
            str(w): int(c)
            for w, c in zip(
                rng.choice(vocabulary, size, replace=False), rng.integers(1, 5, size), strict=True
            )
        }
        for size in rng.integers(40, 61, 400)
    ]
    documents = documents_table([Counter(bag) for bag in bags], ["a", "b"] * 200)
    vectors = rng.standard_normal((len(vocabulary), 50)).astype(np.float32)
    embeddings = pa.table(
        {
            "word": vocabulary.tolist(),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 50),
            "norm": np.ones(len(vocabulary), dtype=np.float32),
        },
        schema=schemas.embeddings_schema(50),
    )
    io.write_table(documents, directory / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(embeddings, directory / "embeddings.parquet")
    return directory / "documents.parquet", directory / "embeddings.parquet"


def assert_one_interrupted_line(stderr: str, command: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    assert stderr.endswith("\n"), stderr
    assert stderr.splitlines()[-1] == f"wmdeval {command}: interrupted", stderr
    assert stderr.count("interrupted") == 1, stderr


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(("signum", "status"), SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_interrupted_block_job_says_so_in_one_line(big_corpus, tmp_path, signum, status, threads):
    documents, embeddings = big_corpus
    out = tmp_path / "out"
    out.mkdir()
    command = [
        WMDEVAL,
        "wmd-block",
        "--documents",
        str(documents),
        "--embeddings",
        str(embeddings),
        "--weighting",
        "bow",
        "--block",
        "1-of-1",
        "--threads",
        str(threads),
        "--out",
        str(out / "1-of-1.parquet"),
    ]
    job = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        before = stderr_lines_until(job, "pairs; block 1/1", timeout=120)
        time.sleep(1.0)  # inside the solve
        started = time.monotonic()
        job.send_signal(signum)
        _, rest = job.communicate(timeout=60)
    finally:
        job.kill()
    stopped_within = time.monotonic() - started
    assert job.returncode == status, rest
    assert_one_interrupted_line("".join(before) + rest, "wmd-block")
    assert list(out.iterdir()) == []
    # it stops at once, not after solving the rest of its pairs
    assert stopped_within < 10


# A job that is writing its output (a temporary file) when the signal arrives.
WRITER = textwrap.dedent("""
    import os, signal, sys, time
    from wmdeval import cli
    from wmdeval.core import io

    def write_then_signal(out, which):
        with io.atomic_path(out) as tmp:
            tmp.write_text("half of it")
            os.kill(os.getpid(), getattr(signal, which))
            time.sleep(30)  # the signal ends the job first
            tmp.write_text("all of it")

    class HereCommand(cli.Command):
        def resolve(self):
            return write_then_signal

    cli.COMMANDS = (HereCommand("write-then-signal", "", "test", (
        cli.path("--out", "out"), cli.path("--signal", "which"))),)
    sys.exit(cli.main(sys.argv[1:]))
""")


@pytest.mark.parametrize(("signum", "status"), SIGNALS, ids=["SIGINT", "SIGTERM"])
def test_signal_while_writing_leaves_no_temporary_file(tmp_path, signum, status):
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            WRITER,
            "write-then-signal",
            "--out",
            str(out / "table.txt"),
            "--signal",
            signal.Signals(signum).name,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == status, run.stderr
    assert_one_interrupted_line(run.stderr, "write-then-signal")
    assert list(out.iterdir()) == []
