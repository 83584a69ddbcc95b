"""The scheduler's resource model (wmdeval.planning.resources) and what planning imports."""

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from wmdeval.core import io, schemas
from wmdeval.distances.wmd import pairs
from wmdeval.planning import resources, wall

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
    # the word vectors it reads count 8x their size on disk; not yet written: nothing
    vectors = tmp_path / "embeddings.parquet"
    vectors.write_bytes(b"x" * 5_000_000)
    with_vectors = resources.block_resources(path, 64, 1, embeddings_path=vectors)
    assert with_vectors["mem_mb"] - many["mem_mb"] in (40, 41)
    assert with_vectors["runtime"] == many["runtime"]
    absent = resources.block_resources(path, 64, 1, embeddings_path=tmp_path / "later.parquet")
    assert absent == many


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
        # threads: Amdahl's law, serial share 0.15 (4 threads: 1 / (0.15 + 0.85 / 4))
        speedup = 1 / (wall.SEARCH_SERIAL_SHARE + (1 - wall.SEARCH_SERIAL_SHARE) / threads)
        seconds = units * pairs.SECONDS_PER_UNIT / n_blocks / speedup
        expected = {
            "mem_mb": math.ceil(
                400 + 40 * n_pairs / n_blocks / 1e6 + 30 * size_mb + threads * resources.ROW_MB
            ),
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
    """The probe itself: drawing a transport plan loads POT (the solver alone loads only
    its compiled simplex, tests/test_startup.py)."""
    code = "from wmdeval.distances.wmd import solver\nimport ot"
    assert "ot" in heavy_modules_after(code)
    assert heavy_modules_after("from wmdeval.distances.wmd import solver") == []


def test_auto_mode_goes_by_the_documents_known_while_planning(tmp_path):
    from wmdeval.ingest.corpora import load_texts
    from wmdeval.planning import modes

    wmd = {"mode": "auto", "auto_min_documents": 2000}
    mat = {"format": "kusner-mat", "url": "u", "member": "amazon-emd_tr_te_split.mat"}
    assert modes.dataset_mode(mat, wmd)[0] == "knn"
    bbc = {"format": "kusner-mat", "url": "u", "member": "bbcsport-emd_tr_te_split.mat"}
    assert modes.dataset_mode(bbc, wmd) == (
        "full",
        "auto: 737 documents (the paper's count for bbcsport-emd_tr_te_split.mat, "
        "docs/protocol.md §2) < 2,000",
    )
    assert modes.dataset_mode({**bbc, "wmd_mode": "knn"}, wmd) == ("knn", "set in config")
    table = tmp_path / "t.tsv"
    table.write_text("text\tlabel\n" + "a b\tx\n" * 2500)
    assert modes.planned_documents({"format": "table", "path": str(table)})[0] == 2500
    assert modes.dataset_mode({"format": "table", "path": str(table)}, wmd)[0] == "knn"
    remote = {"format": "table", "url": "http://127.0.0.1/t.tsv"}
    assert modes.dataset_mode(remote, wmd) == (
        "full",
        "auto: size unknown (t.tsv is not downloaded while planning), so full matrices",
    )
    for source, n in modes.DEMO_DOCUMENTS.items():
        assert len(load_texts({"format": "demo", "source": source})[0]) == n


def kusner_cells(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """X and BOW_X cells of ``n`` documents of 1-3 words with 4-d vectors, as scipy writes
    MATLAB's cell arrays."""
    x = np.empty((1, n), dtype=object)
    bow = np.empty((1, n), dtype=object)
    for k in range(n):
        u = int(rng.integers(1, 4))
        x[0, k] = rng.normal(size=(4, u))
        bow[0, k] = np.ones((1, u))
    return x, bow


@pytest.mark.parametrize("layout", ["five-fold", "one-fold"])
def test_a_mat_files_documents_come_from_its_header(tmp_path, layout):
    """A user's .mat file, written by scipy in either Kusner layout: its document count
    from the header, whatever its name, and auto mode decides by it."""
    from scipy.io import savemat

    from wmdeval.ingest import kusner
    from wmdeval.planning import modes

    rng = np.random.default_rng(0)
    if layout == "five-fold":
        n = 2100
        x, bow = kusner_cells(n, rng)
        test = np.array([np.arange(f, n, 5) + 1 for f in range(5)], dtype=np.float64)
        train = np.array([np.setdiff1d(np.arange(1, n + 1), t) for t in test], dtype=np.float64)
        labels = (np.arange(n) % 2 + 1.0)[None, :]  # two classes: one is refused by ingest
        fields = {"X": x, "BOW_X": bow, "Y": labels, "TR": train, "TE": test}
    else:
        n_train, n_test = 1500, 600
        n = n_train + n_test
        fields = {}
        for part, size in (("tr", n_train), ("te", n_test)):
            fields[f"x{part}"], fields[f"BOW_x{part}"] = kusner_cells(size, rng)
            fields[f"y{part}"] = (np.arange(size) % 2 + 1.0)[None, :]
    path = tmp_path / "mine.mat"
    savemat(path, fields)
    # the header agrees with what ingest reads from the whole file
    assert kusner.mat_documents(path) == n == kusner.read_kusner_mat(path).documents.num_rows
    spec = {"format": "kusner-mat", "path": str(path)}
    assert modes.planned_documents(spec) == (n, "mine.mat: its .mat header")
    wmd = {"mode": "auto", "auto_min_documents": 2000}
    assert modes.dataset_mode(spec, wmd) == (
        "knn",
        f"auto: {n:,} documents (mine.mat: its .mat header) >= 2,000",
    )
    # a local file named like one of the paper's is still read, not taken by its name
    paper_named = tmp_path / "bbcsport-emd_tr_te_split.mat"
    path.rename(paper_named)
    assert modes.planned_documents({"format": "kusner-mat", "path": str(paper_named)})[0] == n


def test_a_mat_file_of_neither_layout_is_one_line_at_planning(tmp_path):
    from scipy.io import savemat

    from wmdeval.core.errors import WmdevalError
    from wmdeval.ingest import kusner

    path = tmp_path / "other.mat"
    savemat(path, {"A": np.ones((2, 2))})
    with pytest.raises(WmdevalError, match="other.mat: not a Kusner .mat file"):
        kusner.mat_documents(path)
    (tmp_path / "text.mat").write_text("not a mat file")
    with pytest.raises(WmdevalError, match="text.mat: not a readable .mat file"):
        kusner.mat_documents(tmp_path / "text.mat")


def test_a_tables_documents_from_parquet_metadata_or_csv_lines(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wmdeval.planning import modes

    parquet = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"text": ["a b"] * 3000, "label": ["x"] * 3000}), parquet)
    csv = tmp_path / "corpus.csv"
    csv.write_text("text,label\n" + "a b,x\n" * 1200)
    assert modes.planned_documents({"format": "table", "path": str(parquet)}) == (
        3000,
        "corpus.parquet: Parquet metadata",
    )
    assert modes.planned_documents({"format": "table", "path": str(csv)}) == (
        1200,
        "corpus.csv: lines of the file",
    )
    wmd = {"mode": "auto", "auto_min_documents": 2000}
    assert modes.dataset_mode({"format": "table", "path": str(parquet)}, wmd)[0] == "knn"
    assert modes.dataset_mode({"format": "table", "path": str(csv)}, wmd)[0] == "full"


def test_resource_estimates_use_the_planned_documents_before_the_file_exists(tmp_path):
    absent = tmp_path / "absent.parquet"
    # 18,821 documents (20 Newsgroups): the float64 matrix three times over
    assert resources.gather_mem_mb(absent, planned=18821) == math.ceil(1000 + 24 * 18821**2 / 1e6)
    assert resources.matrix_job_mem_mb(absent, planned=18821) > 5000
    assert resources.embedding_matrix_runtime(absent, "rwmd", planned=18821) > 30
    # the matrix 1.2x over, and RWMD's two threads' word costs for an assumed vocabulary
    matrix = 1.2 * 8 * 18821**2 / 1e6
    assert resources.embedding_matrix_mem_mb(absent, "wcd", planned=18821) == math.ceil(
        1500 + matrix
    )
    n = 18821
    band = (
        4 * resources.PLANNED_BAND_VOCABULARY * n
        + 16 * resources.PLANNED_VOCABULARY * resources.EMBEDDING_QUERY_BAND
        + 5 * 8 * resources.EMBEDDING_QUERY_BAND * n
        + 60 * 100 * n
    )
    working = 2 * 8 * resources.BOUNDS_MAX_ENTRIES
    assert resources.embedding_matrix_mem_mb(absent, "rwmd", threads=2, planned=n) == math.ceil(
        1500 + matrix + 2 * (band + working) / 1e6
    )
    assert resources.evaluate_mem_mb(absent, planned=18821) == math.ceil(
        2000 + 2 * 8 * 18821**2 / 1e6
    )
    # a sub-matrix: a few row groups being read, and the sub-matrix twice
    assert resources.subset_mem_mb(absent, planned=300) == math.ceil(
        1000 + 4 * 8 * resources.ROW_GROUP_VALUES / 1e6 + 2 * 8 * 300**2 / 1e6
    )
    assert resources.subset_mem_mb(absent) == 2000
    # the documents file, once it exists, wins over the plan
    path = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes([3] * 500), path, schemas.DOCUMENTS)
    assert resources.gather_mem_mb(path, planned=18821) == 1006


def test_evaluate_memory_without_dense_matrices_follows_the_blocks(tmp_path):
    """knn mode: evaluate ranks a block of queries at a time and holds no n x n, so its
    declaration is the block, the documents and the neighbour tables' pairs: linear in n,
    under 4,000 MB for the 85,635 passages of the scale corpus (a dry run: files absent)."""
    from wmdeval.core import variant

    assert resources.RANKING_BLOCK_BYTES == variant.RANKING_BLOCK_BYTES
    absent = tmp_path / "absent.parquet"
    tables = [tmp_path / "wmd.parquet", tmp_path / "wmd-tfidf.parquet"]  # not yet written

    def knn(n, attempt=1):
        return resources.evaluate_mem_mb(absent, attempt, n, 0, tables)

    def expected(n, words, pairs):
        return math.ceil(
            resources.EVALUATE_BASE_MB
            + 2 * resources.RANKING_BLOCK_BYTES / 1e6
            + resources.EVALUATE_MB_PER_1000_DOCUMENTS * n / 1e3
            + resources.EVALUATE_MB_PER_MILLION_WORDS * words / 1e6
            + resources.EVALUATE_MB_PER_MILLION_PAIRS * pairs / 1e6
        )

    n = 85_635
    planned_words = resources.PLANNED_WORDS_PER_DOCUMENT * n
    planned_pairs = 2 * resources.PLANNED_PAIRS_PER_DOCUMENT * n
    assert knn(n) == expected(n, planned_words, planned_pairs) <= 4000
    assert knn(n, attempt=2) == 2 * knn(n)
    # linear, not quadratic: twice the documents, less than twice the memory
    assert knn(2 * n) - knn(n) == pytest.approx(knn(n) - knn(0), abs=2)
    # with dense matrices (full mode) the n x n matrix read, as before
    full = resources.evaluate_mem_mb(absent, 1, n, 2, tables)
    assert full == math.ceil(2000 + 2 * 8 * n * n / 1e6) > 100_000
    # once written, the documents' words and the tables' rows
    documents = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes([3] * 400 + [5] * 100), documents, schemas.DOCUMENTS)
    solved = pa.table(
        {"query": np.zeros(7000, np.int32), "candidate": np.arange(7000, dtype=np.int32)}
        | {"distance": np.ones(7000)}
    )
    io.write_table(solved.cast(schemas.NEIGHBOUR_PAIRS), tables[0], schemas.NEIGHBOUR_PAIRS)
    got = resources.evaluate_mem_mb(documents, 1, 10**6, 0, tables)
    assert got == expected(500, 1700, 7000 + resources.PLANNED_PAIRS_PER_DOCUMENT * 500)


def test_a_compressed_mat_files_data_is_estimated_inflated(tmp_path):
    """MATLAB's -v7 files compress every element: the ingest's memory follows the data
    once inflated, estimated from a prefix, not the smaller file."""
    from scipy.io import savemat

    from wmdeval.ingest import kusner

    rng = np.random.default_rng(0)
    x = np.empty((1, 300), dtype=object)
    bow = np.empty((1, 300), dtype=object)
    for k in range(300):
        x[0, k] = np.round(rng.normal(size=(300, 40)), 2)  # compressible, like float32 data
        bow[0, k] = np.ones((1, 40))
    fields = {"xtr": x, "xte": x, "BOW_xtr": bow, "BOW_xte": bow}
    fields |= {"ytr": np.ones((1, 300)), "yte": np.ones((1, 300))}
    plain, packed = tmp_path / "plain.mat", tmp_path / "packed.mat"
    savemat(plain, fields)
    savemat(packed, fields, do_compression=True)
    assert packed.stat().st_size < 0.5 * plain.stat().st_size
    assert kusner.mat_loaded_mb(plain) == plain.stat().st_size / 1e6
    assert abs(kusner.mat_loaded_mb(packed) - kusner.mat_loaded_mb(plain)) < 0.1 * (
        kusner.mat_loaded_mb(plain)
    )
    # 1000 + 1.2 x the data + 0.12 MB per document of the header, at least 2000
    expected = max(2000, math.ceil(1000 + 1.2 * plain.stat().st_size / 1e6 + 0.12 * 600))
    assert resources.kusner_ingest_mem_mb(plain) == expected
    assert resources.kusner_ingest_mem_mb(plain, attempt=2) == 2 * expected
    assert resources.kusner_ingest_mem_mb(tmp_path / "absent.mat") == 2000


def _random_bags_file(tmp_path, seed: int):
    """40 seeded bags of 1-24 of 200 words, as a DOCUMENTS file: (the bags, its path)."""
    rng = np.random.default_rng(seed)
    bags = [sorted(set(rng.choice(200, rng.integers(1, 25)).tolist())) for _ in range(40)]
    table = pa.table(
        {
            "doc_id": np.arange(40, dtype=np.int32),
            "label": ["x"] * 40,
            "y": np.zeros(40, dtype=np.int32),
            "words": [[f"w{w}" for w in bag] for bag in bags],
            "counts": [[1.0] * len(bag) for bag in bags],
        },
        schema=schemas.DOCUMENTS,
    )
    path = tmp_path / "documents.parquet"
    io.write_table(table, path, schemas.DOCUMENTS)
    return bags, path


@pytest.mark.parametrize("n_shards", [1, 3, 7])
def test_a_shards_vocabulary_is_the_largest_of_the_searchs_query_runs(tmp_path, n_shards):
    from wmdeval.distances.wmd import search

    bags, path = _random_bags_file(tmp_path, n_shards)
    sizes = np.array([len(bag) for bag in bags], dtype=np.float64)
    runs = search.query_shards(sizes, np.arange(40), n_shards)  # every document a query
    plain = max(len({w for k in run for w in bags[k]}) for run in runs)
    mtime = path.stat().st_mtime_ns
    assert resources._shard_vocabulary(str(path), mtime, n_shards) == plain
    # the RWMD matrix's bands: consecutive non-empty documents in doc_id order
    filled = [k for k in range(40) if bags[k]]
    widest = max(len({w for k in filled[b : b + 7] for w in bags[k]}) for b in range(0, 40, 7))
    assert resources._band_vocabulary(str(path), mtime, 7) == widest


def test_a_search_jobs_tables_are_those_of_its_largest_set_up_batch(tmp_path, monkeypatch):
    # search_resources counts the bounds' tables of the largest set-up batch of any
    # shard: a whole shard's within SETUP_TABLE_BYTES, else the batches search cuts
    from wmdeval.distances.wmd import pairs, search

    bags, path = _random_bags_file(tmp_path, 5)
    mtime = path.stat().st_mtime_ns
    vocabulary = len({w for bag in bags for w in bag})
    sizes = np.array([len(bag) for bag in bags], dtype=np.float64)
    runs = search.query_shards(sizes, np.arange(40), 3)
    whole = max(
        4 * (len({w for k in run for w in bags[k]}) * 40 + vocabulary * len(run)) for run in runs
    )
    assert resources._shard_tables(str(path), mtime, 3) == whole
    # a budget of a few documents' words: each shard in batches, none above the budget
    budget = 4 * (40 * 40 + vocabulary * 3)
    monkeypatch.setattr(pairs, "SETUP_TABLE_BYTES", budget)
    resources._shard_tables.cache_clear()
    batched = resources._shard_tables(str(path), mtime, 3)
    code = {w: c for c, w in enumerate(sorted({w for bag in bags for w in bag}))}
    by_hand = 0
    for run in runs:
        lists = [np.array([code[w] for w in bags[k]]) for k in run]
        for start, end in pairs.setup_batches(lists, 40, vocabulary):
            part = run[start:end]
            words = len({w for k in part for w in bags[k]})
            by_hand = max(by_hand, 4 * (words * 40 + vocabulary * len(part)))
    assert batched == by_hand and batched < whole and batched <= budget
    resources._shard_tables.cache_clear()


def test_the_search_estimate_counts_the_bounds_working_matrices(tmp_path):
    from wmdeval.distances import embedding
    from wmdeval.distances.wmd import bounds, search

    assert resources.BOUNDS_MAX_ENTRIES == bounds.MAX_ENTRIES
    assert resources.EMBEDDING_QUERY_BAND == embedding.QUERY_BAND
    assert resources.ROW_GROUP_VALUES == io.MAX_BATCH_VALUES
    assert resources.SEARCH_BOUND_ROWS == search.BOUND_ROWS
    path = tmp_path / "documents.parquet"
    io.write_table(documents_of_sizes([3] * 50), path, schemas.DOCUMENTS)
    one, two = (resources.search_resources(path, 1, threads)["mem_mb"] for threads in (1, 2))
    # one thread's two float64 working matrices more
    assert abs((two - one) - 2 * 8 * bounds.MAX_ENTRIES / 1e6) < 1
    # past SEARCH_BOUND_ROWS_FLOOR rows in all, each thread's block of bound rows too,
    # SEARCH_BOUND_ROWS x n x 8 B (x 1.5, as every part of the bounds)
    many = tmp_path / "many.parquet"
    io.write_table(documents_of_sizes([3] * 20000), many, schemas.DOCUMENTS)
    rows = resources.SEARCH_BOUND_ROWS
    full = resources.SEARCH_BOUND_ROWS_FLOOR // rows  # threads whose rows fill the floor
    at, past = (resources.search_resources(many, 1, t)["mem_mb"] for t in (full, full + 1))
    working = 2 * 8 * bounds.MAX_ENTRIES / 1e6
    assert abs((past - at) - working - 1.5 * 8 * rows * 20000 / 1e6) < 1


def test_the_papers_corpora_are_planned_by_the_protocols_table():
    """modes.KUSNER_DOCUMENTS, KUSNER_WORDS and KUSNER_FOLDS are docs/protocol.md's Table
    1 (documents, distinct words per document, split, by .mat file), and planned_words and
    planned_folds read them by name."""
    from wmdeval.planning import modes

    text = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text("utf-8")
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in text.splitlines()
        if line.startswith("| ") and ".mat`" in line
    ]
    folds = {"five-fold": 5, "one-fold": 1}
    table = {row[1].strip("`"): (int(row[2]), float(row[6]), folds[row[8]]) for row in rows}
    assert table == {
        name: (modes.KUSNER_DOCUMENTS[name], modes.KUSNER_WORDS[name], modes.KUSNER_FOLDS[name])
        for name in modes.KUSNER_DOCUMENTS
    }
    spec = {"format": "kusner-mat", "url": "https://x/y.zip", "member": "r8-emd_tr_te3.mat"}
    assert modes.planned_words(spec) == 36.0
    assert modes.planned_words({**spec, "member": "mine.mat"}) is None
    assert modes.planned_words({"format": "table", "path": "r8-emd_tr_te3.mat"}) is None
    assert modes.planned_folds(spec) == 1
    assert modes.planned_folds({**spec, "member": "amazon-emd_tr_te_split.mat"}) == 5
    assert modes.planned_folds({**spec, "member": "mine.mat"}) is None
    # a table: its seeded folds, or one with a split column; the demo its seeded folds
    table_spec = {"format": "table", "path": "t.tsv", "folds": 3, "split_column": None}
    assert modes.planned_folds(table_spec) == 3
    assert modes.planned_folds({**table_spec, "split_column": "split"}) == 1
    assert modes.planned_folds({"format": "demo", "folds": 5}) == 5


def test_the_embedding_dimension_planning_reads_from_a_files_first_line(tmp_path):
    import gzip

    from wmdeval.core.errors import WmdevalError
    from wmdeval.planning.inputs import check_pca_dims, embedding_dimension

    text = tmp_path / "vectors.txt"
    text.write_text("2 3\nrocket 0.1 0.2 0.3\nbread 0.3 0.2 0.1\n")
    glove = tmp_path / "glove.txt"
    glove.write_text("rocket 0.1 0.2 0.3 0.4\nbread 0.3 0.2 0.1 0.0\n")
    packed = tmp_path / "vectors.bin.gz"
    packed.write_bytes(gzip.compress(b"2 5\n\x00\x01binary rows"))
    assert embedding_dimension({"format": "word2vec-text"}, str(text)) == 3
    assert embedding_dimension({"format": "glove"}, str(glove)) == 4
    assert embedding_dimension({"format": "word2vec-binary"}, str(packed)) == 5
    assert embedding_dimension({"format": "fasttext-vec"}, str(glove)) is None  # no header
    assert embedding_dimension({"format": "glove"}, str(tmp_path / "absent.txt")) is None
    trained = {"format": "train-word2vec", "vector_size": 50}
    assert embedding_dimension(trained, "resources/embeddings/x.vec") == 50
    check_pca_dims([2, 3], 3, "embeddings.w")
    check_pca_dims([400], None, "embeddings.w")  # unknown: its job checks
    with pytest.raises(WmdevalError, match="pca_dims: 4 is above the 3 dimensions of emb"):
        check_pca_dims([2, 4], 3, "embeddings.w")


def test_a_knn_dry_run_of_the_scale_corpus_declares_evaluate_without_n_squared(tmp_path):
    """The dry run of 85,635 documents (a table of that many rows, as the passage corpus;
    the schema's default methods) in knn mode: evaluate, cut into parts by method
    (evaluate_parts: auto), declares per part its blocks and its planned tables, under
    4,000 MB, where the dense path declared 119,334 MB for one job."""
    from workflow_helpers import copy_workflow, snakemake

    workdir = copy_workflow(tmp_path / "run")
    rows = [f"g{i % 20}\tpassage {i}\t{'test' if i % 5 == 0 else 'train'}" for i in range(85_635)]
    (workdir / "passages.tsv").write_text("label\ttext\tsplit\n" + "\n".join(rows) + "\n")
    (workdir / "config" / "config.yaml").write_text(
        "datasets:\n  passages:\n    format: table\n    path: passages.tsv\n"
        "    text_column: text\n    label_column: label\n    split_column: split\n"
        "    stopwords: kusner115\n    embeddings: w2v\n"
        "embeddings:\n  w2v:\n    format: train-word2vec\n    train_on: [passages]\n"
        "variants: [original]\nwmd:\n  mode: knn\n"
    )
    plan = snakemake(workdir, "-n", "--cores", "64")
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert "rule evaluate:" not in plan.stdout
    assert "wmdeval: evaluate_parts: passages=13 (auto: 85,635 documents" in plan.stderr
    parts = [job.split("\n\n")[0] for job in plan.stdout.split("rule evaluate_part:")[1:]]
    assert len(parts) == 13
    declared = {
        re.search(r"--methods '([^']*)'", job).group(1): int(re.search(r"mem_mb=(\d+)", job)[1])
        for job in parts
    }
    n = 85_635
    # a baseline's part reads no neighbour table
    baseline = declared.pop('["bow-l1-l1"]')
    assert baseline == resources.evaluate_mem_mb(None, 1, n, 0, []) < 4000
    mem_mb = declared['["wmd", "wmd-tfidf"]']
    tables = 2 * resources.PLANNED_PAIRS_PER_DOCUMENT * n  # WMD and WMD-TF-IDF, not written
    planned = ["results/passages/original/neighbours/wmd.parquet"] * 2
    assert mem_mb == resources.evaluate_mem_mb(None, 1, n, 0, planned) <= 4000
    assert mem_mb == math.ceil(
        resources.EVALUATE_BASE_MB
        + 2 * resources.RANKING_BLOCK_BYTES / 1e6
        + resources.EVALUATE_MB_PER_1000_DOCUMENTS * n / 1e3
        + resources.EVALUATE_MB_PER_MILLION_WORDS * resources.PLANNED_WORDS_PER_DOCUMENT * n / 1e6
        + resources.EVALUATE_MB_PER_MILLION_PAIRS * tables / 1e6
    )
