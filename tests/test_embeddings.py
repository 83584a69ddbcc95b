"""The streaming embedding reader, checked against gensim's own writer and reader."""

import gzip
import logging
from collections import Counter

import numpy as np
import pytest
from gensim.models import KeyedVectors

from wmdeval.core.errors import WmdevalError
from wmdeval.core.io import read_table, write_table
from wmdeval.ingest import embeddings
from wmdeval.ingest.corpora import documents_table

DIM = 7
NON_ASCII = ["café", "naïve", "straße", "日本語", "ñandú"]
FORMATS = ["word2vec-binary", "word2vec-text", "fasttext-vec", "glove"]


@pytest.fixture(scope="module")
def vectors() -> KeyedVectors:
    """50 words (some not ASCII) x 7 random dimensions, seeded."""
    rng = np.random.default_rng(7)
    words = [f"w{k:02d}" for k in range(45)] + NON_ASCII
    rng.shuffle(words)
    kv = KeyedVectors(DIM)
    kv.add_vectors(words, rng.standard_normal((len(words), DIM)).astype(np.float32))
    return kv


def write(kv: KeyedVectors, path, fmt: str) -> None:
    """With gensim's writer (a path ending in .gz is compressed by gensim)."""
    kv.save_word2vec_format(str(path), binary=fmt == "word2vec-binary", write_header=fmt != "glove")


def gensim_load(path, fmt: str, limit=None) -> KeyedVectors:
    return KeyedVectors.load_word2vec_format(
        str(path), binary=fmt == "word2vec-binary", no_header=fmt == "glove", limit=limit
    )


def assert_same_as_gensim(path, fmt, vocabulary=None, limit=None):
    reference = gensim_load(path, fmt, limit)
    expected = [w for w in reference.index_to_key if vocabulary is None or w in vocabulary]
    words, matrix = embeddings.read_vectors(path, fmt, vocabulary, limit)
    assert words == expected
    assert matrix.dtype == np.float32
    assert matrix.shape == (len(expected), DIM)
    np.testing.assert_array_equal(matrix, reference[expected] if expected else matrix)


def one_line_error(excinfo, path) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    assert str(path) in message
    return message


# ----------------------------------------------------------------- same as gensim
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_every_format_reads_like_gensim(tmp_path, vectors, fmt, suffix):
    path = tmp_path / f"vectors{suffix}"
    write(vectors, path, fmt)
    some = set(vectors.index_to_key[::3]) | {"café", "日本語", "not-in-the-file"}
    assert_same_as_gensim(path, fmt)
    assert_same_as_gensim(path, fmt, vocabulary=some)
    assert_same_as_gensim(path, fmt, limit=20)
    assert_same_as_gensim(path, fmt, vocabulary=some, limit=20)


def test_gzip_is_detected_by_content(tmp_path, vectors):
    plain = tmp_path / "vectors.bin"
    write(vectors, plain, "word2vec-binary")
    renamed = tmp_path / "vectors.data"
    renamed.write_bytes(gzip.compress(plain.read_bytes()))
    words, matrix = embeddings.read_vectors(renamed, "word2vec-binary", None)
    assert words == vectors.index_to_key
    np.testing.assert_array_equal(matrix, vectors.vectors)


@pytest.mark.parametrize("chunk", [1, 5, 13, 64])
def test_binary_records_split_across_chunks(tmp_path, vectors, monkeypatch, chunk):
    path = tmp_path / "vectors.bin"
    write(vectors, path, "word2vec-binary")
    monkeypatch.setattr(embeddings, "_BINARY_CHUNK_BYTES", chunk)
    assert_same_as_gensim(path, "word2vec-binary")
    assert_same_as_gensim(path, "word2vec-binary", vocabulary={"café", "w03"}, limit=30)


def test_binary_with_a_newline_after_each_vector(tmp_path, vectors):
    """The layout of the original C tool, which gensim also reads."""
    path = tmp_path / "c-tool.bin"
    with open(path, "wb") as out:
        out.write(f"{len(vectors)} {DIM}\n".encode())
        for word in vectors.index_to_key:
            out.write(word.encode() + b" " + vectors[word].astype("<f4").tobytes() + b"\n")
    assert_same_as_gensim(path, "word2vec-binary")
    assert_same_as_gensim(path, "word2vec-binary", vocabulary={"straße", "w10"})


def test_text_with_trailing_spaces_and_crlf(tmp_path, vectors):
    """fastText .vec lines end with a space; Windows files with CR LF."""
    path = tmp_path / "vectors.vec"
    lines = [f"{len(vectors)} {DIM}"]
    lines += [f"{w} {' '.join(str(v) for v in vectors[w])} " for w in vectors.index_to_key]
    path.write_bytes("\r\n".join(lines).encode() + b"\r\n")
    assert_same_as_gensim(path, "fasttext-vec")


def test_a_repeated_word_keeps_its_first_vector(tmp_path, caplog):
    path = tmp_path / "twice.txt"
    path.write_text("3 2\ncat 1 2\ndog 3 4\ncat 5 6\n")
    with caplog.at_level(logging.WARNING, "wmdeval.ingest.embeddings"):
        words, matrix = embeddings.read_vectors(path, "word2vec-text", None)
    assert words == ["cat", "dog"]
    np.testing.assert_array_equal(matrix, [[1, 2], [3, 4]])
    assert "'cat' (line 4)" in caplog.text
    reference = gensim_load(path, "word2vec-text")
    np.testing.assert_array_equal(reference["cat"], [1, 2])


def test_undecodable_words_are_skipped_unless_kept(tmp_path):
    path = tmp_path / "latin1.bin"
    vector = np.ones(DIM, "<f4").tobytes()
    path.write_bytes(b"2 7\n" + b"caf\xe9 " + vector + b"tea " + vector)
    words, _ = embeddings.read_vectors(path, "word2vec-binary", {"tea", "café"})
    assert words == ["tea"]
    with pytest.raises(WmdevalError, match="not valid UTF-8") as excinfo:
        embeddings.read_vectors(path, "word2vec-binary", None)
    one_line_error(excinfo, path)
    with pytest.raises(UnicodeDecodeError):  # gensim's default is strict too
        gensim_load(path, "word2vec-binary")


def test_load_keyed_vectors(tmp_path, vectors):
    path = tmp_path / "vectors.txt"
    write(vectors, path, "word2vec-text")
    kv = embeddings.load_keyed_vectors(path, "word2vec-text", vocabulary={"café", "w01"})
    assert sorted(kv.index_to_key) == ["café", "w01"]
    np.testing.assert_array_equal(kv["café"], vectors["café"])


# ------------------------------------------------------------------------ errors
def test_missing_file_and_unknown_format(tmp_path):
    path = tmp_path / "nope.bin"
    with pytest.raises(WmdevalError, match="not found") as excinfo:
        embeddings.read_vectors(path, "word2vec-binary", None)
    one_line_error(excinfo, path)
    path.write_text("1 1\na 1\n")
    with pytest.raises(WmdevalError, match="unknown embedding format 'bert'"):
        embeddings.read_vectors(path, "bert", None)


@pytest.mark.parametrize("fmt", ["word2vec-text", "fasttext-vec", "word2vec-binary"])
def test_glove_declared_with_a_header(tmp_path, vectors, fmt):
    path = tmp_path / "glove.txt"
    write(vectors, path, "glove")
    with pytest.raises(WmdevalError) as excinfo:
        embeddings.read_vectors(path, fmt, None)
    message = one_line_error(excinfo, path)
    first_word = vectors.index_to_key[0]
    assert f"expected a header '<count> <dim>' on line 1, found '{first_word} " in message
    assert message.endswith("…'")  # a long line is cut short


@pytest.mark.parametrize("header", ["", "50\n", "50 7 3\n", "50 0\n", "-50 7\n", "x y\n"])
def test_bad_headers(tmp_path, header):
    path = tmp_path / "vectors.txt"
    path.write_text(header)
    with pytest.raises(WmdevalError, match="empty|expected a header") as excinfo:
        embeddings.read_vectors(path, "word2vec-text", None)
    one_line_error(excinfo, path)


def test_word2vec_text_declared_as_glove(tmp_path, vectors):
    path = tmp_path / "vectors.txt"
    write(vectors, path, "word2vec-text")
    with pytest.raises(WmdevalError, match="looks like a '<count> <dim>' header") as excinfo:
        embeddings.read_vectors(path, "glove", None)
    one_line_error(excinfo, path)


def test_text_declared_as_binary(tmp_path, vectors):
    path = tmp_path / "vectors.txt"
    write(vectors, path, "word2vec-text")
    with pytest.raises(WmdevalError, match="is the file word2vec-text") as excinfo:
        embeddings.read_vectors(path, "word2vec-binary", None)
    one_line_error(excinfo, path)


def test_binary_declared_as_text(tmp_path, vectors):
    path = tmp_path / "vectors.bin"
    write(vectors, path, "word2vec-binary")
    with pytest.raises(WmdevalError, match="line 2: .*found") as excinfo:
        embeddings.read_vectors(path, "word2vec-text", None)
    one_line_error(excinfo, path)


@pytest.mark.parametrize("fmt, line", [("word2vec-text", 5), ("glove", 4)])
def test_wrong_number_of_values_names_the_line(tmp_path, fmt, line):
    path = tmp_path / "vectors.txt"
    header = "4 3\n" if fmt == "word2vec-text" else ""
    path.write_text(header + "a 1 2 3\nb 1 2 3\nc 1 2 3\nd 1 2\n")
    with pytest.raises(WmdevalError) as excinfo:
        # also for a word that is not kept: every line's length is checked
        embeddings.read_vectors(path, fmt, {"a"})
    message = one_line_error(excinfo, path)
    assert f"line {line}: expected a word and 3 values, found 2 values" in message


def test_non_numeric_value(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("2 3\na 1 2 3\nb 1 two 3\n")
    with pytest.raises(WmdevalError) as excinfo:
        embeddings.read_vectors(path, "word2vec-text", None)
    message = one_line_error(excinfo, path)
    assert "line 3: 'two' in the vector of 'b' is not a number" in message


@pytest.mark.parametrize("cut", [3, DIM * 4 + 2])
def test_truncated_binary(tmp_path, vectors, cut):
    path = tmp_path / "vectors.bin"
    write(vectors, path, "word2vec-binary")
    data = path.read_bytes()
    last_word = vectors.index_to_key[-1].encode()
    start = data.rindex(last_word + b" ")
    path.write_bytes(data[: start + cut])  # inside the last word, or inside its vector
    with pytest.raises(WmdevalError, match="truncated") as excinfo:
        embeddings.read_vectors(path, "word2vec-binary", {"w00"})
    one_line_error(excinfo, path)


def test_truncated_gzip(tmp_path, vectors):
    path = tmp_path / "vectors.bin.gz"
    write(vectors, path, "word2vec-binary")
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(WmdevalError, match="cannot read") as excinfo:
        embeddings.read_vectors(path, "word2vec-binary", None)
    one_line_error(excinfo, path)


@pytest.mark.parametrize("fmt", ["word2vec-text", "word2vec-binary"])
def test_non_finite_values_name_the_word_only_when_kept(tmp_path, vectors, fmt):
    bad = vectors.index_to_key[10]
    broken = KeyedVectors(DIM)
    matrix = vectors.vectors.copy()
    matrix[10, 3] = np.nan
    matrix[20, 0] = np.inf
    broken.add_vectors(vectors.index_to_key, matrix)
    path = tmp_path / "vectors"
    write(broken, path, fmt)
    with pytest.raises(WmdevalError, match="NaN or infinite") as excinfo:
        embeddings.read_vectors(path, fmt, {bad})
    assert repr(bad) in one_line_error(excinfo, path)
    with pytest.raises(WmdevalError, match=repr(vectors.index_to_key[20])):
        embeddings.read_vectors(path, fmt, {vectors.index_to_key[20]})
    words, _ = embeddings.read_vectors(path, fmt, {"café", vectors.index_to_key[11]})
    assert len(words) == 2


@pytest.mark.parametrize("fmt", ["word2vec-text", "word2vec-binary"])
def test_fewer_vectors_than_declared_is_a_warning(tmp_path, vectors, fmt, caplog):
    path = tmp_path / "vectors"
    vectors.save_word2vec_format(
        str(path), binary=fmt == "word2vec-binary", total_vec=len(vectors) + 5
    )
    with caplog.at_level(logging.WARNING, "wmdeval.ingest.embeddings"):
        words, _ = embeddings.read_vectors(path, fmt, None)
    assert words == vectors.index_to_key
    assert "declares 55 vectors but the file has only 50" in caplog.text
    with pytest.raises(EOFError):  # gensim refuses such a file outright
        gensim_load(path, fmt)


def test_more_vectors_than_declared_is_a_warning(tmp_path, vectors, caplog):
    path = tmp_path / "vectors.bin"
    vectors.save_word2vec_format(str(path), binary=True, total_vec=len(vectors) - 5)
    with caplog.at_level(logging.WARNING, "wmdeval.ingest.embeddings"):
        words, _ = embeddings.read_vectors(path, "word2vec-binary", None)
    assert words == gensim_load(path, "word2vec-binary").index_to_key
    assert "after the 45 vectors the header declares is ignored" in caplog.text


# ------------------------------------------------------------------- run_lookup
def write_documents(tmp_path, bags):
    path = tmp_path / "documents.parquet"
    write_table(documents_table([Counter(b) for b in bags], ["x"] * len(bags)), path)
    return path


def test_run_lookup_end_to_end(tmp_path):
    documents = write_documents(tmp_path, [{"zebra": 2, "café": 1}, {"apple": 1, "oov": 3}])
    embedding = tmp_path / "vectors.txt"
    embedding.write_text(
        "5 2\nzebra 3 4\nunused 1 1\napple 0 2\ncafé -1 0\nzoo 5 5\n", encoding="utf-8"
    )
    out = tmp_path / "embeddings.parquet"
    embeddings.run_lookup(str(documents), str(embedding), "word2vec-text", None, True, str(out))
    table = read_table(out)
    assert table.column("word").to_pylist() == ["apple", "café", "zebra"]
    np.testing.assert_allclose(table.column("norm").to_numpy(), [2, 1, 5])
    np.testing.assert_allclose(
        np.array(table.column("vector").to_pylist()), [[0, 1], [-1, 0], [0.6, 0.8]], rtol=1e-6
    )

    embeddings.run_lookup(str(documents), str(embedding), "word2vec-text", 2, False, str(out))
    table = read_table(out)
    assert table.column("word").to_pylist() == ["zebra"]  # limit 2: zebra and unused
    assert table.column("vector").to_pylist() == [[3, 4]]


def test_run_lookup_rejects_nan_and_zero_vectors_of_corpus_words(tmp_path):
    documents = write_documents(tmp_path, [{"cat": 1, "dog": 1}])
    embedding = tmp_path / "vectors.txt"
    out = tmp_path / "embeddings.parquet"
    embedding.write_text("3 2\nbird nan 1\ncat 1 1\ndog nan 1\n")
    with pytest.raises(WmdevalError, match="line 4: the vector of 'dog' has NaN"):
        embeddings.run_lookup(str(documents), str(embedding), "word2vec-text", None, True, str(out))
    embedding.write_text("2 2\ncat 1 1\ndog 0 0\n")
    with pytest.raises(WmdevalError, match="'dog' is all zeros"):
        embeddings.run_lookup(str(documents), str(embedding), "word2vec-text", None, True, str(out))
    assert not out.exists()
    embeddings.run_lookup(str(documents), str(embedding), "word2vec-text", None, False, str(out))
    assert read_table(out).column("norm").to_pylist() == [pytest.approx(2**0.5), 0.0]
