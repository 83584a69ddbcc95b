"""Each job's expected time, for the plan's wall time (:mod:`wmdeval.planning.wall`).

``workflow/rules/common.smk`` asks :func:`job_seconds` for every job of the DAG once
Snakemake has built it (a dry run included) and prints the wall time at ``--cores`` and
at :data:`~wmdeval.planning.wall.CORE_COUNTS` cores; ``cost_forecast.tsv`` schedules the
searches of its forecasts (:func:`search_jobs`). Expected times, not the declared
``runtime`` (which is generous on purpose): CPU seconds at one thread, divided by the
speed-up of a job's threads where they share its work.

* ``wmd_search``: its shard's forecast CPU (``wmd_forecast``'s file) once that exists;
  before (a dry run), :data:`PLANNED_SEARCH_SECONDS_PER_DOCUMENT` per planned document
  over the shards, plus each shard's fixed cost (:func:`shard_fixed_seconds`);
* ``wmd_forecast``: the forecast's own measured CPU once it exists; before, its sample
  (4 x ``wmd.forecast_queries`` queries at :data:`PLANNED_QUERY_SECONDS`) plus a shard's
  fixed cost;
* ``wmd_block``: the block plan's work model (:mod:`wmdeval.distances.wmd.pairs`) of the
  documents once they exist; before that, the planned documents' pairs by the same model
  at the dataset's planned distinct words per document (a paper corpus: its Table 1,
  :data:`~wmdeval.planning.modes.KUSNER_WORDS`), else at :data:`PLANNED_PAIR_SECONDS`;
* ``embedding_matrix``, ``sample_embedding_matrix``: :data:`DENSE_JOB_SECONDS` plus
  :data:`DENSE_SECONDS_PER_ENTRY` per entry of the n x n matrix (its threads do not divide
  it);
* ``embedding_neighbours``, ``vector_neighbours`` (a query shard of a dense method's
  neighbour lists, knn mode): :func:`~wmdeval.planning.resources.listed_seconds`;
* ``train_embeddings`` (``format: train-word2vec``): :func:`training_seconds`, from the
  size of the texts it trains on (a file's bytes; a Parquet table's uncompressed bytes);
* ``evaluate``, ``evaluate_part``: :data:`EVALUATE_JOB_SECONDS` and
  :data:`EVALUATE_SECONDS_PER_DOCUMENT` per document, plus each of its methods
  (:func:`evaluate_method_seconds`): one read from an n x n source 1 /
  :data:`EVALUATE_FITTED_METHODS` of :data:`EVALUATE_SECONDS_PER_ENTRY` and
  :data:`EVALUATE_SECONDS_PER_FOLD_ENTRY` per fold per entry of the n x n matrix, one read
  from a neighbour table :data:`EVALUATE_SECONDS_PER_LISTED_DOCUMENT` per document
  (``evaluate_allwords``: the whole job by the n x n terms alone);
* every other job (downloads, ingest, cleaning, vectors, gathers, tables, figures,
  analyses): :data:`OTHER_JOB_SECONDS`, not forecast individually.

These are expected times, fitted to measured runs (each constant says which; the tests
derive the fits from the recorded files). The declared ``runtime`` of a job keeps its own,
generous models (:mod:`wmdeval.planning.resources`): a declaration must not be shorter
than the job, an expectation should be neither shorter nor longer.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.errors import WmdevalError
from .wall import Job, speedup

#: Seconds of a job not forecast individually: the package's start-up (importing the
#: solver's modules: 2.3 s CPU, 3.9 s wall at a load of 4 on the 2-core VM) plus reading
#: and writing a few small files. 20 Newsgroups' such jobs took at most 0.5 minutes at
#: full scale (benchmarks/results/paper_scale.json: ingest_kusner 0.5 min, the others
#: 0.0-0.3 min).
OTHER_JOB_SECONDS = 10.0

#: Before a forecast exists: CPU seconds of one method's search per document of the
#: variant, at one thread, besides its shards' fixed costs (:func:`shard_fixed_seconds`).
#: Fitted to the paper plan's recorded forecast (benchmarks/results/paper_cost.json,
#: made with one shard per search): 4.16 CPU-hours of knn transport (its seven knn
#: datasets' rows), less what that figure also counts and the plan counts on its own:
#: the samples' matrices (0.59 h, the wmd_sample_block jobs by their model), the forecast
#: jobs (56, by their model) and the one shard's fixed cost of each of the 56 searches:
#: 0.0244 s per document over 58,218 documents in knn mode, 4 transport methods and 2
#: variants; 0.025 to round up (checked by tests/test_wall.py). The WMD search of the
#: original alone costs more (20 Newsgroups: 0.15 s per query x 10,927 queries over
#: 18,821 documents: 0.087 s), the clean variant's, which reuses the original's pairs,
#: PCA WMD's and short documents' (twitter) less.
PLANNED_SEARCH_SECONDS_PER_DOCUMENT = 0.025
#: A search shard's fixed CPU besides its queries: :data:`SHARD_START_SECONDS` for the
#: process (the package's imports), and :data:`SHARD_SECONDS_PER_DOCUMENT` per document
#: for reading and preparing the inputs and the bounds' set-up, which every shard pays.
#: Measured on the 18,846 posts of 20 Newsgroups (benchmarks/results/thread_scaling.json,
#: its ``processes`` row): one shard's queries as two one-worker processes took 50.1 s of
#: search CPU against 45.8 s as one (4.3 s more), and 3.9 s for the two processes'
#: start-up (checked by tests/test_wall.py).
SHARD_START_SECONDS = 2.0
SHARD_SECONDS_PER_DOCUMENT = 2.3e-4
#: CPU seconds of one sampled query of a forecast before it exists (20 Newsgroups' WMD:
#: 0.15 s, issue 40).
PLANNED_QUERY_SECONDS = 0.15
#: Before the documents exist, and their words per document unknown: CPU seconds of one
#: exact WMD pair in a block job (the work model's at about 73 distinct words each).
PLANNED_PAIR_SECONDS = 0.3e-3
#: A dense matrix job (WCD, the mean-vector cosine, RWMD; a knn sample's RWMD):
#: DENSE_JOB_SECONDS + DENSE_SECONDS_PER_ENTRY x n^2 CPU seconds. Least squares over the
#: eight paper datasets' measured dense CPU (benchmarks/results/paper_cost.json: per
#: variant WCD and the cosine, and RWMD in full mode or its 1,000-document sample's in
#: knn mode), each within 10 s of its dataset's figure (20 Newsgroups: 168 s against
#: 166 s measured; checked by tests/test_wall.py).
DENSE_JOB_SECONDS = 2.0
DENSE_SECONDS_PER_ENTRY = 1.1e-7
#: The evaluate job: EVALUATE_JOB_SECONDS + (EVALUATE_SECONDS_PER_ENTRY + folds x
#: EVALUATE_SECONDS_PER_FOLD_ENTRY) x n^2 CPU seconds: the baselines' matrices once, the
#: kNN tuning per fold. Least squares over the same eight datasets' measured evaluate CPU
#: (paper_cost.json, both variants), each within 10 s (20 Newsgroups: 181 s against 184 s
#: measured).
EVALUATE_JOB_SECONDS = 2.0
EVALUATE_SECONDS_PER_ENTRY = 1.3e-7
EVALUATE_SECONDS_PER_FOLD_ENTRY = 1.2e-7
#: An evaluate job's methods, each priced apart (:func:`evaluate_method_seconds`): the
#: fit above is of jobs that evaluated the paper plan's 18 methods from n x n sources (full
#: mode, paper_cost.json), so a method read from an n x n source (a baseline, whose
#: rankings are computed from the documents, or a matrix) costs 1/18 of the n^2 terms:
#: 6.4 CPU-s for a baseline of 21,409 passages and one fold, where
#: benchmarks/results/evaluate_parts.json measured 5.7 to 8.4 s (a loaded machine: the
#: whole evaluation took 100.8 CPU-s there, the workflow's evaluate job 74.5 in a run).
EVALUATE_FITTED_METHODS = 18
#: A method read from its neighbour table (knn mode: WMD's search, the listed methods):
#: CPU seconds per document of the variant (building the table's index from its pairs and
#: certificates, ranking the listed pairs): evaluate_parts.json's WMD and WMD-TF-IDF, 3.9 s
#: each at 21,409 documents, 1.8e-4 s a document.
EVALUATE_SECONDS_PER_LISTED_DOCUMENT = 1.8e-4
#: Each evaluate job's fixed CPU per document besides :data:`EVALUATE_JOB_SECONDS` (the
#: process): the documents' count matrix, the folds, the rows written; every part of a
#: split evaluation pays it. evaluate_parts.json's part of no method: 0.71 s at 21,409
#: documents, and 0.07 s to read the documents and splits (measured once, not recorded),
#: 3.6e-5 s a document; 4e-5 to round up.
EVALUATE_SECONDS_PER_DOCUMENT = 4e-5
#: ``evaluate_parts: auto``: the planned seconds of one evaluate part at most (one thread),
#: well below the paper plan's critical path, as :data:`AUTO_SHARD_SECONDS` is for the
#: searches; a part holds at least one method, so one method above it is a part alone.
AUTO_EVALUATE_SECONDS = 90.0
#: ``evaluate_parts: auto`` where one method alone is above :data:`AUTO_EVALUATE_SECONDS`:
#: a part may hold methods up to this times the costliest one.
EVALUATE_PART_SLACK = 1.1
#: The ``train_embeddings`` job (gensim's Word2Vec on one worker, so that it is seeded and
#: deterministic: its threads cannot share the work): TRAIN_JOB_SECONDS +
#: TRAIN_SECONDS_PER_BYTE_EPOCH x the bytes of text it trains on x epochs, scaled by
#: vector_size x window against the 50 x 5 it was measured at (for other shapes an
#: estimate: Word2Vec's work per token grows with both). Measured at 50 x 5 and 20
#: epochs: half the 85,635 passages (16.7 MB of table) 255 CPU-s as the only job on the
#: 2-core VM, 0.77 us per byte and epoch; at a load of 4-20 from other work the quarter
#: (8.3 MB) took 0.90, all the passages 1.00, 20 Newsgroups' 18,846 posts (22.8 MB of text
#: in Parquet) 1.07. The whole-run benchmark's job is checked against it
#: (benchmarks/results/scale_run.json, tests/test_wall.py).
TRAIN_JOB_SECONDS = 2.0
TRAIN_SECONDS_PER_BYTE_EPOCH = 0.8e-6
#: Folds of a dataset whose count is not known while planning (a .mat file that is not
#: one of the paper's, not yet ingested): five, the most any paper corpus has.
UNKNOWN_FOLDS = 5

#: Rules whose jobs are a neighbour search shard.
SEARCH_RULES = ("wmd_search", "wmd_search_with_rwmd")
#: Rules whose jobs solve a block of a WMD matrix.
BLOCK_RULES = ("wmd_block", "wmd_sample_block")
#: Rules whose jobs compute a dense matrix from word vectors.
EMBEDDING_RULES = ("embedding_matrix", "sample_embedding_matrix")
#: Rules whose jobs list a dense method's neighbours, a query shard each (knn mode).
LISTED_RULES = ("embedding_neighbours", "vector_neighbours")
#: Rules whose jobs train an embedding on the datasets' texts.
TRAIN_RULES = ("train_embeddings",)
#: Rules whose jobs evaluate the classifiers.
EVALUATE_RULES = ("evaluate", "evaluate_part", "evaluate_allwords")
#: Rules that only name the outputs (no command).
TARGET_RULES = ("all",)


#: ``wmd.search_shards: auto``: the planned wall seconds of one search job at most, well
#: below the paper plan's critical path (5.7 minutes on 64 cores: 20 Newsgroups' chain of
#: forecasts, shards and evaluate; docs/scale.md), so that no search job is the plan's
#: critical path by itself.
AUTO_SHARD_SECONDS = 120.0


def search_shard_count(value, planned: Iterable[int | None], threads: int) -> tuple[int, str]:
    """(shards, why) for ``wmd.search_shards``: the number itself, or for ``auto`` the
    fewest shards that plan each search job of the largest of the ``planned`` documents
    of the datasets in knn mode at most :data:`AUTO_SHARD_SECONDS` of wall time on
    ``threads`` threads (:data:`PLANNED_SEARCH_SECONDS_PER_DOCUMENT` per document over
    the shards, :func:`shard_fixed_seconds` each, over
    :func:`~wmdeval.planning.wall.speedup`); 1 without a dataset in knn mode of known
    size. Only the config and the planned documents decide it: the same config and the
    same files give the same shards."""
    if value != "auto":
        return int(value), "set in config"
    largest = max((n for n in planned if n), default=0)
    if not largest:
        return 1, "auto: no dataset in knn mode of known size"
    budget = AUTO_SHARD_SECONDS * speedup(threads) - shard_fixed_seconds(largest)
    shards = max(1, math.ceil(PLANNED_SEARCH_SECONDS_PER_DOCUMENT * largest / budget))
    return shards, (
        f"auto: {largest:,} documents, at most {AUTO_SHARD_SECONDS / 60:.0f} min of wall"
        f" time per search job on {threads} thread(s)"
    )


def listed_shard_count(
    value, planned: int | None, methods: Iterable[str] = ("wcd",)
) -> tuple[int, str]:
    """(shards, why) for ``wmd.list_shards``: the query shards of the neighbour lists of
    each dense method listed in knn mode (WCD, the cosine, RWMD when WMD's search does
    not list it, document vectors) of a dataset of ``planned`` documents: the number
    itself, or for ``auto`` the fewest shards that plan each job of the costliest of
    ``methods`` (slugs, "vectors" for document vectors) at most
    :data:`AUTO_SHARD_SECONDS` (one thread,
    :func:`~wmdeval.planning.resources.listed_seconds`), 1 if the size is unknown. Only
    the config and the planned documents decide it, never ``--cores``."""
    from .resources import LISTED_JOB_SECONDS, listed_seconds

    if value != "auto":
        return int(value), "set in config"
    if not planned:
        return 1, "size unknown"
    if not methods:
        return 1, "no method listed"
    work = max(listed_seconds(None, m, 1, planned) for m in methods) - LISTED_JOB_SECONDS
    shards = max(1, math.ceil(work / (AUTO_SHARD_SECONDS - LISTED_JOB_SECONDS)))
    return shards, (f"auto: {planned:,} documents, at most {AUTO_SHARD_SECONDS / 60:.0f} min a job")


def evaluate_method_seconds(listed: bool, documents: int, folds: int) -> float:
    """CPU seconds of one method in an evaluate job of ``documents`` documents and
    ``folds`` folds: read from a neighbour table (``listed``) or from an n x n source."""
    if listed:
        return EVALUATE_SECONDS_PER_LISTED_DOCUMENT * documents
    per_entry = EVALUATE_SECONDS_PER_ENTRY + EVALUATE_SECONDS_PER_FOLD_ENTRY * folds
    return per_entry * documents * documents / EVALUATE_FITTED_METHODS


def evaluate_part_seconds(listed: Sequence[bool], documents: int, folds: int) -> float:
    """CPU seconds of an evaluate job (or one part) of the methods ``listed`` describes
    (one bool each: read from a neighbour table?): its fixed cost and each method's."""
    return (
        EVALUATE_JOB_SECONDS
        + EVALUATE_SECONDS_PER_DOCUMENT * documents
        + sum(evaluate_method_seconds(m, documents, folds) for m in listed)
    )


def _linear_partition(costs: Sequence[float], parts: int) -> list[int]:
    """Where to cut ``costs`` (in order) into ``parts`` runs of consecutive items so that
    the largest run's sum is least (the first such cut, deterministic): the runs' sizes."""
    n = len(costs)
    prefix = [0.0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    # best[p][i]: least largest sum of the first i items in p runs; cut[p][i]: its last start
    best = [[math.inf] * (n + 1) for _ in range(parts + 1)]
    cut = [[0] * (n + 1) for _ in range(parts + 1)]
    best[0][0] = 0.0
    for p in range(1, parts + 1):
        for i in range(p, n + 1):
            for j in range(p - 1, i):
                value = max(best[p - 1][j], prefix[i] - prefix[j])
                if value < best[p][i] - 1e-9:
                    best[p][i], cut[p][i] = value, j
    sizes, i = [], n
    for p in range(parts, 0, -1):
        sizes.append(i - cut[p][i])
        i = cut[p][i]
    return sizes[::-1]


def evaluate_parts(
    value, methods: Sequence[str], listed: Sequence[bool], planned: int | None, folds: int
) -> tuple[list[list[str]], str]:
    """(parts, why) for ``evaluate_parts``: ``methods`` (slugs in table order, ``listed``:
    read from a neighbour table?) cut into runs of consecutive methods, one evaluate job
    each. The number itself (at most one part per method), the runs cut so that the
    costliest (:func:`evaluate_method_seconds`) is least; or for ``auto`` one part where
    the whole evaluation is planned at most :data:`AUTO_EVALUATE_SECONDS`
    (:func:`evaluate_part_seconds`), else the methods read from neighbour tables apart
    from the others (they wait for the searches, the baselines need nothing but the
    documents), each run of one kind in the fewest parts that plan each at most that, or
    where one method alone is above it at most :data:`EVALUATE_PART_SLACK` times the
    costliest; 1 if the size is unknown. Only the config and the planned documents decide
    it, never ``--cores``."""
    methods = list(methods)
    if not methods:
        return [], "no method"
    if value != "auto":
        count = min(int(value), len(methods))
        costs = [evaluate_method_seconds(m, planned or 1, folds) for m in listed]
        return _runs(methods, _linear_partition(costs, count)), "set in config"
    if not planned:
        return [methods], "auto: size unknown"
    why = (
        f"auto: {planned:,} documents, {len(methods)} methods, at most"
        f" {AUTO_EVALUATE_SECONDS / 60:.1f} min a part (or one method alone)"
    )
    if evaluate_part_seconds(listed, planned, folds) <= AUTO_EVALUATE_SECONDS:
        return [methods], why
    costs = [evaluate_method_seconds(m, planned, folds) for m in listed]
    budget = max(
        AUTO_EVALUATE_SECONDS - evaluate_part_seconds([], planned, folds),
        EVALUATE_PART_SLACK * max(costs),
    )
    parts: list[list[str]] = []
    start = 0
    while start < len(methods):
        end = start + 1
        while end < len(methods) and listed[end] == listed[start]:
            end += 1
        run = costs[start:end]
        count = next(k for k in range(1, len(run) + 1) if _largest_run(run, k) <= budget)
        parts += _runs(methods[start:end], _linear_partition(run, count))
        start = end
    return parts, why


def _runs(items: Sequence[str], sizes: Sequence[int]) -> list[list[str]]:
    runs, start = [], 0
    for size in sizes:
        runs.append(list(items[start : start + size]))
        start += size
    return runs


def _largest_run(costs: Sequence[float], parts: int) -> float:
    sizes, start, largest = _linear_partition(costs, parts), 0, 0.0
    for size in sizes:
        largest = max(largest, sum(costs[start : start + size]))
        start += size
    return largest


def shard_fixed_seconds(documents: int | None) -> float:
    """CPU seconds a search shard (or a forecast job) of a variant of ``documents``
    documents pays besides its queries (0 documents if unknown)."""
    return SHARD_START_SECONDS + SHARD_SECONDS_PER_DOCUMENT * (documents or 0)


def _read_forecast(path) -> dict | None:
    """A forecast file's record, None if it does not exist (yet)."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as stream:
            return json.load(stream)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise WmdevalError(f"{path}: not a readable forecast ({exc})") from None


def search_seconds(forecast_path, shard: str, planned: int | None) -> tuple[float, bool]:
    """(CPU seconds at one thread, from the forecast?) of search shard ``shard``
    ("2-of-4"): the forecast's once it exists, else the planning model for ``planned``
    documents (0 documents if unknown)."""
    record = _read_forecast(forecast_path)
    n_shards = int(shard.split("-of-")[1])
    if record is not None:
        for entry in record.get("forecast", {}).get("shards", []):
            if entry.get("shard") == shard:
                return float(entry["cpu_seconds"]), True
        raise WmdevalError(f"{forecast_path}: the forecast has no shard {shard}")
    documents = planned or 0
    per_shard = PLANNED_SEARCH_SECONDS_PER_DOCUMENT * documents / n_shards
    return per_shard + shard_fixed_seconds(documents), False


def forecast_seconds(
    forecast_path, queries_per_role: int, planned: int | None = None
) -> tuple[float, bool]:
    """(CPU seconds, measured?) of a ``wmd_forecast`` job: its measured sample, set-up
    and sharing checks once the file exists, else 3 roles' sample and as many checks at
    :data:`PLANNED_QUERY_SECONDS` plus a shard's fixed cost for ``planned`` documents."""
    record = _read_forecast(forecast_path)
    if record is not None:
        measured = record.get("measured", {})
        return _measured_seconds(measured), True
    sample = 4 * queries_per_role * PLANNED_QUERY_SECONDS
    return sample + shard_fixed_seconds(planned), False


def _measured_seconds(measured: Mapping) -> float:
    """A forecast job's CPU: its timed sample and its reading of the inputs."""
    return float(measured.get("cpu_seconds", 0.0) + measured.get("setup_cpu_seconds", 0.0))


def planned_pair_seconds(words: float | None) -> float:
    """CPU seconds of one exact pair of documents of ``words`` distinct words each, by
    the block plan's work model (:mod:`wmdeval.distances.wmd.pairs`: 20 Newsgroups' 69.3
    words 0.27 ms, bbcsport's 116.5 0.82 ms, twitter's 9.9 0.012 ms; bbcsport measured
    0.93 ms, benchmarks/results/paper_cost.json); :data:`PLANNED_PAIR_SECONDS` if unknown."""
    from ..distances.wmd.pairs import PAIR_OVERHEAD, SECONDS_PER_UNIT, document_work

    if not words:
        return PLANNED_PAIR_SECONDS
    s = float(document_work([words])[0])
    return (s * s + PAIR_OVERHEAD) * SECONDS_PER_UNIT


def block_seconds(
    documents_path, n_blocks: int, planned: int | None, words: float | None = None
) -> float:
    """CPU seconds of one block job of ``n_blocks``: the work model of the documents once
    they exist, else the ``planned`` documents' pairs at :func:`planned_pair_seconds` of
    their planned distinct ``words`` per document."""
    from .resources import block_work_seconds

    seconds = block_work_seconds(documents_path, n_blocks)
    if seconds is not None:
        return seconds
    n = planned or 0
    return planned_pair_seconds(words) * n * (n - 1) / 2 / n_blocks


def job_seconds(
    rule: str,
    wildcards: Mapping[str, str],
    inputs: Mapping[str, object],
    planned: int | None,
    settings: Mapping,
    words: float | None = None,
    folds: int | None = None,
    methods: Sequence[bool] | None = None,
    embedding: Mapping | None = None,
) -> tuple[float, bool, str]:
    """(expected CPU seconds at one thread, do its threads share the work?, where the
    figure comes from: "forecast", "model" or "other") of one job of ``rule``;
    ``inputs``: its named input files; ``planned``: the documents planned for its
    dataset (None if unknown); ``settings``: the ``wmd:`` config; ``words``: the
    dataset's planned distinct words per document, ``folds`` its planned folds (None if
    unknown); ``methods``: an evaluate job's methods, one bool each (read from a
    neighbour table?), priced apart (:func:`evaluate_part_seconds`; None: the job as a
    whole); ``embedding``: the config of the embedding a training job trains."""
    if rule in TARGET_RULES:
        return 0.0, False, "other"
    if rule in TRAIN_RULES and embedding is not None:
        seconds = training_seconds(inputs.get("texts") or (), embedding)
        if seconds is not None:
            return seconds, False, "model"
    if rule in SEARCH_RULES:
        seconds, forecast = search_seconds(inputs.get("forecast"), wildcards["shard"], planned)
        return seconds, True, "forecast" if forecast else "model"
    if rule == "wmd_forecast":
        d, v, m = wildcards["dataset"], wildcards["variant"], wildcards["method"]
        path = f"results/{d}/{v}/forecast/{m}.json"
        seconds, measured = forecast_seconds(path, settings["forecast_queries"], planned)
        return seconds, True, "forecast" if measured else "model"
    if rule in BLOCK_RULES:
        n_blocks = int(wildcards["block"].split("-of-")[1])
        seconds = block_seconds(inputs.get("documents"), n_blocks, planned, words)
        return seconds, True, "model"
    if rule in LISTED_RULES:
        from .resources import listed_seconds

        n_shards = int(wildcards["shard"].split("-of-")[1])
        method = wildcards.get("listed_embedding", "vectors")
        seconds = listed_seconds(inputs.get("documents"), method, n_shards, planned)
        if seconds is None:
            return OTHER_JOB_SECONDS, False, "other"
        return seconds, False, "model"
    if rule in EMBEDDING_RULES + EVALUATE_RULES:
        from .resources import document_rows

        n = document_rows(inputs.get("documents"), planned)
        if n is None:
            return OTHER_JOB_SECONDS, False, "other"
        if rule in EMBEDDING_RULES:
            return DENSE_JOB_SECONDS + DENSE_SECONDS_PER_ENTRY * n * n, False, "model"
        fold_count = _folds(inputs.get("splits"), folds)
        if methods is not None:
            return evaluate_part_seconds(methods, n, fold_count), False, "model"
        per_entry = EVALUATE_SECONDS_PER_ENTRY + EVALUATE_SECONDS_PER_FOLD_ENTRY * fold_count
        return EVALUATE_JOB_SECONDS + per_entry * n * n, False, "model"
    return OTHER_JOB_SECONDS, False, "other"


def text_bytes(paths: Iterable[str]) -> int | None:
    """Bytes of text in the files a training job reads: a Parquet table's uncompressed
    bytes as its footer records them (encoded: a text repeated many times may count
    once), any other file's size; None while one is missing (a download not done yet)."""
    total = 0
    for path in paths:
        try:
            if str(path).endswith(".parquet"):
                meta = pq.ParquetFile(path).metadata
                total += sum(meta.row_group(g).total_byte_size for g in range(meta.num_row_groups))
            else:
                total += os.path.getsize(path)
        except (OSError, pa.ArrowInvalid):
            return None
    return total


def training_seconds(paths: Iterable[str], spec: Mapping) -> float | None:
    """CPU seconds of training the embedding ``spec`` (its config: epochs, vector_size,
    window) on the texts in ``paths`` (:data:`TRAIN_SECONDS_PER_BYTE_EPOCH`); None if
    the texts are not all there yet."""
    size = text_bytes(paths)
    if size is None or spec.get("format") != "train-word2vec":
        return None
    shape = spec.get("vector_size", 100) * spec.get("window", 5) / (50 * 5)
    epochs = spec.get("epochs", 5)
    return TRAIN_JOB_SECONDS + TRAIN_SECONDS_PER_BYTE_EPOCH * size * epochs * shape


def _folds(splits_path, planned: int | None) -> int:
    """Folds of a splits file once it exists, else the ``planned`` count, else
    :data:`UNKNOWN_FOLDS`."""
    if splits_path:
        try:
            column = pq.read_table(splits_path, columns=["fold"]).column("fold")
        except (OSError, pa.ArrowInvalid, KeyError):
            column = None  # absent (a dry run), or not a splits file: evaluate says which
        if column is not None:
            return max(len(pc.unique(column)), 1)
    return planned or UNKNOWN_FOLDS


def job_name(rule: str, wildcards: Mapping[str, str]) -> str:
    """``rule`` and its wildcards' values: "wmd_search 20news/original/wmd/1-of-8"."""
    values = "/".join(str(v) for v in wildcards.values())
    return f"{rule} {values}" if values else rule


def search_jobs(records: Sequence[Mapping], reused: Sequence[str] = ()) -> list[Job]:
    """The searches of ``records`` (forecast files' records) as jobs: each method's
    forecast (its measured CPU), then its shards (their forecast CPU), then the job that
    combines them (:data:`OTHER_JOB_SECONDS`); a search in ``reused``
    ("dataset/variant/method": the clean variant's, which takes the original's pairs)
    waits for the original's combined tables first, as ``search_reuse`` makes it."""
    jobs: list[Job] = []
    combined: dict[str, str] = {}
    for r in records:
        key = f"{r['dataset']}/{r['variant']}/{r['method']}"
        combined[key] = f"wmd_neighbours {key}"
    for r in records:
        key = f"{r['dataset']}/{r['variant']}/{r['method']}"
        threads = int(r.get("threads", 1))
        waits: tuple[str, ...] = ()
        if key in reused:
            original = f"{r['dataset']}/original/{r['method']}"
            waits = (combined[original],) if original in combined else ()
        measured = r["measured"]
        forecast_job = f"wmd_forecast {key}"
        jobs.append(Job(forecast_job, _measured_seconds(measured), threads, waits))
        shards = [
            Job(f"wmd_search {key}/{s['shard']}", float(s["cpu_seconds"]), threads, (forecast_job,))
            for s in r["forecast"]["shards"]
        ]
        jobs += shards
        jobs.append(
            Job(combined[key], OTHER_JOB_SECONDS, 1, tuple(s.name for s in shards), scales=False)
        )
    return jobs


__all__ = [
    "OTHER_JOB_SECONDS",
    "PLANNED_SEARCH_SECONDS_PER_DOCUMENT",
    "SHARD_START_SECONDS",
    "SHARD_SECONDS_PER_DOCUMENT",
    "DENSE_JOB_SECONDS",
    "DENSE_SECONDS_PER_ENTRY",
    "TRAIN_JOB_SECONDS",
    "TRAIN_SECONDS_PER_BYTE_EPOCH",
    "text_bytes",
    "training_seconds",
    "EVALUATE_JOB_SECONDS",
    "EVALUATE_SECONDS_PER_ENTRY",
    "EVALUATE_SECONDS_PER_FOLD_ENTRY",
    "EVALUATE_FITTED_METHODS",
    "EVALUATE_SECONDS_PER_LISTED_DOCUMENT",
    "EVALUATE_SECONDS_PER_DOCUMENT",
    "AUTO_EVALUATE_SECONDS",
    "EVALUATE_PART_SLACK",
    "evaluate_method_seconds",
    "evaluate_part_seconds",
    "evaluate_parts",
    "shard_fixed_seconds",
    "AUTO_SHARD_SECONDS",
    "search_shard_count",
    "listed_shard_count",
    "search_seconds",
    "forecast_seconds",
    "planned_pair_seconds",
    "block_seconds",
    "job_seconds",
    "job_name",
    "search_jobs",
]
