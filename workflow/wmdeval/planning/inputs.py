"""Bad input that planning can see, so that it stops the run before any job, in one line.

``workflow/rules/common.smk`` calls these while Snakemake plans the run, for the datasets
of the run: a local text table is read and checked as its ingest job will check it, so
that an empty table, one label, a split without training or test rows, texts
that are all stop words or a byte that is not text stop the run naming the user's file
instead of failing in a later job under the name of an intermediate file; a PCA
dimension above the dimension of the embeddings, when the file's header or the trained
embeddings' `vector_size` gives it; and a callable method whose module is nowhere.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import WmdevalError

#: Embedding formats whose first line is "<words> <dimensions>".
_HEADED = ("word2vec-text", "word2vec-binary", "fasttext-vec")


def check_texts(spec: Mapping) -> None:
    """Check a dataset whose table is a local file (``path``, or a download already
    there) as its ingest job will (ingest/corpora.py, check_texts), raising its
    WmdevalError; nothing for a bundled corpus or a file not there yet (its job checks
    it). Cached per version of the files."""
    if spec.get("format") != "table" or not Path(spec.get("path", "")).is_file():
        return
    files = [spec["path"], str(spec.get("stopwords"))]
    versions = tuple(
        (f, os.stat(f).st_mtime_ns, os.stat(f).st_size) for f in files if Path(f).is_file()
    )
    _ingested(json.dumps(dict(spec), sort_keys=True), versions)


@functools.lru_cache(maxsize=16)
def _ingested(spec_json: str, versions: tuple) -> None:
    from ..ingest.corpora import check_texts

    check_texts(json.loads(spec_json))


def embedding_dimension(spec: Mapping, path: str) -> int | None:
    """Dimensions of an embedding as planning can know them: a trained one's
    ``vector_size``; a local file's header (word2vec, fastText .vec) or first vector
    (GloVe); else None (a file not there yet, or not read at planning)."""
    if spec["format"] == "train-word2vec":
        return spec["vector_size"]
    if not Path(path).is_file():
        return None
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as stream:
            first = stream.readline(1 << 20)
    except (OSError, EOFError):
        return None  # the lookup job reports an unreadable file
    fields = first.split()
    if spec["format"] in _HEADED:
        return int(fields[1]) if len(fields) == 2 and fields[1].isdigit() else None
    return len(fields) - 1 if len(fields) > 1 else None


def check_pca_dims(pca_dims: list[int], dimension: int | None, where: str) -> None:
    """A PCA dimension above the embedding's ``dimension`` (None: unknown) is an error."""
    too_large = [dim for dim in pca_dims if dimension is not None and dim > dimension]
    if too_large:
        raise WmdevalError(
            f"pca_dims: {too_large[0]} is above the {dimension} dimensions of {where}"
            f" (expected at most {dimension})"
        )


def check_callable_module(function: str) -> None:
    """A callable method ("module:function") whose top-level module is neither in the
    working directory, where its jobs run, nor installed is an error. Nothing of the
    user's code is imported while planning: its job reports any other failure."""
    module = function.split(":")[0]
    top = module.split(".")[0]
    if not top or Path(f"{top}.py").is_file() or Path(top, "__init__.py").is_file():
        return
    if top in sys.builtin_module_names or importlib.util.find_spec(top) is not None:
        return
    raise WmdevalError(
        f"no module {top!r} in the working directory ({Path.cwd()}) or the environment"
        f" (expected 'module:function', e.g. {top}.py here)"
    )
