"""Dense embedding distances without transport (wmdeval.distances.embedding): WCD, RWMD and
the cosine distance of mean vectors, against plain loops and by hand."""

import logging
import re

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_wmd import documents, embeddings, random_corpus

from wmdeval.core import io, schemas
from wmdeval.distances import embedding
from wmdeval.distances.wmd import bounds, solver

MATRICES = {
    "wcd": embedding.word_centroid_matrix,
    "rwmd": embedding.relaxed_wmd_matrix,
    "cosine-mean": embedding.mean_vector_cosine_matrix,
}


def awkward(seed: int = 0, n_docs: int = 24):
    """Random documents (vectors of various lengths) with an empty one and duplicates."""
    docs, emb = random_corpus(seed, n_docs, n_words=25, dim=5, max_len=9)
    rng = np.random.default_rng(seed)
    rows = emb.to_pylist()
    vectors = {r["word"]: (np.array(r["vector"]) * rng.uniform(0.2, 3.0)).tolist() for r in rows}
    bags = [dict(zip(r["words"], r["counts"], strict=True)) for r in docs.to_pylist()]
    bags[3] = {}
    bags[8] = dict(bags[1])
    return documents(bags), embeddings(vectors)


def plain_sides(docs, emb) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per document: (weights summing to 1, word vectors [u, dim]) straight from the tables."""
    table = {r["word"]: np.array(r["vector"], dtype=np.float64) for r in emb.to_pylist()}
    out = []
    for row in docs.to_pylist():
        counts = np.array(row["counts"], dtype=np.float64)
        vectors = [table[w] for w in row["words"]]
        out.append((counts / counts.sum() if len(counts) else counts, vectors))
    return out


def plain_matrix(docs, emb, method: str) -> np.ndarray:
    sides = plain_sides(docs, emb)
    n = len(sides)
    out = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(n):
            (a, x), (b, y) = sides[i], sides[j]
            if not len(a) or not len(b):
                continue
            mean_i, mean_j = a @ x, b @ y
            if method == "wcd":
                out[i, j] = np.sqrt(np.sum((mean_i - mean_j) ** 2))
            elif method == "cosine-mean":
                lengths = np.linalg.norm(mean_i) * np.linalg.norm(mean_j)
                if lengths > 0:
                    out[i, j] = 1.0 - mean_i @ mean_j / lengths
            else:
                cost = np.zeros((len(a), len(b)))
                for p in range(len(a)):
                    for q in range(len(b)):
                        cost[p, q] = np.linalg.norm(x[p] - y[q])
                out[i, j] = max(a @ cost.min(axis=1), b @ cost.min(axis=0))
    return out


@pytest.mark.parametrize("method", sorted(MATRICES))
@pytest.mark.parametrize("seed", [0, 1])
def test_each_matrix_is_the_plain_loop_definition(method, seed):
    docs, emb = awkward(seed)
    inputs = solver.prepare(docs, emb, "bow")
    got = MATRICES[method](inputs)
    want = plain_matrix(docs, emb, method)
    assert got.dtype == np.float64 and got.shape == (inputs.n, inputs.n)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    # RWMD's word costs are the knn bounds', rounded to float32 (relative 2^-24 each)
    rtol = 2.0**-24 + 1e-12 if method == "rwmd" else 1e-9
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-9)
    np.testing.assert_array_equal(got, got.T)  # exactly symmetric
    filled = ~inputs.empty
    assert (np.diagonal(got)[filled] == 0.0).all()
    assert np.isnan(got[3]).all() and np.isnan(got[:, 3]).all()  # the empty document
    assert got[1, 8] == 0.0  # duplicates


def test_one_word_documents_by_hand():
    emb = embeddings({"a": [0.0, 1.0], "b": [3.0, 4.0]})
    inputs = solver.prepare(documents([{"a": 2}, {"b": 7}]), emb, "bow")
    distance = np.sqrt(9.0 + 9.0)
    assert embedding.word_centroid_matrix(inputs)[0, 1] == pytest.approx(distance, abs=1e-12)
    assert embedding.relaxed_wmd_matrix(inputs)[0, 1] == pytest.approx(distance, rel=2.0**-24)
    cosine = embedding.mean_vector_cosine_matrix(inputs)
    assert cosine[1, 0] == pytest.approx(1.0 - 4.0 / 5.0, abs=1e-12)


def test_two_words_against_two_words_by_hand():
    # Points on a line: a=0, b=10 with mass 1/2 each; c=1 (1/4), d=9 (3/4). Each word's
    # nearest on the other side is 1 away, both ways: RWMD 1 (the WMD is 3). Means 5 and
    # 7: WCD 2. Both means point along x: cosine distance 0.
    emb = embeddings({"a": [0, 0], "b": [10, 0], "c": [1, 0], "d": [9, 0]})
    inputs = solver.prepare(documents([{"a": 1, "b": 1}, {"c": 1, "d": 3}]), emb, "bow")
    assert embedding.relaxed_wmd_matrix(inputs)[0, 1] == pytest.approx(1.0, abs=1e-12)
    assert embedding.word_centroid_matrix(inputs)[0, 1] == pytest.approx(2.0, abs=1e-12)
    assert embedding.mean_vector_cosine_matrix(inputs)[0, 1] == pytest.approx(0.0, abs=1e-12)
    # one side of RWMD can be larger than the other: {a} -> {a, b} costs 0, back costs 5
    inputs = solver.prepare(documents([{"a": 1}, {"a": 1, "b": 1}]), emb, "bow")
    assert embedding.relaxed_wmd_matrix(inputs)[0, 1] == pytest.approx(5.0, abs=1e-12)


def test_a_zero_mean_vector_has_no_cosine():
    emb = embeddings({"a": [1.0, 0.0], "b": [-1.0, 0.0], "c": [0.0, 2.0]})
    inputs = solver.prepare(documents([{"a": 1, "b": 1}, {"c": 1}, {"a": 1}, {}]), emb, "bow")
    cosine = embedding.mean_vector_cosine_matrix(inputs)
    assert np.isnan(cosine[0]).all() and np.isnan(cosine[:, 0]).all()
    assert np.isnan(cosine[3]).all()
    assert cosine[1, 2] == pytest.approx(1.0, abs=1e-15) and cosine[2, 2] == 0.0
    wcd = embedding.word_centroid_matrix(inputs)  # the zero mean is a fine centroid
    assert wcd[0, 1] == pytest.approx(2.0, abs=1e-15) and wcd[0, 0] == 0.0


def test_relaxed_wmd_is_the_bounds_bit_for_bit_and_stays_below_the_wmd():
    docs, emb = awkward(2, 30)
    inputs = solver.prepare(docs, emb, "bow")
    got = embedding.relaxed_wmd_matrix(inputs)
    # every row is its document's plain RWMD bound, whatever the documents bounded with it
    # (so knn mode's lists from the WMD search's bounds rank with these values)
    assert bounds.relaxed_wmd(inputs, np.arange(inputs.n)).tobytes() == got.tobytes()
    some = np.array([2, 5, 6, 17, 29])
    _, plain = bounds.LowerBounds(inputs, some).rows(np.arange(len(some)), plain=True)
    assert plain.tobytes() == got[some].tobytes()
    for i in range(inputs.n):
        for j in range(i + 1, inputs.n):
            wmd = solver.wmd_pair(inputs, i, j)
            assert np.isnan(wmd) == np.isnan(got[i, j])
            # up to the float32 rounding of its word costs (where RWMD is the WMD)
            assert not got[i, j] > wmd * (1 + 2.0**-24) + 1e-12


def test_bounds_without_omr_tables_give_the_same_plain_rows():
    # the dense matrix builds its bands without OMR's tables (nearest other words,
    # postings); its rows must be the bits of a whole build's rows without OMR
    docs, emb = awkward(3, 25)
    inputs = solver.prepare(docs, emb, "bow")
    some = np.array([0, 3, 4, 11, 24])
    whole = bounds.LowerBounds(inputs, some)
    bare = bounds.LowerBounds(inputs, some, overlap=False)
    at = np.arange(len(some))
    for wcd in (False, True):
        assert (
            bare.rows(at, omr=False, wcd=wcd).tobytes()
            == whole.rows(at, omr=False, wcd=wcd).tobytes()
        )
    assert np.isnan(bare.second).all() and not np.isnan(whole.second).all()
    with pytest.raises(ValueError, match="no OMR tables"):
        bare.rows(at)


def test_bands_threads_and_word_chunks_do_not_change_a_bit(monkeypatch):
    docs, emb = awkward(4, 40)
    inputs = solver.prepare(docs, emb, "bow")
    one = embedding.relaxed_wmd_matrix(inputs)
    assert embedding.relaxed_wmd_matrix(inputs, threads=3).tobytes() == one.tobytes()
    # several bands of documents (some next to the empty one), a few words per chunk
    monkeypatch.setattr(embedding, "QUERY_BAND", 5)
    monkeypatch.setattr(bounds, "MAX_ENTRIES", 400)
    chunked = embedding.relaxed_wmd_matrix(inputs, threads=2)
    assert chunked.tobytes() == one.tobytes()
    np.testing.assert_array_equal(chunked, chunked.T)


@pytest.mark.parametrize("method", sorted(MATRICES))
def test_a_matrix_logs_its_progress_in_documents(monkeypatch, caplog, method):
    # a line for every band (interval 0), counts rising to every document with a row: 39
    # of the 40 (one is empty); the lines change no bit
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    monkeypatch.setattr(embedding, "QUERY_BAND", 5)
    monkeypatch.setattr(embedding, "ROW_CHUNK", 5)
    caplog.set_level(logging.INFO, logger="wmdeval.distances.embedding")
    inputs = solver.prepare(*awkward(4, 40), "bow")
    matrix = embedding.embedding_matrix(inputs, method, threads=2, report="m")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("m: ")]
    done = [int(re.match(r"m: (\d+)/39 documents", line)[1]) for line in lines]
    assert len(lines) == 8 and done == sorted(done) and done[-1] == 39
    assert lines[-1].startswith("m: 39/39 documents (100.0%) done in")
    assert matrix.tobytes() == MATRICES[method](inputs).tobytes()


def test_a_row_without_a_direction_counts_as_done(monkeypatch, caplog):
    monkeypatch.setenv("WMDEVAL_PROGRESS_SECONDS", "0")
    caplog.set_level(logging.INFO, logger="wmdeval.distances.embedding")
    emb = embeddings({"a": [1.0, 0.0], "b": [-1.0, 0.0], "c": [0.0, 2.0]})
    inputs = solver.prepare(documents([{"a": 1, "b": 1}, {"c": 1}, {"a": 1}, {}]), emb, "bow")
    embedding.embedding_matrix(inputs, "cosine-mean", report="m")
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("m: ")]
    assert lines[-1].startswith("m: 3/3 documents (100.0%) done in")


@pytest.mark.parametrize("method", sorted(MATRICES))
def test_the_command_writes_the_matrix_in_doc_id_order(tmp_path, method):
    from wmdeval.cli import main

    docs, emb = awkward(5, 15)
    shuffled = docs.take(np.random.default_rng(1).permutation(docs.num_rows))
    shuffled = shuffled.set_column(0, "doc_id", shuffled.column("doc_id").cast("int32"))
    docs_path, emb_path, out = tmp_path / "d.parquet", tmp_path / "e.parquet", tmp_path / "m"
    io.write_table(shuffled.cast(schemas.DOCUMENTS), docs_path, schemas.DOCUMENTS)
    io.write_table(emb, emb_path)
    argv = ["embedding-matrix", "--documents", str(docs_path), "--embeddings", str(emb_path)]
    assert main([*argv, "--method", method, "--out", str(out), "--threads", "2"]) == 0
    doc_ids, matrix = io.read_distances(out)
    np.testing.assert_array_equal(doc_ids, np.arange(15))
    want = MATRICES[method](solver.prepare(docs, emb, "bow"))
    np.testing.assert_array_equal(matrix, want)
    assert pq.read_schema(out).metadata[b"method"] == method.encode()


def test_an_unknown_method_is_one_line(tmp_path, capsys):
    from wmdeval.cli import main

    argv = ["embedding-matrix", "--documents", "d", "--embeddings", "e", "--method", "wmd"]
    assert main([*argv, "--out", str(tmp_path / "m")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "wmdeval embedding-matrix: error: unknown method 'wmd' "
        "(expected one of wcd, rwmd, cosine-mean)"
    ]
    with pytest.raises(io.WmdevalError, match="unknown method"):
        embedding.embedding_matrix(solver.prepare(*awkward(), "bow"), "rwmd-omr")


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_banded_matrix_is_pdists_bit_for_bit(monkeypatch, metric):
    from scipy.spatial.distance import pdist, squareform

    rng = np.random.default_rng(3)
    points = rng.normal(size=(23, 7)) * rng.uniform(0.1, 3.0, size=(23, 1))
    keep = np.array([0, 1, 2, 4, 5, 8, 9, 10, 13, 14, 15, 16, 17, 19, 20, 22])
    want = np.full((23, 23), np.nan)
    want[np.ix_(keep, keep)] = squareform(pdist(points[keep], metric))
    monkeypatch.setattr(embedding, "ROW_CHUNK", 5)  # bands, the last one short
    got = embedding._spread(keep, 23, points[np.arange(23)], metric)
    assert got.tobytes() == want.tobytes()
