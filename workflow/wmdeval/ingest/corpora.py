"""Ingest: a source corpus -> the DOCUMENTS and SPLITS tables.

Sources: the real labelled corpora shipped inside the gensim wheel (the offline demo:
20 Newsgroups post bodies or their Subject lines, Pang & Lee sentences), and user text
tables (CSV, TSV, JSON Lines, Parquet). Raw text is tokenised like Kusner et al.:
lowercase, letters only, stop words dropped.
"""

from __future__ import annotations

import codecs
import copyreg
import io as _io
import math
import pickle
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa

from ..core import schemas
from ..core.errors import WmdevalError
from ..core.io import write_table
from ..core.roles import shuffle_split

# Named stop-word lists ship as package data, so any install of wmdeval (a wheel too) has them.
STOPWORD_LISTS = {"kusner115": resources.files("wmdeval") / "data" / "stopwords" / "kusner115.txt"}
_LETTERS = re.compile(r"[a-z]+")


# --------------------------------------------------------------------------- tokenising
def load_stopwords(choice: str) -> frozenset[str]:
    """'kusner115', 'none', or a path to a file with one word per line."""
    if choice == "none":
        return frozenset()
    path = STOPWORD_LISTS.get(choice, Path(choice))
    if not path.is_file():
        raise WmdevalError(f"{path}: stop-word list not found (stopwords: {choice!r})")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object.count(b"\n", 0, exc.start) + 1
        raise WmdevalError(f"{path}: line {line}: stop-word list is not UTF-8 text") from None
    return frozenset(w.strip().lower() for w in text.split() if w.strip())


def tokenize(text: str, stopwords: frozenset[str]) -> list[str]:
    """Lowercase, keep runs of ASCII letters, drop stop words."""
    return [t for t in _LETTERS.findall(text.lower()) if t not in stopwords]


# ------------------------------------------------------------------ the bundled corpora
def _gensim_data(name: str) -> Path:
    from gensim.test.utils import datapath

    path = Path(datapath(name))
    if not path.exists():
        raise WmdevalError(f"{path}: bundled gensim corpus {name!r} not found")
    return path


class _NewsgroupUnpickler(pickle.Unpickler):
    """Loads the Python 2 pickle of an old scikit-learn Bunch and nothing else.

    Only the globals this one file needs are resolved; anything else (a tampered file)
    is refused, so unpickling cannot run arbitrary code.
    """

    @staticmethod
    def _allowed() -> dict[tuple[str, str], object]:
        multiarray = getattr(np, "_core", None) or np.core
        return {
            ("copy_reg", "_reconstructor"): copyreg._reconstructor,
            ("sklearn.datasets.base", "Bunch"): dict,
            ("__builtin__", "dict"): dict,
            ("numpy.core.multiarray", "_reconstruct"): multiarray.multiarray._reconstruct,
            ("numpy", "ndarray"): np.ndarray,
            ("numpy", "dtype"): np.dtype,
        }

    def find_class(self, module: str, name: str):
        try:
            return self._allowed()[(module, name)]
        except KeyError:
            raise WmdevalError(f"mini_newsgroup: refusing to unpickle {module}.{name}") from None


def strip_news_headers(post: str) -> str:
    """The body of a Usenet post: everything after the first blank line.

    The headers name the newsgroup, i.e. the label; keeping them would leak it.
    """
    head, sep, body = post.partition("\n\n")
    return body if sep else post


def news_header(post: str, field: str) -> str | None:
    """The value of header ``field`` of a Usenet post, or None when it has none.

    Only the header block (up to the first blank line) is searched. Field names are
    case-insensitive and a folded header (continuation lines starting with a space or tab)
    is joined with single spaces, as RFC 5322 defines them.
    """
    head = post.partition("\n\n")[0]
    for line in re.sub(r"\n[ \t]+", " ", head).splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == field.lower():
            return value.strip()
    return None


def _mini_newsgroup_posts() -> tuple[list[str], list[str]]:
    """The 200 raw posts (headers included) and their newsgroups."""
    path = _gensim_data("mini_newsgroup")
    raw = zlib.decompress(path.read_bytes())
    bunch = _NewsgroupUnpickler(_io.BytesIO(raw), encoding="latin1").load()
    names = list(bunch["target_names"])
    return list(bunch["data"]), [names[int(t)] for t in bunch["target"]]


def load_mini_newsgroup() -> tuple[list[str], list[str]]:
    posts, labels = _mini_newsgroup_posts()
    return [strip_news_headers(p) for p in posts], labels


def load_mini_newsgroup_subjects() -> tuple[list[str], list[str]]:
    """The Subject lines of the same 200 posts: short texts labelled by their newsgroup.

    Replies keep their thread's subject, so the corpus holds real duplicates, as the
    paper's short-text datasets do.
    """
    posts, labels = _mini_newsgroup_posts()
    subjects = []
    for number, post in enumerate(posts, 1):
        subject = news_header(post, "Subject")
        if subject is None:
            raise WmdevalError(f"mini_newsgroup: post {number}: no Subject header")
        subjects.append(subject)
    return subjects, labels


def load_pang_lee_polarity() -> tuple[list[str], list[str]]:
    path = _gensim_data("pang_lee_polarity.cor")
    # The file is not UTF-8 (Windows-1252 punctuation); only ASCII letters are kept anyway.
    texts, labels = [], []
    for number, line in enumerate(path.read_text(encoding="latin-1").splitlines(), 1):
        if not line.strip():
            continue
        tag, _, text = line.partition(" ")
        if not tag.startswith("__label__"):
            raise WmdevalError(f"{path}: line {number}: expected '__label__<name> <text>'")
        labels.append(tag.removeprefix("__label__"))
        texts.append(text)
    return texts, labels


DEMO_SOURCES = {
    "mini_newsgroup": load_mini_newsgroup,
    "mini_newsgroup_subjects": load_mini_newsgroup_subjects,
    "pang_lee_polarity": load_pang_lee_polarity,
}


# -------------------------------------------------------------------------- text tables
#: A table's text is read in this encoding unless its dataset's `encoding:` names another.
DEFAULT_ENCODING = "utf-8"


def _table_bytes(path: Path, encoding: str) -> bytes:
    """The UTF-8 bytes of a text table (CSV, TSV, JSON Lines; gzip-compressed too) whose
    file is in ``encoding``: a byte that does not decode is an error naming its line,
    never text guessed from it."""
    import gzip

    try:
        data = path.read_bytes()
        if path.suffix.lower() == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError) as exc:
        raise WmdevalError(f"{path}: cannot read ({exc})") from None
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise WmdevalError(
            f"{path}: line {line}: byte {data[exc.start : exc.start + 1]!r} is not {encoding}"
            " text (set the dataset's `encoding:`, e.g. latin-1, to the file's encoding)"
        ) from None
    return data if codecs.lookup(encoding).name == "utf-8" else text.encode("utf-8")


def _column_strings(table: pa.Table, column: str, path: Path, encoding: str) -> list:
    """A column's values as str (None stays None). Binary values (a Parquet column of
    bytes) are decoded in ``encoding``, one that does not decode is an error naming its
    row: never ``str(bytes)``."""
    values = table.column(column).to_pylist()
    out = []
    for row, value in enumerate(values):
        if isinstance(value, bytes):
            try:
                value = value.decode(encoding)
            except UnicodeDecodeError:
                raise WmdevalError(
                    f"{path}: row {row + 1}: column {column!r} is not {encoding} text (set the"
                    " dataset's `encoding:`, e.g. latin-1, to the file's encoding)"
                ) from None
        out.append(value if value is None else str(value))
    return out


def read_text_table(
    path: Path,
    text_column: str,
    label_column: str,
    split_column: str | None,
    encoding: str = DEFAULT_ENCODING,
) -> tuple[list[str], list[str], list[str] | None]:
    """Read texts, labels and optional train/test values from CSV/TSV/JSONL/Parquet.

    Text is decoded in ``encoding``; labels and train/test values lose surrounding
    whitespace. A table without rows, a header naming a column it reads twice, and an
    empty label are errors naming the file."""
    import pyarrow.csv as pcsv
    import pyarrow.json as pjson
    import pyarrow.parquet as pq

    if not path.exists():
        raise WmdevalError(f"{path}: file not found")
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise WmdevalError(f"{path}: unknown encoding {encoding!r} (`encoding:`)") from None
    suffixes = "".join(path.suffixes[-2:]).lower()
    is_text = path.suffix.lower() != ".parquet"
    try:
        if not is_text:
            table = pq.read_table(path)
        elif path.suffix.lower() in (".jsonl", ".ndjson") or suffixes.endswith(".jsonl.gz"):
            table = pjson.read_json(_io.BytesIO(_table_bytes(path, encoding)))
        elif path.suffix.lower() in (".tsv", ".tab") or suffixes.endswith(".tsv.gz"):
            table = _read_csv(pcsv, path, encoding, delimiter="\t")
        elif path.suffix.lower() == ".csv" or suffixes.endswith(".csv.gz"):
            table = _read_csv(pcsv, path, encoding, delimiter=",")
        else:
            raise WmdevalError(
                f"{path}: unknown table format (expected .csv, .tsv, .jsonl or .parquet)"
            )
    except pa.ArrowInvalid as exc:
        raise WmdevalError(f"{path}: cannot parse table ({str(exc).splitlines()[0]})") from None
    columns = [text_column, label_column] + ([split_column] if split_column else [])
    for column in columns:
        if column not in table.column_names:
            raise WmdevalError(
                f"{path}: no column {column!r} (columns: {', '.join(table.column_names)})"
            )
        if table.column_names.count(column) > 1:
            raise WmdevalError(
                f"{path}: column {column!r} appears {table.column_names.count(column)} times"
                " in the header (expected each column name once)"
            )
    if table.num_rows == 0:
        raise WmdevalError(f"{path}: no rows (expected one row per document)")

    texts = ["" if t is None else t for t in _column_strings(table, text_column, path, encoding)]
    labels = _column_strings(table, label_column, path, encoding)
    stripped = []
    for row, label in enumerate(labels):
        if label is None or not label.strip():
            raise WmdevalError(f"{path}: row {row + 1}: empty {label_column!r}")
        stripped.append(label.strip())
    splits = None
    if split_column:
        splits = [
            str(s).strip().lower() for s in _column_strings(table, split_column, path, encoding)
        ]
        bad = sorted(set(splits) - {"train", "test"})
        if bad:
            raise WmdevalError(
                f"{path}: column {split_column!r} must hold train/test, found {bad[0]!r}"
            )
    return texts, stripped, splits


def _read_csv(pcsv, path: Path, encoding: str, delimiter: str) -> pa.Table:
    data = _table_bytes(path, encoding)
    if not data.strip():
        raise WmdevalError(f"{path}: empty file (expected a header line, then a row per document)")
    return pcsv.read_csv(_io.BytesIO(data), parse_options=pcsv.ParseOptions(delimiter=delimiter))


# ------------------------------------------------------------------------------- tables
def label_order(names: Sequence[str]) -> list[str]:
    """Distinct label names in code order: by value when every name is a number (the
    Kusner files' labels 1..20, so 2 comes before 10 and kNN's tie rule, smallest label
    wins, means the smallest number), else alphabetically."""
    distinct = set(names)
    try:
        return sorted(distinct, key=lambda name: (float(name), name))
    except ValueError:
        return sorted(distinct)


def documents_table(bags: Sequence[Counter], labels: Sequence[str]) -> pa.Table:
    """Bags of words + labels -> DOCUMENTS (words sorted, label codes in
    :func:`label_order`)."""
    names = label_order(labels)
    code = {name: c for c, name in enumerate(names)}
    words = [sorted(bag) for bag in bags]
    counts = [[float(bag[w]) for w in ws] for bag, ws in zip(bags, words, strict=True)]
    return pa.table(
        {
            "doc_id": pa.array(np.arange(len(bags), dtype=np.int32)),
            "label": pa.array(list(labels), pa.string()),
            "y": pa.array([code[label] for label in labels], pa.int32()),
            "words": pa.array(words, pa.list_(pa.string())),
            "counts": pa.array(counts, pa.list_(pa.float64())),
        },
        schema=schemas.DOCUMENTS,
    )


def random_splits(n_docs: int, folds: int, test_size: float, seed: int) -> pa.Table:
    """``folds`` seeded random train/test splits of all documents (SPLITS)."""
    rows_fold, rows_doc, rows_subset = [], [], []
    for fold in range(folds):
        # sklearn's train_test_split(np.arange(n_docs), ...), without its import
        train, test = shuffle_split(n_docs, test_size, seed + fold)
        for subset, members in (("train", np.sort(train)), ("test", np.sort(test))):
            rows_fold.extend([fold] * len(members))
            rows_doc.extend(members.tolist())
            rows_subset.extend([subset] * len(members))
    return splits_table(rows_fold, rows_doc, rows_subset)


def fixed_split(subsets: Iterable[str]) -> pa.Table:
    """One fold from per-document 'train'/'test' values (SPLITS)."""
    subsets = list(subsets)
    order = sorted(range(len(subsets)), key=lambda d: (subsets[d] != "train", d))
    return splits_table([0] * len(order), order, [subsets[d] for d in order])


def splits_table(folds: Sequence[int], doc_ids: Sequence[int], subsets: Sequence[str]) -> pa.Table:
    return pa.table(
        {
            "fold": pa.array(folds, pa.int16()),
            "doc_id": pa.array(doc_ids, pa.int32()),
            "subset": pa.array(subsets, pa.string()),
        },
        schema=schemas.SPLITS,
    )


# ----------------------------------------------------------------------------- entry
def load_texts(spec: dict) -> tuple[list[str], list[str], list[str] | None]:
    """(texts, labels, train/test values or None) of a raw-text dataset spec."""
    if spec["format"] == "demo":
        texts, labels = DEMO_SOURCES[spec["source"]]()
        return texts, labels, None
    if spec["format"] == "table":
        return read_text_table(
            Path(spec["path"]),
            spec["text_column"],
            spec["label_column"],
            spec.get("split_column"),
            spec.get("encoding") or DEFAULT_ENCODING,
        )
    raise WmdevalError(f"format {spec['format']!r} has no raw text")


def tokenized_corpus(spec: dict) -> list[list[str]]:
    """The dataset's documents as token lists (used to train demo embeddings)."""
    stopwords = load_stopwords(spec["stopwords"])
    texts, _, _ = load_texts(spec)
    return [tokenize(t, stopwords) for t in texts]


def source_name(spec: dict) -> str:
    """What an error about a dataset's texts names: the user's file, or the bundled corpus."""
    return spec["path"] if spec["format"] == "table" else f"bundled corpus {spec.get('source')!r}"


def check_corpus(
    spec: dict, labels: Sequence[str], subsets: Sequence[str] | None, has_words: bool
) -> None:
    """Refuse, naming the dataset's file, a corpus no result could be meaningful for: one
    label, no word in any document after tokenising (``has_words`` false), or a fold with
    fewer than two training documents (kNN tunes k on a validation part of them) or no
    test document."""
    source = source_name(spec)
    distinct = sorted(set(labels))
    if len(distinct) < 2:
        raise WmdevalError(
            f"{source}: column {spec.get('label_column', 'label')!r} holds one label"
            f" ({distinct[0]!r}) in all {len(labels)} rows; classification needs at least two"
        )
    if not has_words:
        raise WmdevalError(
            f"{source}: no document has a word after tokenising (letters a-z, stop words"
            f" {spec['stopwords']!r} dropped) in column {spec.get('text_column', 'text')!r}"
        )
    if subsets is not None:
        for subset, need in (("train", 2), ("test", 1)):
            if list(subsets).count(subset) < need:
                raise WmdevalError(
                    f"{source}: column {spec['split_column']!r} has"
                    f" {list(subsets).count(subset)} {subset} row(s); expected at least {need}"
                )
        return
    n_test = math.ceil(spec["test_size"] * len(labels))
    if len(labels) - n_test < 2:
        raise WmdevalError(
            f"{source}: {len(labels)} document(s) with test_size {spec['test_size']} leave"
            f" {len(labels) - n_test} for training; expected at least 2 (more rows, or a"
            " smaller test_size)"
        )


def check_texts(spec: dict) -> None:
    """What :func:`ingest` refuses, without building its tables: the whole table is read
    and decoded, but texts are tokenised only up to the first with a word (20
    Newsgroups' 31 MB table: 0.2 CPU-s, the whole ingest 4.7), for planning."""
    texts, labels, subsets = load_texts(spec)
    stopwords = load_stopwords(spec["stopwords"])
    check_corpus(spec, labels, subsets, any(tokenize(t, stopwords) for t in texts))


def ingest(spec: dict) -> tuple[pa.Table, pa.Table]:
    """A dataset spec (validated config entry) -> (DOCUMENTS, SPLITS); a corpus
    :func:`check_corpus` refuses is an error naming its file."""
    texts, labels, subsets = load_texts(spec)
    stopwords = load_stopwords(spec["stopwords"])
    bags = [Counter(tokenize(t, stopwords)) for t in texts]
    check_corpus(spec, labels, subsets, any(bags))
    documents = documents_table(bags, labels)
    if subsets is not None:
        splits = fixed_split(subsets)
    else:
        splits = random_splits(len(bags), spec["folds"], spec["test_size"], spec["split_seed"])
    return documents, splits


def run_ingest(spec: dict, documents_path: str, splits_path: str) -> None:
    documents, splits = ingest(spec)
    write_table(documents, documents_path, schemas.DOCUMENTS)
    write_table(splits, splits_path, schemas.SPLITS)
