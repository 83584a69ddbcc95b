"""The pair grid of a WMD matrix: pair numbering, solve order, the work model and the block plan.

Pairs (i, j), i < j, are positions in the solve order (:func:`solve_order`), numbered
row-major: i ascending, then j ascending. Everything here is arithmetic on document
sizes (distinct words per document); it needs neither the vectors nor POT, so the
scheduler's resource model (``wmdeval.planning.resources``) uses the same work model
as the block plan.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Work model of one pair for block balancing: (u_i * u_j) ** WORK_EXPONENT + PAIR_OVERHEAD,
#: u = distinct words. Fitted to POT 0.9 network-simplex timings on 300-d word vectors,
#: 5 to 300 words per document: time grows like (u_i u_j)^1.05-1.2 (one unit ~0.023 us
#: on the machine measured) plus ~8 us of fixed cost per pair (~350 units).
WORK_EXPONENT = 1.1
PAIR_OVERHEAD = 350.0

#: Seconds per work unit on the machine the model was fitted on (see WORK_EXPONENT).
SECONDS_PER_UNIT = 0.023e-6


# ---------------------------------------------------------------------------------------------
# The work model


def document_work(sizes: np.ndarray) -> np.ndarray:
    """Each document's factor s in the work model, float64 [n].

    ``sizes``: distinct words per document, any numeric dtype [n]. s = u ** WORK_EXPONENT,
    and 0 for documents of fewer than two words: their pairs never reach the solver
    (one side's whole mass goes everywhere), so they cost only the overhead. A pair
    (i, j) costs s_i * s_j + PAIR_OVERHEAD units.
    """
    sizes = np.asarray(sizes).astype(np.float64)
    return np.where(sizes >= 2, sizes**WORK_EXPONENT, 0.0)


def row_work(s: np.ndarray, n_rows: int | None = None) -> np.ndarray:
    """Estimated work of each row of the pair grid, float64 [n].

    ``s``: :func:`document_work` of the documents in solve order. Row i holds the pairs
    (i, j > i), so its work is s_i * sum_{j>i} s_j + PAIR_OVERHEAD * (n - 1 - i); rows
    from ``n_rows`` on (see :func:`row_starts`) have no pairs and no work. The sum of all
    rows is the work of the whole matrix.
    """
    pairs_in_row = np.diff(row_starts(len(s), n_rows))
    later = np.append(np.cumsum(s[::-1])[::-1][1:], 0.0)  # sum of s over the rows below
    return np.where(pairs_in_row > 0, s * later + PAIR_OVERHEAD * pairs_in_row, 0.0)


def _row_prefix_work(s: np.ndarray, i: int) -> np.ndarray:
    """Work of the first 1, 2, ... pairs of row i, float64 [n - 1 - i] (same model)."""
    return s[i] * np.cumsum(s[i + 1 :]) + PAIR_OVERHEAD * np.arange(1, len(s) - i)


# ---------------------------------------------------------------------------------------------
# Pair numbering and solve order


def row_starts(n: int, n_rows: int | None = None) -> np.ndarray:
    """Rank of the first pair of each row, int64 [n + 1]; the last entry is the number of pairs.

    All rows: n(n-1)/2 pairs. With ``n_rows``, only the first n_rows rows have pairs
    (j > i, j over all n documents); later rows are empty (their starts repeat).
    """
    i = np.arange(n + 1, dtype=np.int64)
    starts = i * (n - 1) - i * (i - 1) // 2
    if n_rows is not None and n_rows < n:
        starts[n_rows + 1 :] = starts[n_rows]
    return starts


def solve_order(doc_ids: np.ndarray, splits: pa.Table | None) -> tuple[np.ndarray, int]:
    """(order, n_rows): the pair grid's document order and how many rows have pairs.

    ``order``: int64 [n], positions into ``doc_ids`` (the documents' own order); position
    k of the grid is document ``order[k]``. Five-fold data (or no ``splits``) needs every
    pair: the identity order, n_rows = n. A one-fold dataset's kNN never reads test x test
    distances, so its training documents come first (each group in document order) and
    only their rows have pairs: train x train and train x test, each once (ohsumed: 32 %
    fewer solves).
    """
    n = len(doc_ids)
    identity = np.arange(n, dtype=np.int64)
    if splits is None or len(np.unique(splits.column("fold").to_numpy())) != 1:
        return identity, n
    is_train = np.isin(
        doc_ids,
        splits.filter(pc.equal(splits.column("subset"), "train")).column("doc_id").to_numpy(),
    )
    order = np.concatenate([identity[is_train], identity[~is_train]])
    return order, int(is_train.sum())


# ---------------------------------------------------------------------------------------------
# Blocks


def plan_blocks(
    sizes: np.ndarray, n_blocks: int, n_rows: int | None = None
) -> list[tuple[int, int]]:
    """Contiguous [start, stop) pair-rank ranges of about equal estimated work, one per block.

    ``sizes``: distinct words (with positive weight) per document in solve order [n].
    The n_blocks ranges cover ranks 0..total exactly once, in order; some may be empty.
    Depends only on the sizes and n_blocks (never on threads or jobs). Works a row at a
    time (:func:`row_work`); a boundary that falls inside a row is placed with that row's
    cumulative work.
    """
    if n_blocks < 1:
        raise ValueError("n_blocks must be >= 1")
    n = len(sizes)
    starts = row_starts(n, n_rows)
    total_pairs = int(starts[-1])
    if total_pairs == 0:
        return [(0, 0)] * n_blocks
    s = document_work(sizes)
    pairs_in_row = np.diff(starts)
    before_row = np.concatenate([[0.0], np.cumsum(row_work(s, n_rows))])
    total = before_row[-1]
    last_row = int(np.flatnonzero(pairs_in_row)[-1])  # the last row that has pairs

    bounds = [0]
    for k in range(1, n_blocks):
        target = total * k / n_blocks
        # the row where cumulative work reaches the target (never a row without pairs)
        i = min(int(np.searchsorted(before_row, target, side="right")) - 1, last_row)
        within = _row_prefix_work(s, i)
        # pairs of row i whose cumulative work stays within the target go to block k-1
        taken = int(np.searchsorted(within, target - before_row[i], side="right"))
        bounds.append(max(bounds[-1], int(starts[i]) + min(taken, int(pairs_in_row[i]))))
    bounds.append(total_pairs)
    return [(bounds[k], bounds[k + 1]) for k in range(n_blocks)]


def row_segments(
    n: int, start: int, stop: int, n_rows: int | None = None
) -> list[tuple[int, int, int, int]]:
    """The rows that pair ranks [start, stop) cross, as (i, j0, j1, offset) tuples.

    Each covers pairs (i, j) for j0 <= j < j1; ``offset`` is the position of pair (i, j0)
    within the range. In rank order; empty for an empty range.
    """
    starts = row_starts(n, n_rows)
    segments = []
    if stop <= start:
        return segments
    first = int(np.searchsorted(starts, start, side="right")) - 1
    last = int(np.searchsorted(starts, stop - 1, side="right")) - 1
    for i in range(first, last + 1):
        lo = max(start, int(starts[i]))
        hi = min(stop, int(starts[i + 1]))
        if hi > lo:
            base = int(starts[i]) - (i + 1)  # rank of pair (i, j) is base + j
            segments.append((i, lo - base, hi - base, lo - start))
    return segments


# ---------------------------------------------------------------------------------------------
# A search job's set-up batches

#: The most bytes of the bounds' float32 tables (``bounds.LowerBounds``) a search job
#: builds at once: [its queries' distinct words x documents] and [vocabulary x its
#: queries]. A shard whose tables would be larger sets up and searches its queries a
#: batch at a time (:func:`setup_batches`; the same tables' bits, as a query's bound rows
#: and search depend on its own words alone). Half the 85,635 passages in 10 shards built
#: 3.7 GB of them per job in one piece (peak PSS 3.1 GB), all of them in 22 shards would
#: build 5.7 GB; batches of 1 GiB keep a job within the 4 GB a cluster node commonly
#: grants a core, at the price of less set-up shared by a batch's queries.
SETUP_TABLE_BYTES = 2**30


def setup_batches(
    words: list[np.ndarray], n_documents: int, vocabulary: int, budget: int | None = None
) -> list[tuple[int, int]]:
    """Consecutive runs [start, end) of queries whose bounds' tables fit in ``budget``
    bytes (default :data:`SETUP_TABLE_BYTES`): 4 x (the run's distinct words x
    ``n_documents`` + ``vocabulary`` x the run's queries). ``words``: each query's word
    codes in [0, ``vocabulary``), in the order of the queries. A run holds at least one
    query, so one query too large for the budget is a run of its own. No query: no run."""
    budget = SETUP_TABLE_BYTES if budget is None else budget
    seen = np.zeros(vocabulary, dtype=bool)
    runs: list[tuple[int, int]] = []
    start, distinct = 0, 0
    for i, codes in enumerate(words):
        codes = np.asarray(codes, dtype=np.int64)
        new = np.unique(codes[~seen[codes]])
        tables = 4 * ((distinct + len(new)) * n_documents + vocabulary * (i + 1 - start))
        if tables > budget and i > start:
            runs.append((start, i))
            seen[:] = False
            start, distinct = i, 0
            new = np.unique(codes)
        seen[new] = True
        distinct += len(new)
    if len(words) > start:
        runs.append((start, len(words)))
    return runs


def setup_table_bytes(
    words: list[np.ndarray], n_documents: int, vocabulary: int, runs: list[tuple[int, int]]
) -> int:
    """The largest tables (bytes, as :func:`setup_batches` counts them) of any of ``runs``."""
    largest = 0
    for start, end in runs:
        part = words[start:end]
        distinct = len(np.unique(np.concatenate(part))) if part else 0
        largest = max(largest, 4 * (distinct * n_documents + vocabulary * (end - start)))
    return largest
