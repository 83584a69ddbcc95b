"""``wmdeval <command> ...``: the one entry point every Snakemake rule calls.

:data:`COMMANDS` is the whole CLI, one row per command: its name, the package function it
runs, and the arguments, each passed to that function as the keyword argument ``dest``.
Functions are imported when their command runs, so a job pays only for what it uses.
An optional argument left out is not passed, so the function's own default applies;
arguments that are config knobs have no default here, because the rules pass the config's
value (docs/architecture.md "Where a default lives"). A job's log starts with its command
line, so any job can be rerun by hand. A WmdevalError (bad input) or an OSError (a full
disk, a folder without write permission: the file and why) ends the job with one line on
stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .core.errors import WmdevalError

# ---------------------------------------------------------------------- argument types


def json_value(text: str) -> Any:
    """A JSON argument: a config entry, a list, true/false, null."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def expected_coverage(text: str) -> dict[str, list[str]]:
    """``--expect``: what an aggregating job covers (see wmdeval.core.coverage)."""
    from .core.coverage import parse_expected

    try:
        return parse_expected(text)
    except WmdevalError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def block_name(text: str) -> tuple[int, int]:
    """A WMD work unit's name "3-of-8" -> (block 2, of 8 blocks), 0-based."""
    try:
        item, total = text.split("-of-")
        item, total = int(item), int(total)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N-of-M, got {text!r}") from None
    if not 1 <= item <= total:
        raise argparse.ArgumentTypeError(f"block {text!r} out of range")
    return item - 1, total


def name_and_path(text: str) -> tuple[str, str]:
    """``NAME=PATH`` -> (name, path)."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got '{text}'")
    return name, path


def checksum(text: str) -> str | None:
    """A SHA-256, or "null" (or nothing) for a file not pinned yet."""
    return None if text in ("null", "") else text


def vector_limit(text: str) -> int | None:
    """At most N vectors read; 0 = all."""
    return int(text) or None


# ---------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Arg:
    """One argument: ``--flag`` on the command line, ``dest`` in the function's call.

    ``dest`` may name two parameters when ``type`` returns a pair (``--block 3-of-8`` ->
    ``block=2, n_blocks=8``); ``collect`` turns repeated values into one (``dict``).
    """

    flag: str
    dest: str | tuple[str, ...]
    help: str = ""
    type: Callable[[str], Any] = str
    required: bool = True
    nargs: str | None = None
    repeat: bool = False
    collect: Callable | None = None

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        options: dict[str, Any] = {
            "help": self.help,
            "type": self.type,
            "dest": self.flag.lstrip("-").replace("-", "_"),
        }
        if self.nargs:
            options["nargs"] = self.nargs
        if self.repeat:
            options["action"] = "append"
        if self.required:
            options["required"] = True
        else:  # absent -> not passed: the function's default applies
            options["default"] = argparse.SUPPRESS
        parser.add_argument(self.flag, **options)

    def keywords(self, namespace: argparse.Namespace) -> dict[str, Any]:
        key = self.flag.lstrip("-").replace("-", "_")
        if not hasattr(namespace, key):
            return {}
        value = getattr(namespace, key)
        if self.collect is not None:
            value = self.collect(value)
        if isinstance(self.dest, tuple):
            return dict(zip(self.dest, value, strict=True))
        return {self.dest: value}


@dataclass(frozen=True)
class Command:
    """A sub-command: runs ``function`` ("module:name" under wmdeval) with its arguments."""

    name: str
    function: str
    help: str
    arguments: tuple[Arg, ...]

    def resolve(self) -> Callable:
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(f"wmdeval.{module}"), name)

    def run(self, namespace: argparse.Namespace) -> None:
        keywords: dict[str, Any] = {}
        for argument in self.arguments:
            keywords.update(argument.keywords(namespace))
        self.resolve()(**keywords)


def path(flag: str, dest: str, help: str = "", **options) -> Arg:
    return Arg(flag, dest, help, **options)


def expect(
    what: str, flag: str = "--expect", dest: str = "expected", required: bool = False
) -> Arg:
    return Arg(
        flag,
        dest,
        f"what {what} must cover exactly: {{column: [values]}} as JSON; "
        "every combination must have rows, and no other",
        expected_coverage,
        required,
    )


def table_outputs(what: str = "the inputs (dataset, variant, method)") -> tuple[Arg, ...]:
    """The arguments of a job that combines per-variant tables into CSV and Markdown."""
    return (
        path("--inputs", "paths", nargs="+"),
        path("--csv", "csv_path"),
        path("--md", "md_path"),
        expect(what),
    )


WMD_PATHS = Arg("--wmd", "wmd_paths", "{method slug: matrix path} (JSON)", json_value)
SEED = Arg("--seed", "seed", "seed of the job's random draws (from the config)", int)
# a knn search (and its forecast) of the clean variant: the original's solved pairs and
# certificates (all four files or none)
REUSED_PAIRS = (
    path(
        "--reuse-pairs",
        "reuse_pairs",
        "another variant's neighbour pairs whose distances are taken, not solved",
        required=False,
    ),
    path(
        "--reuse-documents",
        "reuse_documents",
        "the documents of --reuse-pairs (must hold these documents unchanged)",
        required=False,
    ),
    path(
        "--reuse-certificates",
        "reuse_certificates",
        "the certificates of --reuse-pairs: lists they prove need no search",
        required=False,
    ),
    path(
        "--reuse-splits",
        "reuse_splits",
        "the splits of --reuse-pairs (its candidate lists are recomputed from them)",
        required=False,
    ),
)
ONE_FOLD_SPLITS = Arg(
    "--splits",
    "splits_path",
    "splits of a one-fold dataset: its test x test pairs are skipped",
    required=False,
)

COMMANDS: tuple[Command, ...] = (
    # 0 downloads
    Command(
        "download",
        "ingest.download:run_download",
        "download a file with resume, retries and checksum",
        (
            path("--url", "url"),
            Arg("--sha256", "sha256", "expected SHA-256, or null", checksum),
            path("--lock-file", "lock_file", "where unpinned checksums are recorded"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "extract",
        "ingest.download:run_extract",
        "take one file out of a zip or .gz archive",
        (
            path("--archive", "archive"),
            path("--member", "member", "the archive member"),
            path("--out", "out_path"),
        ),
    ),
    # 1 datasets and embeddings
    Command(
        "ingest",
        "ingest.corpora:run_ingest",
        "read a corpus into documents and splits tables",
        (
            Arg("--spec", "spec", "the dataset's config (JSON)", json_value),
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
        ),
    ),
    Command(
        "ingest-kusner",
        "ingest.kusner:run_kusner",
        "read a Kusner et al. .mat file",
        (
            path("--mat", "path"),
            path("--dataset", "dataset"),
            Arg(
                "--normalize", "normalize", "unit-length word vectors (JSON true/false)", json_value
            ),
            path("--documents", "documents_out"),
            path("--splits", "splits_out"),
            path("--embeddings", "embeddings_out"),
            path("--report", "report_out"),
        ),
    ),
    Command(
        "train-embeddings",
        "ingest.embeddings:run_train",
        "train the demo's Word2Vec on raw-text datasets",
        (
            Arg("--spec", "spec", "the embedding's config (JSON)", json_value),
            Arg(
                "--corpora",
                "corpora",
                "the configs of the datasets it trains on (JSON list)",
                json_value,
            ),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "lookup-embeddings",
        "ingest.embeddings:run_lookup",
        "keep the vectors of the corpus vocabulary",
        (
            path("--documents", "documents_path"),
            path("--embedding", "embedding_path"),
            path("--format", "fmt"),
            Arg("--limit", "limit", "read at most N vectors; 0 = all", vector_limit),
            Arg("--normalize", "normalize", "unit-length vectors (JSON true/false)", json_value),
            path("--out", "out_path"),
        ),
    ),
    # 2-3 cleaning
    Command(
        "duplicates",
        "cleaning.duplicates:run_duplicates",
        "find duplicate groups and the clean variant's survivors",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--dataset", "dataset"),
            SEED,
            path("--groups", "groups_path"),
            path("--summary", "summary_path"),
            path("--kept", "kept_path"),
            path("--near", "near_path", "also write near-duplicate pairs here", required=False),
            Arg(
                "--near-max-l1",
                "near_max_l1",
                "largest L1 distance of a near pair (with --near)",
                float,
                required=False,
            ),
        ),
    ),
    Command(
        "filter-oov",
        "cleaning.vocabulary:run_filter",
        "drop out-of-vocabulary words, bound document size",
        (
            path("--documents", "documents_path"),
            path("--embeddings", "embeddings_path"),
            path("--dataset", "dataset"),
            Arg("--min-df", "min_df", "keep words in at least this many documents", int),
            Arg(
                "--max-words-per-doc",
                "max_words_per_doc",
                "document-size control (JSON: a number or null)",
                json_value,
            ),
            path("--out-documents", "out_documents"),
            path("--report", "out_report"),
        ),
    ),
    Command(
        "select-variant",
        "cleaning.vocabulary:run_select",
        "restrict documents and splits to a variant",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--kept", "kept_path", "doc ids to keep (Parquet); absent = all", required=False),
            path("--out-documents", "out_documents"),
            path("--out-splits", "out_splits"),
        ),
    ),
    # 4 distances
    Command(
        "wmd-block",
        "distances.wmd.blocks:run_block",
        "solve one stored block (work unit) of a WMD matrix",
        (
            path("--documents", "documents_path"),
            path("--embeddings", "embeddings_path"),
            ONE_FOLD_SPLITS,
            Arg("--weighting", "weighting", "bow, tfidf or wrd (Word Rotator's Distance)"),
            Arg("--block", ("block", "n_blocks"), "N-of-M (1-based)", block_name),
            Arg("--threads", "threads", "solver threads", int),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "wmd-gather",
        "distances.wmd.blocks:run_gather",
        "assemble WMD blocks into a distance matrix",
        (
            path("--documents", "documents_path"),
            path("--blocks", "block_paths", nargs="+"),
            ONE_FOLD_SPLITS,
            path("--method", "method_name"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "wmd-search",
        "distances.wmd.search:run_search",
        "exact kNN search of one query shard under WMD, pruned by lower bounds (wmd.mode knn)",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--embeddings", "embeddings_path"),
            Arg("--weighting", "weighting", "bow, tfidf or wrd (Word Rotator's Distance)"),
            Arg("--settings", "settings", "the evaluation config (JSON): query roles", json_value),
            Arg("--shard", ("shard", "n_shards"), "N-of-M (1-based)", block_name),
            Arg("--threads", "threads", "set-up threads, then search worker processes", int),
            path("--out-pairs", "out_pairs"),
            path("--out-certificates", "out_certificates"),
            *REUSED_PAIRS,
            path(
                "--out-relaxed-pairs",
                "out_relaxed_pairs",
                "also RWMD's neighbour pairs, from the search's bounds (WMD's search)",
                required=False,
            ),
            path(
                "--out-relaxed-certificates",
                "out_relaxed_certificates",
                "and their certificates (with --out-relaxed-pairs)",
                required=False,
            ),
        ),
    ),
    Command(
        "wmd-forecast",
        "planning.forecast:run_forecast",
        "time a seeded sample of a method's queries and forecast its whole search (knn mode)",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--embeddings", "embeddings_path"),
            Arg("--weighting", "weighting", "bow, tfidf or wrd (Word Rotator's Distance)"),
            Arg("--settings", "settings", "the evaluation config (JSON): query roles", json_value),
            Arg("--shards", "n_shards", "wmd.search_shards", int),
            Arg("--threads", "threads", "search workers (wmd.threads)", int),
            Arg("--queries-per-role", "queries_per_role", "wmd.forecast_queries", int),
            SEED,
            Arg("--checks", "checks", "other queries searched to measure shared pairs", int),
            path("--dataset", "dataset"),
            path("--variant", "variant"),
            path("--method", "method", "the method's slug"),
            path("--out", "out_path"),
            *REUSED_PAIRS,
            Arg(
                "--relaxed",
                "relaxed",
                "true: the search lists RWMD too (wmd-search --out-relaxed-pairs)",
                json_value,
                required=False,
            ),
        ),
    ),
    Command(
        "wmd-neighbours",
        "distances.wmd.search:run_merge",
        "combine a method's search shards into its neighbour table",
        (
            path("--documents", "documents_path"),
            path("--pairs", "pair_paths", nargs="+"),
            path("--certificates", "certificate_paths", nargs="+"),
            path("--out-pairs", "out_pairs"),
            path("--out-certificates", "out_certificates"),
        ),
    ),
    Command(
        "embedding-matrix",
        "distances.embedding:run_embedding_matrix",
        "a full matrix of an embedding distance without transport: wcd, rwmd or cosine-mean",
        (
            path("--documents", "documents_path"),
            path("--embeddings", "embeddings_path"),
            Arg("--method", "method", "wcd, rwmd or cosine-mean"),
            path("--out", "out_path"),
            Arg("--threads", "threads", "threads (rwmd)", int, required=False),
        ),
    ),
    Command(
        "embedding-neighbours",
        "distances.embedding:run_embedding_neighbours",
        "knn mode: a query shard's neighbour lists under wcd, rwmd or cosine-mean, no matrix",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--embeddings", "embeddings_path"),
            Arg("--method", "method", "wcd, rwmd or cosine-mean"),
            Arg("--settings", "settings", "the evaluation config (JSON): query roles", json_value),
            Arg("--shard", ("shard", "n_shards"), "N-of-M (1-based)", block_name),
            path("--out-pairs", "out_pairs"),
            path("--out-certificates", "out_certificates"),
        ),
    ),
    Command(
        "sample-variant",
        "cleaning.vocabulary:run_sample",
        "a seeded sample of a variant's documents, for what needs full matrices in knn mode",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            Arg("--size", "size", "documents to keep (all if fewer)", int),
            SEED,
            path(
                "--within",
                "within_path",
                "another variant's sample: keep exactly its documents that are here",
                required=False,
            ),
            path("--out-documents", "out_documents"),
            path("--out-splits", "out_splits"),
        ),
    ),
    Command(
        "wmd-subset",
        "distances.wmd.blocks:run_subset",
        "take a variant's rows and columns of a matrix",
        (
            path("--matrix", "matrix_path"),
            path("--documents", "documents_path"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "project-pca",
        "distances.pca:run_project",
        "project the embeddings to fewer dimensions by PCA",
        (
            path("--embeddings", "embeddings_path"),
            path("--documents", "documents_path"),
            Arg("--dim", "dim", "dimensions kept", int),
            path("--out", "out_path"),
        ),
    ),
    # 4 distances the user brings (distances/external.py)
    Command(
        "callable-shard",
        "distances.external:run_callable_shard",
        "compute one shard of rows of a matrix with a user's Python function",
        (
            path("--documents", "documents_path"),
            path("--embeddings", "embeddings_path"),
            path("--function", "function_spec", "package.module:function"),
            path("--shard", "shard", "k-of-m (1-based): which rows"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "callable-gather",
        "distances.external:run_callable_gather",
        "assemble the shards of a user's function into a distance matrix",
        (
            path("--documents", "documents_path"),
            path("--shards", "shard_paths", "every shard, in shard order", nargs="+"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "vector-matrix",
        "distances.external:run_vector_matrix",
        "a distance matrix between the user's document vectors",
        (
            path("--documents", "documents_path"),
            path("--vectors", "vectors_path", "Parquet (doc_id, vector) or .npy [docs, dim]"),
            path(
                "--ids",
                "ids_path",
                "doc_ids of .npy vectors: .npy integers or one per line",
                required=False,
            ),
            path("--metric", "metric", "cosine, l2 or l1"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "vector-neighbours",
        "distances.external:run_vector_neighbours",
        "knn mode: a query shard's neighbour lists under the user's document vectors",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            path("--vectors", "vectors_path", "Parquet (doc_id, vector) or .npy [docs, dim]"),
            path(
                "--ids",
                "ids_path",
                "doc_ids of .npy vectors: .npy integers or one per line",
                required=False,
            ),
            path("--metric", "metric", "cosine, l2 or l1"),
            Arg("--settings", "settings", "the evaluation config (JSON): query roles", json_value),
            Arg("--shard", ("shard", "n_shards"), "N-of-M (1-based)", block_name),
            path("--out-pairs", "out_pairs"),
            path("--out-certificates", "out_certificates"),
        ),
    ),
    Command(
        "precomputed-matrix",
        "distances.external:run_precomputed_matrix",
        "take a variant's rows and columns of the user's precomputed matrix, checked",
        (
            path("--documents", "documents_path"),
            path("--matrix", "matrix_path", "a DISTANCES table over the variant's documents"),
            path("--out", "out_path"),
        ),
    ),
    # 5 classification
    Command(
        "evaluate",
        "classification.knn:run_evaluate",
        "kNN and wkNN for all methods and folds",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            Arg("--wmd", "wmd_paths", "{method slug: matrix path} (JSON; {} for none)", json_value),
            Arg(
                "--neighbours",
                "neighbour_paths",
                "{method slug: [pairs path, certificates path]} (JSON): wmd.mode knn",
                json_value,
                required=False,
            ),
            Arg("--settings", "settings", "the evaluation config (JSON)", json_value),
            path("--dataset", "dataset"),
            path("--variant", "variant"),
            path("--out", "out_path"),
            path(
                "--out-predictions",
                "predictions_path",
                "also write the per-document predictions (PREDICTIONS)",
                required=False,
            ),
            Arg(
                "--methods",
                "methods",
                "only these methods (JSON list of slugs): one part of the evaluation",
                json_value,
                required=False,
            ),
        ),
    ),
    Command(
        "gather-evaluate",
        "classification.knn:run_gather",
        "one evaluation's scores and predictions from its parts (evaluate --methods)",
        (
            path("--scores", "scores_paths", "the parts' SCORES files, in method order", nargs="+"),
            path(
                "--predictions",
                "predictions_paths",
                "the parts' PREDICTIONS files, in the same order",
                nargs="+",
            ),
            expect("the scores and the predictions (dataset, variant, method, classifier)"),
            path("--out", "out_path"),
            path("--out-predictions", "predictions_path"),
        ),
    ),
    # 6 report
    Command(
        "collect-scores",
        "reporting.tables:run_collect",
        "concatenate per-dataset scores",
        (
            path("--scores", "paths", nargs="*"),
            expect("the scores (dataset, variant, method, classifier)"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "collect-predictions",
        "reporting.tables:run_collect_predictions",
        "concatenate per-dataset predictions",
        (
            path("--predictions", "paths", nargs="*"),
            expect("the predictions (dataset, variant, method, classifier)"),
            path("--out", "out_path"),
        ),
    ),
    Command(
        "cost-forecast-table",
        "planning.forecast:run_forecast_table",
        "every knn search's cost forecast in one table (results/tables/cost_forecast.tsv)",
        (
            # none when every dataset is in full mode
            path("--forecasts", "paths", nargs="*"),
            expect(
                'the forecasts ({"forecasts": ["dataset/variant/method", ...], "reused":'
                " [the clean searches that take the original's pairs]})",
                required=True,
            ),
            path("--out", "out_path"),
            Arg(
                "--cores",
                "cores",
                "core counts to forecast the searches' wall time on",
                int,
                required=False,
                nargs="+",
            ),
        ),
    ),
    Command(
        "tables",
        "reporting.tables:run_tables",
        "write the paper's tables as CSV and Markdown",
        (
            path("--scores", "scores_path"),
            path("--out-dir", "out_dir"),
            expect(
                "the scores (dataset, variant, method, classifier); its datasets "
                "are the columns, in order",
                required=True,
            ),
            path(
                "--allwords",
                "allwords_path",
                "scores with every word kept (Tables 4/5)",
                required=False,
            ),
            expect("the all-words scores", "--expect-allwords", "allwords_expected"),
            path(
                "--significance",
                "significance_path",
                "significance.csv, whose tests mark Table 2's Markdown",
                required=False,
            ),
            Arg(
                "--splits",
                "splits",
                "DATASET/VARIANT=PATH: the splits of each dataset variant of the scores",
                name_and_path,
                required=False,
                repeat=True,
                collect=dict,
            ),
            Arg(
                "--evaluation",
                "evaluation",
                "the config's evaluation settings (JSON): k above the training documents "
                "is a warning under each table",
                json_value,
                required=False,
            ),
            Arg("--alpha", "alpha", "significance level of those tests", float, required=False),
        ),
    ),
    Command(
        "summary-table",
        "reporting.tables:run_summaries",
        "combine one-row Parquet reports into CSV + Markdown",
        (
            path("--inputs", "inputs", nargs="+"),
            path("--csv", "csv_path"),
            path("--md", "md_path"),
            path("--title", "title"),
            path("--note", "note", "the caption under the table", required=False),
            expect("the rows (dataset, and variant where reported)"),
            Arg(
                "--wmd-modes",
                "wmd_modes",
                "{dataset: full|knn} (JSON): add each dataset's WMD mode as a column",
                json_value,
                required=False,
            ),
        ),
    ),
    Command(
        "figure3",
        "reporting.figures:run_figure3",
        "bar chart of kNN errors",
        (
            path("--scores", "scores_path"),
            path("--variant", "variant"),
            expect("the scores; its datasets are the panels, in order"),
            path("--out", "out_png"),
        ),
    ),
    Command(
        "figure4",
        "reporting.figures:run_figure4",
        "histograms of matched-word distances over nearest neighbours",
        (
            path("--datasets", "datasets", nargs="+"),
            path("--documents", "documents", "one per dataset", nargs="+"),
            path("--splits", "splits", "one per dataset", nargs="+"),
            path("--matrices", "matrices", "one per dataset", nargs="+"),
            path("--embeddings", "embeddings", "one per dataset", nargs="+"),
            path("--pca-embeddings", "pca_embeddings", nargs="+", required=False),
            path("--pca-matrices", "pca_matrices", nargs="+", required=False),
            Arg(
                "--max-documents",
                "max_documents",
                "nearest-neighbour pairs per dataset (seeded sample)",
                int,
            ),
            SEED,
            path("--out", "out_png"),
        ),
    ),
    Command(
        "figure5",
        "reporting.figures:run_figure5",
        "scatter of WMD against BOW (L1/L1)",
        (
            path("--datasets", "datasets", nargs="+"),
            path("--matrices", "matrices", nargs="+"),
            path("--documents", "documents", nargs="+"),
            path("--embeddings", "embeddings", "to name the dimension", nargs="+", required=False),
            path("--pca-matrices", "pca_matrices", nargs="+", required=False),
            Arg("--pca-dim", "pca_dim", "dimension of the PCA embeddings", int, required=False),
            Arg("--max-points", "max_points", "pairs drawn per panel", int),
            SEED,
            path("--out", "out_png"),
        ),
    ),
    # 8 significance
    Command(
        "significance",
        "analyses.significance:run_significance",
        "per-dataset tests fitting the splits (McNemar or corrected t), Holm; Wilcoxon, "
        "Bayesian signed-rank, Friedman/Nemenyi across datasets",
        (
            path("--predictions", "predictions_path"),
            expect("the predictions (dataset, variant, method, classifier)"),
            Arg(
                "--splits",
                "splits",
                "DATASET/VARIANT=PATH: the splits of each dataset variant of the predictions",
                name_and_path,
                repeat=True,
                collect=dict,
            ),
            Arg("--reference", "reference", "the second reference method (a name)"),
            Arg("--alpha", "alpha", "level of the tests after Holm's correction", float),
            Arg("--bootstrap", "n_resamples", "bootstrap resamples B", int),
            Arg("--level", "level", "confidence level of the per-dataset intervals", float),
            Arg("--rope", "rope", "region of practical equivalence, in percentage points", float),
            SEED,
            Arg("--variant", "variant", "variant of the critical-difference diagram"),
            Arg("--classifier", "classifier", "classifier of the critical-difference diagram"),
            path("--out-csv", "out_csv"),
            path("--out-datasets-csv", "out_datasets_csv"),
            path("--out-md", "out_md"),
            path("--out-png", "out_png"),
            path("--out-svg", "out_svg"),
        ),
    ),
    # 7 analyses
    Command(
        "analyses",
        "analyses.per_variant:run_analyses",
        "WMD vs BOW, N2O, crossmatch, corpus distances and KSC of one dataset variant",
        (
            path("--documents", "documents_path"),
            path("--splits", "splits_path"),
            WMD_PATHS,
            path("--dataset", "dataset"),
            path("--variant", "variant"),
            Arg(
                "--settings",
                "settings",
                "{analysis: its settings} as under analyses: in the config (JSON)",
                json_value,
            ),
            Arg(
                "--out",
                "outputs",
                "an analysis to run and its Parquet table",
                name_and_path,
                repeat=True,
                collect=dict,
            ),
            SEED,
        ),
    ),
    Command(
        "wmd-vs-bow-table",
        "analyses.wmd_vs_bow:run_analysis_table",
        "combine the WMD-vs-BOW analyses",
        table_outputs(),
    ),
    Command(
        "n2o-report",
        "analyses.n2o:run_n2o_report",
        "N2O heatmaps and the robustness table",
        (
            path("--inputs", "paths", nargs="+"),
            path("--heatmap", "heatmap_png"),
            path("--csv", "robustness_csv"),
            path("--md", "robustness_md"),
            expect("the inputs (dataset, variant, method)"),
        ),
    ),
    Command(
        "crossmatch-table",
        "analyses.crossmatch:run_crossmatch_table",
        "combine crossmatch results",
        table_outputs(),
    ),
    Command(
        "corpus-distance-table",
        "analyses.corpus_distance:run_corpus_distance_table",
        "combine corpus distances",
        table_outputs(),
    ),
    Command(
        "ksc-report",
        "analyses.corpus_distance:run_ksc_report",
        "KSC trajectory figures and how monotone each method's is",
        (
            *table_outputs(),
            path(
                "--figures",
                "figure_paths",
                "one PNG per KSC table, in the order of --inputs",
                nargs="+",
            ),
        ),
    ),
)

# -------------------------------------------------------------------------------- main


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="wmdeval", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help)
        for argument in command.arguments:
            argument.add_to(p)
        p.set_defaults(run=command.run)
    return top


def check_table() -> list[str]:
    """Problems of :data:`COMMANDS`: a function that does not import, or an argument
    that names no parameter of it, or a required parameter no argument fills."""
    problems = []
    for command in COMMANDS:
        try:
            function = command.resolve()
        except (ImportError, AttributeError) as exc:
            problems.append(f"{command.name}: {command.function}: {exc}")
            continue
        parameters = inspect.signature(function).parameters
        given, always = set(), set()
        for argument in command.arguments:
            dests = argument.dest if isinstance(argument.dest, tuple) else (argument.dest,)
            given |= set(dests)
            if argument.required:
                always |= set(dests)
        for name in sorted(given - set(parameters)):
            problems.append(f"{command.name}: {command.function} has no parameter {name!r}")
        for name, parameter in parameters.items():
            if parameter.default is inspect.Parameter.empty and name not in always:
                # an optional flag left out is not passed: the call would fail
                problems.append(f"{command.name}: nothing always passes {name!r}")
    return problems


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: unwind (temporary files are removed on the way) and stop."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum: int, frame) -> None:
    # A second signal while unwinding would cut short the removal of temporary files.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit status: 0 done, 1 bad input or an OSError (one line), 130 or
    143 (128 + the signal) interrupted by SIGINT or SIGTERM (one line, no output left
    behind)."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    args = parser().parse_args(argv)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        args.run(args)
    except WmdevalError as exc:
        print(f"wmdeval {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:  # a full disk, a missing permission: the file and why
        from .core.io import os_error_line

        print(f"wmdeval {args.command}: error: {os_error_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
        print(f"wmdeval {args.command}: interrupted", file=sys.stderr)
        return 128 + signum
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
