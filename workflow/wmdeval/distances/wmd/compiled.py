"""Compiled kernels shared by the exact solver and the bounds (numba), and how they are
cached on disk so that every later process loads them instead of compiling them."""

from __future__ import annotations

import os
import tempfile

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic


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


@intrinsic
def _fma(typingctx, x, y, z):  # pragma: no cover - compiled
    """x * y + z rounded once (LLVM's llvm.fma): the same bits on every machine, by the
    CPU's fused instruction where it has one, else by the C library's fma. (numba keeps a
    separate multiply and add unless told it may contract them, and then where it does
    would depend on the code around it.)"""
    signature = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, sig, args):
        double = ir.DoubleType()
        fma = builder.module.declare_intrinsic(
            "llvm.fma", [double], ir.FunctionType(double, [double, double, double])
        )
        return builder.call(fma, args)

    return signature, codegen


@numba.njit(nogil=True, inline="always")
def _step(total, x, y, cosine):  # pragma: no cover - compiled
    # one dimension of a cost: the product (cosine) or the squared difference, added to
    # `total` with one rounding
    if cosine:
        return _fma(x, y, total)
    d = x - y
    return _fma(d, d, total)


@_kernel
def _pair_costs(vectors, words_a, words_b, cosine):  # pragma: no cover - compiled
    """Ground costs between the rows ``words_a`` and ``words_b`` of ``vectors``, float64
    [len(words_a), len(words_b)]: Euclidean, sqrt(sum_k (a_k - b_k)^2); cosine (unit
    directions), max(1 - sum_k a_k b_k, 0); a word's cost to itself exactly 0.

    Each entry is summed over the dimensions k = 0, 1, ..., dim - 1 in that order, one
    fused multiply-add per dimension, starting from 0: its bits are a function of the
    two vectors alone, never of the matrix it is computed in (its shape, its other words,
    its place there), nor of the machine. So a pair's costs come out the same whether a
    solve, a block or a bound computes them, and cost(a, b) == cost(b, a) bit for bit
    ((a_k - b_k)^2 == (b_k - a_k)^2 and a_k b_k == b_k a_k); a Euclidean cost of a word to
    itself is exactly 0 by the arithmetic (every difference is 0), a cosine one by the
    same-word test. The loops run over b's words innermost, four rows of a at a time and
    four dimensions per pass (b's vectors transposed first): independent sums side by
    side, which the compiler vectorises without reordering any one of them, at about the
    speed of the BLAS product it replaces (120 x 120 words at 300 dimensions), without
    its ~5 us call on small documents.
    """
    dim = vectors.shape[1]
    n, m = len(words_a), len(words_b)
    costs = np.empty((n, m))
    # b's words in tiles of COST_TILE (b's vectors transposed: one tile's stay in cache
    # while every row of a passes over them), the last padded with zero vectors to whole
    # vectors of 8, so that no column is left to a scalar remainder loop; the padding's
    # sums are dropped
    other = np.empty((dim, min(COST_TILE, m + -m % 8)))
    sums = np.empty((n, other.shape[1]))
    spare = np.zeros((3, other.shape[1]))  # _tile_sums' sums of a group's filler rows
    for j0 in range(0, m, COST_TILE):
        j1 = min(j0 + COST_TILE, m)
        width = (j1 - j0) + -(j1 - j0) % 8
        # (plain loops here: numba's slice assignments cost ~0.1 us each)
        for k in range(dim):
            for j in range(j1 - j0, width):
                other[k, j] = 0.0
        for k in range(dim):  # along the rows of `other`: ~2.5x faster than along b's
            row = other[k]
            for t in range(j1 - j0):
                row[t] = vectors[words_b[j0 + t], k]
        for i in range(n):
            row = sums[i]
            for j in range(width):
                row[j] = 0.0
        _tile_sums(vectors, words_a, other, sums, spare, width, cosine)
        # the finishing pass, in loops that vectorise (a select, not a branch and a
        # store, for the same word; indices that are never negative, so numba adds no
        # wraparound test). A Euclidean cost of a word to itself is 0 without the test.
        for i in range(n):
            row = sums[i]
            out = costs[i]
            if cosine:
                word = words_a[i]
                for t in range(j1 - j0):
                    out[j0 + t] = 0.0 if words_b[j0 + t] == word else max(1.0 - row[t], 0.0)
            else:
                for t in range(j1 - j0):
                    out[j0 + t] = np.sqrt(row[t])
    return costs


#: Columns (words of b) per tile of :func:`_pair_costs`: 128 x 300 dimensions x 8 B of
#: transposed vectors stay in a core's L2 cache (one matrix of all the words of a block's
#: row ran out of it: no faster than one matrix per pair).
COST_TILE = 128


@numba.njit(nogil=True)
def _tile_sums(vectors, words_a, other, sums, spare, width, cosine):  # pragma: no cover
    # sums[i, j] += each dimension's step in order k = 0, 1, ..., for the first `width`
    # columns: four rows of a at a time, four dimensions per pass; a last group of fewer
    # rows is filled up with its first row again, whose extra sums go to `spare` [3,
    # width] and are dropped. Four rows take each loaded column of `other` into four sums:
    # a block row's cost table of 120-word documents 0.090 ms a pair against 0.116 with
    # two rows (3 % of such a pair's time; eight dimensions per pass or more rows were no
    # faster). Every sum still runs k = 0, 1, ... by itself, so the bits do not depend on
    # the grouping.
    n = len(words_a)
    for i in range(0, n, 4):
        last = min(n - i, 4)  # the rows of a in this group
        a = vectors[words_a[i]]
        c = vectors[words_a[i + 1]] if last > 1 else a
        e = vectors[words_a[i + 2]] if last > 2 else a
        g = vectors[words_a[i + 3]] if last > 3 else a
        row_c = sums[i + 1] if last > 1 else spare[0]
        row_e = sums[i + 2] if last > 2 else spare[1]
        row_g = sums[i + 3] if last > 3 else spare[2]
        _four_rows(a, c, e, g, sums[i], row_c, row_e, row_g, other, width, cosine)


@numba.njit(nogil=True)
def _four_rows(a, c, e, g, row_a, row_c, row_e, row_g, other, width, cosine):  # pragma: no cover
    # _tile_sums for the vectors a, c, e, g into the rows of sums row_a .. row_g
    dim = len(a)
    whole = dim - dim % 4
    for k in range(0, whole, 4):
        a0, a1, a2, a3 = a[k], a[k + 1], a[k + 2], a[k + 3]
        c0, c1, c2, c3 = c[k], c[k + 1], c[k + 2], c[k + 3]
        e0, e1, e2, e3 = e[k], e[k + 1], e[k + 2], e[k + 3]
        g0, g1, g2, g3 = g[k], g[k + 1], g[k + 2], g[k + 3]
        b0, b1, b2, b3 = other[k], other[k + 1], other[k + 2], other[k + 3]
        for j in range(width):
            x0, x1, x2, x3 = b0[j], b1[j], b2[j], b3[j]
            t = _step(row_a[j], a0, x0, cosine)
            t = _step(t, a1, x1, cosine)
            t = _step(t, a2, x2, cosine)
            row_a[j] = _step(t, a3, x3, cosine)
            t = _step(row_c[j], c0, x0, cosine)
            t = _step(t, c1, x1, cosine)
            t = _step(t, c2, x2, cosine)
            row_c[j] = _step(t, c3, x3, cosine)
            t = _step(row_e[j], e0, x0, cosine)
            t = _step(t, e1, x1, cosine)
            t = _step(t, e2, x2, cosine)
            row_e[j] = _step(t, e3, x3, cosine)
            t = _step(row_g[j], g0, x0, cosine)
            t = _step(t, g1, x1, cosine)
            t = _step(t, g2, x2, cosine)
            row_g[j] = _step(t, g3, x3, cosine)
    for k in range(whole, dim):
        b = other[k]
        for j in range(width):
            row_a[j] = _step(row_a[j], a[k], b[j], cosine)
            row_c[j] = _step(row_c[j], c[k], b[j], cosine)
            row_e[j] = _step(row_e[j], e[k], b[j], cosine)
            row_g[j] = _step(row_g[j], g[k], b[j], cosine)


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


@_kernel
def _pair_problem(vectors, rows_a, rows_b, a, b, metric, cosine):  # pragma: no cover
    """(left_a, left_b, keep_a, keep_b, costs): what solver.solve_pair_costs hands the
    network simplex, in one compiled call (two calls and the indexing between them were
    ~5 us of a 10-word pair's ~15). ``metric``: the :func:`_residual` problem; else the
    whole marginals (copies) on every word. ``costs``: :func:`_pair_costs` of the kept
    words [len(keep_a), len(keep_b)]."""
    if metric:
        left_a, left_b, keep_a, keep_b = _residual(rows_a, rows_b, a, b)
    else:
        left_a, left_b = a.copy(), b.copy()
        keep_a, keep_b = np.arange(len(a)), np.arange(len(b))
    # int64 rows: the one signature the other callers compile _pair_costs for
    words_a = rows_a[keep_a].astype(np.int64)
    words_b = rows_b[keep_b].astype(np.int64)
    return left_a, left_b, keep_a, keep_b, _pair_costs(vectors, words_a, words_b, cosine)


#: _row_problems' pair kinds: solve the problem it wrote; no distance (an empty
#: document); distance exactly 0 (identical marginals, or nothing left to move).
SOLVE, UNDEFINED, ZERO = 0, 1, 2


@_kernel
def _row_problems(
    vectors, offsets, flat, weights, twin, doc_ids, i, j0, j1, metric, cosine
):  # pragma: no cover - compiled
    """The transport problems of the pairs (i, j), j0 <= j < j1, as solver.solve_pair_costs
    states them, for a row of a block: (kind [pairs] (SOLVE, UNDEFINED or ZERO), sources'
    marginals, targets' marginals, costs, and their offsets per pair [pairs + 1] each).
    ``flat``/``weights``/``offsets``: every document's rows and marginals concatenated.

    The same problems bit for bit: the document with the lower doc_id is the source, the
    shared mass is dropped by :func:`_residual` under a metric cost, and every cost is a
    :func:`_pair_costs` entry, whose bits depend on its two words alone. So the costs of
    i's words to the row's distinct words are computed once, in one matrix, and each
    pair's are read from it: one kernel call per row instead of one per pair, and each
    word pair's cost once however many of the row's documents hold the word."""
    pairs = j1 - j0
    kind = np.empty(pairs, dtype=np.int8)
    rows_i = flat[offsets[i] : offsets[i + 1]]
    mass_i = weights[offsets[i] : offsets[i + 1]]
    # the row's distinct words, and each one's column in `table`
    column = np.full(len(vectors), -1, dtype=np.int64)
    distinct = np.empty(offsets[j1] - offsets[j0], dtype=np.int64)
    count = 0
    for p in range(offsets[j0], offsets[j1]):
        w = flat[p]
        if column[w] < 0:
            column[w] = count
            distinct[count] = w
            count += 1
    table = _pair_costs(vectors, rows_i.astype(np.int64), distinct[:count], cosine)
    size_i = len(rows_i)
    left_s = np.empty(size_i * pairs + offsets[j1] - offsets[j0])
    left_t = np.empty(size_i * pairs + offsets[j1] - offsets[j0])
    costs = np.empty(size_i * (offsets[j1] - offsets[j0]))
    at_s = np.zeros(pairs + 1, dtype=np.int64)
    at_t = np.zeros(pairs + 1, dtype=np.int64)
    at_c = np.zeros(pairs + 1, dtype=np.int64)
    for p in range(pairs):
        j = j0 + p
        at_s[p + 1], at_t[p + 1], at_c[p + 1] = at_s[p], at_t[p], at_c[p]
        rows_j = flat[offsets[j] : offsets[j + 1]]
        mass_j = weights[offsets[j] : offsets[j + 1]]
        if size_i == 0 or len(rows_j) == 0:
            kind[p] = UNDEFINED
            continue
        if twin[i] == twin[j]:
            kind[p] = ZERO
            continue
        i_source = doc_ids[i] < doc_ids[j]
        if i_source:
            rows_s, rows_t, a, b = rows_i, rows_j, mass_i, mass_j
        else:
            rows_s, rows_t, a, b = rows_j, rows_i, mass_j, mass_i
        if metric:
            a, b, keep_s, keep_t = _residual(rows_s, rows_t, a, b)
        else:
            keep_s, keep_t = np.arange(len(a)), np.arange(len(b))
        if len(a) == 0 or len(b) == 0:
            kind[p] = ZERO
            continue
        kind[p] = SOLVE
        s, t, c = at_s[p], at_t[p], at_c[p]
        left_s[s : s + len(a)] = a
        left_t[t : t + len(b)] = b
        size_t = len(keep_t)
        if i_source:  # rows of `table` by the source's words, columns by the target's
            columns = np.empty(size_t, dtype=np.int64)
            for y in range(size_t):
                columns[y] = column[rows_t[keep_t[y]]]
            for x in range(len(keep_s)):
                line = table[keep_s[x]]
                for y in range(size_t):
                    costs[c + x * size_t + y] = line[columns[y]]
        else:  # the transpose: rows by the target's words (i's), columns by the source's
            for x in range(len(keep_s)):
                at = column[rows_s[keep_s[x]]]
                for y in range(size_t):
                    costs[c + x * size_t + y] = table[keep_t[y], at]
        at_s[p + 1] = s + len(a)
        at_t[p + 1] = t + len(b)
        at_c[p + 1] = c + len(a) * len(b)
    return kind, left_s, left_t, costs, at_s, at_t, at_c


#: _solve_problems' code for a pair it left to the caller: not a SOLVE pair, or one side
#: of a single word (solver._wmd_duals' closed form, whose np.dot the caller computes).
LEFT = -1


@intrinsic
def _network_simplex(
    typingctx, address, a, b, costs, plan, u, v, value, max_iter
):  # pragma: no cover
    """POT's ``EMD_wrap`` (its C++ network simplex, what ``ot.lp.emd_wrap.emd_c`` calls) at
    ``address``, on marginals ``a`` [n1], ``b`` [n2] and ``costs`` [n1 * n2] (row-major),
    without a warm start: the result code; ``value[0]`` the transport cost, ``u``/``v``
    the duals, ``plan`` [>= n1 * n2] scratch it writes the flows to. The address is an
    argument, so the functions calling this stay cacheable."""
    signature = types.int32(types.int64, a, b, costs, plan, u, v, value, types.int64)

    def codegen(context, builder, sig, args):
        double_p = ir.DoubleType().as_pointer()
        i32, i64 = ir.IntType(32), ir.IntType(64)
        # int EMD_wrap(int n1, int n2, double *X, double *Y, double *D, double *G,
        #              double *alpha, double *beta, double *cost, uint64_t maxIter,
        #              double *alpha_init, double *beta_init)
        fnty = ir.FunctionType(i32, [i32, i32] + [double_p] * 7 + [i64, double_p, double_p])
        data = [
            context.make_array(ty)(context, builder, value_).data
            for ty, value_ in zip(sig.args[1:8], args[1:8], strict=True)
        ]
        shape_a = context.make_array(sig.args[1])(context, builder, args[1]).shape
        shape_b = context.make_array(sig.args[2])(context, builder, args[2]).shape
        n1 = builder.trunc(builder.extract_value(shape_a, 0), i32)
        n2 = builder.trunc(builder.extract_value(shape_b, 0), i32)
        function = builder.inttoptr(args[0], fnty.as_pointer())
        null = ir.Constant(double_p, None)
        return builder.call(function, [n1, n2, *data, args[8], null, null])

    return signature, codegen


@_kernel
def _solve_problems(
    address, kind, left_s, left_t, costs, at_s, at_t, at_c, p0, p1, out, max_iter
):  # pragma: no cover - compiled
    """Solve the SOLVE problems p0 <= p < p1 of :func:`_row_problems`' output with the
    network simplex at ``address`` (:func:`_network_simplex`), writing each value to
    ``out[p - p0]``: the result codes [p1 - p0], LEFT where the pair was not solved here
    (not SOLVE, or a side of one word). The same call as ``emd_c`` makes, on the same
    arrays, so the same bits, without its per-pair Python (argument checks, a zeroed plan
    matrix, the duals' arrays) nor the caller's."""
    codes = np.full(p1 - p0, LEFT, dtype=np.int32)
    largest = 0
    for p in range(p0, p1):
        largest = max(largest, at_c[p + 1] - at_c[p])
    plan = np.empty(largest)
    u = np.empty(at_s[p1] - at_s[p0])
    v = np.empty(at_t[p1] - at_t[p0])
    value = np.zeros(1)
    for p in range(p0, p1):
        size_s = at_s[p + 1] - at_s[p]
        size_t = at_t[p + 1] - at_t[p]
        if kind[p] != SOLVE or size_s < 2 or size_t < 2:
            continue
        value[0] = 0.0
        codes[p - p0] = _network_simplex(
            address,
            left_s[at_s[p] : at_s[p + 1]],
            left_t[at_t[p] : at_t[p + 1]],
            costs[at_c[p] : at_c[p + 1]],
            plan,
            u[:size_s],
            v[:size_t],
            value,
            max_iter,
        )
        out[p - p0] = value[0]
    return codes
