"""Bring-your-own document distances: document vectors, a precomputed matrix, a function.

Three ways to plug a distance into the workflow without changing it. Each ends in the
DISTANCES file the WMD gather writes (square, rows and columns in ascending doc_id order),
so classification and every analysis read it like any other matrix:

- document vectors (:func:`read_document_vectors`) compared by cosine, Euclidean or
  Manhattan distance (:func:`vector_distance_matrix`, edge :func:`run_vector_matrix`);
- a precomputed DISTANCES file over at least the variant's documents
  (:func:`read_precomputed_matrix`, edge :func:`run_precomputed_matrix`);
- a Python function named "package.module:function" (:func:`load_callable`) that computes
  blocks of rows x columns (:func:`callable_block`), run in shards of rows like the WMD
  blocks (:func:`run_callable_shard`) and gathered (:func:`run_callable_gather`).

Every input is checked before any work: a problem is a WmdevalError of one line naming the
file (or the function) and what is wrong, and the writers are atomic, so a failed job
leaves nothing behind. NaN means undefined, as everywhere in the workflow; an infinite
distance is an error, because it would rank like an ordinary (very large) number.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import io, schemas

LOG = logging.getLogger("wmdeval.distances.external")

#: Metrics between document vectors.
METRICS = ("cosine", "l2", "l1")
#: Entries of one row chunk of a vector matrix: two float64 temporaries of 8 MB each.
CHUNK_ENTRIES = 1 << 20
#: How many doc_ids an error lists.
SHOWN = 5
#: "package.module:function", the function possibly a dotted path inside the module.
SPEC = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)")


# ---------------------------------------------------------------------------------------------
# Small helpers


def _listed(ids: np.ndarray) -> str:
    """The first few doc_ids of ``ids`` for an error: "3, 7, 9, ..."."""
    ids = [int(i) for i in np.asarray(ids).ravel()]
    return ", ".join(map(str, ids[:SHOWN])) + (", ..." if len(ids) > SHOWN else "")


def _one_line(exc: BaseException) -> str:
    """An exception as one line (its type and its message, whitespace collapsed)."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _repeated(ids: np.ndarray) -> np.ndarray:
    """The ids that occur more than once, ascending."""
    ordered = np.sort(np.asarray(ids))
    return np.unique(ordered[1:][ordered[1:] == ordered[:-1]])


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise io.WmdevalError(f"metric {metric!r} is not one of {', '.join(METRICS)}")


def _rows_by_id(doc_ids: np.ndarray, file_ids: np.ndarray, source: str, what: str) -> np.ndarray:
    """Index into ``file_ids`` of every id of ``doc_ids``, in the order of ``doc_ids``.

    Extra ids in ``file_ids`` are ignored; a repeated one, or an id of ``doc_ids`` it lacks,
    is a WmdevalError naming ``source`` ("no {what} for 2 of the variant's 9 documents").
    """
    doc_ids = np.asarray(doc_ids, dtype=np.int64).ravel()
    file_ids = np.asarray(file_ids, dtype=np.int64).ravel()
    repeated = _repeated(file_ids)
    if len(repeated):
        raise io.WmdevalError(f"{source}: doc_id {_listed(repeated)} appear(s) more than once")
    order = np.argsort(file_ids, kind="stable")
    ordered = file_ids[order]
    found = np.searchsorted(ordered, doc_ids)
    present = np.zeros(len(doc_ids), dtype=bool)
    if len(ordered):
        present = (found < len(ordered)) & (ordered[np.minimum(found, len(ordered) - 1)] == doc_ids)
    if not present.all():
        missing = doc_ids[~present]
        raise io.WmdevalError(
            f"{source}: no {what} for {len(missing)} of the variant's {len(doc_ids)} "
            f"document(s): doc_id {_listed(missing)}"
        )
    return order[found]


def _integer_ids(table: pa.Table, path, column: str = "doc_id") -> np.ndarray:
    """The integer id column of a table as int64; other types or nulls name ``path``."""
    ids = table.column(column)
    if not pa.types.is_integer(ids.type):
        raise io.WmdevalError(f"{path}: column {column} must hold integers, not {ids.type}")
    if ids.null_count:
        raise io.WmdevalError(f"{path}: column {column} has {ids.null_count} null value(s)")
    return ids.to_numpy().astype(np.int64)


def _number_lists(column: pa.ChunkedArray, path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A column of lists of numbers: (length of each list int64, all values float64).

    list, large_list or fixed_size_list of integers or floats; a null list or a null value
    is a WmdevalError naming ``path`` and the column.
    """
    type_ = column.type
    listlike = (
        pa.types.is_list(type_)
        or pa.types.is_large_list(type_)
        or pa.types.is_fixed_size_list(type_)
    )
    if not listlike or not (
        pa.types.is_floating(type_.value_type) or pa.types.is_integer(type_.value_type)
    ):
        raise io.WmdevalError(f"{path}: column {name} must hold lists of numbers, not {type_}")
    if column.null_count:
        raise io.WmdevalError(f"{path}: column {name} has {column.null_count} null list(s)")
    array = column.combine_chunks()
    values = array.flatten()  # respects slicing, unlike .values
    if values.null_count:
        raise io.WmdevalError(f"{path}: column {name} has {values.null_count} null value(s)")
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False).astype(np.int64)
    return lengths, values.to_numpy(zero_copy_only=False).astype(np.float64)


def _sorted_documents(path) -> pa.Table:
    """The variant's DOCUMENTS table sorted by doc_id; its row r is position r."""
    table = io.read_documents(path)
    try:
        table = table.cast(schemas.DOCUMENTS)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise io.WmdevalError(f"{path}: not a DOCUMENTS table ({_one_line(exc)})") from None
    if table.num_rows == 0:
        raise io.WmdevalError(f"{path}: no documents")
    repeated = _repeated(table.column("doc_id").to_numpy())
    if len(repeated):
        raise io.WmdevalError(f"{path}: doc_id {_listed(repeated)} appear(s) more than once")
    return table.sort_by("doc_id")


def _no_words(documents: pa.Table) -> np.ndarray:
    """bool per document (row): it has no words, so no defined distance."""
    lengths = pc.list_value_length(documents.column("words")).fill_null(0)
    return lengths.to_numpy(zero_copy_only=False) == 0


# ---------------------------------------------------------------------------------------------
# 1. Document vectors


def _load_npy(path: Path) -> np.ndarray:
    if not path.exists():
        raise io.WmdevalError(f"{path}: file not found")
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise io.WmdevalError(f"{path}: not a readable .npy array ({_one_line(exc)})") from None
    if not isinstance(array, np.ndarray):  # an .npz archive under a .npy name
        raise io.WmdevalError(f"{path}: not a single .npy array")
    return array


def _npy_vectors(path: Path) -> np.ndarray:
    vectors = _load_npy(path)
    if vectors.dtype.kind not in "fiu":
        raise io.WmdevalError(f"{path}: vectors must be numbers, not dtype {vectors.dtype}")
    if vectors.ndim != 2:
        raise io.WmdevalError(
            f"{path}: expected a 2-d array [documents, dimensions], got shape {vectors.shape}"
        )
    return vectors.astype(np.float64)


def _read_ids(path: Path) -> np.ndarray:
    """doc_ids from a .npy integer array [m] or a text file of one doc_id per line."""
    if path.suffix == ".npy":
        ids = _load_npy(path)
        if ids.dtype.kind not in "iu":
            raise io.WmdevalError(f"{path}: doc_ids must be integers, not dtype {ids.dtype}")
        if ids.ndim != 1:
            raise io.WmdevalError(f"{path}: expected a 1-d array of doc_ids, got shape {ids.shape}")
        if ids.dtype.kind == "u" and len(ids) and ids.max() > np.iinfo(np.int64).max:
            raise io.WmdevalError(f"{path}: doc_id {ids.max()} is out of range")
        return ids.astype(np.int64)
    if not path.exists():
        raise io.WmdevalError(f"{path}: file not found")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise io.WmdevalError(f"{path}: not a text file of doc_ids (nor a .npy array)") from None
    ids = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:  # a trailing blank line is common; skipping any blank costs nothing
            continue
        try:
            value = int(text)
        except ValueError:
            raise io.WmdevalError(
                f"{path}: line {number}: {text[:40]!r} is not an integer doc_id"
            ) from None
        if not np.iinfo(np.int64).min <= value <= np.iinfo(np.int64).max:
            raise io.WmdevalError(f"{path}: line {number}: doc_id {value} is out of range")
        ids.append(value)
    return np.asarray(ids, dtype=np.int64)


def _parquet_vectors(path: Path) -> tuple[np.ndarray, np.ndarray]:
    table = io.read_table(path)
    missing = [c for c in ("doc_id", "vector") if c not in table.column_names]
    if missing:
        raise io.WmdevalError(f"{path}: missing column(s) {', '.join(missing)}")
    doc_ids = _integer_ids(table, path)
    lengths, values = _number_lists(table.column("vector"), path, "vector")
    if len(lengths) and np.any(lengths != lengths[0]):
        other = int(np.flatnonzero(lengths != lengths[0])[0])
        raise io.WmdevalError(
            f"{path}: vectors differ in length: doc_id {doc_ids[0]} has {lengths[0]} values, "
            f"doc_id {doc_ids[other]} has {lengths[other]}"
        )
    dim = int(lengths[0]) if len(lengths) else 0
    return doc_ids, values.reshape(len(lengths), dim)


def read_document_vectors(path, ids_path=None) -> tuple[np.ndarray, np.ndarray]:
    """Document vectors from a file: (doc_ids int64 [m], vectors float64 [m, dim]).

    ``path`` is either a Parquet file with columns ``doc_id`` (integers) and ``vector``
    (lists or fixed-size lists of numbers, all of one length), or a ``.npy`` array of
    numbers [m, dim] whose doc_ids come from ``ids_path``: a ``.npy`` integer array [m] or a
    text file of one doc_id per line (blank lines skipped). Row r belongs to doc_ids[r].
    NaN values are allowed (that document's distances are undefined). A missing file or
    column, ragged vectors, ids that are not integers, a count of ids that differs from the
    rows, a repeated doc_id, an infinite value, a wrong number of dimensions, or ``ids_path``
    given with a Parquet file, is a one-line WmdevalError naming the file.
    """
    path = Path(path)
    if path.suffix == ".npy":
        if ids_path is None:
            raise io.WmdevalError(f"{path}: a .npy array of vectors needs a file of doc_ids")
        vectors = _npy_vectors(path)
        ids_source = Path(ids_path)
        doc_ids = _read_ids(ids_source)
        if len(doc_ids) != len(vectors):
            raise io.WmdevalError(
                f"{ids_source}: {len(doc_ids)} doc_id(s) for the {len(vectors)} vector(s) of {path}"
            )
    else:
        if ids_path is not None:
            raise io.WmdevalError(
                f"{ids_path}: a file of doc_ids goes with .npy vectors only; "
                f"{path} (Parquet) has its own doc_id column"
            )
        doc_ids, vectors = _parquet_vectors(path)
        ids_source = path
    if len(vectors) and vectors.shape[1] == 0:
        raise io.WmdevalError(f"{path}: the vectors have no dimensions")
    repeated = _repeated(doc_ids)
    if len(repeated):
        raise io.WmdevalError(f"{ids_source}: doc_id {_listed(repeated)} appear(s) more than once")
    infinite = np.isinf(vectors).any(axis=1)
    if infinite.any():
        raise io.WmdevalError(
            f"{path}: infinite values in the vectors of doc_id {_listed(doc_ids[infinite])} "
            "(NaN marks an undefined vector)"
        )
    return doc_ids, vectors


def _vector_chunk(
    columns: np.ndarray, start: int, stop: int, metric: str, norms: np.ndarray | None
) -> np.ndarray:
    """Rows start..stop of the distance matrix of ``columns`` (vectors transposed, [dim, n]).

    Each entry is a sum over the dimensions in their order of elementwise operations, the
    same sequence of roundings whatever the chunk: hence bit-identical for any chunk size,
    and d(x, y) == d(y, x) exactly. (A BLAS product would be faster, but its rounding can
    depend on the shape of the block.)
    """
    return _vector_rows(columns, slice(start, stop), metric, norms)


def _vector_rows(
    columns: np.ndarray, at: slice | np.ndarray, metric: str, norms: np.ndarray | None
) -> np.ndarray:
    """The rows ``at`` (a slice or positions) of the distance matrix of ``columns``, by
    the same operations as :func:`_vector_chunk`, hence the same bits."""
    rows = columns[:, at]
    total = np.zeros((rows.shape[1], columns.shape[1]))
    term = np.empty_like(total)
    for k in range(columns.shape[0]):
        if metric == "cosine":
            np.multiply(rows[k][:, None], columns[k][None, :], out=term)
        else:
            np.subtract(rows[k][:, None], columns[k][None, :], out=term)
            if metric == "l1":
                np.abs(term, out=term)
            else:
                np.multiply(term, term, out=term)
        total += term
    if metric == "l2":
        return np.sqrt(total, out=total)
    if metric == "cosine":
        cosine = total / (norms[at][:, None] * norms[None, :])  # 0/0: NaN
        # 1 - cos rounds to just outside [0, 2] for (anti)parallel vectors
        return np.clip(1.0 - cosine, 0.0, 2.0)
    return total


def _vector_columns(
    doc_ids: np.ndarray, vec_ids: np.ndarray, vectors: np.ndarray, metric: str, source: str
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """(the vectors of ``doc_ids`` transposed [dim, n], their norms for the cosine (else
    None), bool per document: undefined) for :func:`_vector_rows`; checked as
    :func:`vector_distance_matrix` says."""
    _check_metric(metric)
    doc_ids = np.asarray(doc_ids)
    index = _rows_by_id(doc_ids, vec_ids, source, "vector")
    x = np.asarray(vectors, dtype=np.float64)[index]
    if np.isinf(x).any():
        raise io.WmdevalError(f"{source}: the vectors hold infinite values")
    n = len(x)
    columns = np.ascontiguousarray(x.T)  # [dim, n]: dimension k of every vector, contiguous
    undefined = np.isnan(x).any(axis=1)
    norms = None
    if metric == "cosine":
        squares = np.zeros(n)
        for k in range(columns.shape[0]):  # same order of additions as the chunks' sums
            squares += columns[k] * columns[k]
        norms = np.sqrt(squares)
        undefined |= norms == 0
    return columns, norms, undefined


def vector_distance_matrix(
    doc_ids: np.ndarray,
    vec_ids: np.ndarray,
    vectors: np.ndarray,
    metric: str,
    source: str,
    chunk_rows: int | None = None,
) -> np.ndarray:
    """Distances float64 [n, n] between the vectors of ``doc_ids`` under ``metric``.

    ``vec_ids`` [m] names the rows of ``vectors`` [m, dim] (as from
    :func:`read_document_vectors`). Each of ``doc_ids`` (the variant's, ascending, each
    once) must be among them, and its vector is taken by id, never by position; extra
    vectors are ignored. Metrics: ``"cosine"`` 1 - cos(x, y), clipped to [0, 2] against
    rounding, NaN when either vector is zero; ``"l2"`` Euclidean; ``"l1"`` Manhattan. A
    vector with a NaN value (or, for cosine, a zero vector) has a NaN row and column; the
    diagonal is 0 for every other document.

    Computed ``chunk_rows`` rows at a time (default: about a million entries a chunk); every
    entry is bit-identical for any chunk size (see :func:`_vector_chunk`). A missing id, an
    unknown metric, an infinite value or an overflowing distance is a one-line WmdevalError
    naming ``source``.
    """
    columns, norms, undefined = _vector_columns(doc_ids, vec_ids, vectors, metric, source)
    n = columns.shape[1]
    step = chunk_rows if chunk_rows else max(1, CHUNK_ENTRIES // max(n, 1))
    if step < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    matrix = np.empty((n, n))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for start in range(0, n, step):
            stop = min(start + step, n)
            matrix[start:stop] = _vector_chunk(columns, start, stop, metric, norms)
    return _finished_rows(matrix, np.arange(n), undefined, doc_ids, metric, source)


def _finished_rows(
    rows: np.ndarray,
    queries: np.ndarray,
    undefined: np.ndarray,
    doc_ids: np.ndarray,
    metric: str,
    source: str,
) -> np.ndarray:
    """The rows of documents ``queries`` (positions) as the matrix holds them: NaN in the
    rows and columns of the ``undefined`` documents, 0 on the diagonal of the others, in
    place; an overflowing distance is a one-line WmdevalError naming ``source``."""
    rows[undefined[queries], :] = np.nan
    rows[:, undefined] = np.nan
    rows[np.arange(len(queries)), queries] = np.where(undefined[queries], np.nan, 0.0)
    overflow = np.isinf(rows)
    if overflow.any():
        r, c = np.argwhere(overflow)[0]
        raise io.WmdevalError(
            f"{source}: the {metric} distance of doc_id {int(doc_ids[queries[r]])} x "
            f"doc_id {int(doc_ids[c])} overflows float64 (values too large)"
        )
    return rows


def vector_rows(
    doc_ids: np.ndarray, vec_ids: np.ndarray, vectors: np.ndarray, metric: str, source: str
) -> tuple[Callable[[np.ndarray], np.ndarray], np.ndarray]:
    """(rows_of, undefined) for knn mode's neighbour lists
    (:mod:`~wmdeval.distances.neighbour_lists`): ``rows_of(queries)`` gives the rows of
    :func:`vector_distance_matrix` at those positions, float64 [len(queries), n], bit for
    bit, without the matrix; ``undefined``: bool per document, its NaN rows. Bad input
    and an overflowing distance are the same one-line WmdevalErrors."""
    columns, norms, undefined = _vector_columns(doc_ids, vec_ids, vectors, metric, source)

    def rows_of(queries: np.ndarray) -> np.ndarray:
        queries = np.asarray(queries, dtype=np.int64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            rows = _vector_rows(columns, queries, metric, norms)
        return _finished_rows(rows, queries, undefined, doc_ids, metric, source)

    return rows_of, undefined


# ---------------------------------------------------------------------------------------------
# 2. A precomputed matrix


def read_precomputed_matrix(path, doc_ids: np.ndarray) -> np.ndarray:
    """The distances float64 [n, n] among ``doc_ids`` (in their order) from a DISTANCES file.

    The file has a ``doc_id`` column (integers, each once) and a ``distances`` column of
    lists of numbers, square: every row's list is as long as the file has rows, its entries
    in the order of the doc_id column. Rows may be in any order and extra documents are
    ignored: the submatrix is taken by id. Values are finite or NaN (undefined). A missing
    or mistyped column, a repeated id, a row of the wrong length, an infinite or negative
    value or a doc_id of ``doc_ids`` the file lacks is a one-line WmdevalError naming the
    file.
    """
    table = io.read_table(path)
    missing = [c for c in schemas.DISTANCES.names if c not in table.column_names]
    if missing:
        raise io.WmdevalError(
            f"{path}: missing column(s) {', '.join(missing)} (a DISTANCES table has "
            "doc_id and distances)"
        )
    file_ids = _integer_ids(table, path)
    repeated = _repeated(file_ids)
    if len(repeated):
        raise io.WmdevalError(f"{path}: doc_id {_listed(repeated)} appear(s) more than once")
    lengths, values = _number_lists(table.column("distances"), path, "distances")
    n = len(file_ids)
    wrong = np.flatnonzero(lengths != n)
    if len(wrong):
        r = int(wrong[0])
        raise io.WmdevalError(
            f"{path}: not square: the row of doc_id {file_ids[r]} has {lengths[r]} "
            f"distance(s) for {n} rows"
        )
    matrix = values.reshape(n, n)
    infinite = np.isinf(matrix)
    if infinite.any():
        r, c = np.argwhere(infinite)[0]
        raise io.WmdevalError(
            f"{path}: infinite distance for doc_id {file_ids[r]} x doc_id {file_ids[c]} "
            "(NaN marks an undefined distance)"
        )
    _refuse_negative(matrix, file_ids, file_ids, f"{path} (methods.matrices)")
    index = _rows_by_id(doc_ids, file_ids, str(path), "row")
    return matrix[np.ix_(index, index)]


def _refuse_negative(block: np.ndarray, row_ids: np.ndarray, col_ids: np.ndarray, source: str):
    """A distance below 0 is a one-line WmdevalError naming ``source`` and the first pair:
    kNN would rank such a pair before a document's identical twin (distance 0), and the
    weights of weighted kNN, exp(-d/gamma), would exceed 1."""
    negative = block < 0  # NaN compares False: undefined is allowed
    if negative.any():
        r, c = np.argwhere(negative)[0]
        raise io.WmdevalError(
            f"{source}: negative distance {block[r, c]:.6g} for doc_id {row_ids[r]} x doc_id "
            f"{col_ids[c]} (distances must be >= 0; clip rounding errors such as 1 - cos "
            "just below 0)"
        )


# ---------------------------------------------------------------------------------------------
# 3. A Python function


def load_callable(spec: str) -> Callable:
    """The function that ``spec`` "package.module:function" names, imported.

    The current working directory is put first on ``sys.path`` (unless it is on it
    already), so a module in the workflow directory, where Snakemake runs its jobs, imports
    by its name. ``function`` may be a dotted path inside the module ("module:Class.method").
    A malformed spec, a module that fails to import (its exception's message is given), a
    missing attribute or one that is not callable is a one-line WmdevalError naming ``spec``.
    """
    match = SPEC.fullmatch(spec)
    if match is None:
        raise io.WmdevalError(f"function {spec!r}: expected 'package.module:function'")
    module_name, attribute = match.groups()
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    importlib.invalidate_caches()  # a module written since start-up must be found
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any failure of the user's module is reported, in one line
        raise io.WmdevalError(
            f"function {spec!r}: cannot import {module_name!r} ({_one_line(exc)})"
        ) from None
    found = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise io.WmdevalError(
                f"function {spec!r}: module {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(found):
        raise io.WmdevalError(
            f"function {spec!r}: {attribute!r} is not callable (a {type(found).__name__})"
        )
    return found


def callable_block(
    function: Callable,
    spec: str,
    documents: pa.Table,
    embeddings: pa.Table,
    rows: np.ndarray,
    cols: np.ndarray,
) -> np.ndarray:
    """The user's distances float64 [len(rows), len(cols)] between document positions.

    The contract of ``function``: ``function(documents, embeddings, rows, cols)`` returns
    something array-like of shape [len(rows), len(cols)], its entry (i, j) the distance
    between documents ``rows[i]`` and ``cols[j]``: finite, or NaN for undefined.
    ``documents`` is the variant's DOCUMENTS table sorted by doc_id, ``embeddings`` the
    dataset's embedding table (word, vector, norm), ``rows`` and ``cols`` int64 positions
    into ``documents`` (copies: the function may keep or change them).

    The result is converted to float64 and its shape checked exactly; a result that does
    not convert, a wrong shape or an infinite value is a one-line WmdevalError naming
    ``spec`` (an exception inside the function propagates as it is, with its traceback).
    Then the workflow's rule: rows and columns of documents without words are NaN; a
    negative value left is a one-line WmdevalError too.
    """
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    result = function(documents, embeddings, rows.copy(), cols.copy())
    try:
        # a copy: the NaN rule below writes to it, and the function may keep what it returned
        block = np.array(result, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise io.WmdevalError(
            f"function {spec!r}: the result is not an array of numbers ({_one_line(exc)})"
        ) from None
    expected = (len(rows), len(cols))
    if block.shape != expected:
        raise io.WmdevalError(
            f"function {spec!r}: returned shape {block.shape}, expected {expected} "
            f"({len(rows)} row(s) x {len(cols)} column(s))"
        )
    infinite = np.isinf(block)
    if infinite.any():
        doc_ids = documents.column("doc_id").to_numpy()
        r, c = np.argwhere(infinite)[0]
        raise io.WmdevalError(
            f"function {spec!r}: infinite distance for doc_id {doc_ids[rows[r]]} x doc_id "
            f"{doc_ids[cols[c]]} (NaN marks an undefined distance)"
        )
    no_words = _no_words(documents)
    block[no_words[rows], :] = np.nan
    block[:, no_words[cols]] = np.nan
    doc_ids = documents.column("doc_id").to_numpy()
    _refuse_negative(block, doc_ids[rows], doc_ids[cols], f"function {spec!r} (methods.callables)")
    return block


def _parse_shard(shard: str) -> tuple[int, int]:
    """ "k-of-m" -> (k, m), 1 <= k <= m."""
    match = re.fullmatch(r"(\d+)-of-(\d+)", shard)
    if match is None:
        raise io.WmdevalError(f"shard {shard!r}: expected k-of-m, e.g. 2-of-8")
    k, m = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= m:
        raise io.WmdevalError(f"shard {shard!r}: k must be in 1..m")
    return k, m


def shard_rows(n: int, shard: str) -> tuple[int, int]:
    """Positions [start, stop) of shard "k-of-m" (k 1-based) of positions 0..n-1.

    The m shards are contiguous, in order, cover every position once, and differ in size
    by at most one (some are empty when m > n). A malformed shard or k outside 1..m is a
    WmdevalError.
    """
    k, m = _parse_shard(shard)
    return (k - 1) * n // m, k * n // m


def _distance_rows(row_ids: np.ndarray, block: np.ndarray, metadata: dict[str, str]) -> pa.Table:
    """Rows of a DISTANCES table: doc_id of each row and its distances as float64."""
    n_cols = block.shape[1]
    # list<float64> has 32-bit offsets: at most 2**31 values in one array, so cut in chunks
    per_chunk = max(1, (1 << 27) // n_cols)
    chunks = []
    for start in range(0, len(block), per_chunk):
        part = np.ascontiguousarray(block[start : start + per_chunk], dtype=np.float64)
        offsets = pa.array(np.arange(0, part.size + 1, n_cols, dtype=np.int32))
        chunks.append(pa.ListArray.from_arrays(offsets, pa.array(part.reshape(-1))))
    distances = pa.chunked_array(chunks, type=pa.list_(pa.float64()))
    table = pa.table({"doc_id": pa.array(row_ids.astype(np.int32)), "distances": distances})
    return table.cast(schemas.DISTANCES.with_metadata(metadata))


def run_callable_shard(documents_path, embeddings_path, function_spec, shard, out_path) -> None:
    """Compute rows ``shard`` ("k-of-m") x all columns with the user's function; write them.

    Reads the variant's DOCUMENTS (sorted by doc_id; positions follow that order) and the
    dataset's embeddings (Parquet with word, vector, norm), imports ``function_spec`` (see
    :func:`load_callable`, :func:`callable_block`), and writes a Parquet file with the
    DISTANCES schema holding only the shard's rows, each with its full row of distances
    (float64), atomically, with ``{"function", "shard"}`` metadata. Everything is checked
    before the function runs; bad input is a WmdevalError and nothing is written.
    """
    _parse_shard(shard)
    function = load_callable(function_spec)
    documents = _sorted_documents(documents_path)
    columns = ("word", "vector", "norm")
    embeddings = io.read_embeddings(embeddings_path, columns).select(list(columns))
    n = documents.num_rows
    start, stop = shard_rows(n, shard)
    doc_ids = documents.column("doc_id").to_numpy()
    started = time.perf_counter()
    block = callable_block(
        function, function_spec, documents, embeddings, np.arange(start, stop), np.arange(n)
    )
    LOG.info(
        "%s: shard %s, rows %d..%d of %d documents x %d columns in %.2f s",
        function_spec,
        shard,
        start,
        stop,
        n,
        n,
        time.perf_counter() - started,
    )
    table = _distance_rows(doc_ids[start:stop], block, {"function": function_spec, "shard": shard})
    io.write_table(table, out_path)


def run_callable_gather(documents_path, shard_paths: Sequence, out_path) -> None:
    """Concatenate shard files (from :func:`run_callable_shard`) into the full matrix.

    ``shard_paths`` in shard order: their rows, one after the other, must be every
    document of the variant once, in ascending doc_id order, each row as long as there
    are documents, with values finite or NaN, and all from one function. Writes the
    DISTANCES matrix (float64, ``{"function"}`` metadata) with :func:`io.write_distances`;
    anything else is a one-line WmdevalError naming the shard, and nothing is written.
    """
    doc_ids = _sorted_documents(documents_path).column("doc_id").to_numpy()
    n = len(doc_ids)
    matrix = np.empty((n, n), dtype=np.float64)
    filled = 0
    functions: dict[str, str] = {}
    for path in shard_paths:
        table = io.read_table(path, schemas.DISTANCES)
        ids = _integer_ids(table, path)
        lengths, values = _number_lists(table.column("distances"), path, "distances")
        for i, doc_id in enumerate(ids):
            if filled + i >= n:
                raise io.WmdevalError(
                    f"{path}: doc_id {doc_id} is beyond the variant's {n} documents "
                    "(a shard repeated, or of other documents?)"
                )
            if doc_id != doc_ids[filled + i]:
                raise io.WmdevalError(
                    f"{path}: holds doc_id {doc_id} where doc_id {doc_ids[filled + i]} comes "
                    "next (shards missing, repeated or out of order?)"
                )
        wrong = np.flatnonzero(lengths != n)
        if len(wrong):
            raise io.WmdevalError(
                f"{path}: the row of doc_id {ids[wrong[0]]} has {lengths[wrong[0]]} "
                f"distance(s); the variant has {n} documents"
            )
        rows = values.reshape(len(ids), n)
        if np.isinf(rows).any():
            r, c = np.argwhere(np.isinf(rows))[0]
            raise io.WmdevalError(
                f"{path}: infinite distance for doc_id {ids[r]} x doc_id {doc_ids[c]}"
            )
        matrix[filled : filled + len(ids)] = rows
        filled += len(ids)
        function = (table.schema.metadata or {}).get(b"function")
        if function is not None:
            functions.setdefault(function.decode(), str(path))
    if filled < n:
        raise io.WmdevalError(
            f"the shards cover {filled} of {n} documents: from doc_id {doc_ids[filled]} "
            "on, rows are missing"
        )
    if len(functions) > 1:
        raise io.WmdevalError(
            "the shards come from different functions: "
            + ", ".join(f"{f} ({p})" for f, p in functions.items())
        )
    LOG.info("%d x %d matrix from %d shard(s)", n, n, len(shard_paths))
    metadata = {"function": next(iter(functions))} if functions else None
    io.write_distances(matrix, doc_ids, out_path, metadata=metadata)


# ---------------------------------------------------------------------------------------------
# Run functions for vectors and precomputed matrices


def run_vector_matrix(documents_path, vectors_path, ids_path=None, *, metric, out_path) -> None:
    """Write the ``metric`` distances between document vectors as the variant's DISTANCES.

    Vectors as :func:`read_document_vectors` reads them (``ids_path`` for ``.npy`` vectors
    only), distances as :func:`vector_distance_matrix` computes them, over the variant's
    doc_ids ascending; metadata ``{"metric", "vectors"}``. Bad input is a one-line
    WmdevalError and nothing is written.
    """
    _check_metric(metric)
    doc_ids = _sorted_documents(documents_path).column("doc_id").to_numpy()
    vec_ids, vectors = read_document_vectors(vectors_path, ids_path)
    started = time.perf_counter()
    matrix = vector_distance_matrix(doc_ids, vec_ids, vectors, metric, str(vectors_path))
    undefined = int(np.isnan(np.diagonal(matrix)).sum())
    LOG.info(
        "%s distances of %d documents (%d dimensions) in %.2f s; %d undefined (NaN) vector(s)",
        metric,
        len(doc_ids),
        vectors.shape[1],
        time.perf_counter() - started,
        undefined,
    )
    metadata = {"metric": metric, "vectors": Path(vectors_path).name}
    io.write_distances(matrix, doc_ids, out_path, metadata=metadata)


def run_precomputed_matrix(documents_path, matrix_path, out_path) -> None:
    """Write the variant's submatrix of a precomputed DISTANCES file (doc_ids ascending).

    See :func:`read_precomputed_matrix` for what the file must be; metadata
    ``{"matrix"}``. Bad input is a one-line WmdevalError and nothing is written.
    """
    doc_ids = _sorted_documents(documents_path).column("doc_id").to_numpy()
    matrix = read_precomputed_matrix(matrix_path, doc_ids)
    LOG.info("%d x %d submatrix of %s", len(doc_ids), len(doc_ids), matrix_path)
    io.write_distances(matrix, doc_ids, out_path, metadata={"matrix": Path(matrix_path).name})


def run_vector_neighbours(
    documents_path,
    splits_path,
    vectors_path,
    ids_path=None,
    *,
    metric: str,
    settings,
    shard: int,
    n_shards: int,
    out_pairs,
    out_certificates,
) -> None:
    """knn mode: write the neighbour tables (NEIGHBOUR_PAIRS and NEIGHBOUR_CERTIFICATES)
    of query shard ``shard`` (0-based) of ``n_shards`` under the ``metric`` distance of
    the user's document vectors: each query role's top k under the evaluation
    ``settings`` and the splits, with the values of :func:`run_vector_matrix`'s matrix,
    a block of rows at a time (:func:`~wmdeval.distances.neighbour_lists.neighbour_lists`).
    Bad input is a one-line WmdevalError and nothing is written."""
    from .neighbour_lists import write_shard_lists

    _check_metric(metric)
    documents = _sorted_documents(documents_path)
    doc_ids = documents.column("doc_id").to_numpy()
    folds = io.fold_indices(io.read_splits(splits_path), doc_ids)
    vec_ids, vectors = read_document_vectors(vectors_path, ids_path)
    rows_of, undefined = vector_rows(doc_ids, vec_ids, vectors, metric, str(vectors_path))
    write_shard_lists(
        documents,
        doc_ids,
        undefined,
        folds,
        settings,
        rows_of,
        shard,
        n_shards,
        f"vector-neighbours {metric} shard {shard + 1}/{n_shards}",
        out_pairs,
        out_certificates,
    )
