"""wmd.mode knn against full matrices, on the real 8,000-review corpus and 20 Newsgroups.

Data: ``../shared/data/amazon_reviews.tsv`` (or ``--data``), read as a ``format: table``
dataset with a seeded Word2Vec trained on it like the demo's (50-d, 20 epochs, min_count
2), through the workflow itself (``snakemake`` up to the original variant's documents,
five seeded folds). Prepared once in ``--workdir``. ``../shared/data/20news_bydate.tsv``
(``--news-data``), each post cut to its first 500 words as Kusner's file has them, with
the collection's own train/test split and a Word2Vec trained the same way, prepared once
in ``--news-workdir``.

Runs, WMD (bag-of-words weights), on this machine:

1. A seeded sample of 3,000 reviews in both modes: full (every pair, the block solver,
   as the wmd_block jobs run it) and knn (lower bounds + exact top-k search, as the
   wmd_search jobs run it). Both give scores.parquet rows through the evaluation; they
   must be identical.
2. All 8,000 reviews in knn mode. The full mode's cost there is estimated from a timed
   random sample of pairs (``--pairs``, at least 20,000) solved the full mode's way, and
   the output says so.
3. The peer library src-d/wmd-relax (PyPI ``wmd``) on the same exact top-19 queries
   (the test documents of fold 0 among its training documents): milliseconds per query
   and how many of its answers differ from the exact top 19. It runs in its own
   environment (``--relax-python``, or ``$WMDEVAL_RELAX_PYTHON``; see
   benchmarks/relax_peer.py); skipped if neither names one.
4. 20 Newsgroups in knn mode, measured on a seeded sample of queries of every query
   role (``--news-queries`` per role, searched together as one job searches its shard):
   exact solves and CPU per query, and the bounds' share of it (cheap bounds, ICT and
   dual bounds). The full mode (train x train and train x test pairs) is estimated from
   ``--news-pairs`` timed pairs, and knn's totals are the sample's per-query figures
   times the number of queries (upper bounds: the sample shares no pair between queries,
   a whole run does). Then the shared-mass reduction of the solves, timed against the
   whole problem on ``--news-kr-pairs`` of the pairs the search solved and as many of
   the sampled queries' k-nearest pairs, and the k nearest of ``--news-check`` sampled
   queries against their whole rows of exact solves.

Solves are exact network-simplex calls; "share" is solves / (n (n - 1) / 2). CPU is
the job's (its threads and its worker processes), bounds included in knn. The last line:

    knn_pruning: <solves ratio>x fewer solves, <cpu ratio>x less CPU, scores identical: yes|no

with the ratios of 20 Newsgroups (``--corpora amazon``: of the 8,000 reviews), "scores
identical" for the 3,000 reviews' scores.parquet rows and 20 Newsgroups' checked
neighbours.

    python benchmarks/knn_pruning.py [--quick] [--threads 2] [--corpora both|amazon|news]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from wmdeval.classification import knn
from wmdeval.cleaning.vocabulary import select_variant
from wmdeval.core import io
from wmdeval.core.roles import query_roles
from wmdeval.core.variant import rank_neighbours
from wmdeval.distances.factory import prepare_variant
from wmdeval.distances.wmd import blocks, pairs, search, solver

sys.path.insert(0, str(Path(__file__).resolve().parent))
import record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "amazon_reviews.tsv"
CONFIG = """\
datasets:
  amazon:
    format: table
    path: {data}
    text_column: text
    label_column: label
    embeddings: amazon-word2vec
    stopwords: kusner115
embeddings:
  amazon-word2vec:
    format: train-word2vec
    train_on: [amazon]
    vector_size: 50
    epochs: 20
    min_count: 2
    seed: 0
variants: [original]
"""
TARGETS = [
    "results/amazon/original/documents.parquet",
    "results/amazon/original/splits.parquet",
    "results/amazon/vectors/embeddings.parquet",
]
NEWS = REPO.parent / "shared" / "data" / "20news_bydate.tsv"
#: Words kept per post: Kusner's 20news file holds the first 500 of each.
NEWS_WORDS = 500
NEWS_CONFIG = """\
datasets:
  news:
    format: table
    path: {data}
    text_column: text
    label_column: label
    split_column: split
    embeddings: news-word2vec
    stopwords: kusner115
embeddings:
  news-word2vec:
    format: train-word2vec
    train_on: [news]
    vector_size: 50
    epochs: 20
    min_count: 2
    seed: 0
variants: [original]
"""
NEWS_TARGETS = [t.replace("amazon", "news") for t in TARGETS]
NEWS_K = 19


def job_cpu() -> float:
    """CPU seconds of this process (every thread) and of its children that have ended: a
    search with several workers runs its queries in worker processes, which it has
    waited for by the time it returns."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Clock:
    """Wall-clock and CPU seconds (:func:`job_cpu`: its worker processes' too) of a block
    of code."""

    def __enter__(self) -> Clock:
        self.wall0, self.cpu0 = time.perf_counter(), job_cpu()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = job_cpu() - self.cpu0


def prepare_data(data: Path, workdir: Path) -> tuple[pa.Table, pa.Table, pa.Table]:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(CONFIG.format(data=data.resolve()))
    return prepared(workdir, TARGETS, "the corpus")


def prepared(workdir: Path, targets: list[str], what: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """The documents, splits and embeddings ``targets`` of ``workdir``'s config.yaml, made
    by the workflow unless they exist already."""
    if not all((workdir / t).exists() for t in targets):
        print(f"preparing {what} with snakemake in {workdir} ...", flush=True)
        subprocess.run(
            ["snakemake", "-s", str(REPO / "Snakefile"), "--configfile", "config.yaml"]
            + ["--cores", "2", *targets],
            cwd=workdir,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return (
        io.read_documents(workdir / targets[0]),
        io.read_splits(workdir / targets[1]),
        io.read_table(workdir / targets[2]),
    )


def prepare_news(data: Path, workdir: Path) -> tuple[pa.Table, pa.Table, pa.Table]:
    """20 Newsgroups, each post cut to its first NEWS_WORDS words (as Kusner's file), with
    the collection's own train/test split and a Word2Vec trained on it like the demo's."""
    workdir.mkdir(parents=True, exist_ok=True)
    cut = workdir / "20news_500.parquet"
    if not cut.exists():
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        table = pacsv.read_csv(data, parse_options=pacsv.ParseOptions(delimiter="\t"))
        texts = [" ".join(t.split()[:NEWS_WORDS]) for t in table.column("text").to_pylist()]
        pq.write_table(table.set_column(table.schema.get_field_index("text"), "text", [texts]), cut)
    (workdir / "config.yaml").write_text(NEWS_CONFIG.format(data=cut.resolve()))
    return prepared(workdir, NEWS_TARGETS, "20 Newsgroups")


def add_news_arguments(parser: argparse.ArgumentParser) -> None:
    """``--news-data`` and ``--news-workdir``, as every 20 Newsgroups benchmark takes them
    (the workdir shared, so the corpus is prepared once)."""
    parser.add_argument("--news-data", type=Path, default=NEWS)
    parser.add_argument(
        "--news-workdir", type=Path, default=Path(tempfile.gettempdir()) / "knn-news"
    )


def news_inputs(data: Path, workdir: Path) -> tuple[solver.WmdInputs, pa.Table, pa.Table, list]:
    """20 Newsgroups prepared (:func:`prepare_news`) for WMD: (inputs, documents, splits,
    query roles)."""
    documents, splits, embeddings = prepare_news(data, workdir)
    inputs = solver.prepare(documents, embeddings, "bow")
    roles = query_roles(io.fold_indices(splits, inputs.doc_ids), inputs.empty, None)
    return inputs, documents, splits, roles


def news_sample(roles: list, per_role: int, rng: np.random.Generator) -> np.ndarray:
    """The sample of 20 Newsgroups queries the benchmarks search: ``per_role`` of each
    role's queries (all if fewer), drawn from ``rng`` (``np.random.default_rng(4)``, fresh,
    for the same sample as knn_pruning.py's), sorted positions."""
    return np.unique(
        np.concatenate(
            [rng.choice(r.queries, min(per_role, len(r.queries)), replace=False) for r in roles]
        )
    )


def sample(documents: pa.Table, splits: pa.Table, size: int, seed: int):
    ids = documents.column("doc_id").to_numpy()
    keep = np.sort(np.random.default_rng(seed).choice(ids, size, replace=False))
    return select_variant(documents, splits, keep)


def run_full(inputs: solver.WmdInputs, threads: int, n_blocks: int = 8):
    """Every pair, as the wmd_block jobs solve them; the gathered float64 matrix."""
    with Clock() as clock:
        tables = [solver.solve_block(inputs, b, n_blocks, threads) for b in range(n_blocks)]
        matrix = blocks.gather(inputs.n, tables)
    return matrix, clock


def run_knn(inputs: solver.WmdInputs, splits: pa.Table, threads: int):
    folds = io.fold_indices(splits, inputs.doc_ids)
    stats = search.SearchStats()
    with Clock() as clock:
        tables = search.search_shard(inputs, folds, None, 0, 1, threads, stats)
    return tables, stats, clock


def full_cpu_estimate(inputs: solver.WmdInputs, n_pairs: int, seed: int, threads: int) -> float:
    """CPU seconds of the full matrix, solved the full mode's way (one BLAS thread, a
    row's pairs by :func:`solver._solve_row`, wmd_pair's distances), from a timed random
    sample: ``n_pairs`` pairs in runs of 500 from random rows, spread over ``threads``
    threads as the knn run is (so both pay the same contention for the machine's cores).
    Each thread's own CPU clock times its work."""
    rng = np.random.default_rng(seed)
    n, run = inputs.n, 500
    rows = rng.choice(n - run - 1, n_pairs // run, replace=False).tolist()
    starts = [int(rng.integers(i + 1, n - run + 1)) for i in rows]

    flat_weights = solver._flat_weights(inputs)  # as a block job computes it, once

    def timed_row(task: tuple[int, int]) -> float:
        i, j0 = task
        out = np.empty(run)
        t0 = time.thread_time()
        solver._solve_row(inputs, i, j0, j0 + run, out, flat_weights=flat_weights)
        return (time.thread_time() - t0) / run

    with solver._blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        pair_seconds = list(pool.map(timed_row, zip(rows, starts, strict=True)))
    return n * (n - 1) / 2 * float(np.mean(pair_seconds))


def pair_seconds(inputs: solver.WmdInputs, n_rows: int, n_pairs: int, seed: int, threads: int):
    """Seconds of one pair of the full mode, from ``n_pairs`` pairs in runs of 200 of
    random rows < ``n_rows`` of ``inputs`` (in solve order), timed as
    :func:`full_cpu_estimate` times them."""
    rng = np.random.default_rng(seed)
    n, run = inputs.n, 200
    rows = rng.choice(min(n_rows, n - run - 1), n_pairs // run, replace=False).tolist()
    starts = [int(rng.integers(i + 1, n - run + 1)) for i in rows]

    flat_weights = solver._flat_weights(inputs)  # as a block job computes it, once

    def timed_row(task: tuple[int, int]) -> float:
        i, j0 = task
        out = np.empty(run)
        t0 = time.thread_time()
        solver._solve_row(inputs, i, j0, j0 + run, out, flat_weights=flat_weights)
        return (time.thread_time() - t0) / run

    with solver._blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(threads) as pool:
        return float(np.mean(list(pool.map(timed_row, zip(rows, starts, strict=True)))))


def news_run(args) -> tuple[float, float, bool]:
    """20 Newsgroups in knn mode on a seeded sample of queries of every role, against the
    full mode's estimate; returns (solves ratio, CPU ratio, neighbours identical)."""
    inputs, documents, splits, roles = news_inputs(args.news_data, args.news_workdir)
    n = inputs.n
    order, n_rows = pairs.solve_order(inputs.doc_ids, splits)
    all_queries = np.unique(np.concatenate([r.queries for r in roles]))
    print(
        f"4. 20 Newsgroups: {n:,} posts (first {NEWS_WORDS} words), "
        f"{inputs.sizes.mean():.1f} distinct words per post, {n_rows:,} train; "
        f"{len(all_queries):,} queries in {len(roles)} roles "
        + ", ".join(f"{r.name} {len(r.queries):,} among {len(r.candidates):,}" for r in roles),
        flush=True,
    )
    rng = np.random.default_rng(4)  # the sample, then the pairs and queries checked
    sampled = news_sample(roles, args.news_queries, rng)
    tasks = search.query_tasks(roles, inputs.empty, sampled)
    lists = sum(len(t) for t in tasks.values())
    stats = search.SearchStats()
    with Clock() as clock:
        pair_table, certificate_table = search.search_queries(inputs, tasks, args.threads, stats)
    q = len(sampled)
    knn_cpu = clock.cpu / q
    bounds_share = (stats.bound_seconds + stats.tight_seconds) / clock.cpu
    print(
        f"   knn: {q} sampled queries ({lists} candidate lists, {lists / q:.2f} per query): "
        f"{stats.solves / q:.1f} exact solves per query ({stats.solves / lists:.1f} per list, "
        f"floor 19), {stats.tight / q:.0f} ICT bounds, {stats.duals / q:.0f} dual bounds and "
        f"{stats.ascents / q:.0f} dual ascents per query; "
        f"{100 * stats.pairs / stats.candidates:.2f} % of candidates read",
        flush=True,
    )
    print(
        f"        CPU {knn_cpu:.3f} s per query ({clock.cpu:.0f} s CPU, {clock.wall:.0f} s wall); "
        f"bounds {100 * bounds_share:.1f} % of it (cheap bounds {stats.bound_seconds:.1f} s, "
        f"ICT, dual bounds and ascents {stats.tight_seconds:.1f} s)",
        flush=True,
    )

    # the full mode: every train x all pair, timed the full mode's way
    ordered = solver.reorder(inputs, order)
    pair_s = pair_seconds(ordered, n_rows, args.news_pairs, seed=5, threads=args.threads)
    full_pairs = n_rows * n - n_rows * (n_rows + 1) // 2
    full_cpu = full_pairs * pair_s
    knn_solves = stats.solves / q * len(all_queries)
    knn_total = knn_cpu * len(all_queries)
    print(
        f"   full: {full_pairs:,} solves (train x train and train x test), estimated "
        f"{full_cpu:,.0f} s CPU from a timed random sample of {args.news_pairs:,} pairs "
        f"({1e3 * pair_s:.3f} ms per pair)",
        flush=True,
    )
    print(
        f"   knn, all {len(all_queries):,} queries at the sample's rates (upper bounds: no "
        f"pair shared between queries): {knn_solves:,.0f} solves, {knn_total:,.0f} s CPU",
        flush=True,
    )

    # the solves' shared-mass reduction: on the pairs the search solved, and on the
    # nearest-neighbour pairs among them (each sampled query's k nearest in every list)
    position = {int(d): k for k, d in enumerate(inputs.doc_ids.tolist())}
    solved = [
        (position[a], position[b])
        for a, b in zip(
            pair_table.column("query").to_numpy().tolist(),
            pair_table.column("candidate").to_numpy().tolist(),
            strict=True,
        )
    ]
    searched = prepare_variant(documents, splits, {}, {"wmd": (pair_table, certificate_table)})
    nearest = set()
    for role in roles:
        mine = np.intersect1d(sampled, role.queries)
        if len(mine):
            index = searched.wmd["wmd"].nearest(mine, role.candidates, role.k).index
            for x, row in zip(mine.tolist(), index.tolist(), strict=True):
                nearest.update((x, int(role.candidates[i])) for i in row if i >= 0)
    for what, chosen in (
        (f"{len(solved):,} solved pairs", solved),
        (f"{len(nearest):,} {NEWS_K}-nearest pairs", sorted(nearest)),
    ):
        picks = rng.choice(len(chosen), min(args.news_kr_pairs, len(chosen)), replace=False)
        print(
            f"   shared-mass reduction, {len(picks)} of the {what}: "
            + shared_mass_reduction(inputs, [chosen[p] for p in picks.tolist()]),
            flush=True,
        )

    # a few sampled queries: their k nearest from the search against their whole rows
    # (every candidate solved, the same solver call and orientation as both modes)
    checked = np.sort(sampled[rng.choice(q, min(args.news_check, q), replace=False)])
    check_tasks = search.query_tasks(roles, inputs.empty, checked)
    found = search.search_queries(inputs, check_tasks, args.threads)
    table = prepare_variant(documents, splits, {}, {"wmd": found}).wmd["wmd"]
    identical, solved_rows = True, 0
    with solver._blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(args.threads) as pool:
        for role in roles:
            mine = np.intersect1d(checked, role.queries)
            for x in mine.tolist():
                row = np.array(
                    list(pool.map(lambda c, x=x: _row_entry(inputs, x, c), role.candidates))
                )
                solved_rows += 1
                want = rank_neighbours(row[None, :], role.k)
                got = table.nearest(np.array([x]), role.candidates, role.k)
                identical &= bool(np.array_equal(got.index, want))
    print(
        f"   {solved_rows} sampled queries' {NEWS_K} nearest against their whole rows of "
        f"exact solves: {'identical' if identical else 'DIFFERENT'}",
        flush=True,
    )
    args.news_figures = {
        "queries": q,
        "threads": args.threads,
        "solves": stats.solves,
        "solves_per_query": round(stats.solves / q, 1),
        "solves_per_list": round(stats.solves / lists, 1),
        "cpu_s": round(clock.cpu),
        "wall_s": round(clock.wall),
        "cpu_per_query_s": round(knn_cpu, 3),
        "bounds_share_percent": round(100 * bounds_share, 1),
        "cheap_bounds_s": round(stats.bound_seconds, 1),
        "full_pair_ms": round(1e3 * pair_s, 3),
        "full_solves_millions": round(full_pairs / 1e6, 1),
        "solves_ratio": round(full_pairs / knn_solves, 1),
        "cpu_ratio": round(full_cpu / knn_total, 1),
        "identical": identical,
    }
    return full_pairs / knn_solves, full_cpu / knn_total, identical


def shared_mass_reduction(inputs: solver.WmdInputs, chosen: list[tuple[int, int]]) -> str:
    """The exact solve with the shared mass dropped (solver.wmd_pair, as both modes solve)
    against the whole problem, on ``chosen`` pairs of positions, one thread: time per
    solve, the words left, and the largest relative difference of the two values."""
    reduced_s = whole_s = 0.0
    kept_words = all_words = 0
    worst = 0.0
    with solver._blas().limit(limits=1, user_api="blas"):
        for a, b in chosen:
            a, b = (a, b) if inputs.doc_ids[a] < inputs.doc_ids[b] else (b, a)  # as wmd_pair
            t0 = time.thread_time()
            reduced = solver.wmd_pair(inputs, a, b)
            t1 = time.thread_time()
            cost = solver.cost_matrix(inputs, inputs.indices[a], inputs.indices[b])
            whole = solver._wmd(inputs.weights[a], inputs.weights[b], cost)
            t2 = time.thread_time()
            reduced_s += t1 - t0
            whole_s += t2 - t1
            shared = np.intersect1d(inputs.indices[a], inputs.indices[b], return_indices=True)
            left = solver.residual_problem(
                inputs.weights[a], inputs.weights[b], shared[1], shared[2]
            )
            kept_words += len(left[0]) + len(left[1])
            all_words += len(inputs.indices[a]) + len(inputs.indices[b])
            if whole > 0:
                worst = max(worst, abs(reduced - whole) / whole)
    n = max(len(chosen), 1)
    return (
        f"{1e3 * reduced_s / n:.3f} ms per solve against {1e3 * whole_s / n:.3f} on the whole "
        f"problem ({whole_s / max(reduced_s, 1e-12):.2f}x); "
        f"{100 * kept_words / max(all_words, 1):.0f} % of the words left; largest relative "
        f"difference {worst:.1e}"
    )


def _row_entry(inputs: solver.WmdInputs, x: int, c: int) -> float:
    """The distance of pair (x, c) as a full matrix holds it: 0 on the diagonal."""
    return 0.0 if x == c else solver.wmd_pair(inputs, x, c)


def share(solves: int, n: int) -> float:
    return solves / (n * (n - 1) / 2)


def relax_peer(
    python: str, inputs: solver.WmdInputs, splits: pa.Table, table: knn.Distances, n_queries: int
) -> str:
    """wmd-relax on the test documents of fold 0 among its training documents, top 19."""
    folds = io.fold_indices(splits, inputs.doc_ids)
    role = [r for r in query_roles(folds, inputs.empty, None) if r.name == "test"][0]
    queries = role.queries[:n_queries]
    exact = table.nearest(queries, role.candidates, 19)
    with tempfile.TemporaryDirectory() as tmp:
        np.savez(
            Path(tmp) / "in.npz",
            vectors=inputs.vectors,
            flat=inputs.flat_indices,
            offsets=inputs.offsets,
            weights=np.concatenate(inputs.weights),
            queries=queries,
            candidates=role.candidates,
            k=19,
        )
        script = REPO / "benchmarks" / "relax_peer.py"
        out = Path(tmp) / "out.npy"
        done = subprocess.run(
            [python, str(script), str(Path(tmp) / "in.npz"), str(out)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return f"wmd-relax: failed ({done.stderr.strip().splitlines()[-1]})"
        seconds = float(done.stdout.strip().splitlines()[-1])
        found = np.load(out)
    want = role.candidates[exact.index]
    differ = sum(
        set(f[f >= 0].tolist()) != set(w.tolist()) for f, w in zip(found, want, strict=True)
    )
    return (
        f"wmd-relax (defaults): {1000 * seconds / len(queries):.1f} ms per query "
        f"({len(queries)} test queries of fold 0, top 19); {differ} of {len(queries)} "
        "answers differ from the exact top 19"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "knn-bench")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sample", type=int, default=3000)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument(
        "--relax-python",
        default=os.environ.get("WMDEVAL_RELAX_PYTHON"),
        help="a Python with wmd-relax (benchmarks/relax_peer.py says how to make one); "
        "default: $WMDEVAL_RELAX_PYTHON; without either, step 3 is skipped",
    )
    parser.add_argument("--relax-queries", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="600 and 1,500 documents")
    add_news_arguments(parser)
    parser.add_argument("--news-queries", type=int, default=100, help="sampled per role")
    parser.add_argument("--news-pairs", type=int, default=20000, help="full-mode pairs timed")
    parser.add_argument("--news-kr-pairs", type=int, default=1000)
    parser.add_argument("--news-check", type=int, default=4, help="queries solved whole")
    parser.add_argument(
        "--corpora", choices=["both", "amazon", "news"], default="both", help="which runs"
    )
    record.add_argument(parser, "knn_pruning_news")
    args = parser.parse_args()
    if args.corpora == "news":
        solves_ratio, cpu_ratio, identical = news_run(args)
        record.write(args.record, "knn_pruning", args.news_figures)  # the 20 Newsgroups run
        print(
            f"knn_pruning: {solves_ratio:.1f}x fewer solves, {cpu_ratio:.1f}x less CPU, "
            f"scores identical: {'yes' if identical else 'no'}"
        )
        sys.exit(0 if identical else 1)
    documents, splits, embeddings = prepare_data(args.data, args.workdir)
    sizes = (600, 1500) if args.quick else (args.sample, documents.num_rows)

    # 1. a seeded sample in both modes
    docs, folds = sample(documents, splits, sizes[0], seed=0)
    inputs = solver.prepare(docs, embeddings, "bow")
    n = inputs.n
    print(
        f"1. seeded sample: {n} reviews, {inputs.sizes.mean():.1f} distinct words per review",
        flush=True,
    )
    matrix, full_clock = run_full(inputs, args.threads)
    (pair_table, certificates), stats, knn_clock = run_knn(inputs, folds, args.threads)
    ids = docs.column("doc_id").to_numpy()
    full_scores = knn.evaluate_dataset(docs, folds, {"wmd": (ids, matrix)}, None, "a", "o")
    knn_scores = knn.evaluate_dataset(
        docs, folds, {}, None, "a", "o", neighbour_tables={"wmd": (pair_table, certificates)}
    )
    identical = full_scores.equals(knn_scores)
    print(
        f"   full: {n * (n - 1) // 2:,} solves, {full_clock.cpu:.0f} s CPU, "
        f"{full_clock.wall:.0f} s wall"
    )
    print(
        f"   knn:  {stats.solves:,} solves ({100 * share(stats.solves, n):.1f} % of the full "
        f"matrix), bounds {stats.bound_seconds:.1f} s, {knn_clock.cpu:.0f} s CPU, "
        f"{knn_clock.wall:.0f} s wall"
    )
    print(
        f"   {share(stats.solves, n) ** -1:.1f}x fewer solves, "
        f"{full_clock.cpu / knn_clock.cpu:.1f}x less CPU; scores.parquet rows identical "
        f"({full_scores.num_rows} rows, all 14 methods): {'yes' if identical else 'NO'}"
    )
    sample_rate = full_clock.cpu / (n * (n - 1) / 2)

    # 2. every review (--quick: a larger seeded sample), knn mode
    if sizes[1] < documents.num_rows:
        documents, splits = sample(documents, splits, sizes[1], seed=1)
    inputs = solver.prepare(documents, embeddings, "bow")
    n = inputs.n
    print(f"2. {n} reviews, {inputs.sizes.mean():.1f} distinct words per review", flush=True)
    (pair_table, certificates), stats, knn_clock = run_knn(inputs, splits, args.threads)
    full_cpu = full_cpu_estimate(inputs, args.pairs, seed=1, threads=args.threads)
    all_pairs = n * (n - 1) // 2
    rate = full_cpu / all_pairs
    print(
        f"   knn:  {stats.solves:,} solves ({100 * share(stats.solves, n):.2f} % of the full "
        f"matrix), bounds {stats.bound_seconds:.0f} s, {knn_clock.cpu:.0f} s CPU, "
        f"{knn_clock.wall:.0f} s wall"
    )
    print(
        f"   full: {all_pairs:,} solves, estimated {full_cpu:.0f} s CPU from a timed random "
        f"sample of {args.pairs:,} pairs in {args.threads} threads ({1e3 * rate:.3f} ms per "
        f"pair; the "
        f"{sizes[0]:,}-review run measured {1e3 * sample_rate:.3f})"
    )
    solves_ratio = all_pairs / stats.solves
    cpu_ratio = full_cpu / knn_clock.cpu

    # 3. the peer library on the same top-19 queries
    if args.relax_python and os.path.exists(args.relax_python):
        table = prepare_variant(documents, splits, {}, {"wmd": (pair_table, certificates)}).wmd[
            "wmd"
        ]
        print("3. " + relax_peer(args.relax_python, inputs, splits, table, args.relax_queries))
    else:
        where = args.relax_python or "no --relax-python or $WMDEVAL_RELAX_PYTHON given"
        print(f"3. wmd-relax: skipped ({where} not found)")
    print(
        f"   amazon: {solves_ratio:.1f}x fewer solves, {cpu_ratio:.1f}x less CPU, "
        f"scores identical: {'yes' if identical else 'no'}",
        flush=True,
    )
    if args.corpora == "amazon":
        print(
            f"knn_pruning: {solves_ratio:.1f}x fewer solves, {cpu_ratio:.1f}x less CPU, "
            f"scores identical: {'yes' if identical else 'no'}"
        )
        sys.exit(0 if identical else 1)
    solves_ratio, cpu_ratio, news_identical = news_run(args)
    record.write(args.record, "knn_pruning", args.news_figures)  # the 20 Newsgroups run
    identical &= news_identical
    print(
        f"knn_pruning: {solves_ratio:.1f}x fewer solves, {cpu_ratio:.1f}x less CPU, "
        f"scores identical: {'yes' if identical else 'no'}"
    )
    sys.exit(0 if identical else 1)


if __name__ == "__main__":
    main()
