"""Memory and run time of the WMD jobs, for the workflow's scheduler.

``workflow/rules/common.smk`` imports this module while Snakemake plans the run, once per
job, so it reads at most the documents' word lists and imports only numpy, pyarrow and
the work model of the block plan (:mod:`wmdeval.distances.wmd.pairs`): never POT.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.errors import WmdevalError
from ..distances.wmd.pairs import (
    SECONDS_PER_UNIT,
    document_work,
    row_work,
    setup_batches,
    setup_table_bytes,
)
from ..ingest.kusner import mat_documents, mat_loaded_mb
from .wall import speedup


@functools.lru_cache(maxsize=64)
def _document_sizes(path: str, mtime_ns: int) -> np.ndarray:
    # Cached per file version: Snakemake asks once per block job, and a matrix has many.
    words = pq.read_table(path, columns=["words"]).column("words")
    return pc.list_value_length(words).to_numpy(zero_copy_only=False).astype(np.float64)


def _file_mb(path) -> float:
    """Size of a file in MB; 0 for None or a file that does not exist yet."""
    try:
        return os.stat(path).st_size / 1e6 if path is not None else 0.0
    except OSError:
        return 0.0


#: Memory (MB) of one thread's row of problems in a block job: solver.ROW_ENTRIES cost
#: entries (8 MB), the cost table of the row's words they are read from (as many at most)
#: and the row's marginals and index arrays.
ROW_MB = 24


def block_resources(
    documents_path, n_blocks: int, threads: int, attempt: int = 1, embeddings_path=None
) -> dict[str, int]:
    """``{"mem_mb": int, "runtime": int (minutes)}`` of one block job, from the work it holds.

    Uses the work model of the block plan: a block holds 1/n_blocks of the estimated
    work of all n(n-1)/2 pairs (a one-fold dataset's skipped pairs are not subtracted).
    Its threads divide the time by their speed-up (:func:`~wmdeval.planning.wall.speedup`,
    Amdahl's law with :data:`~wmdeval.planning.wall.SEARCH_SERIAL_SHARE`). Generous on
    purpose (3x the fitted time, as clusters' cores are often slower than the machine it
    was fitted on), and doubled per retry (``attempt`` 1, 2, ...). Before
    the documents exist (a dry run), a nominal request.

    Memory counts the word vectors (``embeddings_path``, the whole file is read: 8x its
    size on disk, as Arrow lists, as a matrix and in the solver's inputs): a 300-document
    sample of 20 Newsgroups with its 29,276 300-d vectors (33 MB) peaked at 513 MB
    against the 405 MB declared without them (benchmarks/paper_scale.py).
    """
    try:
        stat = os.stat(documents_path)
    except OSError:
        return {"mem_mb": 1000 * attempt, "runtime": 60 * attempt}
    sizes = _document_sizes(str(documents_path), stat.st_mtime_ns)
    n = len(sizes)
    pairs = n * (n - 1) / 2
    seconds = block_work_seconds(documents_path, n_blocks) / speedup(threads)
    runtime = int(np.ceil(5 + 3 * seconds / 60))
    # the block's pairs (i, j, distance and numpy copies) plus the documents and vectors,
    # and each thread's row of problems
    vectors_mb = 8 * _file_mb(embeddings_path)
    mem_mb = int(
        np.ceil(
            400
            + 40 * pairs / n_blocks / 1e6
            + 30 * stat.st_size / 1e6
            + vectors_mb
            + threads * ROW_MB
        )
    )
    factor = 2 ** (attempt - 1)
    return {"mem_mb": mem_mb * factor, "runtime": runtime * factor}


def block_work_seconds(documents_path, n_blocks: int) -> float | None:
    """CPU seconds at one thread of one block of ``n_blocks``, by the work model of the
    block plan (1/n_blocks of the estimated work of all pairs); None before the
    documents exist."""
    try:
        stat = os.stat(documents_path)
    except (OSError, TypeError):
        return None
    sizes = _document_sizes(str(documents_path), stat.st_mtime_ns)
    return float(row_work(document_work(sizes)).sum()) * SECONDS_PER_UNIT / n_blocks


@functools.lru_cache(maxsize=64)
def _vocabulary_size(path: str, mtime_ns: int) -> int:
    words = pq.read_table(path, columns=["words"]).column("words")
    return len(pc.unique(pc.list_flatten(words.combine_chunks())))


@functools.lru_cache(maxsize=64)
def _shard_vocabulary(path: str, mtime_ns: int, n_shards: int) -> int:
    """The most distinct words of any of ``n_shards`` contiguous runs of documents cut by
    estimated work, as the search cuts its queries (``search.query_shards``): an upper
    bound of a shard's query vocabulary, since a shard's queries are a subset of such a
    run or fewer documents (20 Newsgroups, 64 shards: 5,858 of 29,276 words)."""
    words = pq.read_table(path, columns=["words"]).column("words").combine_chunks()
    sizes = pc.list_value_length(words).to_numpy(zero_copy_only=False).astype(np.float64)
    if not len(sizes):
        return 0
    cumulative = np.cumsum(document_work(sizes) + 1.0)
    cuts = np.searchsorted(
        cumulative, cumulative[-1] * np.arange(1, n_shards) / n_shards, side="right"
    )
    return _most_distinct_words(words, np.r_[0, cuts], np.r_[cuts, len(sizes)])


@functools.lru_cache(maxsize=64)
def _shard_tables(path: str, mtime_ns: int, n_shards: int) -> int:
    """The largest bounds' tables (bytes) a search job sets up at once: over the runs of
    documents cut as :func:`_shard_vocabulary` cuts them (every document a query), each
    run's set-up batches (``pairs.setup_batches``, as ``search.shard_batches`` cuts a
    shard's queries within ``pairs.SETUP_TABLE_BYTES``)."""
    words = pq.read_table(path, columns=["words"]).column("words").combine_chunks()
    n = len(words)
    if not n:
        return 0
    flat = pc.dictionary_encode(pc.list_flatten(words))
    codes = flat.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    vocabulary = len(flat.dictionary)
    offsets = words.offsets.to_numpy()
    offsets = offsets - offsets[0]  # list_flatten starts at the first list's values
    lists = [codes[offsets[i] : offsets[i + 1]] for i in range(n)]
    sizes = np.diff(offsets).astype(np.float64)
    cumulative = np.cumsum(document_work(sizes) + 1.0)
    cuts = np.searchsorted(
        cumulative, cumulative[-1] * np.arange(1, n_shards) / n_shards, side="right"
    )
    largest = 0
    for start, end in zip(np.r_[0, cuts], np.r_[cuts, n], strict=True):
        run = lists[start:end]
        batches = setup_batches(run, n, vocabulary)
        largest = max(largest, setup_table_bytes(run, n, vocabulary, batches))
    return largest


def _most_distinct_words(words: pa.ListArray, starts, ends) -> int:
    """The most distinct words of any run of documents ``starts[k]:ends[k]`` of ``words``
    (one documents file's word lists, in one chunk)."""
    offsets = words.offsets.to_numpy()
    most = 0
    for start, end in zip(starts, ends, strict=True):
        run = words.values.slice(offsets[start], offsets[end] - offsets[start])
        most = max(most, len(pc.unique(run)))
    return most


#: ``wmdeval.distances.wmd.bounds.MAX_ENTRIES`` (tests/test_planning.py checks they agree),
#: copied because bounds imports POT: entries of one float64 working matrix of word costs.
BOUNDS_MAX_ENTRIES = 1 << 24
#: Such matrices a search thread holds at once (the costs and their rows gathered per
#: word occurrence): 20news at 2 % scale peaked 724 MB in 2 threads against 637 declared
#: without them (benchmarks/paper_scale.py).
WORKING_MATRICES = 2

#: ``wmdeval.distances.wmd.search.BOUND_ROWS`` (tests/test_planning.py checks they
#: agree): the float64 bound rows a search thread computes at once. The model counts at
#: least 512 rows, the one block of all threads that the search had when its peaks
#: were measured.
SEARCH_BOUND_ROWS = 16
SEARCH_BOUND_ROWS_FLOOR = 512

#: Share of a full matrix's pairs the neighbour search is planned to solve; measured
#: 1.5-25 % (README), so this is generous for all but small corpora of long documents.
SEARCH_SHARE = 0.3


def search_resources(
    documents_path, n_shards: int, threads: int, attempt: int = 1
) -> dict[str, int]:
    """``{"mem_mb": int, "runtime": int (minutes)}`` of one neighbour-search job (knn mode).

    Memory: the bounds' float32 word-to-document distances (documents x the shard's
    vocabulary; the shard's queries x the whole vocabulary; a batch of the shard's
    queries at a time where these exceed ``pairs.SETUP_TABLE_BYTES``,
    :func:`_shard_tables`; 20 Newsgroups at 300-d peaked 1.3 GB,
    benchmarks/paper_scale.py), the float64 bound
    rows of every thread (:data:`SEARCH_BOUND_ROWS` each, at least
    :data:`SEARCH_BOUND_ROWS_FLOOR` in all), the documents, and per thread the bounds'
    float64 working matrices of word costs (:data:`BOUNDS_MAX_ENTRIES` entries,
    :data:`WORKING_MATRICES` at once). Run
    time: SEARCH_SHARE of the full matrix's work, split over the shards, 3x the fitted time
    as for blocks. Doubled per retry; a nominal request
    before the documents exist (a dry run).
    """
    try:
        stat = os.stat(documents_path)
    except OSError:
        return {"mem_mb": 2000 * attempt, "runtime": 60 * attempt}
    sizes = _document_sizes(str(documents_path), stat.st_mtime_ns)
    n = len(sizes)
    tables = _shard_tables(str(documents_path), stat.st_mtime_ns, n_shards)
    row_block = max(SEARCH_BOUND_ROWS_FLOOR, threads * SEARCH_BOUND_ROWS)
    bounds_mb = tables / 1e6 + 8 * row_block * n / 1e6
    working_mb = threads * WORKING_MATRICES * 8 * BOUNDS_MAX_ENTRIES / 1e6
    mem_mb = int(np.ceil(600 + 1.5 * bounds_mb + working_mb + 30 * stat.st_size / 1e6))
    units = SEARCH_SHARE * row_work(document_work(sizes)).sum()
    seconds = units * SECONDS_PER_UNIT / n_shards / speedup(threads)
    runtime = int(np.ceil(10 + 3 * seconds / 60))
    factor = 2 ** (attempt - 1)
    return {"mem_mb": mem_mb * factor, "runtime": runtime * factor}


def forecast_resources(forecast_path, shard: str, attempt: int = 1) -> dict[str, int] | None:
    """``{"mem_mb", "runtime"}`` of search shard ``shard`` ("2-of-4") as its method's
    forecast (``wmd_forecast``, :mod:`wmdeval.planning.forecast`) gives them, doubled per
    retry; None before the forecast exists (a dry run). A forecast without the shard
    (another ``wmd.search_shards``) stops with one line naming the file."""
    import json

    try:
        with open(forecast_path, encoding="utf-8") as stream:
            record = json.load(stream)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise WmdevalError(f"{forecast_path}: not a readable forecast ({exc})") from None
    try:
        entry = next(s for s in record["forecast"]["shards"] if s["shard"] == shard)
        mem_mb, runtime = int(entry["mem_mb"]), int(entry["runtime"])
    except (KeyError, TypeError, ValueError, StopIteration):
        raise WmdevalError(
            f"{forecast_path}: the forecast has no mem_mb and runtime for shard {shard}"
        ) from None
    factor = 2 ** (attempt - 1)
    return {"mem_mb": mem_mb * factor, "runtime": runtime * factor}


def document_rows(documents_path, planned: int | None = None) -> int | None:
    """Rows of a documents file; before it exists (a dry run), if not Parquet or not
    given, the documents ``planned`` for it
    (:func:`wmdeval.planning.modes.planned_documents`: from the user's file), None if
    unknown."""
    if not documents_path:
        return planned
    try:
        return pq.read_metadata(documents_path).num_rows
    except (OSError, pa.ArrowInvalid):
        return planned


def gather_mem_mb(documents_path, planned: int | None = None) -> int:
    """Memory (MB) of the gather job: the float64 n x n matrix about three times over.

    Before the documents exist (a dry run), n is the ``planned`` count; 2000 if unknown.
    """
    return _gather_mb(document_rows(documents_path, planned))


def _gather_mb(n: int | None) -> int:
    return 2000 if n is None else int(np.ceil(1000 + 3 * 8 * n * n / 1e6))


def matrix_job_mem_mb(
    documents_path, attempt: int = 1, n_matrices: int = 2, planned: int | None = None
) -> int:
    """Memory (MB) of a job that holds ``n_matrices`` of a variant's float64 distance
    matrices plus a float64 working block: the gather job's memory (three matrices' worth)
    with one more matrix for each beyond two, and 2000 more, times ``attempt``. Before the
    documents exist, n is the ``planned`` count."""
    n = document_rows(documents_path, planned)
    extra = int(np.ceil(8 * (n or 0) ** 2 * max(n_matrices - 2, 0) / 1e6))
    return (_gather_mb(n) + extra + 2000) * attempt


#: ``wmdeval.core.io.MAX_BATCH_VALUES`` (tests/test_planning.py checks they agree): values
#: of one row group of a stored distance matrix.
ROW_GROUP_VALUES = 1 << 24


def subset_mem_mb(documents_path, attempt: int = 1, planned: int | None = None) -> int:
    """Memory (MB) of a ``wmd-subset`` job (a variant's or a sample's sub-matrix): it reads
    only the kept rows and columns, a row group at a time (a few row groups' worth of
    working memory), and writes the float64 sub-matrix of the n documents kept (twice: the
    matrix and its Arrow copy): 1000 + 4 row groups + 2 x 8 n^2 bytes, times ``attempt``
    (a 300-document sample of 20 Newsgroups' 2.8 GB matrices: 1.0 GB peak,
    benchmarks/paper_scale.py). Before the documents exist, n is the ``planned`` count;
    2000 if unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return 2000 * attempt
    return int(np.ceil(1000 + 4 * 8 * ROW_GROUP_VALUES / 1e6 + 2 * 8 * n * n / 1e6)) * attempt


#: ``wmdeval.core.variant.RANKING_BLOCK_BYTES`` (tests/test_planning.py checks they
#: agree): working memory of one block of kNN rankings in the evaluate job.
RANKING_BLOCK_BYTES = 256 * 2**20

#: The evaluate job without dense matrices (knn mode), in MB: a fixed part (Python, numpy,
#: scipy and pyarrow), MB per 1,000 documents (doc_ids, labels, the SPLITS and the
#: PREDICTIONS rows of their test documents), MB per million word entries of the documents
#: (the Arrow table and its Python lists while read, the count matrix, a method's weighted
#: copy and its column side) and MB per million pairs of a neighbour table (the Arrow
#: table, the distances and the sparse index, and the copies while it is built). More
#: than twice what benchmarks/evaluate_memory.py measured: 436 MB peak RSS for 10,000
#: passages and 505 MB for 20,000 (30 distinct words each, 29 pairs per document and
#: table; benchmarks/results/evaluate_memory.json), 1,313 MB declared for the 20,000.
EVALUATE_BASE_MB = 500
EVALUATE_MB_PER_1000_DOCUMENTS = 5
EVALUATE_MB_PER_MILLION_WORDS = 100
EVALUATE_MB_PER_MILLION_PAIRS = 100

#: Pairs a neighbour table holds per document before it exists (a dry run): a document is
#: a query of 0.7 roles on average (a test document of one, a training document of a
#: validation split's now and then), each with the solves the search makes (42 on 20
#: Newsgroups, docs/performance.md), about 30; twice that.
PLANNED_PAIRS_PER_DOCUMENT = 60

#: Distinct words per document assumed before the documents exist (a dry run): near the
#: widest paper corpus (bbcsport 116.5; 20 Newsgroups 69.3, the passages 30).
PLANNED_WORDS_PER_DOCUMENT = 100


def evaluate_mem_mb(
    documents_path,
    attempt: int = 1,
    planned: int | None = None,
    dense_matrices: int = 1,
    neighbour_pairs=(),
) -> int:
    """Memory (MB) of the evaluate job, times ``attempt``.

    With ``dense_matrices`` (full mode, or methods given as matrices) it reads them one at
    a time: one float64 n x n matrix, a batch being read and its reordered copy, 2000 +
    2 x 8 n^2 bytes. The kNN rankings are made a block of queries at a time
    (:data:`RANKING_BLOCK_BYTES`), so without dense matrices (knn mode) the job holds no
    n x n: :data:`EVALUATE_BASE_MB`, twice the block (the block and the kernels' column
    side), the documents and their words, and the pairs of the neighbour tables it reads
    (``neighbour_pairs``: NEIGHBOUR_PAIRS files; one not yet written counts
    :data:`PLANNED_PAIRS_PER_DOCUMENT` per document). Before the documents exist, n is the
    ``planned`` count; 4000 if unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return 4000 * attempt
    if dense_matrices:
        return int(np.ceil(2000 + 2 * 8 * n * n / 1e6)) * attempt
    try:
        stat = os.stat(documents_path)
        words = float(_document_sizes(str(documents_path), stat.st_mtime_ns).sum())
    except (OSError, TypeError):
        words = float(PLANNED_WORDS_PER_DOCUMENT * n)
    pairs = 0
    for path in neighbour_pairs:
        rows = document_rows(path)
        pairs += PLANNED_PAIRS_PER_DOCUMENT * n if rows is None else rows
    mb = (
        EVALUATE_BASE_MB
        + 2 * RANKING_BLOCK_BYTES / 1e6
        + EVALUATE_MB_PER_1000_DOCUMENTS * n / 1e3
        + EVALUATE_MB_PER_MILLION_WORDS * words / 1e6
        + EVALUATE_MB_PER_MILLION_PAIRS * pairs / 1e6
    )
    return int(np.ceil(mb)) * attempt


#: CPU seconds of the dense RWMD matrix per document and vocabulary word (its work is
#: every word's cost to each document's nearest word, a band of documents at a time):
#: 0.54e-6 measured on 20 Newsgroups (18,846 posts, 53,259 words, 300-d: 543 s CPU in 2
#: threads) and 0.20e-6 on 2,000 reviews at 50-d (benchmarks/beyond_methods.py; README
#: "Scale").
RWMD_SECONDS_PER_DOCUMENT_WORD = 1e-6

#: ``wmdeval.distances.embedding.QUERY_BAND`` (tests/test_planning.py checks they agree):
#: documents of one RWMD task, whose words' float32 costs to the nearest word of every
#: document [their distinct words x n] a thread holds.
EMBEDDING_QUERY_BAND = 512

#: Distinct words of a band of EMBEDDING_QUERY_BAND documents assumed before a documents
#: file exists (a dry run): 20 Newsgroups' widest (first 500 words of each post) has 10,939.
PLANNED_BAND_VOCABULARY = 16_000


@functools.lru_cache(maxsize=64)
def _band_vocabulary(path: str, mtime_ns: int, band: int) -> int:
    """The most distinct words of any ``band`` consecutive non-empty documents in doc_id
    order, as the RWMD matrix bands them (``embedding.relaxed_wmd_matrix``)."""
    table = pq.read_table(path, columns=["doc_id", "words"])
    table = table.take(pc.sort_indices(table, sort_keys=[("doc_id", "ascending")]))
    words = table.column("words").combine_chunks()
    words = words.filter(pc.greater(pc.list_value_length(words), 0))
    starts = np.arange(0, len(words), band)
    return _most_distinct_words(words, starts, np.minimum(starts + band, len(words)))


#: Vocabulary assumed before a documents file exists (a dry run): generous for the
#: paper's corpora (20 Newsgroups has 29,671 words).
PLANNED_VOCABULARY = 50_000


def _vocabulary(documents_path) -> int:
    if documents_path is None:
        return PLANNED_VOCABULARY
    try:
        stat = os.stat(documents_path)
    except OSError:
        return PLANNED_VOCABULARY
    return _vocabulary_size(str(documents_path), stat.st_mtime_ns)


def embedding_matrix_mem_mb(
    documents_path, method: str, threads: int = 1, attempt: int = 1, planned: int | None = None
) -> int:
    """Memory (MB) of an ``embedding_matrix`` job: the float64 n x n matrix (filled a
    band of rows at a time), 1.2x for its bands, and 1500 for the documents and vectors;
    RWMD's threads each hold a band's float32 nearest-word costs (its distinct words x n,
    :func:`_band_vocabulary`) and every word's to the band's (vocabulary x band, and its
    float64 copy), the band's float64 rows (both sides, their maximum, the bounds, the
    product's transposed result), two float64 working matrices of word costs and 60
    bytes per word occurrence (the weights, their postings and per-entry costs). Measured
    peaks on 20 Newsgroups at 300-d: WCD 3.6 GB, cosine 3.6 GB, RWMD 6.3 GB in 2 threads
    (53,259 words; 8.9 GB declared). Doubled per retry; before the documents exist, from
    the ``planned`` count (PLANNED_BAND_VOCABULARY, PLANNED_VOCABULARY), 4000 if
    unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return 4000 * attempt
    mb = 1500 + 1.2 * 8 * n * n / 1e6
    if method == "rwmd":
        try:
            stat = os.stat(documents_path)
            words = _band_vocabulary(str(documents_path), stat.st_mtime_ns, EMBEDDING_QUERY_BAND)
            occurrences = _document_sizes(str(documents_path), stat.st_mtime_ns).sum()
        except OSError:
            words, occurrences = PLANNED_BAND_VOCABULARY, 100.0 * n
        vocabulary = _vocabulary(documents_path)
        band = (
            4 * words * n  # the band's words to every document's nearest word
            + 16 * vocabulary * EMBEDDING_QUERY_BAND  # every word to the band's (and a copy)
            + 5 * 8 * EMBEDDING_QUERY_BAND * n  # the band's rows: sides, maximum, bounds
            + 60 * occurrences
        )
        mb += threads * (band + 2 * 8 * BOUNDS_MAX_ENTRIES) / 1e6
    return int(np.ceil(mb)) * attempt


def embedding_matrix_runtime(
    documents_path, method: str, attempt: int = 1, planned: int | None = None
) -> int:
    """Minutes of an ``embedding_matrix`` job: WCD and the mean-vector cosine take a
    minute at most (20 Newsgroups: 53 s and 36 s); RWMD 3x the CPU time its measured rate
    (:data:`RWMD_SECONDS_PER_DOCUMENT_WORD`) gives, not divided by its threads. Doubled
    per retry; before the documents exist (a dry run), from the ``planned`` count and
    :data:`PLANNED_VOCABULARY`, 60 if unknown."""
    seconds = embedding_matrix_seconds(documents_path, method, planned)
    if seconds is None:
        return 60 * attempt
    return int(np.ceil(10 + 3 * seconds / 60)) * 2 ** (attempt - 1)


def embedding_matrix_seconds(documents_path, method: str, planned: int | None = None):
    """Expected CPU seconds of an ``embedding_matrix`` job (see
    :func:`embedding_matrix_runtime`); None if the documents are unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return None
    seconds = 30.0 + 3e-7 * n * n  # the n x n matrix by bands (WCD, 20 Newsgroups: 53 s)
    if method == "rwmd":
        seconds += RWMD_SECONDS_PER_DOCUMENT_WORD * n * _vocabulary(documents_path)
    return seconds


#: knn mode's neighbour lists of a dense method (rules embedding_neighbours,
#: vector_neighbours): entries (query rows x documents) of one block of rows, as
#: ``wmdeval.distances.neighbour_lists.BLOCK_ENTRIES`` (tests/test_neighbour_lists.py
#: checks they agree).
LISTED_BLOCK_ENTRIES = 1 << 22

#: Expected CPU seconds of a listed method's job: LISTED_JOB_SECONDS (start-up, reading
#: and preparing the documents and vectors) plus, per query row entry (each query's row
#: to every document and its ranking in its candidate lists), LISTED_SECONDS_PER_ENTRY
#: for WCD and the cosine and VECTORS_SECONDS_PER_ENTRY for document vectors; measured on
#: one of 16 query shards of 85,635 passages of 20 Newsgroups at 50-d
#: (benchmarks/results/listed_neighbours.json: WCD 1.13e-7, cosine 1.11e-7, vectors
#: 2.12e-7 CPU-s per entry, start-up included; 1.33e-7, 1.22e-7 and 2.34e-7 in an
#: earlier run of the same command on the machine more loaded, which these round up;
#: about 0.8 s of start-up, fitted with a 10,705-passage subset). RWMD (listed only when
#: WMD is not run): RWMD_SECONDS_PER_DOCUMENT_WORD more.
LISTED_JOB_SECONDS = 2.0
LISTED_SECONDS_PER_ENTRY = 1.3e-7
VECTORS_SECONDS_PER_ENTRY = 2.4e-7


def listed_seconds(
    documents_path, method: str, n_shards: int, planned: int | None = None
) -> float | None:
    """Expected CPU seconds of one query shard of ``n_shards`` of a listed method's
    neighbour lists (``method``: wcd, rwmd, cosine-mean or "vectors"; every document a
    query, as with five folds: a one-fold corpus has fewer, about 57 % of 20 Newsgroups'
    passages); None if the documents are unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return None
    per_entry = VECTORS_SECONDS_PER_ENTRY if method == "vectors" else LISTED_SECONDS_PER_ENTRY
    seconds = per_entry * n * n
    if method == "rwmd":
        seconds += RWMD_SECONDS_PER_DOCUMENT_WORD * n * _vocabulary(documents_path)
    return LISTED_JOB_SECONDS + seconds / max(n_shards, 1)


def listed_resources(
    documents_path, method: str, n_shards: int, attempt: int = 1, planned: int | None = None
) -> dict[str, int]:
    """mem_mb and runtime (minutes) of one query shard of a listed method's neighbour
    lists (``method``: wcd, rwmd, cosine-mean or "vectors"): no n x n matrix, a block of
    LISTED_BLOCK_ENTRIES rows at a time and its ranking (ten float64 copies of it), 800
    MB for the package, documents and vectors, 3 kB per document (its lists' pairs and
    certificates, the query roles); RWMD's bounds hold the block's words' float32 costs
    to every document (at most 100 distinct words a row) and every word's to the
    block's. Runtime: 10 minutes and 3 times :func:`listed_seconds`. Both doubled per
    retry; before the documents exist, from the ``planned`` count; 2000 MB and 60
    minutes if unknown."""
    n = document_rows(documents_path, planned)
    if n is None:
        return {"mem_mb": 2000 * attempt, "runtime": 60 * attempt}
    rows = max(1, LISTED_BLOCK_ENTRIES // n)
    mb = 800 + 10 * 8 * rows * n / 1e6 + 3e-3 * n
    if method == "rwmd":
        vocabulary = _vocabulary(documents_path)
        mb += (4 * min(vocabulary, 100 * rows) * n + 16 * vocabulary * rows) / 1e6
    seconds = listed_seconds(documents_path, method, n_shards, planned)
    return {
        "mem_mb": int(np.ceil(mb)) * attempt,
        "runtime": int(np.ceil(10 + 3 * seconds / 60)) * 2 ** (attempt - 1),
    }


def kusner_ingest_mem_mb(mat_path, attempt: int = 1) -> int:
    """Memory (MB) of ingesting a Kusner .mat file: loadmat holds its data as float64
    arrays (the inflated size, :func:`~wmdeval.ingest.kusner.mat_loaded_mb`), plus Python
    objects per document and word occurrence, bounded by the header's document count.

    Fitted to two measurements: 3.0 GB peak for 20news at 300-d (3.2 GB uncompressed,
    18,821 documents; benchmarks/paper_scale.py) and 2.7 GB for a user's 18,846 documents
    at 100-d (0.76 GB). Doubled per retry; 2000 before the file exists (a dry run of a
    download)."""
    try:
        data_mb = mat_loaded_mb(mat_path)
        documents = mat_documents(mat_path)
    except (OSError, WmdevalError):  # absent, or not a .mat file: ingest says which
        return 2000 * attempt
    return max(2000, int(np.ceil(1000 + 1.2 * data_mb + 0.12 * documents))) * attempt
