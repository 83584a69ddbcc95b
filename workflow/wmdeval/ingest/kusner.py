"""Ingest the Kusner et al. (2015) benchmark ``.mat`` files (docs/protocol.md §2).

A file holds, per document, one word vector per distinct word (a dim x u matrix), the
count of each of those words, and optionally the word strings. Two layouts exist:

- five-fold: ``X``, ``BOW_X``, ``words``, ``Y`` and the five fixed splits ``TR``/``TE``
  (1-based document indices, one row per fold);
- one-fold: ``xtr``/``xte``, ``BOW_xtr``/``BOW_xte``, ``ytr``/``yte`` (word strings, if
  any, in ``words_tr``/``words_te``).

Everything is validated before anything is written, so a bad file leaves no output.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import struct
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core import schemas
from ..core.errors import WmdevalError
from ..core.io import write_table
from .corpora import documents_table, splits_table
from .embeddings import embeddings_table

log = logging.getLogger("wmdeval.ingest.kusner")

FIVE_FOLD_FIELDS = ("X", "BOW_X", "Y", "TR", "TE")
ONE_FOLD_FIELDS = ("xtr", "xte", "BOW_xtr", "BOW_xte", "ytr", "yte")
LAYOUTS = {"five-fold": FIVE_FOLD_FIELDS, "one-fold": ONE_FOLD_FIELDS}
STRING_FIELDS = ("words", "words_tr", "words_te")

#: A vector counts as unit length within this tolerance (files may store float32).
UNIT_NORM_TOLERANCE = 1e-3
#: How many conflicting words are logged one by one before only the total is reported.
CONFLICTS_LOGGED = 10

#: The one-row ingest report (``ingest/report.parquet``).
REPORT = pa.schema(
    [
        pa.field("dataset", pa.string()),
        pa.field("layout", pa.string()),
        pa.field("documents", pa.int64()),
        pa.field("folds", pa.int64()),
        pa.field("train_sizes", pa.list_(pa.int64())),
        pa.field("test_sizes", pa.list_(pa.int64())),
        pa.field("empty_documents", pa.int64()),
        pa.field("empty_doc_ids", pa.list_(pa.int64())),
        pa.field("word_identity", pa.string()),
        pa.field("word_identity_note", pa.string()),
        pa.field("vocabulary", pa.int64()),
        pa.field("vocabulary_by_vectors", pa.int64()),
        pa.field("conflicting_words", pa.int64()),
        pa.field("repeated_words_merged", pa.int64()),
        pa.field("dim", pa.int64()),
        pa.field("stored_dtype", pa.string()),
        pa.field("norm_min", pa.float64()),
        pa.field("norm_median", pa.float64()),
        pa.field("norm_max", pa.float64()),
        pa.field("unit_norm_fraction", pa.float64()),
        pa.field("normalized", pa.bool_()),
    ]
)


@dataclass
class KusnerData:
    """A parsed file: tables, the vocabulary (sorted) with its vectors, and the report."""

    documents: pa.Table
    splits: pa.Table
    words: list[str]
    vectors: np.ndarray  # float64 [len(words), dim], row i is the vector of words[i], as stored
    report: dict


@dataclass
class _Source:
    """Where one document lives in the file: its cells and MATLAB-style names."""

    x_name: str
    bow_name: str
    vectors: np.ndarray
    counts: np.ndarray
    strings: list[str] | None


# ---------------------------------------------------------------------------- reading
def _load_mat(path: Path) -> dict:
    """The fields of a .mat file that this module knows, loaded with scipy's defaults."""
    from scipy.io import loadmat, whosmat

    if not path.exists():
        raise WmdevalError(f"{path}: file not found")
    with _readable(path):
        present = {name for name, _, _ in whosmat(str(path))}
        wanted = [n for n in (*FIVE_FOLD_FIELDS, *ONE_FOLD_FIELDS, *STRING_FIELDS) if n in present]
        # Loading only the known fields keeps memory down if a file carries extras.
        return loadmat(str(path), variable_names=wanted) if wanted else {}


@contextlib.contextmanager
def _readable(path: Path) -> Iterator[None]:
    """Turn scipy's errors while reading ``path`` into one-line WmdevalErrors."""
    try:
        yield
    except NotImplementedError:
        raise WmdevalError(
            f"{path}: MATLAB v7.3 (HDF5) .mat files are not supported; re-save it with -v7"
        ) from None
    except Exception as exc:  # scipy raises several unrelated types for a corrupt file
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WmdevalError(f"{path}: not a readable .mat file ({first})") from None


def mat_documents(path) -> int:
    """Documents of a Kusner .mat file, from its header alone (``scipy.io.whosmat`` reads
    the shapes of its fields without loading them): the cells of ``X`` (five-fold), or of
    ``xtr`` and ``xte`` (one-fold). Cheap enough for every dry run of a 1 GB file."""
    from scipy.io import whosmat

    path = Path(path)
    with _readable(path):
        shapes = {name: shape for name, shape, _ in whosmat(str(path))}
    fields = {"five-fold": ("X",), "one-fold": ("xtr", "xte")}[detect_layout(set(shapes), path)]
    return sum(int(np.prod(shapes[field])) for field in fields)


#: Compressed bytes of a -v7 file's first element inflated to estimate its compression ratio.
RATIO_PROBE_BYTES = 4 << 20


def mat_loaded_mb(path) -> float:
    """MB a .mat file's data takes once inflated: its size, times the compression ratio of
    a prefix of its first element if compressed (MATLAB's -v7 default compresses every
    element; scipy's savemat does not). Reads a few MB, whatever the file's size."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as stream:
        header = stream.read(136)  # 116 text, 8 subsystem, 2 version, 2 endian; a tag
    if len(header) < 136 or header[126:128] not in (b"IM", b"MI"):
        return size / 1e6  # not a v5 file: ingest says what is wrong with it
    order = "<" if header[126:128] == b"IM" else ">"
    data_type, _ = struct.unpack(f"{order}II", header[128:136])
    if data_type != 15:  # miCOMPRESSED
        return size / 1e6
    with path.open("rb") as stream:
        stream.seek(136)
        compressed = stream.read(RATIO_PROBE_BYTES)
    inflater = zlib.decompressobj()
    try:
        inflated = len(inflater.decompress(compressed, 16 * RATIO_PROBE_BYTES))
    except zlib.error:
        return size / 1e6
    consumed = len(compressed) - len(inflater.unconsumed_tail)
    return size * max(inflated / max(consumed, 1), 1.0) / 1e6


def detect_layout(keys: set[str], path: Path) -> str:
    """'five-fold' or 'one-fold'; a file with neither full set of fields is an error."""
    for layout, fields in LAYOUTS.items():
        if set(fields) <= keys:
            return layout
    present = {layout: sum(f in keys for f in fields) for layout, fields in LAYOUTS.items()}
    if not any(present.values()):
        needs = "; ".join(
            f"{layout} layout needs {', '.join(fields)}" for layout, fields in LAYOUTS.items()
        )
        raise WmdevalError(f"{path}: not a Kusner .mat file: none of the fields present ({needs})")
    # Name what is missing from the layout the file most resembles.
    layout = max(LAYOUTS, key=lambda name: present[name])
    fields = LAYOUTS[layout]
    missing = [f for f in fields if f not in keys]
    plural = "s" if len(missing) > 1 else ""
    names = ", ".join(repr(f) for f in missing)
    raise WmdevalError(
        f"{path}: missing field{plural} {names} ({layout} layout needs {', '.join(fields)})"
    )


def _cells(contents: dict, field: str, path: Path) -> list:
    """The elements of a MATLAB cell array (1 x n object array after loadmat), in order."""
    value = contents[field]
    if not isinstance(value, np.ndarray) or value.dtype != object:
        raise WmdevalError(f"{path}: field {field!r} is not a cell array")
    return list(value.ravel(order="F"))


def _is_numeric(array: np.ndarray) -> bool:
    return array.dtype.kind in "fiub"


def _integer_values(value, field: str, path: Path) -> np.ndarray:
    """A numeric array (any shape) as int64; floats must be integer-valued."""
    array = np.asarray(value)
    if array.dtype == object or not _is_numeric(array):
        raise WmdevalError(f"{path}: field {field!r} must be numeric, found {array.dtype}")
    array = array.ravel(order="F")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if bad.any():
            raise WmdevalError(
                f"{path}: field {field!r} has a non-integer value "
                f"{array[np.flatnonzero(bad)[0]].item()!r}"
            )
    return array.astype(np.int64)


def _labels(contents: dict, field: str, n: int, path: Path) -> list[str]:
    values = _integer_values(contents[field], field, path)
    if values.size != n:
        raise WmdevalError(f"{path}: field {field!r} has {values.size} labels for {n} documents")
    return [str(int(v)) for v in values]


def _word_strings(cell) -> list[str] | None:
    """One document's word strings (a 1 x u cell of char arrays), or None if unusable."""
    array = np.asarray(cell)
    if array.size == 0:
        return []
    if array.dtype.kind == "U":  # a lone char array rather than a cell of them
        items = [array]
    elif array.dtype == object:
        items = [np.asarray(item) for item in array.ravel(order="F")]
    else:
        return None
    words = []
    for item in items:
        if item.dtype.kind != "U" or item.size != 1 or not str(item.item()):
            return None
        words.append(str(item.item()))
    return words


def _string_lists(
    contents: dict, fields: list[str], counts: list[int], path: Path
) -> tuple[list[list[str]] | None, str]:
    """Per-document word strings of ``fields`` (one cell array per document group) if they
    are present and match every document's vector count; else (None, why not)."""
    missing = [f for f in fields if f not in contents]
    if missing:
        return None, f"no word strings in the file (field {missing[0]!r} absent)"
    strings: list[list[str] | None] = []
    for field in fields:
        value = contents[field]
        if not isinstance(value, np.ndarray) or value.dtype != object:
            return None, f"field {field!r} is not a cell array"
        strings.extend(_word_strings(cell) for cell in value.ravel(order="F"))
    if len(strings) != len(counts):
        return None, f"the word strings cover {len(strings)} documents, not {len(counts)}"
    for doc_id, (words, u) in enumerate(zip(strings, counts, strict=True)):
        if words is None or len(words) != u:
            found = "unreadable strings" if words is None else f"{len(words)} strings"
            return None, (f"document {doc_id} has {found} for {u} vectors")
    return strings, "word strings from the file"


def _column_count(cell) -> int:
    array = np.asarray(cell)
    return 0 if array.size == 0 or array.ndim < 2 else int(array.shape[1])


def _five_fold_sources(contents: dict, path: Path) -> tuple[list[_Source], list[str], str]:
    vectors = _cells(contents, "X", path)
    counts = _cells(contents, "BOW_X", path)
    if len(counts) != len(vectors):
        raise WmdevalError(
            f"{path}: field 'BOW_X' has {len(counts)} documents, 'X' has {len(vectors)}"
        )
    strings, note = _string_lists(contents, ["words"], [_column_count(c) for c in vectors], path)
    sources = [
        _Source(f"X{{{k + 1}}}", f"BOW_X{{{k + 1}}}", x, bow, strings[k] if strings else None)
        for k, (x, bow) in enumerate(zip(vectors, counts, strict=True))
    ]
    labels = _labels(contents, "Y", len(sources), path)
    return sources, labels, note


def _one_fold_sources(contents: dict, path: Path) -> tuple[list[_Source], list[str], str, int]:
    """Training documents first, then test documents; also returns the training count."""
    groups = []
    for part in ("tr", "te"):
        vectors = _cells(contents, f"x{part}", path)
        counts = _cells(contents, f"BOW_x{part}", path)
        if len(counts) != len(vectors):
            raise WmdevalError(
                f"{path}: field 'BOW_x{part}' has {len(counts)} documents, "
                f"'x{part}' has {len(vectors)}"
            )
        groups.append((part, vectors, counts, _labels(contents, f"y{part}", len(vectors), path)))
    columns = [_column_count(c) for _, vectors, _, _ in groups for c in vectors]
    strings, note = _string_lists(contents, ["words_tr", "words_te"], columns, path)
    sources, labels = [], []
    for part, vectors, counts, part_labels in groups:
        for k, (x, bow) in enumerate(zip(vectors, counts, strict=True)):
            words = strings[len(sources)] if strings else None
            sources.append(_Source(f"x{part}{{{k + 1}}}", f"BOW_x{part}{{{k + 1}}}", x, bow, words))
        labels.extend(part_labels)
    return sources, labels, note, len(groups[0][1])


# -------------------------------------------------------------------------- documents
def _document_vectors(source: _Source, doc_id: int, dim: int, path: Path) -> np.ndarray:
    """A document's vectors as a float64 [u, dim] array (u = 0 for an empty document)."""
    where = f"{path}: {source.x_name} (doc_id {doc_id})"
    matrix = np.asarray(source.vectors)
    if matrix.dtype == object or not _is_numeric(matrix):
        raise WmdevalError(f"{where}: expected a numeric matrix, found {matrix.dtype}")
    if matrix.size == 0:
        return np.zeros((0, dim), dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != dim:
        raise WmdevalError(
            f"{where}: expected a {dim} x u matrix of word vectors, found shape {matrix.shape}"
        )
    # One row per word, contiguous, so a row's bytes identify the vector.
    rows = np.ascontiguousarray(matrix.T, dtype=np.float64)
    if not np.isfinite(rows).all():
        raise WmdevalError(f"{where}: word vectors contain NaN or infinite values")
    return rows


def _document_counts(source: _Source, doc_id: int, words: int, path: Path) -> np.ndarray:
    where = f"{path}: {source.bow_name} (doc_id {doc_id})"
    counts = np.asarray(source.counts)
    if counts.dtype == object or not _is_numeric(counts):
        raise WmdevalError(f"{where}: expected numeric word counts, found {counts.dtype}")
    counts = counts.astype(np.float64).ravel(order="F")
    if counts.size != words:
        raise WmdevalError(
            f"{where}: {counts.size} counts but {source.x_name} has {words} word vectors"
        )
    bad = ~np.isfinite(counts) | (counts <= 0)
    if bad.any():
        raise WmdevalError(
            f"{where}: count {counts[np.flatnonzero(bad)[0]].item()!r} is not finite and > 0"
        )
    return counts


def vector_name(row: np.ndarray) -> str:
    """The synthetic name of a word known only by its float64 vector."""
    return "vec:" + hashlib.sha1(row.tobytes()).hexdigest()[:16]


class _Vocabulary:
    """Assigns each word occurrence a word id; remembers each word's first vector.

    By strings, the key of an occurrence is its string; by vectors, the exact bytes of its
    float64 vector (so equal keys are equal vectors, whatever the hash of the name).
    """

    def __init__(self, by_strings: bool, path: Path):
        self.by_strings = by_strings
        self.path = path
        self.names: list[str] = []
        self.rows: list[np.ndarray] = []
        self.ids: dict[str | bytes, int] = {}
        self.synthetic_names: set[str] = set()
        # Only needed by strings: how many distinct vectors the published code would see.
        self.distinct_vectors: set[bytes] = set()
        self.conflicts: set[int] = set()

    def identify(self, vectors: np.ndarray, strings: list[str] | None, doc_id: int) -> list[int]:
        word_ids = []
        for position, row in enumerate(vectors):
            if self.by_strings:
                self.distinct_vectors.add(row.tobytes())
                key: str | bytes = strings[position]
            else:
                key = row.tobytes()
            word_id = self.ids.get(key)
            if word_id is None:
                word_id = self._add(key, row)
            word_ids.append(word_id)
        if self.by_strings and word_ids:
            self._check_same_vectors(vectors, word_ids, doc_id)
        return word_ids

    def vocabulary_by_vectors(self) -> int:
        return len(self.distinct_vectors) if self.by_strings else len(self.names)

    def _add(self, key: str | bytes, row: np.ndarray) -> int:
        if self.by_strings:
            name = key
        else:
            name = vector_name(row)
            if name in self.synthetic_names:
                # Two different vectors with the same 64-bit hash prefix: never expected.
                raise WmdevalError(f"{self.path}: synthetic word name {name} is ambiguous")
            self.synthetic_names.add(name)
        word_id = len(self.names)
        self.ids[key] = word_id
        self.names.append(name)
        # A copy, so the document's converted matrix can be freed.
        self.rows.append(row.copy())
        return word_id

    def _check_same_vectors(self, vectors: np.ndarray, word_ids: list[int], doc_id: int) -> None:
        """Warn when a word's vector here differs from its first vector (the first is kept)."""
        first = np.stack([self.rows[i] for i in word_ids])
        differs = (first != vectors).any(axis=1)
        for position in np.flatnonzero(differs):
            word_id = word_ids[position]
            if word_id in self.conflicts:
                continue
            self.conflicts.add(word_id)
            if len(self.conflicts) <= CONFLICTS_LOGGED:
                log.warning(
                    "%s: word %r has a different vector in doc_id %d than where it "
                    "first occurs; keeping the first",
                    self.path,
                    self.names[word_id],
                    doc_id,
                )

    def matrix(self, dim: int) -> np.ndarray:
        return np.stack(self.rows) if self.rows else np.zeros((0, dim), dtype=np.float64)


def _dimension(sources: list[_Source], path: Path) -> tuple[int, str]:
    """Embedding dimension and stored dtype, from the first document with words."""
    for doc_id, source in enumerate(sources):
        matrix = np.asarray(source.vectors)
        if matrix.size and matrix.dtype != object and matrix.ndim == 2:
            return int(matrix.shape[0]), str(matrix.dtype)
        if matrix.size:
            raise WmdevalError(
                f"{path}: {source.x_name} (doc_id {doc_id}): expected a "
                f"dim x u numeric matrix, found {matrix.dtype} {matrix.shape}"
            )
    raise WmdevalError(f"{path}: no document has any word vectors")


def _bags(
    sources: list[_Source], vocabulary: _Vocabulary, dim: int, path: Path
) -> tuple[list[Counter], int]:
    """Per document its bag {word name: count}; also how many repeated words were merged."""
    bags, merged = [], 0
    for doc_id, source in enumerate(sources):
        vectors = _document_vectors(source, doc_id, dim, path)
        counts = _document_counts(source, doc_id, len(vectors), path)
        bag: Counter = Counter()
        for word_id, count in zip(
            vocabulary.identify(vectors, source.strings, doc_id), counts.tolist(), strict=True
        ):
            # A word listed twice in one document (not expected) keeps its total count.
            merged += vocabulary.names[word_id] in bag
            bag[vocabulary.names[word_id]] += count
        bags.append(bag)
    return bags, merged


# ----------------------------------------------------------------------------- splits
def _index_rows(contents: dict, field: str, n: int, path: Path) -> list[np.ndarray]:
    """The rows of a TR/TE field as 0-based document ids, one array per fold."""
    value = contents[field]
    if isinstance(value, np.ndarray) and value.dtype == object:
        # Rows of unequal length: a cell array, one row vector per fold.
        raw_rows = list(value.ravel(order="F"))
    else:
        array = np.asarray(value)
        raw_rows = [array] if array.ndim <= 1 else list(array)
        if array.ndim > 2:
            raise WmdevalError(f"{path}: field {field!r} must be a matrix, found {array.shape}")
    rows = []
    for row_number, raw in enumerate(raw_rows, 1):
        indices = _integer_values(raw, field, path)
        outside = (indices < 1) | (indices > n)
        if outside.any():
            raise WmdevalError(
                f"{path}: {field} index {indices[np.flatnonzero(outside)[0]]} out of range 1..{n}"
            )
        unique, times = np.unique(indices, return_counts=True)
        if (times > 1).any():
            raise WmdevalError(
                f"{path}: {field} row {row_number} lists document "
                f"{unique[np.flatnonzero(times > 1)[0]]} more than once"
            )
        rows.append(indices - 1)
    return rows


def _five_fold_splits(contents: dict, n: int, path: Path) -> pa.Table:
    train_rows = _index_rows(contents, "TR", n, path)
    test_rows = _index_rows(contents, "TE", n, path)
    if len(train_rows) != len(test_rows):
        raise WmdevalError(
            f"{path}: field 'TR' has {len(train_rows)} folds, 'TE' has {len(test_rows)}"
        )
    folds, doc_ids, subsets = [], [], []
    for fold, (train, test) in enumerate(zip(train_rows, test_rows, strict=True)):
        both = np.intersect1d(train, test)
        if both.size:
            raise WmdevalError(
                f"{path}: document {both[0] + 1} (doc_id {both[0]}) is in both "
                f"TR and TE of row {fold + 1} (fold {fold})"
            )
        for subset, members in (("train", np.sort(train)), ("test", np.sort(test))):
            folds.extend([fold] * members.size)
            doc_ids.extend(members.tolist())
            subsets.extend([subset] * members.size)
    return splits_table(folds, doc_ids, subsets)


def _one_fold_splits(n_train: int, n: int) -> pa.Table:
    subsets = ["train"] * n_train + ["test"] * (n - n_train)
    return splits_table([0] * n, list(range(n)), subsets)


def _split_sizes(splits: pa.Table) -> tuple[list[int], list[int]]:
    folds = splits.column("fold").to_numpy()
    is_train = np.asarray(splits.column("subset").to_pylist()) == "train"
    fold_values = np.unique(folds)
    train = [int((is_train & (folds == f)).sum()) for f in fold_values]
    test = [int((~is_train & (folds == f)).sum()) for f in fold_values]
    return train, test


def _check_classes(
    labels: list[str], train_sizes: list[int], test_sizes: list[int], layout: str, path: Path
) -> None:
    """One label, or a fold with fewer than two training documents (kNN tunes k on a
    validation part of them) or no test document, is an error: no result would mean
    anything."""
    if len(set(labels)) < 2:
        fields = "'Y'" if layout == "five-fold" else "'ytr' and 'yte'"
        raise WmdevalError(
            f"{path}: field {fields} holds one label ({labels[0]}) for all {len(labels)}"
            " documents; classification needs at least two"
        )
    for fold, (n_train, n_test) in enumerate(zip(train_sizes, test_sizes, strict=True)):
        if n_train < 2 or n_test < 1:
            raise WmdevalError(
                f"{path}: fold {fold} has {n_train} training and {n_test} test document(s);"
                " expected at least 2 and 1"
            )


# ------------------------------------------------------------------------------ entry
def read_kusner_mat(path) -> KusnerData:
    """Parse and validate a Kusner et al. .mat file (either layout)."""
    path = Path(path)
    contents = _load_mat(path)
    layout = detect_layout(set(contents), path)
    if layout == "five-fold":
        sources, labels, note = _five_fold_sources(contents, path)
        splits = _five_fold_splits(contents, len(sources), path)
    else:
        sources, labels, note, n_train = _one_fold_sources(contents, path)
        splits = _one_fold_splits(n_train, len(sources))
    by_strings = all(source.strings is not None for source in sources)
    if not by_strings:
        note = f"{note}; words identified by their vectors"

    train_sizes, test_sizes = _split_sizes(splits)
    _check_classes(labels, train_sizes, test_sizes, layout, path)
    dim, stored_dtype = _dimension(sources, path)
    vocabulary = _Vocabulary(by_strings, path)
    bags, merged = _bags(sources, vocabulary, dim, path)
    documents = documents_table(bags, labels)

    order = sorted(range(len(vocabulary.names)), key=vocabulary.names.__getitem__)
    words = [vocabulary.names[i] for i in order]
    vectors = vocabulary.matrix(dim)[order]
    norms = np.linalg.norm(vectors, axis=1)
    empty = [doc_id for doc_id, bag in enumerate(bags) if not bag]
    report = {
        "layout": layout,
        "documents": len(bags),
        "folds": len(train_sizes),
        "train_sizes": train_sizes,
        "test_sizes": test_sizes,
        "empty_documents": len(empty),
        "empty_doc_ids": empty,
        "word_identity": "strings" if by_strings else "vectors",
        "word_identity_note": note,
        "vocabulary": len(words),
        "vocabulary_by_vectors": vocabulary.vocabulary_by_vectors(),
        "conflicting_words": len(vocabulary.conflicts),
        "repeated_words_merged": int(merged),
        "dim": dim,
        "stored_dtype": stored_dtype,
        "norm_min": float(norms.min()) if norms.size else float("nan"),
        "norm_median": float(np.median(norms)) if norms.size else float("nan"),
        "norm_max": float(norms.max()) if norms.size else float("nan"),
        "unit_norm_fraction": (
            float(np.mean(np.abs(norms - 1) <= UNIT_NORM_TOLERANCE)) if norms.size else float("nan")
        ),
    }
    if vocabulary.conflicts:
        log.warning(
            "%s: %d words have differing vectors across documents; the first "
            "occurrence's vector is used",
            path,
            len(vocabulary.conflicts),
        )
    return KusnerData(documents, splits, words, vectors, report)


def _normalized(words: list[str], vectors: np.ndarray, norms: np.ndarray, path: Path) -> np.ndarray:
    zero = norms == 0
    if zero.any():
        word = words[int(np.flatnonzero(zero)[0])]
        raise WmdevalError(f"{path}: vector of {word!r} is all zeros, cannot normalise")
    return vectors / norms[:, None]


def run_kusner(
    path, normalize: bool, documents_out, splits_out, embeddings_out, report_out, dataset: str
) -> None:
    """Read a .mat file and write DOCUMENTS, SPLITS, the embeddings table and a report."""
    path = Path(path)
    data = read_kusner_mat(path)
    norms = np.linalg.norm(data.vectors, axis=1)
    matrix = _normalized(data.words, data.vectors, norms, path) if normalize else data.vectors
    embeddings = embeddings_table(data.words, matrix, norms)
    report = pa.Table.from_pylist(
        [{"dataset": dataset, **data.report, "normalized": bool(normalize)}], schema=REPORT
    )
    log.info(
        "%s: %s, %d documents, %d folds, %d empty, vocabulary %d (%s), dim %d, "
        "norms min %.4g median %.4g max %.4g",
        path,
        data.report["layout"],
        data.report["documents"],
        data.report["folds"],
        data.report["empty_documents"],
        data.report["vocabulary"],
        data.report["word_identity"],
        data.report["dim"],
        data.report["norm_min"],
        data.report["norm_median"],
        data.report["norm_max"],
    )
    # Every table is built (and so validated) above; only now is anything written.
    write_table(data.documents, documents_out, schemas.DOCUMENTS)
    write_table(data.splits, splits_out, schemas.SPLITS)
    write_table(embeddings, embeddings_out)
    write_table(report, report_out, REPORT)
