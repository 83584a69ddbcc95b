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
        _field("y", pa.int32(), "label code: index of `label` in the sorted label names"),
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
#: only words of the corpus that the embedding knows, sorted by word.
def embeddings_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            _field("word", pa.string(), "the word"),
            _field("vector", pa.list_(pa.float32(), dim),
                   "embedding (L2-normalised if configured)"),
            _field("norm", pa.float32(), "L2 norm of the vector as read, before normalisation"),
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

#: One partial result of a sharded WMD matrix: the pairs this shard solved.
WMD_SHARD = pa.schema(
    [
        _field("i", pa.int32(), "row position in the scope's sorted doc_id order"),
        _field("j", pa.int32(), "column position (i < j)"),
        _field("distance", pa.float64(), "exact WMD, float64; NaN when a document is empty"),
    ]
)

#: A full square distance matrix (``<variant>/distances/<method>.parquet``): row r holds
#: the distances from document doc_id[r] to every document, in the same doc_id order.
#: Empty documents have NaN rows and columns (their distance is undefined).
DISTANCES = pa.schema(
    [
        _field("doc_id", pa.int32(), "document id of this row"),
        _field("distances", pa.list_(pa.float32()), "distance to each document, float32"),
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

ALL = {
    "documents": DOCUMENTS,
    "splits": SPLITS,
    "embeddings": embeddings_schema(300),
    "duplicate_groups": DUPLICATE_GROUPS,
    "wmd_shard": WMD_SHARD,
    "distances": DISTANCES,
    "scores": SCORES,
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
