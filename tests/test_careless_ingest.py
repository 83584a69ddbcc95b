"""What careless input gets at ingest (issue 54, part A), each case a small config in a
temporary directory run through ``snakemake --cores 1``: a changed dataset key or
stop-word file reruns ingest and gives what a fresh directory gives; a table no result
could be meaningful for stops the run before planning with one line naming the file;
text is decoded as UTF-8 unless `encoding:` says otherwise.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from workflow_helpers import copy_workflow, record_rules, write_word2vec_text

pytestmark = pytest.mark.e2e

DIM = 20
TOPICS = {
    "food": ["bread", "cheese", "soup", "salad", "pasta", "apple", "bake"],
    "sport": ["goal", "match", "team", "coach", "league", "ball", "race"],
    "tech": ["chip", "code", "robot", "laptop", "server", "pixel", "cloud"],
}
SHARED = ["today", "people", "great", "news", "year"]
TARGETS = ("results/toy/ingest/documents.parquet", "results/toy/ingest/splits.parquet")


def corpus_rows(n: int = 42) -> list[dict[str, str]]:
    """``n`` short texts of 3 labels; a second text and label column, and a split column."""
    rows = []
    labels = list(TOPICS)
    for d in range(n):
        label = labels[d % 3]
        words = TOPICS[label]
        text = f"the {words[d % 7]} and {words[(d + 2) % 7]} {SHARED[d % 5]} of {words[d % 5]}"
        body = f"{words[(d + 3) % 7]} {SHARED[(d + 1) % 5]} {words[(d + 4) % 7]}"
        rows.append(
            {
                "text": text,
                "body": body,
                "label": label,
                "topic": labels[(d // 3) % 3],
                "split": "test" if d % 4 == 0 else "train",
            }
        )
    return rows


def write_table(path: Path, rows: list[dict[str, str]], encoding: str = "utf-8") -> None:
    columns = list(rows[0])
    lines = [",".join(columns)] + [",".join(row[c] for c in columns) for row in rows]
    path.write_bytes(("\n".join(lines) + "\n").encode(encoding))


def write_vectors(path: Path) -> None:
    write_word2vec_text(path, [w for ws in TOPICS.values() for w in ws] + SHARED, DIM, seed=0)


def base_config(**dataset) -> dict:
    return {
        "datasets": {"toy": {"format": "table", "path": "toy.csv", "embeddings": "w2v", **dataset}},
        "embeddings": {"w2v": {"format": "word2vec-text", "path": "vectors.txt"}},
        "run": ["toy"],
    }


def workdir_with_inputs(path: Path) -> Path:
    workdir = copy_workflow(path)
    write_table(workdir / "toy.csv", corpus_rows())
    write_vectors(workdir / "vectors.txt")
    (workdir / "mystop.txt").write_text("the\nand\nof\nnews\n")
    return workdir


def snakemake(workdir: Path, config: dict, *targets: str) -> subprocess.CompletedProcess:
    """``snakemake --cores 1 TARGETS --configfile my.yaml``, as the README says."""
    (workdir / "my.yaml").write_text(yaml.safe_dump(config))
    bin_dir = str(Path(sys.executable).parent)
    command = [sys.executable, "-m", "snakemake", "--cores", "1", *targets]
    run = subprocess.run(
        [*command, "--configfile", "my.yaml"],
        cwd=workdir,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(workdir)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    record_rules(run)
    return run


def outputs(workdir: Path) -> dict[str, list[dict]]:
    return {target: pq.read_table(workdir / target).to_pylist() for target in TARGETS}


# ------------------------------------------------ item 1: every dataset key is seen


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A directory where the ingest of the base config has run."""
    workdir = workdir_with_inputs(tmp_path_factory.mktemp("finished"))
    run = snakemake(workdir, base_config(), *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    return workdir


#: dataset key -> a new value (None: the key removed); each changes the ingest outputs
CHANGES = {
    "text_column": "body",
    "label_column": "topic",
    "split_column": "split",
    "stopwords": "none",
    "stopwords file": "mystop.txt",
    "folds": 3,
    "test_size": 0.5,
    "split_seed": 7,
}


@pytest.mark.parametrize("key", sorted(CHANGES))
def test_a_changed_dataset_key_reruns_ingest_as_a_fresh_directory(finished, tmp_path, key):
    workdir = tmp_path / "rerun"
    shutil.copytree(finished, workdir)  # with its .snakemake records and mtimes
    before = outputs(workdir)
    config = base_config(**{key.split()[0]: CHANGES[key]})
    rerun = snakemake(workdir, config, *TARGETS)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Nothing to be done" not in rerun.stderr + rerun.stdout
    fresh = workdir_with_inputs(tmp_path / "fresh")
    run = snakemake(fresh, config, *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    assert outputs(workdir) == outputs(fresh)
    assert outputs(workdir) != before  # the change matters: stale outputs would fail


def test_a_removed_split_column_reruns_ingest(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    assert snakemake(workdir, base_config(split_column="split"), *TARGETS).returncode == 0
    one_fold = outputs(workdir)
    run = snakemake(workdir, base_config(), *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    folds = {row["fold"] for row in outputs(workdir)[TARGETS[1]]}
    assert folds == set(range(5)) and outputs(workdir) != one_fold


def test_a_key_ingest_does_not_read_reruns_nothing_of_it(finished, tmp_path):
    workdir = tmp_path / "rerun"
    shutil.copytree(finished, workdir)
    run = snakemake(workdir, base_config(vocabulary={"min_df": 2}), *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Nothing to be done" in run.stderr + run.stdout


# -------------------------------------------- item 2: the stop-word file is an input


def test_an_edited_stopword_file_reruns_ingest(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    config = base_config(stopwords="mystop.txt")
    assert snakemake(workdir, config, *TARGETS).returncode == 0

    def words() -> set[str]:
        documents = pq.read_table(workdir / TARGETS[0]).column("words").to_pylist()
        return {w for ws in documents for w in ws}

    assert "today" in words() and "the" not in words()
    with open(workdir / "mystop.txt", "a") as stream:
        stream.write("today\n")
    run = snakemake(workdir, config, *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "today" not in words()


def test_trained_embeddings_depend_on_their_corpus_files(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    config = base_config(stopwords="mystop.txt", embeddings="trained")
    config["embeddings"] = {
        "trained": {"format": "train-word2vec", "train_on": ["toy"], "vector_size": 8}
    }
    vectors = "resources/embeddings/trained.vec"
    assert snakemake(workdir, config, vectors).returncode == 0
    assert "Nothing to be done" in snakemake(workdir, config, vectors).stderr
    with open(workdir / "mystop.txt", "a") as stream:
        stream.write("today\n")
    run = snakemake(workdir, config, vectors)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "rule train_embeddings:" in run.stdout + run.stderr
    trained = (workdir / vectors).read_text().split("\n", 1)[1]
    assert not any(line.startswith("today ") for line in trained.splitlines())


# ------------------------------------------------------- item 3: decoding the text


def latin1_rows() -> list[dict[str, str]]:
    rows = corpus_rows()
    rows[5]["text"] = "crème brûlée"
    return rows


def test_a_byte_that_is_not_utf8_is_one_line_naming_file_and_line(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    write_table(workdir / "toy.csv", latin1_rows(), encoding="latin-1")
    run = snakemake(workdir, base_config(), *TARGETS)
    assert run.returncode != 0
    planning_error(run, "toy.csv: line 7: byte b'\\xe8' is not utf-8 text")
    assert not (workdir / "results").exists()


def test_an_explicit_encoding_reads_the_table_as_its_utf8_copy(tmp_path):
    latin = workdir_with_inputs(tmp_path / "latin")
    write_table(latin / "toy.csv", latin1_rows(), encoding="latin-1")
    run = snakemake(latin, base_config(encoding="latin-1"), *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    utf8 = workdir_with_inputs(tmp_path / "utf8")
    write_table(utf8 / "toy.csv", latin1_rows())
    assert snakemake(utf8, base_config(), *TARGETS).returncode == 0
    assert outputs(latin) == outputs(utf8)
    words = {w for ws in pq.read_table(latin / TARGETS[0]).column("words").to_pylist() for w in ws}
    assert {"b", "xe"}.isdisjoint(words) and {"cr", "br"} <= words


# ------------------------------------- items 5, 7, 8, 9: tables nothing can come of


def planning_error(run: subprocess.CompletedProcess, expected: str) -> None:
    """The run stopped while planning with one line saying ``expected``, no traceback."""
    said = [line for line in run.stderr.splitlines() if line.startswith("wmdeval: ")]
    assert len(said) == 1 and said[0].startswith("wmdeval: config: "), run.stderr[-3000:]
    assert expected in said[0], run.stderr[-3000:]
    assert "Traceback" not in run.stderr


def rows_where(**changes):
    def write(workdir: Path) -> None:
        rows = corpus_rows()
        for key, value in changes.items():
            for row in rows:
                row[key] = value(row) if callable(value) else value
        write_table(workdir / "toy.csv", rows)

    return write


BAD_TABLES = {
    # case: (table writer, dataset keys, the one line's text)
    "header only": (
        lambda d: (d / "toy.csv").write_text("text,label\n"),
        {},
        "toy.csv: no rows",
    ),
    "empty file": (lambda d: (d / "toy.csv").write_text(""), {}, "toy.csv: empty file"),
    "no training rows": (
        rows_where(split="test"),
        {"split_column": "split"},
        "toy.csv: column 'split' has 0 train row(s); expected at least 2",
    ),
    "no test rows": (
        rows_where(split="train"),
        {"split_column": "split"},
        "toy.csv: column 'split' has 0 test row(s); expected at least 1",
    ),
    "a split that leaves no training": (
        lambda d: write_table(d / "toy.csv", corpus_rows(2)),
        {"test_size": 0.6},
        "toy.csv: 2 document(s) with test_size 0.6 leave 0 for training",
    ),
    "duplicate column": (
        lambda d: (d / "toy.csv").write_text("text,text,label\na,b,c\nd,e,f\n"),
        {},
        "toy.csv: column 'text' appears 2 times in the header",
    ),
    "all stop words": (
        rows_where(text="the and of"),
        {},
        "toy.csv: no document has a word after tokenising",
    ),
    "one label": (
        rows_where(label="food"),
        {},
        "toy.csv: column 'label' holds one label ('food') in all 42 rows",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_a_table_nothing_can_come_of_stops_before_planning(tmp_path, case):
    write, keys, expected = BAD_TABLES[case]
    workdir = workdir_with_inputs(tmp_path)
    write(workdir)
    run = snakemake(workdir, base_config(**keys))
    assert run.returncode != 0
    planning_error(run, f"datasets.toy: {expected}")
    assert not (workdir / "results").exists()


def test_labels_are_compared_without_surrounding_whitespace(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    rows_where(label=lambda row: f" {row['label']} " if row["text"] < "the m" else row["label"])(
        workdir
    )
    run = snakemake(workdir, base_config(), *TARGETS)
    assert run.returncode == 0, run.stderr[-3000:]
    labels = pq.read_table(workdir / TARGETS[0]).column("label").to_pylist()
    assert set(labels) == set(TOPICS) and len(labels) == 42


# --------------------------------------- item 10: more that planning can already see


def test_a_pca_dimension_above_the_embeddings_stops_before_planning(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    run = snakemake(workdir, {**base_config(), "pca_dims": [DIM + 1]})
    assert run.returncode != 0
    planning_error(run, f"pca_dims: {DIM + 1} is above the {DIM} dimensions of embeddings.w2v")
    assert not (workdir / "results").exists()


def test_a_callable_without_its_module_stops_before_planning(tmp_path):
    workdir = workdir_with_inputs(tmp_path)
    config = {**base_config(), "methods": {"callables": {"mine": {"function": "nowhere:f"}}}}
    run = snakemake(workdir, config)
    assert run.returncode != 0
    planning_error(run, "methods.callables.mine.function: no module 'nowhere'")
    assert not (workdir / "results").exists()
    (workdir / "nowhere.py").write_text("def f(documents, embeddings, rows, cols):\n    pass\n")
    assert snakemake(workdir, config, "-n").returncode == 0


# ------------------------- the mechanism: no config value through a derived param

#: Every rule's params that Snakemake leaves out of its record (a function of `input`,
#: `output`, `threads` or `resources`: "derived", rules.py) and that read the config,
#: directly or through the workflow's own functions; and, as a check of the reader
#: itself, whether it sees the config behind `dataset_spec`.
DERIVED_PARAMS = """
    import types
    from pathlib import Path
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import (
        ConfigSettings, OutputSettings, ResourceSettings, StorageSettings,
    )

    def reads_config(function, seen):
        codes = [function.__code__]
        while codes:
            code = codes.pop()
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            for name in code.co_names:
                if name == "config":
                    return True
                found = function.__globals__.get(name)
                if isinstance(found, types.FunctionType) and found not in seen:
                    seen.add(found)
                    if reads_config(found, seen):
                        return True
        return False

    with SnakemakeApi(OutputSettings()) as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[Path("my.yaml")]),
            storage_settings=StorageSettings(),
            snakefile=Path("Snakefile"),
        )
        workflow.list_rules()
        rules = list(workflow._workflow.rules)
        for rule in rules:
            for name, item in rule.params._allitems():
                if callable(item) and rule._is_deriving_function(item):
                    if reads_config(item, set()):
                        print("derived", rule.name, name)
        ingest = next(r for r in rules if r.name == "ingest")
        # the ingest input's function shares the Snakefile's globals with every rule's
        dataset_spec = ingest.input[0].__globals__["dataset_spec"]
        print("ingest keys:", " ".join(ingest.input[0].__globals__["INGEST_KEYS"]))
        print("reader sees dataset_spec's config:", reads_config(dataset_spec, set()))
"""

#: A dataset's keys that ingest does not read (the others must rerun it: INGEST_KEYS).
NOT_INGESTED = {
    "path",  # read: as the local file of `path` or `url` (ingest_spec), an input
    "url",
    "member",
    "sha256",  # the download's
    "normalize",  # kusner-mat's (ingest_kusner)
    "embeddings",  # lookup_embeddings'
    "vocabulary",  # filter_oov's
    "wmd_mode",
}


@pytest.mark.parametrize("near", [False, True])
def test_no_config_value_reaches_a_job_through_a_derived_param(tmp_path, near):
    import os

    from workflow_helpers import python_output

    workdir = workdir_with_inputs(tmp_path)
    config = {**base_config(), "duplicates": {"near": {"enabled": near}}}
    (workdir / "my.yaml").write_text(yaml.safe_dump(config))
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        lines = python_output(DERIVED_PARAMS).splitlines()
    finally:
        os.chdir(cwd)
    assert lines[-1] == "reader sees dataset_spec's config: True", lines
    assert not [line for line in lines if line.startswith("derived")], lines
    # every dataset key of the schema is one ingest reads, or one it is known not to
    from wmdeval.core.config import load_schema

    ingest_keys = set(lines[-2].removeprefix("ingest keys: ").split())
    keys = set(load_schema()["$defs"]["dataset"]["properties"])
    assert ingest_keys | NOT_INGESTED == keys and not ingest_keys & NOT_INGESTED
