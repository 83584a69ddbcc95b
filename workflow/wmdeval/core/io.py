"""I/O at the edges: atomic Parquet writes and typed reads.

Every writer goes through :func:`atomic_path` so a killed job never leaves a
partial file under its final name (Snakemake would otherwise take it as done).
"""

from __future__ import annotations

import contextlib
import csv
import errno as errno_codes
import io as stdio
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import schemas
from .coverage import require_exact_coverage, sources

# Re-exported: many modules raise it as ``io.WmdevalError``; it lives in core.errors, which
# imports nothing of the package, so that core's modules need not import this one for it.
from .errors import WmdevalError

#: Values of one row group of a stored distance matrix (float64: 128 MB), what a reader holds
#: besides the matrix.
MAX_BATCH_VALUES = 1 << 24


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it to ``path`` only on success.

    An OSError while writing (a full disk, a folder without write permission) comes out
    naming ``path``: writers such as pyarrow's and matplotlib's raise one that names no
    file, or the temporary one (see :func:`os_error_line`)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename in (None, str(tmp), tmp):
            raise _named(exc, path) from exc
        raise
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` again (its type, errno and reason) with ``path`` as its file."""
    errno = exc.errno
    reason = exc.strerror or str(exc)
    if errno is None:
        # pyarrow's errors give the errno in their text only: "... [errno 28] No space ..."
        found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
        errno = int(found.group(1)) if found else None
    # OSError(errno, reason, file) is the subclass of that errno (PermissionError, ...)
    return OSError(errno, reason, str(path))


def os_error_line(exc: OSError) -> str:
    """One line for an OSError: the file it names and why (a full disk, a permission)."""
    reason = " ".join((exc.strerror or str(exc) or type(exc).__name__).split())
    if exc.errno == errno_codes.ENOSPC and "space" not in reason.lower():
        reason = f"no space left on device ({reason})"
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.filename2:
        where = f"{exc.filename} -> {exc.filename2}: "
    return f"{where}{reason}"


def write_table(
    table: pa.Table,
    path: str | os.PathLike,
    schema: pa.Schema | None = None,
    row_group_size: int | None = None,
) -> None:
    """Write ``table`` (cast to ``schema`` if given) atomically, deterministically;
    ``row_group_size``: rows per row group (pyarrow's default if None)."""
    if schema is not None:
        table = table.select(schema.names).cast(schema)
    with atomic_path(path) as tmp:
        # No statistics-dependent or time-dependent metadata: same table -> same bytes.
        pq.write_table(
            table, tmp, compression="zstd", write_statistics=False, row_group_size=row_group_size
        )


def read_table(path: str | os.PathLike, schema: pa.Schema | None = None) -> pa.Table:
    """Read a Parquet file; check it has the columns of ``schema`` (if given)."""
    path = Path(path)
    if not path.exists():
        raise WmdevalError(f"{path}: file not found")
    try:
        # ParquetFile, not pq.read_table: that one goes through pyarrow.dataset, whose
        # import alone is ~0.3 CPU-s of every job that reads a table (the same columns,
        # row groups as chunks)
        with pq.ParquetFile(path) as parquet:
            table = parquet.read()
    except (pa.ArrowInvalid, OSError) as exc:
        raise WmdevalError(f"{path}: not a readable Parquet file ({exc})") from None
    if schema is not None:
        missing = [n for n in schema.names if n not in table.column_names]
        if missing:
            raise WmdevalError(f"{path}: missing column(s) {', '.join(missing)}")
        table = table.select(schema.names)
    return table


def require_float64(table: pa.Table | pa.Schema, column: str, path: str | os.PathLike) -> None:
    """Refuse (WmdevalError) a stored distance column that is not float64 (or a list of
    float64): files from before distances were stored in float64 must be recomputed.
    ``table``: the table, or its schema."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    kind = schema.field(column).type
    values = kind.value_type if pa.types.is_list(kind) else kind
    if not pa.types.is_float64(values):
        raise WmdevalError(
            f"{path}: column {column!r} holds {values}, expected float64 (a file written by an "
            "older wmdeval, which stored distances in float32); delete it and rerun to "
            "recompute it"
        )


def read_tables(
    paths: Sequence[str | os.PathLike],
    schema: pa.Schema,
    expected: Mapping[str, Sequence[str]] | None = None,
) -> pa.Table:
    """Parquet files with ``schema``'s columns, cast to it and concatenated in order (an
    empty table of ``schema`` for no paths): the per-variant results a table job combines.

    With ``expected`` (see :mod:`wmdeval.core.coverage`), the rows must cover exactly the
    datasets, variants and methods of the run, or WmdevalError names what is missing.
    """
    tables = [read_table(path, schema).cast(schema) for path in paths]
    table = pa.concat_tables(tables) if tables else schema.empty_table()
    if expected is not None:
        require_exact_coverage(table, expected, sources(paths))
    return table


def write_distances(
    matrix: np.ndarray,
    doc_ids: np.ndarray,
    path: str | os.PathLike,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write a square matrix as a DISTANCES table (float64 on disk: the tie rule compares
    distances at 32 significant bits, more than float32 holds)."""
    n = len(doc_ids)
    if matrix.shape != (n, n):
        raise ValueError(f"matrix shape {matrix.shape} does not match {n} doc ids")
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float64).reshape(-1))
    offsets = pa.array((np.arange(n + 1, dtype=np.int64) * n).astype(np.int32))
    column = pa.ListArray.from_arrays(offsets, flat)
    table = pa.table({"doc_id": pa.array(np.asarray(doc_ids, dtype=np.int32)), "distances": column})
    schema = schemas.DISTANCES
    if metadata:
        schema = schema.with_metadata({k: str(v) for k, v in metadata.items()})
    # row groups of about MAX_BATCH_VALUES values: a reader holds one at a time
    write_table(table, path, schema, row_group_size=max(1, MAX_BATCH_VALUES // max(n, 1)))


def read_distances(
    path: str | os.PathLike, keep_ids: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Read a DISTANCES table: (doc_ids int32 [n], matrix float64 [n, n]); with
    ``keep_ids``, only their rows and columns, in their order ((keep_ids, sub-matrix); an
    id the file lacks is a WmdevalError). A float32 file (written by wmdeval before
    distances were stored in float64) is refused: its values lost the precision the tie
    rule relies on.

    The rows are read a row group at a time into the result, and :func:`write_distances`
    stores row groups of about MAX_BATCH_VALUES values, so the peak is the result and one
    row group, not the matrix twice over (20 Newsgroups: 3.5 GB for its 2.8 GB matrix; a
    sample's sub-matrix: the row groups holding its rows, one at a time)."""
    path = Path(path)
    if not path.exists():
        raise WmdevalError(f"{path}: file not found")
    try:
        parquet = pq.ParquetFile(path)
        missing = [n for n in schemas.DISTANCES.names if n not in parquet.schema_arrow.names]
        if missing:
            raise WmdevalError(f"{path}: missing column(s) {', '.join(missing)}")
        require_float64(parquet.schema_arrow, "distances", path)
        doc_ids = parquet.read(columns=["doc_id"]).column("doc_id").to_numpy()
        n = len(doc_ids)
        keep = np.arange(n) if keep_ids is None else _kept_positions(doc_ids, keep_ids, path)
        slot = np.full(n, -1, dtype=np.int64)  # row of the result each stored row fills
        slot[keep] = np.arange(len(keep))
        every = keep_ids is None
        out = np.empty((len(keep), len(keep)))
        row = 0
        # One row group at a time, read explicitly: pyarrow's batch iterator reads ahead
        # and held 5.9 GB for a 2.8 GB matrix (20 Newsgroups), this 3.5 GB.
        for group in range(parquet.num_row_groups):
            size = parquet.metadata.row_group(group).num_rows
            if row + size > n:
                raise WmdevalError(f"{path}: distances column is not a square {n} x {n} matrix")
            if not every and not (slot[row : row + size] >= 0).any():
                row += size  # none of its rows is kept: not even read
                continue
            column = parquet.read_row_group(group, columns=["distances"]).column(0)
            for rows in column.chunks:
                lengths = pc.list_value_length(rows)
                if rows.null_count or pc.any(pc.not_equal(lengths, n)).as_py():
                    raise WmdevalError(f"{path}: distances column is not a square {n} x {n} matrix")
                values = rows.flatten().to_numpy().reshape(len(rows), n)
                if every:
                    out[row : row + len(rows)] = values
                else:
                    wanted = slot[row : row + len(rows)]
                    chosen = wanted >= 0
                    out[wanted[chosen]] = values[chosen][:, keep]
                row += len(rows)
            del column
    except (pa.ArrowInvalid, OSError) as exc:
        raise WmdevalError(f"{path}: not a readable Parquet file ({exc})") from None
    if row != n:
        raise WmdevalError(f"{path}: distances column is not a square {n} x {n} matrix")
    return (doc_ids, out) if every else (np.asarray(keep_ids), out)


def _kept_positions(doc_ids: np.ndarray, keep_ids: np.ndarray, path: Path) -> np.ndarray:
    """Positions of ``keep_ids`` in ``doc_ids`` (core.variant.positions); each kept once,
    since each fills one row of the result."""
    from .variant import positions  # scipy.sparse (variant's) only for jobs that subset

    if len(np.unique(keep_ids)) != len(keep_ids):
        raise WmdevalError(f"{path}: a doc_id to keep is listed twice")
    return positions(doc_ids, keep_ids, f"{path}: the distance matrix")


def read_embeddings(
    path: str | os.PathLike, required: tuple[str, ...] = ("word", "vector")
) -> pa.Table:
    """An embeddings table (``schemas.embeddings_schema``) with at least the ``required``
    columns."""
    table = read_table(path)
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise WmdevalError(f"{path}: missing column(s) {', '.join(missing)}")
    return table


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write a text file (a table as Markdown, a report) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_csv(path: str | os.PathLike, table: pa.Table) -> None:
    """Write an Arrow table as CSV (header row first) atomically."""
    buffer = stdio.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.column_names)
    writer.writerows([row[n] for n in table.column_names] for row in table.to_pylist())
    write_text(path, buffer.getvalue())


def read_documents(path: str | os.PathLike) -> pa.Table:
    return read_table(path, schemas.DOCUMENTS)


def read_splits(path: str | os.PathLike) -> pa.Table:
    return read_table(path, schemas.SPLITS)


def fold_indices(splits: pa.Table, doc_ids: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per fold (in fold order): (train positions, test positions) into ``doc_ids``.

    Positions keep the order of ``doc_ids`` (which is sorted), so "lower training
    index" in the tie rules means "lower doc_id".
    """
    from .variant import positions  # scipy.sparse (variant's) only for jobs that read folds

    folds = splits.column("fold").to_numpy()
    ids = splits.column("doc_id").to_numpy()
    subset = np.asarray(splits.column("subset").to_pylist())
    where = positions(doc_ids, ids, "the documents (named in the splits)")
    out = []
    for fold in np.unique(folds):
        sel = folds == fold
        train = np.sort(where[sel & (subset == "train")])
        test = np.sort(where[sel & (subset == "test")])
        out.append((train.astype(np.int64), test.astype(np.int64)))
    return out
