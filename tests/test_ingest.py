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
    path.write_text(
        "text\tlabel\tsplit\nGood film\tpos\ttrain\nBad film\tneg\ttest\nDull plot\tneg\ttrain\n"
    )
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
    assert docs.column("words").to_pylist() == [["film", "good"], ["bad", "film"], ["dull", "plot"]]
    assert splits.to_pylist() == [
        {"fold": 0, "doc_id": 0, "subset": "train"},
        {"fold": 0, "doc_id": 2, "subset": "train"},
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


def table_spec(path, **keys):
    return {
        "format": "table",
        "path": str(path),
        "text_column": "text",
        "label_column": "label",
        "stopwords": "kusner115",
        "folds": 2,
        "test_size": 0.3,
        "split_seed": 0,
        **keys,
    }


def test_text_is_utf8_unless_an_encoding_is_given(tmp_path):
    path = tmp_path / "corpus.tsv"
    path.write_bytes("text\tlabel\nrocket launch\tspace\ncrème brûlée\tfood\n".encode("latin-1"))
    with pytest.raises(WmdevalError, match=r"corpus\.tsv: line 3: byte b'\\xe8' is not utf-8"):
        ingest.read_text_table(path, "text", "label", None)
    texts, labels, _ = ingest.read_text_table(path, "text", "label", None, "latin-1")
    assert texts == ["rocket launch", "crème brûlée"] and labels == ["space", "food"]
    with pytest.raises(WmdevalError, match="unknown encoding 'nope'"):
        ingest.read_text_table(path, "text", "label", None, "nope")


def test_a_binary_parquet_column_is_decoded_never_str_of_bytes(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "corpus.parquet"
    texts = ["crème".encode("latin-1"), b"plain"]
    pq.write_table(pa.table({"text": pa.array(texts, pa.binary()), "label": ["a", "b"]}), path)
    assert ingest.read_text_table(path, "text", "label", None, "latin-1")[0] == ["crème", "plain"]
    with pytest.raises(WmdevalError, match=r"corpus\.parquet: row 1: column 'text' is not utf-8"):
        ingest.read_text_table(path, "text", "label", None)


def test_labels_lose_surrounding_whitespace(tmp_path):
    path = tmp_path / "corpus.csv"
    path.write_text('text,label\nrocket,space\nbread," food "\nsoup,food\n')
    assert ingest.read_text_table(path, "text", "label", None)[1] == ["space", "food", "food"]
    path.write_text('text,label\nrocket,space\nbread,"  "\n')
    with pytest.raises(WmdevalError, match=r"corpus\.csv: row 2: empty 'label'"):
        ingest.read_text_table(path, "text", "label", None)


@pytest.mark.parametrize(
    ("content", "keys", "message"),
    [
        ("text,label\n", {}, r"corpus\.csv: no rows"),
        ("text,text,label\na,b,c\n", {}, r"column 'text' appears 2 times in the header"),
        ("text,label\nrocket,a\nbread,a\nsoup,a\n", {}, r"holds one label \('a'\) in all 3"),
        ("text,label\nthe,a\nand,b\nof,a\n", {}, "no document has a word after tokenising"),
        (
            "text,label,split\nrocket,a,test\nbread,b,test\nsoup,a,train\n",
            {"split_column": "split"},
            "column 'split' has 1 train row",
        ),
        (
            "text,label,split\nrocket,a,train\nbread,b,train\n",
            {"split_column": "split"},
            "column 'split' has 0 test row",
        ),
        (
            "text,label\nrocket,a\nbread,b\n",
            {"test_size": 0.5},
            "2 document\\(s\\) with test_size 0.5 leave 1 for training",
        ),
    ],
)
def test_a_table_no_result_can_come_of_is_an_error_naming_it(tmp_path, content, keys, message):
    path = tmp_path / "corpus.csv"
    path.write_text(content)
    with pytest.raises(WmdevalError, match=message) as error:
        ingest.ingest(table_spec(path, **keys))
    assert str(path) in str(error.value)
    # planning's check, without the tables, refuses it with the same line
    with pytest.raises(WmdevalError) as planned:
        ingest.check_texts(table_spec(path, **keys))
    assert str(planned.value) == str(error.value)
