"""Nearest-neighbour overlap (N2O) between the 14 document distances.

N2O(A, B) = mean over queries q of |kNN_A(q) ∩ kNN_B(q)| / k: how far two distances
agree on which documents are near, whatever their scales. Queries are the test
documents of a fold (or a seeded sample of them) and neighbours come from the fold's
training documents, exactly as the kNN classifier sees them; ranking uses the kNN tie
rule (:meth:`wmdeval.core.variant.Distances.nearest`: by distance, then lower doc_id).
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from ..core import io, schemas
from ..core.coverage import Expected, with_method_column
from ..core.progress import Progress
from ..core.stats import spearman_rho
from ..core.variant import Variant
from ..distances.factory import method_distances
from ..reporting.tables import method_sort_key, write_table_files

log = logging.getLogger("wmdeval.analyses.n2o")


# The table written here is documented with the others in schemas.py.
N2O = schemas.N2O


# --------------------------------------------------------------------------- N2O


def overlap_counts(neighbours_a: np.ndarray, neighbours_b: np.ndarray, k: int) -> np.ndarray:
    """|first k of a ∩ first k of b| per row; -1 slots (no neighbour) never count."""
    a, b = neighbours_a[:, :k], neighbours_b[:, :k]
    same = (a[:, :, None] == b[:, None, :]) & (a[:, :, None] >= 0)
    return same.sum(axis=(1, 2))


def nearest_neighbour_overlap(neighbours_a: np.ndarray, neighbours_b: np.ndarray, k: int) -> float:
    """N2O over the rows (queries) of two neighbour lists: mean |overlap| / k.

    A slot without a defined neighbour counts as no overlap, so the divisor stays k.
    """
    if len(neighbours_a) == 0:
        return math.nan
    return float(np.mean(overlap_counts(neighbours_a, neighbours_b, k)) / k)


def sample_queries(test: np.ndarray, queries: int | None, seed: int, fold: int) -> np.ndarray:
    """All test positions, or a seeded sample of ``queries`` of them (sorted)."""
    if queries is None or queries >= len(test):
        return np.asarray(test)
    rng = np.random.default_rng([seed, fold])  # one stream per fold, whatever the order
    return np.sort(rng.choice(test, size=queries, replace=False))


def fold_neighbours(
    corpus: Variant, fold: int, query_pos: np.ndarray, k_max: int, progress: Progress | None = None
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per method (paper name): the k_max nearest training documents of every query, as
    indices into the fold's training list (-1: none); and which queries have a defined
    distance to some training document under every method (the others are skipped, so
    all pairs compare the same queries). TF-IDF takes the IDF of the fold's training list.
    ``progress`` counts the methods done."""
    train = corpus.folds[fold][0]
    neighbours, usable = {}, np.ones(len(query_pos), dtype=bool)
    for method in corpus.methods:
        found = method_distances(corpus, method, fold).nearest(query_pos, train, k_max)
        usable &= found.index[:, 0] >= 0
        neighbours[method.name] = found.index
        if progress is not None:
            progress.advance()
    return neighbours, usable


def n2o_rows(
    corpus: Variant,
    dataset: str,
    variant: str,
    ks: Sequence[int],
    queries: int | None,
    seed: int,
    report: str | None = None,
) -> list[dict]:
    """N2O rows (the N2O schema) for every method pair x k x fold. ``report``: the
    subject of the progress lines in the log (each method's neighbours of each fold;
    None: no lines)."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise io.WmdevalError("n2o: k must be a non-empty list of positive integers")
    if not corpus.folds:
        raise io.WmdevalError("n2o needs train/test splits")
    names = [m.name for m in corpus.methods]
    rows = []
    progress = Progress(
        log if report is not None else None,
        report or "",
        len(corpus.folds) * len(names),
        "folds",
    )
    for fold, (_, test) in enumerate(corpus.folds):
        query_pos = sample_queries(test, queries, seed, fold)
        neighbours, usable = fold_neighbours(corpus, fold, query_pos, ks[-1], progress)
        n_empty = int(np.count_nonzero(~usable))
        if n_empty:
            log.info(
                "%s/%s fold %d: %d of %d queries skipped (undefined distances)",
                dataset,
                variant,
                fold,
                n_empty,
                len(query_pos),
            )
        for a, b in itertools.combinations_with_replacement(names, 2):
            for k in ks:
                rows.append(
                    {
                        "dataset": dataset,
                        "variant": variant,
                        "method_a": a,
                        "method_b": b,
                        "k": k,
                        "fold": fold,
                        "n2o": nearest_neighbour_overlap(
                            neighbours[a][usable], neighbours[b][usable], k
                        ),
                        "queries": int(np.count_nonzero(usable)),
                        "empty_queries": n_empty,
                    }
                )
    progress.finish()
    return rows


def n2o_results(
    corpus: Variant,
    dataset: str,
    variant: str,
    ks: Sequence[int],
    queries: int | None,
    seed: int,
    report: str | None = None,
) -> pa.Table:
    """The N2O table of one dataset variant. ``queries``: None = every test document
    of each fold, else a seeded sample of that many per fold; ``report``: see
    :func:`n2o_rows`."""
    rows = n2o_rows(corpus, dataset, variant, ks, queries, seed, report)
    return pa.table({name: [r[name] for r in rows] for name in N2O.names}).cast(N2O)


# --------------------------------------------------------------------------- report


def mean_over_folds(table: pa.Table) -> dict[tuple[str, str, int], dict[tuple[str, str], float]]:
    """(dataset, variant, k) -> {(method_a, method_b): N2O averaged over folds}."""
    sums: dict[tuple, dict[tuple[str, str], list[float]]] = {}
    for row in table.to_pylist():
        key = (row["dataset"], row["variant"], row["k"])
        sums.setdefault(key, {}).setdefault((row["method_a"], row["method_b"]), []).append(
            row["n2o"]
        )
    return {
        key: {pair: float(np.mean(v)) for pair, v in pairs.items()} for key, pairs in sums.items()
    }


def n2o_matrix(pairs: Mapping[tuple[str, str], float]) -> tuple[list[str], np.ndarray]:
    """Symmetric matrix over the methods present, in Table 2 order (NaN if missing)."""
    names = sorted({m for pair in pairs for m in pair}, key=method_sort_key)
    index = {name: i for i, name in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for (a, b), value in pairs.items():
        matrix[index[a], index[b]] = matrix[index[b], index[a]] = value
    return names, matrix


def rank_robustness(pairs_by_k: Mapping[int, Mapping[tuple[str, str], float]]) -> list[dict]:
    """The paper's §6 check: Spearman's ρ between the rankings of method pairs by N2O at
    each two k. The diagonal (always 1) is left out: it would inflate every ρ."""
    ks = sorted(pairs_by_k)
    common = set.intersection(*(set(p) for p in pairs_by_k.values())) if ks else set()
    pairs = sorted(p for p in common if p[0] != p[1])
    out = []
    for k_a, k_b in itertools.combinations(ks, 2):
        a = [pairs_by_k[k_a][p] for p in pairs]
        b = [pairs_by_k[k_b][p] for p in pairs]
        rho = spearman_rho(a, b) if len(pairs) > 2 else math.nan
        out.append({"k_a": k_a, "k_b": k_b, "spearman_rho": float(rho), "pairs": len(pairs)})
    return out


def _text_colour(value: float, cmap) -> str:
    """Black on light cells, white on dark ones (perceived luminance of the fill)."""
    r, g, b, _ = cmap(value)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def n2o_heatmap(
    panels: Sequence[tuple[str, list[str], np.ndarray]], k: int | str, out_png: str | os.PathLike
):
    """One annotated heatmap per ``(title, method names, matrix)``."""
    import matplotlib
    from matplotlib.figure import Figure

    from ..reporting.figures import _RC, save_figure

    n_columns = 2 if len(panels) > 1 else 1
    n_rows = max(1, math.ceil(len(panels) / n_columns))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(6.6 * n_columns, 6.2 * n_rows + 0.5), layout="constrained")
        fig.suptitle(
            f"Nearest-neighbour overlap (N2O) between document distances, k = {k} "
            "(mean over folds; 1 = same neighbours)"
        )
        if not panels:
            fig.text(0.5, 0.5, "no N2O results", ha="center")
        axes = fig.subplots(n_rows, n_columns, squeeze=False).ravel() if panels else []
        cmap = matplotlib.colormaps["viridis"]
        image = None
        for ax, (title, names, matrix) in zip(axes, panels, strict=False):
            image = ax.imshow(matrix, cmap=cmap, vmin=0, vmax=1)
            for i, j in itertools.product(range(len(names)), repeat=2):
                if np.isfinite(matrix[i, j]):
                    # Out of the layout: cell values sit inside the axes, and measuring
                    # hundreds of them for the constrained layout doubled the drawing time.
                    ax.text(
                        j,
                        i,
                        f"{matrix[i, j]:.2f}",
                        ha="center",
                        va="center",
                        fontsize=5.5,
                        color=_text_colour(matrix[i, j], cmap),
                        in_layout=False,
                    )
            ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
            ax.set_yticks(range(len(names)), names, fontsize=7)
            ax.set_title(title)
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        if image is not None:
            fig.colorbar(image, ax=list(axes[: len(panels)]), shrink=0.6, label="N2O")
        return save_figure(fig, out_png, svg=False)


def run_n2o_report(
    paths: Sequence[str | os.PathLike],
    heatmap_png: str | os.PathLike,
    robustness_csv: str | os.PathLike,
    robustness_md: str | os.PathLike,
    k: int | None = None,
    expected: Expected | None = None,
) -> None:
    """Heatmap (one panel per dataset variant, at ``k``: default the middle k) and the
    k-robustness table (Spearman's ρ of pair rankings between each two k). With
    ``expected`` (:mod:`wmdeval.core.coverage`), every dataset variant must have rows for
    every method (as the first of a pair; pairs include a method with itself)."""
    if expected is not None:
        expected = with_method_column(expected, "method_a")
    table = io.read_tables(paths, N2O, expected)
    means = mean_over_folds(table)
    variants = list(dict.fromkeys((d, v) for d, v, _ in means))
    ks = sorted({kk for _, _, kk in means})
    shown_k = k if k is not None else (ks[(len(ks) - 1) // 2] if ks else "?")

    panels = []
    for dataset, variant in variants:
        if (dataset, variant, shown_k) in means:
            names, matrix = n2o_matrix(means[dataset, variant, shown_k])
            panels.append((f"{dataset} ({variant})", names, matrix))
    n2o_heatmap(panels, shown_k, heatmap_png)

    rows = []
    for dataset, variant in variants:
        by_k = {kk: means[dataset, variant, kk] for kk in ks if (dataset, variant, kk) in means}
        for r in rank_robustness(by_k):
            rows.append(
                [
                    dataset,
                    variant,
                    str(r["k_a"]),
                    str(r["k_b"]),
                    f"{r['spearman_rho']:.3f}",
                    str(r["pairs"]),
                ]
            )
    note = (
        "Method pairs (diagonal excluded) are ranked by their N2O, averaged over folds, "
        "at each k; ρ is Spearman's rank correlation between the rankings at k_a and "
        "k_b. ρ near 1: which distances agree most does not depend on k."
    )
    write_table_files(
        rows,
        ["dataset", "variant", "k_a", "k_b", "spearman_rho", "pairs"],
        robustness_csv,
        robustness_md,
        "N2O robustness: rank correlation of method pairs across k",
        note,
    )


__all__ = [
    "N2O",
    "overlap_counts",
    "nearest_neighbour_overlap",
    "fold_neighbours",
    "n2o_rows",
    "n2o_results",
    "rank_robustness",
    "run_n2o_report",
]
