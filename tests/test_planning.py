"""The scheduler's resource model (wmdeval.planning.resources) and what planning imports."""

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

from wmdeval.core import io, schemas
from wmdeval.distances.wmd import pairs
from wmdeval.planning import resources

REPO = Path(__file__).resolve().parents[1]
#: Slow to import, or not needed to plan a run: none may load while Snakemake plans.
HEAVY = ("ot", "matplotlib", "gensim", "sklearn")


def documents_of_sizes(sizes: list[int]) -> pa.Table:
    """DOCUMENTS table whose document k has sizes[k] distinct words."""
    words = [[f"w{w:03d}" for w in range(size)] for size in sizes]
    return pa.table(
        {
            "doc_id": np.arange(len(sizes), dtype=np.int32),
            "label": ["x"] * len(sizes),
            "y": np.zeros(len(sizes), dtype=np.int32),
            "words": words,
            "counts": [[1.0] * len(ws) for ws in words],
        },
        schema=schemas.DOCUMENTS,
    )


def test_block_resources_come_from_its_share_of_the_work_and_double_per_attempt(tmp_path):
    sizes = np.random.default_rng(2).integers(1, 31, 60).tolist()
    path = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes(sizes), path, schemas.DOCUMENTS)
    one = resources.block_resources(path, 1, threads=1)
    many = resources.block_resources(path, 64, threads=1)
    assert many["mem_mb"] <= one["mem_mb"] and many["runtime"] <= one["runtime"]
    assert resources.block_resources(path, 64, threads=1, attempt=2) == {
        "mem_mb": 2 * many["mem_mb"],
        "runtime": 2 * many["runtime"],
    }
    # a dry run before the documents exist gets a nominal request
    assert resources.block_resources(tmp_path / "absent.parquet", 64, 1) == {
        "mem_mb": 1000,
        "runtime": 60,
    }


def test_block_runtime_is_the_work_of_every_pair_in_a_plain_loop(tmp_path):
    # 300 documents of 250-300 words: minutes of work, so the runtime depends on it
    sizes = np.random.default_rng(3).integers(250, 301, 300).tolist()
    path = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes(sizes), path, schemas.DOCUMENTS)
    units = 0.0
    for i, u_i in enumerate(sizes):
        for u_j in sizes[i + 1 :]:
            units += (u_i * u_j) ** pairs.WORK_EXPONENT + pairs.PAIR_OVERHEAD
    n_pairs = 300 * 299 / 2
    size_mb = path.stat().st_size / 1e6
    for n_blocks, threads in ((1, 1), (3, 1), (3, 4)):
        seconds = units * pairs.SECONDS_PER_UNIT / n_blocks / max(0.9 * threads, 1.0)
        expected = {
            "mem_mb": math.ceil(400 + 40 * n_pairs / n_blocks / 1e6 + 30 * size_mb),
            "runtime": math.ceil(5 + 3 * seconds / 60),
        }
        assert resources.block_resources(path, n_blocks, threads) == expected
    assert resources.block_resources(path, 1, 1)["runtime"] > 10


def test_gather_and_matrix_job_memory(tmp_path):
    path = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes([3] * 500), path, schemas.DOCUMENTS)
    # 1000 MB plus the float64 500 x 500 matrix (2 MB) three times
    assert resources.gather_mem_mb(path) == 1006
    assert resources.matrix_job_mem_mb(path) == 3006
    assert resources.matrix_job_mem_mb(path, attempt=2) == 6012
    # before the documents exist (a dry run)
    assert resources.gather_mem_mb(tmp_path / "absent.parquet") == 2000
    assert resources.matrix_job_mem_mb(tmp_path / "absent.parquet", attempt=3) == 12000


def planning_imports() -> list[str]:
    """The wmdeval import statements of the Snakefile and the rule files (top level)."""
    statement = re.compile(
        r"^(?:from wmdeval[\w.]* import (?:\([^)]*\)|[^\n]*)|import wmdeval[^\n]*)", re.M
    )
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    return [s for path in files for s in statement.findall(path.read_text())]


def heavy_modules_after(code: str) -> list[str]:
    """Which of HEAVY a fresh interpreter has loaded after running ``code``."""
    loaded = f"sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})"
    probe = f"{code}\nimport sys\nprint({loaded})"
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return ast.literal_eval(run.stdout.strip().splitlines()[-1])


def test_planning_imports_no_solver_or_plotting_library():
    statements = planning_imports()
    # what the workflow imports to plan: config, methods, and the resource model
    assert any("wmdeval.planning.resources" in s for s in statements), statements
    assert any("wmdeval.core" in s for s in statements), statements
    assert heavy_modules_after("\n".join(statements)) == []


def test_the_import_probe_sees_pot():
    """The probe itself: importing the solver does load POT."""
    assert "ot" in heavy_modules_after("from wmdeval.distances.wmd import solver")


def test_auto_mode_goes_by_the_documents_known_while_planning(tmp_path):
    from wmdeval.ingest.corpora import load_texts
    from wmdeval.planning import modes

    wmd = {"mode": "auto", "auto_min_documents": 2000}
    mat = {"format": "kusner-mat", "url": "u", "member": "amazon-emd_tr_te_split.mat"}
    assert modes.dataset_mode(mat, wmd)[0] == "knn"
    bbc = {"format": "kusner-mat", "url": "u", "member": "bbcsport-emd_tr_te_split.mat"}
    assert modes.dataset_mode(bbc, wmd) == ("full", "auto: 737 documents < 2,000")
    assert modes.dataset_mode({**bbc, "wmd_mode": "knn"}, wmd) == ("knn", "set in config")
    table = tmp_path / "t.tsv"
    table.write_text("text\tlabel\n" + "a b\tx\n" * 2500)
    assert modes.planned_documents({"format": "table", "path": str(table)})[0] == 2500
    assert modes.dataset_mode({"format": "table", "path": str(table)}, wmd)[0] == "knn"
    remote = {"format": "table", "url": "http://127.0.0.1/t.tsv"}
    assert modes.dataset_mode(remote, wmd)[0] == "full"
    for source, n in modes.DEMO_DOCUMENTS.items():
        assert len(load_texts({"format": "demo", "source": source})[0]) == n
