"""Nearest-neighbour overlap (N2O) between the 14 document distances.

N2O(A, B) = mean over queries q of |kNN_A(q) ∩ kNN_B(q)| / k: how far two distances
agree on which documents are near, whatever their scales. Queries are the test
documents of a fold (or a seeded sample of them) and neighbours come from the fold's
training documents, exactly as the kNN classifier sees them; ranking uses the kNN tie
rule (:func:`wmdeval.classification.knn.rank_neighbours`: by distance, then lower doc_id).

This module also holds the helper every analysis module uses to get any method's
document distances (:class:`Corpus`, :func:`method_distances`).
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from ..classification.knn import rank_neighbours
from ..core import io, schemas
from ..core.coverage import Expected, with_method_column
from ..core.methods import BY_NAME, BY_SLUG, METHODS, Method
from ..core.stats import spearman_rho
from ..distances import baselines
from ..reporting.tables import method_sort_key, write_table_files

log = logging.getLogger("wmdeval.analyses.n2o")

DEFAULT_KS = (5, 10, 19)


# The table written here is documented with the others in schemas.py.
N2O = schemas.N2O


# --------------------------------------------------------------------------- distances


def as_method(method: Method | str) -> Method:
    """A Method from itself, its slug ("bow-l1-l1") or its paper name ("BOW (L1/L1)")."""
    if isinstance(method, Method):
        return method
    found = BY_SLUG.get(method) or BY_NAME.get(method)
    if found is None:
        raise io.WmdevalError(f"unknown method {method!r}")
    return found


@dataclass(frozen=True)
class Corpus:
    """One dataset variant, ready for distance look-ups.

    Documents are in doc_id order; positions (``rows``, ``cols``, fold lists) index
    that order. WMD matrices are reordered to it once, so a look-up is plain indexing.
    """

    doc_ids: np.ndarray
    labels: np.ndarray  # label string per document
    counts: sp.csr_matrix
    no_words: np.ndarray  # documents without words: NaN distances under every method
    folds: list[tuple[np.ndarray, np.ndarray]]  # (train, test) positions; [] without splits
    wmd: dict[str, np.ndarray]  # WMD method slug -> square float matrix in doc_id order

    @property
    def methods(self) -> tuple[Method, ...]:
        """Methods with distances: every baseline, and the WMD methods given a matrix."""
        return tuple(m for m in METHODS if not m.is_wmd or m.slug in self.wmd)

    def idf_rows(self, fold: int | None) -> np.ndarray:
        """Where TF-IDF takes its IDF: the fold's training list (as the kNN evaluation
        does), or every document when no fold is given."""
        if fold is None:
            return np.arange(len(self.doc_ids))
        if not 0 <= fold < len(self.folds):
            raise io.WmdevalError(f"fold {fold} does not exist ({len(self.folds)} fold(s))")
        return self.folds[fold][0]

    def distances(self, method: Method | str, fold: int | None, rows: np.ndarray,
                  cols: np.ndarray) -> np.ndarray:
        """Dense float64 distances [len(rows), len(cols)]; NaN where undefined."""
        method = as_method(method)
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if method.is_wmd:
            if method.slug not in self.wmd:
                raise io.WmdevalError(f"no {method.name} distances were given")
            out = np.array(self.wmd[method.slug][np.ix_(rows, cols)], dtype=np.float64)
        else:
            out = baselines.baseline_distances(self.counts, method, self.idf_rows(fold),
                                               rows, cols)
        # A document without words has no defined distance under any method (a baseline
        # would otherwise give it the norm of the other document).
        out[self.no_words[rows], :] = np.nan
        out[:, self.no_words[cols]] = np.nan
        return out


def _aligned_matrix(doc_ids: np.ndarray, matrix_ids: np.ndarray, matrix: np.ndarray,
                    slug: str) -> np.ndarray:
    """``matrix`` (rows/columns in ``matrix_ids`` order) reordered to ``doc_ids``."""
    where = {int(d): p for p, d in enumerate(np.asarray(matrix_ids))}
    missing = [int(d) for d in doc_ids if int(d) not in where]
    if missing:
        raise io.WmdevalError(f"{slug} distances lack {len(missing)} document(s), "
                              f"e.g. doc_id {missing[0]}")
    index = np.array([where[int(d)] for d in doc_ids], dtype=np.int64)
    if np.array_equal(index, np.arange(len(matrix_ids))):
        return np.asarray(matrix)
    return np.asarray(matrix)[np.ix_(index, index)]


def prepare_corpus(documents: pa.Table, splits: pa.Table | None,
                   wmd_matrices: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> Corpus:
    """A :class:`Corpus` from DOCUMENTS, SPLITS (or None) and WMD (doc_ids, matrix) pairs."""
    documents = documents.sort_by("doc_id")
    doc_ids = documents.column("doc_id").to_numpy()
    counts, _ = baselines.count_matrix(documents)
    folds = io.fold_indices(splits, doc_ids) if splits is not None else []
    wmd = {slug: _aligned_matrix(doc_ids, ids, matrix, slug)
           for slug, (ids, matrix) in wmd_matrices.items()}
    return Corpus(doc_ids=doc_ids,
                  labels=np.asarray(documents.column("label").to_pylist(), dtype=object),
                  counts=counts, no_words=np.diff(counts.indptr) == 0, folds=folds, wmd=wmd)


def read_corpus(documents_path: str | os.PathLike, splits_path: str | os.PathLike | None,
                wmd_paths: Mapping[str, str | os.PathLike]) -> Corpus:
    splits = io.read_splits(splits_path) if splits_path is not None else None
    return prepare_corpus(io.read_documents(documents_path), splits,
                          {slug: io.read_distances(path) for slug, path in wmd_paths.items()})


def method_distances(documents: pa.Table | Corpus, splits: pa.Table | None,
                     wmd_matrices: Mapping[str, tuple[np.ndarray, np.ndarray]],
                     method: Method | str, fold: int | None, rows: np.ndarray,
                     cols: np.ndarray) -> np.ndarray:
    """Distances of any of the 14 methods between document positions (doc_id order).

    Baselines are computed on the fly with the IDF of ``fold``'s training documents
    (all documents when ``fold`` is None); WMD methods index ``wmd_matrices[slug]``
    = (doc_ids, matrix). NaN marks undefined distances (documents without words, or
    without TF-IDF mass for WMD-TF-IDF). Pass a prepared :class:`Corpus` as
    ``documents`` to skip the set-up when calling this many times.
    """
    corpus = documents if isinstance(documents, Corpus) else prepare_corpus(
        documents, splits, wmd_matrices)
    return corpus.distances(method, fold, rows, cols)


# --------------------------------------------------------------------------- N2O


def overlap_counts(neighbours_a: np.ndarray, neighbours_b: np.ndarray, k: int) -> np.ndarray:
    """|first k of a ∩ first k of b| per row; -1 slots (no neighbour) never count."""
    a, b = neighbours_a[:, :k], neighbours_b[:, :k]
    same = (a[:, :, None] == b[:, None, :]) & (a[:, :, None] >= 0)
    return same.sum(axis=(1, 2))


def nearest_neighbour_overlap(neighbours_a: np.ndarray, neighbours_b: np.ndarray,
                              k: int) -> float:
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


def fold_neighbours(corpus: Corpus, fold: int, query_pos: np.ndarray,
                    k_max: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Per method (paper name): the k_max nearest training positions of every query;
    and which queries have a defined distance to some training document under every
    method (the others are skipped, so all pairs compare the same queries)."""
    train = corpus.folds[fold][0]
    neighbours, usable = {}, np.ones(len(query_pos), dtype=bool)
    for method in corpus.methods:
        dist = corpus.distances(method, fold, query_pos, train)
        usable &= np.isfinite(dist).any(axis=1)
        neighbours[method.name] = rank_neighbours(dist, k_max)
    return neighbours, usable


def n2o_rows(corpus: Corpus, dataset: str, variant: str, ks: Sequence[int] = DEFAULT_KS,
             queries: int | None = None, seed: int = 0) -> list[dict]:
    """N2O rows (the N2O schema) for every method pair x k x fold."""
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1:
        raise io.WmdevalError("n2o: k must be a non-empty list of positive integers")
    if not corpus.folds:
        raise io.WmdevalError("n2o needs train/test splits")
    names = [m.name for m in corpus.methods]
    rows = []
    for fold, (_, test) in enumerate(corpus.folds):
        query_pos = sample_queries(test, queries, seed, fold)
        neighbours, usable = fold_neighbours(corpus, fold, query_pos, ks[-1])
        n_empty = int(np.count_nonzero(~usable))
        if n_empty:
            log.info("%s/%s fold %d: %d of %d queries skipped (undefined distances)",
                     dataset, variant, fold, n_empty, len(query_pos))
        for a, b in itertools.combinations_with_replacement(names, 2):
            for k in ks:
                rows.append({"dataset": dataset, "variant": variant, "method_a": a,
                             "method_b": b, "k": k, "fold": fold,
                             "n2o": nearest_neighbour_overlap(neighbours[a][usable],
                                                              neighbours[b][usable], k),
                             "queries": int(np.count_nonzero(usable)),
                             "empty_queries": n_empty})
    return rows


def n2o_results(corpus: Corpus, dataset: str, variant: str, ks: Sequence[int],
                queries: int | None, seed: int) -> pa.Table:
    """The N2O table of one dataset variant. ``queries``: None = every test document
    of each fold, else a seeded sample of that many per fold."""
    rows = n2o_rows(corpus, dataset, variant, ks, queries, seed)
    return pa.table({name: [r[name] for r in rows] for name in N2O.names}).cast(N2O)


# --------------------------------------------------------------------------- report


def mean_over_folds(table: pa.Table) -> dict[tuple[str, str, int], dict[tuple[str, str], float]]:
    """(dataset, variant, k) -> {(method_a, method_b): N2O averaged over folds}."""
    sums: dict[tuple, dict[tuple[str, str], list[float]]] = {}
    for row in table.to_pylist():
        key = (row["dataset"], row["variant"], row["k"])
        sums.setdefault(key, {}).setdefault((row["method_a"], row["method_b"]), []).append(
            row["n2o"])
    return {key: {pair: float(np.mean(v)) for pair, v in pairs.items()}
            for key, pairs in sums.items()}


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


def n2o_heatmap(panels: Sequence[tuple[str, list[str], np.ndarray]], k: int | str,
                out_png: str | os.PathLike):
    """One annotated heatmap per ``(title, method names, matrix)``."""
    import matplotlib
    from matplotlib.figure import Figure

    from ..reporting.figures import _RC, save_figure

    n_columns = 2 if len(panels) > 1 else 1
    n_rows = max(1, math.ceil(len(panels) / n_columns))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(6.6 * n_columns, 6.2 * n_rows + 0.5), layout="constrained")
        fig.suptitle(f"Nearest-neighbour overlap (N2O) between document distances, k = {k} "
                     "(mean over folds; 1 = same neighbours)")
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
                    ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center",
                            fontsize=5.5, color=_text_colour(matrix[i, j], cmap),
                            in_layout=False)
            ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
            ax.set_yticks(range(len(names)), names, fontsize=7)
            ax.set_title(title)
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        if image is not None:
            fig.colorbar(image, ax=list(axes[:len(panels)]), shrink=0.6, label="N2O")
        return save_figure(fig, out_png, svg=False)


def run_n2o_report(paths: Sequence[str | os.PathLike], heatmap_png: str | os.PathLike,
                   robustness_csv: str | os.PathLike, robustness_md: str | os.PathLike,
                   k: int | None = None, expected: Expected | None = None) -> None:
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
            rows.append([dataset, variant, str(r["k_a"]), str(r["k_b"]),
                         f"{r['spearman_rho']:.3f}", str(r["pairs"])])
    note = ("Method pairs (diagonal excluded) are ranked by their N2O, averaged over folds, "
            "at each k; ρ is Spearman's rank correlation between the rankings at k_a and "
            "k_b. ρ near 1: which distances agree most does not depend on k.")
    write_table_files(rows, ["dataset", "variant", "k_a", "k_b", "spearman_rho", "pairs"],
                      robustness_csv, robustness_md,
                      "N2O robustness: rank correlation of method pairs across k", note)


__all__ = [
    "N2O", "DEFAULT_KS", "Corpus", "prepare_corpus", "read_corpus", "method_distances", "as_method",
    "overlap_counts", "nearest_neighbour_overlap", "n2o_rows", "n2o_results", "rank_robustness",
    "run_n2o_report",
]
