"""Every Parquet table wmdeval writes, in one place.

Each schema is a ``pyarrow.Schema`` whose fields carry a ``description`` in their
metadata; ``describe()`` renders them as the Markdown table in the README.
Row positions matter in two tables: the rows of a DISTANCES table are in the
order of its ``doc_id`` column, and so are its columns.
"""

from __future__ import annotations

import pyarrow as pa


def _field(name: str, type_: pa.DataType, description: str) -> pa.Field:
    return pa.field(name, type_, nullable=False, metadata={"description": description})


#: One row per document of a dataset (``ingest/documents.parquet`` and the
#: filtered ``oov/documents.parquet`` and ``<variant>/documents.parquet``).
DOCUMENTS = pa.schema(
    [
        _field("doc_id", pa.int32(), "0-based document id, stable across all stages"),
        _field("label", pa.string(), "class label as written in the source"),
        _field(
            "y",
            pa.int32(),
            "label code: index of `label` in the label names, by value if all are numbers",
        ),
        _field("words", pa.list_(pa.string()), "distinct words of the document, sorted"),
        _field("counts", pa.list_(pa.float64()), "count of each word in `words` (> 0)"),
    ]
)

#: Train/test membership, long format: one row per fold x document in that fold.
SPLITS = pa.schema(
    [
        _field("fold", pa.int16(), "0-based fold number"),
        _field("doc_id", pa.int32(), "document id (DOCUMENTS.doc_id)"),
        _field("subset", pa.string(), "'train' or 'test'"),
    ]
)


#: The dataset's vocabulary looked up in its embedding (``vectors/embeddings.parquet``):
#: only words of the corpus that the embedding knows, sorted by word. float32, as the
#: embedding files hold them; the PCA projections of Table 8 (``vectors/pca<dim>.parquet``)
#: are float64 (``value_type``), computed values that WMD must see unrounded.
def embeddings_schema(dim: int, value_type: pa.DataType | None = None) -> pa.Schema:
    value_type = pa.float32() if value_type is None else value_type
    return pa.schema(
        [
            _field("word", pa.string(), "the word"),
            _field("vector", pa.list_(value_type, dim), "embedding (L2-normalised if configured)"),
            _field("norm", value_type, "L2 norm of the vector as read, before normalisation"),
        ]
    )


#: Duplicate groups (``duplicates/groups.parquet``): one row per document that has
#: at least one duplicate.
DUPLICATE_GROUPS = pa.schema(
    [
        _field("group", pa.int32(), "0-based group number, groups ordered by smallest doc_id"),
        _field("doc_id", pa.int32(), "document id"),
        _field("label", pa.string(), "the document's label"),
        _field("kept", pa.bool_(), "whether the clean variant keeps this document"),
    ]
)

#: One stored block of a WMD matrix (``<variant>/wmd_blocks/<method>/<k>-of-<n>.parquet``):
#: the pairs this block solved.
WMD_BLOCK = pa.schema(
    [
        _field("i", pa.int32(), "row position in the scope's sorted doc_id order"),
        _field("j", pa.int32(), "column position (i < j)"),
        _field("distance", pa.float64(), "exact WMD, float64; NaN when a document is empty"),
    ]
)

#: The exact kNN search's pairs (``<variant>/neighbours/<method>.parquet``, wmd.mode knn):
#: every (query, candidate) pair whose exact WMD a query's top-k search used.
NEIGHBOUR_PAIRS = pa.schema(
    [
        _field("query", pa.int32(), "doc_id of the query document"),
        _field("candidate", pa.int32(), "doc_id of a candidate whose WMD was solved"),
        _field("distance", pa.float64(), "exact WMD, float64 as in a gathered matrix"),
    ]
)

#: What proves each query's top k complete (``<variant>/neighbours/<method>.certificates
#: .parquet``): candidates not in NEIGHBOUR_PAIRS have a lower bound of at least
#: ``unsolved_bound``, which exceeds the query's k-th distance among ``candidates``.
NEIGHBOUR_CERTIFICATES = pa.schema(
    [
        _field("query", pa.int32(), "doc_id of the query document"),
        _field("candidates", pa.string(), "key of the candidate list (core.roles.candidates_key)"),
        _field("k", pa.int32(), "neighbours searched for"),
        _field(
            "unsolved_bound",
            pa.float64(),
            "smallest WMD lower bound among the candidates left unsolved; inf if none",
        ),
    ]
)

#: A full square distance matrix (``<variant>/distances/<method>.parquet``): row r holds
#: the distances from document doc_id[r] to every document, in the same doc_id order.
#: Empty documents have NaN rows and columns (their distance is undefined).
DISTANCES = pa.schema(
    [
        _field("doc_id", pa.int32(), "document id of this row"),
        _field("distances", pa.list_(pa.float64()), "distance to each document, float64"),
    ]
)

#: ``results/scores.parquet``: a public contract, one row per
#: dataset x variant x method x classifier x fold.
SCORES = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method", pa.string(), "paper name, e.g. 'BOW (L1/L1)', 'WMD', 'WMD-TF-IDF'"),
        _field("classifier", pa.string(), "'knn' or 'wknn'"),
        _field("fold", pa.int16(), "0-based fold"),
        _field("param", pa.float64(), "chosen k (knn) or gamma (wknn)"),
        _field("val_accuracy", pa.float64(), "validation accuracy of the chosen param"),
        _field("test_error", pa.float64(), "test error, a fraction in [0, 1]"),
        _field("n_test", pa.int32(), "test documents"),
        _field("n_test_empty", pa.int32(), "test documents without words (counted as errors)"),
    ]
)

#: ``results/predictions.parquet`` (and ``<dataset>/<variant>/predictions.parquet``): a
#: public contract, one row per dataset x variant x method x classifier x fold x test
#: document evaluated; what the significance tests pair methods on.
PREDICTIONS = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method", pa.string(), "method name, e.g. 'BOW (L1/L1)', 'WMD', 'WCD'"),
        _field("classifier", pa.string(), "'knn' or 'wknn'"),
        _field("fold", pa.int16(), "0-based fold"),
        _field("doc_id", pa.int32(), "the test document"),
        _field("true_label", pa.string(), "its label"),
        pa.field(
            "predicted_label",
            pa.string(),
            nullable=True,
            metadata={"description": "predicted label; null: no prediction (an error)"},
        ),
    ]
)

# Written by n2o.py

#: ``<dataset>/<variant>/analysis/n2o.parquet``: one row per unordered method pair
#: (diagonal included) x k x fold.
N2O = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method_a", pa.string(), "paper name of the first method (Table 2 order)"),
        _field("method_b", pa.string(), "paper name of the second method (not before method_a)"),
        _field("k", pa.int32(), "neighbours compared per query"),
        _field("fold", pa.int16(), "0-based fold"),
        _field("n2o", pa.float64(), "mean over queries of |kNN_a ∩ kNN_b| / k, in [0, 1]"),
        _field("queries", pa.int32(), "queries averaged over"),
        _field(
            "empty_queries",
            pa.int32(),
            "sampled queries skipped: undefined distances under some method",
        ),
    ]
)

# Written by crossmatch.py

#: ``<dataset>/<variant>/analysis/crossmatch.parquet``: one row per method x comparison.
CROSSMATCH = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method", pa.string(), "paper name of the document distance"),
        _field("comparison", pa.string(), "'<class a> vs <class b>' or 'train vs test fold <f>'"),
        _field("n1", pa.int32(), "documents of the first group used"),
        _field("n2", pa.int32(), "documents of the second group used"),
        _field("a1", pa.int32(), "crossmatches: matched pairs with one document of each group"),
        _field("expected_a1", pa.float64(), "mean of A1 under the null hypothesis"),
        _field("p_value", pa.float64(), "exact one-sided P(A1 <= a1) under the null"),
    ]
)

# Written by corpus_distance.py

#: ``<dataset>/<variant>/analysis/corpus_distances.parquet``: method x comparison.
CORPUS_DISTANCES = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method", pa.string(), "paper name of the document distance"),
        _field("comparison", pa.string(), "'<class a> vs <class b>' or 'train vs test fold <f>'"),
        _field("n1", pa.int32(), "documents of the first group"),
        _field("n2", pa.int32(), "documents of the second group"),
        _field("mean_between", pa.float64(), "mean document distance between the groups"),
        _field("energy", pa.float64(), "energy distance statistic (self-pairs included)"),
        _field(
            "energy_coefficient",
            pa.float64(),
            "energy / (2 mean_between): scale-free, 0 = same distribution",
        ),
        _field("ahd", pa.float64(), "average Hausdorff distance"),
        _field("ahd_relative", pa.float64(), "ahd / mean_between: scale-free"),
    ]
)

#: ``<dataset>/<variant>/analysis/ksc.parquet``: one row per method x measure x
#: repetition x corpus pair i < j.
KSC = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("class_a", pa.string(), "source A (corpus 0 is all A)"),
        _field("class_b", pa.string(), "source B (corpus K is all B)"),
        _field("corpus_size", pa.int32(), "documents per corpus"),
        _field("method", pa.string(), "paper name of the document distance"),
        _field("measure", pa.string(), "'energy' or 'ahd'"),
        _field("repetition", pa.int32(), "0-based KSC draw"),
        _field("i", pa.int32(), "first corpus: a share i/K of its documents is from B"),
        _field("j", pa.int32(), "second corpus (j > i)"),
        _field("separation", pa.int32(), "j - i"),
        _field("distance", pa.float64(), "corpus distance between corpora i and j"),
        _field(
            "standardised",
            pa.float64(),
            "distance z-scored over all rows of the method and measure (ddof = 1)",
        ),
    ]
)

# Written by wmd_vs_bow.py

#: ``<dataset>/<variant>/analysis/wmd_vs_bow.parquet``: one row per WMD method.
WMD_VS_BOW = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("method_a", pa.string(), "the WMD method: 'WMD' or 'WMD-TF-IDF'"),
        _field("method_b", pa.string(), "the baseline: 'BOW (L1/L1)' or 'TF-IDF (L1/L1)'"),
        _field(
            "pearson",
            pa.float64(),
            "Pearson's correlation over all pairs i < j "
            "(TF-IDF: mean over folds); NaN if undefined",
        ),
        _field(
            "spearman",
            pa.float64(),
            "Spearman's correlation over a seeded sample of "
            "pairs (TF-IDF: mean over folds); NaN if undefined",
        ),
        _field("spearman_pairs", pa.int64(), "pairs behind spearman"),
        _field("pairs", pa.int64(), "pairs i < j where both distances are defined"),
        _field(
            "nn_agreement",
            pa.float64(),
            "mean over folds of the share of test documents with the same nearest "
            "training document under both methods",
        ),
        _field("nn_agreement_per_fold", pa.list_(pa.float64()), "the share per fold"),
    ]
)

# Written by significance.py

#: ``results/tables/significance.csv``: one row per dataset x variant x classifier x reference
#: method x other method, the paired comparison of their test predictions. The test fits the
#: dataset's split design (docs/protocol.md §10.2): one split, the exact McNemar test; several
#: random splits of the same documents, the corrected resampled t-test on the per-split
#: error differences.
SIGNIFICANCE = pa.schema(
    [
        _field("dataset", pa.string(), "dataset name from the config"),
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("classifier", pa.string(), "'knn' or 'wknn'"),
        _field("method", pa.string(), "the method compared with the reference"),
        _field("reference", pa.string(), "the reference method, e.g. 'BOW (L1/L1)'"),
        _field(
            "test",
            pa.string(),
            "'exact McNemar' (one split) or 'corrected resampled t' (several random splits)",
        ),
        _field("folds", pa.int16(), "train/test splits the predictions come from"),
        _field("n", pa.int32(), "paired test predictions: (fold, doc_id) pairs over all folds"),
        _field(
            "error",
            pa.float64(),
            "test error of `method`, in [0, 1]: the mean over folds of its per-fold error",
        ),
        _field("reference_error", pa.float64(), "the same of `reference`"),
        _field("difference", pa.float64(), "error - reference_error (the effect size)"),
        _field("b", pa.int32(), "predictions `method` gets right and `reference` wrong"),
        _field("c", pa.int32(), "predictions `method` gets wrong and `reference` right"),
        _field(
            "p_value",
            pa.float64(),
            "two-sided p-value of `test`: exact McNemar from b and c, or the corrected "
            "resampled t (folds - 1 degrees of freedom) of the per-fold differences",
        ),
        _field(
            "p_holm",
            pa.float64(),
            "p_value Holm-adjusted over the methods compared with this reference "
            "on this dataset, variant and classifier",
        ),
        _field("significant", pa.bool_(), "p_holm < alpha"),
        _field(
            "ci_low",
            pa.float64(),
            "lower end of the interval of `difference` (level: significance.level): the "
            "paired bootstrap percentile interval for McNemar rows, the corrected t "
            "interval for corrected resampled t rows",
        ),
        _field("ci_high", pa.float64(), "upper end of that interval"),
    ]
)

#: ``results/tables/significance_datasets.csv``: across datasets, one row per variant x
#: classifier x reference x other method present on every dataset, when there are at least
#: 5 datasets (fewer: no row, and significance.md says why).
SIGNIFICANCE_DATASETS = pa.schema(
    [
        _field("variant", pa.string(), "'original' or 'clean'"),
        _field("classifier", pa.string(), "'knn' or 'wknn'"),
        _field("method", pa.string(), "the method compared with the reference"),
        _field("reference", pa.string(), "the reference method"),
        _field("datasets", pa.int16(), "datasets N: those with predictions of every method"),
        _field(
            "mean_difference",
            pa.float64(),
            "mean over datasets of error(method) - error(reference), errors as in SIGNIFICANCE",
        ),
        _field(
            "wilcoxon",
            pa.float64(),
            "Wilcoxon signed-rank statistic min(T+, T-) of the N differences (zeros dropped)",
        ),
        _field("p_wilcoxon", pa.float64(), "its two-sided p-value (exact up to 50 datasets)"),
        _field(
            "p_holm",
            pa.float64(),
            "p_wilcoxon Holm-adjusted over the methods compared with this reference",
        ),
        _field("significant", pa.bool_(), "p_holm < alpha"),
        _field("rope", pa.float64(), "half-width of the region of practical equivalence"),
        _field(
            "p_method_better",
            pa.float64(),
            "Bayesian signed-rank test: posterior probability that `method`'s error is "
            "lower by more than the rope",
        ),
        _field("p_equivalent", pa.float64(), "... that the two are practically equivalent"),
        _field("p_reference_better", pa.float64(), "... that `reference`'s error is lower"),
    ]
)

ALL = {
    "documents": DOCUMENTS,
    "splits": SPLITS,
    "embeddings": embeddings_schema(300),
    "duplicate_groups": DUPLICATE_GROUPS,
    "wmd_block": WMD_BLOCK,
    "distances": DISTANCES,
    "neighbour_pairs": NEIGHBOUR_PAIRS,
    "neighbour_certificates": NEIGHBOUR_CERTIFICATES,
    "scores": SCORES,
    "n2o": N2O,
    "crossmatch": CROSSMATCH,
    "corpus_distances": CORPUS_DISTANCES,
    "ksc": KSC,
    "wmd_vs_bow": WMD_VS_BOW,
    "significance": SIGNIFICANCE,
    "significance_datasets": SIGNIFICANCE_DATASETS,
}


def describe() -> str:
    """Markdown description of every table (used to write the README section)."""
    lines = []
    for name, schema in ALL.items():
        lines.append(f"**{name}**\n\n| column | type | meaning |\n|---|---|---|")
        for f in schema:
            desc = (f.metadata or {}).get(b"description", b"").decode()
            lines.append(f"| `{f.name}` | {f.type} | {desc} |")
        lines.append("")
    return "\n".join(lines)
