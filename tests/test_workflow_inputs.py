"""Real inputs through the whole workflow (``snakemake --cores 2``): a five-fold Kusner
.mat file downloaded as a zip from a local HTTP server (pinned checksum), a one-fold .mat
file without word strings, and a TSV corpus with a word2vec text file; then every bad
input stops its job with one line naming the file, and leaves no output behind.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from scipy.io import savemat
from workflow_helpers import record_rules

from wmdeval.core.methods import METHODS

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e

DIM = 8
TOPICS = {  # two classes with their own words, plus shared words
    "sport": ["goal", "match", "team", "score", "coach", "league", "ball"],
    "music": ["song", "band", "album", "guitar", "concert", "singer", "drum"],
    "shared": ["today", "people", "great", "new", "year"],
}


def vocabulary_vectors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    words = [w for ws in TOPICS.values() for w in ws]
    return {w: rng.normal(size=DIM) for w in words}


def random_documents(n: int, seed: int) -> list[tuple[int, dict[str, int]]]:
    """(label, bag) pairs: label 1 = sport, 2 = music; each bag mostly from its topic."""
    rng = np.random.default_rng(seed)
    docs = []
    for d in range(n):
        label = 1 + d % 2
        topic = TOPICS["sport" if label == 1 else "music"]
        words = list(rng.choice(topic, size=3, replace=False))
        words += list(rng.choice(TOPICS["shared"], size=2, replace=False))
        docs.append((label, {w: int(rng.integers(1, 4)) for w in words}))
    return docs


def cell(items) -> np.ndarray:
    out = np.empty((1, len(items)), dtype=object)
    for k, item in enumerate(items):
        out[0, k] = item
    return out


def document_cells(docs, vectors, with_words=True) -> dict:
    """X, BOW_X (and words) cells of MATLAB's layout for these documents."""
    fields = {
        "X": cell([np.array([vectors[w] for w in bag]).T for _, bag in docs]),
        "BOW_X": cell([np.array([list(bag.values())], dtype=np.float64) for _, bag in docs]),
        "Y": np.array([[label for label, _ in docs]], dtype=np.float64),
    }
    if with_words:
        fields["words"] = cell([cell([np.array([w]) for w in bag]) for _, bag in docs])
    return fields


def five_fold_mat(path: Path, n: int = 40, **overrides) -> None:
    docs = random_documents(n, seed=1)
    docs[7] = docs[3]  # a planted duplicate
    fields = document_cells(docs, vocabulary_vectors())
    rng = np.random.default_rng(2)
    test_size = n * 3 // 10
    permutations = [rng.permutation(n) + 1 for _ in range(5)]
    fields["TE"] = np.array([np.sort(p[:test_size]) for p in permutations], dtype=np.float64)
    fields["TR"] = np.array([np.sort(p[test_size:]) for p in permutations], dtype=np.float64)
    fields.update(overrides)
    savemat(path, fields)


def one_fold_mat(path: Path) -> None:
    vectors = vocabulary_vectors()
    train, test = random_documents(30, seed=3), random_documents(12, seed=4)
    fields = {}
    for part, docs in (("tr", train), ("te", test)):
        cells = document_cells(docs, vectors, with_words=False)
        fields[f"x{part}"], fields[f"BOW_x{part}"] = cells["X"], cells["BOW_X"]
        fields[f"y{part}"] = cells["Y"]
    savemat(path, fields)


def tsv_corpus(path: Path) -> None:
    lines = ["text\tlabel"]
    for label, bag in random_documents(40, seed=5):
        text = " ".join(w for w, c in bag.items() for _ in range(c))
        lines.append(f"{text} the and\t{'sport' if label == 1 else 'music'}")
    path.write_text("\n".join(lines) + "\n")


def word2vec_text(path: Path) -> None:
    vectors = vocabulary_vectors()
    rows = [f"{w} " + " ".join(f"{v:.6f}" for v in vec) for w, vec in vectors.items()]
    path.write_text(f"{len(rows)} {DIM}\n" + "\n".join(rows) + "\n")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("www")
    handler = functools.partial(_Quiet, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def workflow_dir(tmp_path: Path) -> Path:
    shutil.copy(REPO / "Snakefile", tmp_path)
    shutil.copytree(REPO / "workflow" / "rules", tmp_path / "workflow" / "rules")
    shutil.copytree(REPO / "workflow" / "report", tmp_path / "workflow" / "report")
    shutil.copytree(REPO / "config", tmp_path / "config")
    shutil.copytree(REPO / "envs", tmp_path / "envs")
    return tmp_path


def snakemake(workdir: Path, config: dict, *targets: str) -> subprocess.CompletedProcess:
    (workdir / "my.yaml").write_text(yaml.safe_dump(config))
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    # targets first: --configfile takes every following word as another config file
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        *targets,
        "--configfile",
        "my.yaml",
    ]
    run = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200
    )
    record_rules(run)
    return run


ANALYSES = ("n2o", "crossmatch", "corpus_distances", "ksc", "wmd_vs_bow")


@pytest.fixture(scope="module")
def real_inputs_run(tmp_path_factory, server):
    root, url = server
    workdir = workflow_dir(tmp_path_factory.mktemp("real"))
    five_fold_mat(workdir / "five.mat")
    with zipfile.ZipFile(root / "kusner.zip", "w") as archive:
        archive.write(workdir / "five.mat", "shared/five-emd_tr_te_split.mat")
    digest = hashlib.sha256((root / "kusner.zip").read_bytes()).hexdigest()
    one_fold_mat(workdir / "one.mat")
    tsv_corpus(workdir / "corpus.tsv")
    word2vec_text(workdir / "vectors.txt")
    config = {
        "datasets": {
            "five": {
                "format": "kusner-mat",
                "url": f"{url}/kusner.zip",
                "sha256": digest,
                "member": "five-emd_tr_te_split.mat",
            },
            "one": {"format": "kusner-mat", "path": "one.mat"},
            "tsv": {"format": "table", "path": "corpus.tsv", "embeddings": "w2v"},
        },
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vectors.txt"}},
        "run": ["five", "one", "tsv"],
        "wmd": {"blocks": 3},
        # what these inputs must reach is the scores of the paper's methods; the analyses,
        # PCA and the methods beyond the paper are the demo's (test_workflow.py)
        "analyses": {name: {"enabled": False} for name in ANALYSES},
        "methods": {"builtin": [method.slug for method in METHODS]},
        "pca_dims": [],
    }
    run = snakemake(workdir, config)
    assert run.returncode == 0, run.stderr[-5000:]
    return workdir


def test_all_three_inputs_reach_the_scores(real_inputs_run):
    results = real_inputs_run / "results"
    scores = pq.read_table(results / "scores.parquet").to_pylist()
    folds = {"five": 5, "one": 1, "tsv": 5}
    for dataset, n_folds in folds.items():
        for variant in ("original", "clean"):
            rows = [r for r in scores if r["dataset"] == dataset and r["variant"] == variant]
            # the paper's 14 methods
            assert len(rows) == len(METHODS) * 2 * n_folds, (dataset, variant)
            assert {r["method"] for r in rows} == {m.name for m in METHODS}
    # the topics are separable: WMD does far better than chance everywhere
    for dataset in folds:
        errors = [
            r["test_error"]
            for r in scores
            if r["dataset"] == dataset and r["method"] == "WMD" and r["classifier"] == "knn"
        ]
        assert np.mean(errors) < 0.25, dataset
    # the one-fold file's words were identified by their vectors
    report = pq.read_table(results / "one" / "ingest" / "report.parquet").to_pylist()[0]
    assert report["word_identity"] == "vectors"
    # the planted duplicate of the five-fold file is found and removed
    summary = pq.read_table(results / "five" / "duplicates" / "summary.parquet").to_pylist()[0]
    assert summary["duplicate_pairs"] == 1
    assert pq.read_table(results / "five" / "clean" / "documents.parquet").num_rows == 39
    # stop words of the TSV were dropped by the Kusner list; "the"/"and" never appear
    words = pq.read_table(results / "tsv" / "ingest" / "documents.parquet").column("words")
    assert not {"the", "and"} & {w for ws in words.to_pylist() for w in ws}
    # all-words scores exist only for the raw-text dataset
    allwords = pq.read_table(results / "scores_allwords.parquet").to_pylist()
    assert {r["dataset"] for r in allwords} == {"tsv"}


BAD_INPUTS = {
    # case: (dataset spec, file writer, target, text the one-line error must contain)
    "mat missing a field": (
        {"format": "kusner-mat", "path": "bad.mat"},
        lambda d: savemat(d / "bad.mat", {"X": cell([np.zeros((DIM, 1))])}),
        "bad.mat: missing field",
    ),
    "TR index out of range": (
        {"format": "kusner-mat", "path": "bad.mat"},
        lambda d: five_fold_mat(d / "bad.mat", TR=np.full((5, 28), 41.0)),
        "out of range",
    ),
    "NaN in a vector": (
        {"format": "kusner-mat", "path": "bad.mat"},
        lambda d: five_fold_mat(d / "bad.mat", X=cell([np.full((DIM, 5), np.nan)] * 40)),
        "bad.mat",
    ),
    "label column that does not exist": (
        {"format": "table", "path": "bad.tsv", "label_column": "category", "embeddings": "w2v"},
        lambda d: tsv_corpus(d / "bad.tsv"),
        "bad.tsv: no column 'category'",
    ),
}


#: Errors planning finds, reading a .mat file's header for its size, or ingesting a local
#: table as its job will (wmdeval/planning/inputs.py).
FOUND_WHILE_PLANNING = {"mat missing a field", "label column that does not exist"}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_dataset_input_is_one_line_and_leaves_nothing(tmp_path, case):
    spec, write, expected = BAD_INPUTS[case]
    workdir = workflow_dir(tmp_path)
    write(workdir)
    word2vec_text(workdir / "vectors.txt")
    config = {
        "datasets": {"bad": spec},
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vectors.txt"}},
        "run": ["bad"],
    }
    run = snakemake(workdir, config, "results/bad/ingest/documents.parquet")
    assert run.returncode != 0
    if case in FOUND_WHILE_PLANNING:  # in the file's header: before any job
        lines = [line for line in run.stderr.splitlines() if line.startswith("wmdeval: ")]
        assert len(lines) == 1 and expected in lines[0], run.stderr[-3000:]
        assert not (workdir / "results").exists()
        return
    log = (workdir / "results" / "logs" / "bad" / "ingest.log").read_text()
    error_lines = [line for line in log.splitlines() if "error:" in line]
    assert len(error_lines) == 1 and expected in error_lines[0], log
    assert "Traceback" not in log
    assert not list((workdir / "results" / "bad").rglob("*.parquet"))


def test_embedding_with_a_wrong_header(tmp_path):
    workdir = workflow_dir(tmp_path)
    tsv_corpus(workdir / "corpus.tsv")
    # GloVe-style file (no header line) declared as word2vec text
    word2vec_text(workdir / "vectors.txt")
    lines = (workdir / "vectors.txt").read_text().splitlines()[1:]
    (workdir / "vectors.txt").write_text("\n".join(lines) + "\n")
    config = {
        "datasets": {"tsv": {"format": "table", "path": "corpus.tsv", "embeddings": "w2v"}},
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vectors.txt"}},
        "run": ["tsv"],
    }
    run = snakemake(workdir, config, "results/tsv/vectors/embeddings.parquet")
    assert run.returncode != 0
    log = (workdir / "results" / "logs" / "tsv" / "lookup_embeddings.log").read_text()
    error_lines = [line for line in log.splitlines() if "error:" in line]
    assert len(error_lines) == 1 and "vectors.txt" in error_lines[0], log
    assert not (workdir / "results" / "tsv" / "vectors" / "embeddings.parquet").exists()


def test_wrong_checksum_removes_the_download(tmp_path, server):
    root, url = server
    (root / "corpus.tsv").write_text("text\tlabel\nrocket launch\tspace\n")
    workdir = workflow_dir(tmp_path)
    word2vec_text(workdir / "vectors.txt")
    config = {
        "datasets": {
            "remote": {
                "format": "table",
                "url": f"{url}/corpus.tsv",
                "sha256": "0" * 64,
                "embeddings": "w2v",
            }
        },
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vectors.txt"}},
        "run": ["remote"],
    }
    run = snakemake(workdir, config, "results/remote/ingest/documents.parquet")
    assert run.returncode != 0
    logs = list((workdir / "results" / "logs" / "downloads").glob("*.log"))
    assert len(logs) == 1
    assert "checksum mismatch" in logs[0].read_text()
    # neither the bad file nor a partial download is left anywhere under resources/
    assert not [p for p in (workdir / "resources").rglob("*") if p.is_file()]


def test_missing_file_is_named_before_any_job(tmp_path):
    workdir = workflow_dir(tmp_path)
    config = {
        "datasets": {"gone": {"format": "kusner-mat", "path": "nowhere.mat"}},
        "run": ["gone"],
    }
    run = snakemake(workdir, config)
    assert run.returncode != 0
    assert "nowhere.mat" in run.stderr + run.stdout
