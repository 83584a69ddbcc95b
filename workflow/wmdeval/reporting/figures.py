"""The paper's Figure 3 (kNN errors with and without normalisation), Figure 4 (distances
of the words WMD matches) and Figure 5 (WMD against BOW (L1/L1) over document pairs).

Figures are drawn on an explicit Agg canvas (no pyplot global state) and saved as PNG
and SVG with every time- or version-dependent field removed, so the same inputs give
the same bytes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..core import methods, schemas
from ..core.coverage import Expected, require_exact_coverage
from ..core.errors import WmdevalError
from ..core.io import (
    atomic_path,
    fold_indices,
    read_distances,
    read_documents,
    read_splits,
    read_table,
)
from ..core.variant import positions, rank_neighbours
from ..distances import baselines
from ..distances.factory import BaselineDistances
from . import tables as report

if TYPE_CHECKING:  # POT (imported by the solver) takes a second to load: only Figure 4 needs it
    from ..distances.wmd import solver

# Fixed SVG ids (otherwise random per run) and text drawn as paths (no font dependency).
_RC = {"svg.hashsalt": "wmdeval", "svg.fonttype": "path", "font.size": 9}
_PNG_DPI = 150

_BOW_COLOUR, _TFIDF_COLOUR, _WMD_COLOUR = "#4C72B0", "#DD8452", "#55A868"


def save_figure(
    fig: Figure, out_png: str | os.PathLike, svg: bool | str | os.PathLike = True
) -> tuple[Path, Path | None]:
    """Save ``fig`` as ``out_png`` and (``svg``) as the .svg next to it, or at the path
    ``svg`` names, atomically, reproducibly. The paper's figures come as both; the
    analyses' only as PNG (an SVG of hundreds of lines costs as much as the analysis
    itself)."""
    out_png = Path(out_png)
    if isinstance(svg, bool):
        out_svg = out_png.with_suffix(".svg") if svg else None
    else:
        out_svg = Path(svg)
    FigureCanvasAgg(fig)
    with matplotlib.rc_context(_RC):
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=_PNG_DPI, metadata={"Software": None})
        if out_svg is not None:
            with atomic_path(out_svg) as tmp:
                fig.savefig(tmp, format="svg", metadata={"Date": None, "Creator": None})
    return out_png, out_svg


def _grid(n_panels: int, max_columns: int = 4) -> tuple[int, int]:
    columns = max(1, min(max_columns, n_panels))
    return max(1, math.ceil(n_panels / columns)), columns


def _figure_width(n_columns: int) -> float:
    """Inches for ``n_columns`` square-ish panels, never too narrow for the title."""
    return max(2.8 * n_columns + 0.4, 5.6)


# --------------------------------------------------------------------------- Figure 3


@dataclass(frozen=True)
class Bar:
    method: str  # the paper's method name, as in SCORES.method
    colour: str
    unnormalised: bool  # drawn light and hatched ("shaded" in the paper)
    beyond: bool = False  # a method beyond the paper: its legend entry is marked


def figure3_bars(unnormalised: str = "None/L2") -> tuple[Bar, ...]:
    """The bars of each panel. The paper's caption only says "without normalization";
    its Table 2 marks the (None/L2) rows as the original study's setting, the default.
    """
    return (
        Bar(f"BOW ({unnormalised})", _BOW_COLOUR, True),
        Bar("BOW (L1/L1)", _BOW_COLOUR, False),
        Bar(f"TF-IDF ({unnormalised})", _TFIDF_COLOUR, True),
        Bar("TF-IDF (L1/L1)", _TFIDF_COLOUR, False),
        Bar("WMD", _WMD_COLOUR, False),
    )


#: Colours of the bars of methods beyond the paper (after the paper's three), in turn.
_BEYOND_COLOURS = ("#7f7f7f", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf")


def beyond_paper_bars(methods: Sequence[str]) -> tuple[Bar, ...]:
    """A bar after the paper's five for each of ``methods`` beyond the paper (in order)."""
    beyond = [m for m in methods if report.beyond_paper(m)]
    return tuple(
        Bar(m, _BEYOND_COLOURS[k % len(_BEYOND_COLOURS)], False, beyond=True)
        for k, m in enumerate(beyond)
    )


def _bar_style(bar: Bar) -> dict:
    if bar.unnormalised:
        return {
            "facecolor": to_rgba(bar.colour, 0.3),
            "edgecolor": bar.colour,
            "hatch": "///",
            "linewidth": 0.8,
        }
    return {"facecolor": bar.colour, "edgecolor": bar.colour, "linewidth": 0.8}


def figure3(
    scores: pa.Table,
    variant: str,
    out_png: str | os.PathLike,
    datasets: Sequence[str] | None = None,
    unnormalised: str = "None/L2",
) -> tuple[Path, Path]:
    """Bar chart of kNN test errors, one panel per dataset (errors differ by an order
    of magnitude between datasets, so panels get their own y scale). Error bars are the
    standard deviation over folds (ddof = 0); one-fold datasets have none.
    """
    errors = report.fold_errors(scores, variant, "knn")
    if datasets is None:
        datasets = list(dict.fromkeys(scores.column("dataset").to_pylist()))
    bars = figure3_bars(unnormalised) + beyond_paper_bars(
        sorted({method for method, _ in errors}, key=report.method_sort_key)
    )
    n_rows, n_columns = _grid(len(datasets))
    with matplotlib.rc_context(_RC):
        fig = Figure(
            figsize=(max(2.6 * n_columns + 0.6, 5.6), 2.4 * n_rows + 1.3), layout="constrained"
        )
        fig.suptitle(f"kNN test error, {variant} data (lower is better)")
        if not datasets:
            fig.text(0.5, 0.5, f"no kNN scores for the {variant} data", ha="center")
        axes = fig.subplots(n_rows, n_columns, squeeze=False).ravel() if datasets else []
        for ax, dataset in zip(axes, datasets, strict=False):
            for position, bar in enumerate(bars):
                cell = errors.get((bar.method, dataset))
                if cell is None:
                    continue
                spread = float(np.std(cell.errors)) if len(cell.errors) > 1 else None
                ax.bar(
                    position,
                    cell.mean,
                    width=0.8,
                    yerr=spread,
                    capsize=2,
                    error_kw={"linewidth": 0.8},
                    **_bar_style(bar),
                )
            ax.set_title(dataset)
            ax.set_xticks([])
            ax.set_xlim(-0.7, len(bars) - 0.3)
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", linewidth=0.4, alpha=0.5)
            ax.set_axisbelow(True)
        for index, ax in enumerate(axes):
            if index >= len(datasets):
                ax.set_visible(False)
            elif index % n_columns == 0:
                ax.set_ylabel("test error (%)")
        handles = [
            Patch(
                label=bar.method + (report.BEYOND_MARKER if bar.beyond else ""),
                **_bar_style(bar),
            )
            for bar in bars
        ]
        # Five legend entries do not fit in one line under one or two panels.
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=min(len(bars), 5) if n_columns >= 3 else 3,
            frameon=False,
        )
        return save_figure(fig, out_png)


def run_figure3(
    scores_path: str | os.PathLike,
    out_png: str | os.PathLike,
    variant: str = "original",
    expected: Expected | None = None,
    unnormalised: str = "None/L2",
) -> tuple[Path, Path]:
    """Figure 3 of ``variant``; with ``expected`` (:mod:`wmdeval.core.coverage`) the scores
    must cover exactly it, and its datasets are the panels, in order."""
    scores = read_table(scores_path, schemas.SCORES)
    datasets = None
    if expected is not None:
        require_exact_coverage(scores, expected, str(scores_path))
        datasets = list(expected["dataset"])
    return figure3(scores, variant, out_png, datasets, unnormalised)


# --------------------------------------------------------------------------- Figure 4


def query_candidates(
    folds: Sequence[tuple[np.ndarray, np.ndarray]], n_documents: int
) -> tuple[np.ndarray, np.ndarray]:
    """(query positions, candidate positions) for the nearest-neighbour pairs.

    A one-fold dataset has a fixed split: each test document looks among the training
    documents, as its kNN classification does. A five-fold dataset has no single
    split, so every document looks among all the others.
    """
    if len(folds) == 1:
        train, test = folds[0]
        return np.asarray(test, dtype=np.int64), np.asarray(train, dtype=np.int64)
    everyone = np.arange(n_documents, dtype=np.int64)
    return everyone, everyone


def nearest_neighbour_pairs(
    distances: np.ndarray, queries: np.ndarray, candidates: np.ndarray, block_rows: int = 1024
) -> np.ndarray:
    """(query, nearest candidate) position pairs, int64 [m, 2], in query order.

    A document is never its own neighbour; NaN distances (empty documents) are never
    chosen, and a query without any finite distance has no pair. Ranked by the kNN tie
    rule (:func:`~wmdeval.core.variant.rank_neighbours`): ties go to the lower candidate
    position (``candidates`` are taken in ascending order).
    """
    queries = np.asarray(queries, dtype=np.int64)
    candidates = np.sort(np.asarray(candidates, dtype=np.int64))
    pairs = []
    for start in range(0, len(queries), block_rows):
        rows = queries[start : start + block_rows]
        block = np.asarray(distances[np.ix_(rows, candidates)], dtype=np.float64)
        block[rows[:, None] == candidates[None, :]] = np.nan  # never its own neighbour
        nearest = rank_neighbours(block, 1)[:, 0]
        found = nearest >= 0
        pairs.append(np.column_stack([rows[found], candidates[nearest[found]]]))
    return np.concatenate(pairs) if pairs else np.empty((0, 2), dtype=np.int64)


def sample_pairs(pairs: np.ndarray, max_documents: int | None, seed: int) -> np.ndarray:
    """At most ``max_documents`` of the pairs (a seeded uniform sample, in their order).

    One optimal-transport plan per pair is cheap, but 20news has 7,528 test documents of
    up to a few hundred words each: a sample keeps the figure quick.
    """
    if not max_documents or len(pairs) <= max_documents:
        return pairs
    chosen = np.random.default_rng(seed).choice(len(pairs), max_documents, replace=False)
    return pairs[np.sort(chosen)]


@dataclass(frozen=True)
class MatchedWords:
    """Ground distances of the word pairs the optimal plans move mass between."""

    costs: np.ndarray  # float64: C_ij of every (i, j) with positive transported mass
    mass: np.ndarray  # float64: the mass moved along it (each document pair moves 1)
    n_pairs: int  # document pairs transported

    @property
    def share_at_zero(self) -> float:
        """Fraction of the mass moved at distance exactly 0 (a word to itself)."""
        total = self.mass.sum()
        return float(self.mass[self.costs == 0].sum() / total) if total > 0 else math.nan


def matched_words(inputs: solver.WmdInputs, pairs: np.ndarray) -> MatchedWords:
    """Solve the exact transport of every (i, j) document pair (positions in ``inputs``)."""
    from ..distances.wmd import solver

    costs, mass = [], []
    n_pairs = 0
    empty = inputs.empty
    for i, j in pairs:
        if empty[i] or empty[j]:
            continue
        plan, cost, _, _ = solver.transport(inputs, int(i), int(j))
        moved = plan > 0
        costs.append(cost[moved])
        mass.append(plan[moved])
        n_pairs += 1
    if not costs:
        return MatchedWords(np.empty(0), np.empty(0), 0)
    return MatchedWords(np.concatenate(costs), np.concatenate(mass), n_pairs)


def match_histogram(
    matched: MatchedWords, bins: int = 20, upper: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges [bins + 1], fraction of the moved mass per bin [bins]) over
    [0, ``upper``] (default: the largest matched distance); fractions sum to 1."""
    if upper is None:
        upper = float(matched.costs.max()) if matched.costs.size else 0.0
    upper = upper if upper > 0 else 1.0  # only exact matches: any range holds them
    weights, edges = np.histogram(
        matched.costs, bins=bins, range=(0.0, upper), weights=matched.mass
    )
    total = weights.sum()
    return edges, (weights / total if total > 0 else weights)


@dataclass(frozen=True)
class Figure4Panel:
    """One histogram: a dataset's nearest-neighbour pairs under one embedding."""

    dataset: str
    row: str  # heading of the block of panels, e.g. "300-d embeddings", "5-d PCA embeddings"
    inputs: solver.WmdInputs  # the documents prepared for WMD with that embedding
    pairs: np.ndarray  # int64 [m, 2]: (document, its nearest neighbour), positions in inputs
    n_queries: int  # documents with a nearest neighbour, before any sampling
    pair_source: str = ""  # which WMD picked the neighbours, shown under the figure


def figure4(
    panels: Sequence[Figure4Panel],
    out_png: str | os.PathLike,
    bins: int = 20,
    title: str | None = None,
) -> tuple[Path, Path]:
    """Histograms of the distances of matched words, weighted by the transported mass,
    one panel per dataset and one block of panels per embedding (``Figure4Panel.row``,
    in order of first appearance), as the paper's Figure 4 (top 300-d, bottom 5-d).

    All panels of a block share the x range, 0 to the block's largest matched distance.
    """
    rows = list(dict.fromkeys(panel.row for panel in panels))
    datasets = list(dict.fromkeys(panel.dataset for panel in panels))
    by_key = {(panel.row, panel.dataset): panel for panel in panels}
    matched = {key: matched_words(panel.inputs, panel.pairs) for key, panel in by_key.items()}
    n_rows, n_columns = _grid(len(datasets))
    with matplotlib.rc_context(_RC):
        fig = Figure(
            figsize=(_figure_width(n_columns), (2.5 * n_rows + 0.35) * max(1, len(rows)) + 0.7),
            layout="constrained",
        )
        fig.suptitle(title or "Distances of matched words in nearest-neighbour document pairs")
        if not panels:
            fig.text(0.5, 0.5, "no datasets", ha="center")
            return save_figure(fig, out_png)
        # Even a single block gets its heading: it names the embedding dimension.
        axes_blocks = _panel_blocks(fig, rows, len(datasets), ylabel="fraction of moved mass")
        for row, axes in zip(rows, axes_blocks, strict=True):
            upper = max(
                (
                    float(matched[key].costs.max())
                    for key in matched
                    if key[0] == row and matched[key].costs.size
                ),
                default=0.0,
            )
            for ax, dataset in zip(axes, datasets, strict=True):
                panel = by_key.get((row, dataset))
                if panel is None:
                    _no_data(ax, f"{dataset}: no {row}")
                    continue
                _histogram_panel(ax, panel, matched[row, dataset], bins, upper)
        sources = list(dict.fromkeys(p.pair_source for p in panels if p.pair_source))
        if sources:
            # supxlabel, not fig.text: the constrained layout makes room for it.
            fig.supxlabel("; ".join(sources), fontsize=7)
        return save_figure(fig, out_png)


def _histogram_panel(
    ax, panel: Figure4Panel, matched: MatchedWords, bins: int, upper: float
) -> None:
    edges, fractions = match_histogram(matched, bins, upper)
    ax.bar(
        edges[:-1],
        fractions,
        width=np.diff(edges),
        align="edge",
        color=_WMD_COLOUR,
        edgecolor="white",
        linewidth=0.4,
    )
    used = (
        f"{matched.n_pairs:,} documents"
        if matched.n_pairs == panel.n_queries
        else f"{matched.n_pairs:,} of {panel.n_queries:,} documents"
    )
    at_zero = (
        ""
        if math.isnan(matched.share_at_zero)
        else f"\nsame word (distance 0): {matched.share_at_zero:.0%}"
    )
    # Top right, above headroom: the peak at 0 is on the left, the tail is low.
    _panel_note(ax, used + at_zero, right=True)
    ax.set_title(panel.dataset)
    ax.set_xlabel("distance of matched words")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(0, 1.4 * max(float(fractions.max()) if fractions.size else 0.0, 0.01))
    ax.grid(axis="y", linewidth=0.4, alpha=0.5)
    ax.set_axisbelow(True)


@dataclass(frozen=True)
class Figure4Item:
    """The files of one dataset (one variant) for Figure 4."""

    dataset: str
    documents: str | os.PathLike  # DOCUMENTS of the variant
    splits: str | os.PathLike  # SPLITS: one fold = fixed train/test, else five-fold
    wmd: str | os.PathLike  # WMD DISTANCES with the full embeddings: picks the pairs
    embeddings: str | os.PathLike  # the full embeddings table
    pca_embeddings: str | os.PathLike | None = None  # the PCA table: a second block
    # WMD with the PCA embeddings: the PCA block's pairs are its nearest neighbours.
    # None: the PCA block transports the full block's pairs.
    pca_wmd: str | os.PathLike | None = None


def run_figure4(
    datasets: Sequence[str],
    documents: Sequence[str | os.PathLike],
    splits: Sequence[str | os.PathLike],
    matrices: Sequence[str | os.PathLike],
    embeddings: Sequence[str | os.PathLike],
    out_png: str | os.PathLike,
    max_documents: int | None,
    seed: int,
    pca_embeddings: Sequence[str | os.PathLike] | None = None,
    pca_matrices: Sequence[str | os.PathLike] | None = None,
) -> tuple[Path, Path]:
    """Figure 4 from one file of each kind per dataset (the CLI's lists, in dataset order);
    see :func:`draw_figure4`."""
    n = len(datasets)
    items = [
        Figure4Item(*fields)
        for fields in zip(
            datasets,
            documents,
            splits,
            matrices,
            embeddings,
            pca_embeddings or [None] * n,
            pca_matrices or [None] * n,
            strict=True,
        )
    ]
    return draw_figure4(items, out_png, max_documents=max_documents, seed=seed)


def draw_figure4(
    items: Sequence[Figure4Item],
    out_png: str | os.PathLike,
    max_documents: int | None,
    seed: int,
    bins: int = 20,
    title: str | None = None,
) -> tuple[Path, Path]:
    """Figure 4 from per-dataset files (see :class:`Figure4Item`).

    ``max_documents``: per dataset and embedding, at most this many nearest-neighbour
    pairs (a seeded sample; None or 0: all); each panel says how many it used.
    """
    full, reduced = [], []
    for item in items:
        doc_ids, distances = read_distances(item.wmd)
        documents = documents_in_order(read_documents(item.documents), doc_ids)
        folds = fold_indices(read_splits(item.splits), doc_ids)
        queries, candidates = query_candidates(folds, len(doc_ids))
        pairs = nearest_neighbour_pairs(distances, queries, candidates)
        del distances  # 20news: 1.4 GB
        embeddings = read_table(item.embeddings)
        full.append((item.dataset, embeddings, documents, pairs))
        if item.pca_embeddings is None:
            continue
        pca_pairs, source = pairs, "same pairs as the full-dimensional block"
        if item.pca_wmd is not None:
            pca_ids, pca_distances = read_distances(item.pca_wmd)
            if not np.array_equal(pca_ids, doc_ids):
                raise WmdevalError(f"{item.pca_wmd}: documents differ from {item.wmd}")
            pca_pairs = nearest_neighbour_pairs(pca_distances, queries, candidates)
            del pca_distances
            source = "nearest neighbours by the PCA WMD"
        reduced.append(
            (item.dataset, read_table(item.pca_embeddings), documents, pca_pairs, source)
        )

    full_title = dimension_title([_table_dim(e) for _, e, _, _ in full], "embeddings", "embeddings")
    pca_title = dimension_title(
        [_table_dim(e) for _, e, _, _, _ in reduced], "PCA embeddings", "PCA embeddings"
    )
    panels = [
        _figure4_panel(
            dataset,
            full_title,
            embeddings,
            documents,
            pairs,
            max_documents,
            seed,
            "top: nearest neighbours by WMD" if reduced else "",
        )
        for dataset, embeddings, documents, pairs in full
    ]
    panels += [
        _figure4_panel(
            dataset,
            pca_title,
            embeddings,
            documents,
            pairs,
            max_documents,
            seed,
            f"bottom: {source}",
        )
        for dataset, embeddings, documents, pairs, source in reduced
    ]
    return figure4(panels, out_png, bins, title)


def _table_dim(embeddings: pa.Table) -> int:
    return embeddings.schema.field("vector").type.list_size


def _figure4_panel(
    dataset: str,
    row: str,
    embeddings: pa.Table,
    documents: pa.Table,
    pairs: np.ndarray,
    max_documents: int | None,
    seed: int,
    pair_source: str,
) -> Figure4Panel:
    from ..distances.wmd import solver

    inputs = solver.prepare(documents, embeddings, "bow")
    return Figure4Panel(
        dataset, row, inputs, sample_pairs(pairs, max_documents, seed), len(pairs), pair_source
    )


# --------------------------------------------------------------------------- Figure 5


@dataclass(frozen=True)
class PairStatistics:
    """WMD against BOW (L1/L1) over the document pairs i < j with finite distances."""

    n_pairs: int
    rho: float  # Pearson's correlation over all n_pairs; NaN if undefined
    bow_sample: np.ndarray  # the plotted pairs (all, or a seeded subsample)
    wmd_sample: np.ndarray


def _finite_upper_pairs(
    wmd: np.ndarray, bow: np.ndarray, block_rows: int
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(wmd, bow) values of the finite pairs i < j, in row-major order, block by block.

    Blocks keep memory bounded: 20news has 177 million pairs.
    """
    n = wmd.shape[0]
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        # Row r of the block keeps columns > r; the slice starts at start + 1.
        upper = np.arange(start + 1, n)[None, :] > np.arange(start, stop)[:, None]
        w = np.asarray(wmd[start:stop, start + 1 :], dtype=np.float64)[upper]
        b = np.asarray(bow[start:stop, start + 1 :], dtype=np.float64)[upper]
        finite = np.isfinite(w) & np.isfinite(b)
        yield w[finite], b[finite]


def pair_statistics(
    wmd: np.ndarray, bow: np.ndarray, max_points: int = 20000, seed: int = 0, block_rows: int = 512
) -> PairStatistics:
    """Pearson's ρ over all finite pairs and a uniform seeded subsample to plot.

    Two passes: means first, then centred sums (accurate where one-pass sums of
    squares would cancel) while picking the sampled pairs.
    """
    if wmd.shape != bow.shape or wmd.ndim != 2 or wmd.shape[0] != wmd.shape[1]:
        raise ValueError(f"need two square matrices of one shape, got {wmd.shape}, {bow.shape}")
    n_pairs, sum_w, sum_b = 0, 0.0, 0.0
    for w, b in _finite_upper_pairs(wmd, bow, block_rows):
        n_pairs += w.size
        sum_w += float(w.sum())
        sum_b += float(b.sum())
    if n_pairs == 0:
        return PairStatistics(0, math.nan, np.empty(0), np.empty(0))
    mean_w, mean_b = sum_w / n_pairs, sum_b / n_pairs

    if n_pairs > max_points:
        chosen = np.sort(np.random.default_rng(seed).choice(n_pairs, max_points, replace=False))
    else:
        chosen = np.arange(n_pairs)
    sww = sbb = swb = 0.0
    offset = 0
    sample_w, sample_b = [], []
    for w, b in _finite_upper_pairs(wmd, bow, block_rows):
        dw, db = w - mean_w, b - mean_b
        sww += float(dw @ dw)
        sbb += float(db @ db)
        swb += float(dw @ db)
        lo, hi = np.searchsorted(chosen, [offset, offset + w.size])
        sample_w.append(w[chosen[lo:hi] - offset])
        sample_b.append(b[chosen[lo:hi] - offset])
        offset += w.size
    rho = swb / math.sqrt(sww * sbb) if sww > 0 and sbb > 0 else math.nan
    return PairStatistics(n_pairs, rho, np.concatenate(sample_b), np.concatenate(sample_w))


#: One Figure 5 panel: (dataset, doc_ids, WMD matrix, BOW (L1/L1) matrix).
ScatterPanel = tuple[str, np.ndarray, np.ndarray, np.ndarray]


def figure5(
    panels: Sequence[ScatterPanel],
    out_png: str | os.PathLike,
    max_points: int,
    seed: int,
    title: str | None = None,
    pca_panels: Sequence[ScatterPanel | None] | None = None,
    row_titles: Sequence[str] = ("full-dimensional embeddings", "PCA embeddings"),
) -> tuple[Path, Path]:
    """Scatter of WMD (y) against BOW (L1/L1) (x), one panel per
    ``(dataset, doc_ids, wmd_matrix, bow_l1_matrix)``, with Pearson's ρ over all pairs.

    With ``pca_panels`` (aligned with ``panels``; None where a dataset has no PCA
    matrix) a second block of panels shows WMD on the PCA embeddings, below the first,
    as in the paper (top 300-d, bottom 5-d); ``row_titles`` head the two blocks.
    """
    blocks = [list(panels)] + ([list(pca_panels)] if pca_panels is not None else [])
    titles = list(row_titles[: len(blocks)]) if len(blocks) > 1 else [None]
    n_rows, n_columns = _grid(len(panels))
    with matplotlib.rc_context(_RC):
        fig = Figure(
            figsize=(_figure_width(n_columns), (2.8 * n_rows + 0.35) * len(blocks) + 0.4),
            layout="constrained",
        )
        fig.suptitle(title or "WMD against BOW (L1/L1) over document pairs")
        if not panels:
            fig.text(0.5, 0.5, "no distance matrices", ha="center")
        else:
            axes_blocks = _panel_blocks(fig, titles, len(panels), ylabel="WMD")
            for axes, block in zip(axes_blocks, blocks, strict=True):
                for ax, panel in zip(axes, block, strict=True):
                    if panel is None:
                        _no_data(ax, "no PCA distance matrix")
                    else:
                        _scatter_panel(ax, panel, max_points, seed)
        return save_figure(fig, out_png)


def _scatter_panel(ax, panel: ScatterPanel, max_points: int, seed: int) -> None:
    dataset, doc_ids, wmd_matrix, bow_matrix = panel
    stats = pair_statistics(np.asarray(wmd_matrix), np.asarray(bow_matrix), max_points, seed)
    # Rasterised points keep the SVG small; axes and text stay vector.
    ax.scatter(
        stats.bow_sample,
        stats.wmd_sample,
        s=1.5,
        alpha=0.25,
        color=_WMD_COLOUR,
        linewidths=0,
        rasterized=True,
    )
    rho = "undefined" if math.isnan(stats.rho) else f"{stats.rho:.3f}"
    shown = (
        f"{stats.bow_sample.size:,} of {stats.n_pairs:,} pairs shown"
        if stats.n_pairs > stats.bow_sample.size
        else f"{stats.n_pairs:,} pairs"
    )
    _panel_note(ax, f"ρ = {rho}\n{shown}")
    ax.set_title(f"{dataset} ({len(doc_ids):,} documents)")
    ax.set_xlabel("BOW (L1/L1) distance")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(linewidth=0.4, alpha=0.5)
    ax.set_axisbelow(True)


def _panel_note(ax, text: str, right: bool = False) -> None:
    ax.text(
        0.96 if right else 0.04,
        0.96,
        text,
        transform=ax.transAxes,
        va="top",
        ha="right" if right else "left",
        fontsize=8,
        bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8},
    )


def _no_data(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8)
    ax.set_xticks([])
    ax.set_yticks([])


def _panel_blocks(
    fig: Figure, titles: Sequence[str | None], n_panels: int, ylabel: str
) -> list[np.ndarray]:
    """Axes of ``n_panels`` panels per block, one block per title, blocks stacked.

    Two blocks are the paper's top (full-dimensional) and bottom (5-d) rows; each is a
    subfigure with its own heading, so the grid of datasets may wrap inside a block.
    Axes beyond ``n_panels`` are hidden; the first column carries ``ylabel``.
    """
    n_rows, n_columns = _grid(n_panels)
    if len(titles) == 1 and titles[0] is None:
        holders = [fig]
    else:
        holders = list(fig.subfigures(len(titles), 1, squeeze=False).ravel())
        for holder, title in zip(holders, titles, strict=True):
            holder.suptitle(title, fontweight="bold")
    blocks = []
    for holder in holders:
        axes = holder.subplots(n_rows, n_columns, squeeze=False).ravel()
        for index, ax in enumerate(axes):
            if index >= n_panels:
                ax.set_visible(False)
            elif index % n_columns == 0:
                ax.set_ylabel(ylabel)
        blocks.append(axes[:n_panels])
    return blocks


def documents_in_order(documents: pa.Table, doc_ids: np.ndarray) -> pa.Table:
    """The rows of ``documents`` for ``doc_ids``, in that order (a distance matrix's)."""
    rows = positions(
        documents.column("doc_id").to_numpy(),
        doc_ids,
        "the documents (named by the distance matrix)",
    )
    return documents.take(pa.array(rows, type=pa.int64()))


def bow_l1_matrix(documents: pa.Table, doc_ids: np.ndarray, block_rows: int = 1024) -> np.ndarray:
    """BOW (L1/L1) distances (float64, like stored WMD) between ``doc_ids``, in that order.

    Documents without words get NaN rows and columns, as in a WMD matrix.
    """
    counts, _ = baselines.count_matrix(documents_in_order(documents, doc_ids))
    everyone = np.arange(len(doc_ids))
    # BOW has no IDF, so the training positions do not matter.
    bow = BaselineDistances(
        counts, methods.BY_SLUG["bow-l1-l1"], everyone, np.diff(counts.indptr) == 0
    )
    out = np.empty((len(doc_ids), len(doc_ids)), dtype=np.float64)
    for start in range(0, len(doc_ids), block_rows):
        block = everyone[start : start + block_rows]
        out[block] = bow.block(block, everyone)
    return out


def embedding_dimension(embeddings_path: str | os.PathLike) -> int:
    """Dimension of an embeddings table, read from its schema alone."""
    return pq.read_schema(embeddings_path).field("vector").type.list_size


def dimension_title(dims: Sequence[int | None], kind: str, unknown: str) -> str:
    """Heading of a block of panels: "300-d embeddings", "5-d PCA embeddings"; datasets
    of different dimensions are listed ("50/300-d embeddings"); ``unknown`` if none."""
    known = sorted({d for d in dims if d})
    return f"{'/'.join(map(str, known))}-d {kind}" if known else unknown


def run_figure5(
    datasets: Sequence[str],
    matrices: Sequence[str | os.PathLike],
    documents: Sequence[str | os.PathLike],
    out_png: str | os.PathLike,
    max_points: int,
    seed: int,
    embeddings: Sequence[str | os.PathLike] | None = None,
    pca_matrices: Sequence[str | os.PathLike] | None = None,
    pca_dim: int | None = None,
) -> tuple[Path, Path]:
    """Figure 5 from one file of each kind per dataset (the CLI's lists, in dataset order);
    the first embeddings table names the full dimension. See :func:`draw_figure5`."""
    pca = pca_matrices or [None] * len(datasets)
    items = list(zip(datasets, matrices, documents, pca, strict=True))
    full_dim = embedding_dimension(embeddings[0]) if embeddings else None
    return draw_figure5(
        items, out_png, max_points=max_points, seed=seed, full_dim=full_dim, pca_dim=pca_dim
    )


def draw_figure5(
    items: Sequence[tuple],
    out_png: str | os.PathLike,
    max_points: int,
    seed: int,
    title: str | None = None,
    full_dim: int | None = None,
    pca_dim: int | None = None,
) -> tuple[Path, Path]:
    """Figure 5 from ``(dataset, WMD DISTANCES path, DOCUMENTS path)`` items, or
    ``(dataset, WMD path, DOCUMENTS path, PCA WMD path or None)`` for the second block.

    ``full_dim`` / ``pca_dim`` name the blocks ("300-d embeddings", "5-d PCA embeddings");
    :func:`embedding_dimension` reads the first from an embeddings table.
    """
    panels: list[ScatterPanel] = []
    pca_panels: list[ScatterPanel | None] = []
    for item in items:
        dataset, wmd_path, documents_path = item[:3]
        pca_path = item[3] if len(item) > 3 else None
        doc_ids, wmd = read_distances(wmd_path)
        documents = read_documents(documents_path)
        bow = bow_l1_matrix(documents, doc_ids)
        panels.append((dataset, doc_ids, wmd, bow))
        pca_panels.append(
            None
            if pca_path is None
            else _pca_scatter_panel(dataset, pca_path, documents, doc_ids, bow)
        )
    has_pca = any(panel is not None for panel in pca_panels)
    row_titles = (
        dimension_title([full_dim], "embeddings", "full-dimensional embeddings"),
        dimension_title([pca_dim], "PCA embeddings", "PCA embeddings"),
    )
    return figure5(
        panels, out_png, max_points, seed, title, pca_panels if has_pca else None, row_titles
    )


def _pca_scatter_panel(
    dataset: str,
    pca_path: str | os.PathLike,
    documents: pa.Table,
    doc_ids: np.ndarray,
    bow: np.ndarray,
) -> ScatterPanel:
    pca_ids, pca_wmd = read_distances(pca_path)
    # The same documents in the same order reuse the BOW matrix (20news: 1.4 GB).
    if not np.array_equal(pca_ids, doc_ids):
        bow = bow_l1_matrix(documents, pca_ids)
    return (dataset, pca_ids, pca_wmd, bow)
