"""Word embeddings: read (gensim KeyedVectors formats) or train (the demo), then look up
the corpus vocabulary.

Only the words of the corpus are kept, so later stages never hold the full embedding.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pyarrow as pa

from . import schemas
from .io import WmdevalError, atomic_path, read_documents, write_table

log = logging.getLogger("wmdeval.embeddings")

FILE_FORMATS = ("word2vec-binary", "word2vec-text", "glove", "fasttext-vec")


def train_word2vec(corpus: list[list[str]], spec: dict):
    """A small Word2Vec on the demo texts: one worker and a fixed seed make it deterministic."""
    from gensim.models import Word2Vec

    model = Word2Vec(
        sentences=corpus,
        vector_size=spec["vector_size"],
        window=spec["window"],
        min_count=spec["min_count"],
        epochs=spec["epochs"],
        seed=spec["seed"],
        workers=1,
        sg=1,
    )
    return model.wv


def run_train(corpora: list[list[list[str]]], spec: dict, out_path: str) -> None:
    """Train on the concatenated corpora and save as word2vec text (sorted by word)."""
    corpus = [doc for documents in corpora for doc in documents]
    vectors = train_word2vec(corpus, spec)
    words = sorted(vectors.index_to_key)
    with atomic_path(out_path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(f"{len(words)} {vectors.vector_size}\n")
        for word in words:
            values = " ".join(f"{v:.6g}" for v in vectors[word])
            handle.write(f"{word} {values}\n")


def load_keyed_vectors(path: str | Path, fmt: str, limit: int | None = None):
    """Read an embedding file with gensim; errors name the file and the problem."""
    from gensim.models import KeyedVectors

    path = Path(path)
    if not path.exists():
        raise WmdevalError(f"{path}: embedding file not found")
    if fmt not in FILE_FORMATS:
        raise WmdevalError(f"{path}: unknown embedding format {fmt!r}")
    try:
        return KeyedVectors.load_word2vec_format(
            str(path),
            binary=fmt == "word2vec-binary",
            no_header=fmt == "glove",
            limit=limit,
        )
    except (ValueError, EOFError, UnicodeDecodeError, IndexError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WmdevalError(f"{path}: not a valid {fmt} embedding file ({first})") from None


def corpus_vocabulary(documents: pa.Table) -> list[str]:
    return sorted({w for words in documents.column("words").to_pylist() for w in words})


def lookup(vocabulary: list[str], vectors, normalize: bool, source: str) -> pa.Table:
    """Embeddings table (sorted by word) of the vocabulary words the vectors know."""
    known = [w for w in vocabulary if w in vectors.key_to_index]
    dim = vectors.vector_size
    matrix = np.zeros((len(known), dim), dtype=np.float64)
    for row, word in enumerate(known):
        matrix[row] = vectors[word]
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        word = known[int(np.flatnonzero(bad)[0])]
        raise WmdevalError(f"{source}: vector of {word!r} has NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1)
    if normalize:
        zero = norms == 0
        if zero.any():
            word = known[int(np.flatnonzero(zero)[0])]
            raise WmdevalError(f"{source}: vector of {word!r} is all zeros, cannot normalise")
        matrix = matrix / norms[:, None]
    return embeddings_table(known, matrix, norms)


def embeddings_table(words: list[str], matrix: np.ndarray, norms: np.ndarray) -> pa.Table:
    dim = matrix.shape[1]
    flat = pa.array(np.ascontiguousarray(matrix, dtype=np.float32).reshape(-1))
    return pa.table(
        {
            "word": pa.array(words, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
            "norm": pa.array(norms.astype(np.float32)),
        },
        schema=schemas.embeddings_schema(dim),
    )


def embedding_matrix(table: pa.Table) -> tuple[list[str], np.ndarray]:
    """(words, float64 matrix) of an embeddings table."""
    words = table.column("word").to_pylist()
    vectors = table.column("vector").combine_chunks()
    dim = vectors.type.list_size
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(words), dim)
    return words, matrix.astype(np.float64)


def run_lookup(documents_path: str, embedding_path: str, fmt: str, limit: int | None,
               normalize: bool, out_path: str) -> None:
    documents = read_documents(documents_path)
    vectors = load_keyed_vectors(embedding_path, fmt, limit)
    table = lookup(corpus_vocabulary(documents), vectors, normalize, str(embedding_path))
    norms = table.column("norm").to_numpy()
    if len(norms):
        log.info("%d of the corpus words have vectors; norms before normalisation: "
                 "min %.4g, median %.4g, max %.4g", len(norms), norms.min(), np.median(norms),
                 norms.max())
    write_table(table, out_path)
