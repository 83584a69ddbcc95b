"""The peer library src-d/wmd-relax (PyPI ``wmd``) on exact top-k queries, for knn_pruning.py.

It runs in an environment of its own, as it builds a C++ extension against an old numpy
API:

    python3 -m venv venv-peer
    venv-peer/bin/pip install numpy pyemd setuptools wheel
    venv-peer/bin/pip install --no-build-isolation wmd

and pass ``--relax-python venv-peer/bin/python`` to knn_pruning.py (or set
``WMDEVAL_RELAX_PYTHON``). knn_pruning.py runs ``relax_peer.py IN.npz OUT.npy`` with that
Python. IN.npz holds the
word vectors, the documents (flat word rows, offsets, weights), the query positions, the
candidate positions and k. The script searches every query's k nearest candidates with
wmd-relax's own defaults for stopping early (``early_stop``, ``skipped_stop``,
``max_time``), writes them to OUT.npy (-1 padded) and prints the seconds its searches
took. Two settings are not defaults, because the defaults would refuse these documents:
``vocabulary_min=1`` (the default 50 rejects every review with fewer distinct words) and
``vocabulary_max`` large enough that no document is truncated.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def relax_top_k(
    vectors: np.ndarray,
    flat: np.ndarray,
    offsets: np.ndarray,
    weights: np.ndarray,
    queries: np.ndarray,
    candidates: np.ndarray,
    k: int,
) -> tuple[np.ndarray, float]:
    """(candidate positions [queries, k], -1 padded; seconds in nearest_neighbors)."""
    from wmd import WMD

    def bag(doc: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = int(offsets[doc]), int(offsets[doc + 1])
        return flat[lo:hi].astype(np.uint64), weights[lo:hi].astype(np.float32)

    nbow = {int(c): (int(c), *bag(int(c))) for c in candidates}
    longest = int(np.diff(offsets).max())
    model = WMD(
        np.ascontiguousarray(vectors, dtype=np.float32),
        nbow,
        vocabulary_min=1,
        vocabulary_max=max(longest, 2),
        verbosity=40,  # errors only
    )
    found = np.full((len(queries), k), -1, dtype=np.int64)
    seconds = 0.0
    for row, q in enumerate(queries.tolist()):
        words, ws = bag(q)
        started = time.perf_counter()
        answer = model.nearest_neighbors((words, ws), k=k)
        seconds += time.perf_counter() - started
        ids = [int(doc) for doc, _ in answer][:k]
        found[row, : len(ids)] = ids
    return found, seconds


def main() -> None:
    data = np.load(sys.argv[1])
    found, seconds = relax_top_k(
        data["vectors"],
        data["flat"],
        data["offsets"],
        data["weights"],
        data["queries"],
        data["candidates"],
        int(data["k"]),
    )
    np.save(sys.argv[2], found)
    print(seconds)


if __name__ == "__main__":
    main()
