"""Compiled kernels shared by the exact solver and the bounds (numba), and how they are
cached on disk so that every later process loads them instead of compiling them."""

from __future__ import annotations

import os
import tempfile

import numba
import numpy as np


def _private_cache() -> str | None:
    """A directory for numba's cache that only this user can write, in the system's temp
    directory (created with mode 0700), or None if it cannot be had or is not ours alone."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    path = os.path.join(tempfile.gettempdir(), f"wmdeval-numba-{getuid()}")
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        status = os.lstat(path)
    except OSError:
        return None
    # compiled code is loaded from it: a directory that is a link, someone else's, or
    # writable by others is never used
    if not os.path.isdir(path) or os.path.islink(path):
        return None
    if status.st_uid != getuid() or status.st_mode & 0o022:
        return None
    return path


def _kernel(function):
    """``numba.njit(nogil=True)``, compiled once and cached on disk, so that a fresh
    process (each Snakemake job) loads the machine code instead of compiling it again.

    numba keeps the cache beside this module (``__pycache__``) when that is writable, else
    in the user's cache directory (``~/.cache/numba``), or where NUMBA_CACHE_DIR says.
    Where none of these can be written (a read-only install and home), it goes to a
    private directory of the system's temp directory; failing that too, the kernel is
    compiled in every process that calls it (a few seconds), never an error.
    """
    try:
        return numba.njit(nogil=True, cache=True)(function)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available"
        pass
    private = _private_cache()
    if private is not None:
        saved = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = private
        try:
            return numba.njit(nogil=True, cache=True)(function)
        except RuntimeError:
            pass
        finally:
            numba.config.CACHE_DIR = saved
    return numba.njit(nogil=True)(function)


@_kernel
def _finish_costs(products, sq_norms, words_a, words_b, cosine):  # pragma: no cover
    # in place, as solver.word_costs computes them: (-2 a.b + |a|^2) + |b|^2, clipped at
    # 0, square root; or max(1 - a.b, 0); then a word's cost to itself exactly 0. The
    # branches and the same-word test stay out of the row loop so that it vectorises
    # (23 -> 10 us on a 90 x 95 matrix at 50 dimensions; the same bits)
    m = products.shape[1]
    sq_b = np.empty(m)
    for j in range(m):
        sq_b[j] = sq_norms[words_b[j]]
    for i in range(products.shape[0]):
        a = words_a[i]
        row = products[i]
        if cosine:
            for j in range(m):
                row[j] = max(1.0 - row[j], 0.0)
        else:
            sq_a = sq_norms[a]
            for j in range(m):
                row[j] = np.sqrt(max(row[j] * -2.0 + sq_a + sq_b[j], 0.0))
        for j in range(m):
            if words_b[j] == a:
                row[j] = 0.0
    return products


@_kernel
def _residual(rows_a, rows_b, a, b):  # pragma: no cover - compiled
    # solver.residual_problem over the words the two documents share (found by a merge
    # of their sorted rows, in place of np.intersect1d): the same subtraction of the
    # same minimum on each shared word, so the same bits, without ~60 us of numpy calls
    # per solve
    left_a = a.copy()
    left_b = b.copy()
    order_a = np.argsort(rows_a)
    order_b = np.argsort(rows_b)
    p = q = 0
    while p < len(order_a) and q < len(order_b):
        x, y = order_a[p], order_b[q]
        if rows_a[x] == rows_b[y]:
            kept = min(a[x], b[y])
            left_a[x] -= kept
            left_b[y] -= kept
            p += 1
            q += 1
        elif rows_a[x] < rows_b[y]:
            p += 1
        else:
            q += 1
    keep_a = np.flatnonzero(left_a > 0)
    keep_b = np.flatnonzero(left_b > 0)
    return left_a[keep_a], left_b[keep_b], keep_a, keep_b
