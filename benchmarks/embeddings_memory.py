"""Peak memory of reading a word2vec binary file: gensim's full load against wmdeval's reader.

Writes a synthetic word2vec binary file of N x 300 seeded random vectors (default
N = 300,000, about 370 MB; ``--vectors 3000000`` for the size of GoogleNews, about
3.7 GB) into a temporary directory. Then, each in a fresh Python process so that one
does not inherit the other's memory:

- gensim: ``KeyedVectors.load_word2vec_format(path, binary=True)``, the whole file;
- wmdeval: ``embeddings.read_vectors(path, "word2vec-binary", vocabulary)`` keeping a
  random 30,000-word vocabulary (``--keep`` to change it);
- wmdeval, all: the same reader keeping every word (vocabulary None), to show that even
  then the cost is the matrix plus the words.

Each child reports its wall time and its peak RSS (``ru_maxrss``), both in total and
above what the process held after its imports (interpreter, numpy, gensim or pyarrow),
which is the memory the reading itself needed. Prints numbers only.

    python benchmarks/embeddings_memory.py [--vectors N] [--keep K]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DIM = 300
ROWS_PER_BLOCK = 10_000


def word(k: int) -> str:
    return f"word{k:07d}"


def write_word2vec_binary(path: Path, n: int, rng: np.random.Generator) -> None:
    """The layout gensim writes: header, then per vector the word, a space, 300 float32."""
    with open(path, "wb") as out:
        out.write(f"{n} {DIM}\n".encode())
        for first in range(0, n, ROWS_PER_BLOCK):
            block = rng.standard_normal((min(ROWS_PER_BLOCK, n - first), DIM)).astype("<f4")
            out.write(
                b"".join(
                    word(first + i).encode() + b" " + row.tobytes() for i, row in enumerate(block)
                )
            )


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def child(reader: str, path: str, vocabulary_path: str) -> None:
    """Runs in the fresh process: read the file one way, print one JSON line."""
    if reader == "gensim":
        from gensim.models import KeyedVectors

        after_imports = peak_rss_bytes()
        start = time.perf_counter()
        vectors = KeyedVectors.load_word2vec_format(path, binary=True)
        kept = len(vectors)
    else:
        from wmdeval.ingest import embeddings

        vocabulary = None if reader == "wmdeval-all" else Path(vocabulary_path).read_text().split()
        after_imports = peak_rss_bytes()
        start = time.perf_counter()
        words, _ = embeddings.read_vectors(path, "word2vec-binary", vocabulary)
        kept = len(words)
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak": peak_rss_bytes(),
                "after_imports": after_imports,
                "kept": kept,
            }
        )
    )


def run_child(reader: str, path: Path, vocabulary_path: Path) -> dict:
    result = subprocess.run(
        [sys.executable, __file__, "--child", reader, str(path), str(vocabulary_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def reading_bytes(result: dict) -> int:
    """Peak RSS above what the child held after its imports: what reading the file took."""
    return result["peak"] - result["after_imports"]


def mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:9.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=300_000, help="vectors in the file")
    parser.add_argument("--keep", type=int, default=30_000, help="vocabulary size to keep")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.bin"
        start = time.perf_counter()
        write_word2vec_binary(path, args.vectors, rng)
        print(
            f"wrote {args.vectors:,} x {DIM} vectors ({mb(path.stat().st_size).strip()}) "
            f"in {time.perf_counter() - start:.1f} s"
        )
        vocabulary_path = Path(tmp) / "vocabulary.txt"
        keep = rng.choice(args.vectors, min(args.keep, args.vectors), replace=False)
        vocabulary_path.write_text("\n".join(word(int(k)) for k in keep) + "\n")

        matrix_bytes = args.vectors * DIM * 4
        kept_bytes = len(keep) * DIM * 4
        print(
            f"full matrix {args.vectors:,} x {DIM} float32: {mb(matrix_bytes).strip()}; "
            f"kept matrix {len(keep):,} x {DIM}: {mb(kept_bytes).strip()}\n"
        )
        print(
            f"{'reader':<40} {'time':>8} {'peak RSS':>12} {'above imports':>14} "
            f"{'/ full matrix':>14}"
        )
        results = {}
        for reader, label in (
            ("gensim", "gensim load_word2vec_format (all)"),
            ("wmdeval", f"wmdeval read_vectors ({len(keep):,} words)"),
            ("wmdeval-all", "wmdeval read_vectors (all, for scale)"),
        ):
            r = results[reader] = run_child(reader, path, vocabulary_path)
            print(
                f"{label:<40} {r['seconds']:6.1f} s {mb(r['peak'])}  {mb(reading_bytes(r))}  "
                f"{reading_bytes(r) / matrix_bytes:13.2f}x"
            )
        gensim, ours = results["gensim"], results["wmdeval"]
        print(f"\nkept {ours['kept']:,} of {gensim['kept']:,} vectors")
        print(
            f"peak RSS ratio gensim / wmdeval: {gensim['peak'] / ours['peak']:.1f}x total, "
            f"{reading_bytes(gensim) / reading_bytes(ours):.1f}x above imports"
        )


if __name__ == "__main__":
    main()
