"""What config/paper.yaml costs, job by job and in both WMD modes; is the forecast right?


Default: for each paper dataset, a stand-in of its size, layout, classes, vocabulary,
distinct words per document and 300-d unit vectors, made by benchmarks/paper_scale.py's
generators (20news and amazon are real text from ``../shared/data``, the others
generated, with the paper's counts of duplicate pairs and duplicate samples planted,
PAPER_DUPLICATES; the output says which). Per transport method of the paper plan (WMD,
WMD-TF-IDF, WRD, WMD on 5-d PCA vectors):

* **full**: the pairs the full mode solves (the upper triangle; one-fold datasets
  without test x test) for every solved matrix (WMD, WRD and PCA once, on the original
  documents; WMD-TF-IDF per variant) times the measured time of one pair at the
  dataset's words per document (``--pairs`` random pairs, one thread);
* **knn**: the forecast of the ``wmd_forecast`` rule's function
  (:func:`wmdeval.planning.forecast.run_forecast`, ``--queries-per-role`` sampled
  queries of each role) for each variant, as the workflow runs it:

  - **original**: the forecast of the original variant;
  - **clean**: the stand-in's clean variant is made by the workflow's own jobs
    (:func:`wmdeval.cleaning.duplicates.run_duplicates`'s survivors,
    :func:`wmdeval.cleaning.vocabulary.run_select`'s documents and splits). For WMD,
    WRD and PCA WMD the workflow's clean search takes the original variant's merged
    neighbour pairs (``--reuse-pairs``/``--reuse-documents``) and solves only what they
    lack, and skips the lists their certificates settle (``--reuse-certificates``/
    ``--reuse-splits``), so its forecast must sample that search. The original's whole search is too
    expensive to run here, but the clean forecast's sampled queries only look up pairs
    they visit: the original's search is run for those sampled queries alone (the
    sample is seeded, so it is known before the forecast runs), its pairs and
    certificates written as NEIGHBOUR_PAIRS and NEIGHBOUR_CERTIFICATES files, and the
    clean forecast reads them as the reused pairs and certificates. The real run's
    original pairs also hold the pairs other queries' searches visited with a sampled
    query as candidate, and its certificates all of theirs, which the clean search would
    take too; yet it is **not an upper bound** (``--check``, 2,000 documents: forecast /
    measured solves 0.91 and 0.73, CPU 1.10 and 1.02; one reason: a taken pair gives its
    query no dual potential, so a query that takes more pairs has weaker dual bounds). (The
    forecast's sharing check also searches a few co-queries with that file, which holds
    only the sampled queries' pairs, so what they visit may differ a little from the
    real run; their CPU is not in the forecast.) That helper search is not counted (the
    real run's original search is the original's forecast). WMD-TF-IDF's IDF depends on
    the variant, so it has no reuse: the clean variant's own forecast, or the
    original's again when cleaning removed no document (the same documents).

* **forecast jobs** (knn mode): the process CPU of each variant's ``wmd_forecast``
  function as run here (the clean variant's job runs even where its record is the
  original's);
* **samples** (knn mode): the analyses and Figures 4-5 read full matrices of a seeded
  sample of config/paper.yaml's ``wmd.sample_documents`` documents (the workflow's
  own sample of the stand-in): every method's on the original variant and WMD-TF-IDF's
  on the clean one (the others are cut from the original's), their pairs times the
  measured time of one pair, as the full mode is forecast.

Then the plan's **other jobs**, measured (not forecast) on each stand-in at its size and
on both variants, each run as its rule runs it (:func:`other_jobs`): the dense matrices
(WCD, RWMD, cosine; in knn mode RWMD's of the sample alone, as its lists come from WMD's
search), evaluate with the 12 baselines and the dense methods, the analyses
(on the knn datasets' samples), and the duplicates and select_variant functions
(``--no-other-jobs`` leaves them out).

It prints per dataset and method both CPU estimates, the mode config/paper.yaml gives the
dataset (auto: knn from 2,000 documents), the totals, and the whole plan with the other
jobs. ``--quick``: every stand-in at
5 % of its documents (a smoke run).

``--check``: the forecast against a measured run on two real-text corpora (prepared by
benchmarks/knn_pruning.py's workflow steps): ``--check-documents`` seeded amazon
reviews and as many 20 Newsgroups posts (first 500 words), WMD, ``--check-shards``
shards in ``--threads`` threads: every shard searched with ``run_search`` (the
wmd_search job's function) and its process CPU measured, against the forecast's CPU,
with and without the shared-pairs correction. Then the same for the corpus's clean
variant, whose forecast is made as the plan makes it: its whole search reusing the
original's merged pairs and certificates, as the workflow runs it.

    python benchmarks/paper_cost.py [--quick] [--datasets 20news ...] [--threads 2]
    python benchmarks/paper_cost.py --check [--check-documents 2000]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import knn_pruning  # noqa: E402  (the check corpora's preparation)
import paper_scale  # noqa: E402  (the stand-ins' generators)
import record as results_file  # noqa: E402  (benchmarks/record.py)

from wmdeval.cleaning import duplicates, vocabulary  # noqa: E402
from wmdeval.core import config, io, schemas  # noqa: E402
from wmdeval.core.methods import configured_methods  # noqa: E402
from wmdeval.core.roles import query_roles  # noqa: E402
from wmdeval.distances.embedding import METHODS as EMBEDDING_MATRICES  # noqa: E402
from wmdeval.distances.pca import project_embeddings  # noqa: E402
from wmdeval.distances.wmd import search, solver  # noqa: E402
from wmdeval.ingest.embeddings import embeddings_table  # noqa: E402
from wmdeval.planning import forecast  # noqa: E402

#: (slug, weighting, solved matrices in full mode: variants whose matrix is solved)
METHODS = (
    ("wmd", "bow", 1),  # the clean variant's is a sub-matrix of the original's
    ("wmd-tfidf", "tfidf", 2),  # IDF depends on the variant
    ("wrd", "wrd", 1),
    ("wmd-pca5", "bow", 1),
)
#: config/paper.yaml: mode auto, knn from this many documents.
AUTO_MIN_DOCUMENTS = 2000
#: config/paper.yaml leaves these at their defaults: the knn datasets' seeded samples,
#: whose full matrices the analyses and Figures 4-5 read (wmd_sample_block jobs).
SAMPLE_DOCUMENTS = config.defaults("wmd", "sample_documents")
SAMPLE_SEED = config.defaults("wmd", "sample_seed")


#: The paper's duplicate pairs and duplicate samples of the datasets whose stand-in is
#: generated (docs/protocol.md, the table of §1). A generated stand-in gets as many, so
#: that its clean variant drops about as many documents as the real one: without them it
#: dropped none, every clean list was its original's, and the clean searches looked
#: nearly free. Real text (20news, amazon) keeps the duplicates it has.
PAPER_DUPLICATES = {
    "bbcsport": (15, 30),
    "twitter": (976, 474),
    "recipe": (48, 66),
    "ohsumed": (1873, 3116),
    "classic": (2588, 600),
    "reuters": (143, 197),
}


#: Methods whose clean search takes the original's pairs (common.smk's
#: VARIANT_FREE_METHODS); WMD-TF-IDF's weights depend on the variant's corpus.
REUSED = ("wmd", "wrd", "wmd-pca5")


def cpu_seconds() -> float:
    """CPU of this process and its finished children: a search with --threads > 1 runs
    its queries in worker processes."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def forecast_search(
    where: Path,
    embeddings_path,
    weighting: str,
    n_shards: int,
    name: str,
    slug: str,
    args,
    variant: str = "original",
    reuse: tuple[Path, Path, Path, Path] | None = None,
) -> dict:
    """The wmd_forecast job's function on the variant prepared in ``where``
    (documents.parquet, splits.parquet), default evaluation settings; its record, with
    the call's process CPU as ``job_cpu_seconds``.
    ``reuse``: (pairs, documents, certificates, splits) files the variant's search takes
    pairs and certificates from, as the clean variant's wmd_forecast gets them
    (``--reuse-pairs``/``--reuse-documents``/``--reuse-certificates``/``--reuse-splits``)."""
    reuse_pairs, reuse_documents, reuse_certificates, reuse_splits = (
        reuse if reuse is not None else (None, None, None, None)
    )
    started = cpu_seconds()
    # WMD's search lists RWMD too in the paper plan (wmd_search_with_rwmd), and its
    # forecast measures that search
    relaxed = slug == "wmd" and "rwmd" in paper_config()["methods"]["builtin"]
    record = forecast.run_forecast(
        where / "documents.parquet",
        where / "splits.parquet",
        embeddings_path,
        weighting,
        None,
        n_shards=n_shards,
        threads=args.threads,
        queries_per_role=args.queries_per_role,
        seed=args.seed,
        checks=args.queries_per_role,
        dataset=name,
        variant=variant,
        method=slug,
        out_path=where / f"forecast-{slug}.json",
        reuse_pairs=reuse_pairs,
        reuse_documents=reuse_documents,
        reuse_certificates=reuse_certificates,
        reuse_splits=reuse_splits,
        relaxed=relaxed,
    )
    # what the wmd_forecast job itself costs (process CPU, every thread): it is in the plan
    record["job_cpu_seconds"] = cpu_seconds() - started
    return record


def prepared(where: Path, embeddings_path, weighting: str):
    """A variant's prepared inputs and the query roles of its search (default evaluation
    settings), with the functions the search and the forecast use."""
    documents = io.read_documents(where / "documents.parquet")
    inputs = solver.prepare(documents, io.read_embeddings(embeddings_path), weighting)
    folds = io.fold_indices(io.read_splits(where / "splits.parquet"), inputs.doc_ids)
    return inputs, query_roles(folds, inputs.empty, None)


def forecast_sample(where: Path, embeddings_path, weighting: str, args) -> np.ndarray:
    """The doc ids of the queries :func:`forecast_search` will sample on the variant in
    ``where``: forecast.sample_queries on the same roles and seed as its ``measure``, so
    the original's pairs for them can be searched before the clean forecast runs
    (the forecast's record, ``sampled_doc_ids``, is checked against them after)."""
    inputs, roles = prepared(where, embeddings_path, weighting)
    sampled = forecast.sample_queries(roles, args.queries_per_role, args.seed, inputs.sizes)
    return inputs.doc_ids[sampled].astype(np.int64)


def original_pairs(
    original: Path,
    embeddings_path,
    weighting: str,
    doc_ids: np.ndarray,
    out: Path,
    out_certificates: Path,
    threads: int,
) -> tuple[int, float]:
    """Search the original variant (in ``original``) for the queries ``doc_ids`` only,
    with the query tasks a search shard gives them, and write the pairs they visit as a
    NEIGHBOUR_PAIRS file and their certificates as a NEIGHBOUR_CERTIFICATES file: the
    part of the original's merged tables that the clean forecast's sampled queries can
    look up. (pairs written, wall seconds)."""
    started = time.perf_counter()
    inputs, roles = prepared(original, embeddings_path, weighting)
    at = np.searchsorted(inputs.doc_ids, doc_ids)
    if np.any(at >= inputs.n) or np.any(inputs.doc_ids[np.minimum(at, inputs.n - 1)] != doc_ids):
        raise SystemExit(f"{original}: a sampled clean query is not an original document")
    tasks = search.query_tasks(roles, inputs.empty, at)
    pairs, certificates = search.search_queries(inputs, tasks, threads)
    io.write_table(pairs, out, schemas.NEIGHBOUR_PAIRS)
    io.write_table(certificates, out_certificates, schemas.NEIGHBOUR_CERTIFICATES)
    return pairs.num_rows, time.perf_counter() - started


def clean_variant(where: Path, name: str, seed: int) -> Path:
    """The stand-in's clean variant in ``where/clean``, made as the workflow makes it:
    the duplicates job's survivors (config ``duplicates.seed``: ``seed``) and the
    select_variant job's documents and splits. Made again every run (it is cheap), so
    it never lags its original."""
    clean = where / "clean"
    duplicates.run_duplicates(
        str(where / "documents.parquet"),
        str(where / "splits.parquet"),
        name,
        seed,
        str(clean / "groups.parquet"),
        str(clean / "summary.parquet"),
        str(clean / "kept.parquet"),
    )
    vocabulary.run_select(
        str(where / "documents.parquet"),
        str(where / "splits.parquet"),
        str(clean / "documents.parquet"),
        str(clean / "splits.parquet"),
        str(clean / "kept.parquet"),
    )
    return clean


def clean_forecast(
    where: Path, clean: Path, removed: int, slug: str, weighting: str, original: dict, args, name
) -> tuple[dict, str, float]:
    """The clean variant's forecast record as the workflow runs its search, how it was
    counted, and the wall seconds of the uncounted helper search (see the module's
    docstring): with the original's pairs of the sampled queries for a method of
    :data:`REUSED`, else its own forecast (the original's when no document was
    removed)."""
    embeddings = embeddings_of(where, slug)
    if slug not in REUSED:
        if removed == 0:
            return original, "same documents: original's", 0.0
        record = forecast_search(
            clean, embeddings, weighting, args.shards, name, slug, args, variant="clean"
        )
        return record, "own (no reuse)", 0.0
    sample = forecast_sample(clean, embeddings, weighting, args)
    reused = clean / f"original-pairs-{slug}.parquet"
    certified = clean / f"original-pairs-{slug}.certificates.parquet"
    n_pairs, helper = original_pairs(
        where, embeddings, weighting, sample, reused, certified, args.threads
    )
    record = forecast_search(
        clean,
        embeddings,
        weighting,
        args.shards,
        name,
        slug,
        args,
        variant="clean",
        reuse=(reused, where / "documents.parquet", certified, where / "splits.parquet"),
    )
    if record["measured"]["sampled_doc_ids"] != sample.tolist():
        raise SystemExit(
            f"{name}/{slug}: the clean forecast sampled other queries than were searched on "
            "the original (forecast.measure no longer samples as forecast_sample does)"
        )
    return record, f"reuse of {n_pairs:,} pairs", helper


# ------------------------------------------------------------------------- stand-ins
def duplicate_group_sizes(pairs: int, samples: int) -> list[int]:
    """Sizes of duplicate groups holding ``samples`` documents in all with about ``pairs``
    unordered pairs: one group of m and the rest pairs, m from m(m-1)/2 + (samples - m)/2
    = pairs (twitter: 474 documents in 217 pairs and a group of 40, 997 pairs for the
    paper's 976). No group for fewer than two samples."""
    if samples < 2:
        return []
    m = round(1 + math.sqrt(max(0, 1 + 2 * pairs - samples)))
    m = min(max(m, 2), samples)
    if (samples - m) % 2:
        m = m + 1 if m < samples else m - 1
    return ([m] if m >= 2 else []) + [2] * ((samples - m) // 2)


def plant_duplicates(bags: list[dict], labels: list[str], sizes: list[int], rng) -> None:
    """Make groups of ``sizes`` distinct random documents duplicates, in place: each
    group's other documents take its first one's words, counts and label."""
    chosen = rng.permutation(len(bags))[: sum(sizes)].tolist()
    start = 0
    for size in sizes:
        first, *others = chosen[start : start + size]
        for doc in others:
            bags[doc], labels[doc] = dict(bags[first]), labels[first]
        start += size


def tables(corpus, bags, labels, subsets, rng) -> tuple[pa.Table, pa.Table, pa.Table]:
    """Documents, splits and 300-d unit embeddings of a stand-in, as the workflow's
    tables (the layout of paper_scale.write_mat, without the .mat file)."""
    names = sorted(set(labels))
    words = [sorted(bag) for bag in bags]
    documents = pa.table(
        {
            "doc_id": pa.array(np.arange(len(bags), dtype=np.int32)),
            "label": pa.array(labels, pa.string()),
            "y": pa.array([names.index(label) for label in labels], pa.int32()),
            "words": pa.array(words, pa.list_(pa.string())),
            "counts": pa.array(
                [[float(bag[w]) for w in ws] for bag, ws in zip(bags, words, strict=True)],
                pa.list_(pa.float64()),
            ),
        }
    ).cast(schemas.DOCUMENTS)
    n = len(bags)
    if corpus.layout == "five-fold":
        n_test = n - corpus.train if n == corpus.documents else max(1, round(n * 0.3))
        rows = []
        for fold in range(5):
            test = set(rng.permutation(n)[:n_test].tolist())
            rows += [(fold, d, "test" if d in test else "train") for d in range(n)]
    else:
        rows = [(0, d, subsets[d]) for d in range(n)]
    fold, doc_id, subset = zip(*rows, strict=True)
    splits = pa.table(
        {
            "fold": pa.array(fold, pa.int16()),
            "doc_id": pa.array(doc_id, pa.int32()),
            "subset": pa.array(subset, pa.string()),
        }
    ).cast(schemas.SPLITS)
    vocabulary = sorted({w for bag in bags for w in bag})
    vectors = rng.standard_normal((len(vocabulary), paper_scale.DIM))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    embeddings = embeddings_table(vocabulary, vectors, np.ones(len(vocabulary)))
    return documents, splits, embeddings


def standin(name: str, scale: float, data: Path, workdir: Path, seed: int) -> tuple[Path, str]:
    """The stand-in's documents, splits, embeddings and 5-d PCA files in a directory
    (kept for a rerun with the same options); (directory, source)."""
    corpus = paper_scale.scaled(paper_scale.PAPER[name], scale)
    real = name in paper_scale.REAL_TEXT and (data / paper_scale.REAL_TEXT[name]).exists()
    source = f"real text ({paper_scale.REAL_TEXT[name]})" if real else "generated"
    # "dup": the generated stand-ins carry the paper's duplicates (a workdir made before
    # they did is not reused)
    where = workdir / f"{name}-{scale}-{seed}-dup"
    if not (where / "pca5.parquet").exists():
        rng = np.random.default_rng(seed)
        if real:
            bags, labels, subsets = paper_scale.real_documents(
                corpus, data / paper_scale.REAL_TEXT[name], rng
            )
        else:
            bags, labels, subsets = paper_scale.generated_documents(corpus, rng)
            pairs, samples = PAPER_DUPLICATES[name]
            sizes = duplicate_group_sizes(round(pairs * scale), round(samples * scale))
            plant_duplicates(bags, labels, sizes, rng)
        documents, splits, embeddings = tables(corpus, bags, labels, subsets, rng)
        io.write_table(documents, where / "documents.parquet", schemas.DOCUMENTS)
        io.write_table(splits, where / "splits.parquet", schemas.SPLITS)
        io.write_table(embeddings, where / "embeddings.parquet")
        io.write_table(project_embeddings(embeddings, documents, 5), where / "pca5.parquet")
    return where, source


def embeddings_of(where: Path, slug: str) -> Path:
    return where / ("pca5.parquet" if slug.startswith("wmd-pca") else "embeddings.parquet")


def full_pairs(splits: pa.Table, n: int) -> int:
    """Pairs the full mode solves: n(n-1)/2; one fold: without test x test."""
    folds = set(splits.column("fold").to_pylist())
    if len(folds) > 1:
        return n * (n - 1) // 2
    train = int(np.sum(np.asarray(splits.column("subset").to_pylist()) == "train"))
    return train * n - train * (train + 1) // 2


def sample_pairs(where: Path, scale: float) -> int:
    """Pairs a sample matrix of the stand-in solves: the workflow's own sample
    (:func:`wmdeval.cleaning.vocabulary.run_sample`, config/paper.yaml's size and seed,
    scaled with the stand-in) counted as the full mode counts a matrix's pairs."""
    out = where / "sample"
    out.mkdir(exist_ok=True)
    size = max(int(round(SAMPLE_DOCUMENTS * scale)), 2)
    vocabulary.run_sample(
        str(where / "documents.parquet"),
        str(where / "splits.parquet"),
        size,
        SAMPLE_SEED,
        str(out / "documents.parquet"),
        str(out / "splits.parquet"),
    )
    splits = io.read_splits(out / "splits.parquet")
    return full_pairs(splits, io.read_documents(out / "documents.parquet").num_rows)


def pair_seconds(inputs: solver.WmdInputs, n_pairs: int, seed: int) -> float:
    """Mean CPU seconds of one exact solve (the full mode's solver call) over ``n_pairs``
    random pairs of non-empty documents, one thread."""
    rng = np.random.default_rng(seed)
    filled = np.flatnonzero(~inputs.empty)
    a = rng.choice(filled, n_pairs)
    b = rng.choice(filled, n_pairs)
    keep = a != b
    with solver._blas().limit(limits=1, user_api="blas"):
        # one solve first, untimed: the process loads the solver's compiled kernels once
        # (a job pays that once too, not per pair)
        solver.wmd_pair(inputs, int(a[keep][0]), int(b[keep][0]))
        t0 = time.thread_time()
        for i, j in zip(a[keep].tolist(), b[keep].tolist(), strict=True):
            solver.wmd_pair(inputs, i, j)
        return (time.thread_time() - t0) / max(int(keep.sum()), 1)


# ------------------------------------------------------------- the plan's other jobs
#: The workflow's command, as a rule's shell runs it (the environment this runs in).
WMDEVAL = str(Path(sys.executable).with_name("wmdeval"))
#: config/paper.yaml, validated as the workflow validates it (its evaluation and
#: analyses settings, its methods).
PAPER_CONFIG = Path(__file__).resolve().parents[1] / "config" / "paper.yaml"


def paper_config() -> dict:
    return config.validate(yaml.safe_load(PAPER_CONFIG.read_text()), str(PAPER_CONFIG))


def wmdeval_job(arguments: list[str], cwd: Path) -> float:
    """Run ``wmdeval ARGUMENTS`` as a rule's shell runs it; its process CPU (user and
    system, every thread), from the children's resource usage."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    run = subprocess.run([WMDEVAL, *arguments], cwd=cwd, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"paper_cost: wmdeval {arguments[0]} failed:\n{run.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def dense_matrices(
    variant: Path, embeddings: Path, out: Path, threads: int, slugs=EMBEDDING_MATRICES
) -> tuple[dict, float]:
    """The variant's embedding_matrix jobs (``slugs``, by default WCD, RWMD and the
    mean-vector cosine; config wmd.threads threads): ({slug: matrix path}, CPU seconds)."""
    paths, cpu = {}, 0.0
    for slug in slugs:
        paths[slug] = out / f"{slug}.parquet"
        cpu += wmdeval_job(
            [
                "embedding-matrix",
                "--documents",
                str(variant / "documents.parquet"),
                "--embeddings",
                str(embeddings),
                "--method",
                slug,
                "--threads",
                str(threads),
                "--out",
                str(paths[slug]),
            ],
            out,
        )
    return paths, cpu


def other_jobs(
    where: Path, clean: Path, name: str, mode: str, scale: float, settings: dict, threads: int
) -> dict[str, float]:
    """CPU seconds of the plan's jobs besides the transport solves, measured at the
    stand-in's size on both variants (each a real ``wmdeval`` run, as its rule runs it):

    * ``dense``: the embedding_matrix jobs per variant: WCD, RWMD and the cosine in full
      mode; in knn mode WCD and the cosine, and RWMD's matrix of the sample alone
      (sample_embedding_matrix: its lists come from WMD's search, whose forecast counts them);
    * ``evaluate``: the evaluate job per variant with the 12 baselines and the dense
      methods (the transport methods' and, in knn mode, RWMD's neighbour lists need the
      searches, so their kNN tuning is not in it);
    * ``analyses``: the analyses job per variant, on the variant's seeded sample in knn
      mode (the clean one cut from the original's, as sample_variant cuts it) or on its
      documents in full mode, with the sample's RWMD matrix standing in for each transport
      method's (those need the solves; assumed, not checked, to cost about the same);
      a sample's WCD and cosine matrices here are computed for it, not counted (the
      workflow cuts them from the full ones); in full mode they are the variant's own.
    """
    evaluation = json.dumps(settings["evaluation"], sort_keys=True)
    enabled = {a: s for a, s in settings["analyses"].items() if s.get("enabled")}
    analyses = json.dumps(
        {a: {k: v for k, v in s.items() if k != "enabled"} for a, s in enabled.items()},
        sort_keys=True,
    )
    analysis_slugs = [m.slug for m in configured_methods(settings["methods"]) if m.is_wmd]
    sample_size = max(int(round(settings["wmd"]["sample_documents"] * scale)), 2)
    embeddings = where / "embeddings.parquet"
    cpu = {"dense": 0.0, "evaluate": 0.0, "analyses": 0.0}
    for variant_name, variant in (("original", where), ("clean", clean)):
        out = variant / "other-jobs"
        out.mkdir(exist_ok=True)
        # knn mode: RWMD's lists come from WMD's search, no dense RWMD matrix
        full_slugs = [s for s in EMBEDDING_MATRICES if mode == "full" or s != "rwmd"]
        matrices, seconds = dense_matrices(variant, embeddings, out, threads, full_slugs)
        cpu["dense"] += seconds
        cpu["evaluate"] += wmdeval_job(
            paper_scale.evaluate_arguments(
                str(variant),
                {slug: str(path) for slug, path in matrices.items()},
                evaluation,
                name,
                variant_name,
                str(out),
            ),
            out,
        )
        # full mode: the analyses read the variant's own dense matrices, just computed
        analysed = variant
        if mode == "knn":
            for path in matrices.values():
                path.unlink()  # 2.8 GB each for 20news
            analysed = out / "sample"
            vocabulary.run_sample(
                str(variant / "documents.parquet"),
                str(variant / "splits.parquet"),
                sample_size,
                settings["wmd"]["sample_seed"],
                str(analysed / "documents.parquet"),
                str(analysed / "splits.parquet"),
                within_path=None
                if variant_name == "original"
                else str(where / "other-jobs" / "sample" / "documents.parquet"),
            )
            matrices, _ = dense_matrices(analysed, embeddings, analysed, threads, full_slugs)
            relaxed, seconds = dense_matrices(analysed, embeddings, analysed, threads, ["rwmd"])
            cpu["dense"] += seconds  # sample_embedding_matrix
            matrices.update(relaxed)
        wmd = {slug: str(matrices.get(slug, matrices["rwmd"])) for slug in analysis_slugs}
        outputs = [f"--out={a}={out / f'{a}.parquet'}" for a in enabled]
        cpu["analyses"] += wmdeval_job(
            [
                "analyses",
                "--documents",
                str(analysed / "documents.parquet"),
                "--splits",
                str(analysed / "splits.parquet"),
                "--wmd",
                json.dumps(wmd),
                "--dataset",
                name,
                "--variant",
                variant_name,
                "--settings",
                analyses,
                *outputs,
                "--seed",
                str(settings["report"]["seed"]),
            ],
            out,
        )
        for path in matrices.values():
            path.unlink()
    return cpu


def disk_gb(documents: int, mode: str) -> float:
    """An estimate of the disk a paper dataset's stored matrices take, in GB: n x n float64
    (8 bytes a distance), both variants counted at the original's size. knn mode stores
    WCD's and the cosine's matrix per variant (4); full mode also every solved transport
    matrix (WMD, WRD and 5-d PCA WMD once, WMD-TF-IDF per variant), the clean variant's
    WMD, WRD and PCA WMD cut from them, RWMD's per variant (14 in all), and the solved
    blocks (about 12 bytes a pair, 5 matrices). Inputs, downloads and the small tables
    (neighbour lists, samples, scores) are not counted."""
    matrix = 8 * documents**2
    if mode == "knn":
        return round(4 * matrix / 1e9, 2)
    pairs = documents * (documents - 1) // 2
    return round((14 * matrix + 5 * 12 * pairs) / 1e9, 2)


def hours(value: float) -> str:
    """CPU hours for the tables: two decimals, or two significant digits below 0.1 h (a
    --quick run's stand-ins cost seconds, which two decimals would print as 0.00)."""
    if value >= 0.1 or value <= 0:
        return f"{value:.2f}"
    return f"{value:.{1 - int(np.floor(np.log10(value)))}f}"


def plan(args) -> None:
    scale = 0.05 if args.quick else 1.0
    workdir = args.workdir.resolve()
    print(
        f"paper_cost: config/paper.yaml's transport solves, stand-ins at scale {scale}, "
        f"{paper_scale.DIM}-d unit vectors, {args.threads} thread(s), workdir {workdir}",
        flush=True,
    )
    print(
        "| dataset | source | docs (clean) | words/doc | method | full: pairs | full: ms/pair | "
        "full CPU h | knn: queries | knn: solves/query | knn: shared | "
        "knn CPU h original | clean: solves (reused)/query | knn CPU h clean | clean counted | "
        "knn: sample CPU h |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    totals = {"full": 0.0, "knn": 0.0, "plan": 0.0}
    per_dataset = []
    others = {}
    settings = paper_config()
    for name in args.datasets:
        started = time.perf_counter()
        where, source = standin(name, scale, args.data, workdir, args.seed)
        documents = io.read_documents(where / "documents.parquet")
        splits = io.read_splits(where / "splits.parquet")
        n = documents.num_rows
        # the duplicates and select_variant jobs (in this process, one thread)
        cleaning_started = time.process_time()
        clean = clean_variant(where, name, args.duplicates_seed)
        cleaning_s = time.process_time() - cleaning_started
        removed = n - io.read_documents(clean / "documents.parquet").num_rows
        pairs = full_pairs(splits, n)
        mode = "knn" if n >= AUTO_MIN_DOCUMENTS * scale else "full"
        in_sample = sample_pairs(where, scale)
        full_h = original_h = clean_h = sample_h = forecast_h = helper_s = 0.0
        for slug, weighting, matrices in METHODS:
            embeddings = io.read_embeddings(embeddings_of(where, slug))
            inputs = solver.prepare(documents, embeddings, weighting)
            seconds = pair_seconds(inputs, args.pairs, args.seed)
            full = matrices * pairs * seconds
            # the sample's matrices: the original's of every method, and the clean
            # variant's WMD-TF-IDF (its others are cut from the original's): `matrices`
            sampled = matrices * in_sample * seconds
            record = forecast_search(
                where, embeddings_of(where, slug), weighting, args.shards, name, slug, args
            )
            cleaned, counted, helper = clean_forecast(
                where, clean, removed, slug, weighting, record, args, name
            )
            helper_s += helper
            knn_original = record["forecast"]["cpu_seconds"]
            knn_clean = cleaned["forecast"]["cpu_seconds"]
            m, c = record["measured"], cleaned["measured"]
            print(
                f"| {name} | {source} | {n:,} ({n - removed:,}) | {inputs.sizes.mean():.1f} | "
                f"{slug} | {matrices} x {pairs:,} | {1e3 * seconds:.3f} | {hours(full / 3600)} | "
                f"{m['queries']:,} | {m['solves_per_query']:.1f} | "
                f"{100 * m['sharing']['shared_share']:.1f} % | {hours(knn_original / 3600)} | "
                f"{c['solves_per_query']:.1f} ({c['reused'] / max(c['sampled_queries'], 1):.1f})"
                f" | {hours(knn_clean / 3600)} | {counted} | "
                f"{matrices} x {in_sample:,}: {hours(sampled / 3600)} |",
                flush=True,
            )
            full_h += full / 3600
            sample_h += sampled / 3600
            # the clean variant's wmd_forecast job runs even when it reads the original's
            # record here (same documents): it costs what the original's did
            forecast_h += (record["job_cpu_seconds"] + cleaned["job_cpu_seconds"]) / 3600
            original_h += knn_original / 3600
            clean_h += knn_clean / 3600
        knn_h = original_h + clean_h + sample_h + forecast_h
        if args.other_jobs:
            other = other_jobs(where, clean, name, mode, scale, settings, args.threads)
            other["cleaning"] = cleaning_s
            others[name] = {kind: seconds / 3600 for kind, seconds in other.items()}
            print(
                f"|   {name}, the other jobs of both variants: "
                + ", ".join(f"{kind} {hours(h)}" for kind, h in others[name].items())
                + " CPU-h |",
                flush=True,
            )
        totals["full"] += full_h
        totals["knn"] += knn_h
        totals["plan"] += knn_h if mode == "knn" else full_h
        per_dataset.append((name, source, mode, full_h, original_h, clean_h, sample_h, forecast_h))
        print(
            f"|   {name}: {source}, {n:,} documents ({removed:,} duplicate(s) removed in the "
            f"clean variant), all methods: full {hours(full_h)} CPU-h, knn {hours(original_h)} "
            f"original + {hours(clean_h)} clean + {hours(sample_h)} sample + "
            f"{hours(forecast_h)} forecast jobs CPU-h "
            f"({time.perf_counter() - started:.0f} s, "
            f"{helper_s:.0f} s of them the uncounted original searches of the clean "
            "samples) |",
            flush=True,
        )
    print()
    print(
        "| dataset | source | mode (paper.yaml) | full CPU h | knn CPU h original | "
        "knn CPU h clean | knn CPU h samples | knn CPU h forecast jobs | knn CPU h | "
        "plan CPU h |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, source, mode, full_h, original_h, clean_h, sample_h, forecast_h in per_dataset:
        knn_h = original_h + clean_h + sample_h + forecast_h
        chosen = knn_h if mode == "knn" else full_h
        print(
            f"| {name} | {source} | {mode} | {hours(full_h)} | {hours(original_h)} | "
            f"{hours(clean_h)} | {hours(sample_h)} | {hours(forecast_h)} | {hours(knn_h)} | "
            f"{hours(chosen)} |"
        )
    print(
        f"| **all** | | | **{hours(totals['full'])}** | "
        + " | ".join(f"**{hours(sum(row[k] for row in per_dataset))}**" for k in (4, 5, 6, 7))
        + f" | **{hours(totals['knn'])}** | **{hours(totals['plan'])}** |"
    )
    print(
        "knn: each variant's forecast; the clean variant is the workflow's duplicate "
        "removal of the stand-in, its WMD, WRD and PCA WMD forecast with the original's "
        "pairs and certificates of its sampled queries reused (the real run reuses more, "
        "see --check), its WMD-TF-IDF forecast its own (the original's if no document was "
        "removed); samples: the full matrices of the seeded sample of "
        f"{SAMPLE_DOCUMENTS:,} documents the analyses and Figures 4-5 read in knn mode "
        "(every method's on the original variant, WMD-TF-IDF's again on the clean one), "
        "their pairs times the measured time of one pair; forecast jobs: the process CPU "
        "of each variant's wmd_forecast function here; full: every solved matrix "
        "(WMD-TF-IDF per variant, the others once), which the analyses read directly; "
        "CPU of this machine, shared with other work. The transport work only: the "
        "other jobs follow"
    )
    if not others:
        return
    kinds = ("cleaning", "dense", "evaluate", "analyses")
    print()
    print(
        "The whole plan (config/paper.yaml, both variants): the transport work above in "
        "the dataset's mode, and the other jobs measured here at the stand-in's size: "
        "cleaning (duplicates and select_variant), dense (WCD, RWMD and cosine matrices, "
        "embedding_matrix; in knn mode RWMD's of the sample alone, its lists from WMD's "
        "search), evaluate (the 12 baselines and the dense methods) and the "
        "analyses (on the knn datasets' samples; the transport methods' matrices stood in "
        "by RWMD's)"
    )
    print(
        "| dataset | transport CPU h | "
        + " | ".join(f"{k} CPU h" for k in kinds)
        + " | plan CPU h |"
    )
    print("|---|---|" + "---|" * len(kinds) + "---|")
    whole = {k: 0.0 for k in ("transport", *kinds, "plan")}
    rows = []
    for name, _, mode, full_h, original_h, clean_h, sample_h, forecast_h in per_dataset:
        transport = original_h + clean_h + sample_h + forecast_h if mode == "knn" else full_h
        row = {"transport": transport, **others[name]}
        row["plan"] = sum(row.values())
        for key, value in row.items():
            whole[key] += value
        print(f"| {name} | " + " | ".join(hours(row[k]) for k in whole) + " |")
        rows.append([name, mode, *(results_file.cell(hours(row[k])) for k in whole)])
    print("| **all** | " + " | ".join(f"**{hours(whole[k])}**" for k in whole) + " |")
    rows.append(["all", "", *(results_file.cell(hours(whole[k])) for k in whole)])
    header = ["dataset", "mode", *(f"{k} CPU h" for k in whole)]
    summary = [
        [
            name,
            mode,
            results_file.cell(hours(plan_h)),
            disk_gb(paper_scale.PAPER[name].documents, mode),
        ]
        for (name, mode, *_, plan_h) in rows[:-1]
    ]
    figures = {
        "threads": args.threads,
        "plan_cpu_hours": round(whole["plan"], 2),
        "transport_cpu_hours": round(whole["transport"], 2),
        "plan": {"header": header, "rows": rows},
        "summary": {"header": ["dataset", "mode", "plan CPU h", "disk GB"], "rows": summary},
    }
    results_file.write(args.record, "paper_cost", figures)
    print(
        "Not in it (not measured at this size; README 'Rehearsal at the paper's size' "
        "times most at a minute or less a job): ingest, filter_oov, project_pca, the "
        "samples' dense matrices cut from the full ones, the neighbour tables' merge, "
        "evaluate's kNN tuning of the transport methods and RWMD from their neighbour "
        "lists, and "
        "the reports (tables, figures, significance)"
    )
    print(f"paper_cost: the whole plan {whole['plan']:.2f} CPU-h of this machine")


# ------------------------------------------------------------------------- the check
def check_corpus(name: str, documents, splits, embeddings_path: Path, args) -> tuple[float, float]:
    """Forecast and measured CPU of one method's whole search (WMD) on a corpus."""
    where = args.workdir.resolve() / f"check-{name}-{documents.num_rows}"
    io.write_table(documents, where / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, where / "splits.parquet", schemas.SPLITS)
    started = time.perf_counter()
    record = forecast_search(where, embeddings_path, "bow", args.check_shards, name, "wmd", args)
    forecast_wall = time.perf_counter() - started
    wall0 = time.perf_counter()
    solves, shard_cpu = searched_shards(where, embeddings_path, args)
    measured_cpu = sum(shard_cpu)
    measured_wall = time.perf_counter() - wall0
    m, f = record["measured"], record["forecast"]
    # the same forecast without the shared-pairs correction
    saved_share = (1 - m["bounds_share"]) * m["sharing"]["shared_share"] / 2
    uncorrected = f["cpu_seconds"] + m["queries"] * m["cpu_seconds_per_query"] * saved_share
    print(
        f"  {name}: {documents.num_rows:,} documents, {m['queries']:,} queries, "
        f"{args.check_shards} shard(s), {args.threads} thread(s); forecast from "
        f"{m['sampled_queries']} sampled queries in {forecast_wall:.0f} s wall\n"
        f"    solves:   forecast {f['solves']:,.0f}, measured {solves:,} "
        f"(ratio {f['solves'] / max(solves, 1):.2f})\n"
        f"    CPU s:    forecast {f['cpu_seconds']:,.0f}, measured {measured_cpu:,.0f} "
        f"(ratio {f['cpu_seconds'] / measured_cpu:.2f}); without the shared-pairs "
        f"correction {uncorrected:,.0f} (ratio {uncorrected / measured_cpu:.2f}); "
        f"shared {100 * m['sharing']['shared_share']:.1f} % of the sample's solved pairs "
        f"({m['sharing']['eligible_pairs']} eligible, {m['sharing']['visited_both_ways']} of "
        f"{m['sharing']['checked_pairs']} checked visited both ways)\n"
        f"    per shard: forecast "
        + ", ".join(f"{s['cpu_seconds']:.0f}" for s in f["shards"])
        + " s CPU, measured "
        + ", ".join(f"{c:.0f}" for c in shard_cpu)
        + f" s; measured wall {measured_wall:.0f} s, declared runtime "
        + ", ".join(str(s["runtime"]) for s in f["shards"])
        + " min",
        flush=True,
    )
    args.check_rows.append(
        [name, "original", round(f["solves"]), solves]
        + [round(f["cpu_seconds"]), round(measured_cpu), round(f["cpu_seconds"] / measured_cpu, 2)]
    )
    check_clean(name, where, documents.num_rows, embeddings_path, record, args)
    return f["cpu_seconds"], measured_cpu


def searched_shards(
    where: Path, embeddings_path: Path, args, reuse: tuple = ()
) -> tuple[int, list[float]]:
    """Every ``--check-shards`` shard of the WMD search of the variant in ``where``, each
    searched with ``run_search`` (the wmd_search job's function) into ``where``'s
    pairs-<k> and certificates-<k> files, ``reuse``: its four reuse files, if any.
    Returns (exact solves, process CPU seconds per shard)."""
    solves, shard_cpu = 0, []
    for shard in range(args.check_shards):
        c0 = cpu_seconds()
        stats = search.run_search(
            where / "documents.parquet",
            where / "splits.parquet",
            embeddings_path,
            "bow",
            None,
            shard,
            args.check_shards,
            args.threads,
            where / f"pairs-{shard}.parquet",
            where / f"certificates-{shard}.parquet",
            *reuse,
        )
        shard_cpu.append(cpu_seconds() - c0)
        solves += stats.solves
    return solves, shard_cpu


def check_clean(
    name: str, where: Path, n: int, embeddings_path: Path, original: dict, args
) -> None:
    """The clean variant's forecast, made as :func:`plan` makes it (the original's pairs
    and certificates of the sampled queries alone), against its whole search as the
    workflow runs it (the original's merged shards reused). Printed only; the check's
    verdict is the original's."""
    pairs = [where / f"pairs-{k}.parquet" for k in range(args.check_shards)]
    certificates = [where / f"certificates-{k}.parquet" for k in range(args.check_shards)]
    merged = (where / "pairs.parquet", where / "certificates.parquet")
    search.run_merge(where / "documents.parquet", pairs, certificates, *merged)
    clean = clean_variant(where, name, args.duplicates_seed)
    removed = n - io.read_documents(clean / "documents.parquet").num_rows
    if not (where / "embeddings.parquet").exists():  # where clean_forecast looks for them
        (where / "embeddings.parquet").symlink_to(embeddings_path.resolve())
    record, _, _ = clean_forecast(where, clean, removed, "wmd", "bow", original, args, name)
    reuse = (merged[0], where / "documents.parquet", merged[1], where / "splits.parquet")
    solves, shard_cpu = searched_shards(clean, embeddings_path, args, reuse)
    measured_cpu = sum(shard_cpu)
    f = record["forecast"]
    print(
        f"    clean variant ({removed:,} duplicate(s) dropped), the original's merged pairs "
        f"and certificates reused: solves forecast {f['solves']:,.0f}, measured {solves:,}; "
        f"CPU s forecast {f['cpu_seconds']:,.0f}, measured {measured_cpu:,.0f} "
        f"(ratio {f['cpu_seconds'] / max(measured_cpu, 1e-9):.2f})",
        flush=True,
    )
    args.check_rows.append(
        [name, "clean", round(f["solves"]), solves, round(f["cpu_seconds"]), round(measured_cpu)]
        + [round(f["cpu_seconds"] / max(measured_cpu, 1e-9), 2)]
    )


def check(args) -> None:
    print(
        f"paper_cost --check: forecast against a measured whole search (WMD), "
        f"{args.check_documents:,} documents per corpus",
        flush=True,
    )
    ratios = []
    args.check_rows = []
    documents, splits, _ = knn_pruning.prepare_data(args.amazon_data, args.amazon_workdir)
    docs, folds = knn_pruning.sample(documents, splits, args.check_documents, seed=args.seed)
    emb = args.amazon_workdir / knn_pruning.TARGETS[2]
    ratios.append(check_corpus("amazon", docs, folds, emb, args))
    documents, splits, _ = knn_pruning.prepare_news(args.news_data, args.news_workdir)
    docs, folds = knn_pruning.sample(documents, splits, args.check_documents, seed=args.seed)
    emb = args.news_workdir / knn_pruning.NEWS_TARGETS[2]
    ratios.append(check_corpus("20news", docs, folds, emb, args))
    within = all(0.75 <= f / m <= 1.25 for f, m in ratios)
    print(
        "paper_cost --check: forecast / measured CPU "
        + ", ".join(f"{f / m:.2f}" for f, m in ratios)
        + f"; within 25 %: {'yes' if within else 'no'}"
    )
    header = ["corpus", "variant", "solves forecast", "solves measured"]
    header += ["CPU s forecast", "CPU s measured", "ratio"]
    figures = {
        "documents": args.check_documents,
        "shards": args.check_shards,
        "threads": args.threads,
        "table": {"header": header, "rows": args.check_rows},
    }
    results_file.write(args.record, "paper_cost_check", figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="stand-ins at 5 %% of their size")
    parser.add_argument(
        "--datasets", nargs="+", default=list(paper_scale.PAPER), choices=list(paper_scale.PAPER)
    )
    parser.add_argument("--data", type=Path, default=paper_scale.DATA)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "paper-cost")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--shards", type=int, default=1, help="wmd.search_shards (paper: 1)")
    parser.add_argument("--queries-per-role", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=300, help="pairs timed per method")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--duplicates-seed",
        type=int,
        default=0,
        help="the clean variant's survivors (config duplicates.seed; paper: 0)",
    )
    parser.add_argument(
        "--no-other-jobs",
        dest="other_jobs",
        action="store_false",
        help="the transport work only (not the dense matrices, evaluate and analyses)",
    )
    parser.add_argument("--check", action="store_true", help="forecast against measured")
    parser.add_argument("--check-documents", type=int, default=2000)
    parser.add_argument("--check-shards", type=int, default=2)
    parser.add_argument("--amazon-data", type=Path, default=knn_pruning.DATA)
    parser.add_argument(
        "--amazon-workdir", type=Path, default=Path(tempfile.gettempdir()) / "knn-bench"
    )
    parser.add_argument("--news-data", type=Path, default=knn_pruning.NEWS)
    parser.add_argument(
        "--news-workdir", type=Path, default=Path(tempfile.gettempdir()) / "knn-news"
    )
    results_file.add_argument(parser, "paper_cost")
    args = parser.parse_args()
    if args.check and args.record == results_file.RESULTS / "paper_cost.json":
        args.record = results_file.RESULTS / "paper_cost_check.json"  # the check's own file
    for option in ("seed", "duplicates_seed"):
        if getattr(args, option) < 0:
            parser.error(f"--{option.replace('_', '-')} must be >= 0")
    if args.check:
        check(args)
    else:
        plan(args)


if __name__ == "__main__":
    main()
