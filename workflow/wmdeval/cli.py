"""``wmdeval <stage> ...``: the one entry point every Snakemake rule calls.

Each sub-command parses its arguments and calls one ``run_*`` function of a stage
module; modules are imported lazily so a job pays only for what it uses. A
WmdevalError (bad input) ends the job with one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable

from .core.io import WmdevalError

COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable]] = {}


def command(name: str, help_text: str):
    def register(run: Callable):
        def decorate(arguments: Callable[[argparse.ArgumentParser], None]):
            COMMANDS[name] = (help_text, arguments, run)
            return arguments

        return decorate

    return register


def _json(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None


def _expected(text: str) -> dict[str, list[str]]:
    """``--expect``: what an aggregating job covers (see wmdeval.core.coverage)."""
    from .core.coverage import parse_expected

    try:
        return parse_expected(text)
    except WmdevalError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _expect_argument(p, name: str = "--expect", what: str = "the input",
                     required: bool = False) -> None:
    p.add_argument(name, type=_expected, default=None, required=required,
                   help=f"what {what} must cover exactly: {{column: [values]}} as JSON; "
                        "every combination must have rows, and no other")


def _block(text: str) -> tuple[int, int]:
    """A WMD work unit's name '3-of-8' -> (2, 8), 0-based."""
    try:
        item, total = text.split("-of-")
        item, total = int(item), int(total)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N-of-M, got {text!r}") from None
    if not 1 <= item <= total:
        raise argparse.ArgumentTypeError(f"block {text!r} out of range")
    return item - 1, total


# ------------------------------------------------------------------------------ stages
def _ingest(a):
    from .ingest.corpora import run_ingest

    run_ingest(a.spec, a.documents, a.splits)


@command("ingest", "read a corpus into documents and splits tables")(_ingest)
def _(p):
    p.add_argument("--spec", type=_json, required=True, help="the dataset's config (JSON)")
    p.add_argument("--documents", required=True)
    p.add_argument("--splits", required=True)


def _download(a):
    from .ingest.download import run_download

    run_download(a.url, None if a.sha256 in ("null", "") else a.sha256, a.out, a.lock_file)


@command("download", "download a file with resume, retries and checksum")(_download)
def _(p):
    p.add_argument("--url", required=True)
    p.add_argument("--sha256", default="null", help="expected SHA-256, or null")
    p.add_argument("--lock-file", default=None, help="where unpinned checksums are recorded")
    p.add_argument("--out", required=True)


def _extract(a):
    from .ingest.download import run_extract

    run_extract(a.archive, a.member, a.out)


@command("extract", "take one file out of a zip or .gz archive")(_extract)
def _(p):
    p.add_argument("--archive", required=True)
    p.add_argument("--member", default=None)
    p.add_argument("--out", required=True)


def _ingest_kusner(a):
    from .ingest.kusner import run_kusner

    run_kusner(a.mat, a.normalize, a.documents, a.splits, a.embeddings, a.report, a.dataset)


@command("ingest-kusner", "read a Kusner et al. .mat file")(_ingest_kusner)
def _(p):
    for name in ("--mat", "--dataset", "--documents", "--splits", "--embeddings", "--report"):
        p.add_argument(name, required=True)
    p.add_argument("--normalize", type=_json, default=False)


def _train(a):
    from .ingest.corpora import tokenized_corpus
    from .ingest.embeddings import run_train

    run_train([tokenized_corpus(s) for s in a.corpora], a.spec, a.out)


@command("train-embeddings", "train the demo's Word2Vec on raw-text datasets")(_train)
def _(p):
    p.add_argument("--spec", type=_json, required=True, help="the embedding's config (JSON)")
    p.add_argument("--corpora", type=_json, required=True, help="dataset configs (JSON list)")
    p.add_argument("--out", required=True)


def _lookup(a):
    from .ingest.embeddings import run_lookup

    run_lookup(a.documents, a.embedding, a.format, a.limit or None, a.normalize, a.out)


@command("lookup-embeddings", "keep the vectors of the corpus vocabulary")(_lookup)
def _(p):
    p.add_argument("--documents", required=True)
    p.add_argument("--embedding", required=True)
    p.add_argument("--format", required=True)
    p.add_argument("--limit", type=int, default=0, help="read at most N vectors; 0 = all")
    p.add_argument("--normalize", type=_json, default=True)
    p.add_argument("--out", required=True)


def _duplicates(a):
    from .cleaning.duplicates import run_duplicates

    run_duplicates(a.documents, a.splits, a.dataset, a.seed, a.groups, a.summary, a.kept,
                   near_path=a.near, near_max_l1=a.near_max_l1)


@command("duplicates", "find duplicate groups and the clean variant's survivors")(_duplicates)
def _(p):
    for name in ("--documents", "--splits", "--dataset", "--groups", "--summary", "--kept"):
        p.add_argument(name, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--near", default=None, help="also write near-duplicate pairs here")
    p.add_argument("--near-max-l1", type=float, default=0.1)


def _filter(a):
    from .cleaning.vocabulary import run_filter

    run_filter(a.documents, a.embeddings, a.dataset, a.min_df, a.max_words_per_doc,
               a.out_documents, a.report)


@command("filter-oov", "drop out-of-vocabulary words, bound document size")(_filter)
def _(p):
    for name in ("--documents", "--embeddings", "--dataset", "--out-documents", "--report"):
        p.add_argument(name, required=True)
    p.add_argument("--min-df", type=int, default=1)
    p.add_argument("--max-words-per-doc", type=_json, default=None)


def _select(a):
    from .cleaning.vocabulary import run_select

    run_select(a.documents, a.splits, a.kept, a.out_documents, a.out_splits)


@command("select-variant", "restrict documents and splits to a variant")(_select)
def _(p):
    for name in ("--documents", "--splits", "--out-documents", "--out-splits"):
        p.add_argument(name, required=True)
    p.add_argument("--kept", default=None, help="doc ids to keep (Parquet); absent = all")


def _wmd_block(a):
    from .distances.wmd import run_block

    block, n_blocks = a.block
    run_block(a.documents, a.embeddings, a.weighting, block, n_blocks, a.threads, a.out,
              splits_path=a.splits)


@command("wmd-block", "solve one stored block (work unit) of a WMD matrix")(_wmd_block)
def _(p):
    for name in ("--documents", "--embeddings", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--weighting", choices=("bow", "tfidf"), required=True)
    p.add_argument("--block", type=_block, required=True, help="N-of-M (1-based)")
    p.add_argument("--splits", default=None,
                   help="splits of a one-fold dataset: its test x test pairs are skipped")
    p.add_argument("--threads", type=int, default=1)


def _wmd_gather(a):
    from .distances.wmd import run_gather

    run_gather(a.documents, a.blocks, a.out, a.method, splits_path=a.splits)


@command("wmd-gather", "assemble WMD blocks into a distance matrix")(_wmd_gather)
def _(p):
    for name in ("--documents", "--out", "--method"):
        p.add_argument(name, required=True)
    p.add_argument("--blocks", nargs="+", required=True)
    p.add_argument("--splits", default=None,
                   help="splits of a one-fold dataset: its test x test pairs are skipped")


def _wmd_subset(a):
    from .distances.wmd import run_subset

    run_subset(a.matrix, a.documents, a.out)


@command("wmd-subset", "take a variant's rows and columns of a matrix")(_wmd_subset)
def _(p):
    for name in ("--matrix", "--documents", "--out"):
        p.add_argument(name, required=True)


def _project(a):
    from .distances.pca import run_project

    run_project(a.embeddings, a.documents, a.dim, a.out)


@command("project-pca", "project the embeddings to fewer dimensions by PCA")(_project)
def _(p):
    for name in ("--embeddings", "--documents", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--dim", type=int, required=True)


def _evaluate(a):
    from .classification.knn import run_evaluate

    run_evaluate(a.documents, a.splits, a.wmd, a.settings, a.dataset, a.variant, a.out)


@command("evaluate", "kNN and wkNN for all methods and folds")(_evaluate)
def _(p):
    for name in ("--documents", "--splits", "--dataset", "--variant", "--out"):
        p.add_argument(name, required=True)
    p.add_argument("--wmd", type=_json, default={}, help="{method slug: matrix path} (JSON)")
    p.add_argument("--settings", type=_json, required=True, help="evaluation config (JSON)")


def _wmd_vs_bow_table(a):
    from .analyses.wmd_vs_bow import run_analysis_table

    run_analysis_table(a.inputs, a.csv, a.md, a.expect)


@command("wmd-vs-bow-table", "combine the WMD-vs-BOW analyses")(_wmd_vs_bow_table)
def _(p):
    _table_arguments(p)


def _table_arguments(p) -> None:
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    _expect_argument(p, what="the inputs (dataset, variant, method)")


def _name_and_path(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, got '{text}'")
    return name, path


def _analyses(a):
    from .analyses.per_variant import run_analyses

    run_analyses(a.documents, a.splits, a.wmd, a.dataset, a.variant, a.settings, dict(a.out),
                 a.seed)


@command("analyses", "N2O, crossmatch, corpus distances, KSC and WMD vs BOW of one dataset "
         "variant")(_analyses)
def _(p):
    for name in ("--documents", "--splits", "--dataset", "--variant"):
        p.add_argument(name, required=True)
    p.add_argument("--wmd", type=_json, required=True, help="{method slug: matrix path} (JSON)")
    p.add_argument("--settings", type=_json, required=True,
                   help="{analysis: its settings} as under analyses: in the config (JSON)")
    p.add_argument("--out", type=_name_and_path, action="append", required=True,
                   metavar="NAME=PATH", help="an analysis to run and its Parquet table")
    p.add_argument("--seed", type=int, default=0)


def _n2o_report(a):
    from .analyses.n2o import run_n2o_report

    run_n2o_report(a.inputs, a.heatmap, a.csv, a.md, expected=a.expect)


@command("n2o-report", "N2O heatmaps and the robustness table")(_n2o_report)
def _(p):
    _table_arguments(p)
    p.add_argument("--heatmap", required=True)


def _crossmatch_table(a):
    from .analyses.crossmatch import run_crossmatch_table

    run_crossmatch_table(a.inputs, a.csv, a.md, a.expect)


@command("crossmatch-table", "combine crossmatch results")(_crossmatch_table)
def _(p):
    _table_arguments(p)


def _corpus_distance_table(a):
    from .analyses.corpus_distance import run_corpus_distance_table

    run_corpus_distance_table(a.inputs, a.csv, a.md, a.expect)


@command("corpus-distance-table", "combine corpus distances")(_corpus_distance_table)
def _(p):
    _table_arguments(p)


def _ksc_report(a):
    from .analyses.corpus_distance import run_ksc_report

    run_ksc_report(a.inputs, a.figures, a.csv, a.md, a.expect)


@command("ksc-report", "KSC trajectory figures and how monotone each method's is")(_ksc_report)
def _(p):
    _table_arguments(p)
    p.add_argument("--figures", nargs="+", required=True,
                   help="one PNG per KSC table, in the order of --inputs")


def _collect(a):
    from .reporting.tables import run_collect

    run_collect(a.scores, a.out, a.expect)


@command("collect-scores", "concatenate per-dataset scores")(_collect)
def _(p):
    p.add_argument("--scores", nargs="*", required=True)
    p.add_argument("--out", required=True)
    _expect_argument(p, what="the scores (dataset, variant, method, classifier)")


def _tables(a):
    from .reporting.tables import run_tables

    run_tables(a.scores, a.out_dir, a.expect, a.allwords, a.expect_allwords)


@command("tables", "write the paper's tables as CSV and Markdown")(_tables)
def _(p):
    p.add_argument("--scores", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--allwords", default=None, help="scores with every word kept (Tables 4/5)")
    _expect_argument(p, what="the scores (dataset, variant, method, classifier); its "
                     "datasets are the columns, in order", required=True)
    _expect_argument(p, "--expect-allwords", what="the all-words scores")


def _summaries(a):
    from .reporting.tables import run_summaries

    run_summaries(a.inputs, a.csv, a.md, a.title, a.note, a.expect)


@command("summary-table", "combine one-row Parquet reports into CSV + Markdown")(_summaries)
def _(p):
    p.add_argument("--inputs", nargs="+", required=True)
    p.add_argument("--csv", required=True)
    p.add_argument("--md", required=True)
    p.add_argument("--title", required=True)
    p.add_argument("--note", default="One row per dataset.")
    _expect_argument(p, what="the rows (dataset, and variant where reported)")


def _figure3(a):
    from .reporting.figures import run_figure3

    run_figure3(a.scores, a.out, a.variant, a.expect)


@command("figure3", "bar chart of kNN errors")(_figure3)
def _(p):
    p.add_argument("--scores", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--out", required=True)
    _expect_argument(p, what="the scores; its datasets are the panels, in order")


def _figure4(a):
    from .reporting.figures import Figure4Item, run_figure4

    n = len(a.datasets)
    pca_embeddings = a.pca_embeddings or [None] * n
    pca_matrices = a.pca_matrices or [None] * n
    items = [Figure4Item(*fields) for fields in zip(
        a.datasets, a.documents, a.splits, a.matrices, a.embeddings, pca_embeddings,
        pca_matrices, strict=True)]
    run_figure4(items, a.out, max_documents=a.max_documents, seed=a.seed)


@command("figure4", "histograms of matched-word distances over nearest neighbours")(_figure4)
def _(p):
    for name in ("--datasets", "--documents", "--splits", "--matrices", "--embeddings"):
        p.add_argument(name, nargs="+", required=True, help="one per dataset")
    p.add_argument("--pca-embeddings", nargs="+", default=None)
    p.add_argument("--pca-matrices", nargs="+", default=None)
    p.add_argument("--max-documents", type=int, default=2000,
                   help="nearest-neighbour pairs per dataset (seeded sample)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)


def _figure5(a):
    from .reporting.figures import embedding_dimension, run_figure5

    pca = a.pca_matrices or [None] * len(a.datasets)
    items = list(zip(a.datasets, a.matrices, a.documents, pca, strict=True))
    full_dim = embedding_dimension(a.embeddings[0]) if a.embeddings else None
    run_figure5(items, a.out, max_points=a.max_points, seed=a.seed, full_dim=full_dim,
                pca_dim=a.pca_dim)


@command("figure5", "scatter of WMD against BOW (L1/L1)")(_figure5)
def _(p):
    p.add_argument("--datasets", nargs="+", required=True)
    p.add_argument("--matrices", nargs="+", required=True)
    p.add_argument("--documents", nargs="+", required=True)
    p.add_argument("--embeddings", nargs="+", default=None, help="to name the dimension")
    p.add_argument("--pca-matrices", nargs="+", default=None)
    p.add_argument("--pca-dim", type=int, default=None)
    p.add_argument("--max-points", type=int, default=20000, help="pairs drawn per panel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)


# -------------------------------------------------------------------------------- main
def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="wmdeval", description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest="command", required=True)
    for name, (help_text, arguments, run) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        arguments(p)
        p.set_defaults(run=run)
    return top


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
    """Run one command. Exit status: 0 done, 1 bad input (one line), 130 or 143 (128 + the
    signal) interrupted by SIGINT or SIGTERM (one line, no output left behind)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    args = parser().parse_args(argv)
    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        args.run(args)
    except WmdevalError as exc:
        print(f"wmdeval {args.command}: error: {exc}", file=sys.stderr)
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
