"""What config/paper.yaml's transport solves cost, in both WMD modes, and is the forecast right?

Default: for each paper dataset, a stand-in of its size, layout, classes, vocabulary,
distinct words per document and 300-d unit vectors, made by benchmarks/paper_scale.py's
generators (20news and amazon are real text from ``../shared/data``, the others
generated; the output says which). Per transport method of the paper plan (WMD,
WMD-TF-IDF, WRD, WMD on 5-d PCA vectors):

* **full**: the pairs the full mode solves (the upper triangle; one-fold datasets
  without test x test) for every solved matrix (WMD, WRD and PCA once, on the original
  documents; WMD-TF-IDF per variant) times the measured time of one pair at the
  dataset's words per document (``--pairs`` random pairs, one thread);
* **knn**: the forecast of the ``wmd_forecast`` rule's function
  (:func:`wmdeval.planning.forecast.run_forecast`, ``--queries-per-role`` sampled
  queries of each role) for the original variant, counted twice: the clean variant of a
  stand-in loses (almost) no document, since a stand-in has (almost) no duplicates.

It prints per dataset and method both CPU estimates, the mode config/paper.yaml gives the
dataset (auto: knn from 2,000 documents), and the totals. ``--quick``: every stand-in at
5 % of its documents (a smoke run).

``--check``: the forecast against a measured run on two real-text corpora (prepared by
benchmarks/knn_pruning.py's workflow steps): ``--check-documents`` seeded amazon
reviews and as many 20 Newsgroups posts (first 500 words), WMD, ``--check-shards``
shards in ``--threads`` threads: every shard searched with ``run_search`` (the
wmd_search job's function) and its process CPU measured, against the forecast's CPU,
with and without the shared-pairs correction.

    python benchmarks/paper_cost.py [--quick] [--datasets 20news ...] [--threads 2]
    python benchmarks/paper_cost.py --check [--check-documents 2000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))

import knn_pruning  # noqa: E402  (the check corpora's preparation)
import paper_scale  # noqa: E402  (the stand-ins' generators)

from wmdeval.core import io, schemas  # noqa: E402
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


def forecast_search(
    where: Path, embeddings_path, weighting: str, n_shards: int, name: str, slug: str, args
) -> dict:
    """The wmd_forecast job's function on the original variant prepared in ``where``
    (documents.parquet, splits.parquet), default evaluation settings; its record."""
    return forecast.run_forecast(
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
        variant="original",
        method=slug,
        out_path=where / f"forecast-{slug}.json",
    )


# ------------------------------------------------------------------------- stand-ins
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
    where = workdir / f"{name}-{scale}-{seed}"
    if not (where / "pca5.parquet").exists():
        rng = np.random.default_rng(seed)
        if real:
            bags, labels, subsets = paper_scale.real_documents(
                corpus, data / paper_scale.REAL_TEXT[name], rng
            )
        else:
            bags, labels, subsets = paper_scale.generated_documents(corpus, rng)
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


def pair_seconds(inputs: solver.WmdInputs, n_pairs: int, seed: int) -> float:
    """Mean CPU seconds of one exact solve (the full mode's solver call) over ``n_pairs``
    random pairs of non-empty documents, one thread."""
    rng = np.random.default_rng(seed)
    filled = np.flatnonzero(~inputs.empty)
    a = rng.choice(filled, n_pairs)
    b = rng.choice(filled, n_pairs)
    keep = a != b
    with solver._blas().limit(limits=1, user_api="blas"):
        t0 = time.thread_time()
        for i, j in zip(a[keep].tolist(), b[keep].tolist(), strict=True):
            solver.wmd_pair(inputs, i, j)
        return (time.thread_time() - t0) / max(int(keep.sum()), 1)


def plan(args) -> None:
    scale = 0.05 if args.quick else 1.0
    workdir = args.workdir.resolve()
    print(
        f"paper_cost: config/paper.yaml's transport solves, stand-ins at scale {scale}, "
        f"{paper_scale.DIM}-d unit vectors, {args.threads} thread(s), workdir {workdir}",
        flush=True,
    )
    print(
        "| dataset | source | docs | words/doc | method | full: pairs | full: ms/pair | "
        "full CPU h | knn: queries | knn: solves/query | knn: shared | knn CPU h (forecast) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    totals = {"full": 0.0, "knn": 0.0, "plan": 0.0}
    per_dataset = []
    for name in args.datasets:
        started = time.perf_counter()
        where, source = standin(name, scale, args.data, workdir, args.seed)
        documents = io.read_documents(where / "documents.parquet")
        splits = io.read_splits(where / "splits.parquet")
        n = documents.num_rows
        pairs = full_pairs(splits, n)
        mode = "knn" if n >= AUTO_MIN_DOCUMENTS * scale else "full"
        full_h = knn_h = 0.0
        for slug, weighting, matrices in METHODS:
            embeddings = io.read_embeddings(embeddings_of(where, slug))
            inputs = solver.prepare(documents, embeddings, weighting)
            seconds = pair_seconds(inputs, args.pairs, args.seed)
            full = matrices * pairs * seconds
            record = forecast_search(
                where, embeddings_of(where, slug), weighting, args.shards, name, slug, args
            )
            knn = 2 * record["forecast"]["cpu_seconds"]  # original and clean
            m = record["measured"]
            print(
                f"| {name} | {source} | {n:,} | {inputs.sizes.mean():.1f} | {slug} | "
                f"{matrices} x {pairs:,} | {1e3 * seconds:.3f} | {full / 3600:.2f} | "
                f"{m['queries']:,} | {m['solves_per_query']:.1f} | "
                f"{100 * m['sharing']['shared_share']:.1f} % | {knn / 3600:.2f} |",
                flush=True,
            )
            full_h += full / 3600
            knn_h += knn / 3600
        totals["full"] += full_h
        totals["knn"] += knn_h
        totals["plan"] += knn_h if mode == "knn" else full_h
        per_dataset.append((name, source, mode, full_h, knn_h))
        print(
            f"|   {name}: {source}, {n:,} documents, all methods: full {full_h:.2f} CPU-h, "
            f"knn {knn_h:.2f} CPU-h ({time.perf_counter() - started:.0f} s) |",
            flush=True,
        )
    print()
    print("| dataset | source | mode (paper.yaml) | full CPU h | knn CPU h | plan CPU h |")
    print("|---|---|---|---|---|---|")
    for name, source, mode, full_h, knn_h in per_dataset:
        chosen = knn_h if mode == "knn" else full_h
        print(f"| {name} | {source} | {mode} | {full_h:.2f} | {knn_h:.2f} | {chosen:.2f} |")
    print(
        f"| **all** | | | **{totals['full']:.1f}** | **{totals['knn']:.1f}** | "
        f"**{totals['plan']:.1f}** |"
    )
    print(
        "knn: the forecast of the original variant counted for both variants; full: every "
        "solved matrix (WMD-TF-IDF per variant, the others once); CPU of this machine, "
        "shared with other work"
    )


# ------------------------------------------------------------------------- the check
def check_corpus(name: str, documents, splits, embeddings_path: Path, args) -> tuple[float, float]:
    """Forecast and measured CPU of one method's whole search (WMD) on a corpus."""
    where = args.workdir.resolve() / f"check-{name}-{documents.num_rows}"
    io.write_table(documents, where / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, where / "splits.parquet", schemas.SPLITS)
    started = time.perf_counter()
    record = forecast_search(where, embeddings_path, "bow", args.check_shards, name, "wmd", args)
    forecast_wall = time.perf_counter() - started
    solves, cpu0, wall0 = 0, time.process_time(), time.perf_counter()
    shard_cpu = []
    for shard in range(args.check_shards):
        c0 = time.process_time()
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
        )
        shard_cpu.append(time.process_time() - c0)
        solves += stats.solves
    measured_cpu = time.process_time() - cpu0
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
    return f["cpu_seconds"], measured_cpu


def check(args) -> None:
    print(
        f"paper_cost --check: forecast against a measured whole search (WMD), "
        f"{args.check_documents:,} documents per corpus",
        flush=True,
    )
    ratios = []
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
    args = parser.parse_args()
    if args.check:
        check(args)
    else:
        plan(args)


if __name__ == "__main__":
    main()
