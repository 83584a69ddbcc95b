"""Distances the user brings (wmdeval/distances/external.py): vectors, a matrix, a function."""

from __future__ import annotations

import itertools
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wmdeval import cli
from wmdeval.core import io, schemas
from wmdeval.distances import external

# ---------------------------------------------------------------------------------------------
# helpers


def documents_table(bags: dict[int, dict[str, float]]) -> pa.Table:
    """DOCUMENTS rows in the order of ``bags`` (doc_id -> bag of words), not sorted."""
    ids = list(bags)
    words = [sorted(bags[i]) for i in ids]
    return pa.table(
        {
            "doc_id": np.asarray(ids, dtype=np.int32),
            "label": ["a" if i % 2 else "b" for i in ids],
            "y": np.asarray([i % 2 for i in ids], dtype=np.int32),
            "words": words,
            "counts": [[float(bags[i][w]) for w in ws] for i, ws in zip(ids, words, strict=True)],
        },
        schema=schemas.DOCUMENTS,
    )


#: doc_id -> bag; out of order on disk, with one empty document (doc_id 4).
BAGS = {
    7: {"cat": 2, "dog": 1},
    2: {"dog": 3},
    9: {"cat": 1, "fish": 1, "bird": 2},
    4: {},
    0: {"bird": 1, "dog": 1},
    12: {"fish": 5},
    5: {"cat": 1},
}


def write_documents(tmp_path: Path, bags=BAGS) -> Path:
    path = tmp_path / "documents.parquet"
    io.write_table(documents_table(bags), path, schemas.DOCUMENTS)
    return path


def write_embeddings(tmp_path: Path) -> Path:
    words = ["bird", "cat", "dog", "fish"]
    flat = np.arange(len(words) * 3, dtype=np.float32)
    table = pa.table(
        {
            "word": words,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat), 3),
            "norm": np.ones(len(words), dtype=np.float32),
        },
        schema=schemas.embeddings_schema(3),
    )
    path = tmp_path / "embeddings.parquet"
    io.write_table(table, path)
    return path


def loop_distances(vectors: dict[int, list[float]], ids: list[int], metric: str) -> np.ndarray:
    """The plain double loop the vectorised code must agree with."""
    out = np.full((len(ids), len(ids)), np.nan)
    for r, a in enumerate(ids):
        for c, b in enumerate(ids):
            x, y = vectors[a], vectors[b]
            if any(math.isnan(v) for v in x + y):
                continue
            if metric == "l1":
                out[r, c] = sum(abs(p - q) for p, q in zip(x, y, strict=True))
            elif metric == "l2":
                out[r, c] = math.sqrt(sum((p - q) ** 2 for p, q in zip(x, y, strict=True)))
            else:
                nx, ny = math.sqrt(sum(p * p for p in x)), math.sqrt(sum(q * q for q in y))
                if nx and ny:
                    dot = sum(p * q for p, q in zip(x, y, strict=True))
                    out[r, c] = 0.0 if a == b else min(max(1 - dot / (nx * ny), 0.0), 2.0)
    return out


def one_line_error(excinfo, *fragments: str) -> str:
    message = str(excinfo.value)
    assert "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    return message


def nothing_written(directory: Path, name: str) -> bool:
    """Neither the output nor a temporary sibling of it exists."""
    return not any(p.name == name or p.name.startswith(f".{name}.") for p in directory.iterdir())


# ---------------------------------------------------------------------------------------------
# 1. document vectors: distances


HAND_IDS = np.array([10, 20, 30, 40])
HAND_VECTORS = np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0], [np.nan, 1.0]])
NAN = np.nan


@pytest.mark.parametrize(
    "metric, expected",
    [
        (
            "l1",
            [[0, 7, 6, NAN], [7, 0, 1, NAN], [6, 1, 0, NAN], [NAN, NAN, NAN, NAN]],
        ),
        (
            "l2",
            [[0, 5, math.sqrt(20), NAN], [5, 0, 1, NAN], [math.sqrt(20), 1, 0, NAN], [NAN] * 4],
        ),
        (
            # doc 20 is the zero vector: undefined under cosine
            "cosine",
            [[0, NAN, 0.4, NAN], [NAN] * 4, [0.4, NAN, 0, NAN], [NAN] * 4],
        ),
    ],
)
def test_hand_cases(metric, expected):
    got = external.vector_distance_matrix(HAND_IDS, HAND_IDS, HAND_VECTORS, metric, "v")
    np.testing.assert_allclose(got, np.asarray(expected, dtype=float), rtol=1e-15, atol=1e-15)


def test_cosine_of_parallel_and_opposite_vectors():
    ids = np.array([1, 2, 3])
    vectors = np.array([[1.0, 2.0], [2.0, 4.0], [-3.0, -6.0]])
    got = external.vector_distance_matrix(ids, ids, vectors, "cosine", "v")
    np.testing.assert_allclose(got, [[0, 0, 2], [0, 0, 2], [2, 2, 0]], atol=1e-15)
    assert got.min() >= 0 and got.max() <= 2


def random_vectors(seed: int, m: int = 23, dim: int = 7):
    rng = np.random.default_rng(seed)
    vec_ids = rng.permutation(np.arange(100, 100 + m))  # shuffled: rows are found by id
    vectors = rng.normal(size=(m, dim))
    vectors[3, 2] = np.nan
    vectors[5] = 0.0
    return vec_ids, vectors


@pytest.mark.parametrize("metric", external.METRICS)
def test_agrees_with_a_plain_loop_and_takes_rows_by_id(metric):
    vec_ids, vectors = random_vectors(1)
    doc_ids = np.sort(vec_ids[:17])  # a subset: the extra vectors are ignored
    got = external.vector_distance_matrix(doc_ids, vec_ids, vectors, metric, "v")
    by_id = {int(i): list(map(float, v)) for i, v in zip(vec_ids, vectors, strict=True)}
    expected = loop_distances(by_id, [int(i) for i in doc_ids], metric)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # the same vectors listed in another order give the same matrix
    order = np.argsort(vec_ids)
    again = external.vector_distance_matrix(doc_ids, vec_ids[order], vectors[order], metric, "v")
    np.testing.assert_array_equal(got, again)


@pytest.mark.parametrize("metric", external.METRICS)
def test_every_entry_is_bit_identical_for_any_chunk_size(metric):
    vec_ids, vectors = random_vectors(2, m=31, dim=50)
    doc_ids = np.sort(vec_ids)
    whole = external.vector_distance_matrix(doc_ids, vec_ids, vectors, metric, "v")
    for chunk in (1, 2, 3, 7, 30, 31, 1000):
        part = external.vector_distance_matrix(doc_ids, vec_ids, vectors, metric, "v", chunk)
        assert part.tobytes() == whole.tobytes(), chunk
    assert whole.tobytes() == whole.T.copy().tobytes()  # exactly symmetric


def test_a_nan_vector_has_nan_row_and_column_and_others_a_zero_diagonal():
    vec_ids, vectors = random_vectors(3)
    doc_ids = np.sort(vec_ids)
    got = external.vector_distance_matrix(doc_ids, vec_ids, vectors, "l2", "v")
    bad = np.flatnonzero(doc_ids == vec_ids[3])[0]
    assert np.isnan(got[bad]).all() and np.isnan(got[:, bad]).all()
    diagonal = np.delete(np.diagonal(got), bad)
    assert (diagonal == 0).all()
    assert np.isfinite(np.delete(np.delete(got, bad, 0), bad, 1)).all()


def test_missing_vectors_are_counted_and_listed():
    with pytest.raises(io.WmdevalError) as excinfo:
        external.vector_distance_matrix(
            np.arange(10), np.array([0, 1]), np.ones((2, 3)), "l1", "my.parquet"
        )
    one_line_error(excinfo, "my.parquet", "no vector for 8 of the variant's 10", "2, 3, 4, 5, 6")


def test_an_unknown_metric_is_an_error():
    with pytest.raises(io.WmdevalError) as excinfo:
        external.vector_distance_matrix(HAND_IDS, HAND_IDS, HAND_VECTORS, "cos", "v")
    one_line_error(excinfo, "'cos'", "cosine")


def test_an_overflowing_distance_is_an_error_not_inf():
    ids = np.array([1, 2])
    with pytest.raises(io.WmdevalError) as excinfo:
        external.vector_distance_matrix(ids, ids, np.array([[1e300], [-1e300]]), "l2", "big")
    one_line_error(excinfo, "big", "overflows")


# ---------------------------------------------------------------------------------------------
# 1. document vectors: files


def vector_files(tmp_path: Path, ids: np.ndarray, vectors: np.ndarray) -> dict[str, tuple]:
    """The same vectors in each accepted format: name -> (path, ids_path)."""
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"doc_id": ids, "vector": vectors.tolist()}), plain)
    fixed = tmp_path / "fixed.parquet"
    column = pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.astype(np.float32).ravel()), vectors.shape[1]
    )
    pq.write_table(pa.table({"doc_id": ids.astype(np.int32), "vector": column}), fixed)
    np.save(tmp_path / "vectors.npy", vectors)
    np.save(tmp_path / "ids.npy", ids)
    (tmp_path / "ids.txt").write_text("".join(f"{i}\n" for i in ids) + "\n")
    return {
        "parquet list": (plain, None),
        "parquet fixed-size list": (fixed, None),
        "npy + npy ids": (tmp_path / "vectors.npy", tmp_path / "ids.npy"),
        "npy + text ids": (tmp_path / "vectors.npy", tmp_path / "ids.txt"),
    }


def test_every_format_reads_the_same_vectors(tmp_path):
    ids = np.array([5, 3, 8])
    vectors = np.array([[1.0, 0.5], [np.nan, 2.0], [-3.0, 4.25]])  # float32-exact values
    for name, (path, ids_path) in vector_files(tmp_path, ids, vectors).items():
        got_ids, got = external.read_document_vectors(path, ids_path)
        assert got_ids.dtype == np.int64 and got.dtype == np.float64, name
        np.testing.assert_array_equal(got_ids, ids, err_msg=name)
        np.testing.assert_array_equal(got, vectors, err_msg=name)


#: Cases of bad_vector_inputs whose error names the ids file (the others name the vectors).
BLAMES_THE_IDS = {
    "ids count",
    "float npy ids",
    "2-d ids",
    "text id not integer",
    "missing ids file",
    "ids file with Parquet",
}


def bad_vector_inputs(tmp_path: Path) -> list[tuple[str, Path, Path | None, str]]:
    """(case, vectors path, ids path, fragment of the error)."""
    cases = []

    def parquet(name: str, table: pa.Table) -> Path:
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        return path

    cases.append(("no vector column", parquet("novec", pa.table({"doc_id": [1]})), None, "vector"))
    cases.append(
        (
            "ragged",
            parquet("ragged", pa.table({"doc_id": [1, 2], "vector": [[1.0, 2.0], [1.0]]})),
            None,
            "differ in length",
        )
    )
    cases.append(
        (
            "float ids",
            parquet("fids", pa.table({"doc_id": [1.5, 2.0], "vector": [[1.0], [2.0]]})),
            None,
            "integers",
        )
    )
    cases.append(
        (
            "duplicate ids",
            parquet("dup", pa.table({"doc_id": [1, 1], "vector": [[1.0], [2.0]]})),
            None,
            "doc_id 1 appear(s) more than once",
        )
    )
    cases.append(
        (
            "inf",
            parquet("inf", pa.table({"doc_id": [1, 2], "vector": [[1.0], [-np.inf]]})),
            None,
            "infinite values in the vectors of doc_id 2",
        )
    )
    cases.append(
        (
            "strings",
            parquet("str", pa.table({"doc_id": [1], "vector": [["a"]]})),
            None,
            "lists of numbers",
        )
    )
    cases.append(
        (
            "ids file with Parquet",
            parquet("ok", pa.table({"doc_id": [1], "vector": [[1.0]]})),
            tmp_path / "ids.txt",
            "with .npy vectors only",
        )
    )
    np.save(tmp_path / "v.npy", np.ones((3, 2)))
    np.save(tmp_path / "flat.npy", np.ones(3))
    np.save(tmp_path / "words.npy", np.array(["a", "b", "c"]))
    np.save(tmp_path / "ids2.npy", np.array([1, 2]))
    np.save(tmp_path / "fids.npy", np.array([1.0, 2.0, 3.0]))
    np.save(tmp_path / "ids2d.npy", np.array([[1, 2, 3]]))
    np.save(tmp_path / "ids3.npy", np.array([1, 2, 3]))
    (tmp_path / "bad.txt").write_text("1\n2.5\n3\n")
    (tmp_path / "notnpy.npy").write_text("hello")
    cases += [
        ("npy without ids", tmp_path / "v.npy", None, "needs a file of doc_ids"),
        ("ids count", tmp_path / "v.npy", tmp_path / "ids2.npy", "2 doc_id(s) for the 3"),
        ("float npy ids", tmp_path / "v.npy", tmp_path / "fids.npy", "must be integers"),
        ("2-d ids", tmp_path / "v.npy", tmp_path / "ids2d.npy", "1-d"),
        ("text id not integer", tmp_path / "v.npy", tmp_path / "bad.txt", "line 2: '2.5'"),
        ("1-d vectors", tmp_path / "flat.npy", tmp_path / "ids3.npy", "2-d"),
        ("string vectors", tmp_path / "words.npy", tmp_path / "ids3.npy", "must be numbers"),
        ("not npy", tmp_path / "notnpy.npy", tmp_path / "ids3.npy", "not a readable .npy"),
        ("missing file", tmp_path / "absent.parquet", None, "file not found"),
        ("missing ids file", tmp_path / "v.npy", tmp_path / "absent.txt", "file not found"),
    ]
    return cases


def test_every_bad_vector_input_is_one_line_naming_the_file(tmp_path):
    for case, path, ids_path, fragment in bad_vector_inputs(tmp_path):
        with pytest.raises(io.WmdevalError) as excinfo:
            external.read_document_vectors(path, ids_path)
        blamed = ids_path if case in BLAMES_THE_IDS else path
        message = one_line_error(excinfo, fragment)
        assert message.startswith(f"{blamed}: "), (case, message)


# ---------------------------------------------------------------------------------------------
# 2. a precomputed matrix


def symmetric(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.random((n, n)).astype(np.float32).astype(np.float64)
    a = np.minimum(a, a.T)
    np.fill_diagonal(a, 0.0)
    return a


def test_a_reordered_file_gives_the_same_submatrix(tmp_path):
    file_ids = np.array([1, 3, 5, 8, 9])
    matrix = symmetric(5)
    matrix[2, 4] = matrix[4, 2] = np.nan  # NaN is allowed: undefined
    io.write_distances(matrix, file_ids, tmp_path / "ordered.parquet")
    order = np.array([3, 0, 4, 2, 1])
    io.write_distances(matrix[np.ix_(order, order)], file_ids[order], tmp_path / "shuffled.parquet")
    doc_ids = np.array([1, 5, 9])
    ordered = external.read_precomputed_matrix(tmp_path / "ordered.parquet", doc_ids)
    shuffled = external.read_precomputed_matrix(tmp_path / "shuffled.parquet", doc_ids)
    expected = matrix[np.ix_([0, 2, 4], [0, 2, 4])]
    np.testing.assert_array_equal(ordered, expected)
    np.testing.assert_array_equal(shuffled, expected)
    assert ordered.dtype == np.float64


def bad_matrices(tmp_path: Path) -> list[tuple[str, Path, str]]:
    def write(name: str, table: pa.Table) -> Path:
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        return path

    rows = [[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]]
    return [
        ("no distances", write("a", pa.table({"doc_id": [1, 2, 3]})), "missing column(s)"),
        (
            "string distances",
            write("b", pa.table({"doc_id": [1, 2, 3], "distances": ["x", "y", "z"]})),
            "lists of numbers",
        ),
        (
            "float ids",
            write("c", pa.table({"doc_id": [1.0, 2.0, 3.0], "distances": rows})),
            "integers",
        ),
        (
            "repeated id",
            write("d", pa.table({"doc_id": [1, 2, 2], "distances": rows})),
            "doc_id 2 appear(s) more than once",
        ),
        (
            "not square",
            write("e", pa.table({"doc_id": [1, 2, 3], "distances": [*rows[:2], [2.0, 3.0]]})),
            "not square: the row of doc_id 3 has 2",
        ),
        (
            "infinite",
            write(
                "f",
                pa.table(
                    {"doc_id": [1, 2, 3], "distances": [rows[0], [1.0, 0.0, np.inf], rows[2]]}
                ),
            ),
            "infinite distance for doc_id 2 x doc_id 3",
        ),
        (
            "a document missing",
            write("g", pa.table({"doc_id": [1, 2, 4], "distances": rows})),
            "no row for 1 of the variant's 3 document(s): doc_id 3",
        ),
        ("not Parquet", tmp_path / "ids.txt", "not a readable Parquet file"),
    ]


def test_every_bad_matrix_is_one_line_naming_the_file(tmp_path):
    (tmp_path / "ids.txt").write_text("1\n2\n")
    for case, path, fragment in bad_matrices(tmp_path):
        with pytest.raises(io.WmdevalError) as excinfo:
            external.read_precomputed_matrix(path, np.array([1, 2, 3]))
        message = one_line_error(excinfo, fragment)
        assert path.name in message, (case, message)


def test_run_precomputed_matrix_writes_the_variants_matrix_or_nothing(tmp_path):
    documents = write_documents(tmp_path)
    file_ids = np.array([99, *sorted(BAGS, reverse=True)])
    matrix = symmetric(len(file_ids), seed=4)
    io.write_distances(matrix, file_ids, tmp_path / "mine.parquet")
    out = tmp_path / "out" / "distances.parquet"
    external.run_precomputed_matrix(documents, tmp_path / "mine.parquet", out)
    doc_ids, got = io.read_distances(out)
    np.testing.assert_array_equal(doc_ids, sorted(BAGS))
    keep = [list(file_ids).index(i) for i in sorted(BAGS)]
    np.testing.assert_array_equal(got, matrix[np.ix_(keep, keep)].astype(np.float32))
    # a file lacking a document: an error, and nothing at out_path
    io.write_distances(matrix[1:, 1:][:-1, :-1], file_ids[1:-1], tmp_path / "short.parquet")
    failed = tmp_path / "out" / "failed.parquet"
    with pytest.raises(io.WmdevalError) as excinfo:
        external.run_precomputed_matrix(documents, tmp_path / "short.parquet", failed)
    one_line_error(excinfo, "short.parquet", "doc_id 0")
    assert nothing_written(failed.parent, failed.name)


def test_run_vector_matrix_writes_the_variants_matrix_or_nothing(tmp_path):
    documents = write_documents(tmp_path)
    ids = np.array([*BAGS, 1000])
    vectors = np.random.default_rng(5).normal(size=(len(ids), 4))
    np.save(tmp_path / "v.npy", vectors)
    (tmp_path / "ids.txt").write_text("\n".join(map(str, ids)))
    out = tmp_path / "vectors.parquet"
    external.run_vector_matrix(
        documents, tmp_path / "v.npy", tmp_path / "ids.txt", metric="l1", out_path=out
    )
    doc_ids, got = io.read_distances(out)
    expected = external.vector_distance_matrix(np.sort(list(BAGS)), ids, vectors, "l1", "v")
    np.testing.assert_array_equal(doc_ids, sorted(BAGS))
    np.testing.assert_array_equal(got, expected)
    assert pq.read_schema(out).metadata[b"metric"] == b"l1"
    for metric, ids_path in (("manhattan", tmp_path / "ids.txt"), ("l1", None)):
        failed = tmp_path / "failed.parquet"
        with pytest.raises(io.WmdevalError) as excinfo:
            external.run_vector_matrix(
                documents, tmp_path / "v.npy", ids_path, metric=metric, out_path=failed
            )
        assert "\n" not in str(excinfo.value)
        assert nothing_written(tmp_path, failed.name)


# ---------------------------------------------------------------------------------------------
# 3. a Python function


L1_MODULE = '''
"""L1 distance between L1-normalised counts: a user's module in the workflow directory."""
import numpy as np


def shares(documents):
    out = []
    for words, counts in zip(
        documents.column("words").to_pylist(), documents.column("counts").to_pylist()
    ):
        total = sum(counts)
        out.append({w: c / total for w, c in zip(words, counts)} if total else {})
    return out


def l1_of_shares(documents, embeddings, rows, cols):
    assert embeddings.column_names == ["word", "vector", "norm"]
    share = shares(documents)
    block = np.zeros((len(rows), len(cols)))
    for i, r in enumerate(rows):
        for j, c in enumerate(cols):
            a, b = share[r], share[c]
            block[i, j] = sum(abs(a.get(w, 0.0) - b.get(w, 0.0)) for w in sorted({*a, *b}))
    return block.tolist()  # array-like is enough


def wrong_shape(documents, embeddings, rows, cols):
    return np.zeros((len(rows), len(cols) + 1))


def not_numbers(documents, embeddings, rows, cols):
    return [["x"] * len(cols) for _ in rows]


def infinite(documents, embeddings, rows, cols):
    block = np.ones((len(rows), len(cols)))
    block[-1, 0] = np.inf
    return block


NOT_A_FUNCTION = 3
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch, request):
    """A module of the user's functions in tmp_path, the working directory; its name is
    unique per test (a module once imported stays in sys.modules)."""
    name = "user_distances_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{name}.py").write_text(L1_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_callable adds the cwd
    yield name
    sys.modules.pop(name, None)


def loop_l1_of_shares(bags, ids) -> np.ndarray:
    out = np.full((len(ids), len(ids)), np.nan)
    for r, a in enumerate(ids):
        for c, b in enumerate(ids):
            if bags[a] and bags[b]:
                x = {w: v / sum(bags[a].values()) for w, v in bags[a].items()}
                y = {w: v / sum(bags[b].values()) for w, v in bags[b].items()}
                out[r, c] = sum(abs(x.get(w, 0) - y.get(w, 0)) for w in set(x) | set(y))
    return out


def test_shards_gathered_equal_one_block_and_a_plain_loop(tmp_path, user_module):
    documents, embeddings = write_documents(tmp_path), write_embeddings(tmp_path)
    spec = f"{user_module}:l1_of_shares"
    shards = [tmp_path / "shards" / f"{k}-of-3.parquet" for k in (1, 2, 3)]
    for k, shard in enumerate(shards, start=1):
        external.run_callable_shard(documents, embeddings, spec, f"{k}-of-3", shard)
    external.run_callable_gather(documents, shards, tmp_path / "gathered.parquet")
    external.run_callable_shard(documents, embeddings, spec, "1-of-1", tmp_path / "whole.parquet")
    external.run_callable_gather(
        documents, [tmp_path / "whole.parquet"], tmp_path / "single.parquet"
    )
    doc_ids, gathered = io.read_distances(tmp_path / "gathered.parquet")
    _, single = io.read_distances(tmp_path / "single.parquet")
    np.testing.assert_array_equal(doc_ids, sorted(BAGS))
    np.testing.assert_array_equal(gathered, single)  # NaN == NaN here
    expected = loop_l1_of_shares(BAGS, sorted(BAGS))
    np.testing.assert_allclose(gathered, expected.astype(np.float32), rtol=1e-6)
    assert np.isnan(gathered[sorted(BAGS).index(4)]).all()  # the empty document
    # a shard holds its rows only, full length
    first = pq.read_table(shards[0])
    assert first.schema.metadata[b"function"] == spec.encode()
    assert first.column("doc_id").to_pylist() == sorted(BAGS)[: len(BAGS) // 3]
    # a shard missing, repeated or out of order: an error naming it, nothing written
    for wrong in ([shards[0], shards[2]], [shards[1], shards[0], shards[2]], [*shards, shards[2]]):
        out = tmp_path / "bad.parquet"
        with pytest.raises(io.WmdevalError) as excinfo:
            external.run_callable_gather(documents, wrong, out)
        one_line_error(excinfo, "-of-3.parquet")
        assert nothing_written(tmp_path, out.name)
    with pytest.raises(io.WmdevalError) as excinfo:
        external.run_callable_gather(documents, shards[:2], tmp_path / "bad.parquet")
    one_line_error(excinfo, "cover 4 of 7 documents")
    assert nothing_written(tmp_path, "bad.parquet")


def test_callable_block_applies_the_empty_document_rule(tmp_path, user_module):
    documents = documents_table(BAGS).sort_by("doc_id")
    function = external.load_callable(f"{user_module}:l1_of_shares")
    rows, cols = np.array([0, 2, 1]), np.array([3, 2])
    embeddings = pq.read_table(write_embeddings(tmp_path))
    block = external.callable_block(function, "s", documents, embeddings, rows, cols)
    ids = documents.column("doc_id").to_pylist()
    full = loop_l1_of_shares(BAGS, ids)
    np.testing.assert_allclose(block, full[np.ix_(rows, cols)], rtol=1e-12)
    empty_position = ids.index(4)
    assert np.isnan(block[list(rows).index(empty_position)]).all()
    assert block.dtype == np.float64


@pytest.mark.parametrize(
    "function, fragment",
    [
        ("wrong_shape", "returned shape (3, 3), expected (3, 2)"),
        ("not_numbers", "not an array of numbers"),
        ("infinite", "infinite distance for doc_id 7 x doc_id 0"),
    ],
)
def test_a_bad_result_is_one_line_naming_the_function(tmp_path, user_module, function, fragment):
    documents = documents_table(BAGS).sort_by("doc_id")
    spec = f"{user_module}:{function}"
    embeddings = pq.read_table(write_embeddings(tmp_path))
    loaded = external.load_callable(spec)  # outside: only the block may raise
    with pytest.raises(io.WmdevalError) as excinfo:
        external.callable_block(
            loaded,
            spec,
            documents,
            embeddings,
            np.array([0, 1, 4]),
            np.array([0, 1]),
        )
    one_line_error(excinfo, spec, fragment)


def test_load_callable_errors_are_one_line_naming_the_spec(tmp_path, user_module):
    (tmp_path / f"{user_module}_broken.py").write_text(
        "raise RuntimeError('bad\\nconfiguration here')\n"
    )
    cases = [
        ("no_colon", "expected 'package.module:function'"),
        (f"{user_module}:f:g", "expected"),
        ("1module:f", "expected"),
        (f"{user_module}:", "expected"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz' (ModuleNotFoundError"),
        (f"{user_module}_broken:f", "RuntimeError: bad configuration here"),
        (f"{user_module}:absent", "has no attribute 'absent'"),
        (f"{user_module}:NOT_A_FUNCTION", "is not callable (a int)"),
    ]
    for spec, fragment in cases:
        with pytest.raises(io.WmdevalError) as excinfo:
            external.load_callable(spec)
        one_line_error(excinfo, repr(spec), fragment)
    sys.modules.pop(f"{user_module}_broken", None)
    assert callable(external.load_callable(f"{user_module}:l1_of_shares"))
    assert callable(external.load_callable("numpy.linalg:norm"))


@pytest.mark.parametrize("n, m", [(7, 3), (10, 4), (2, 5), (0, 2), (9, 1)])
def test_shards_cover_every_row_once_in_nearly_equal_ranges(n, m):
    ranges = [external.shard_rows(n, f"{k}-of-{m}") for k in range(1, m + 1)]
    covered = list(itertools.chain.from_iterable(range(a, b) for a, b in ranges))
    assert covered == list(range(n))
    sizes = [b - a for a, b in ranges]
    assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("shard", ["0-of-3", "4-of-3", "1-of-0", "3of4", "a-of-b", "1-of-3 "])
def test_a_bad_shard_is_an_error(shard):
    with pytest.raises(io.WmdevalError) as excinfo:
        external.shard_rows(10, shard)
    one_line_error(excinfo, repr(shard))


def test_a_failing_shard_run_writes_nothing(tmp_path, user_module):
    documents, embeddings = write_documents(tmp_path), write_embeddings(tmp_path)
    for spec, shard in (
        (f"{user_module}:absent", "1-of-2"),
        (f"{user_module}:l1_of_shares", "3-of-2"),
        (f"{user_module}:infinite", "2-of-2"),
    ):
        out = tmp_path / "shard.parquet"
        with pytest.raises(io.WmdevalError) as excinfo:
            external.run_callable_shard(documents, embeddings, spec, shard, out)
        assert "\n" not in str(excinfo.value)
        assert nothing_written(tmp_path, out.name)


def test_the_cli_runs_a_shard_end_to_end(tmp_path, user_module):
    documents, embeddings = write_documents(tmp_path), write_embeddings(tmp_path)
    out = tmp_path / "shard.parquet"
    command = [
        sys.executable,
        "-m",
        "wmdeval.cli",
        "callable-shard",
        "--documents",
        str(documents),
        "--embeddings",
        str(embeddings),
        "--function",
        f"{user_module}:l1_of_shares",
        "--shard",
        "2-of-2",
        "--out",
        str(out),
    ]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "shard 2-of-2" in result.stderr  # the timing line
    table = pq.read_table(out)
    assert table.column("doc_id").to_pylist() == sorted(BAGS)[3:]
    rows = np.array(table.column("distances").to_pylist(), dtype=np.float64)
    expected = loop_l1_of_shares(BAGS, sorted(BAGS))[3:]
    np.testing.assert_allclose(rows, expected, rtol=1e-6)


def test_the_cli_reports_a_bad_function_in_one_line(tmp_path, user_module, capsys):
    documents, embeddings = write_documents(tmp_path), write_embeddings(tmp_path)
    status = cli.main(
        [
            "callable-shard",
            "--documents",
            str(documents),
            "--embeddings",
            str(embeddings),
            "--function",
            "nocolon",
            "--shard",
            "1-of-1",
            "--out",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert status == 1
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "nocolon" in error
    assert nothing_written(tmp_path, "o.parquet")
