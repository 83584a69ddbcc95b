"""Vocabulary: out-of-vocabulary filtering (docs/protocol.md §4), document-size control, and the
per-variant document sets.

The filter is decided once on the original documents and applied to every variant,
so the clean variant's documents are exactly a subset of the original's (and its WMD
matrix a sub-matrix of theirs).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core import schemas
from ..core.errors import WmdevalError
from ..core.io import read_documents, read_splits, read_table, write_table


def filter_documents(
    documents: pa.Table, known: set[str], min_df: int = 1, max_words_per_doc: int | None = None
) -> tuple[pa.Table, dict]:
    """Keep words that the embedding knows and that occur in >= min_df documents, then at
    most ``max_words_per_doc`` distinct words per document (most frequent first, ties
    alphabetical). Returns the filtered DOCUMENTS and the report counts."""
    words = documents.column("words").to_pylist()
    counts = documents.column("counts").to_pylist()
    df = Counter(w for ws in words for w in ws)
    vocabulary = {w for w in df if w in known and df[w] >= min_df}

    new_words, new_counts = [], []
    tokens_oov = tokens_rare = tokens_capped = 0.0
    for ws, cs in zip(words, counts, strict=True):
        kept = []
        for w, c in zip(ws, cs, strict=True):
            if w not in known:
                tokens_oov += c
            elif w not in vocabulary:
                tokens_rare += c
            else:
                kept.append((w, c))
        if max_words_per_doc is not None and len(kept) > max_words_per_doc:
            kept.sort(key=lambda wc: (-wc[1], wc[0]))
            tokens_capped += sum(c for _, c in kept[max_words_per_doc:])
            kept = sorted(kept[:max_words_per_doc])
        new_words.append([w for w, _ in kept])
        new_counts.append([c for _, c in kept])

    filtered = documents.set_column(3, "words", pa.array(new_words, pa.list_(pa.string())))
    filtered = filtered.set_column(4, "counts", pa.array(new_counts, pa.list_(pa.float64())))
    vocabulary_after = {w for ws in new_words for w in ws}
    report = {
        "documents": documents.num_rows,
        "vocabulary_before": len(df),
        "vocabulary_after": len(vocabulary_after),
        "types_oov": sum(1 for w in df if w not in known),
        "types_below_min_df": sum(1 for w in df if w in known and df[w] < min_df),
        "tokens_before": float(sum(sum(cs) for cs in counts)),
        "tokens_after": float(sum(sum(cs) for cs in new_counts)),
        "tokens_oov": tokens_oov,
        "tokens_below_min_df": tokens_rare,
        "tokens_over_word_cap": tokens_capped,
        "empty_before": sum(1 for ws in words if not ws),
        "empty_after": sum(1 for ws in new_words if not ws),
        "min_df": min_df,
        "max_words_per_doc": -1 if max_words_per_doc is None else max_words_per_doc,
        "max_distinct_words_after": max((len(ws) for ws in new_words), default=0),
    }
    return filtered, report


def select_variant(
    documents: pa.Table, splits: pa.Table, kept: np.ndarray | None
) -> tuple[pa.Table, pa.Table]:
    """Restrict documents and every split to the kept doc ids (None = keep all)."""
    if kept is None:
        return documents, splits
    kept_ids = pa.array(np.asarray(kept, dtype=np.int32))
    return (
        documents.filter(pc.is_in(documents.column("doc_id"), kept_ids)),
        splits.filter(pc.is_in(splits.column("doc_id"), kept_ids)),
    )


def run_filter(
    documents_path: str,
    embeddings_path: str,
    dataset: str,
    min_df: int,
    max_words_per_doc: int | None,
    out_documents: str,
    out_report: str,
) -> None:
    documents = read_documents(documents_path)
    embeddings = read_table(embeddings_path)
    known = set(embeddings.column("word").to_pylist())
    if not known:
        raise WmdevalError(f"{embeddings_path}: no word of dataset {dataset!r} has an embedding")
    filtered, report = filter_documents(documents, known, min_df, max_words_per_doc)
    _require_words(report, dataset, min_df, max_words_per_doc)
    write_table(filtered, out_documents, schemas.DOCUMENTS)
    write_table(pa.Table.from_pylist([{"dataset": dataset, **report}]), out_report)


def _require_words(report: dict, dataset: str, min_df: int, max_words_per_doc: int | None) -> None:
    """Every document without words gives every method 100 % errors: a mistake of the
    config (or of the data), said in one line instead of tables of meaningless results."""
    if report["documents"] == 0 or report["empty_after"] < report["documents"]:
        return
    if report["empty_before"] == report["documents"]:
        raise WmdevalError(
            f"dataset {dataset!r}: all {report['documents']} documents are without words "
            f"before the out-of-vocabulary filter (tokenised and stop words dropped); check "
            f"datasets.{dataset}.text_column and datasets.{dataset}.stopwords"
        )
    if report["types_oov"] == report["vocabulary_before"]:
        raise WmdevalError(
            f"dataset {dataset!r}: none of its {report['vocabulary_before']} distinct words "
            f"has an embedding, so all {report['documents']} documents are empty after the "
            f"out-of-vocabulary filter; check datasets.{dataset}.embeddings"
        )
    raise WmdevalError(
        f"dataset {dataset!r}: datasets.{dataset}.vocabulary (min_df: {min_df}, "
        f"max_words_per_doc: {'null' if max_words_per_doc is None else max_words_per_doc}) "
        f"leaves every one of its {report['documents']} documents without words (each of "
        f"its {report['vocabulary_before'] - report['types_oov']} distinct words with an "
        f"embedding occurs in fewer than {min_df} documents); lower min_df"
    )


def run_select(
    documents_path: str,
    splits_path: str,
    out_documents: str,
    out_splits: str,
    kept_path: str | None = None,
) -> None:
    """Write a variant's documents and splits: those of ``kept_path``'s doc ids (the clean
    variant's survivors), or all of them without it (the original variant)."""
    kept = read_table(kept_path).column("doc_id").to_numpy() if kept_path else None
    documents, splits = select_variant(
        read_documents(documents_path), read_splits(splits_path), kept
    )
    write_table(documents, out_documents, schemas.DOCUMENTS)
    write_table(splits, out_splits, schemas.SPLITS)


def run_sample(
    documents_path: str,
    splits_path: str,
    size: int,
    seed: int,
    out_documents: str,
    out_splits: str,
    within_path: str | None = None,
) -> None:
    """Write a seeded sample of ``size`` documents (all of them if there are fewer) and
    their splits: the documents whose full WMD matrices the analyses and Figures 4-5
    read in ``wmd.mode: knn``, where the variant has no full matrix.

    With ``within_path`` (the clean variant: the original variant's sample), the sample
    is instead every document of that sample that is also here, so its matrices of the
    methods that do not depend on the variant are cut from that sample's (``size`` and
    ``seed`` drew that sample)."""
    if size < 2:
        raise WmdevalError(f"a sample needs at least 2 documents, got {size}")
    documents = read_documents(documents_path)
    doc_ids = np.sort(documents.column("doc_id").to_numpy())
    if within_path is not None:
        within = read_documents(within_path).column("doc_id").to_numpy()
        doc_ids = doc_ids[np.isin(doc_ids, within)]
        if len(doc_ids) < 2:
            raise WmdevalError(
                f"{within_path}: the sample holds {len(doc_ids)} document(s) of "
                f"{documents_path}; a sample needs at least 2"
            )
    elif len(doc_ids) > size:
        doc_ids = np.sort(np.random.default_rng(seed).choice(doc_ids, size, replace=False))
    sample, splits = select_variant(documents, read_splits(splits_path), doc_ids)
    write_table(sample, out_documents, schemas.DOCUMENTS)
    write_table(splits, out_splits, schemas.SPLITS)
