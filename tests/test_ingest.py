from collections import Counter

import numpy as np
import pytest

from wmdeval.core.errors import WmdevalError
from wmdeval.ingest import corpora as ingest


def test_tokenize_lowercases_keeps_letters_drops_stopwords():
    stop = ingest.load_stopwords("kusner115")
    assert len(stop) == 115
    assert ingest.tokenize("The CAT 3 hats, and-a dog!", stop) == ["cat", "hats", "dog"]
    # letters only: an apostrophe splits a word
    assert ingest.tokenize("cat's", stop) == ["cat", "s"]
    assert ingest.tokenize("The cat", ingest.load_stopwords("none")) == ["the", "cat"]


def test_stopwords_from_a_file(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("Cat\ndog\n")
    assert ingest.load_stopwords(str(path)) == {"cat", "dog"}
    with pytest.raises(WmdevalError, match="stop-word list not found"):
        ingest.load_stopwords(str(tmp_path / "missing.txt"))


def test_news_headers_are_stripped():
    post = "Newsgroups: sci.space\nSubject: x\n\nBody text\n\nmore"
    assert ingest.strip_news_headers(post) == "Body text\n\nmore"


def test_mini_newsgroup_loads_with_the_restricted_unpickler():
    texts, labels = ingest.load_mini_newsgroup()
    assert len(texts) == 200
    assert Counter(labels) == {"alt.atheism": 100, "sci.space": 100}
    # the label-leaking header is gone
    assert not any(t.startswith("Newsgroups:") for t in texts)


def test_news_header_reads_one_field_of_the_header_block():
    post = (
        "Newsgroups: sci.space\nSUBJECT: Re: Gamma Ray\n\tBursters\nFrom: a@b\n\n"
        "Subject: not a header, the body\n"
    )
    # case-insensitive name; a folded continuation line joins with one space
    assert ingest.news_header(post, "Subject") == "Re: Gamma Ray Bursters"
    assert ingest.news_header(post, "from") == "a@b"
    # a field only in the body, or nowhere, is absent
    assert ingest.news_header("From: a@b\n\nSubject: body", "Subject") is None
    assert ingest.news_header("Subject:\n\nbody", "Subject") == ""


def test_mini_newsgroup_subjects_repeat_within_threads():
    from wmdeval.cleaning import duplicates

    subjects, labels = ingest.load_mini_newsgroup_subjects()
    bodies, body_labels = ingest.load_mini_newsgroup()
    assert labels == body_labels
    assert not any("\n" in s for s in subjects)
    stop = ingest.load_stopwords("kusner115")
    # replies share their thread's subject: real duplicates, unlike the bodies
    groups = duplicates.duplicate_groups(
        ingest.documents_table([Counter(ingest.tokenize(s, stop)) for s in subjects], labels)
    )
    assert (len(groups), sum(len(g) for g in groups)) == (33, 98)
    assert not duplicates.duplicate_groups(
        ingest.documents_table([Counter(ingest.tokenize(b, stop)) for b in bodies], labels)
    )


def test_a_post_without_subject_is_one_line_naming_it(monkeypatch):
    monkeypatch.setattr(
        ingest, "_mini_newsgroup_posts", lambda: (["Subject: a\n\nx", "From: b\n\ny"], ["p", "q"])
    )
    with pytest.raises(WmdevalError, match=r"mini_newsgroup: post 2: no Subject header"):
        ingest.load_mini_newsgroup_subjects()


def test_restricted_unpickler_refuses_other_globals():
    import io
    import pickle

    payload = pickle.dumps(print, protocol=2)
    with pytest.raises(WmdevalError, match="refusing to unpickle"):
        ingest._NewsgroupUnpickler(io.BytesIO(payload)).load()


def test_pang_lee_polarity():
    texts, labels = ingest.load_pang_lee_polarity()
    assert len(texts) == 200
    assert set(labels) == {"pos", "neg"}


def test_documents_table_codes_labels_by_sorted_name():
    docs = ingest.documents_table([Counter({"b": 2, "a": 1}), Counter()], ["z", "m"])
    rows = docs.to_pylist()
    assert rows[0] == {"doc_id": 0, "label": "z", "y": 1, "words": ["a", "b"], "counts": [1.0, 2.0]}
    assert rows[1] == {"doc_id": 1, "label": "m", "y": 0, "words": [], "counts": []}


def test_random_splits_are_seeded_70_30_partitions():
    splits = ingest.random_splits(20, folds=5, test_size=0.3, seed=0)
    again = ingest.random_splits(20, folds=5, test_size=0.3, seed=0)
    assert splits.equals(again)
    folds = np.asarray(splits.column("fold"))
    subset = np.asarray(splits.column("subset").to_pylist())
    for fold in range(5):
        sel = folds == fold
        assert sel.sum() == 20
        assert (subset[sel] == "test").sum() == 6
        assert sorted(np.asarray(splits.column("doc_id"))[sel]) == list(range(20))


def test_random_splits_are_sklearns_train_test_split_with_the_folds_seeds():
    from sklearn.model_selection import train_test_split

    splits = ingest.random_splits(37, folds=3, test_size=0.3, seed=4).to_pylist()
    for fold in range(3):
        train, test = train_test_split(np.arange(37), test_size=0.3, random_state=4 + fold)
        rows = [r for r in splits if r["fold"] == fold]
        assert [r["doc_id"] for r in rows if r["subset"] == "train"] == sorted(train.tolist())
        assert [r["doc_id"] for r in rows if r["subset"] == "test"] == sorted(test.tolist())


def test_table_source_with_split_column(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_text("text\tlabel\tsplit\nGood film\tpos\ttrain\nBad film\tneg\ttest\n")
    spec = {
        "format": "table",
        "path": str(path),
        "text_column": "text",
        "label_column": "label",
        "split_column": "split",
        "stopwords": "none",
        "folds": 5,
        "test_size": 0.3,
        "split_seed": 0,
    }
    docs, splits = ingest.ingest(spec)
    assert docs.column("words").to_pylist() == [["film", "good"], ["bad", "film"]]
    assert splits.to_pylist() == [
        {"fold": 0, "doc_id": 0, "subset": "train"},
        {"fold": 0, "doc_id": 1, "subset": "test"},
    ]


def test_table_errors_name_file_and_column(tmp_path):
    path = tmp_path / "corpus.csv"
    path.write_text("body,label\nx,a\n")
    with pytest.raises(WmdevalError, match=r"corpus\.csv: no column 'text'"):
        ingest.read_text_table(path, "text", "label", None)
    with pytest.raises(WmdevalError, match="file not found"):
        ingest.read_text_table(tmp_path / "none.csv", "text", "label", None)


def test_numeric_labels_get_codes_in_numeric_order():
    """Kusner .mat labels are numbers: 2 must precede 10, so a kNN vote tie goes to the
    smallest label as the protocol says, not to the alphabetically first one."""
    from collections import Counter

    from wmdeval.ingest.corpora import documents_table, label_order

    assert label_order(["10", "2", "1", "2"]) == ["1", "2", "10"]
    assert label_order(["1.5", "-3", "10"]) == ["-3", "1.5", "10"]
    assert label_order(["b", "10", "a"]) == ["10", "a", "b"]  # not all numbers: by text
    table = documents_table([Counter({"w": 1})] * 3, ["10", "2", "1"])
    assert table.column("y").to_pylist() == [2, 1, 0]
