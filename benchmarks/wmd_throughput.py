"""WMD throughput: the workflow's solver against the straightforward per-pair recipe.

Synthetic documents of about 10, 40, 70 and 120 distinct words (random words of a
5,000-word vocabulary, random L2-normalised 300-d vectors, counts 1-4; seeded).
On the same documents:

- reference: for every ordered pair (i, j) of the full n x n square,
  ``sklearn.metrics.pairwise_distances`` for the cost matrix, ``ot.emd`` for the plan,
  and ``sum(plan * cost)``;
- workflow: ``solver.prepare`` + ``solver.solve_block`` over the upper triangle, one thread.

Both run with one BLAS thread, alternating in four parts (rows of the square, blocks
of the triangle) so that both see the same load when other jobs share the machine.
Each side's one-time costs of a process are paid before any clock starts, on four
documents of their own (printed: numba's first call, ~0.25 s, imports and initialises its
machinery and loads the cached kernels; it would otherwise be ~13 us of the first set's
~30 us per pair, a cost a job pays once, not per pair).
Per-pair ratios use CPU time of this process; wall-clock rates are printed too. The
last column is the largest difference between the two (the reference leaves ~1e-8
on a word's distance to itself, where the workflow has exactly 0). Then the 70-word
set is solved with two threads to show the thread speed-up (wall clock).

    python benchmarks/wmd_throughput.py [--quick] [--record [PATH]]

``--record`` writes the ratios and pairs/s to benchmarks/results/wmd_throughput.json, which
docs/performance.md quotes.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ot
import pyarrow as pa
import record
from sklearn.metrics import pairwise_distances
from threadpoolctl import threadpool_limits

from wmdeval.core import schemas
from wmdeval.distances.wmd import solver

VOCABULARY = 5000
#: The recorded table's columns (per pair, CPU time of one core).
HEADER = ["words", "documents", "reference pairs/s", "workflow pairs/s", "speed-up"]
DIM = 300
#: words per document -> documents (full run); --quick uses half as many
SIZES = {10: 200, 40: 150, 70: 120, 120: 110}
ROUNDS = 4


def synthetic_embeddings(rng: np.random.Generator) -> tuple[list[str], np.ndarray, pa.Table]:
    words = [f"w{k:05d}" for k in range(VOCABULARY)]
    vectors = rng.standard_normal((VOCABULARY, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    table = pa.table(
        {
            "word": words,
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            "norm": np.ones(VOCABULARY, dtype=np.float32),
        }
    )
    return words, vectors, table


def synthetic_documents(rng: np.random.Generator, words: list[str], n: int, size: int) -> pa.Table:
    rows = []
    for _ in range(n):
        u = int(rng.integers(round(0.8 * size), round(1.2 * size) + 1))
        rows.append(np.sort(rng.choice(VOCABULARY, u, replace=False)))
    return pa.table(
        {
            "doc_id": np.arange(n, dtype=np.int32),
            "label": ["x"] * n,
            "y": np.zeros(n, dtype=np.int32),
            "words": [[words[r] for r in doc] for doc in rows],
            "counts": [rng.integers(1, 5, len(doc)).astype(np.float64).tolist() for doc in rows],
        },
        schema=schemas.DOCUMENTS,
    )


class Clock:
    """Accumulated wall-clock and process CPU seconds of the blocks it times."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> Clock:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall += time.perf_counter() - self._wall
        self.cpu += time.process_time() - self._cpu


def reference_inputs(
    documents: pa.Table, vectors: np.ndarray, words: list[str]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Documents as the .mat files store them: a float64 vector block and a BOW each."""
    index = {w: k for k, w in enumerate(words)}
    xs = [
        vectors[[index[w] for w in ws]].astype(np.float64)
        for ws in documents.column("words").to_pylist()
    ]
    bows = [np.asarray(c) / np.sum(c) for c in documents.column("counts").to_pylist()]
    return xs, bows


def reference(xs: list[np.ndarray], bows: list[np.ndarray], rows: range) -> np.ndarray:
    """The per-pair recipe for rows ``rows`` of the full square."""
    out = np.zeros((len(rows), len(xs)))
    for r, i in enumerate(rows):
        for j in range(len(xs)):
            cost = pairwise_distances(xs[i], xs[j])
            plan = ot.emd(bows[i], bows[j], cost)
            out[r, j] = np.sum(plan * cost)
    return out


def compare(
    documents: pa.Table, embeddings: pa.Table, vectors: np.ndarray, words: list[str]
) -> tuple[Clock, Clock, float, int]:
    """Reference and workflow on the same documents, in ROUNDS alternating parts (rows of
    the square / blocks of the triangle) so that both see the same machine load."""
    n = documents.num_rows
    ref_clock, our_clock = Clock(), Clock()
    expected, tables = [], []
    with threadpool_limits(limits=1, user_api="blas"):
        with ref_clock:
            xs, bows = reference_inputs(documents, vectors, words)
        with our_clock:
            inputs = solver.prepare(documents, embeddings, "bow")
        for part in range(ROUNDS):
            with ref_clock:
                rows = range(part * n // ROUNDS, (part + 1) * n // ROUNDS)
                expected.append(reference(xs, bows, rows))
            with our_clock:
                tables.append(solver.solve_block(inputs, part, ROUNDS, threads=1))
    table = pa.concat_tables(tables)
    i, j = table.column("i").to_numpy(), table.column("j").to_numpy()
    diff = np.abs(table.column("distance").to_numpy() - np.vstack(expected)[i, j]).max()
    return ref_clock, our_clock, float(diff), table.num_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="half as many documents")
    parser.add_argument("--seed", type=int, default=0)
    record.add_argument(parser, "wmd_throughput")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    words, vectors, embeddings = synthetic_embeddings(rng)

    with Clock() as ref_warm, threadpool_limits(limits=1, user_api="blas"):
        documents = synthetic_documents(np.random.default_rng(args.seed + 1), words, 4, 10)
        reference(*reference_inputs(documents, vectors, words), range(4))
    with Clock() as our_warm, threadpool_limits(limits=1, user_api="blas"):
        solver.solve_block(solver.prepare(documents, embeddings, "bow"), 0, 1, threads=1)
    print(
        f"one-time costs, before the clocks: reference {ref_warm.cpu:.2f} s, "
        f"workflow {our_warm.cpu:.2f} s (CPU)"
    )
    print(
        f"{'words':>5} {'docs':>5} | {'reference pairs/s':>17} {'(wall)':>8} | "
        f"{'workflow pairs/s':>16} {'(wall)':>8} | {'ratio':>6} | max |diff|"
    )
    ratios, rows = {}, []
    sets = {}
    for size, n in SIZES.items():
        n = n // 2 if args.quick else n
        documents = synthetic_documents(rng, words, n, size)
        sets[size] = documents
        ref_clock, our_clock, diff, our_pairs = compare(documents, embeddings, vectors, words)
        ref_pairs = n * n
        ratios[size] = (ref_clock.cpu / ref_pairs) / (our_clock.cpu / our_pairs)
        rows.append(
            [
                size,
                n,
                round(ref_pairs / ref_clock.cpu),
                round(our_pairs / our_clock.cpu),
                round(ratios[size], 2),
            ]
        )
        print(
            f"{size:>5} {n:>5} | {ref_pairs / ref_clock.cpu:>17.0f} "
            f"{ref_pairs / ref_clock.wall:>8.0f} | {our_pairs / our_clock.cpu:>16.0f} "
            f"{our_pairs / our_clock.wall:>8.0f} | {ratios[size]:>5.2f}x | {diff:.1e}"
        )

    size = 70
    inputs = solver.prepare(sets[size], embeddings, "bow")
    with Clock() as one:
        solver.solve_block(inputs, 0, 1, threads=1)
    with Clock() as two:
        solver.solve_block(inputs, 0, 1, threads=2)
    print(
        f"solve_block, {size} words, {inputs.n} docs: 1 thread {one.wall:.2f} s, "
        f"2 threads {two.wall:.2f} s (wall): speed-up {one.wall / two.wall:.2f}x"
    )
    print(
        f"wmd_throughput: {ratios[10]:.1f}x @10 words, {ratios[40]:.1f}x @40, "
        f"{ratios[70]:.2f}x @70, {ratios[120]:.2f}x @120 (per pair, one core)"
    )
    record.write(
        args.record,
        "wmd_throughput",
        {
            "table": {"header": HEADER, "rows": rows},
            "two_threads_speedup_70_words": round(one.wall / two.wall, 2),
        },
    )


if __name__ == "__main__":
    main()
