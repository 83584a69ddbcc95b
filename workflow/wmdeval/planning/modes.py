"""Which WMD mode each dataset gets: ``wmd.mode: auto`` decided while planning.

``workflow/rules/common.smk`` calls :func:`dataset_mode` once per dataset while Snakemake
plans the run (so a dry run shows the decision before anything is downloaded). ``auto``
takes knn mode where a dataset's number of documents, known at planning time (a local
``.mat`` file's header, a table's lines or Parquet metadata), is at least
``wmd.auto_min_documents``: the neighbour search then saves most of the work (see
docs/performance.md), while below it a
full matrix is cheap and the search's share of solved pairs is large (long documents
loosen the bounds). A size unknown before download (a ``url:`` table) keeps full mode,
so that the plan does not change once the file arrives.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Mapping
from pathlib import Path

from ..core.errors import WmdevalError
from ..ingest.kusner import mat_documents

#: Documents of the eight corpora of Kusner et al., by .mat file (docs/protocol.md §2).
KUSNER_DOCUMENTS = {
    "bbcsport-emd_tr_te_split.mat": 737,
    "twitter-emd_tr_te_split.mat": 3108,
    "recipe2-emd_tr_te_split.mat": 4370,
    "ohsumed-emd_tr_te_ix.mat": 9152,
    "classic-emd_tr_te_split.mat": 7093,
    "r8-emd_tr_te3.mat": 7674,
    "amazon-emd_tr_te_split.mat": 8000,
    "20ng2_500-emd_tr_te.mat": 18821,
}


#: Distinct words per document of the same corpora, as the paper reports them (Table 1,
#: docs/protocol.md §2): the block and sample jobs' work before their documents exist.
KUSNER_WORDS = {
    "bbcsport-emd_tr_te_split.mat": 116.5,
    "twitter-emd_tr_te_split.mat": 9.9,
    "recipe2-emd_tr_te_split.mat": 48.3,
    "ohsumed-emd_tr_te_ix.mat": 60.2,
    "classic-emd_tr_te_split.mat": 38.7,
    "r8-emd_tr_te3.mat": 36.0,
    "amazon-emd_tr_te_split.mat": 44.6,
    "20ng2_500-emd_tr_te.mat": 69.3,
}


#: Folds of the same corpora (docs/protocol.md §2: five-fold or one-fold): the evaluate
#: jobs' work before their splits exist.
KUSNER_FOLDS = {
    "bbcsport-emd_tr_te_split.mat": 5,
    "twitter-emd_tr_te_split.mat": 5,
    "recipe2-emd_tr_te_split.mat": 5,
    "ohsumed-emd_tr_te_ix.mat": 1,
    "classic-emd_tr_te_split.mat": 5,
    "r8-emd_tr_te3.mat": 1,
    "amazon-emd_tr_te_split.mat": 5,
    "20ng2_500-emd_tr_te.mat": 1,
}


#: Documents of the demo corpora shipped with gensim (checked by tests/test_planning.py).
DEMO_DOCUMENTS = {"mini_newsgroup": 200, "mini_newsgroup_subjects": 200, "pang_lee_polarity": 200}


def planned_documents(spec: Mapping) -> tuple[int | None, str]:
    """(number of documents or None, how it is known) of one dataset's config entry.

    Cheap on purpose (it runs in every dry run), and read from the user's own file
    wherever one is local: a .mat file from its header (:func:`mat_documents`), a table
    from its Parquet metadata, else by its lines (minus the header of CSV/TSV), an
    estimate for texts that span lines. A demo corpus by its known size; a Kusner file
    not yet downloaded by its name (the paper's counts). Any other file not yet
    downloaded is unknown.
    """
    fmt = spec["format"]
    if fmt == "demo":
        return DEMO_DOCUMENTS[spec["source"]], "demo corpus"
    if spec.get("path") and Path(spec["path"]).is_file():
        path = Path(spec["path"])
        rows = _file_rows(str(path), path.stat().st_mtime_ns, fmt)
        how = "its .mat header" if fmt == "kusner-mat" else _how_counted(path)
        return rows, f"{path.name}: {how}"
    name = _file_name(spec)
    if fmt == "kusner-mat" and name in KUSNER_DOCUMENTS:
        return KUSNER_DOCUMENTS[name], f"the paper's count for {name}, docs/protocol.md §2"
    where = spec.get("url") or spec.get("path")
    return None, f"{name or where} is not downloaded while planning"


def planned_words(spec: Mapping) -> float | None:
    """Distinct words per document of one dataset's config entry as planned: the paper's
    figure for a Kusner file by its name (:data:`KUSNER_WORDS`), else None (unknown
    until its documents exist)."""
    if spec["format"] != "kusner-mat":
        return None
    return KUSNER_WORDS.get(_file_name(spec))


def planned_folds(spec: Mapping) -> int | None:
    """Folds of one dataset's config entry as planned: a paper corpus's by its file name
    (:data:`KUSNER_FOLDS`); a table's or the demo's seeded ``folds``, one with a
    ``split_column``; None for any other .mat file (unknown until it is ingested)."""
    if spec["format"] == "kusner-mat":
        return KUSNER_FOLDS.get(_file_name(spec))
    if spec.get("split_column"):
        return 1
    return spec.get("folds")


def _file_name(spec: Mapping) -> str:
    """The name of a dataset's file as its config entry gives it: the archive's member,
    else the URL's or the path's last part ("" if none)."""
    return Path(spec.get("member") or spec.get("url") or spec.get("path") or "").name


def _how_counted(path: Path) -> str:
    return "Parquet metadata" if path.suffix.lower() == ".parquet" else "lines of the file"


@functools.lru_cache(maxsize=64)
def _file_rows(path: str, mtime_ns: int, fmt: str) -> int:
    # Cached per file version: the mode and every resource estimate ask for the same file.
    if fmt == "kusner-mat":
        return mat_documents(path)
    return _table_rows(Path(path))


def _table_rows(path: Path) -> int:
    suffixes = "".join(path.suffixes[-2:]).lower()
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_metadata(path).num_rows
    opener = gzip.open if suffixes.endswith(".gz") else open
    lines = 0
    with opener(path, "rb") as stream:
        while chunk := stream.read(1 << 20):
            lines += chunk.count(b"\n")
    header = 0 if ".jsonl" in suffixes or ".ndjson" in suffixes else 1
    return max(lines - header, 0)


def dataset_mode(spec: Mapping, wmd: Mapping) -> tuple[str, str]:
    """("full" or "knn", why) for one dataset: its ``wmd_mode``, else ``wmd.mode``; ``auto``
    compares the planned documents with ``wmd.auto_min_documents``."""
    mode = spec.get("wmd_mode", wmd["mode"])
    if mode != "auto":
        return mode, "set in config"
    n, source = planned_documents(spec)
    threshold = wmd["auto_min_documents"]
    if n is None:
        # Full, so that the plan does not change once the file arrives.
        return "full", f"auto: size unknown ({source}), so full matrices"
    chosen = "knn" if n >= threshold else "full"
    relation = ">=" if chosen == "knn" else "<"
    return chosen, f"auto: {n:,} documents ({source}) {relation} {threshold:,}"


def check_blocks(blocks: int, documents: Mapping[str, int | None]) -> None:
    """Refuse ``wmd.blocks`` above the documents of a dataset whose WMD matrices are
    solved in blocks (full mode; ``documents``: its planned documents, None if unknown).

    A block is a job and a stored file; more blocks than documents only add jobs, each
    holding a part of a row of the matrix, whose planning takes longer than their solves
    (5,000 blocks of a 42-document corpus: 15,028 jobs, 150 s to plan). The gathered
    matrix is the same for any value, so the fix is only a smaller number."""
    for name, n in documents.items():
        if n is not None and blocks > n:
            raise WmdevalError(
                f"config: wmd.blocks: {blocks} stored blocks per WMD matrix, but dataset "
                f"{name!r} has {n} documents; set wmd.blocks to at most {n} (one block per "
                "document at most: each block is a job)"
            )
