# Shared helpers: config validation, the datasets of this run, and output paths.
# Planning only: it imports light modules (config, paths, resources), never POT.
import dataclasses
import json
import logging
import math
import os
import re
import sys

from snakemake_interface_logger_plugins.common import LogEvent
from wmdeval.core import config as wmdeval_config
from wmdeval.ingest.download import cache_name
from wmdeval.core.errors import WmdevalError
from wmdeval.reporting.tables import TABLES as PAPER_TABLE_SPECS
from wmdeval.reporting.tables import k_warnings as table_k_warnings
from wmdeval.core.config import dataset_path
from wmdeval.core.methods import (
    BASELINES,
    BEYOND_METHODS,
    WMD,
    configured_methods,
    method_by_slug,
    name_order as method_name_order,
    pca_method_name,
)
from wmdeval.planning.environment import job_environment
from wmdeval.planning.inputs import (
    check_callable_module,
    check_pca_dims,
    check_texts,
    embedding_dimension,
)
from wmdeval.planning.plan import (
    OTHER_JOB_SECONDS as PLAN_OTHER_SECONDS,
    job_name,
    job_seconds as planned_job_seconds,
    listed_shard_count,
    search_shard_count,
    evaluate_parts,
    UNKNOWN_FOLDS,
)
from wmdeval.planning.wall import (
    CORE_COUNTS as WALL_CORE_COUNTS,
    EXPECTED_SERIAL_SHARE,
    Job as PlannedJob,
    describe_path,
    by_remaining as plan_by_remaining,
    wall_summary as plan_wall_summary,
)
from wmdeval.planning.modes import (
    check_blocks,
    dataset_mode,
    planned_documents,
    planned_folds,
    planned_words,
)
from wmdeval.planning.resources import (
    block_resources as wmd_block_resources,
    search_resources as wmd_search_resources,
    forecast_resources as wmd_forecast_resources,
    gather_mem_mb,
    matrix_job_mem_mb as wmd_matrix_job_mem_mb,
    embedding_matrix_mem_mb,
    embedding_matrix_runtime,
    listed_resources as wmd_listed_resources,
    evaluate_mem_mb,
    kusner_ingest_mem_mb,
    subset_mem_mb,
)

# WMD work used to be split by a scatter whose count named the stored files, so changing
# the parallelism re-solved finished matrices. Say what replaced it instead of "unknown key".
if "shards" in (config.get("wmd") or {}):
    sys.exit(
        "wmdeval: config: wmd.shards was replaced by wmd.blocks (stored work units per WMD"
        " matrix); how many run at once is --cores, or group-components on SLURM"
    )
if "wmd_shards" in getattr(workflow.resource_settings, "overwrite_scatter", {}):
    sys.exit(
        "wmdeval: --set-scatter wmd_shards is gone: WMD matrices are stored as wmd.blocks"
        " units; choose how many run at once with --cores, or with --group-components"
        " wmd=N on SLURM"
    )

try:
    wmdeval_config.validate(config, source="config")
    # A missing input file must stop the run here: later, Snakemake would take the
    # outputs an earlier run left in this directory as given and report success.
    wmdeval_config.missing_local_files(config, source="config")
except WmdevalError as error:
    # One line naming the key, before any job is planned.
    sys.exit(f"wmdeval: {error}")

# Every job's products with the same OpenBLAS kernels (config blas_kernels), whatever the
# CPU of the node it lands on: set here, in each Snakemake process (a cluster job parses
# this file again on its node), so every rule's shell inherits it.
try:
    os.environ.update(job_environment(config["blas_kernels"]))
except WmdevalError as error:
    sys.exit(f"wmdeval: {error}")

# The --cores of this run, for cost_forecast.tsv's wall time: an environment variable its
# shell reads, not a param, so that another --cores reruns nothing (in a cluster job, the
# job's own cores).
if workflow.resource_settings.cores:
    os.environ.update(WMDEVAL_CORES=str(workflow.resource_settings.cores))

DATASETS = wmdeval_config.selected_datasets(config)
VARIANTS = config["variants"]


# How each dataset's WMD methods are computed: "full" (every pair) or "knn" (an exact
# top-k search pruned by lower bounds), with the reason; `auto` is decided here, once.
# Documents of each dataset as known while planning (a .mat header, a table's rows), also
# for the resource estimates of jobs whose documents file does not exist yet (a dry run).
# A local .mat file whose header is not Kusner's stops here, in one line, before any job.
try:
    WMD_MODES = {
        d: dataset_mode(config["datasets"][d], config["wmd"]) for d in DATASETS
    }
    PLANNED_DOCUMENTS = {
        d: planned_documents(config["datasets"][d])[0] for d in DATASETS
    }
    # distinct words per document as planned (a paper corpus: the paper's figure), for the
    # expected time of WMD blocks before their documents exist
    PLANNED_WORDS = {d: planned_words(config["datasets"][d]) for d in DATASETS}
    # and folds (the expected time of evaluate jobs before their splits exist)
    PLANNED_FOLDS = {d: planned_folds(config["datasets"][d]) for d in DATASETS}
except WmdevalError as error:
    sys.exit(f"wmdeval: {error}")


def planned_rows(dataset, documents):
    """Documents the file `documents` of `dataset` will hold, as planned: the dataset's
    count (an upper bound for a variant), at most wmd.sample_documents for a knn-mode
    sample; None if unknown."""
    n = PLANNED_DOCUMENTS.get(dataset)
    if n is not None and "/sample/" in str(documents):
        return min(n, config["wmd"]["sample_documents"])
    return n


def wmd_mode(dataset):
    """ "full" or "knn": the dataset's `wmd_mode`, else `wmd.mode` (auto decided by size)."""
    return WMD_MODES[dataset][0]


def names_regex(names):
    """A wildcard constraint matching exactly these names ("(?!)" matches nothing)."""
    return "|".join(map(re.escape, names)) or "(?!)"


# Wildcards are names from the config, never paths.
wildcard_constraints:
    dataset=names_regex(config["datasets"]),
    variant="original|clean",


def spec_json(spec):
    """A config entry as one JSON argument of the wmdeval CLI."""
    return json.dumps(spec, sort_keys=True)


def dataset_spec(wildcards):
    return config["datasets"][wildcards.dataset]


# What decides a job's outputs must be what Snakemake compares with its record of the
# last run, or a change would leave stale outputs ("Nothing to be done"): its input
# files, and its params. Snakemake records only the params that are values or functions
# of `wildcards` alone: one whose function takes `input`, `output`, `threads` or
# `resources` it calls derived and leaves out of the record (snakemake/rules.py,
# _is_deriving_function). So a config value never reaches a job through such a
# function: it is a param of wildcards alone (the dataset's ingest spec below), or it
# decides which files the job has (optional_file below: an input's change is seen).
# tests/test_careless_ingest.py holds every rule to this.


def optional_file(option, name):
    """A derived param: ``option`` and the job's input (or output) file ``name``, or ""
    when the config gave the job no such file."""

    def argument(wildcards, input, output):
        for files in (input, output):
            if name in files.keys():
                return f"{option} {files[name]}"
        return ""

    return argument


# The keys that change what ingest reads; others (e.g. `vocabulary`) must not make
# Snakemake rerun ingest and everything after it.
INGEST_KEYS = (
    "format",
    "source",
    "text_column",
    "label_column",
    "split_column",
    "stopwords",
    "folds",
    "test_size",
    "split_seed",
    "encoding",
)


def ingest_spec(spec):
    """The part of a raw-text dataset's entry that decides its ingest outputs (its
    INGEST_KEYS, and `path`: the local file, a download's too), for the ingest job (a
    param of wildcards alone, so recorded) and the corpora of trained embeddings."""
    found = {key: spec[key] for key in INGEST_KEYS if key in spec}
    if "path" in spec or "url" in spec:
        found["path"] = source_file(spec)
    return found


def text_files(spec):
    """The local files a raw-text dataset's ingest reads: its table and stop-word list."""
    stopwords = wmdeval_config.stopword_file(spec)
    return ([source_file(spec)] if "path" in spec or "url" in spec else []) + (
        [stopwords] if stopwords else []
    )


def source_file(spec):
    """Local path of a dataset's or embedding's file: `path`, or where `url` is downloaded
    (and `member` extracted) under resources/. Pure string work: planning never touches
    the network."""
    if "path" in spec:
        return spec["path"]
    download = cache_name(spec["url"])
    if spec.get("member"):
        return f"resources/data/{download}/{spec['member']}"
    return f"resources/downloads/{download}"


def embedding_file(name):
    """Path of a named embedding: its file, or the vectors the workflow trains for the demo."""
    spec = config["embeddings"][name]
    if spec["format"] == "train-word2vec":
        return f"resources/embeddings/{name}.vec"
    return source_file(spec)


def downloads():
    """{cache name: {url, sha256}} of every remote file the config names."""
    found = {}
    for spec in [*config["datasets"].values(), *config["embeddings"].values()]:
        if "url" in spec:
            found[cache_name(spec["url"])] = {
                "url": spec["url"],
                "sha256": spec["sha256"],
            }
    return found


def embedding_format(name):
    spec = config["embeddings"][name]
    return "word2vec-text" if spec["format"] == "train-word2vec" else spec["format"]


# The methods of this run (`methods:` in the config) other than PCA WMD, in table order.
RUN_METHOD_LIST = configured_methods(config["methods"])
# Exact optimal transport, solved in blocks (full mode) or searched (knn mode): WMD,
# WMD-TF-IDF, WRD if listed, and WMD on each PCA projection.
WMD_SLUGS = [m.slug for m in RUN_METHOD_LIST if m.kind == "transport"] + [
    f"wmd-pca{d}" for d in config["pca_dims"]
]
# One full matrix per variant in any mode: WCD, RWMD, cosine of mean vectors, and users'
# document vectors, precomputed matrices and callables.
DENSE_SLUGS = [m.slug for m in RUN_METHOD_LIST if m.kind in ("matrix", "callable")]
# knn mode: RWMD's neighbour lists come from WMD's search, which computes RWMD for
# every query as its cheap bound anyway (no dense RWMD matrix; wmd_search_with_rwmd).
RWMD_FROM_SEARCH = "rwmd" in DENSE_SLUGS and "wmd" in WMD_SLUGS


def listed_slugs(dataset):
    """knn mode: the methods evaluate reads as neighbour tables (the transport methods,
    RWMD from WMD's search when it lists it, and the dense methods listed a block of
    queries at a time, LISTED_DENSE_SLUGS); none in full mode."""
    if wmd_mode(dataset) != "knn":
        return []
    return WMD_SLUGS + (["rwmd"] if RWMD_FROM_SEARCH else []) + LISTED_DENSE_SLUGS


def dense_slugs(dataset):
    """The methods evaluate reads as one full matrix per variant."""
    listed = listed_slugs(dataset)
    return [slug for slug in DENSE_SLUGS if slug not in listed]


# What the classifier-free analyses compare: every method but PCA WMD.
ANALYSIS_SLUGS = [m.slug for m in RUN_METHOD_LIST if m.is_wmd]
# The built-in methods computed as one matrix by `embedding_matrix` (WCD, RWMD, cosine).
EMBEDDING_MATRIX_SLUGS = [m.slug for m in BEYOND_METHODS if m.kind == "matrix"]
VECTOR_METHODS = config["methods"]["vectors"]
MATRIX_METHODS = config["methods"]["matrices"]
CALLABLE_METHODS = config["methods"]["callables"]
# knn mode: the dense methods whose neighbour lists a job computes a block of queries at
# a time (embedding_neighbours, vector_neighbours), with no n x n matrix: WCD, the cosine
# of mean vectors, RWMD when WMD's search does not list it, and users' document vectors.
# A user's precomputed matrix and callable keep their full matrix (read as given).
LISTED_EMBEDDING_SLUGS = [
    s
    for s in DENSE_SLUGS
    if s in EMBEDDING_MATRIX_SLUGS and not (RWMD_FROM_SEARCH and s == "rwmd")
]
LISTED_DENSE_SLUGS = LISTED_EMBEDDING_SLUGS + [
    s for s in DENSE_SLUGS if s.startswith("vectors-")
]
# Query shards of those lists per dataset in knn mode (wmd.list_shards; auto: sized by its
# planned documents, each job at most about 2 minutes), never by --cores: (count, why),
# said once.
LISTED_SHARDS = {
    d: listed_shard_count(
        config["wmd"]["list_shards"],
        PLANNED_DOCUMENTS[d],
        {"vectors" if s.startswith("vectors-") else s for s in LISTED_DENSE_SLUGS},
    )
    for d in DATASETS
}
if LISTED_DENSE_SLUGS and any(wmd_mode(d) == "knn" for d in DATASETS):
    print(
        "wmdeval: query shards of the listed methods' neighbour lists ("
        + ", ".join(LISTED_DENSE_SLUGS)
        + "): "
        + ", ".join(
            f"{d}={n} ({why})"
            for d, (n, why) in LISTED_SHARDS.items()
            if wmd_mode(d) == "knn"
        ),
        file=sys.stderr,
    )
# knn mode: the dense methods with a full matrix per variant (the sample's is cut from it)
MATRIX_SLUGS = [
    s
    for s in DENSE_SLUGS
    if s not in LISTED_DENSE_SLUGS and not (RWMD_FROM_SEARCH and s == "rwmd")
]


def transport_weighting(wildcards):
    """--weighting of a transport method's jobs: bow, tfidf (WMD-TF-IDF) or wrd."""
    return method_by_slug(wildcards.method).weighting


def wmd_matrix(dataset, variant, slug):
    return f"results/{dataset}/{variant}/distances/{slug}.parquet"


def matrix_root(dataset, variant):
    """Where the documents and full WMD matrices of the analyses and Figures 4-5 live:
    the variant's own, or in knn mode those of its seeded sample (wmd.sample_documents).
    """
    root = f"results/{dataset}/{variant}"
    return f"{root}/sample" if wmd_mode(dataset) == "knn" else root


def full_matrix(dataset, variant, slug):
    """The full WMD matrix an analysis or figure reads (see matrix_root)."""
    return f"{matrix_root(dataset, variant)}/distances/{slug}.parquet"


def neighbour_tables(dataset, variant, slug):
    """knn mode: a method's neighbour table, (pairs, certificates)."""
    root = f"results/{dataset}/{variant}/neighbours/{slug}"
    return [f"{root}.parquet", f"{root}.certificates.parquet"]


def listed_shards(dataset):
    """knn mode: the query shards ("1-of-N") of each listed dense method's neighbour
    lists of ``dataset``, sized by its planned documents (LISTED_SHARDS)."""
    n = LISTED_SHARDS[dataset][0]
    return [f"{k}-of-{n}" for k in range(1, n + 1)]


def listed_shard_files(wildcards, suffix):
    """A listed method's shard files (``suffix``: ".parquet" or ".certificates.parquet")."""
    root = f"results/{wildcards.dataset}/{wildcards.variant}/neighbour_shards"
    return [
        f"{root}/{wildcards.listed}/{shard}{suffix}"
        for shard in listed_shards(wildcards.dataset)
    ]


def method_tables(dataset, variant, slug):
    """knn mode: the neighbour table (pairs, certificates) evaluate reads for ``slug``: a
    listed dense method's one shard as it is written, else the combined table."""
    if slug in LISTED_DENSE_SLUGS and LISTED_SHARDS[dataset][0] == 1:
        root = f"results/{dataset}/{variant}/neighbour_shards/{slug}/1-of-1"
        return [f"{root}.parquet", f"{root}.certificates.parquet"]
    return neighbour_tables(dataset, variant, slug)


def evaluate_inputs(wildcards):
    """The variant's documents and splits, and per WMD method its matrix (full mode) or
    its neighbour table (knn mode)."""
    d, v = wildcards.dataset, wildcards.variant
    inputs = {
        "documents": f"results/{d}/{v}/documents.parquet",
        "splits": f"results/{d}/{v}/splits.parquet",
    }
    if wmd_mode(d) == "knn":
        inputs["neighbours"] = [
            p for s in listed_slugs(d) for p in method_tables(d, v, s)
        ]
    else:
        inputs["matrices"] = [wmd_matrix(d, v, slug) for slug in WMD_SLUGS]
    inputs["dense"] = [wmd_matrix(d, v, slug) for slug in dense_slugs(d)]
    return inputs


def evaluate_wmd(wildcards, input):
    """--wmd of the evaluate job: {method slug: matrix}, for the transport methods in
    full mode and the dense methods (but a listed RWMD) in any mode."""
    matrices = input.matrices if "matrices" in input.keys() else []
    dense = dense_slugs(wildcards.dataset)
    return spec_json(
        {**dict(zip(WMD_SLUGS, matrices)), **dict(zip(dense, input.dense))}
    )


def evaluate_neighbours(wildcards, input):
    """--neighbours of the evaluate job in knn mode (nothing in full mode)."""
    if "neighbours" not in input.keys():
        return ""
    tables = list(input.neighbours)
    listed = listed_slugs(wildcards.dataset)
    pairs = {slug: tables[2 * k : 2 * k + 2] for k, slug in enumerate(listed)}
    return f"--neighbours '{spec_json(pairs)}'"


# The evaluation of each dataset's variants cut into parts by method (evaluate_parts; auto:
# sized by its planned documents and methods, each part at most about 1.5 minutes, one
# baseline alone above that), never by --cores: one part is the `evaluate` job; several
# are `evaluate_part` jobs, each the rows of a run of consecutive methods in table order,
# and `gather_evaluate`, which concatenates them into the same bytes. Said once.
def evaluated_slugs(dataset):
    """The methods an evaluation of ``dataset`` holds, as slugs in table order: the 12
    baselines and every method given distances (as classification.knn evaluates them).
    """
    held = [m.slug for m in BASELINES] + WMD_SLUGS + DENSE_SLUGS
    return sorted(held, key=lambda slug: method_name_order(method_by_slug(slug).name))


EVALUATE_PARTS = {}
for _d in DATASETS:
    _slugs = evaluated_slugs(_d)
    EVALUATE_PARTS[_d] = evaluate_parts(
        config["evaluate_parts"],
        _slugs,
        [slug in listed_slugs(_d) for slug in _slugs],
        PLANNED_DOCUMENTS[_d],
        PLANNED_FOLDS[_d] or UNKNOWN_FOLDS,
    )
PARTED_DATASETS = [d for d in DATASETS if len(EVALUATE_PARTS[d][0]) > 1]
WHOLE_DATASETS = [d for d in DATASETS if d not in PARTED_DATASETS]
if config["evaluate_parts"] == "auto" and PARTED_DATASETS:
    print(
        "wmdeval: evaluate_parts: "
        + ", ".join(
            f"{d}={len(EVALUATE_PARTS[d][0])} ({EVALUATE_PARTS[d][1]})"
            for d in DATASETS
        ),
        file=sys.stderr,
    )


def evaluate_part_names(dataset):
    """The parts ("1-of-N") of ``dataset``'s evaluation."""
    n = len(EVALUATE_PARTS[dataset][0])
    return [f"{k}-of-{n}" for k in range(1, n + 1)]


def evaluate_part_slugs(wildcards):
    """The methods (slugs) of one evaluate part ("2-of-4")."""
    parts = EVALUATE_PARTS[wildcards.dataset][0]
    k, n = (int(x) for x in wildcards.part.split("-of-"))
    if n != len(parts):
        raise WmdevalError(
            f"evaluate part {wildcards.part} of {wildcards.dataset}: the plan has"
            f" {len(parts)} part(s)"
        )
    return parts[k - 1]


def evaluate_part_inputs(wildcards):
    """evaluate_inputs for the methods of one part only: a part without WMD reads no
    neighbour table and no matrix."""
    inputs = evaluate_inputs(wildcards)
    slugs = set(evaluate_part_slugs(wildcards))
    d, v = wildcards.dataset, wildcards.variant
    if "neighbours" in inputs:
        inputs["neighbours"] = [
            p for s in listed_slugs(d) if s in slugs for p in method_tables(d, v, s)
        ]
    if "matrices" in inputs:
        inputs["matrices"] = [wmd_matrix(d, v, s) for s in WMD_SLUGS if s in slugs]
    inputs["dense"] = [wmd_matrix(d, v, s) for s in dense_slugs(d) if s in slugs]
    return inputs


def evaluate_part_wmd(wildcards, input):
    """--wmd of an evaluate part: its methods' matrices (see evaluate_wmd)."""
    slugs = evaluate_part_slugs(wildcards)
    given = input.matrices if "matrices" in input.keys() else []
    matrices = zip([s for s in WMD_SLUGS if s in slugs], given)
    dense = zip([s for s in dense_slugs(wildcards.dataset) if s in slugs], input.dense)
    return spec_json({**dict(matrices), **dict(dense)})


def evaluate_part_neighbours(wildcards, input):
    """--neighbours of an evaluate part in knn mode: its methods' tables."""
    if "neighbours" not in input.keys():
        return ""
    slugs = evaluate_part_slugs(wildcards)
    listed = [s for s in listed_slugs(wildcards.dataset) if s in slugs]
    tables = list(input.neighbours)
    pairs = {slug: tables[2 * k : 2 * k + 2] for k, slug in enumerate(listed)}
    return f"--neighbours '{spec_json(pairs)}'" if pairs else ""


def evaluate_part_files(wildcards, kind):
    """The parts' ``kind`` files ("scores", "predictions") of one evaluation, in order."""
    root = f"results/{wildcards.dataset}/{wildcards.variant}/evaluate_parts"
    return [
        f"{root}/{part}.{kind}.parquet"
        for part in evaluate_part_names(wildcards.dataset)
    ]


def evaluate_expect(wildcards):
    """--expect of gather_evaluate: one variant's rows of every method it evaluates."""
    return expect(
        dataset=[wildcards.dataset],
        variant=[wildcards.variant],
        method=[method_by_slug(s).name for s in evaluated_slugs(wildcards.dataset)],
        classifier=CLASSIFIERS,
    )


# The stored work units of each method's neighbour search (knn mode), named like blocks:
# wmd.search_shards, or for auto decided here, once, from the config and the planned
# documents of the datasets in knn mode (wmdeval/planning/plan.py).
SEARCH_SHARD_COUNT, SEARCH_SHARDS_WHY = search_shard_count(
    config["wmd"]["search_shards"],
    [PLANNED_DOCUMENTS[d] for d in DATASETS if wmd_mode(d) == "knn"],
    config["wmd"]["threads"],
)
SEARCH_SHARDS = [
    f"{k}-of-{SEARCH_SHARD_COUNT}" for k in range(1, SEARCH_SHARD_COUNT + 1)
]
if config["wmd"]["search_shards"] == "auto" and any(
    wmd_mode(d) == "knn" for d in DATASETS
):
    print(
        f"wmdeval: wmd.search_shards: {SEARCH_SHARD_COUNT} ({SEARCH_SHARDS_WHY})",
        file=sys.stderr,
    )


def search_resources(input, shard, threads, attempt):
    """mem_mb and runtime of one neighbour-search job ("2-of-4"): its method's cost
    forecast (rule wmd_forecast) once that exists, else the work model (a dry run); plus
    the pairs it reuses: reading and keying them peaks at about 85 bytes a pair (3 M
    pairs: 250 MB), about 11 times the Parquet file's 8 bytes a pair; 12 times the file
    is asked."""
    found = wmd_forecast_resources(input.forecast, shard, attempt)
    if found is None:
        n_shards = int(shard.split("-of-")[1])
        found = wmd_search_resources(input.documents, n_shards, threads, attempt)
    found = dict(found)
    if "reuse_pairs" in input.keys() and os.path.exists(input.reuse_pairs):
        reuse_mb = 12 * os.path.getsize(input.reuse_pairs) / 1e6 * 2 ** (attempt - 1)
        found["mem_mb"] += math.ceil(reuse_mb)
    return found


def forecast_file(dataset, variant, slug):
    """knn mode: the cost forecast of a method's neighbour search."""
    return f"results/{dataset}/{variant}/forecast/{slug}.json"


def planned_forecasts():
    """Every cost forecast of this run: each transport method of each variant of the
    datasets in knn mode, as (dataset, variant, slug)."""
    return [
        (d, v, slug)
        for d in DATASETS
        if wmd_mode(d) == "knn"
        for v in VARIANTS
        for slug in WMD_SLUGS
    ]


# Transport methods whose distance between two documents does not depend on the variant:
# bag-of-words and WRD weights depend on the document alone, TF-IDF's on the corpus. The
# clean variant (a subset of the original's documents, docs/protocol.md §3) takes their
# full matrices (wmd_subset), its sample's matrices (wmd_sample_subset) and, in knn mode,
# the pairs its search would solve (search_reuse) from the original variant's, even in a
# run of the clean variant alone (so what it stores never depends on the other variant
# being run).
VARIANT_FREE_METHODS = "wmd|wrd|wmd-pca[0-9]+"


def search_reuse(wildcards):
    """A search job's --reuse-pairs/--reuse-documents/--reuse-certificates/--reuse-splits
    inputs: the original variant's merged neighbour pairs and certificates, its documents
    and splits (its candidate lists) for the clean variant's search of a method of
    VARIANT_FREE_METHODS; none otherwise."""
    d, method = wildcards.dataset, wildcards.method
    if wildcards.variant != "clean" or not re.fullmatch(VARIANT_FREE_METHODS, method):
        return {}
    return {
        "reuse_pairs": f"results/{d}/original/neighbours/{method}.parquet",
        "reuse_documents": f"results/{d}/original/documents.parquet",
        "reuse_certificates": f"results/{d}/original/neighbours/{method}.certificates.parquet",
        "reuse_splits": f"results/{d}/original/splits.parquet",
    }


def search_reuse_arguments(wildcards, input):
    """The search job's arguments naming the four reused files (empty without them)."""
    if "reuse_pairs" not in input.keys():
        return ""
    return (
        f"--reuse-pairs {input.reuse_pairs} --reuse-documents {input.reuse_documents}"
        f" --reuse-certificates {input.reuse_certificates}"
        f" --reuse-splits {input.reuse_splits}"
    )


def sample_within(wildcards):
    """The clean variant's sample is the original's sample cut to the clean documents
    (sample-variant --within), so that its matrices of VARIANT_FREE_METHODS are
    sub-matrices of the original sample's."""
    if wildcards.variant != "clean":
        return {}
    return {"within": f"results/{wildcards.dataset}/original/sample/documents.parquet"}


def sample_within_argument(wildcards, input):
    return f"--within {input.within}" if "within" in input.keys() else ""


def wmd_embeddings(wildcards):
    """Word vectors of a WMD method: the dataset's, or their PCA projection."""
    if wildcards.method.startswith("wmd-pca"):
        dim = wildcards.method.removeprefix("wmd-pca")
        return f"results/{wildcards.dataset}/vectors/pca{dim}.parquet"
    return f"results/{wildcards.dataset}/vectors/embeddings.parquet"


# The optional report of near duplicates (duplicates.near): with it on, the duplicates
# job's --near argument is a param of wildcards alone, so that Snakemake records its
# max_l1; with it off, a derived param of "" (none recorded, as before the report had
# a key of its own), so that a directory of finished results reruns nothing.
NEAR_DUPLICATES = "results/{dataset}/duplicates/near.parquet"
if config["duplicates"]["near"]["enabled"]:

    def near_duplicates_argument(wildcards):
        near = NEAR_DUPLICATES.format(dataset=wildcards.dataset)
        return f"--near {near} --near-max-l1 {config['duplicates']['near']['max_l1']}"

else:

    def near_duplicates_argument(wildcards, output):
        return ""


def skipped_pair_splits(path):
    """The splits input of WMD's block and gather jobs, {"splits": path}, when
    wmd.skip_test_pairs leaves a one-fold dataset's test x test pairs unsolved (the
    splits say which); {} otherwise, so that changing the key reruns them."""
    return {"splits": path} if config["wmd"]["skip_test_pairs"] else {}


# The stored WMD work units of every matrix: "1-of-N" .. "N-of-N". Their names (and so the
# files) depend only on config, never on how many jobs solve them, so a run with another
# --cores or job grouping finds every finished block. The count is known when planning:
# a dry run needs no data.
WMD_BLOCKS = [
    f"{k}-of-{config['wmd']['blocks']}" for k in range(1, config["wmd"]["blocks"] + 1)
]


def block_resources(input, block, threads, attempt):
    """mem_mb and runtime of one WMD block job ("3-of-8") from the work it holds and
    the word vectors it reads."""
    n_blocks = int(block.split("-of-")[1])
    return wmd_block_resources(
        input.documents, n_blocks, threads, attempt, embeddings_path=input.embeddings
    )


PCA_DIMS = config["pca_dims"]

# The paper's tables the tables job writes (a .csv and a .md each): the package's list.
PAPER_TABLES = [spec.name for spec in PAPER_TABLE_SPECS]


def figure_inputs(wildcards):
    """Per dataset of the run: the variant's documents, splits, WMD matrix and word
    vectors; with pca_dims, the first projection's vectors and WMD matrix too."""
    inputs = {
        "documents": [
            f"{matrix_root(d, wildcards.variant)}/documents.parquet" for d in DATASETS
        ],
        "splits": [
            f"{matrix_root(d, wildcards.variant)}/splits.parquet" for d in DATASETS
        ],
        "matrices": [full_matrix(d, wildcards.variant, WMD.slug) for d in DATASETS],
        "embeddings": [f"results/{d}/vectors/embeddings.parquet" for d in DATASETS],
    }
    if PCA_DIMS:
        dim = PCA_DIMS[0]
        inputs["pca_matrices"] = [
            full_matrix(d, wildcards.variant, f"wmd-pca{dim}") for d in DATASETS
        ]
        inputs["pca_embeddings"] = [
            f"results/{d}/vectors/pca{dim}.parquet" for d in DATASETS
        ]
    return inputs


ANALYSES = config["analyses"]


def analysis_inputs(wildcards):
    """A variant's documents, splits and the matrix of every method but the baselines
    and PCA WMD (in knn mode, those of its seeded sample)."""
    root = matrix_root(wildcards.dataset, wildcards.variant)
    return {
        "documents": f"{root}/documents.parquet",
        "splits": f"{root}/splits.parquet",
        "matrices": [
            full_matrix(wildcards.dataset, wildcards.variant, slug)
            for slug in ANALYSIS_SLUGS
        ],
    }


def wmd_argument(wildcards, input):
    """The --wmd argument of an analysis: {method slug: matrix path} as JSON."""
    return spec_json(dict(zip(ANALYSIS_SLUGS, input.matrices)))


#: The per-variant analyses switched on.
ENABLED_ANALYSES = [name for name, spec in ANALYSES.items() if spec["enabled"]]


def analysis_parquets():
    """One dataset variant's analysis tables: {analysis name: Parquet path}."""
    return {
        name: f"results/{{dataset}}/{{variant}}/analysis/{name}.parquet"
        for name in ENABLED_ANALYSES
    }


def analysis_settings():
    """The enabled analyses' settings (their config keys but ``enabled``) as JSON."""
    return spec_json(
        {
            name: {k: v for k, v in ANALYSES[name].items() if k != "enabled"}
            for name in ENABLED_ANALYSES
        }
    )


def analysis_output_arguments(wildcards, output):
    """``--out NAME=PATH`` for each table of the analyses job."""
    return " ".join(f"--out {name}={path}" for name, path in output.items())


def significance_splits():
    """{"dataset/variant": its splits}: the test/train sizes the corrected t-test needs."""
    return {
        f"{d}/{v}": f"results/{d}/{v}/splits.parquet"
        for d in DATASETS
        for v in VARIANTS
    }


def significance_split_arguments(wildcards, input):
    return " ".join(
        f"--splits {name}={path}"
        for name, path in zip(significance_splits(), input.splits, strict=True)
    )


def per_variant(pattern):
    """``pattern`` for every dataset and variant of the run."""
    return expand(pattern, dataset=DATASETS, variant=VARIANTS)


def analysis_outputs():
    """The combined outputs of the analyses switched on in the config."""
    outputs = []
    if ANALYSES["wmd_vs_bow"]["enabled"]:
        outputs.append("results/tables/wmd_vs_bow.csv")
    if ANALYSES["n2o"]["enabled"]:
        outputs += ["results/figures/n2o.png", "results/tables/n2o_robustness.csv"]
    if ANALYSES["crossmatch"]["enabled"]:
        outputs.append("results/tables/crossmatch.csv")
    if ANALYSES["corpus_distances"]["enabled"]:
        outputs.append("results/tables/corpus_distances.csv")
    if ANALYSES["ksc"]["enabled"]:
        outputs.append("results/tables/ksc.csv")
    return outputs


def matrix_job_mem_mb(wildcards, input, attempt):
    """Jobs that hold a variant's distance matrices plus a float64 working block."""
    n_matrices = sum(1 for path in input if "/distances/" in str(path))
    planned = planned_rows(wildcards.dataset, input.documents)
    return wmd_matrix_job_mem_mb(input.documents, attempt, max(n_matrices, 2), planned)


def evaluate_job_mem_mb(wildcards, input, attempt):
    """The evaluate job: one dense matrix at a time, or in knn mode without dense
    matrices its blocks of rankings and the neighbour tables' pairs."""
    planned = planned_rows(wildcards.dataset, input.documents)
    keys = input.keys()
    dense = len(input.matrices if "matrices" in keys else []) + len(input.dense)
    tables = list(input.neighbours) if "neighbours" in keys else []
    # (pairs, certificates) per method, as evaluate_neighbours reads them
    return evaluate_mem_mb(input.documents, attempt, planned, dense, tables[0::2])


def embedding_matrix_job_mem_mb(wildcards, input, threads, attempt):
    """An embedding_matrix job: its matrix, and RWMD's per-thread word costs."""
    planned = planned_rows(wildcards.dataset, input.documents)
    return embedding_matrix_mem_mb(
        input.documents, wildcards.embedding_method, threads, attempt, planned
    )


def subset_job_mem_mb(wildcards, input, attempt):
    """A wmd-subset job: the sub-matrix for the documents kept, read a row group at a time."""
    planned = planned_rows(wildcards.dataset, input.documents)
    return subset_mem_mb(input.documents, attempt, planned)


def gather_job_mem_mb(wildcards, input, attempt):
    """A gather or subset job: the float64 matrix about three times over."""
    planned = planned_rows(wildcards.dataset, input.documents)
    return gather_mem_mb(input.documents, planned) * attempt


def logged(path):
    return f"results/logs/{path}.log"


def benchmarked(path):
    return f"results/benchmarks/{path}.tsv"


def final_outputs():
    outputs = [
        "results/scores.parquet",
        "results/predictions.parquet",
        "results/tables/significance.md",
        "results/figures/critical_difference.png",
        "results/tables/duplicates.csv",
        "results/tables/oov.csv",
        "results/tables/table2.md",
        *analysis_outputs(),
    ]
    outputs += expand("results/figures/figure3_{variant}.png", variant=VARIANTS)
    outputs += expand("results/figures/figure4_{variant}.png", variant=VARIANTS)
    outputs += expand("results/figures/figure5_{variant}.png", variant=VARIANTS)
    if planned_forecasts():
        outputs.append("results/tables/cost_forecast.tsv")
    return outputs


TRAINED_EMBEDDINGS = [
    name
    for name, spec in config["embeddings"].items()
    if spec["format"] == "train-word2vec"
]
KUSNER_DATASETS = [
    name for name, spec in config["datasets"].items() if spec["format"] == "kusner-mat"
]
TEXT_DATASETS = [name for name in config["datasets"] if name not in KUSNER_DATASETS]
DOWNLOADS = downloads()


# Bad input planning can see stops the run here, in one line naming the file or key
# (wmdeval/planning/inputs.py): each local table of the run (and of the datasets its
# trained embeddings train on) read and checked as its ingest job will check it, a PCA
# dimension above the embeddings', a callable method's module that is nowhere.
def check_planned_inputs():
    checked = set()
    for d in DATASETS:
        embedding = config["datasets"][d].get("embeddings")
        trained = config["embeddings"][embedding] if embedding else {}
        for name in [d, *trained.get("train_on", [])]:
            if name not in checked and name in TEXT_DATASETS:
                checked.add(name)
                try:
                    check_texts(ingest_spec(config["datasets"][name]))
                except WmdevalError as error:
                    raise WmdevalError(f"datasets.{name}: {error}") from None
        if embedding:
            dimension = embedding_dimension(trained, embedding_file(embedding))
            check_pca_dims(PCA_DIMS, dimension, f"embeddings.{embedding}")
    for name, spec in CALLABLE_METHODS.items():
        try:
            check_callable_module(spec["function"])
        except WmdevalError as error:
            raise WmdevalError(f"methods.callables.{name}.function: {error}") from None


# (in the main process only: a cluster job parses this file again on its node)
if workflow.is_main_process:
    try:
        check_planned_inputs()
    except WmdevalError as error:
        sys.exit(f"wmdeval: config: {error}")
    # then no more WMD blocks (jobs) than documents in a dataset of full matrices (after
    # the tables' own checks: a table of no rows is its file's error, not the blocks')
    try:
        check_blocks(
            config["wmd"]["blocks"],
            {d: PLANNED_DOCUMENTS[d] for d in DATASETS if WMD_MODES[d][0] == "full"},
        )
    except WmdevalError as error:
        sys.exit(f"wmdeval: {error}")


# Said once while planning (so in every dry run), once the input is known to be good:
# which datasets solve full matrices.
if DATASETS:
    print(
        "wmdeval: WMD mode per dataset: "
        + ", ".join(f"{d}={mode} ({why})" for d, (mode, why) in WMD_MODES.items()),
        file=sys.stderr,
    )


wildcard_constraints:
    # Only embeddings the workflow trains itself are outputs; "(?!)" matches nothing.
    trained=names_regex(TRAINED_EMBEDDINGS),
    download=names_regex(DOWNLOADS),
    method="wmd|wmd-tfidf|wrd|wmd-pca[0-9]+",
    # dense methods: built-in ones and users' (vectors-<name>-<metric>, matrix-, callable-)
    embedding_method=names_regex(EMBEDDING_MATRIX_SLUGS),
    listed_embedding=names_regex(LISTED_EMBEDDING_SLUGS),
    listed=names_regex(LISTED_DENSE_SLUGS),
    vectors=names_regex(VECTOR_METHODS),
    vector_metric="cosine|l2|l1",
    user_matrix=names_regex(MATRIX_METHODS),
    user_callable=names_regex(CALLABLE_METHODS),
    dense=names_regex(DENSE_SLUGS),
    dim="[0-9]+",
    shard="[0-9]+-of-[0-9]+",


def text_source_inputs(wildcards):
    """The files a raw-text dataset's ingest reads (text_files; none for a corpus bundled
    with gensim and a bundled stop-word list)."""
    return text_files(dataset_spec(wildcards))


def trained_embedding_inputs(wildcards):
    """The files a trained embedding reads: its datasets' tables (texts) and stop-word
    lists (text_files)."""
    spec = config["embeddings"][wildcards.trained]
    datasets = [config["datasets"][d] for d in spec["train_on"]]
    return {
        "texts": sorted(
            {source_file(d) for d in datasets if "path" in d or "url" in d}
        ),
        "stopwords": sorted(
            {f for d in datasets if (f := wmdeval_config.stopword_file(d))}
        ),
    }


def trained_from_files(name):
    """The config of the embedding `name` if it is trained on datasets that are all read
    from files (the plan's model of its time reads their sizes), else None."""
    spec = config.get("embeddings", {}).get(name)
    if spec is None or spec["format"] != "train-word2vec":
        return None
    datasets = [config["datasets"][d] for d in spec["train_on"]]
    return spec if all("path" in d or "url" in d for d in datasets) else None


def allwords_variant_inputs(wildcards):
    """Like variant_inputs, but the documents before the out-of-vocabulary filter."""
    inputs = variant_inputs(wildcards)
    inputs["documents"] = f"results/{wildcards.dataset}/ingest/documents.parquet"
    return inputs


def allwords_scores():
    """Per-dataset scores of the all-words evaluation ([] when it is off)."""
    return expand(
        "results/{dataset}/{variant}/allwords/scores.parquet",
        dataset=ALLWORDS_DATASETS,
        variant=VARIANTS,
    )


def variant_inputs(wildcards):
    """The filtered documents and splits; the clean variant also needs its survivors."""
    inputs = {
        "documents": f"results/{wildcards.dataset}/oov/documents.parquet",
        "splits": f"results/{wildcards.dataset}/ingest/splits.parquet",
    }
    if wildcards.variant == "clean":
        inputs["kept"] = f"results/{wildcards.dataset}/duplicates/kept.parquet"
    return inputs


# What each aggregating job covers (wmdeval/core/coverage.py), passed as --expect: a parameter,
# so the job reruns when it changes, and checked by the job, which writes nothing when
# its input lacks a combination or holds one this run does not cover.
CLASSIFIERS = ["knn", "wknn"]
ANALYSIS_METHODS = [method.name for method in RUN_METHOD_LIST]
RUN_METHODS = ANALYSIS_METHODS + [pca_method_name(WMD.name, dim) for dim in PCA_DIMS]
ALLWORDS_DATASETS = (
    [d for d in DATASETS if d in TEXT_DATASETS] if config["all_words"] else []
)


def expect(**columns):
    """The --expect argument: {column: [values]} as JSON."""
    return spec_json(columns)


EXPECT_SCORES = expect(
    dataset=DATASETS, variant=VARIANTS, method=RUN_METHODS, classifier=CLASSIFIERS
)
EXPECT_ALLWORDS = expect(
    dataset=ALLWORDS_DATASETS,
    variant=VARIANTS,
    method=[method.name for method in BASELINES],
    classifier=CLASSIFIERS,
)
EXPECT_ANALYSIS = expect(dataset=DATASETS, variant=VARIANTS, method=ANALYSIS_METHODS)


# --------------------------------------------------------------------------- users' methods


def user_vectors_inputs(wildcards):
    """The variant's documents and a `methods.vectors` entry's file(s) for this dataset."""
    spec = VECTOR_METHODS[wildcards.vectors]
    inputs = {
        "documents": f"results/{wildcards.dataset}/{wildcards.variant}/documents.parquet",
        "vectors": dataset_path(spec["path"], wildcards.dataset),
    }
    if spec.get("ids"):
        inputs["ids"] = dataset_path(spec["ids"], wildcards.dataset)
    return inputs


def sample_user_vectors_inputs(wildcards):
    """user_vectors_inputs for the variant's seeded sample (knn mode)."""
    inputs = user_vectors_inputs(wildcards)
    inputs["documents"] = (
        f"results/{wildcards.dataset}/{wildcards.variant}/sample/documents.parquet"
    )
    return inputs


def listed_job_resources(wildcards, input, method, attempt):
    """mem_mb and runtime of an embedding_neighbours or vector_neighbours job (one query
    shard of a method's neighbour lists)."""
    planned = planned_rows(wildcards.dataset, input.documents)
    n_shards = int(wildcards.shard.split("-of-")[1])
    return wmd_listed_resources(input.documents, method, n_shards, attempt, planned)


def user_matrix_file(wildcards):
    """A `methods.matrices` entry's file for this dataset."""
    return dataset_path(
        MATRIX_METHODS[wildcards.user_matrix]["path"], wildcards.dataset
    )


def callable_shards(name):
    """The stored work units of a callable's matrix: "1-of-N" .. "N-of-N"."""
    n = CALLABLE_METHODS[name]["shards"]
    return [f"{k}-of-{n}" for k in range(1, n + 1)]


def callable_source(wildcards):
    """The file defining a callable when it lies in the working directory (found
    without importing it), so that editing the function reruns its shards; [] for one
    installed in the environment."""
    import os

    parts = (
        CALLABLE_METHODS[wildcards.user_callable]["function"].split(":")[0].split(".")
    )
    for candidate in (
        os.path.join(*parts) + ".py",
        os.path.join(*parts, "__init__.py"),
    ):
        if os.path.isfile(candidate):
            return [candidate]
    return []


# The plan's wall time, said once Snakemake has built the DAG (a dry run too, and before
# any job of a real run starts): every job to run, its expected time
# (wmdeval/planning/plan.py: search shards from their forecasts once those exist) and
# what it waits for, scheduled on --cores (workflow.cores; 1 in a dry run without
# --cores) and on 2, 16 and 64 cores as Snakemake schedules local jobs
# (wmdeval/planning/wall.py). Snakemake has no hook after the DAG in a dry run, so this
# listens for its run-info message (the job stats), in the main process only.
class PlanWall(logging.Handler):
    said = False

    def emit(self, record):
        if PlanWall.said or getattr(record, "event", None) != LogEvent.RUN_INFO:
            return
        PlanWall.said = True
        try:
            for line in plan_wall_lines(workflow.dag, workflow.cores):
                print(f"wmdeval: {line}", file=sys.stderr)
        except WmdevalError as error:
            print(f"wmdeval: wall time not forecast: {error}", file=sys.stderr)


def planned_jobs(dag):
    """(jobs, {source: count}): every job Snakemake will run as a PlannedJob (its
    expected time, threads and what it waits for; wmdeval/planning/plan.py), in the
    order of their names, so that every run of the same plan schedules the same. Computed
    once per DAG (the priorities and the wall-time lines both ask)."""
    needed = list(dag.needrun_jobs())
    key = (id(dag), len(needed))
    if _PLANNED.get("key") == key:
        return _PLANNED["jobs"], _PLANNED["sources"]
    jobs, sources, names = [], {}, {}
    for job in needed:
        names[job] = job_name(job.rule.name, dict(job.wildcards.items()))
    for job in sorted(names, key=names.get):
        wildcards = dict(job.wildcards.items())
        inputs = dict(job.input.items())
        dataset = wildcards.get("dataset")
        planned = (
            planned_rows(dataset, inputs.get("documents", ""))
            if dataset in PLANNED_DOCUMENTS
            else None
        )
        seconds, scales, source = planned_job_seconds(
            job.rule.name,
            wildcards,
            inputs,
            planned,
            config["wmd"],
            PLANNED_WORDS.get(dataset),
            PLANNED_FOLDS.get(dataset),
            planned_evaluate_methods(job.rule.name, job.wildcards),
            embedding=trained_from_files(wildcards.get("trained")),
        )
        sources[source] = sources.get(source, 0) + 1
        declared = job.rule.resources.get("_cores")
        threads = declared if isinstance(declared, int) else job.threads
        after = tuple(names[d] for d in dag.dependencies[job] if d in names)
        jobs.append(
            PlannedJob(names[job], seconds, max(int(threads), 1), after, scales)
        )
    _PLANNED.update(key=key, jobs=jobs, sources=sources)
    return jobs, sources


_PLANNED = {}


def planned_evaluate_methods(rule_name, wildcards):
    """An evaluate job's methods for its expected time, one bool each (read from a
    neighbour table?); None for other jobs."""
    if rule_name == "evaluate":
        slugs = evaluated_slugs(wildcards.dataset)
    elif rule_name == "evaluate_part":
        slugs = evaluate_part_slugs(wildcards)
    else:
        return None
    return [slug in listed_slugs(wildcards.dataset) for slug in slugs]


# Every job's priority: the expected seconds of the longest chain of jobs from its start
# to the plan's end at --cores (wmdeval/planning/wall.py, remaining_seconds), so that
# Snakemake, which starts ready jobs by priority first, starts the jobs that the
# critical path goes through before those that can wait (the paper plan's forecast on 64
# cores, same work models: 14.1 min without them, 11.3 with them). Snakemake asks each
# job's priority once its DAG knows what will run, before any job starts; a plan that
# cannot be forecast gets none (the wall-time line says why).
def planned_priority(rule_name):
    def priority(wildcards):
        name = job_name(rule_name, dict(wildcards.items()))
        dag = workflow.dag
        # the plan's priorities once per DAG (Snakemake asks for each job in turn), again
        # only if it asks for a job they do not hold (its DAG has changed)
        if _PRIORITIES.get("dag") != id(dag) or name not in _PRIORITIES["levels"]:
            try:
                jobs, _ = planned_jobs(dag)
                ranked = plan_by_remaining(jobs, max(int(workflow.cores or 1), 1))
            except WmdevalError:
                ranked = []
            _PRIORITIES.update(dag=id(dag), levels={j.name: j.priority for j in ranked})
            _PRIORITIES["levels"].setdefault(name, 0)
        return _PRIORITIES["levels"][name]

    return priority


_PRIORITIES = {}


def plan_wall_lines(dag, cores):
    """The wall-time lines of the jobs Snakemake will run (see PlanWall)."""
    planned, sources = planned_jobs(dag)
    # a --prioritize target's jobs run first (Snakemake's highest priority); the others
    # by their remaining chain on each core count (plan_wall_summary)
    prioritized = {
        job_name(job.rule.name, dict(job.wildcards.items()))
        for job in dag.needrun_jobs()
        if dag.priority(job) == sys.maxsize
    }
    jobs = [
        (
            dataclasses.replace(job, priority=sys.maxsize)
            if job.name in prioritized
            else job
        )
        for job in planned
    ]
    counts = [cores] + [n for n in WALL_CORE_COUNTS if n != cores]
    lines = [
        f"wall time forecast of {len(jobs)} jobs (docs/scale.md; thread speed-up by"
        f" Amdahl's law, serial share {EXPECTED_SERIAL_SHARE}): "
        f"{sources.get('forecast', 0)} from cost forecasts, {sources.get('model', 0)}"
        f" from work models, {sources.get('other', 0)} not forecast individually"
        f" ({PLAN_OTHER_SECONDS:.0f} s each)"
    ]
    for row in plan_wall_summary(jobs, counts):
        used = " (--cores)" if row["cores"] == cores else ""
        lines.append(
            f"wall time on {row['cores']} cores{used}: {row['wall_seconds'] / 60:.1f} min;"
            f" critical path {row['critical_seconds'] / 60:.1f} min:"
            f" {describe_path(row['critical_path'])}; longest job"
            f" {row['longest_job_seconds'] / 60:.1f} min: {row['longest_job']}"
        )
    return lines


# one handler, for this parse's workflow, even if a process parses the Snakefile again
_snakemake_log = logging.getLogger("snakemake.logging")
for _handler in list(_snakemake_log.handlers):
    if type(_handler).__name__ == "PlanWall":
        _snakemake_log.removeHandler(_handler)
_snakemake_log.addHandler(PlanWall())


def result_warnings():
    """Said at the end of a successful run (Snakefile `onsuccess`): the results that
    mean little, each in one line, from the variants' splits this run left (the lines
    the evaluate jobs' logs and the tables' Markdown hold): k of kNN or wkNN above the
    training documents."""
    splits = {
        name: path
        for name, path in significance_splits().items()
        if os.path.exists(path)
    }
    for line in table_k_warnings(splits, config["evaluation"]):
        print(f"wmdeval: warning: {line}", file=sys.stderr)
