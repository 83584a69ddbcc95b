"""Corpus-to-corpus distances built from a method's document distances.

Two corpus distances of the seed paper on distributionality (its §5):

- the energy distance statistic, a "distributional" distance that looks at all pairs:
  E(X, Y) = 2/(|X||Y|) Σ d(x, y) - 1/|X|² Σ d(x, x') - 1/|Y|² Σ d(y, y').
  Within-group sums run over all ordered pairs, self-pairs (distance 0) included,
  exactly as the paper's Equation 3: then E(X, X) = 0, and E >= 0 whenever the
  document distance is of negative type (e.g. Euclidean, L1). ``within="distinct"``
  averages over pairs i != j instead (the unbiased within-group means; E(X, X) < 0);
- the average Hausdorff distance, a "non-distributional" one built from nearest
  neighbours (the paper's Equation 4): AHD(X, Y) = (mean_x min_y d(x, y) +
  mean_y min_x d(x, y)) / 2.

They are tabulated between classes and between train and test of each fold, and
compared on Known-Similarity Corpora (KSC, the paper's §3): K + 1 corpora mixing two
classes A and B in proportions i/K, whose distances should grow with the separation
|i - j|.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from ..core import io, schemas
from ..core.coverage import Expected, require_exact_coverage, sources
from ..core.groups import comparisons, defined_subset
from ..core.progress import Progress
from ..core.stats import spearman_rho
from ..core.variant import Variant
from ..distances.factory import method_distances
from ..reporting.tables import comparison_tables, markdown_table, method_sort_key

log = logging.getLogger("wmdeval.analyses.corpus_distance")

MEASURES = ("energy", "ahd")
MEASURE_LABELS = {"energy": "energy distance", "ahd": "average Hausdorff distance"}


# The table written here is documented with the others in schemas.py.
CORPUS_DISTANCES, KSC = schemas.CORPUS_DISTANCES, schemas.KSC


# --------------------------------------------------------------------------- measures


def energy_distance(
    d_xy: np.ndarray, d_xx: np.ndarray, d_yy: np.ndarray, within: str = "all"
) -> float:
    """Energy distance statistic from the three blocks of document distances.

    ``within="all"``: within-group means over all |X|² ordered pairs, self-pairs
    included (the seed paper's Equation 3); ``"distinct"``: over pairs i != j.
    """
    return 2.0 * float(np.mean(d_xy)) - _within_mean(d_xx, within) - _within_mean(d_yy, within)


def _within_mean(block: np.ndarray, within: str) -> float:
    n = len(block)
    off_diagonal = float(block.sum() - np.trace(block))  # self-distances count as 0
    if within == "all":
        return off_diagonal / (n * n)
    if within == "distinct":
        return off_diagonal / (n * (n - 1)) if n > 1 else 0.0
    raise ValueError(f"within must be 'all' or 'distinct', got {within!r}")


def average_hausdorff(d_xy: np.ndarray) -> float:
    """AHD: the two directed mean nearest-neighbour distances, averaged."""
    return 0.5 * (float(d_xy.min(axis=1).mean()) + float(d_xy.min(axis=0).mean()))


def group_distances(dist: np.ndarray, in_first: np.ndarray) -> dict[str, float]:
    """Both corpus distances (and scale-free versions) between the points flagged
    ``in_first`` and the others, from their square distance matrix."""
    first, second = np.flatnonzero(in_first), np.flatnonzero(~in_first)
    d_xy = dist[np.ix_(first, second)]
    between = float(d_xy.mean())
    energy = energy_distance(d_xy, dist[np.ix_(first, first)], dist[np.ix_(second, second)])
    ahd = average_hausdorff(d_xy)
    return {
        "mean_between": between,
        "energy": energy,
        "energy_coefficient": energy / (2 * between) if between > 0 else math.nan,
        "ahd": ahd,
        "ahd_relative": ahd / between if between > 0 else math.nan,
    }


# --------------------------------------------------------------------------- tables


def corpus_distance_rows(
    corpus: Variant, dataset: str, variant: str, m: int, seed: int, report: str | None = None
) -> list[dict]:
    """CORPUS_DISTANCES rows: every method x (class pair, train vs test of each fold).

    Groups are those of the crossmatch test (seeded samples of up to ``m`` documents
    with words); documents undefined under a method are left out for that method.
    ``report``: the subject of the progress lines in the log (comparisons of each
    method; None: no lines).
    """
    rows = []
    groups = comparisons(corpus, m, seed)
    progress = Progress(
        log if report is not None else None,
        report or "",
        len(groups) * len(corpus.methods),
        "comparisons",
    )
    for comparison in groups:
        pooled = np.concatenate([comparison.first, comparison.second])
        in_first = np.arange(len(pooled)) < len(comparison.first)
        for method in corpus.methods:
            dist = method_distances(corpus, method, comparison.fold).block(pooled, pooled)
            keep = defined_subset(dist)
            first = in_first[keep]
            if first.all() or not first.any():
                log.warning(
                    "%s/%s %s, %s: a group has no defined document; skipped",
                    dataset,
                    variant,
                    comparison.name,
                    method.name,
                )
                progress.advance()  # done: nothing to measure
                continue
            rows.append(
                {
                    "dataset": dataset,
                    "variant": variant,
                    "method": method.name,
                    "comparison": comparison.name,
                    "n1": int(first.sum()),
                    "n2": int((~first).sum()),
                    **group_distances(dist[np.ix_(keep, keep)], first),
                }
            )
            progress.advance()
    progress.finish()
    return rows


def corpus_distance_results(
    corpus: Variant, dataset: str, variant: str, m: int, seed: int, report: str | None = None
) -> pa.Table:
    """Energy distance and AHD of one dataset variant, every method: between each pair
    of classes (all documents, IDF from all of them) and between train and test of each
    fold (IDF from the fold's training set), as a CORPUS_DISTANCES table (``report``: see
    :func:`corpus_distance_rows`)."""
    rows = corpus_distance_rows(corpus, dataset, variant, m, seed, report)
    return pa.table({n: [r[n] for r in rows] for n in CORPUS_DISTANCES.names}).cast(
        CORPUS_DISTANCES
    )


def corpus_distance_markdown(table: pa.Table) -> str:
    """Compact tables: scale-free energy coefficient / relative AHD per method, between
    classes and (mean over folds) between train and test."""

    def split_cell(folds: list[dict]) -> str:
        energy, ahd = np.mean([(r["energy_coefficient"], r["ahd_relative"]) for r in folds], axis=0)
        return f"{energy:.3f} / {ahd:.3f}"

    class_table, split_table = comparison_tables(
        table.to_pylist(),
        lambda r: f"{r['energy_coefficient']:.3f} / {r['ahd_relative']:.3f}",
        split_cell,
    )
    return (
        "# Corpus distances between groups of documents\n\n"
        "Cells: energy coefficient E / (2 mean d(X, Y)) / relative AHD (AHD / mean "
        "d(X, Y)); both are free of the method's scale, so methods can be compared. "
        "The energy coefficient is 0 for identical distributions; the larger, the more "
        "the groups differ as wholes. AHD looks at nearest neighbours only.\n\n"
        f"## Between classes\n\n{class_table}\n\n"
        f"## Train vs test (mean over folds)\n\n{split_table}\n\n"
        "Raw values (energy, ahd, mean_between) are in the CSV file.\n"
    )


def run_corpus_distance_table(
    paths: Sequence[str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """All corpus-distance rows as CSV and compact Markdown tables; the rows must cover
    exactly ``expected`` when given (:mod:`wmdeval.core.coverage`)."""
    table = io.read_tables(paths, CORPUS_DISTANCES, expected)
    io.write_csv(csv_path, table)
    io.write_text(md_path, corpus_distance_markdown(table))


# --------------------------------------------------------------------------- KSC


def share_from_b(corpus_size: int, K: int) -> np.ndarray:
    """Documents from B in corpora 0..K: round(n i / K), halves rounded up."""
    return np.floor(corpus_size * np.arange(K + 1) / K + 0.5).astype(np.int64)


def double_lottery(
    source_a: np.ndarray, source_b: np.ndarray, K: int, corpus_size: int, rng: np.random.Generator
) -> np.ndarray:
    """One KSC set: [K + 1, corpus_size] document positions.

    Corpus i concatenates two independent uniform draws without replacement: round(n
    i/K) documents of B and the rest of A (the paper's "double lottery"). Corpora are
    drawn independently of each other, so two corpora can share documents.
    """
    from_b = share_from_b(corpus_size, K)
    if corpus_size > min(len(source_a), len(source_b)):
        raise io.WmdevalError(
            f"KSC corpus size {corpus_size} exceeds a source's "
            f"{min(len(source_a), len(source_b))} documents"
        )
    return np.array(
        [
            np.concatenate(
                [
                    rng.choice(source_a, corpus_size - b, replace=False),
                    rng.choice(source_b, b, replace=False),
                ]
            )
            for b in from_b
        ],
        dtype=np.int64,
    )


def ksc_pair_distances(
    dist: np.ndarray, corpora: np.ndarray, within: str = "all"
) -> dict[str, np.ndarray]:
    """Energy distance and AHD between every two corpora of one KSC set: measure ->
    [K + 1, K + 1] matrix. ``dist`` is indexed by the positions in ``corpora``; the
    distance of a document to itself is taken as 0 (corpora can share documents)."""
    n_corpora, size = corpora.shape
    blocks = dist[corpora[:, :, None, None], corpora[None, None, :, :]]  # [i, a, j, b]
    same = corpora[:, :, None, None] == corpora[None, None, :, :]
    blocks = np.where(same, 0.0, blocks)
    means = blocks.mean(axis=(1, 3))
    within_means = np.array([_within_mean(blocks[i, :, i, :], within) for i in range(n_corpora)])
    energy = 2 * means - within_means[:, None] - within_means[None, :]
    towards = blocks.min(axis=3).mean(axis=1)  # [i, j]: mean over c_i of nearest in c_j
    ahd = 0.5 * (towards + towards.T)
    return {"energy": energy, "ahd": ahd}


def standardise(values: np.ndarray) -> np.ndarray:
    """z-scores (sample standard deviation, ddof = 1), as the paper's §5.3."""
    values = np.asarray(values, dtype=np.float64)
    spread = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    centred = values - float(np.mean(values)) if len(values) else values
    return centred / spread if spread > 0 else np.zeros_like(values)


def monotonicity(separation: np.ndarray, distance: np.ndarray) -> dict[str, float]:
    """How well corpus distance follows separation, pooled over pairs and repetitions.

    spearman_rho: Spearman's ρ between separation and distance. order_accuracy: over
    all two values at different separations, the share where the larger separation has
    the larger distance (ties count 1/2), the empirical P(d(ℓ2) > d(ℓ1)) for ℓ2 > ℓ1 of
    the KSC framework (0.5: no relation, 1: perfectly monotone).
    """
    separation = np.asarray(separation, dtype=np.float64)
    distance = np.asarray(distance, dtype=np.float64)
    rho = spearman_rho(separation, distance)
    further = separation[:, None] > separation[None, :]
    larger = np.sign(distance[:, None] - distance[None, :])
    pairs = int(further.sum())
    accuracy = (float(((larger[further] + 1) / 2).sum()) / pairs) if pairs else math.nan
    return {"spearman_rho": rho, "order_accuracy": accuracy}


def two_largest_classes(labels: np.ndarray) -> tuple[str, str]:
    """The two most frequent labels (ties: alphabetical), in alphabetical order."""
    names, counts = np.unique(labels, return_counts=True)
    if len(names) < 2:
        raise io.WmdevalError("KSC needs at least two classes")
    order = sorted(range(len(names)), key=lambda i: (-counts[i], names[i]))
    return tuple(sorted((str(names[order[0]]), str(names[order[1]]))))


def ksc_rows(
    corpus: Variant,
    dataset: str,
    variant: str,
    K: int,
    R: int,
    corpus_size: int,
    seed: int,
    classes: tuple[str, str] | None = None,
    report: str | None = None,
) -> list[dict]:
    """KSC rows for every method x measure x repetition x corpus pair: K + 1 corpora of
    ``corpus_size`` documents, R draws (the paper: 15, 5, 50). ``report``: the subject
    of the progress lines in the log (methods done; None: no lines).

    Sources are the documents of the two classes with defined distances under every
    method, so all methods see the same corpora; TF-IDF takes its IDF from all
    documents. The corpus size is capped at the smaller source.
    """
    if K < 1 or R < 1:
        raise io.WmdevalError("KSC needs K >= 1 and R >= 1")
    class_a, class_b = classes or two_largest_classes(corpus.labels[~corpus.no_words])
    candidates = np.flatnonzero(np.isin(corpus.labels, [class_a, class_b]) & ~corpus.no_words)
    defined = np.ones(len(candidates), dtype=bool)
    for wmd in corpus.wmd.values():  # baselines are defined for every document with words
        defined &= np.isin(
            np.arange(len(candidates)), defined_subset(wmd.block(candidates, candidates))
        )
    labels = corpus.labels[candidates]
    source_a = candidates[defined & (labels == class_a)]
    source_b = candidates[defined & (labels == class_b)]
    size = min(corpus_size, len(source_a), len(source_b))
    if size < corpus_size:
        log.warning(
            "%s/%s KSC: corpus size capped at %d (sources have %d and %d documents)",
            dataset,
            variant,
            size,
            len(source_a),
            len(source_b),
        )
    if size < 2:
        raise io.WmdevalError(f"{dataset}/{variant}: too few documents for KSC")
    draws = [
        double_lottery(source_a, source_b, K, size, np.random.default_rng([seed, r]))
        for r in range(R)
    ]
    # Distances only among the documents drawn, indexed by their rank in ``used``.
    used = np.unique(np.concatenate([d.ravel() for d in draws]))
    draws = [np.searchsorted(used, d) for d in draws]

    rows = []
    progress = Progress(
        log if report is not None else None, report or "", len(corpus.methods), "methods"
    )
    for method in corpus.methods:
        dist = method_distances(corpus, method).block(used, used)
        for repetition, corpora in enumerate(draws):
            by_measure = ksc_pair_distances(dist, corpora)
            for measure in MEASURES:
                for i, j in itertools.combinations(range(K + 1), 2):
                    rows.append(
                        {
                            "dataset": dataset,
                            "variant": variant,
                            "class_a": class_a,
                            "class_b": class_b,
                            "corpus_size": size,
                            "method": method.name,
                            "measure": measure,
                            "repetition": repetition,
                            "i": i,
                            "j": j,
                            "separation": j - i,
                            "distance": float(by_measure[measure][i, j]),
                        }
                    )
        progress.advance()
    progress.finish()
    _add_standardised(rows)
    return rows


def _add_standardised(rows: list[dict]) -> None:
    groups: dict[tuple[str, str], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault((row["method"], row["measure"]), []).append(index)
    for indices in groups.values():
        z = standardise(np.array([rows[i]["distance"] for i in indices]))
        for i, value in zip(indices, z, strict=True):
            rows[i]["standardised"] = float(value)


def ksc_summary(table: pa.Table) -> list[dict]:
    """Per dataset, variant, method and measure: monotonicity of the trajectory."""
    groups: dict[tuple, list[tuple[int, float]]] = {}
    for row in table.to_pylist():
        key = (row["dataset"], row["variant"], row["method"], row["measure"])
        groups.setdefault(key, []).append((row["separation"], row["distance"]))
    out = []
    for (dataset, variant, method, measure), values in groups.items():
        separation, distance = np.array(values).T
        out.append(
            {
                "dataset": dataset,
                "variant": variant,
                "method": method,
                "measure": measure,
                **monotonicity(separation, distance),
            }
        )
    return out


def ksc_figure(table: pa.Table, out_png: str | os.PathLike, title: str):
    """Per method: mean standardised corpus distance against separation, energy
    distance and AHD side by side, ±1 standard deviation shaded."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    from ..reporting.figures import _RC, save_figure

    rows = table.to_pylist()
    methods = sorted({r["method"] for r in rows}, key=method_sort_key)
    summary = {(s["method"], s["measure"]): s for s in ksc_summary(table)}
    styles = {"energy": ("#4C72B0", "-", "o"), "ahd": ("#DD8452", "--", "s")}
    n_columns = 4
    n_rows = max(1, math.ceil(len(methods) / n_columns))
    height = 2.3 * n_rows + 1.6
    with matplotlib.rc_context(_RC):
        # A fixed layout: the constrained one triples the drawing time of 14 panels.
        fig = Figure(figsize=(3.0 * n_columns, height))
        fig.subplots_adjust(
            left=0.07,
            right=0.99,
            top=1 - 0.85 / height,
            bottom=0.85 / height,
            hspace=0.32,
            wspace=0.08,
        )
        fig.suptitle(title, y=1 - 0.1 / height, va="top")
        if not methods:
            fig.text(0.5, 0.5, "no KSC results", ha="center")
        axes = (
            fig.subplots(n_rows, n_columns, squeeze=False, sharex=True, sharey=True).ravel()
            if methods
            else []
        )
        for ax, method in zip(axes, methods, strict=False):
            notes = []
            for measure in MEASURES:
                by_separation: dict[int, list[float]] = {}
                for r in rows:
                    if r["method"] == method and r["measure"] == measure:
                        by_separation.setdefault(r["separation"], []).append(r["standardised"])
                ls = sorted(by_separation)
                mean = np.array([np.mean(by_separation[s]) for s in ls])
                spread = np.array([np.std(by_separation[s]) for s in ls])
                colour, line, marker = styles[measure]
                ax.fill_between(
                    ls, mean - spread, mean + spread, color=colour, alpha=0.15, linewidth=0
                )
                ax.plot(
                    ls,
                    mean,
                    color=colour,
                    linestyle=line,
                    marker=marker,
                    markersize=3,
                    linewidth=1.2,
                )
                rho = summary[method, measure]["spearman_rho"]
                notes.append(f"ρ {'E' if measure == 'energy' else 'AHD'} = {rho:.2f}")
            ax.text(
                0.04,
                0.96,
                "\n".join(notes),
                transform=ax.transAxes,
                va="top",
                fontsize=7,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8},
            )
            ax.set_title(method, fontsize=9)
            ax.grid(linewidth=0.4, alpha=0.5)
        for index, ax in enumerate(axes):
            if index >= len(methods):
                ax.set_visible(False)
                continue
            if index % n_columns == 0:
                ax.set_ylabel("standardised distance")
            if index >= len(methods) - n_columns:
                ax.set_xlabel("separation ℓ = j − i")
                ax.xaxis.set_tick_params(labelbottom=True)
        handles = [
            Line2D(
                [],
                [],
                color=styles[m][0],
                linestyle=styles[m][1],
                marker=styles[m][2],
                markersize=3,
                label=MEASURE_LABELS[m],
            )
            for m in MEASURES
        ]
        fig.legend(handles=handles, loc="lower center", ncols=2, frameon=False)
        return save_figure(fig, out_png, svg=False)


def ksc_results(
    corpus: Variant,
    dataset: str,
    variant: str,
    K: int,
    R: int,
    corpus_size: int,
    seed: int,
    classes: tuple[str, str] | None = None,
    report: str | None = None,
) -> pa.Table:
    """The KSC experiment on two classes of one dataset variant (default: the two
    largest): K + 1 corpora of ``corpus_size`` documents, R draws, as a KSC table
    (``report``: see :func:`ksc_rows`). :func:`run_ksc_report` draws the figures of every
    dataset variant in one job."""
    rows = ksc_rows(corpus, dataset, variant, K, R, corpus_size, seed, classes, report)
    return pa.table({n: [r[n] for r in rows] for n in KSC.names}).cast(KSC)


def ksc_title(table: pa.Table) -> str:
    """The figure title of one dataset variant's KSC table; K and R are read back from
    the corpus indices and draws it holds."""
    if table.num_rows == 0:
        return "Known-similarity corpora: no results"
    first = table.slice(0, 1).to_pylist()[0]
    K = max(table.column("j").to_pylist())
    R = max(table.column("repetition").to_pylist()) + 1
    return (
        f"Known-similarity corpora, {first['dataset']} ({first['variant']}): corpus i has "
        f"a share i/K of '{first['class_b']}', the rest '{first['class_a']}'\nK = {K}, "
        f"{R} draws, {first['corpus_size']} documents per corpus; z-scored per method and "
        "measure; ρ: Spearman, separation vs distance"
    )


def run_ksc_report(
    paths: Sequence[str | os.PathLike],
    figure_paths: Sequence[str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """One trajectory figure per KSC table (``figure_paths[i]`` for ``paths[i]``) and the
    monotonicity table of them all; the rows must cover exactly ``expected`` when given
    (:mod:`wmdeval.core.coverage`), checked before any figure is drawn."""
    if len(figure_paths) != len(paths):
        raise io.WmdevalError(
            f"ksc-report: {len(paths)} KSC table(s) but "
            f"{len(figure_paths)} figure path(s); expected one per table"
        )
    tables = [io.read_table(p, KSC).cast(KSC) for p in paths]
    combined = pa.concat_tables(tables) if tables else KSC.empty_table()
    if expected is not None:
        require_exact_coverage(combined, expected, sources(paths))
    for table, figure_path in zip(tables, figure_paths, strict=True):
        ksc_figure(table, figure_path, ksc_title(table))
    write_ksc_table(combined, csv_path, md_path)


def write_ksc_table(
    table: pa.Table, csv_path: str | os.PathLike, md_path: str | os.PathLike
) -> None:
    """Monotonicity of every method's KSC trajectories (Spearman's ρ and the order
    accuracy), as CSV (long) and Markdown (methods x dataset variants)."""
    summary = ksc_summary(table)
    columns = ["dataset", "variant", "method", "measure", "spearman_rho", "order_accuracy"]
    io.write_csv(csv_path, pa.table({c: [s[c] for s in summary] for c in columns}))

    groups = list(dict.fromkeys((s["dataset"], s["variant"]) for s in summary))
    cell = {
        (
            s["method"],
            s["dataset"],
            s["variant"],
            s["measure"],
        ): f"{s['spearman_rho']:.2f} ({s['order_accuracy']:.2f})"
        for s in summary
    }
    methods = sorted({s["method"] for s in summary}, key=method_sort_key)
    header = ["method"] + [
        f"{d} ({v}) {'energy' if m == 'energy' else 'AHD'}" for d, v in groups for m in MEASURES
    ]
    body = [
        [method] + [cell.get((method, d, v, m), "") for d, v in groups for m in MEASURES]
        for method in methods
    ]
    io.write_text(
        md_path,
        (
            "# Known-similarity corpora: do corpus distances grow with separation?\n\n"
            f"{markdown_table(body, header)}\n\n"
            "Cells: Spearman's ρ between the separation |i - j| of two corpora and their "
            "distance, over all corpus pairs and draws (order accuracy in brackets: the "
            "share of value pairs at different separations ordered like the separations; "
            "0.5 = no relation, 1 = monotone).\n\n"
            "Corpora drawn from classes not much larger than a corpus share many documents, "
            "and shared documents pull nearby corpora together: distances then grow with "
            "separation even between classes that are alike.\n"
        ),
    )


__all__ = [
    "CORPUS_DISTANCES",
    "KSC",
    "energy_distance",
    "average_hausdorff",
    "group_distances",
    "corpus_distance_rows",
    "corpus_distance_results",
    "run_corpus_distance_table",
    "share_from_b",
    "double_lottery",
    "ksc_pair_distances",
    "standardise",
    "monotonicity",
    "ksc_rows",
    "ksc_summary",
    "ksc_results",
    "ksc_title",
    "run_ksc_report",
    "write_ksc_table",
]
