"""The paper's Figure 3 (kNN errors with and without normalisation) and Figure 5 (WMD
against BOW (L1/L1) over document pairs).

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

import matplotlib
import numpy as np
import pyarrow as pa
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from . import baselines, methods, report, schemas
from .io import WmdevalError, atomic_path, read_distances, read_documents, read_table

# Fixed SVG ids (otherwise random per run) and text drawn as paths (no font dependency).
_RC = {"svg.hashsalt": "wmdeval", "svg.fonttype": "path", "font.size": 9}
_PNG_DPI = 150

_BOW_COLOUR, _TFIDF_COLOUR, _WMD_COLOUR = "#4C72B0", "#DD8452", "#55A868"


def save_figure(fig: Figure, out_png: str | os.PathLike) -> tuple[Path, Path]:
    """Save ``fig`` as ``out_png`` and as the .svg next to it, atomically, reproducibly."""
    out_png = Path(out_png)
    out_svg = out_png.with_suffix(".svg")
    FigureCanvasAgg(fig)
    with matplotlib.rc_context(_RC):
        with atomic_path(out_png) as tmp:
            fig.savefig(tmp, format="png", dpi=_PNG_DPI, metadata={"Software": None})
        with atomic_path(out_svg) as tmp:
            fig.savefig(tmp, format="svg", metadata={"Date": None, "Creator": None})
    return out_png, out_svg


def _grid(n_panels: int, max_columns: int = 4) -> tuple[int, int]:
    columns = max(1, min(max_columns, n_panels))
    return max(1, math.ceil(n_panels / columns)), columns


# --------------------------------------------------------------------------- Figure 3


@dataclass(frozen=True)
class Bar:
    method: str  # the paper's method name, as in SCORES.method
    colour: str
    unnormalised: bool  # drawn light and hatched ("shaded" in the paper)


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


def _bar_style(bar: Bar) -> dict:
    if bar.unnormalised:
        return {"facecolor": to_rgba(bar.colour, 0.3),
                "edgecolor": bar.colour, "hatch": "///", "linewidth": 0.8}
    return {"facecolor": bar.colour, "edgecolor": bar.colour, "linewidth": 0.8}


def figure3(scores: pa.Table, variant: str, out_png: str | os.PathLike,
            datasets: Sequence[str] | None = None,
            unnormalised: str = "None/L2") -> tuple[Path, Path]:
    """Bar chart of kNN test errors, one panel per dataset (errors differ by an order
    of magnitude between datasets, so panels get their own y scale). Error bars are the
    standard deviation over folds (ddof = 0); one-fold datasets have none.
    """
    errors = report.fold_errors(scores, variant, "knn")
    if datasets is None:
        datasets = list(dict.fromkeys(scores.column("dataset").to_pylist()))
    bars = figure3_bars(unnormalised)
    n_rows, n_columns = _grid(len(datasets))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(max(2.6 * n_columns + 0.6, 5.6), 2.4 * n_rows + 1.3),
                     layout="constrained")
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
                ax.bar(position, cell.mean, width=0.8, yerr=spread, capsize=2,
                       error_kw={"linewidth": 0.8}, **_bar_style(bar))
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
        handles = [Patch(label=bar.method, **_bar_style(bar)) for bar in bars]
        # Five legend entries do not fit in one line under one or two panels.
        fig.legend(handles=handles, loc="outside lower center",
                   ncols=len(bars) if n_columns >= 3 else 3, frameon=False)
        return save_figure(fig, out_png)


def run_figure3(scores_path: str | os.PathLike, out_png: str | os.PathLike,
                variant: str = "original", datasets: Sequence[str] | None = None,
                unnormalised: str = "None/L2") -> tuple[Path, Path]:
    scores = read_table(scores_path, schemas.SCORES)
    return figure3(scores, variant, out_png, datasets, unnormalised)


# --------------------------------------------------------------------------- Figure 5


@dataclass(frozen=True)
class PairStatistics:
    """WMD against BOW (L1/L1) over the document pairs i < j with finite distances."""

    n_pairs: int
    rho: float  # Pearson's correlation over all n_pairs; NaN if undefined
    bow_sample: np.ndarray  # the plotted pairs (all, or a seeded subsample)
    wmd_sample: np.ndarray


def _finite_upper_pairs(wmd: np.ndarray, bow: np.ndarray,
                        block_rows: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(wmd, bow) values of the finite pairs i < j, in row-major order, block by block.

    Blocks keep memory bounded: 20news has 177 million pairs.
    """
    n = wmd.shape[0]
    for start in range(0, n, block_rows):
        stop = min(n, start + block_rows)
        # Row r of the block keeps columns > r; the slice starts at start + 1.
        upper = (np.arange(start + 1, n)[None, :] > np.arange(start, stop)[:, None])
        w = np.asarray(wmd[start:stop, start + 1:], dtype=np.float64)[upper]
        b = np.asarray(bow[start:stop, start + 1:], dtype=np.float64)[upper]
        finite = np.isfinite(w) & np.isfinite(b)
        yield w[finite], b[finite]


def pair_statistics(wmd: np.ndarray, bow: np.ndarray, max_points: int = 20000,
                    seed: int = 0, block_rows: int = 512) -> PairStatistics:
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


def figure5(panels: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]],
            out_png: str | os.PathLike, max_points: int = 20000, seed: int = 0,
            title: str | None = None) -> tuple[Path, Path]:
    """Scatter of WMD (y) against BOW (L1/L1) (x), one panel per
    ``(dataset, doc_ids, wmd_matrix, bow_l1_matrix)``, with Pearson's ρ over all pairs.
    """
    n_rows, n_columns = _grid(len(panels))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(2.8 * n_columns + 0.4, 2.8 * n_rows + 0.6), layout="constrained")
        fig.suptitle(title or "WMD against BOW (L1/L1) over document pairs")
        if not panels:
            fig.text(0.5, 0.5, "no distance matrices", ha="center")
        axes = fig.subplots(n_rows, n_columns, squeeze=False).ravel() if panels else []
        for ax, (dataset, doc_ids, wmd, bow) in zip(axes, panels, strict=False):
            stats = pair_statistics(np.asarray(wmd), np.asarray(bow), max_points, seed)
            # Rasterised points keep the SVG small; axes and text stay vector.
            ax.scatter(stats.bow_sample, stats.wmd_sample, s=1.5, alpha=0.25,
                       color=_WMD_COLOUR, linewidths=0, rasterized=True)
            rho = "undefined" if math.isnan(stats.rho) else f"{stats.rho:.3f}"
            shown = (f"{stats.bow_sample.size:,} of {stats.n_pairs:,} pairs shown"
                     if stats.n_pairs > stats.bow_sample.size else f"{stats.n_pairs:,} pairs")
            ax.text(0.04, 0.96, f"ρ = {rho}\n{shown}", transform=ax.transAxes, va="top",
                    fontsize=8, bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8})
            ax.set_title(f"{dataset} ({len(doc_ids):,} documents)")
            ax.set_xlabel("BOW (L1/L1) distance")
            ax.set_xlim(left=0)
            ax.set_ylim(bottom=0)
            ax.grid(linewidth=0.4, alpha=0.5)
            ax.set_axisbelow(True)
        for index, ax in enumerate(axes):
            if index >= len(panels):
                ax.set_visible(False)
            elif index % n_columns == 0:
                ax.set_ylabel("WMD")
        return save_figure(fig, out_png)


def bow_l1_matrix(documents: pa.Table, doc_ids: np.ndarray,
                  block_rows: int = 1024) -> np.ndarray:
    """BOW (L1/L1) distances (float32, like stored WMD) between ``doc_ids``, in that order.

    Documents without words get NaN rows and columns, as in a WMD matrix.
    """
    position = {int(d): p for p, d in enumerate(documents.column("doc_id").to_pylist())}
    try:
        rows = [position[int(d)] for d in doc_ids]
    except KeyError as exc:
        raise WmdevalError(f"WMD matrix names document {exc} that is not in the documents") \
            from None
    counts, _ = baselines.count_matrix(documents.take(pa.array(rows, type=pa.int64())))
    method = methods.BY_SLUG["bow-l1-l1"]
    everyone = np.arange(len(rows))
    out = np.empty((len(rows), len(rows)), dtype=np.float32)
    for start in range(0, len(rows), block_rows):
        block = everyone[start:start + block_rows]
        # BOW has no IDF, so the "training rows" argument does not matter.
        out[block] = baselines.baseline_distances(counts, method, everyone, block, everyone)
    empty = counts.getnnz(axis=1) == 0
    out[empty, :] = np.nan
    out[:, empty] = np.nan
    return out


def run_figure5(items: Sequence[tuple[str, str | os.PathLike, str | os.PathLike]],
                out_png: str | os.PathLike, max_points: int = 20000, seed: int = 0,
                title: str | None = None) -> tuple[Path, Path]:
    """Figure 5 from ``(dataset, WMD DISTANCES path, DOCUMENTS path)`` items."""
    panels = []
    for dataset, wmd_path, documents_path in items:
        doc_ids, wmd = read_distances(wmd_path)
        bow = bow_l1_matrix(read_documents(documents_path), doc_ids)
        panels.append((dataset, doc_ids, wmd, bow))
    return figure5(panels, out_png, max_points, seed, title)
