"""benchmarks/paper_scale.py's pieces that must be right for its numbers to mean anything:
its stand-in .mat files are Kusner files of the paper's layout and shape as ingest reads
them, and its reader of a run's log pairs each benchmark file with the job's declaration.
(The benchmark itself is a script that prints numbers; it is not run here.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from wmdeval.ingest import kusner

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def paper_scale():
    spec = importlib.util.spec_from_file_location(
        "paper_scale", REPO / "benchmarks" / "paper_scale.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["twitter", "reuters"])
def test_stand_in_mat_has_the_papers_layout_and_shape(tmp_path, paper_scale, name):
    corpus = paper_scale.scaled(paper_scale.PAPER[name], 0.03)
    rng = np.random.default_rng(0)
    bags, labels, subsets = paper_scale.generated_documents(corpus, rng)
    path = tmp_path / f"{name}.mat"
    stats = paper_scale.write_mat(corpus, bags, labels, subsets, path, rng)
    data = kusner.read_kusner_mat(path)
    assert kusner.mat_documents(path) == corpus.documents == data.documents.num_rows
    assert data.report["layout"] == corpus.layout
    assert data.report["dim"] == paper_scale.DIM
    assert data.report["unit_norm_fraction"] == 1.0
    assert data.report["vocabulary"] == stats["vocabulary"]
    folds = 5 if corpus.layout == "five-fold" else 1
    assert data.report["folds"] == folds
    assert data.report["test_sizes"] == [corpus.test] * folds
    sizes = [len(bag) for bag in bags]
    assert abs(np.mean(sizes) - corpus.words) < 0.2 * corpus.words


def test_the_log_reader_pairs_benchmark_files_with_declarations(paper_scale):
    log = """[Wed Nov 25 16:05:47 2026]
localrule wmd_search:
    input: a
    benchmark: results/benchmarks/t/original/neighbour_shards/wrd/2-of-2.tsv
    threads: 2
    resources: tmpdir=/tmp, runtime=11, mem_mb=601, mem=601 MB, mem_mib=574
[Wed Nov 25 16:05:52 2026]
rule ingest_kusner:
    benchmark: results/benchmarks/t/ingest.tsv
    resources: tmpdir=/tmp, runtime=60, mem_mb=2000, mem=2 GB, mem_mib=1908
rule all:
    input: x
"""
    found = paper_scale.declared(log)
    assert found["results/benchmarks/t/ingest.tsv"] == (
        "ingest_kusner",
        {"tmpdir": "/tmp", "runtime": "60", "mem_mb": "2000", "mem": "2 GB", "mem_mib": "1908"},
    )
    assert found["results/benchmarks/t/original/neighbour_shards/wrd/2-of-2.tsv"][0] == (
        "wmd_search"
    )
    assert len(found) == 2


def test_the_report_flags_jobs_over_or_far_under_their_declaration(tmp_path, paper_scale):
    bench = tmp_path / "results" / "benchmarks" / "t" / "ingest.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\tmax_rss\n90.0\t0:01:30\t2500.0\n")
    log = """rule ingest_kusner:
    benchmark: results/benchmarks/t/ingest.tsv
    resources: tmpdir=/tmp, runtime=1, mem_mb=2000
"""
    # a job run outside Snakemake: declared 10,000 MB, peak 3,000 MB (30 %)
    outside = {"evaluate (no transport methods)": [(10000.0, 3000.0, 60.0, 120.0)]}
    lines = paper_scale.report(tmp_path, log, outside)
    rows = {line.split(" | ")[0].lstrip("| "): line for line in lines[2:]}
    assert "| 1 | 2,000 | 2,500 | 125% | 1 | 1.5 | OVER SLOW |" in rows["ingest_kusner"]
    assert (
        "| 1 | 10,000 | 3,000 | 30% | 60 | 2.0 | 2.5x+ |" in rows["evaluate (no transport methods)"]
    )
