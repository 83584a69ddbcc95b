"""DISTANCES files read back in batches of rows (wmdeval.core.io.read_distances): the same
matrix whatever the batch size, and a malformed file refused in one line."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wmdeval.core import io


def random_matrix(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.random((n, n))
    matrix[2] = np.nan
    matrix[:, 2] = np.nan
    return matrix


@pytest.mark.parametrize("batch_values", [1, 7, 33, 1 << 24])
def test_row_groups_of_any_size_give_the_matrix_bit_for_bit(tmp_path, monkeypatch, batch_values):
    matrix, ids = random_matrix(11), np.arange(100, 111)
    # row groups of one row, of a few rows with a ragged last one, and of everything
    monkeypatch.setattr(io, "MAX_BATCH_VALUES", batch_values)
    io.write_distances(matrix, ids, tmp_path / "m.parquet")
    doc_ids, got = io.read_distances(tmp_path / "m.parquet")
    assert doc_ids.tolist() == ids.tolist()
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert got.tobytes() == matrix.tobytes()


def test_several_row_groups_are_read_in_order(tmp_path):
    matrix, ids = random_matrix(9, seed=1), np.arange(9)
    io.write_distances(matrix, ids, tmp_path / "m.parquet")
    table = pq.read_table(tmp_path / "m.parquet")
    # a file written by another tool: row groups of 2 rows, each of chunks of 1 row
    with pq.ParquetWriter(tmp_path / "groups.parquet", table.schema) as writer:
        for start in range(0, 9, 2):
            part = table.slice(start, 2)
            writer.write_table(pa.concat_tables([part.slice(0, 1), part.slice(1)]))
    assert pq.ParquetFile(tmp_path / "groups.parquet").num_row_groups == 5
    _, got = io.read_distances(tmp_path / "groups.parquet")
    assert got.tobytes() == matrix.tobytes()
    kept_ids, kept = io.read_distances(tmp_path / "groups.parquet", np.array([8, 3]))
    assert kept.tobytes() == matrix[np.ix_([8, 3], [8, 3])].tobytes()


def test_an_empty_matrix(tmp_path):
    io.write_distances(np.zeros((0, 0)), np.zeros(0, dtype=np.int32), tmp_path / "e.parquet")
    doc_ids, got = io.read_distances(tmp_path / "e.parquet")
    assert doc_ids.size == 0 and got.shape == (0, 0)


def write(path, ids, rows, value_type=None):
    pq.write_table(
        pa.table(
            {
                "doc_id": pa.array(ids, type=pa.int32()),
                "distances": pa.array(rows, type=pa.list_(value_type or pa.float64())),
            }
        ),
        path,
    )


@pytest.mark.parametrize(
    "rows, expected",
    [
        ([[0.0, 1.0], [1.0]], "not a square 2 x 2 matrix"),  # a short row
        ([[0.0, 1.0], [1.0, 0.0, 5.0]], "not a square 2 x 2 matrix"),  # a long row
        ([[0.0, 1.0], None], "not a square 2 x 2 matrix"),  # a missing row
    ],
)
def test_a_row_of_the_wrong_length_is_refused(tmp_path, rows, expected):
    write(tmp_path / "bad.parquet", [1, 2], rows)
    with pytest.raises(io.WmdevalError, match=expected) as caught:
        io.read_distances(tmp_path / "bad.parquet")
    assert str(tmp_path / "bad.parquet") in str(caught.value)


def test_missing_columns_float32_and_garbage_are_refused(tmp_path):
    pq.write_table(pa.table({"doc_id": pa.array([1], pa.int32())}), tmp_path / "no.parquet")
    with pytest.raises(io.WmdevalError, match="missing column.*distances"):
        io.read_distances(tmp_path / "no.parquet")
    write(tmp_path / "f32.parquet", [1], [[0.0]], pa.float32())
    with pytest.raises(io.WmdevalError, match="expected float64"):
        io.read_distances(tmp_path / "f32.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(io.WmdevalError, match="not a readable Parquet file"):
        io.read_distances(tmp_path / "junk.parquet")
    with pytest.raises(io.WmdevalError, match="file not found"):
        io.read_distances(tmp_path / "absent.parquet")


@pytest.mark.parametrize("batch_values", [1, 20, 1 << 24])
def test_kept_ids_give_the_sub_matrix_in_their_order(tmp_path, monkeypatch, batch_values):
    matrix, ids = random_matrix(12, seed=2), np.arange(12) * 3 + 1
    monkeypatch.setattr(io, "MAX_BATCH_VALUES", batch_values)
    io.write_distances(matrix, ids, tmp_path / "m.parquet")
    keep = np.array([34, 4, 7, 1, 22])  # positions 11, 1, 2, 0, 7: not sorted
    got_ids, got = io.read_distances(tmp_path / "m.parquet", keep)
    positions = np.array([11, 1, 2, 0, 7])
    assert got_ids.tolist() == keep.tolist()
    assert got.tobytes() == matrix[np.ix_(positions, positions)].tobytes()
    empty_ids, empty = io.read_distances(tmp_path / "m.parquet", np.zeros(0, dtype=np.int32))
    assert empty.shape == (0, 0) and empty_ids.size == 0


def test_kept_ids_the_file_lacks_or_repeats_are_refused(tmp_path):
    io.write_distances(random_matrix(4), np.array([1, 2, 3, 4]), tmp_path / "m.parquet")
    with pytest.raises(io.WmdevalError, match=r"m.parquet: the distance matrix lack 2 document"):
        io.read_distances(tmp_path / "m.parquet", np.array([2, 9, 0]))
    with pytest.raises(io.WmdevalError, match="listed twice"):
        io.read_distances(tmp_path / "m.parquet", np.array([2, 2]))


def test_the_matrix_is_written_in_row_groups_a_reader_can_hold(tmp_path, monkeypatch):
    monkeypatch.setattr(io, "MAX_BATCH_VALUES", 30)  # 3 rows of 10 per row group
    io.write_distances(random_matrix(10), np.arange(10), tmp_path / "m.parquet")
    assert pq.ParquetFile(tmp_path / "m.parquet").num_row_groups == 4
