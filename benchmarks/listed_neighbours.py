"""knn mode's neighbour lists of the dense methods at scale: CPU and peak memory of one
query shard of WCD, the cosine of mean vectors and document vectors on the passage corpus.

The corpus is benchmarks/passages.py's (85,635 passages of 20 Newsgroups, or a subset),
tokenized with kusner115 stop words as the workflow ingests it, one fold (the collection's
train/test split) and the default evaluation settings. Its words get seeded random 50-d
vectors instead of a trained Word2Vec (the cost of a row and of its ranking does not depend
on the values), and its documents seeded random 50-d vectors for ``methods.vectors`` (l2).

Each method runs as the workflow runs it (``wmdeval embedding-neighbours`` /
``vector-neighbours``, one process) on shard 1 of ``--shards``; the benchmark records its
CPU seconds and peak RSS (``ru_maxrss`` of the child), the CPU per query-row entry
(queries of the shard x documents) and what planning/resources.py declares for it.

``python benchmarks/listed_neighbours.py [--every 1] [--shards 8] [--record]``
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
import passages  # noqa: E402
import record  # noqa: E402

from wmdeval.core import io, schemas  # noqa: E402
from wmdeval.core.roles import query_roles  # noqa: E402
from wmdeval.ingest import corpora  # noqa: E402
from wmdeval.planning import resources  # noqa: E402

DIM = 50


def build(workdir: Path, every: int) -> dict[str, Path]:
    """Documents, splits, word embeddings and document vectors of the passage corpus."""
    table = passages.passages(every=every)
    stopwords = corpora.load_stopwords("kusner115")
    bags = [Counter(corpora.tokenize(t, stopwords)) for t in table.column("text").to_pylist()]
    documents = corpora.documents_table(bags, table.column("label").to_pylist())
    splits = corpora.fixed_split(table.column("split").to_pylist())
    vocabulary = sorted({w for bag in bags for w in bag})
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(vocabulary), DIM)).astype(np.float32)
    embeddings = pa.table(
        {
            "word": vocabulary,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            "norm": np.linalg.norm(vectors, axis=1).astype(np.float32),
        },
        schema=schemas.embeddings_schema(DIM),
    )
    doc_vectors = pa.table(
        {
            "doc_id": documents.column("doc_id"),
            "vector": [list(v) for v in rng.standard_normal((documents.num_rows, DIM))],
        }
    )
    paths = {
        name: workdir / f"{name}.parquet"
        for name in ("documents", "splits", "embeddings", "vectors")
    }
    io.write_table(documents, paths["documents"])
    io.write_table(splits, paths["splits"])
    io.write_table(embeddings, paths["embeddings"])
    io.write_table(doc_vectors, paths["vectors"])
    return paths


#: Runs a command and prints its CPU seconds and peak RSS (kB): a process of its own, so
#: that the peak is this command's alone (RUSAGE_CHILDREN keeps the largest child's).
MEASURE = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
    "r = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(r.ru_utime + r.ru_stime, r.ru_maxrss)"
)


def run(command: list[str]) -> tuple[float, float, float]:
    """(CPU seconds, peak RSS MB, wall seconds) of a child process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    cpu, peak = done.stdout.split()[-2:]
    return float(cpu), float(peak) / 1024, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--shards", type=int, default=8)
    record.add_argument(parser, "listed_neighbours")
    args = parser.parse_args()
    settings = json.dumps({})
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        paths = build(workdir, args.every)
        documents = io.read_documents(paths["documents"])
        n = documents.num_rows
        doc_ids = documents.column("doc_id").to_numpy()
        folds = io.fold_indices(io.read_splits(paths["splits"]), doc_ids)
        roles = query_roles(folds, np.zeros(n, dtype=bool), None)
        queries = len(np.unique(np.concatenate([r.queries for r in roles])))
        shard_queries = queries // args.shards
        figures.update(documents=n, queries=queries, shards=args.shards)
        common = [
            "--documents",
            str(paths["documents"]),
            "--splits",
            str(paths["splits"]),
            "--settings",
            settings,
            "--shard",
            f"1-of-{args.shards}",
            "--out-pairs",
            str(workdir / "pairs.parquet"),
            "--out-certificates",
            str(workdir / "certificates.parquet"),
        ]
        jobs = {
            "wcd": ["embedding-neighbours", "--embeddings", str(paths["embeddings"])]
            + ["--method", "wcd"],
            "cosine-mean": ["embedding-neighbours", "--embeddings", str(paths["embeddings"])]
            + ["--method", "cosine-mean"],
            "vectors": ["vector-neighbours", "--vectors", str(paths["vectors"])]
            + ["--metric", "l2"],
        }
        for name, arguments in jobs.items():
            cpu, peak, wall = run(["wmdeval", *arguments, *common])
            declared = resources.listed_resources(str(paths["documents"]), name, args.shards)
            figures[name] = {
                "cpu_seconds": round(cpu, 1),
                "wall_seconds": round(wall, 1),
                "peak_rss_mb": round(peak),
                "cpu_per_entry": float(f"{cpu / (shard_queries * n):.3g}"),
                "declared_mem_mb": declared["mem_mb"],
                "expected_cpu_seconds": round(
                    resources.listed_seconds(str(paths["documents"]), name, args.shards), 1
                ),
            }
            print(name, figures[name], flush=True)
    print(json.dumps(figures, indent=2))
    record.write(args.record, "listed_neighbours", figures)


if __name__ == "__main__":
    main()
