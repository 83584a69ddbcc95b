"""Speed of the distances beyond the paper (WRD, WCD, RWMD, cosine-mean) on real reviews.

Data: the 8,000-review corpus ``../shared/data/amazon_reviews.tsv`` (or ``--data``) with
the seeded Word2Vec trained on it, as benchmarks/knn_pruning.py prepares them (its
CONFIG: ``format: table``, 50-d, 20 epochs, min_count 2; the original variant's
documents). If ``--workdir`` already holds knn_pruning's prepared files they are read
(``--workdir /tmp/knn-bench`` shares them); otherwise this script makes them in process
by calling the functions the workflow's ingest, train_embeddings, lookup_embeddings,
filter_oov and select_variant rules run, without snakemake, on one core, and keeps
them in ``--workdir`` for the next run.

On seeded samples of the reviews, one thread and one BLAS thread throughout:

1. WRD against WMD, exact transport: ``solver.prepare(documents, embeddings, "wrd")``
   and ``"bow"``, then ``solve_block`` over every pair of the same ``--transport-docs``
   reviews (in ``--rounds`` blocks of the triangle, alternating WMD and WRD so that both
   see the same machine load; ``--rounds 1`` is one ``solve_block(inputs, 0, 1)``).
2. The dense matrices of ``wmdeval.distances.embedding`` on ``--dense-docs`` reviews:
   WCD, RWMD and cosine-mean; then RWMD computed the per-pair way, written plainly here
   (every pair's word-to-word Euclidean cost matrix, each word's mass to its nearest word
   of the other review, both directions, the larger), on ``--reference-docs`` reviews,
   against the package on the same reviews: rates, ratio, largest difference.
3. An estimate for the paper's 20news (18,821 documents): WCD's and cosine-mean's
   seconds at the per-pair rate measured in 2 (this corpus: 50-d vectors, its review
   lengths), RWMD's scaled by documents x vocabulary (its work); RWMD is also timed at
   half the reviews of 2, to show how its rate moves with n. (benchmarks/paper_scale.py
   measures them at 20news size with 300-d vectors.)

"pairs" are distinct document pairs, n (n - 1) / 2; rates are per CPU second of this
process (wall-clock seconds are printed too). The last lines are a summary, one line per
measurement.

    python benchmarks/beyond_methods.py [--transport-docs 300] [--dense-docs 2000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml
from knn_pruning import CONFIG, DATA, TARGETS, Clock, prepare_data, sample
from scipy.spatial.distance import cdist
from threadpoolctl import threadpool_limits

from wmdeval.cleaning import vocabulary
from wmdeval.core import config
from wmdeval.distances import embedding
from wmdeval.distances.wmd import solver
from wmdeval.ingest import corpora
from wmdeval.ingest import embeddings as vectors

#: Documents of 20 Newsgroups in the paper (Kusner et al. 2015, Table 1).
NEWS20_DOCS = 18_821
#: 20news vocabulary (docs/protocol.md §2.1): what the RWMD matrix's work grows with.
NEWS20_WORDS = 29_671


def make_corpus(data: Path, workdir: Path) -> None:
    """knn_pruning's TARGETS in ``workdir``, made in process (no snakemake): the run
    functions of the workflow's rules, in the rules' order, with the validated CONFIG."""
    settings = config.validate(yaml.safe_load(CONFIG.format(data=data.resolve())))
    dataset = settings["datasets"]["amazon"]
    trained = settings["embeddings"][dataset["embeddings"]]
    paths = {
        "ingest": workdir / "results/amazon/ingest/documents.parquet",
        "splits": workdir / "results/amazon/ingest/splits.parquet",
        "vec": workdir / "resources/embeddings/amazon-word2vec.vec",
        "oov": workdir / "results/amazon/oov/documents.parquet",
        "report": workdir / "results/amazon/oov/report.parquet",
    }
    for path in [*paths.values(), *(workdir / t for t in TARGETS)]:
        path.parent.mkdir(parents=True, exist_ok=True)
    documents_path, splits_path, embeddings_path = (workdir / t for t in TARGETS)
    corpora.run_ingest(dataset, paths["ingest"], paths["splits"])
    vectors.run_train(trained, [dataset], paths["vec"])
    vectors.run_lookup(
        paths["ingest"], paths["vec"], "word2vec-text", None, trained["normalize"], embeddings_path
    )
    vocabulary.run_filter(
        paths["ingest"],
        embeddings_path,
        "amazon",
        dataset["vocabulary"]["min_df"],
        dataset["vocabulary"]["max_words_per_doc"],
        paths["oov"],
        paths["report"],
    )
    vocabulary.run_select(paths["oov"], paths["splits"], documents_path, splits_path)


def load_corpus(data: Path, workdir: Path) -> tuple[pa.Table, pa.Table, pa.Table]:
    """(documents, splits, embeddings) of knn_pruning's corpus, prepared once."""
    if not all((workdir / t).exists() for t in TARGETS):
        print(f"preparing the corpus in process in {workdir} (once) ...", flush=True)
        with Clock() as clock:
            make_corpus(data, workdir)
        print(f"   prepared in {clock.wall:.0f} s", flush=True)
    # with every target present, prepare_data only reads them
    return prepare_data(data, workdir)


def pairs(n: int) -> int:
    return n * (n - 1) // 2


# ---------------------------------------------------------------------------------------------
# 1. WRD against WMD


def transport(documents: pa.Table, embeddings: pa.Table, rounds: int) -> dict[str, dict]:
    """Both weightings on the same documents, blocks alternating; per weighting: its
    inputs, the solve Clock totals, the distances."""
    out = {}
    for weighting in ("bow", "wrd"):
        with Clock() as clock:
            inputs = solver.prepare(documents, embeddings, weighting)
        out[weighting] = {"inputs": inputs, "prepare": clock.wall, "cpu": 0.0, "wall": 0.0}
        out[weighting]["tables"] = []
    for block in range(rounds):
        for run in out.values():
            with Clock() as clock:
                table = solver.solve_block(run["inputs"], block, rounds, threads=1)
            run["tables"].append(table)
            run["cpu"] += clock.cpu
            run["wall"] += clock.wall
    for run in out.values():
        distances = pa.concat_tables(run.pop("tables")).column("distance").to_numpy()
        run["distances"] = distances
    return out


# ---------------------------------------------------------------------------------------------
# 2. dense matrices, and RWMD the per-pair way


def dense(inputs: solver.WmdInputs) -> dict[str, tuple[Clock, np.ndarray]]:
    functions = {
        "wcd": embedding.word_centroid_matrix,
        "rwmd": lambda x: embedding.relaxed_wmd_matrix(x, threads=1),
        "cosine-mean": embedding.mean_vector_cosine_matrix,
    }
    out = {}
    for name, function in functions.items():
        with Clock() as clock:
            matrix = function(inputs)
        out[name] = (clock, matrix)
    return out


def reference_inputs(
    documents: pa.Table, embeddings: pa.Table
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each review's word vectors (float64, from the embeddings table) and L1-normalised
    counts, straight from the tables."""
    words, matrix = vectors.embedding_matrix(embeddings)
    row = {w: k for k, w in enumerate(words)}
    xs = [matrix[[row[w] for w in ws]] for ws in documents.column("words").to_pylist()]
    bows = [np.asarray(c) / np.sum(c) for c in documents.column("counts").to_pylist()]
    return xs, bows


def reference_rwmd(xs: list[np.ndarray], bows: list[np.ndarray]) -> np.ndarray:
    """RWMD the per-pair way (Kusner et al. 2015, Section 4): for each pair, the
    Euclidean distances between their words; each word of one review sends its whole mass
    to its nearest word of the other; the larger of the two directions. NaN for an empty
    review."""
    n = len(xs)
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            if not len(bows[i]) or not len(bows[j]):
                out[i, j] = out[j, i] = np.nan
                continue
            cost = cdist(xs[i], xs[j])
            one_way = bows[i] @ cost.min(axis=1)
            other_way = bows[j] @ cost.min(axis=0)
            out[i, j] = out[j, i] = max(one_way, other_way)
        if not len(bows[i]):
            out[i, i] = np.nan
    return out


def max_difference(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| where both are numbers; inf if their NaN patterns differ."""
    if not np.array_equal(np.isnan(a), np.isnan(b)):
        return float("inf")
    finite = ~np.isnan(a)
    return float(np.abs(a[finite] - b[finite]).max()) if finite.any() else 0.0


# ---------------------------------------------------------------------------------------------


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "beyond-bench"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--transport-docs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4, help="alternating blocks in 1")
    parser.add_argument("--dense-docs", type=int, default=2000)
    parser.add_argument("--reference-docs", type=int, default=150)
    args = parser.parse_args()
    summary = []
    with threadpool_limits(limits=1):
        documents, splits, embeddings = load_corpus(args.data, args.workdir)

        # 1. WRD against WMD
        docs, _ = sample(documents, splits, args.transport_docs, args.seed)
        n = docs.num_rows
        print(f"1. WRD against WMD, exact transport, every pair of {n} reviews", flush=True)
        runs = transport(docs, embeddings, args.rounds)
        rates = {}
        for weighting, label in (("bow", "WMD"), ("wrd", "WRD")):
            run = runs[weighting]
            inputs, d = run["inputs"], run["distances"]
            rates[weighting] = pairs(n) / run["cpu"]
            print(
                f"   {label}: {inputs.sizes.mean():.1f} words per review, prepare "
                f"{run['prepare']:.2f} s, solve {run['cpu']:.1f} s CPU ({run['wall']:.1f} s "
                f"wall): {rates[weighting]:,.0f} pairs/s; distances {np.nanmin(d):.3f}"
                f"-{np.nanmax(d):.3f}, {int(np.isnan(d).sum())} NaN"
            )
        ratio = rates["wrd"] / rates["bow"]
        print(f"   WRD / WMD pairs/s: {ratio:.2f}")
        summary.append(
            f"WRD vs WMD, {n} reviews ({pairs(n):,} pairs): WMD {rates['bow']:,.0f} pairs/s, "
            f"WRD {rates['wrd']:,.0f} pairs/s, WRD/WMD {ratio:.2f}x"
        )

        # 2. dense matrices
        docs, _ = sample(documents, splits, args.dense_docs, args.seed)
        n = docs.num_rows
        with Clock() as clock:
            inputs = solver.prepare(docs, embeddings, "bow")
        print(
            f"2. dense matrices of {n} reviews ({pairs(n):,} pairs, "
            f"{inputs.sizes.mean():.1f} words per review, {len(inputs.vectors):,} distinct "
            f"words; prepare {clock.wall:.2f} s)",
            flush=True,
        )
        matrices = dense(inputs)
        dense_rates = {}
        for name, (clock, _) in matrices.items():
            dense_rates[name] = pairs(n) / clock.cpu
            print(
                f"   {name:<11} {clock.cpu:7.3f} s CPU ({clock.wall:.3f} s wall): "
                f"{dense_rates[name]:>13,.0f} pairs/s"
            )
            summary.append(
                f"{name}, {n} reviews: {clock.cpu:.3f} s CPU, {dense_rates[name]:,.0f} pairs/s"
            )
        del matrices
        # RWMD's rate at half the size: how the per-pair cost moves with n (for 3)
        half_docs, _ = sample(documents, splits, n // 2, args.seed)
        half = solver.prepare(half_docs, embeddings, "bow")
        with Clock() as clock:
            embedding.relaxed_wmd_matrix(half, threads=1)
        half_rate = pairs(half.n) / clock.cpu
        print(
            f"   rwmd at {half.n} reviews: {clock.cpu:.2f} s CPU: {half_rate:,.0f} pairs/s "
            f"(the rate at {n} is {dense_rates['rwmd'] / half_rate:.2f}x this)"
        )

        docs, _ = sample(documents, splits, args.reference_docs, args.seed)
        m = docs.num_rows
        xs, bows = reference_inputs(docs, embeddings)
        with Clock() as reference_clock:
            expected = reference_rwmd(xs, bows)
        small = solver.prepare(docs, embeddings, "bow")
        with Clock() as small_clock:
            found = embedding.relaxed_wmd_matrix(small, threads=1)
        diff = max_difference(found, expected)
        reference_rate = pairs(m) / reference_clock.cpu
        small_rate = pairs(m) / small_clock.cpu
        print(
            f"   RWMD per pair (cdist, nearest words, both ways), {m} reviews: "
            f"{reference_clock.cpu:.2f} s CPU ({reference_clock.wall:.2f} s wall): "
            f"{reference_rate:,.0f} pairs/s"
        )
        print(
            f"   RWMD wmdeval, the same {m} reviews: {small_clock.cpu:.3f} s CPU: "
            f"{small_rate:,.0f} pairs/s ({small_rate / reference_rate:.1f}x the per-pair way; "
            f"its rate at {n} reviews: {dense_rates['rwmd'] / reference_rate:.1f}x); "
            f"max |diff| {diff:.1e}"
        )
        summary.append(
            f"RWMD per pair vs wmdeval, {m} reviews: {reference_rate:,.0f} vs "
            f"{small_rate:,.0f} pairs/s (wmdeval {small_rate / reference_rate:.1f}x faster; "
            f"{dense_rates['rwmd'] / reference_rate:.1f}x at {n}), max |diff| {diff:.1e}"
        )

    # 3. estimate for 20news
    total = pairs(NEWS20_DOCS)
    gigabytes = NEWS20_DOCS**2 * 8 / 1e9
    print(
        f"3. estimate for 20news ({NEWS20_DOCS:,} documents, {total:,} pairs; one float64 "
        f"matrix {gigabytes:.1f} GB) at the rates of 2 (one core; this corpus's 50-d vectors "
        f"and {inputs.sizes.mean():.0f} words per review):"
    )
    print(
        f"   (RWMD's pairs/s at {n} reviews: {dense_rates['rwmd'] / half_rate:.2f}x those at "
        f"{half.n}; the estimates assume the rates at {n} hold)"
    )
    for name, rate in dense_rates.items():
        if name == "rwmd":
            # its work is every word's cost to each document's nearest word: it grows with
            # documents x vocabulary, not with pairs
            seconds = pairs(n) / rate * NEWS20_DOCS * NEWS20_WORDS / (n * len(inputs.vectors))
            how = f"documents x vocabulary ({NEWS20_WORDS:,} words)"
        else:
            seconds, how = total / rate, "pairs"
        print(f"   {name:<11} ~{duration(seconds)} (scaled by {how})")
        summary.append(
            f"{name}, 20news estimate ({NEWS20_DOCS:,} docs, from {n}, by {how}): "
            f"~{duration(seconds)}"
        )

    print("summary:")
    for line in summary:
        print(f"  {line}")


if __name__ == "__main__":
    main()
