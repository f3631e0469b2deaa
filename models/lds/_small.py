r"""Small dense linear algebra on the per-step work variables of the Kalman kernels (:mod:`._kernels`).

The per-step state (``m``, ``P``, the prediction, the gain) lives in work
variables that are either tuples or small arrays, chosen by :func:`work_for`:
vectors are ``d``-long and matrices flat ``d * d``-long in row-major order
(entry ``(i, j)`` at ``i * d + j``).  The Kalman kernels take
``dims = (0,) * d``, so that ``d = len(dims)`` is a compile-time constant (one
cached compilation per ``d``) and LLVM unrolls the loops over the state, and
are written once against three helpers: ``x[i]`` reads, ``x = _set(x, i, v)``
writes and ``_fresh(x)`` makes an independent work variable.

* ``d <= TUPLE_MAX_D``: tuples.  After unrolling they stay in registers
  (``_set`` is numba's ``tuple_setitem``).  Small numpy arrays would not do:
  every store into an array might alias every other array and forces
  reloads.  This is 1.5-2x faster at ``d = 2``.
* larger ``d``: arrays allocated once per call and updated in place
  (``_set`` assigns and returns the array).  Tuples there would compile for
  minutes and run in ``O(d^2)`` per element access.

Everything here is inlined into the time loops.
"""

import math

import numba
import numpy as np
from numba.core import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload

from .._numba import NUMBA_OPTIONS

TUPLE_MAX_D = 3
"""Largest state dimension whose work variables are tuples (see the module notes)."""


def work_for(d):
    """The last three arguments of the kernels for state dimension ``d``: ``dims, zeros, zz``.

    ``dims = (0,) * d`` makes ``d = len(dims)`` a compile-time constant in
    either mode; ``zeros`` and ``zz`` are the templates of the vector and
    flat-matrix work variables: tuples ``(0.0,) * d`` and ``(0.0,) * (d * d)``
    up to ``TUPLE_MAX_D``, arrays beyond (module notes).
    """
    if d <= TUPLE_MAX_D:
        return (0,) * d, (0.0,) * d, (0.0,) * (d * d)
    return (0,) * d, np.zeros(d), np.zeros(d * d)


def _set(x, i, v):
    """``x`` with entry ``i`` set to ``v`` (compiled only, see the overload)."""
    raise NotImplementedError("compiled-only helper")


@overload(_set, inline="always")
def _set_overload(x, i, v):
    if isinstance(x, types.UniTuple):
        return lambda x, i, v: tuple_setitem(x, i, v)
    if isinstance(x, types.Array):
        def set_in_place(x, i, v):
            x[i] = v
            return x
        return set_in_place
    return None


def _fresh(x):
    """An independent work variable shaped like ``x`` (compiled only, see the overload)."""
    raise NotImplementedError("compiled-only helper")


@overload(_fresh, inline="always")
def _fresh_overload(x):
    if isinstance(x, types.UniTuple):
        return lambda x: x
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    return None


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _copy_into(dst, src):
    """``dst`` holding the entries of ``src``."""
    for k in range(len(src)):
        dst = _set(dst, k, src[k])
    return dst


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _ldl(M, F, inv_pivots, indefinite, dims):
    """``L D L^T`` factorisation of the symmetric flat ``d * d`` matrix ``M`` into ``F`` (lower triangle read).

    Square-root free (one division per pivot), which matters at small ``d``
    where it runs once per time step.  Returns ``(F, inv_pivots, ok)``: the
    strict lower triangle of ``F`` holds the unit factor ``L``, its strict
    upper triangle ``(L D)^T``; ``inv_pivots`` (d) holds ``1 / D``; ``ok`` is
    False if a pivot is not positive (``M`` not positive definite), or, if
    ``indefinite``, only if a pivot is zero or not finite (no pivoting: a
    symmetric indefinite ``M`` whose leading minors are all nonzero).
    """
    d = len(dims)
    F = _copy_into(F, M)
    for j in range(d):
        s = F[j * d + j]
        for k in range(j):
            s -= F[j * d + k] * F[k * d + j]
        if not s > 0.0 and not (indefinite and -math.inf < s < 0.0):
            return F, inv_pivots, False
        inv = 1.0 / s
        inv_pivots = _set(inv_pivots, j, inv)
        for i in range(j + 1, d):
            s = F[i * d + j]
            for k in range(j):
                s -= F[i * d + k] * F[k * d + j]
            F = _set(F, j * d + i, s)
            F = _set(F, i * d + j, s * inv)
    return F, inv_pivots, True


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _ldl_solve(F, inv_pivots, B, dims):
    """``M^{-1} B`` in place of the flat ``d * d`` matrix ``B`` (``d`` columns), given ``_ldl(M)``."""
    d = len(dims)
    for c in range(d):
        for i in range(d):
            s = B[i * d + c]
            for k in range(i):
                s -= F[i * d + k] * B[k * d + c]
            B = _set(B, i * d + c, s)
        for i in range(d - 1, -1, -1):
            s = B[i * d + c] * inv_pivots[i]
            for k in range(i + 1, d):
                s -= F[k * d + i] * B[k * d + c]
            B = _set(B, i * d + c, s)
    return B


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _affine(M, im, mean, cov, shift, ish, noise, ino, out_mean, MP, out_cov, dims):
    """Push ``N(mean, cov)`` through ``x -> M[im] x + shift[ish] + N(0, noise[ino])``.

    ``M`` (n, d, d), ``shift`` (n, d) and ``noise`` (n, d, d) are stacks read
    at the given indices; ``mean``, ``cov`` are work variables (flat ``cov``).
    Returns ``(out_mean, MP, out_cov)`` with ``MP = M[im] cov``, which both
    callers need again; ``out_cov`` may be ``cov`` itself (it is written only
    after ``MP`` is complete), ``out_mean`` may not be ``mean``.  Only the
    upper triangle of ``out_cov`` is computed, then mirrored.
    """
    d = len(dims)
    for i in range(d):
        acc = shift[ish, i]
        for k in range(d):
            acc += M[im, i, k] * mean[k]
        out_mean = _set(out_mean, i, acc)
        for j in range(d):
            acc = 0.0
            for k in range(d):
                acc += M[im, i, k] * cov[k * d + j]
            MP = _set(MP, i * d + j, acc)
    for i in range(d):
        for j in range(i, d):
            acc = noise[ino, i, j]
            for k in range(d):
                acc += MP[i * d + k] * M[im, j, k]
            out_cov = _set(out_cov, i * d + j, acc)
            out_cov = _set(out_cov, j * d + i, acc)
    return out_mean, MP, out_cov
