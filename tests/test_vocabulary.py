import numpy as np

from wmdeval.cleaning import vocabulary
from wmdeval.ingest.corpora import splits_table


def test_oov_filter_counts(make_documents):
    docs = make_documents(
        [
            ("a", {"cat": 2, "dog": 1, "zzz": 4}),
            ("b", {"cat": 1, "emu": 1}),
            ("b", {"zzz": 1}),
        ]
    )
    known = {"cat", "dog", "emu"}
    filtered, report = vocabulary.filter_documents(docs, known)
    assert filtered.column("words").to_pylist() == [["cat", "dog"], ["cat", "emu"], []]
    assert filtered.column("counts").to_pylist() == [[2.0, 1.0], [1.0, 1.0], []]
    assert report["types_oov"] == 1
    assert report["tokens_oov"] == 5.0
    assert report["tokens_before"] == 10.0
    assert report["tokens_after"] == 5.0
    assert report["empty_after"] == 1
    assert report["vocabulary_before"] == 4
    assert report["vocabulary_after"] == 3


def test_min_df_and_word_cap(make_documents):
    docs = make_documents(
        [
            ("a", {"a": 1, "b": 3, "c": 3, "d": 2}),
            ("a", {"a": 1, "b": 1, "c": 1}),
        ]
    )
    known = {"a", "b", "c", "d"}
    filtered, report = vocabulary.filter_documents(docs, known, min_df=2, max_words_per_doc=2)
    # d is in one document only; then the 2 most frequent words, ties alphabetical
    assert filtered.column("words").to_pylist() == [["b", "c"], ["a", "b"]]
    assert report["types_below_min_df"] == 1
    assert report["tokens_below_min_df"] == 2.0
    assert report["tokens_over_word_cap"] == 2.0
    assert report["max_distinct_words_after"] == 2


def test_select_variant_restricts_documents_and_every_split(make_documents):
    docs = make_documents([("a", {"x": 1})] * 4)
    splits = splits_table(
        [0, 0, 0, 0, 1, 1, 1, 1],
        [0, 1, 2, 3, 0, 1, 2, 3],
        ["train", "test", "train", "test", "test", "train", "train", "test"],
    )
    kept_docs, kept_splits = vocabulary.select_variant(docs, splits, np.array([0, 3]))
    assert kept_docs.column("doc_id").to_pylist() == [0, 3]
    assert set(kept_splits.column("doc_id").to_pylist()) == {0, 3}
    assert kept_splits.num_rows == 4
    same_docs, same_splits = vocabulary.select_variant(docs, splits, None)
    assert same_docs.equals(docs) and same_splits.equals(splits)
