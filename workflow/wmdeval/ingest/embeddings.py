"""Word embeddings: read (the word2vec, fastText and GloVe file formats) or train (the
demo), then look up the corpus vocabulary.

Only the words of the corpus are kept, already while the file is read, so no stage ever
holds the full embedding (GoogleNews: 3M x 300 float32 = 3.6 GB).
"""

from __future__ import annotations

import gzip
import itertools
import logging
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa

from ..core import schemas
from ..core.errors import WmdevalError
from ..core.io import atomic_path, read_documents, write_table

log = logging.getLogger("wmdeval.ingest.embeddings")

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


def run_train(spec: dict, corpora: list[dict], out_path: str) -> None:
    """Train on the concatenated token lists of the ``corpora`` (dataset configs, read as
    ingest reads them) and save as word2vec text (sorted by word)."""
    from .corpora import tokenized_corpus

    corpus = [doc for dataset in corpora for doc in tokenized_corpus(dataset)]
    vectors = train_word2vec(corpus, spec)
    words = sorted(vectors.index_to_key)
    with atomic_path(out_path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
        handle.write(f"{len(words)} {vectors.vector_size}\n")
        for word in words:
            values = " ".join(f"{v:.6g}" for v in vectors[word])
            handle.write(f"{word} {values}\n")


# ---------------------------------------------------------------------- reading files
# The reader streams the file and keeps only the vectors of the words asked for, so a
# 3M x 300 file costs the kept rows, not the 3.6 GB matrix gensim would build. Words are
# compared as UTF-8 bytes and only the kept ones are decoded, strictly, as gensim does by
# default (``unicode_errors='strict'``): a kept word that is not UTF-8 is an error. With a
# vocabulary that never happens (its words are str), and words outside it are never
# decoded, so a stray invalid word elsewhere in the file does not stop the run. Numbers
# are parsed only for kept words; the number of values is checked on every line.

_GZIP_MAGIC = b"\x1f\x8b"
_BINARY_CHUNK_BYTES = 1 << 20
_FILE_BUFFER_BYTES = 1 << 20
#: Longer than any real header; bounds what is read when line 1 is not a header.
_HEADER_MAX_BYTES = 1024
#: A binary record whose word has no space after this many bytes means a wrong file;
#: without the bound the reader would buffer the whole file looking for one.
_MAX_WORD_BYTES = 1 << 16
#: Bytes of text files: a "binary" first vector made only of these was written as text.
_TEXT_BYTES = bytes(range(0x20, 0x7F)) + b"\t\n\r"


class _KeptVectors:
    """The vectors kept so far, in file order; the first vector of a repeated word wins.

    Rows go into one float32 matrix, allocated for the most rows that can be kept
    (grown by doubling when that is unknown) and trimmed at the end, so the peak memory
    is the kept matrix, not a list of small arrays.
    """

    def __init__(self, path: Path, dim: int, capacity: int | None):
        self.path = path
        self.rows = np.empty((capacity if capacity is not None else 1024, dim), np.float32)
        self.row_of: dict[bytes, int] = {}
        self.words: list[str] = []
        self.duplicates = 0
        self.first_duplicate = ""

    def add(self, word: bytes, vector: np.ndarray, place: str) -> None:
        if word in self.row_of:
            self.duplicates += 1
            self.first_duplicate = self.first_duplicate or f"{_decode(word)!r} ({place})"
            return
        if not np.isfinite(vector).all():
            raise WmdevalError(
                f"{self.path}: {place}: the vector of {_decode(word)!r} has NaN or infinite values"
            )
        try:
            text = word.decode("utf-8")
        except UnicodeDecodeError:
            raise WmdevalError(
                f"{self.path}: {place}: the word {_decode(word)!r} is not valid UTF-8"
            ) from None
        row = len(self.words)
        if row == len(self.rows):
            self.rows.resize((max(2 * row, 1024), self.rows.shape[1]), refcheck=False)
        self.rows[row] = vector
        self.row_of[word] = row
        self.words.append(text)

    def result(self) -> tuple[list[str], np.ndarray]:
        if self.duplicates:
            log.warning(
                "%s: %d repeated word(s), first %s; each keeps its first vector",
                self.path,
                self.duplicates,
                self.first_duplicate,
            )
        # In place: a copy of the trimmed rows would briefly double the memory.
        self.rows.resize((len(self.words), self.rows.shape[1]), refcheck=False)
        return self.words, self.rows


def read_vectors(
    path: str | Path, fmt: str, vocabulary: Iterable[str] | None, limit: int | None = None
) -> tuple[list[str], np.ndarray]:
    """Stream an embedding file, keeping the vectors of ``vocabulary`` (None: all words).

    ``fmt`` is one of :data:`FILE_FORMATS`; gzip files are read transparently. Only the
    first ``limit`` vectors of the file are considered (None or 0: all, like gensim).
    Returns the kept words in file order and their float32 matrix [n, dim]. A word that
    occurs twice keeps its first vector. Kept words are decoded as strict UTF-8 (gensim's
    default); words not kept are never decoded. Problems raise a one-line
    :class:`WmdevalError` naming the file; a file with fewer vectors than its header
    declares only logs a warning (gensim raises ``EOFError`` there, but every vector read
    is intact).
    """
    path = Path(path)
    if fmt not in FILE_FORMATS:
        raise WmdevalError(
            f"{path}: unknown embedding format {fmt!r} (expected one of {', '.join(FILE_FORMATS)})"
        )
    if not path.is_file():
        raise WmdevalError(f"{path}: embedding file not found")
    if limit is not None and limit < 0:
        raise WmdevalError(f"{path}: limit must be 0 (no limit) or positive, not {limit}")
    wanted = None if vocabulary is None else {w.encode("utf-8") for w in vocabulary}
    try:
        with _open_maybe_gzip(path) as fin:
            if fmt == "glove":
                kept, read = _read_glove(fin, path, wanted, limit)
            else:
                kept, read = _read_with_header(fin, path, fmt, wanted, limit)
    except (OSError, EOFError, zlib.error) as exc:
        # gzip damage or an unreadable file; our own problems are WmdevalErrors already
        raise WmdevalError(f"{path}: cannot read the file ({exc})") from None
    words, matrix = kept.result()
    log.info("%s: kept %d of %d vectors (dim %d)", path, len(words), read, matrix.shape[1])
    return words, matrix


def _open_maybe_gzip(path: Path) -> BinaryIO:
    # By content, not by name: a renamed .gz still reads, a plain file named .gz too.
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb", buffering=_FILE_BUFFER_BYTES)


def _read_with_header(
    fin: BinaryIO, path: Path, fmt: str, wanted: set[bytes] | None, limit: int | None
) -> tuple[_KeptVectors, int]:
    count, dim = _parse_header(fin.readline(_HEADER_MAX_BYTES), path)
    to_read = min(count, limit) if limit else count
    kept = _KeptVectors(path, dim, _capacity(to_read, wanted))
    if fmt == "word2vec-binary":
        read, unread = _read_binary_records(fin, path, dim, to_read, wanted, kept)
    else:
        read, unread = _read_text_lines(fin, path, dim, to_read, wanted, kept, 2), b""
    if read < to_read:
        log.warning(
            "%s: the header declares %d vectors but the file has only %d", path, count, read
        )
    elif read == count and (unread + fin.read(_HEADER_MAX_BYTES)).strip():
        # gensim ignores whatever follows the declared vectors; say so, not silently
        log.warning("%s: data after the %d vectors the header declares is ignored", path, count)
    return kept, read


def _read_glove(
    fin: BinaryIO, path: Path, wanted: set[bytes] | None, limit: int | None
) -> tuple[_KeptVectors, int]:
    first = fin.readline()
    if not first.strip():
        raise WmdevalError(
            f"{path}: the file is empty"
            if not first
            else f"{path}: line 1 is empty; expected 'word v1 v2 ...'"
        )
    fields = first.split()
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        raise WmdevalError(
            f"{path}: line 1 looks like a '<count> <dim>' header, which GloVe "
            f"files do not have; is it word2vec-text? (found {_show(first)})"
        )
    dim = first.rstrip().count(b" ")
    if dim == 0:
        raise WmdevalError(f"{path}: line 1 has a word but no values (found {_show(first)})")
    kept = _KeptVectors(path, dim, _capacity(limit or None, wanted))
    lines = itertools.chain([first], fin)
    return kept, _read_text_lines(lines, path, dim, limit or None, wanted, kept, 1)


def _capacity(to_read: int | None, wanted: set[bytes] | None) -> int | None:
    """The most rows that can be kept, or None when the file does not say."""
    bounds = [b for b in (to_read, None if wanted is None else len(wanted)) if b is not None]
    return min(bounds) if bounds else None


def _parse_header(line: bytes, path: Path) -> tuple[int, int]:
    if not line:
        raise WmdevalError(f"{path}: the file is empty")
    fields = line.split()
    if len(fields) == 2 and all(f.isdigit() and int(f) > 0 for f in fields):
        return int(fields[0]), int(fields[1])
    raise WmdevalError(f"{path}: expected a header '<count> <dim>' on line 1, found {_show(line)}")


def _read_text_lines(
    lines: Iterable[bytes],
    path: Path,
    dim: int,
    to_read: int | None,
    wanted: set[bytes] | None,
    kept: _KeptVectors,
    first_line: int,
) -> int:
    """'word v1 ... vdim' lines (gensim's rules: trailing whitespace dropped, fields split
    on single spaces). Every line's field count is checked; only kept lines are parsed."""
    read = 0
    # islice, not a break inside the loop: the line after the last one read stays unread
    for number, raw in enumerate(itertools.islice(lines, to_read), first_line):
        read += 1
        line = raw.rstrip()
        if line.count(b" ") != dim:
            raise WmdevalError(_wrong_count_message(path, number, line, dim))
        word = line[: line.index(b" ")]
        if wanted is None or word in wanted:
            kept.add(word, _parse_values(line, path, number), f"line {number}")
    return read


def _parse_values(line: bytes, path: Path, number: int) -> np.ndarray:
    fields = line.split(b" ")
    try:
        # via float64, as gensim parses text values, so both give identical float32s
        values = [float(field) for field in fields[1:]]
    except ValueError:
        bad = next(f for f in fields[1:] if not _is_number(f))
        raise WmdevalError(
            f"{path}: line {number}: {_show(bad)} in the vector of "
            f"{_decode(fields[0])!r} is not a number"
        ) from None
    return np.asarray(values, dtype=np.float64).astype(np.float32)


def _is_number(field: bytes) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _wrong_count_message(path: Path, number: int, line: bytes, dim: int) -> str:
    found = len(line.split(b" ")) - 1
    message = f"{path}: line {number}: expected a word and {dim} values, found {found} values"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        message += " (the line is not UTF-8 text; is the file word2vec-binary?)"
    return message


def _read_binary_records(
    fin: BinaryIO, path: Path, dim: int, to_read: int, wanted: set[bytes] | None, kept: _KeptVectors
) -> tuple[int, bytes]:
    """word2vec binary records: the word's bytes, a space, ``dim`` little-endian float32.

    Like gensim, newlines before a word (the C tool writes one after each vector) are
    dropped. The file is read in chunks; a record split across two chunks is completed
    from the next one. Returns the records read and the bytes read past the last one.
    """
    vector_bytes = 4 * dim
    buffer, start, at_end = b"", 0, False
    read = 0
    while read < to_read:
        space = buffer.find(b" ", start)
        end = space + 1 + vector_bytes
        if space == -1 or end > len(buffer):
            if at_end:
                _check_clean_end(buffer[start:], path, read, vector_bytes)
                break
            if space == -1 and len(buffer) - start > _MAX_WORD_BYTES:
                raise WmdevalError(
                    f"{path}: vector {read + 1}: no word ends within "
                    f"{_MAX_WORD_BYTES} bytes; not a word2vec-binary file?"
                )
            more = fin.read(_BINARY_CHUNK_BYTES)
            at_end = not more
            buffer, start = buffer[start:] + more, 0
            continue
        if read == 0:
            _check_not_text(buffer[space + 1 : end], path, dim)
        read += 1
        word = buffer[start:space].lstrip(b"\n")
        if wanted is None or word in wanted:
            vector = np.frombuffer(buffer, dtype="<f4", count=dim, offset=space + 1)
            kept.add(word, vector, f"vector {read}")
        start = end
    return read, buffer[start:]


def _check_clean_end(rest: bytes, path: Path, read: int, vector_bytes: int) -> None:
    """At the end of the file, anything but whitespace is a record cut off."""
    if not rest.strip():
        return
    space = rest.find(b" ")
    if space == -1:
        raise WmdevalError(
            f"{path}: the file is truncated: it ends inside the word of vector {read + 1}"
        )
    raise WmdevalError(
        f"{path}: the file is truncated: vector {read + 1} "
        f"({_decode(rest[:space].lstrip())!r}) has {len(rest) - space - 1} "
        f"of its {vector_bytes} bytes"
    )


def _check_not_text(first_vector: bytes, path: Path, dim: int) -> None:
    # Read as binary, a text file gives finite garbage and no error; its first "vector"
    # is all printable ASCII, which real float32 bytes of 4+ values practically never are.
    if dim >= 4 and not first_vector.translate(None, _TEXT_BYTES):
        raise WmdevalError(
            f"{path}: the first vector is text, not float32 bytes; is the file word2vec-text?"
        )


def _decode(word: bytes) -> str:
    """A word for messages: invalid UTF-8 shown as U+FFFD rather than failing."""
    return word.decode("utf-8", errors="replace")


def _show(text: bytes) -> str:
    shown = _decode(text).strip()
    return f"'{shown[:40]}…'" if len(shown) > 40 else f"'{shown}'"


def load_keyed_vectors(
    path: str | Path, fmt: str, limit: int | None = None, vocabulary: Iterable[str] | None = None
):
    """:func:`read_vectors` as a gensim ``KeyedVectors`` (words in file order)."""
    from gensim.models import KeyedVectors

    words, matrix = read_vectors(path, fmt, vocabulary, limit)
    vectors = KeyedVectors(matrix.shape[1])  # no count: add_vectors appends after the slots
    vectors.add_vectors(words, matrix)
    return vectors


def corpus_vocabulary(documents: pa.Table) -> list[str]:
    return sorted({w for words in documents.column("words").to_pylist() for w in words})


def lookup(words: list[str], matrix: np.ndarray, normalize: bool, source: str) -> pa.Table:
    """Embeddings table of ``words`` and their vectors (rows of ``matrix``), sorted by word.

    ``norm`` is each vector's L2 norm as read; with ``normalize`` the vectors are scaled to
    norm 1 (an all-zero vector cannot be, and is an error).
    """
    order = np.array(sorted(range(len(words)), key=words.__getitem__), dtype=np.intp)
    known = [words[row] for row in order]
    matrix = np.asarray(matrix, dtype=np.float64)[order]
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


def embeddings_table(
    words: list[str], matrix: np.ndarray, norms: np.ndarray, dtype: type = np.float32
) -> pa.Table:
    """An embeddings table (schemas.embeddings_schema) of ``matrix``'s rows, stored as
    ``dtype`` (float32 for looked-up vectors, float64 for computed projections)."""
    dim = matrix.shape[1]
    flat = pa.array(np.ascontiguousarray(matrix, dtype=dtype).reshape(-1))
    return pa.table(
        {
            "word": pa.array(words, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(flat, dim),
            "norm": pa.array(np.asarray(norms, dtype=dtype)),
        },
        schema=schemas.embeddings_schema(dim, pa.from_numpy_dtype(dtype)),
    )


def embedding_matrix(table: pa.Table) -> tuple[list[str], np.ndarray]:
    """(words, float64 matrix) of an embeddings table."""
    words = table.column("word").to_pylist()
    vectors = table.column("vector").combine_chunks()
    dim = vectors.type.list_size
    matrix = vectors.flatten().to_numpy(zero_copy_only=False).reshape(len(words), dim)
    return words, matrix.astype(np.float64)


def run_lookup(
    documents_path: str,
    embedding_path: str,
    fmt: str,
    limit: int | None,
    normalize: bool,
    out_path: str,
) -> None:
    """Vectors of the corpus vocabulary -> the embeddings table.

    The vocabulary is read first so that the file is streamed once, keeping only the
    corpus words: the full embedding matrix is never in memory.
    """
    vocabulary = corpus_vocabulary(read_documents(documents_path))
    words, matrix = read_vectors(embedding_path, fmt, vocabulary, limit)
    table = lookup(words, matrix, normalize, str(embedding_path))
    norms = table.column("norm").to_numpy()
    log.info("%d of the %d corpus words have vectors", len(norms), len(vocabulary))
    if len(norms):
        log.info(
            "norms before normalisation: min %.4g, median %.4g, max %.4g",
            norms.min(),
            np.median(norms),
            norms.max(),
        )
    write_table(table, out_path)
