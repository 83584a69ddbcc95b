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
``ru_maxrss`` (``os.wait4``); its CPU time is user + system. ``--compare DIR`` runs it again
with another checkout's code first on PYTHONPATH (``DIR`` its ``workflow/``) on the same
inputs, and says whether both wrote the same bytes of scores and predictions.

    .venv/bin/python benchmarks/evaluate_memory.py [--every 2 | --size 20000 --seed 0]
        [--compare ../main/workflow] [--record]
"""

from __future__ import annotations

import argparse
import json
import os
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
import record  # noqa: E402

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


DECLARED = """
import json, sys
from wmdeval.planning import resources
documents, tables = sys.argv[1], json.loads(sys.argv[2])
try:  # a version that takes the dense matrices and the tables
    print(resources.evaluate_mem_mb(documents, dense_matrices=0, neighbour_pairs=tables))
except TypeError:
    print(resources.evaluate_mem_mb(documents))
"""


def measure(workdir: Path, tables: dict, name: str, pythonpath: str | None) -> dict:
    """Run ``wmdeval evaluate`` on the inputs in ``workdir`` as a child (with
    ``pythonpath`` first on PYTHONPATH: another checkout's code); its peak RSS, wall, CPU
    and the declaration of that code."""
    env = os.environ.copy()
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = workdir / name
    out.mkdir()
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
        str(out / "scores.parquet"),
        "--out-predictions",
        str(out / "predictions.parquet"),
    ]
    with open(out / "evaluate.log", "w") as log:
        start = time.perf_counter()
        child = subprocess.Popen(command, stderr=log, env=env)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status):
        sys.exit((out / "evaluate.log").read_text()[-3000:])
    pairs = json.dumps([p for p, _ in tables.values()])
    declared = subprocess.run(
        [sys.executable, "-c", DECLARED, str(workdir / "documents.parquet"), pairs],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {
        "code": pythonpath or "this checkout",
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "declared_mem_mb": int(declared),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=2)
    parser.add_argument("--size", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pairs-per-query", type=int, default=42)
    parser.add_argument(
        "--compare",
        default=None,
        metavar="WORKFLOW_DIR",
        help="also run another checkout's code (its workflow/ directory) on the same inputs",
    )
    record.add_argument(parser, "evaluate_memory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        n, documents, splits, tables = inputs(
            workdir, args.every, args.size, args.seed, args.pairs_per_query
        )
        words = pc.list_value_length(documents.column("words")).to_numpy()
        subsets = np.asarray(splits.column("subset").to_pylist())
        figures = {
            "documents": n,
            "distinct_words_per_document": round(float(words.mean()), 1),
            "test_documents": int(np.count_nonzero(subsets == "test")),
            "pairs_per_table": [io.read_table(p).num_rows for p, _ in tables.values()],
            "after": measure(workdir, tables, "after", None),
        }
        if args.compare:
            figures["before"] = measure(workdir, tables, "before", args.compare)
            figures["same_bytes"] = all(
                (workdir / "after" / name).read_bytes() == (workdir / "before" / name).read_bytes()
                for name in ("scores.parquet", "predictions.parquet")
            )
    print(json.dumps(figures, indent=1))
    record.write(args.record, "evaluate_memory", figures)


if __name__ == "__main__":
    main()
