"""The Kusner et al. .mat reader, on small files that mimic MATLAB's layouts as loadmat
returns them: cell arrays are 1 x n object arrays, word lists 1 x u object arrays of
1-element string arrays, labels and indices float64."""

import hashlib
import itertools
import logging

import numpy as np
import pytest
from scipy.io import savemat

from wmdeval.cleaning import duplicates
from wmdeval.core.errors import WmdevalError
from wmdeval.core.io import read_table
from wmdeval.ingest import kusner

DIM = 3
VECTORS = {
    "apple": [1.0, 0.0, 0.0],
    "banana": [0.0, 2.0, 0.0],
    "cherry": [0.0, 0.0, 0.5],
    "date": [0.6, 0.8, 0.0],
}


def cell(items) -> np.ndarray:
    """A MATLAB 1 x n cell array."""
    out = np.empty((1, len(items)), dtype=object)
    for k, item in enumerate(items):
        out[0, k] = item
    return out


def word_cell(words) -> np.ndarray:
    """A MATLAB 1 x u cell of strings (each a char array: a 1-element string array)."""
    return cell([np.array([w]) for w in words])


def vectors_of(words) -> np.ndarray:
    """The dim x u matrix of a document: one column per word."""
    if not words:
        return np.zeros((DIM, 0))
    return np.array([VECTORS[w] for w in words], dtype=np.float64).T


def bow(counts) -> np.ndarray:
    return np.array([counts], dtype=np.float64).reshape(1, -1)


# Five documents as (label, [(word, count), ...]).
FIVE_DOCS = [
    (1, [("apple", 2), ("banana", 1)]),
    (2, [("cherry", 3)]),
    (1, [("date", 1), ("apple", 1), ("cherry", 4)]),
    (3, [("banana", 5)]),
    (2, [("apple", 1), ("date", 2)]),
]
# Fold f tests document f (1-based f + 1) and trains on the others.
FIVE_TE = np.arange(1, 6, dtype=np.float64).reshape(5, 1)
FIVE_TR = np.array([[d for d in range(1, 6) if d != f] for f in range(1, 6)], dtype=np.float64)


def five_fold_fields(docs=FIVE_DOCS, with_words=True, **overrides) -> dict:
    fields = {
        "X": cell([vectors_of([w for w, _ in bag]) for _, bag in docs]),
        "BOW_X": cell([bow([c for _, c in bag]) for _, bag in docs]),
        "Y": np.array([[label for label, _ in docs]], dtype=np.float64),
        "TR": FIVE_TR,
        "TE": FIVE_TE,
    }
    if with_words:
        fields["words"] = cell([word_cell([w for w, _ in bag]) for _, bag in docs])
    fields.update(overrides)
    return fields


def one_fold_fields(train, test, with_words=False) -> dict:
    fields = {}
    for part, docs in (("tr", train), ("te", test)):
        fields[f"x{part}"] = cell([vectors_of([w for w, _ in bag]) for _, bag in docs])
        fields[f"BOW_x{part}"] = cell([bow([c for _, c in bag]) for _, bag in docs])
        fields[f"y{part}"] = np.array([[label for label, _ in docs]], dtype=np.float64)
        if with_words:
            fields[f"words_{part}"] = cell([word_cell([w for w, _ in bag]) for _, bag in docs])
    return fields


def save(tmp_path, fields, name="data.mat"):
    path = tmp_path / name
    savemat(path, fields)
    return path


def synthetic(word: str) -> str:
    raw = np.array(VECTORS[word], dtype=np.float64).tobytes()
    return "vec:" + hashlib.sha1(raw).hexdigest()[:16]


# --------------------------------------------------------------------------- layouts
def test_five_fold_exactly_as_constructed(tmp_path):
    data = kusner.read_kusner_mat(save(tmp_path, five_fold_fields()))
    assert data.documents.to_pylist() == [
        {"doc_id": 0, "label": "1", "y": 0, "words": ["apple", "banana"], "counts": [2.0, 1.0]},
        {"doc_id": 1, "label": "2", "y": 1, "words": ["cherry"], "counts": [3.0]},
        {
            "doc_id": 2,
            "label": "1",
            "y": 0,
            "words": ["apple", "cherry", "date"],
            "counts": [1.0, 4.0, 1.0],
        },
        {"doc_id": 3, "label": "3", "y": 2, "words": ["banana"], "counts": [5.0]},
        {"doc_id": 4, "label": "2", "y": 1, "words": ["apple", "date"], "counts": [1.0, 2.0]},
    ]
    expected_splits = []
    for fold in range(5):
        expected_splits += [
            {"fold": fold, "doc_id": d, "subset": "train"} for d in range(5) if d != fold
        ]
        expected_splits += [{"fold": fold, "doc_id": fold, "subset": "test"}]
    assert data.splits.to_pylist() == expected_splits
    assert data.words == ["apple", "banana", "cherry", "date"]
    np.testing.assert_array_equal(data.vectors, [VECTORS[w] for w in data.words])
    report = data.report
    assert report["layout"] == "five-fold"
    assert report["word_identity"] == "strings"
    assert (report["documents"], report["folds"], report["dim"]) == (5, 5, DIM)
    assert report["train_sizes"] == [4] * 5 and report["test_sizes"] == [1] * 5
    assert report["vocabulary"] == report["vocabulary_by_vectors"] == 4
    assert report["empty_documents"] == 0
    assert (report["norm_min"], report["norm_median"], report["norm_max"]) == (0.5, 1.0, 2.0)


def test_unequal_split_rows_as_object_array(tmp_path):
    train = cell([np.array([[2.0, 3.0, 4.0]]), np.array([[1.0, 5.0]])])
    test = cell([np.array([[1.0]]), np.array([[2.0, 3.0]])])
    data = kusner.read_kusner_mat(save(tmp_path, five_fold_fields(TR=train, TE=test)))
    assert data.splits.to_pylist() == [
        {"fold": 0, "doc_id": 1, "subset": "train"},
        {"fold": 0, "doc_id": 2, "subset": "train"},
        {"fold": 0, "doc_id": 3, "subset": "train"},
        {"fold": 0, "doc_id": 0, "subset": "test"},
        {"fold": 1, "doc_id": 0, "subset": "train"},
        {"fold": 1, "doc_id": 4, "subset": "train"},
        {"fold": 1, "doc_id": 1, "subset": "test"},
        {"fold": 1, "doc_id": 2, "subset": "test"},
    ]
    assert data.report["train_sizes"] == [3, 2] and data.report["test_sizes"] == [1, 2]


def test_one_fold_without_strings_identifies_words_by_vectors(tmp_path):
    train = [(1, [("apple", 1), ("banana", 2)]), (2, [("cherry", 1)])]
    test = [(1, [("banana", 3), ("date", 1)])]
    data = kusner.read_kusner_mat(save(tmp_path, one_fold_fields(train, test)))
    rows = data.documents.to_pylist()
    # Documents 0 and 2 share banana: the same synthetic name, from the same vector.
    assert synthetic("banana") in rows[0]["words"] and synthetic("banana") in rows[2]["words"]
    assert dict(zip(rows[2]["words"], rows[2]["counts"], strict=True)) == {
        synthetic("banana"): 3.0,
        synthetic("date"): 1.0,
    }
    assert data.words == sorted(synthetic(w) for w in VECTORS)
    for word, vector in zip(data.words, data.vectors, strict=True):
        assert word == "vec:" + hashlib.sha1(vector.tobytes()).hexdigest()[:16]
    assert data.splits.to_pylist() == [
        {"fold": 0, "doc_id": 0, "subset": "train"},
        {"fold": 0, "doc_id": 1, "subset": "train"},
        {"fold": 0, "doc_id": 2, "subset": "test"},
    ]
    assert data.report["layout"] == "one-fold"
    assert data.report["word_identity"] == "vectors"
    assert "words_tr" in data.report["word_identity_note"]
    assert (data.report["train_sizes"], data.report["test_sizes"]) == ([2], [1])


def test_one_fold_with_word_strings(tmp_path):
    train = [(5, [("apple", 1)]), (7, [("date", 2), ("cherry", 1)])]
    test = [(7, [("cherry", 1)]), (5, [("apple", 4)])]
    data = kusner.read_kusner_mat(save(tmp_path, one_fold_fields(train, test, with_words=True)))
    assert data.report["word_identity"] == "strings"
    assert [r["words"] for r in data.documents.to_pylist()] == [
        ["apple"],
        ["cherry", "date"],
        ["cherry"],
        ["apple"],
    ]
    assert data.documents.column("label").to_pylist() == ["5", "7", "7", "5"]
    assert data.words == ["apple", "cherry", "date"]


def test_mismatched_strings_fall_back_to_vectors(tmp_path):
    fields = five_fold_fields()
    fields["words"][0, 1] = word_cell(["cherry", "extra"])  # 2 strings for 1 vector
    data = kusner.read_kusner_mat(save(tmp_path, fields))
    assert data.report["word_identity"] == "vectors"
    assert "document 1" in data.report["word_identity_note"]
    assert data.words == sorted(synthetic(w) for w in VECTORS)


def test_empty_documents_are_kept_and_reported(tmp_path):
    docs = [*FIVE_DOCS[:4], (2, [])]
    fields = five_fold_fields(docs)
    fields["BOW_X"][0, 4] = np.zeros((0, 0))  # MATLAB's [] rather than a 1 x 0 row
    data = kusner.read_kusner_mat(save(tmp_path, fields))
    last = data.documents.to_pylist()[4]
    assert (last["doc_id"], last["words"], last["counts"]) == (4, [], [])
    assert data.report["empty_documents"] == 1
    assert data.report["empty_doc_ids"] == [4]
    assert data.report["word_identity"] == "strings"


def test_same_string_with_another_vector_warns_and_keeps_first(tmp_path, caplog):
    fields = five_fold_fields()
    fields["X"][0, 3] = np.array([[0.0], [9.0], [0.0]])  # "banana" in document 3
    with caplog.at_level(logging.WARNING, logger="wmdeval.ingest.kusner"):
        data = kusner.read_kusner_mat(save(tmp_path, fields))
    assert "banana" in caplog.text
    np.testing.assert_array_equal(data.vectors[data.words.index("banana")], VECTORS["banana"])
    assert data.report["conflicting_words"] == 1
    assert data.report["vocabulary_by_vectors"] == 5


# ---------------------------------------------------------------------------- errors
def bad_nan_vector():
    fields = five_fold_fields()
    fields["X"][0, 2] = np.array([[1.0, np.nan, 0.0]] * DIM)
    return fields, r"X\{3\} \(doc_id 2\).*NaN"


def bad_bow_length():
    fields = five_fold_fields()
    fields["BOW_X"][0, 0] = bow([2.0])
    return fields, r"BOW_X\{1\} \(doc_id 0\): 1 counts but X\{1\} has 2 word vectors"


def bad_count():
    fields = five_fold_fields()
    fields["BOW_X"][0, 1] = bow([0.0])
    return fields, r"BOW_X\{2\} \(doc_id 1\): count 0.0 is not finite and > 0"


def bad_both_subsets():
    train = FIVE_TR.copy()
    train[2, 0] = 3.0  # fold 2 tests document 3 and now also trains on it
    return five_fold_fields(TR=train), r"document 3 \(doc_id 2\) is in both TR and TE"


CASES = {
    "missing field": (
        lambda: (
            five_fold_fields(BOW_X=None),
            r"missing field 'BOW_X' \(five-fold layout needs X, BOW_X, Y, TR, "
            r"TE\)",
        )
    ),
    "TR index out of range": (
        lambda: (
            five_fold_fields(TR=np.where(FIVE_TR == 5, 801, FIVE_TR)),
            r"TR index 801 out of range 1\.\.5",
        )
    ),
    "non-integer label": (
        lambda: (
            five_fold_fields(Y=np.array([[1, 2, 1.5, 3, 2]])),
            r"field 'Y' has a non-integer value 1\.5",
        )
    ),
    "NaN in a vector": bad_nan_vector,
    "BOW length": bad_bow_length,
    "count not positive": bad_count,
    "in TR and TE": bad_both_subsets,
    "labels count": (
        lambda: (
            five_fold_fields(Y=np.array([[1.0, 2.0]])),
            r"field 'Y' has 2 labels for 5 documents",
        )
    ),
    "one label": (
        lambda: (
            five_fold_fields(Y=np.full((1, 5), 2.0)),
            r"field 'Y' holds one label \(2\) for all 5 documents",
        )
    ),
    "one training document": (
        lambda: (
            one_fold_fields([(1, [("apple", 1)])], [(2, [("date", 1)]), (1, [("apple", 2)])]),
            r"fold 0 has 1 training and 2 test document\(s\); expected at least 2 and 1",
        )
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_errors_are_one_line_naming_file_and_field(tmp_path, case):
    fields, pattern = CASES[case]()
    path = save(tmp_path, {k: v for k, v in fields.items() if v is not None})
    with pytest.raises(WmdevalError, match=pattern) as caught:
        kusner.read_kusner_mat(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message


def test_missing_one_fold_fields_named(tmp_path):
    fields = one_fold_fields([(1, [("apple", 1)])], [(1, [("date", 1)])])
    del fields["yte"], fields["BOW_xte"]
    with pytest.raises(WmdevalError, match=r"missing fields 'BOW_xte', 'yte' \(one-fold"):
        kusner.read_kusner_mat(save(tmp_path, fields))


def test_not_a_mat_file(tmp_path):
    path = tmp_path / "broken.mat"
    path.write_bytes(b"not matlab at all")
    with pytest.raises(WmdevalError, match="broken.mat: not a readable .mat file"):
        kusner.read_kusner_mat(path)


# ------------------------------------------------------------------------- run_kusner
def outputs(tmp_path):
    names = ("documents", "splits", "embeddings", "report")
    return {name: tmp_path / "out" / f"{name}.parquet" for name in names}


def run(path, out, normalize=False):
    kusner.run_kusner(
        path, normalize, out["documents"], out["splits"], out["embeddings"], out["report"], "toy"
    )


def test_run_writes_all_tables(tmp_path):
    out = outputs(tmp_path)
    run(save(tmp_path, five_fold_fields()), out, normalize=True)
    embeddings = read_table(out["embeddings"])
    assert embeddings.column("word").to_pylist() == ["apple", "banana", "cherry", "date"]
    np.testing.assert_allclose(embeddings.column("norm").to_numpy(), [1.0, 2.0, 0.5, 1.0])
    vectors = np.array(embeddings.column("vector").to_pylist())
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert read_table(out["documents"]).num_rows == 5
    assert read_table(out["splits"]).num_rows == 25
    report = read_table(out["report"]).to_pylist()
    assert len(report) == 1
    assert report[0]["dataset"] == "toy" and report[0]["normalized"] is True
    assert report[0]["word_identity"] == "strings" and report[0]["vocabulary"] == 4


def test_run_keeps_stored_vectors_by_default(tmp_path):
    out = outputs(tmp_path)
    run(save(tmp_path, five_fold_fields()), out)
    vectors = np.array(read_table(out["embeddings"]).column("vector").to_pylist())
    # The embeddings table stores float32 (schemas.embeddings_schema).
    expected = np.array([VECTORS[w] for w in sorted(VECTORS)], dtype=np.float32)
    np.testing.assert_array_equal(vectors, expected)


@pytest.mark.parametrize("case", ["TR index out of range", "in TR and TE", "BOW length"])
def test_run_writes_nothing_for_bad_input(tmp_path, case):
    fields, _ = CASES[case]()
    out = outputs(tmp_path)
    with pytest.raises(WmdevalError):
        run(save(tmp_path, fields), out)
    assert not any(p.exists() for p in out.values())
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_run_writes_nothing_when_normalising_a_zero_vector(tmp_path):
    fields = five_fold_fields()
    fields["X"][0, 1] = np.zeros((DIM, 1))
    out = outputs(tmp_path)
    with pytest.raises(WmdevalError, match="all zeros"):
        run(save(tmp_path, fields), out, normalize=True)
    assert not any(p.exists() for p in out.values())


# ------------------------------------------------------------------------- duplicates
def test_duplicate_counts_match_pairwise_comparison_of_stored_bags(tmp_path):
    rng = np.random.default_rng(0)
    words = list(VECTORS)
    docs = []
    for _ in range(30):
        chosen = rng.choice(len(words), size=rng.integers(1, 4), replace=False)
        docs.append(
            (int(rng.integers(1, 3)), [(words[i], float(rng.integers(1, 3))) for i in chosen])
        )
    # Planted duplicates: the same bag in another column order, and a triple.
    docs[7] = (1, list(reversed(docs[3][1])))
    docs[12] = (2, list(docs[3][1]))
    docs[20] = (2, list(docs[15][1]))
    half = len(docs) // 2
    fields = one_fold_fields(docs[:half], docs[half:])
    data = kusner.read_kusner_mat(save(tmp_path, fields))

    # Direct comparison of the bags as stored: multisets of (vector bytes, count).
    stored = []
    for part in ("tr", "te"):
        for x, counts in zip(fields[f"x{part}"][0], fields[f"BOW_x{part}"][0], strict=True):
            stored.append(
                sorted(zip((col.tobytes() for col in x.T), counts.ravel().tolist(), strict=True))
            )
    pairs = [
        (a, b) for a, b in itertools.combinations(range(len(stored)), 2) if stored[a] == stored[b]
    ]
    samples = {d for pair in pairs for d in pair}

    groups = duplicates.duplicate_groups(data.documents)
    sizes = np.array([len(g) for g in groups])
    assert duplicates.pair_count(sizes) == len(pairs)
    assert int(sizes.sum()) == len(samples)
    assert {3, 7, 12} <= samples and {15, 20} <= samples


def test_file_with_no_known_fields(tmp_path):
    path = save(tmp_path, {"something": np.ones((2, 2))})
    with pytest.raises(WmdevalError, match="not a Kusner .mat file: none of the fields present"):
        kusner.read_kusner_mat(path)


def test_single_precision_vectors_are_read_exactly(tmp_path):
    fields = five_fold_fields()
    fields["X"] = cell([x.astype(np.float32) for x in fields["X"][0]])
    data = kusner.read_kusner_mat(save(tmp_path, fields))
    assert data.report["stored_dtype"] == "float32"
    assert data.vectors.dtype == np.float64
    expected = np.array([VECTORS[w] for w in data.words], dtype=np.float32)
    np.testing.assert_array_equal(data.vectors, expected.astype(np.float64))
