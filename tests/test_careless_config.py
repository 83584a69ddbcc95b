"""A new user's careless config and input (issue 54, part B): dataset names YAML reads as
numbers or booleans or that collide with the workflow's own folders, ``run: []``,
``wmd.blocks`` above a corpus's documents, a vocabulary filter that empties every
document, k above the training documents, negative distances from a user's method, an
OSError such as a full disk, and the NaN warning of valid one-fold input. Each ends in
one line naming the key or file (and no output), or in a warning that reaches the
terminal; the workflow cases run through Snakemake in a temporary directory."""

from __future__ import annotations

import errno
import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402
from workflow_helpers import record_rules, write_word2vec_text  # noqa: E402

from wmdeval import cli  # noqa: E402
from wmdeval.cleaning import vocabulary  # noqa: E402
from wmdeval.core import io, schemas  # noqa: E402
from wmdeval.core.config import load_schema, validate  # noqa: E402
from wmdeval.core.errors import WmdevalError  # noqa: E402
from wmdeval.core.methods import METHODS  # noqa: E402
from wmdeval.core.roles import k_above_training  # noqa: E402
from wmdeval.core.variant import DenseDistances  # noqa: E402
from wmdeval.distances import external  # noqa: E402
from wmdeval.distances.factory import prepare_variant  # noqa: E402
from wmdeval.planning.modes import check_blocks  # noqa: E402
from wmdeval.reporting.figures import save_figure  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# --------------------------------------------------------------------------- a small corpus

TOPICS = {
    "food": "bread cheese apple soup rice salad pasta".split(),
    "sport": "goal match team coach ball league score".split(),
    "tech": "computer code software chip data network robot".split(),
}
SHARED = "today people great new year".split()
DIM = 20


def toy_table(path: Path, n: int = 42, split: bool = False) -> None:
    """``n`` short texts of 3 labels (seeded), as a TSV; ``split``: a train/test column."""
    rng = np.random.default_rng(0)
    lines = ["text\tlabel" + ("\tsplit" if split else "")]
    for i in range(n):
        label = list(TOPICS)[i % 3]
        words = list(rng.choice(TOPICS[label], 3, replace=False))
        words += list(rng.choice(SHARED, 2, replace=False))
        row = " ".join(words) + f" the\t{label}"
        lines.append(row + (("\ttest" if i % 4 == 0 else "\ttrain") if split else ""))
    path.write_text("\n".join(lines) + "\n")


def toy_vectors(path: Path) -> None:
    """A 20-d word2vec text file of every word of the corpus."""
    write_word2vec_text(path, [w for ws in TOPICS.values() for w in ws] + SHARED, DIM, seed=1)


def toy_config(**dataset) -> dict:
    return {
        "datasets": {"toy": {"format": "table", "path": "toy.tsv", "embeddings": "w2v", **dataset}},
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vec.txt"}},
        "run": ["toy"],
        "all_words": False,
        "pca_dims": [],
        "variants": ["original"],
        "significance": {"variant": "original"},
        "analyses": {
            name: {"enabled": False}
            for name in ("n2o", "crossmatch", "corpus_distances", "ksc", "wmd_vs_bow")
        },
    }


def workflow_dir(tmp_path: Path, split: bool = False) -> Path:
    shutil.copy(REPO / "Snakefile", tmp_path)
    for part in ("workflow/rules", "workflow/report", "config", "envs"):
        shutil.copytree(REPO / part, tmp_path / part)
    toy_table(tmp_path / "toy.tsv", split=split)
    toy_vectors(tmp_path / "vec.txt")
    return tmp_path


def snakemake(workdir: Path, config: dict | str, *args: str) -> subprocess.CompletedProcess:
    """``snakemake --cores 1 ARGS --configfile my.yaml`` (the README's command) in
    ``workdir``; ``config`` as a dict or as YAML text (to keep YAML's reading of it)."""
    text = config if isinstance(config, str) else yaml.safe_dump(config)
    (workdir / "my.yaml").write_text(text)
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)}
    command = [sys.executable, "-m", "snakemake", "--cores", "1", *args, "--configfile", "my.yaml"]
    run = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=1200
    )
    record_rules(run)
    return run


def wmdeval_lines(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("wmdeval: ")]


# ------------------------------------------------------------------- dataset names, run: []


@pytest.mark.parametrize(
    ("name", "said"), [("123", "the name 123 is a number"), ("yes", "the name True is a boolean")]
)
def test_a_dataset_name_yaml_reads_as_a_number_or_boolean_is_one_line(name, said):
    config = yaml.safe_load(
        f"datasets:\n  {name}: {{format: table, path: t.tsv, embeddings: e}}\n"
        "embeddings:\n  e: {format: glove, path: v.txt}\n"
    )
    with pytest.raises(WmdevalError) as raised:
        validate(config)
    message = str(raised.value)
    assert message.startswith("config: datasets: ") and said in message, message
    assert "quotes" in message and "\n" not in message


def test_a_quoted_number_is_a_valid_dataset_name():
    config = yaml.safe_load(
        "datasets:\n  '123': {format: table, path: t.tsv, embeddings: e}\n"
        "embeddings:\n  e: {format: glove, path: v.txt}\n"
    )
    assert list(validate(config)["datasets"]) == ["123"]


def test_a_non_string_key_anywhere_is_named():
    config = yaml.safe_load(
        "datasets:\n  toy: {format: table, path: t.tsv, embeddings: e}\n"
        "embeddings:\n  e: {format: glove, path: v.txt}\n"
        "methods:\n  callables:\n    5: {function: 'mine:distance'}\n"
    )
    with pytest.raises(WmdevalError, match=r"^config: methods\.callables: the name 5 is a number"):
        validate(config)


def _reserved() -> list[str]:
    return load_schema()["properties"]["datasets"]["propertyNames"]["not"]["enum"]


@pytest.mark.parametrize("name", ["tables", "figures", "logs", "benchmarks", "scores.parquet"])
def test_a_dataset_named_like_the_workflows_own_folders_is_refused(name):
    config = {
        "datasets": {name: {"format": "table", "path": "t.tsv", "embeddings": "e"}},
        "embeddings": {"e": {"format": "glove", "path": "v.txt"}},
    }
    with pytest.raises(WmdevalError) as raised:
        validate(config)
    assert str(raised.value).startswith(f"config: datasets.{name}: the name {name!r} is one of")


def test_reserved_names_cover_every_shared_folder_and_file_under_results():
    """Every folder a rule writes directly under results/, results/logs/ or
    results/benchmarks/ that is not a dataset's, and every file directly under results/,
    is a name no dataset may take (a dataset's outputs live in results/<dataset>/)."""
    rules = "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    shared = set(re.findall(r'(?:logged|benchmarked)\(\s*"([^"{/]+)/', rules))
    shared |= set(re.findall(r'"results/([^"{/]+)/', rules))
    files = set(re.findall(r'"results/([^"{/]+\.[a-z]+)"', rules))
    assert {"tables", "figures", "downloads", "embeddings"} <= shared
    assert "scores.parquet" in files
    assert shared | files | {"logs", "benchmarks", "README.md"} <= set(_reserved())


def test_an_empty_run_list_is_one_line():
    config = {
        "datasets": {"toy": {"format": "table", "path": "t.tsv", "embeddings": "e"}},
        "embeddings": {"e": {"format": "glove", "path": "v.txt"}},
        "run": [],
    }
    with pytest.raises(WmdevalError, match=r"^config: run: an empty list runs no dataset"):
        validate(config)


# ----------------------------------------------------------------------------- wmd.blocks


def test_blocks_above_the_documents_of_a_full_matrix_are_refused():
    check_blocks(42, {"toy": 42, "remote": None})  # at most one a document; unknown: no check
    with pytest.raises(WmdevalError) as raised:
        check_blocks(5000, {"big": 9000, "toy": 42})
    message = str(raised.value)
    assert message.startswith("config: wmd.blocks: 5000") and "'toy' has 42 documents" in message
    assert "at most 42" in message


# ------------------------------------------------------- a vocabulary that empties everything


def _documents(bags: list[dict[str, int]]) -> pa.Table:
    return pa.table(
        {
            "doc_id": pa.array(range(len(bags)), pa.int32()),
            "label": [f"l{i % 2}" for i in range(len(bags))],
            "y": pa.array([i % 2 for i in range(len(bags))], pa.int32()),
            "words": [sorted(bag) for bag in bags],
            "counts": [[float(bag[w]) for w in sorted(bag)] for bag in bags],
        },
        schema=schemas.DOCUMENTS,
    )


@pytest.fixture
def filter_inputs(tmp_path):
    bags = [{"apple": 1, "bread": 2}, {"cheese": 1, "apple": 1}, {"goal": 3}, {"team": 1}]
    io.write_table(_documents(bags), tmp_path / "documents.parquet", schemas.DOCUMENTS)
    words = ["apple", "bread", "cheese", "goal", "team"]
    pq.write_table(pa.table({"word": words}), tmp_path / "embeddings.parquet")
    return tmp_path


def _run_filter(root: Path, min_df: int) -> None:
    vocabulary.run_filter(
        str(root / "documents.parquet"),
        str(root / "embeddings.parquet"),
        "toy",
        min_df,
        None,
        str(root / "oov" / "documents.parquet"),
        str(root / "oov" / "report.parquet"),
    )


def test_a_vocabulary_filter_that_empties_every_document_is_one_line(filter_inputs):
    with pytest.raises(WmdevalError) as raised:
        _run_filter(filter_inputs, min_df=1000)
    message = str(raised.value)
    assert message.startswith("dataset 'toy': datasets.toy.vocabulary (min_df: 1000")
    assert "every one of its 4 documents without words" in message
    assert not (filter_inputs / "oov").exists() or not list((filter_inputs / "oov").iterdir())
    # a filter that leaves words in some documents passes (apple is in two)
    _run_filter(filter_inputs, min_df=2)
    kept = pq.read_table(filter_inputs / "oov" / "documents.parquet").column("words").to_pylist()
    assert kept == [["apple"], ["apple"], [], []]


# ------------------------------------------------------------------ k above the training set


def test_k_above_the_training_documents_is_said_per_classifier():
    settings = {
        "knn": {"k": [1, 5, 24, 25, 100], "validation_size": 0.2, "seed": 0},
        "wknn": {"k": 19, "validation_size": 0.3, "seed": 0},
    }
    # the smallest fold: 30 training documents; kNN is tuned on 30 - ceil(6.0) = 24
    lines = k_above_training([31, 30, 33], settings, "toy/original")
    assert lines == [
        "toy/original: evaluation.knn.k: 25, 100 above the 24 training documents it is "
        "tuned with (the smallest fold's 30 less the validation split): such k vote with "
        "every training document"
    ]
    # wkNN: 30 - ceil(9.0) = 21 fit documents, k 19 fits; with 25 training documents not
    assert k_above_training([25], settings, "t")[1].startswith("t: evaluation.wknn.k: 19 above")
    assert k_above_training([200], settings, "t") == []


# ------------------------------------------------------------ negative distances of a user


def test_a_negative_distance_in_a_precomputed_matrix_names_the_file(tmp_path):
    matrix = np.array([[0.0, 0.5, 0.2], [0.5, 0.0, -1e-16], [0.2, -1e-16, 0.0]])
    path = tmp_path / "mine.parquet"
    io.write_distances(matrix, np.array([3, 4, 5]), path)
    with pytest.raises(WmdevalError) as raised:
        external.read_precomputed_matrix(path, np.array([3, 4, 5]))
    message = str(raised.value)
    assert message.startswith(f"{path} (methods.matrices): negative distance -1e-16 ")
    assert "doc_id 4 x doc_id 5" in message
    np.fill_diagonal(matrix, np.nan)
    matrix[1, 2] = matrix[2, 1] = 0.0
    io.write_distances(matrix, np.array([3, 4, 5]), path)
    assert np.isnan(external.read_precomputed_matrix(path, np.array([3, 4, 5]))[0, 0])


def test_a_negative_distance_from_a_callable_names_the_function():
    documents = _documents([{"apple": 1}, {"bread": 1}, {"goal": 2}])

    def cosine_like(documents, embeddings, rows, cols):
        return 1.0 - np.ones((len(rows), len(cols))) * (1 + 2e-16)

    with pytest.raises(WmdevalError) as raised:
        external.callable_block(cosine_like, "mine:cosine_like", documents, None, [0, 1], [0, 2])
    message = str(raised.value)
    assert message.startswith("function 'mine:cosine_like' (methods.callables): negative ")
    assert "doc_id 0 x doc_id 0" in message


# ------------------------------------------------------------ NaN warned of only when true


def test_skipped_test_pairs_of_one_fold_are_not_warned_of(caplog):
    documents = _documents([{"apple": 1}, {"bread": 1}, {"goal": 2}, {"team": 1}, {"rice": 1}])
    splits = pa.table(
        {
            "fold": pa.array([0] * 5, pa.int16()),
            "doc_id": pa.array(range(5), pa.int32()),
            "subset": ["train", "train", "train", "test", "test"],
        },
        schema=schemas.SPLITS,
    )
    rng = np.random.default_rng(0)
    matrix = rng.random((5, 5)) + 0.1
    matrix = matrix + matrix.T
    np.fill_diagonal(matrix, 0.0)
    matrix[3:, 3:] = np.nan  # the test x test pairs WMD skips
    ids = np.arange(5)
    with caplog.at_level(logging.WARNING, logger="wmdeval.core.variant"):
        variant = prepare_variant(documents, splits, {"wmd": (ids, matrix)})
        variant.wmd["wmd"]
    assert "outside the rows" not in caplog.text
    # a NaN between a training and a test document is still warned of
    matrix[0, 3] = matrix[3, 0] = np.nan
    with caplog.at_level(logging.WARNING, logger="wmdeval.core.variant"):
        prepare_variant(documents, splits, {"wmd": (ids, matrix)})
    assert "WMD distances have NaN outside the rows" in caplog.text
    # without the one fold, NaN among test documents is not expected: warned of
    caplog.clear()
    matrix[0, 3] = matrix[3, 0] = 1.0
    with caplog.at_level(logging.WARNING, logger="wmdeval.core.variant"):
        DenseDistances(matrix)
    assert "outside the rows" in caplog.text


# ------------------------------------------------------------------------------- OSError


def _ingest_arguments(tmp_path: Path) -> list[str]:
    toy_table(tmp_path / "toy.tsv")
    spec = validate(toy_config())["datasets"]["toy"]
    spec["path"] = str(tmp_path / "toy.tsv")
    return [
        "ingest",
        "--spec",
        json.dumps(spec),
        "--documents",
        str(tmp_path / "out" / "documents.parquet"),
        "--splits",
        str(tmp_path / "out" / "splits.parquet"),
    ]


def test_a_full_disk_under_pyarrow_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    arguments = _ingest_arguments(tmp_path)

    def full_disk(table, where, **options):
        Path(where).write_bytes(b"PAR1")  # a part written, then the disk is full
        raise OSError("error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)
    assert cli.main(arguments) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"wmdeval ingest: error: {tmp_path / 'out' / 'documents.parquet'}: error writing "
        "bytes to file. Detail: [errno 28] No space left on device"
    )
    assert not any("Traceback" in line for line in err)
    assert list((tmp_path / "out").iterdir()) == []  # nothing left, not even the part


def test_a_full_disk_under_matplotlib_names_the_figure(tmp_path, monkeypatch):
    figure = plt.figure()
    monkeypatch.setattr(
        type(figure),
        "savefig",
        lambda self, where, **options: (_ for _ in ()).throw(
            OSError(errno.ENOSPC, "No space left on device")
        ),
    )
    with pytest.raises(OSError) as raised:
        save_figure(figure, tmp_path / "figure3.png")
    plt.close(figure)
    assert raised.value.errno == errno.ENOSPC
    assert io.os_error_line(raised.value) == (
        f"{tmp_path / 'figure3.png'}: No space left on device"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_missing_permission_is_one_line(tmp_path, monkeypatch, capsys):
    arguments = _ingest_arguments(tmp_path)

    def refused(*args, **options):
        raise PermissionError(errno.EACCES, "Permission denied", "results/toy/ingest")

    monkeypatch.setattr(Path, "mkdir", refused)
    assert cli.main(arguments) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "wmdeval ingest: error: results/toy/ingest: Permission denied"
    )


# ------------------------------------------------------------------ through Snakemake

e2e = pytest.mark.e2e


@e2e
@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "datasets:\n  123: {format: table, path: toy.tsv, embeddings: w2v}\n"
            "embeddings:\n  w2v: {format: word2vec-text, path: vec.txt}\n",
            "wmdeval: config: datasets: the name 123 is a number, not a string",
        ),
        (
            "datasets:\n  tables: {format: table, path: toy.tsv, embeddings: w2v}\n"
            "embeddings:\n  w2v: {format: word2vec-text, path: vec.txt}\n",
            "wmdeval: config: datasets.tables: the name 'tables' is one of the workflow's",
        ),
        (
            "datasets:\n  toy: {format: table, path: toy.tsv, embeddings: w2v}\n"
            "embeddings:\n  w2v: {format: word2vec-text, path: vec.txt}\nrun: []\n",
            "wmdeval: config: run: an empty list runs no dataset",
        ),
        (
            "datasets:\n  toy: {format: table, path: toy.tsv, embeddings: w2v}\n"
            "embeddings:\n  w2v: {format: word2vec-text, path: vec.txt}\n"
            "wmd: {blocks: 5000}\n",
            "wmdeval: config: wmd.blocks: 5000 stored blocks per WMD matrix, but dataset "
            "'toy' has 42 documents; set wmd.blocks to at most 42",
        ),
    ],
    ids=["number name", "reserved name", "empty run", "blocks"],
)
def test_careless_config_stops_before_planning_in_one_line(tmp_path, config, expected):
    workdir = workflow_dir(tmp_path)
    run = snakemake(workdir, config, "-n")
    assert run.returncode == 1, run.stderr[-3000:]
    lines = wmdeval_lines(run)
    assert len(lines) == 1 and lines[0].startswith(expected), run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert not (workdir / "results").exists()


@e2e
def test_a_vocabulary_that_empties_every_document_stops_at_the_filter(tmp_path):
    workdir = workflow_dir(tmp_path)
    run = snakemake(workdir, toy_config(vocabulary={"min_df": 1000}))
    assert run.returncode == 1
    log = (workdir / "results" / "logs" / "toy" / "filter_oov.log").read_text()
    errors = [line for line in log.splitlines() if "error:" in line]
    # the corpus's 26 distinct words (21 of the topics, 5 shared) all have a vector
    assert errors == [
        "wmdeval filter-oov: error: dataset 'toy': datasets.toy.vocabulary (min_df: 1000, "
        "max_words_per_doc: null) leaves every one of its 42 documents without words (each "
        "of its 26 distinct words with an embedding occurs in fewer than 1000 documents); "
        "lower min_df"
    ], log
    assert "Traceback" not in log
    assert not (workdir / "results" / "toy" / "oov").exists()
    assert not (workdir / "results" / "scores.parquet").exists()
    assert not (workdir / "results" / "tables").exists()


@e2e
def test_k_above_training_reaches_the_terminal_and_one_fold_nan_is_not_warned(tmp_path):
    """A one-fold table (31 training documents, 24 after kNN's validation split) with k
    up to 100: the scores and tables are written, and the end of the run says which k
    are above the training documents; the evaluate log and the tables' Markdown say it
    too, and the log no longer warns of the test x test pairs WMD skips."""
    workdir = workflow_dir(tmp_path, split=True)
    config = toy_config(split_column="split")
    config["evaluation"] = {"knn": {"k": [1, 3, 100]}}
    config["methods"] = {"builtin": [m.slug for m in METHODS]}  # the paper's 14
    run = snakemake(workdir, config, "results/tables/table2.md")
    assert run.returncode == 0, run.stderr[-3000:]
    said = (
        "toy/original: evaluation.knn.k: 100 above the 24 training documents it is tuned "
        "with (the smallest fold's 31 less the validation split)"
    )
    # wkNN's k 19 is below its 31 - ceil(0.3 * 31) = 21 fit documents: not said
    warnings = [line for line in wmdeval_lines(run) if "warning:" in line]
    assert len(warnings) == 1 and warnings[0].startswith(f"wmdeval: warning: {said}"), warnings
    log = (workdir / "results" / "logs" / "toy" / "original" / "evaluate.log").read_text()
    assert said in log
    assert "outside the rows" not in log
    scores = pq.read_table(workdir / "results" / "toy" / "original" / "scores.parquet")
    assert scores.num_rows > 0
    # and under every table of the report
    for table in ("table2", "table3", "table6"):
        markdown = (workdir / "results" / "tables" / f"{table}.md").read_text()
        assert f"**Warning**: {said}" in markdown, table
