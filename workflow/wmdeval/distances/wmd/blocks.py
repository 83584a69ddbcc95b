"""WMD blocks as files: solving one block into a file, gathering blocks into a matrix, subsets.

A dataset needs all n(n-1)/2 pairs i < j, cut into contiguous blocks of about equal
estimated work (:func:`~wmdeval.distances.wmd.pairs.plan_blocks`). A block is the
stored unit of work (one WMD_BLOCK file each): it depends only on the documents and the
number of blocks, never on how many jobs or submissions solve them. One job solves one
block (:func:`run_block`); the blocks are gathered afterwards (:func:`run_gather`).
Stored pairs are positions in the documents' own order, whatever the solve order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ...core import io, schemas
from .pairs import plan_blocks, row_starts, solve_order
from .solver import WmdInputs, prepare, reorder, solve_block

# The package's name: log lines read as they did before the package was split.
LOG = logging.getLogger("wmdeval.distances.wmd")


# ---------------------------------------------------------------------------------------------
# Blocks and matrices (pure)


def to_document_positions(table: pa.Table, order: np.ndarray) -> pa.Table:
    """A WMD_BLOCK table of solve-order pairs -> the same pairs in the documents' own order.

    ``order`` as from :func:`~wmdeval.distances.wmd.pairs.solve_order`: grid position k
    is document ``order[k]``. Each pair is renamed and swapped where needed so that
    i < j again (int32); distances and row order are kept.
    """
    a = order[table.column("i").to_numpy()]
    b = order[table.column("j").to_numpy()]
    return pa.table(
        {
            "i": np.minimum(a, b).astype(np.int32),
            "j": np.maximum(a, b).astype(np.int32),
            "distance": table.column("distance"),
        },
        schema=schemas.WMD_BLOCK,
    )


def gather(n: int, blocks: Iterable[pa.Table], unsolved: np.ndarray | None = None) -> np.ndarray:
    """Symmetric float64 [n, n] matrix from WMD_BLOCK tables covering every pair once.

    ``blocks``: any iterable (run_gather reads the files one at a time) of tables whose
    pairs are (i < j) positions in the documents' own order; their float64 distances are
    kept as they are (the tie rule compares them at 32 significant bits, which float32
    would not hold). A pair outside the grid, missing or repeated is a WmdevalError.
    ``unsolved``: boolean [n], documents whose pairs among themselves were not solved (a
    one-fold test set); those entries are NaN.

    Diagonal 0; a document whose distances are all NaN (an empty document) gets NaN on
    its diagonal too. (With fewer than two non-empty documents that cannot be told apart
    from the data; such a matrix is all NaN.)
    """
    unseen = -1.0  # distances are >= 0 or NaN
    matrix = np.full((n, n), unseen, dtype=np.float64)
    rows = 0
    for table in blocks:
        rows += table.num_rows
        # In slices: a block of a large dataset has tens of millions of pairs.
        for start in range(0, table.num_rows, 1 << 22):
            part = table.slice(start, 1 << 22)
            i = part.column("i").to_numpy().astype(np.int64)
            j = part.column("j").to_numpy().astype(np.int64)
            if not ((0 <= i).all() and (i < j).all() and (j < n).all()):
                raise io.WmdevalError(f"a block has a pair outside 0 <= i < j < {n}")
            d = part.column("distance").to_numpy().astype(np.float64)
            matrix[i, j] = d
            matrix[j, i] = d
    k = 0 if unsolved is None else int(np.count_nonzero(unsolved))
    total = n * (n - 1) // 2 - k * (k - 1) // 2
    if rows != total:
        raise io.WmdevalError(
            f"blocks hold {rows} pairs but {n} documents have {total}: "
            f"{'some pairs are missing' if rows < total else 'some pairs are duplicated'}"
        )
    if k:
        block = np.flatnonzero(unsolved)
        matrix[np.ix_(block, block)] = np.nan
    np.fill_diagonal(matrix, np.nan)
    # As many pairs as needed and none left unseen: every pair came exactly once.
    for r0 in range(0, n, 1024):
        missing = np.argwhere(matrix[r0 : r0 + 1024] == unseen)
        if len(missing):
            r, c = int(missing[0][0]) + r0, int(missing[0][1])
            raise io.WmdevalError(
                f"pair ({min(r, c)}, {max(r, c)}) is missing from the blocks "
                "(and another is duplicated)"
            )
    # empty: no distance at all; with unsolved pairs, none to any solved partner
    solved = ~unsolved if k else slice(None)
    empty = np.array([np.isnan(row[solved]).all() for row in matrix], dtype=bool)
    np.fill_diagonal(matrix, np.where(empty, np.nan, 0.0))
    return matrix


# ---------------------------------------------------------------------------------------------
# Run functions (file I/O at the edge)


def _read_solve_order(doc_ids: np.ndarray, splits_path) -> tuple[np.ndarray, int]:
    splits = io.read_splits(splits_path) if splits_path else None
    return solve_order(doc_ids, splits)


def run_block(
    documents_path,
    embeddings_path,
    weighting: str,
    block: int,
    n_blocks: int,
    threads: int,
    out_path,
    splits_path=None,
) -> None:
    """Solve block ``block`` (0-based) of ``n_blocks`` and write it as a WMD_BLOCK file.

    Reads DOCUMENTS and embeddings files; ``weighting`` as in
    :func:`~wmdeval.distances.wmd.solver.prepare`. The file holds the block's pairs in
    the documents' own positions (i < j), in solve-rank order. With ``splits_path`` of a
    one-fold dataset, test x test pairs are not solved. Bad arguments or input are a
    WmdevalError.
    """
    if n_blocks < 1 or not 0 <= block < n_blocks:
        raise io.WmdevalError(f"block {block} is not in 0..{n_blocks - 1}")
    if threads < 1:
        raise io.WmdevalError("threads must be >= 1")
    documents = io.read_documents(documents_path)
    inputs = prepare(documents, io.read_embeddings(embeddings_path), weighting)
    _log_empty(documents, inputs)
    order, n_rows = _read_solve_order(inputs.doc_ids, splits_path)
    ordered = reorder(inputs, order)
    start, stop = plan_blocks(ordered.sizes, n_blocks, n_rows)[block]
    LOG.info(
        "%d documents, %d pairs; block %d/%d: pairs %d..%d (%d), %d thread(s)",
        inputs.n,
        int(row_starts(inputs.n, n_rows)[-1]),
        block + 1,
        n_blocks,
        start,
        stop,
        stop - start,
        threads,
    )
    table = solve_block(
        ordered, block, n_blocks, threads, n_rows=n_rows, report=f"wmd_block {block + 1}/{n_blocks}"
    )
    io.write_table(to_document_positions(table, order), out_path, schemas.WMD_BLOCK)


def _log_empty(documents: pa.Table, inputs: WmdInputs) -> None:
    no_words = pc.list_value_length(documents.column("words")).to_numpy(zero_copy_only=False) == 0
    for label, mask in (
        ("have no words", no_words),
        (
            "have no mass under the weighting (tf-idf: every word in every document; "
            "wrd: only zero vectors)",
            inputs.empty & ~no_words,
        ),
    ):
        if mask.any():
            ids = inputs.doc_ids[mask]
            LOG.warning(
                "%d document(s) %s; their distances are NaN: doc_id %s%s",
                len(ids),
                label,
                ", ".join(map(str, ids[:20])),
                ", ..." if len(ids) > 20 else "",
            )


def run_gather(
    documents_path, block_paths: list, out_path, method_name: str, splits_path=None
) -> None:
    """Gather block files into a DISTANCES file over the documents' doc_ids.

    ``block_paths``: every WMD_BLOCK file of the matrix, in any order; ``splits_path`` the
    same as for :func:`run_block`. The matrix is float64, in document order, stored with
    ``{"method": method_name}`` metadata; see :func:`gather` for the NaN rules.
    """
    doc_ids = io.read_documents(documents_path).column("doc_id").to_numpy()
    blocks = (io.read_table(p, schemas.WMD_BLOCK) for p in block_paths)
    order, n_rows = _read_solve_order(doc_ids, splits_path)
    unsolved = np.zeros(len(doc_ids), dtype=bool)
    unsolved[order[n_rows:]] = True
    matrix = gather(len(doc_ids), blocks, unsolved)
    empty = int(np.isnan(np.diagonal(matrix)).sum())
    LOG.info(
        "%s: %d x %d matrix from %d block(s); %d empty document(s)",
        method_name,
        len(doc_ids),
        len(doc_ids),
        len(block_paths),
        empty,
    )
    io.write_distances(matrix, doc_ids, out_path, metadata={"method": method_name})


def run_subset(matrix_path, documents_path, out_path) -> None:
    """Write the sub-matrix of a DISTANCES file for the doc_ids of ``documents_path``.

    Rows and columns follow the documents' order; the file's metadata is kept.
    """
    keep_ids = io.read_documents(documents_path).column("doc_id").to_numpy()
    # only the kept rows and columns are read: a sample's sub-matrix, not the whole matrix
    _, matrix = io.read_distances(matrix_path, keep_ids)
    metadata = pq.read_schema(matrix_path).metadata or {}
    kept = {k.decode(): v.decode() for k, v in metadata.items() if not k.startswith(b"ARROW:")}
    LOG.info("%d of %d documents kept", len(keep_ids), pq.read_metadata(matrix_path).num_rows)
    io.write_distances(matrix, keep_ids, out_path, metadata=kept or None)
