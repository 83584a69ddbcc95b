"""Result tables: collect the per-dataset scores and render the paper's Tables 2 to 8.

Every cell is the test error in percent over the folds of one dataset: "mean ± std"
(numpy's std, ddof = 0) for five-fold datasets, a single number for one-fold datasets
(docs/protocol.md §7). The "rel." column is the mean over datasets of a method's mean error
divided by the mean error of a reference row, BOW (L1/L1) with kNN by default.
"""

from __future__ import annotations

import csv
import io as stdio
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import methods as methods_module
from ..core import schemas
from ..core.coverage import Expected, expects_rows, require_exact_coverage
from ..core.coverage import sources as coverage_sources
from ..core.errors import WmdevalError
from ..core.groups import SPLIT_COMPARISON
from ..core.io import read_table, read_tables, write_table, write_text
from ..core.roles import complete_settings, k_above_training

#: Appended to the cell text of the lowest mean in each column (Markdown bold would be
#: lost in the CSV, so one plain-text marker serves both).
BEST_MARKER = " *"
BEST_NOTE = "`*` marks the lowest mean error in each column (and the lowest rel.)."

#: Variants and classifiers in the order they are reported; unknown values sort after.
VARIANT_ORDER = ("original", "clean")
CLASSIFIER_ORDER = ("knn", "wknn")
METHOD_NAMES = tuple(m.name for m in methods_module.METHODS)

# Means closer than this (in percent) count as a tie for the best-row marker: equal
# error counts can differ in the last bits after averaging folds in another order.
_TIE_TOLERANCE = 1e-9


# --------------------------------------------------------------------------- collect


def _rank(order: Sequence[str], value: str) -> tuple[int, str]:
    """Sort key: position in ``order``, unknown values after it in alphabetical order."""
    return (order.index(value), "") if value in order else (len(order), value)


# The table order of method names, and "(<d>-d PCA)" names, are those of core.methods.
method_sort_key = methods_module.name_order
parse_pca_method = methods_module.parse_pca_method


def beyond_paper(name: str) -> bool:
    """A method that is not one of the paper's 14 nor a PCA WMD."""
    return name not in METHOD_NAMES and parse_pca_method(name) is None


#: Appended to the name of a method beyond the paper in every table.
BEYOND_MARKER = " †"
BEYOND_NOTE = "`†`: a distance beyond the paper (not evaluated by Sato et al., ICML 2022)."


def collect_scores(
    paths: Sequence[str | os.PathLike], expected: Expected | None = None
) -> pa.Table:
    """Concatenate SCORES files, sorted by dataset (order of first appearance in
    ``paths``), variant, method (Table 2 row order), classifier and fold.

    A (dataset, variant, method, classifier, fold) key present twice means two inputs
    overlap, which would silently double-count a fold, so it is an error. With
    ``expected``, the rows must cover exactly those datasets, variants, methods and
    classifiers (:mod:`wmdeval.core.coverage`).
    """
    table = read_tables(paths, schemas.SCORES, expected)
    columns = {name: table.column(name).to_pylist() for name in schemas.SCORES.names}
    dataset_order = list(dict.fromkeys(columns["dataset"]))

    keys = list(
        zip(
            columns["dataset"],
            columns["variant"],
            columns["method"],
            columns["classifier"],
            columns["fold"],
            strict=True,
        )
    )
    seen: set[tuple] = set()
    for key in keys:
        if key in seen:
            raise WmdevalError(f"scores: duplicate row for {key} in {', '.join(map(str, paths))}")
        seen.add(key)

    def sort_key(row: int) -> tuple:
        dataset, variant, method, classifier, fold = keys[row]
        return (
            dataset_order.index(dataset),
            _rank(VARIANT_ORDER, variant),
            method_sort_key(method),
            _rank(CLASSIFIER_ORDER, classifier),
            fold,
        )

    order = sorted(range(table.num_rows), key=sort_key)
    return table.take(pa.array(order, type=pa.int64()))


def run_collect(
    paths: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """Write ``results/scores.parquet`` from the per-(dataset, variant) score files."""
    write_table(collect_scores(paths, expected), out_path, schemas.SCORES)


def run_collect_predictions(
    paths: Sequence[str | os.PathLike],
    out_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """Write ``results/predictions.parquet`` from the per-(dataset, variant) prediction
    files, in the order given (each file is in method order already). A test document
    predicted twice for the same method, classifier and fold (overlapping inputs) is an
    error; with ``expected`` the rows must cover exactly those datasets, variants,
    methods and classifiers."""
    table = read_tables(paths, schemas.PREDICTIONS, expected)
    key_columns = ("dataset", "variant", "method", "classifier", "fold", "doc_id")
    keys = table.select(list(key_columns)).group_by(list(key_columns)).aggregate([])
    if keys.num_rows != table.num_rows:
        raise WmdevalError(
            f"predictions: a test document appears twice for the same method, classifier "
            f"and fold in {', '.join(map(str, paths))}"
        )
    write_table(table, out_path, schemas.PREDICTIONS)


# --------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class CellErrors:
    """Test errors (percent) of one method on one dataset, one value per fold."""

    errors: np.ndarray

    @property
    def mean(self) -> float:
        return float(np.mean(self.errors))

    def text(self) -> str:
        if len(self.errors) > 1:
            return f"{self.mean:.1f} ± {float(np.std(self.errors)):.1f}"
        return f"{self.mean:.1f}"


def format_errors(errors_percent: Sequence[float]) -> str:
    """ "mean ± std" (one decimal, ddof = 0) for several folds, the number for one fold."""
    return CellErrors(np.asarray(errors_percent, dtype=np.float64)).text()


def fold_errors(
    scores: pa.Table, variant: str, classifier: str
) -> dict[tuple[str, str], CellErrors]:
    """(method, dataset) -> per-fold test errors in percent, in fold order."""
    columns = {
        n: scores.column(n).to_pylist()
        for n in ("dataset", "variant", "method", "classifier", "fold", "test_error")
    }
    collected: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for dataset, var, method, clf, fold, error in zip(*columns.values(), strict=True):
        if var == variant and clf == classifier:
            collected.setdefault((method, dataset), []).append((fold, 100.0 * error))
    return {
        key: CellErrors(np.array([e for _, e in sorted(values)]))
        for key, values in collected.items()
    }


def relative_error(
    method_means: dict[str, float], reference_means: dict[str, float], datasets: Sequence[str]
) -> float | None:
    """Mean over the method's datasets of its mean error / the reference's mean error.

    None when the reference lacks one of those datasets or has a zero error there
    (the ratio is undefined), or when the method has no dataset at all.
    """
    ratios = []
    for dataset in datasets:
        if dataset not in method_means:
            continue
        reference = reference_means.get(dataset)
        if reference is None or reference == 0:
            return None
        ratios.append(method_means[dataset] / reference)
    return float(np.mean(ratios)) if ratios else None


def table_header(datasets: Sequence[str]) -> list[str]:
    return ["method", *datasets, "rel."]


def paper_table(
    scores: pa.Table,
    variant: str,
    classifier: str,
    methods: Sequence[str] | None,
    datasets: Sequence[str],
    reference_variant: str | None = None,
    reference_classifier: str = "knn",
    reference_method: str = methods_module.REFERENCE,
) -> list[list[str]]:
    """Rows of one results table: ``[method, cell per dataset..., rel.]`` (all strings).

    Rows are the requested ``methods`` (default: all 14) that have scores, in the order
    of :func:`method_sort_key`. rel. is relative to ``reference_method`` under
    ``reference_classifier`` and ``reference_variant`` (default: the table's own
    variant); for the paper's Table 6 that is BOW (L1/L1) with the standard kNN, not
    with wkNN. Cells without scores are empty strings; the lowest mean of each column
    carries :data:`BEST_MARKER`.
    """
    wanted = METHOD_NAMES if methods is None else tuple(methods)
    cells = fold_errors(scores, variant, classifier)
    reference_cells = fold_errors(scores, reference_variant or variant, reference_classifier)
    reference_means = {d: c.mean for (m, d), c in reference_cells.items() if m == reference_method}
    present = {m for m, _ in cells}
    row_methods = sorted({m for m in wanted if m in present}, key=method_sort_key)

    # Numeric value behind every cell (None = empty), used for the best-row marker.
    values: list[list[float | None]] = []
    texts: list[list[str]] = []
    for method in row_methods:
        row_cells = [cells.get((method, d)) for d in datasets]
        means = {d: c.mean for d, c in zip(datasets, row_cells, strict=True) if c is not None}
        rel = relative_error(means, reference_means, datasets)
        values.append([c.mean if c is not None else None for c in row_cells] + [rel])
        texts.append(
            [c.text() if c is not None else "" for c in row_cells]
            + ["" if rel is None else f"{rel:.3f}"]
        )

    for column in range(len(datasets) + 1):
        column_values = [row[column] for row in values if row[column] is not None]
        if not column_values:
            continue
        best = min(column_values)
        for row, text in zip(values, texts, strict=True):
            if row[column] is not None and row[column] - best <= _TIE_TOLERANCE:
                text[column] += BEST_MARKER
    return [
        [method + (BEYOND_MARKER if beyond_paper(method) else ""), *text]
        for method, text in zip(row_methods, texts, strict=True)
    ]


def markdown_table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """A GitHub pipe table (no trailing newline)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def comparison_tables(
    rows: Sequence[dict], class_cell: Callable[[dict], str], split_cell: Callable[[list[dict]], str]
) -> tuple[str, str]:
    """Markdown tables of per-comparison results (rows of the groups of
    :func:`wmdeval.core.groups.comparisons`): classes (methods x dataset variant: class
    pair, ``class_cell`` of the row) and train vs test (methods x dataset variant,
    ``split_cell`` of the rows of its folds)."""
    methods = sorted({r["method"] for r in rows}, key=method_sort_key)
    classes = [r for r in rows if not r["comparison"].startswith(SPLIT_COMPARISON)]
    columns = list(dict.fromkeys((r["dataset"], r["variant"], r["comparison"]) for r in classes))
    cells = {
        (r["method"], r["dataset"], r["variant"], r["comparison"]): class_cell(r) for r in classes
    }
    class_table = markdown_table(
        [[m] + [cells.get((m, *c), "") for c in columns] for m in methods],
        ["method"] + [f"{d} ({v}): {c}" for d, v, c in columns],
    )

    folds: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["comparison"].startswith(SPLIT_COMPARISON):
            folds.setdefault((r["method"], r["dataset"], r["variant"]), []).append(r)
    groups = list(dict.fromkeys((d, v) for _, d, v in folds))
    split_table = markdown_table(
        [
            [m] + [split_cell(folds[(m, *g)]) if (m, *g) in folds else "" for g in groups]
            for m in methods
        ],
        ["method"] + [f"{d} ({v})" for d, v in groups],
    )
    return class_table, split_table


def write_table_files(
    rows: Sequence[Sequence[str]],
    header: Sequence[str],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    title: str,
    note: str,
    markdown_rows: Sequence[Sequence[str]] | None = None,
) -> None:
    """Write the table as CSV (header row first) and as Markdown (title, table, note);
    ``markdown_rows``: the Markdown's cells where they carry more marks than the CSV's."""
    buffer = stdio.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    shown = rows if markdown_rows is None else markdown_rows
    markdown = f"# {title}\n\n{markdown_table(shown, header)}\n\n{note}\n"
    write_text(csv_path, buffer.getvalue())
    write_text(md_path, markdown)


@dataclass(frozen=True)
class TableSpec:
    name: str  # file stem under results/tables
    title: str
    variant: str
    classifier: str
    methods: tuple[str, ...]
    reference_variant: str | None = None  # variant of the rel. reference; None = own variant
    # Also a row for every "(<d>-d PCA)" method that has scores (Table 8): which
    # dimensions were run is a config choice, so the rows come from the scores.
    with_pca_methods: bool = False
    extra_note: str = ""
    # Scores with every word kept (Tables 4/5): their columns are the datasets that have
    # them (raw-text datasets, with all_words on), not every dataset of the run.
    all_words: bool = False
    # Also a row for every method beyond the paper that has scores (marked with †).
    beyond_rows: bool = False
    # The Markdown marks cells whose error differs significantly from BOW (L1/L1)'s.
    significance_marks: bool = False


_FIRST_BLOCK = ("BOW (L1/L1)", "TF-IDF (L1/L1)", "WMD", "WMD-TF-IDF")
_WKNN_METHODS = _FIRST_BLOCK
_ALLWORDS_METHODS = ("BOW (L1/L1)", "TF-IDF (L1/L1)")
# The paper's Table 8 repeats these two rows of Table 2 above the low-dimensional WMD.
_PCA_REFERENCE_METHODS = ("BOW (L1/L1)", "WMD")

_PCA_NOTE = (
    "The first two rows are the same as in {knn_table} for reference. "
    '"(d-d PCA)": the same distance computed on the word vectors projected to d '
    "dimensions by PCA, fit on every word vector of the dataset with one row per "
    "document that contains the word; the projected vectors are not re-normalised."
)


def allwords_variant(variant: str) -> str:
    """How scores with every word kept (paper Tables 4/5) are told apart inside the tables."""
    return f"{variant} (all words)"


TABLES: tuple[TableSpec, ...] = (
    TableSpec(
        "table2",
        "Table 2: kNN test error (%), original data",
        "original",
        "knn",
        METHOD_NAMES,
        beyond_rows=True,
        significance_marks=True,
    ),
    TableSpec(
        "table3",
        "Table 3: kNN test error (%), clean data (no duplicate documents)",
        "clean",
        "knn",
        _FIRST_BLOCK,
        extra_note="Table 7 has every normalisation and metric on the clean data.",
        beyond_rows=True,
    ),
    TableSpec(
        "table7",
        "Table 7: kNN test error (%), clean data, all normalisations and metrics",
        "clean",
        "knn",
        METHOD_NAMES,
        beyond_rows=True,
    ),
    TableSpec(
        "table4",
        "Table 4: kNN test error (%) with all words kept, original data",
        allwords_variant("original"),
        "knn",
        _ALLWORDS_METHODS,
        "original",
        all_words=True,
    ),
    TableSpec(
        "table5",
        "Table 5: kNN test error (%) with all words kept, clean data",
        allwords_variant("clean"),
        "knn",
        _ALLWORDS_METHODS,
        "clean",
        all_words=True,
    ),
    TableSpec(
        "table6",
        "Table 6: weighted kNN (wkNN) test error (%), original data",
        "original",
        "wknn",
        _WKNN_METHODS,
        beyond_rows=True,
    ),
    TableSpec(
        "table6_clean",
        "Table 6 on clean data: weighted kNN (wkNN) test error (%)",
        "clean",
        "wknn",
        _WKNN_METHODS,
        beyond_rows=True,
    ),
    TableSpec(
        "table8",
        "Table 8: kNN test error (%) of WMD with low-dimensional PCA embeddings, original data",
        "original",
        "knn",
        _PCA_REFERENCE_METHODS,
        with_pca_methods=True,
        extra_note=_PCA_NOTE.format(knn_table="Table 2"),
    ),
    TableSpec(
        "table8_clean",
        "Table 8 on clean data: kNN test error (%) of WMD with low-dimensional PCA embeddings",
        "clean",
        "knn",
        _PCA_REFERENCE_METHODS,
        with_pca_methods=True,
        extra_note=_PCA_NOTE.format(knn_table="Table 7"),
    ),
)


def _scored_methods(
    scores: pa.Table, variant: str, classifier: str, wanted: Callable[[str], object]
) -> list[str]:
    """The methods ``wanted`` accepts that have scores for ``variant`` and ``classifier``,
    in table order."""
    columns = [scores.column(n).to_pylist() for n in ("variant", "classifier", "method")]
    found = {
        method
        for var, clf, method in zip(*columns, strict=True)
        if var == variant and clf == classifier and wanted(method)
    }
    return sorted(found, key=method_sort_key)


def pca_methods(scores: pa.Table, variant: str, classifier: str) -> list[str]:
    """The "(<d>-d PCA)" methods with scores for ``variant`` and ``classifier``, by d."""
    return _scored_methods(scores, variant, classifier, parse_pca_method)


def beyond_paper_methods(scores: pa.Table, variant: str, classifier: str) -> list[str]:
    """The methods beyond the paper with scores for ``variant`` and ``classifier``."""
    return _scored_methods(scores, variant, classifier, beyond_paper)


def table_methods(spec: TableSpec, scores: pa.Table) -> tuple[str, ...]:
    """The methods a table asks for: its fixed rows plus, for Table 8, the PCA rows, and
    for the tables with ``beyond_rows`` the methods beyond the paper."""
    found = spec.methods
    if spec.with_pca_methods:
        found = (*found, *pca_methods(scores, spec.variant, spec.classifier))
    if spec.beyond_rows:
        found = (*found, *beyond_paper_methods(scores, spec.variant, spec.classifier))
    return found


#: The kNN table whose first row is the rel. reference of a wkNN table.
_KNN_TABLE = {"original": "Table 2", "clean": "Table 3"}


def empty_test_documents(scores: pa.Table, variant: str, classifier: str) -> dict[str, int]:
    """dataset -> test documents without words, summed over folds (0s left out).

    Every method of a fold sees the same test set, so the per-fold count is the
    largest any method reports.
    """
    per_fold: dict[tuple[str, int], int] = {}
    columns = [
        scores.column(n).to_pylist()
        for n in ("dataset", "variant", "classifier", "fold", "n_test_empty")
    ]
    for dataset, var, clf, fold, empty in zip(*columns, strict=True):
        if var == variant and clf == classifier:
            per_fold[dataset, fold] = max(per_fold.get((dataset, fold), 0), empty)
    totals: dict[str, int] = {}
    for (dataset, _), empty in per_fold.items():
        totals[dataset] = totals.get(dataset, 0) + empty
    return {d: n for d, n in totals.items() if n > 0}


def table_note(spec: TableSpec, scores: pa.Table, has_rows: bool) -> str:
    if not has_rows:
        if spec.all_words:
            return (
                "No dataset of this run has scores with every word kept (all_words is "
                "off, or no dataset has raw text): this table has no rows."
            )
        return (
            f"No scores for variant '{spec.variant}' with classifier '{spec.classifier}' "
            "(the variant is not in this run's variants): this table has no rows."
        )
    reference = spec.reference_variant or spec.variant
    lines = [
        "Test error in percent: mean ± standard deviation over the folds (ddof = 0) for "
        "five-fold datasets, a single number for one-fold datasets.",
        f"rel.: mean over datasets of the method's mean error divided by that of "
        f"{methods_module.REFERENCE} with the standard kNN on the {reference} data"
        + (
            f" (the first row of {_KNN_TABLE.get(reference, 'the kNN table')})."
            if spec.classifier != "knn" or reference != spec.variant
            else "."
        ),
        BEST_NOTE,
    ]
    if spec.extra_note:
        lines.insert(1, spec.extra_note)
    if spec.beyond_rows and beyond_paper_methods(scores, spec.variant, spec.classifier):
        lines.append(BEYOND_NOTE)
    if spec.with_pca_methods and not pca_methods(scores, spec.variant, spec.classifier):
        lines.insert(1, 'No "(d-d PCA)" scores for this data: only the reference rows.')
    empty = empty_test_documents(scores, spec.variant, spec.classifier)
    if empty:
        counts = ", ".join(f"{d} {n}" for d, n in empty.items())
        lines.append(f"Test documents without words, counted as errors for every method: {counts}.")
    return "\n\n".join(lines)


#: Markdown marks of a significant difference to BOW (L1/L1): lower, higher error.
SIGNIFICANTLY_LOWER, SIGNIFICANTLY_HIGHER = "↓", "↑"


def significance_marks(
    significance: pa.Table, variant: str, classifier: str
) -> dict[tuple[str, str], str]:
    """(method, dataset) -> mark, for the methods whose error differs significantly
    from BOW (L1/L1)'s (the ``significant`` column of a SIGNIFICANCE table)."""
    marks = {}
    for row in significance.to_pylist():
        if (
            row["reference"] == methods_module.REFERENCE
            and row["variant"] == variant
            and row["classifier"] == classifier
            and str(row["significant"]).lower() == "true"
        ):
            lower = float(row["error"]) < float(row["reference_error"])
            mark = SIGNIFICANTLY_LOWER if lower else SIGNIFICANTLY_HIGHER
            marks[row["method"], row["dataset"]] = mark
    return marks


def _marked_rows(
    rows: Sequence[Sequence[str]], datasets: Sequence[str], marks: Mapping[tuple[str, str], str]
) -> list[list[str]]:
    marked = []
    for row in rows:
        method = row[0].removesuffix(BEYOND_MARKER)
        cells = [
            cell + (f" {marks[method, d]}" if (method, d) in marks and cell else "")
            for cell, d in zip(row[1 : 1 + len(datasets)], datasets, strict=True)
        ]
        marked.append([row[0], *cells, *row[1 + len(datasets) :]])
    return marked


def significance_note(alpha: float) -> str:
    return (
        f"{SIGNIFICANTLY_LOWER} / {SIGNIFICANTLY_HIGHER}: test error significantly lower / "
        f"higher than {methods_module.REFERENCE}'s on that dataset: corrected resampled "
        "t-test on the per-fold error differences for datasets with random splits, exact "
        "McNemar test for one-split datasets, Holm-corrected across methods, at "
        f"level {alpha:g} (results/tables/significance.md)."
    )


def run_tables(
    scores_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    expected: Expected,
    allwords_path: str | os.PathLike | None = None,
    allwords_expected: Expected | None = None,
    significance_path: str | os.PathLike | None = None,
    alpha: float | None = None,
    splits: Mapping[str, str | os.PathLike] | None = None,
    evaluation: Mapping | None = None,
) -> list[Path]:
    """Write every table of TABLES as .csv and .md into ``out_dir``.

    ``expected`` is what the run covers (:mod:`wmdeval.core.coverage`): the scores must hold
    exactly its datasets, variants, methods and classifiers, and its datasets are the
    columns, in order. ``allwords_path``: scores of the baselines with every word kept
    (Tables 4/5), covering exactly ``allwords_expected``; their rel. is relative to BOW
    (L1/L1) of the main scores, as in the paper. ``significance_path``: the
    significance table (CSV) whose tests at level ``alpha`` mark Table 2's Markdown.
    ``splits`` ("dataset/variant" -> its SPLITS file) and ``evaluation`` (the config's
    ``evaluation:``): a k of kNN or wkNN above the training documents it is tuned with
    is a warning under every Markdown table (:func:`wmdeval.core.roles.k_above_training`).
    Nothing is written when a check fails. Returns the written paths.
    """
    scores = read_table(scores_path, schemas.SCORES)
    require_exact_coverage(scores, expected, str(scores_path))
    datasets = list(expected["dataset"])
    allwords_datasets: list[str] = []
    if allwords_path is not None:
        if allwords_expected is None:
            raise WmdevalError(
                f"{allwords_path}: all-words scores given without what they are expected to cover"
            )
        allwords = read_table(allwords_path, schemas.SCORES)
        require_exact_coverage(allwords, allwords_expected, str(allwords_path))
        allwords_datasets = list(allwords_expected["dataset"])
        variants = allwords.column("variant").to_pylist()
        renamed = pa.array([allwords_variant(v) for v in variants], pa.string())
        allwords = allwords.set_column(
            allwords.schema.get_field_index("variant"), "variant", renamed
        )
        scores = pa.concat_tables([scores, allwords.cast(scores.schema)])
    elif allwords_expected is not None and expects_rows(allwords_expected):
        raise WmdevalError(
            f"{scores_path}: the run covers scores with every word kept, but none were given"
        )
    significance = None
    if significance_path is not None:
        import pyarrow.csv as pacsv

        if alpha is None:
            raise WmdevalError(f"{significance_path}: given without its significance level")
        significance = pacsv.read_csv(significance_path)
        missing = set(schemas.SIGNIFICANCE.names) - set(significance.column_names)
        if missing:
            raise WmdevalError(f"{significance_path}: no column(s) {', '.join(sorted(missing))}")
    warnings = k_warnings(splits or {}, evaluation)
    out_dir = Path(out_dir)
    tables = []
    for spec in TABLES:
        columns = allwords_datasets if spec.all_words else datasets
        rows = paper_table(
            scores,
            spec.variant,
            spec.classifier,
            table_methods(spec, scores),
            columns,
            reference_variant=spec.reference_variant or spec.variant,
            reference_classifier="knn",
        )
        tables.append((spec, columns, rows))
    # Every check above passed before the first file is written.
    written = []
    for spec, columns, rows in tables:
        csv_path, md_path = out_dir / f"{spec.name}.csv", out_dir / f"{spec.name}.md"
        note = table_note(spec, scores, bool(rows))
        markdown_rows = None
        if spec.significance_marks and significance is not None and rows:
            marks = significance_marks(significance, spec.variant, spec.classifier)
            markdown_rows = _marked_rows(rows, columns, marks)
            note += "\n\n" + significance_note(alpha)
        if warnings:
            note += "".join(f"\n\n**Warning**: {line}" for line in warnings)
        write_table_files(
            rows,
            table_header(columns),
            csv_path,
            md_path,
            spec.title,
            note,
            markdown_rows,
        )
        written += [csv_path, md_path]
    return written


def k_warnings(splits: Mapping[str, str | os.PathLike], evaluation: Mapping | None) -> list[str]:
    """The k of kNN or wkNN above the training documents, per "dataset/variant" of
    ``splits`` (its SPLITS file), as :func:`wmdeval.core.roles.k_above_training` says it."""
    if evaluation is None:
        return []
    settings = complete_settings(evaluation)
    lines = []
    for name, path in splits.items():
        table = read_table(path, schemas.SPLITS)
        train = pc.equal(table.column("subset"), "train")
        folds = table.filter(train).column("fold").value_counts().to_pylist()
        sizes = [row["counts"] for row in sorted(folds, key=lambda row: row["values"])]
        lines += k_above_training(sizes, settings, name)
    return lines


def summary_rows(combined: pa.Table) -> tuple[list[str], list[list[str]]]:
    """One-row report tables, concatenated -> (header, rows as text)."""
    header = combined.column_names

    def text(value) -> str:
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        if isinstance(value, list):
            return " ".join(text(v) for v in value)
        return str(value)

    return header, [[text(row[c]) for c in header] for row in combined.to_pylist()]


def run_summaries(
    inputs: Sequence[str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    title: str,
    note: str = "One row per dataset.",
    expected: Expected | None = None,
    wmd_modes: Mapping[str, str] | None = None,
) -> None:
    """Combine per-dataset report tables (duplicates, OOV) into one CSV + Markdown table,
    whose rows must cover exactly ``expected`` when it is given. ``wmd_modes``: {dataset:
    "full" or "knn"}, added as a last column ``wmd_mode`` (every dataset must have one)."""
    tables = [read_table(path) for path in inputs]
    combined = pa.concat_tables(tables, promote_options="default") if tables else pa.table({})
    if expected is not None:
        require_exact_coverage(combined, expected, coverage_sources(inputs))
    if wmd_modes is not None:
        datasets = combined.column("dataset").to_pylist()
        missing = sorted(set(datasets) - set(wmd_modes))
        if missing:
            raise WmdevalError(f"--wmd-modes names no mode for dataset {missing[0]}")
        combined = combined.append_column("wmd_mode", pa.array([wmd_modes[d] for d in datasets]))
    header, rows = summary_rows(combined)
    write_table_files(rows, header, csv_path, md_path, title, note)
