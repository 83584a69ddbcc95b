"""Peak memory, wall and CPU of one ``wmdeval evaluate`` job in knn mode on the passage
corpus (benchmarks/passages.py), beside the job's declared ``mem_mb`` (prints JSON).

The documents are the passages ingested as a ``format: table`` dataset (kusner115 stop
words; without the vocabulary filter of a Word2Vec, which keeps fewer words) with the
collection's own one-fold split. The 12 baselines are evaluated for real. WMD and
WMD-TF-IDF come as neighbour tables of the search's form and size but not its values:
each query of each role (core/roles.py) holds ``--pairs-per-query`` seeded random
candidates of its list (the search solves 42 a query on 20 Newsgroups,
docs/performance.md) with seeded random distances, certified with an unsolved bound of
inf. What the job holds for a table depends on its number of pairs only, so the memory is
the real job's; the WMD scores are meaningless and not reported.

The job runs as a child process (``wmdeval evaluate``); its peak RSS is the child's
``ru_maxrss``; its CPU time is user + system.

    .venv/bin/python benchmarks/evaluate_memory.py [--every 2 | --size 20000 --seed 0]

Run the same command with ``PYTHONPATH=<another checkout>/workflow`` to measure another
version of the code on the same inputs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
import passages  # noqa: E402

from wmdeval.core import io, schemas  # noqa: E402
from wmdeval.core.roles import candidates_key, query_roles  # noqa: E402
from wmdeval.ingest import corpora  # noqa: E402


def inputs(workdir: Path, every: int, size: int | None, seed: int, pairs_per_query: int):
    """Write documents, splits and the two stand-in neighbour tables; their paths."""
    table = passages.write_passages(workdir / "passages.tsv", every=every, size=size, seed=seed)
    spec = {
        "format": "table",
        "path": str(workdir / "passages.tsv"),
        "text_column": "text",
        "label_column": "label",
        "split_column": "split",
        "stopwords": "kusner115",
    }
    documents, splits = corpora.ingest(spec)
    io.write_table(documents, workdir / "documents.parquet", schemas.DOCUMENTS)
    io.write_table(splits, workdir / "splits.parquet", schemas.SPLITS)
    doc_ids = documents.column("doc_id").to_numpy()
    empty = np.array([len(w) == 0 for w in documents.column("words").to_pylist()])
    folds = io.fold_indices(splits, doc_ids)
    roles = query_roles(folds, empty, None)
    rng = np.random.default_rng(seed)
    tables = {}
    for slug in ("wmd", "wmd-tfidf"):
        pairs: dict[tuple[int, int], float] = {}
        certificates = []
        for role in roles:
            candidates = role.candidates[~empty[role.candidates]]
            key = candidates_key(role.candidates)
            for q in role.queries[~empty[role.queries]].tolist():
                for c in rng.choice(candidates, pairs_per_query, replace=False).tolist():
                    pairs.setdefault((q, c), float(rng.uniform(0.5, 2.0)))
                certificates.append((q, key, role.k, np.inf))
        query, candidate = (np.array(side) for side in zip(*pairs, strict=True))
        paths = [workdir / f"{slug}.parquet", workdir / f"{slug}.certificates.parquet"]
        pairs_table = pa.table(
            {
                "query": doc_ids[query],
                "candidate": doc_ids[candidate],
                "distance": np.fromiter(pairs.values(), np.float64),
            }
        )
        io.write_table(pairs_table.cast(schemas.NEIGHBOUR_PAIRS), paths[0], schemas.NEIGHBOUR_PAIRS)
        cert = list(zip(*certificates, strict=True))
        cert_table = pa.table(
            {
                "query": doc_ids[np.array(cert[0])],
                "candidates": list(cert[1]),
                "k": np.array(cert[2]),
                "unsolved_bound": np.array(cert[3]),
            }
        )
        certificates_schema = schemas.NEIGHBOUR_CERTIFICATES
        io.write_table(cert_table.cast(certificates_schema), paths[1], certificates_schema)
        tables[slug] = [str(p) for p in paths]
    return table.num_rows, documents, splits, tables


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pairs-per-query", type=int, default=42)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        n, documents, splits, tables = inputs(
            workdir, args.every, args.size, args.seed, args.pairs_per_query
        )
        command = [
            "wmdeval",
            "evaluate",
            "--documents",
            str(workdir / "documents.parquet"),
            "--splits",
            str(workdir / "splits.parquet"),
            "--wmd",
            "{}",
            "--neighbours",
            json.dumps(tables),
            "--settings",
            "{}",
            "--dataset",
            "passages",
            "--variant",
            "original",
            "--out",
            str(workdir / "scores.parquet"),
            "--out-predictions",
            str(workdir / "predictions.parquet"),
        ]
        start = time.perf_counter()
        with open(workdir / "evaluate.log", "w") as log:
            run = subprocess.run(command, stderr=log, env=os.environ.copy())
        if run.returncode:
            sys.exit((workdir / "evaluate.log").read_text()[-3000:])
        wall = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        from wmdeval.planning import resources

        try:  # the declaration of this checkout's code, if it takes the tables
            declared = resources.evaluate_mem_mb(
                workdir / "documents.parquet",
                dense_matrices=0,
                neighbour_pairs=[p for p, _ in tables.values()],
            )
        except TypeError:
            declared = resources.evaluate_mem_mb(workdir / "documents.parquet")
        words = pc.list_value_length(documents.column("words")).to_numpy()
        print(
            json.dumps(
                {
                    "passages": n,
                    "documents": documents.num_rows,
                    "distinct_words_per_document": round(float(words.mean()), 1),
                    "test_documents": int(
                        np.count_nonzero(np.asarray(splits.column("subset").to_pylist()) == "test")
                    ),
                    "pairs_per_table": [io.read_table(p).num_rows for p, _ in tables.values()],
                    "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                    "wall_s": round(wall, 1),
                    "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                    "declared_mem_mb": declared,
                    "code": str(Path(resources.__file__).parents[2]),
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
