"""How much WMD resembles BOW (L1/L1), and WMD-TF-IDF resembles TF-IDF (L1/L1).

Two views of the resemblance, per dataset variant:

- correlation of the two distances over the document pairs i < j where both are
  defined: Pearson's over every such pair (accumulated in row blocks, so the 177
  million pairs of 20news never sit in memory at once), Spearman's over a seeded
  uniform sample of at most ``max_pairs`` pairs (all of them when there are fewer);
- nearest-neighbour agreement: the share of test documents whose nearest training
  document is the same under both distances, with the kNN ranking and tie rule
  (:meth:`wmdeval.core.variant.Distances.nearest`), fold by fold.

The TF-IDF baseline takes its IDF from each fold's training documents, as in the kNN
evaluation, so for it both views are computed per fold and averaged over the folds.
The WMD-TF-IDF matrix is used as given. A document without words has no defined
distance under either method.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..core import io, schemas
from ..core.coverage import Expected, with_method_column
from ..core.methods import BY_NAME, BY_SLUG
from ..core.progress import Progress
from ..core.stats import spearman_rho
from ..core.variant import Distances, Variant, rank_neighbours
from ..distances.factory import method_distances
from ..reporting.tables import VARIANT_ORDER, write_table_files

log = logging.getLogger("wmdeval.analyses.wmd_vs_bow")

#: Which baseline each WMD method is compared with (by WMD method slug).
COMPARED_WITH = {"wmd": "BOW (L1/L1)", "wmd-tfidf": "TF-IDF (L1/L1)"}

#: Distances handled per row block: bounds the memory of the correlation and
#: nearest-neighbour passes to a few arrays of this many float64.
_BLOCK_CELLS = 1 << 22

TITLE = "WMD resembles BOW (L1/L1): correlations and nearest-neighbour agreement"


# The table written here is documented with the others in schemas.py.
WMD_VS_BOW = schemas.WMD_VS_BOW


# --------------------------------------------------------------------------- correlations


@dataclass
class _Moments:
    """Running count, means and centred sums of products of paired values.

    Blocks are merged with the pairwise update of Chan, Golub and LeVeque: each block
    is centred on its own means, so no sum of squares of raw values ever cancels.
    """

    n: int = 0
    mean_a: float = 0.0
    mean_b: float = 0.0
    saa: float = 0.0
    sbb: float = 0.0
    sab: float = 0.0

    def add(self, a: np.ndarray, b: np.ndarray) -> None:
        if a.size == 0:
            return
        mean_a, mean_b = float(a.mean()), float(b.mean())
        da, db = a - mean_a, b - mean_b
        n = self.n + a.size
        weight = self.n * a.size / n  # of the squared shift between the two means
        shift_a, shift_b = mean_a - self.mean_a, mean_b - self.mean_b
        self.saa += float(da @ da) + shift_a * shift_a * weight
        self.sbb += float(db @ db) + shift_b * shift_b * weight
        self.sab += float(da @ db) + shift_a * shift_b * weight
        self.mean_a += shift_a * a.size / n
        self.mean_b += shift_b * a.size / n
        self.n = n

    def pearson(self) -> float:
        if self.n < 2 or self.saa <= 0 or self.sbb <= 0:
            return math.nan  # fewer than two pairs, or a constant distance
        return self.sab / math.sqrt(self.saa * self.sbb)


@dataclass(frozen=True)
class Correlations:
    pearson: float
    spearman: float
    spearman_pairs: int
    pairs: int


def pairs_before_row(row: int | np.ndarray, n: int) -> int | np.ndarray:
    """Number of pairs i < j with i < ``row``: the row-major index of pair (row, row + 1)."""
    return row * n - row * (row + 1) // 2


def sample_pair_indices(n_pairs: int, max_pairs: int, seed: int) -> np.ndarray | None:
    """Sorted row-major indices of a seeded uniform sample of pairs; None = all pairs."""
    if n_pairs <= max_pairs:
        return None
    chosen = np.random.default_rng(seed).choice(n_pairs, size=max_pairs, replace=False)
    return np.sort(chosen)


def pair_correlations(
    distances_a: Distances,
    distances_b: Distances,
    max_pairs: int,
    seed: int,
    block_rows: int | None = None,
) -> Correlations:
    """Pearson and Spearman correlations of two distances over the document pairs i < j
    where both are defined.

    Both distances are over the same documents, asked for one block of rows at a time
    (with the columns right of the block's first row). Spearman's uses a seeded uniform
    sample of at most ``max_pairs`` of all pairs i < j, keeping the sampled pairs that
    are finite; with ``max_pairs`` or fewer pairs in all, it uses every finite pair.
    """
    n = distances_a.n_documents
    if distances_b.n_documents != n:
        raise ValueError(f"distances over {n} and {distances_b.n_documents} documents")
    block_rows = block_rows or max(1, _BLOCK_CELLS // max(n, 1))
    n_pairs = n * (n - 1) // 2
    sample = sample_pair_indices(n_pairs, max_pairs, seed)
    moments = _Moments()
    sampled_a, sampled_b = [], []
    for start in range(0, max(n - 1, 0), block_rows):  # the last row has no pair i < j
        stop = min(n - 1, start + block_rows)
        rows, cols = np.arange(start, stop), np.arange(start + 1, n)
        # row r of the block pairs with the columns right of it; row-major order, so the
        # k-th value is pair number pairs_before_row(start) + k
        upper = cols[None, :] > rows[:, None]
        a = distances_a.block(rows, cols)[upper]
        b = distances_b.block(rows, cols)[upper]
        finite = np.isfinite(a) & np.isfinite(b)
        moments.add(a[finite], b[finite])
        if sample is None:
            picked = finite
        else:
            first, end = pairs_before_row(start, n), pairs_before_row(stop, n)
            lo, hi = np.searchsorted(sample, [first, end])
            picked = sample[lo:hi] - first
            picked = picked[finite[picked]]
        sampled_a.append(a[picked])
        sampled_b.append(b[picked])
    sampled_a = np.concatenate(sampled_a) if sampled_a else np.zeros(0)
    sampled_b = np.concatenate(sampled_b) if sampled_b else np.zeros(0)
    return Correlations(
        pearson=moments.pearson(),
        spearman=spearman_rho(sampled_a, sampled_b),
        spearman_pairs=len(sampled_a),
        pairs=moments.n,
    )


# --------------------------------------------------------------------------- neighbours


def nearest_neighbours(dist: np.ndarray, block_rows: int | None = None) -> np.ndarray:
    """The nearest column of every row by the kNN rule (distance, then lower column);
    -1 where a row has no finite distance. Row blocks bound the memory."""
    block_rows = block_rows or max(1, _BLOCK_CELLS // max(dist.shape[1], 1))
    parts = [
        rank_neighbours(dist[start : start + block_rows], 1)[:, 0]
        for start in range(0, dist.shape[0], block_rows)
    ]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def neighbour_agreement(neighbours_a: np.ndarray, neighbours_b: np.ndarray) -> float:
    """Share of queries with the same nearest neighbour, over the queries that have one
    under both methods (NaN if none has)."""
    both = (neighbours_a >= 0) & (neighbours_b >= 0)
    if not both.any():
        return math.nan
    return float(np.mean(neighbours_a[both] == neighbours_b[both]))


def fold_agreement(
    distances_a: Distances, distances_b: Distances, train: np.ndarray, test: np.ndarray
) -> float:
    """Nearest-neighbour agreement of one fold: test documents against training ones."""
    block_rows = max(1, _BLOCK_CELLS // max(len(train), 1))
    neighbours_a, neighbours_b = [], []
    for start in range(0, len(test), block_rows):
        queries = test[start : start + block_rows]
        neighbours_a.append(distances_a.nearest(queries, train, 1).index[:, 0])
        neighbours_b.append(distances_b.nearest(queries, train, 1).index[:, 0])
    if not neighbours_a:
        return math.nan
    return neighbour_agreement(np.concatenate(neighbours_a), np.concatenate(neighbours_b))


# --------------------------------------------------------------------------- a dataset


def _mean(values: Sequence[float]) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return float(np.mean(finite)) if finite else math.nan


def comparison_row(
    corpus: Variant, wmd_slug: str, dataset: str, variant: str, max_pairs: int, seed: int
) -> dict:
    """One WMD_VS_BOW row: a WMD method against the baseline it is compared with."""
    if wmd_slug not in COMPARED_WITH:
        raise io.WmdevalError(
            f"no baseline to compare {wmd_slug!r} with; expected one of {', '.join(COMPARED_WITH)}"
        )
    method_a, method_b = BY_SLUG[wmd_slug], BY_NAME[COMPARED_WITH[wmd_slug]]
    if not corpus.folds:
        raise io.WmdevalError(f"{dataset}/{variant}: the splits have no folds")
    wmd = method_distances(corpus, method_a)
    # BOW does not depend on the fold: one pass serves every fold.
    correlation_folds = list(range(len(corpus.folds))) if method_b.weighting == "tfidf" else [None]
    correlations = [
        pair_correlations(wmd, method_distances(corpus, method_b, fold), max_pairs, seed)
        for fold in correlation_folds
    ]
    per_fold = [
        fold_agreement(wmd, method_distances(corpus, method_b, fold), train, test)
        for fold, (train, test) in enumerate(corpus.folds)
    ]
    row = {
        "dataset": dataset,
        "variant": variant,
        "method_a": method_a.name,
        "method_b": method_b.name,
        "pearson": _mean([c.pearson for c in correlations]),
        "spearman": _mean([c.spearman for c in correlations]),
        # which pairs are defined depends on the documents' words, not on the IDF, so
        # every fold counts the same pairs
        "spearman_pairs": correlations[0].spearman_pairs,
        "pairs": correlations[0].pairs,
        "nn_agreement": _mean(per_fold),
        "nn_agreement_per_fold": per_fold,
    }
    log.info(
        "%s/%s %s vs %s: Pearson %.3f, Spearman %.3f (%d of %d pairs), nearest-neighbour "
        "agreement %.3f",
        dataset,
        variant,
        method_a.name,
        method_b.name,
        row["pearson"],
        row["spearman"],
        row["spearman_pairs"],
        row["pairs"],
        row["nn_agreement"],
    )
    return row


def analysis_table(
    corpus: Variant,
    dataset: str,
    variant: str,
    max_pairs: int,
    seed: int,
    report: str | None = None,
) -> pa.Table:
    """WMD_VS_BOW rows for every WMD method of the variant that has a baseline to be
    compared with (WMD, WMD-TF-IDF), in Table 2 order; Spearman's over a seeded sample
    of at most ``max_pairs`` document pairs. ``report``: the subject of the progress
    lines in the log (methods compared; None: no lines)."""
    slugs = [slug for slug in COMPARED_WITH if slug in corpus.wmd]
    progress = Progress(log if report is not None else None, report or "", len(slugs), "methods")
    rows = []
    for slug in slugs:
        rows.append(comparison_row(corpus, slug, dataset, variant, max_pairs, seed))
        progress.advance()
    progress.finish()
    return pa.Table.from_pylist(rows, schema=WMD_VS_BOW)


# --------------------------------------------------------------------------- the table


HEADER = [
    "dataset",
    "variant",
    "method",
    "compared with",
    "Pearson",
    "Spearman",
    "Spearman pairs",
    "pairs",
    "NN agreement",
    "NN agreement per fold",
]

NOTE = """\
One row per dataset, variant and WMD method, against the baseline it extends: WMD against \
BOW (L1/L1), WMD-TF-IDF against TF-IDF (L1/L1).

- Pearson: Pearson's correlation between the two distances over every document pair \
i < j where both are defined (documents without words have none).
- Spearman: Spearman's rank correlation over a seeded uniform sample of the pairs; \
Spearman pairs is the sample size (every defined pair when there are few enough).
- pairs: the document pairs i < j with both distances defined.
- NN agreement: the share of test documents whose nearest training document (kNN \
ranking: by distance, ties to the lower doc_id) is the same under both distances, over \
the test documents with a nearest neighbour under both; mean over the folds, each fold \
listed under NN agreement per fold.
- TF-IDF (L1/L1) takes its IDF from each fold's training documents, as in the kNN \
evaluation, so its correlations are means over the folds; the WMD-TF-IDF matrix is used \
as computed.
"""


def _number(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else "n/a"


def table_rows(table: pa.Table, datasets: Sequence[str]) -> list[list[str]]:
    """Formatted rows: datasets in the given order, then variant, then method."""
    records = table.to_pylist()

    def order(record: dict) -> tuple:
        variant = record["variant"]
        variant_rank = (
            VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(VARIANT_ORDER)
        )
        method_rank = list(COMPARED_WITH.values()).index(record["method_b"])
        return datasets.index(record["dataset"]), variant_rank, variant, method_rank

    return [
        [
            r["dataset"],
            r["variant"],
            r["method_a"],
            r["method_b"],
            _number(r["pearson"]),
            _number(r["spearman"]),
            str(r["spearman_pairs"]),
            str(r["pairs"]),
            _number(r["nn_agreement"]),
            ", ".join(_number(v) for v in r["nn_agreement_per_fold"]),
        ]
        for r in sorted(records, key=order)
    ]


def run_analysis_table(
    paths: Sequence[str | os.PathLike],
    csv_path: str | os.PathLike,
    md_path: str | os.PathLike,
    expected: Expected | None = None,
) -> None:
    """Combine per-dataset WMD_VS_BOW files into one CSV and one Markdown table; with
    ``expected`` (:mod:`wmdeval.core.coverage`), its WMD methods of each dataset variant."""
    if expected is not None:
        wmd_names = [BY_SLUG[slug].name for slug in COMPARED_WITH]
        expected = with_method_column(expected, "method_a", keep=wmd_names)
    table = io.read_tables(paths, WMD_VS_BOW, expected)
    datasets = list(dict.fromkeys(table.column("dataset").to_pylist()))
    write_table_files(table_rows(table, datasets), HEADER, csv_path, md_path, TITLE, NOTE)


__all__ = [
    "COMPARED_WITH",
    "WMD_VS_BOW",
    "Correlations",
    "pair_correlations",
    "sample_pair_indices",
    "pairs_before_row",
    "nearest_neighbours",
    "neighbour_agreement",
    "fold_agreement",
    "comparison_row",
    "analysis_table",
    "run_analysis_table",
]
