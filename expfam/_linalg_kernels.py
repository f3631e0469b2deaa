"""Compiled linear algebra for stacks of small positive-definite matrices.

Private: the kernels take contiguous float64 stacks ``(n, D, D)`` and are
wrapped by :mod:`efvi.expfam._linalg` (and called by the Gaussian and
Normal-Wishart families), which use them for ``D <= REFINE_MAX_DIM``, where
numpy's per-call overhead dominates: a refined inverse of a 2 x 2 stack of four
costs a microsecond instead of some thirty numpy calls.

* :func:`cholesky`: the left-looking (dot-product) algorithm of LAPACK's
  ``dpotf2``, with compensated dot products and a division by each pivot
  rather than a product with its reciprocal; it reports failure instead of
  raising, so that the validity test of a proposal and its factorisation are
  one pass (:func:`symmetric_cholesky_kernel`).
* Solves: forward substitution with ``L`` and back substitution with ``L^T``
  (the same error bound as LAPACK's ``dtrtrs``), then one step of iterative
  refinement whose residual ``b - A x`` is a compensated dot product: every
  product ``a x`` is split exactly into its rounded value and its rounding
  error by a fused multiply-add (``fma(a, x, -p)``, exact), every sum by
  Knuth's TwoSum, and the errors are added at the end (Ogita, Rump and Oishi's
  ``Dot2``).  The residual is then as accurate as if computed in twice the
  working precision and rounded (error at most about ``u |r| + (D u)^2 |A||x|``),
  better than the 64-bit-mantissa ``numpy.longdouble`` residual it replaces,
  and without its conversions.
* Quadratic forms ``|L^-1 x|^2`` by forward substitution.
"""

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from ._kernels import _NUMBA_OPTIONS, compensated_add

SYMMETRY_RTOL = 1e-10
"""How far from symmetric (relative to its largest entry) a matrix parameter may be."""


@intrinsic
def _fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (LLVM's ``llvm.fma.f64``: the instruction, or libm's exact ``fma``)."""
    if not all(isinstance(x, types.Float) for x in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*(context.cast(builder, x, t, types.float64) for x, t in zip(args, signature.args)))

    return types.float64(a, b, c), codegen


@numba.jit(**_NUMBA_OPTIONS)
def is_symmetric(a, rtol):
    """Whether ``a`` ``(D, D)`` is symmetric to ``rtol`` of its largest entry, as
    :func:`efvi.expfam._linalg.is_symmetric`; False with an entry that is not finite (which the
    positive-definiteness test rejects anyway)."""
    dim = a.shape[0]
    largest = 0.0
    for r in range(dim):
        for c in range(dim):
            size = abs(a[r, c])
            if not size < np.inf:
                return False
            largest = max(largest, size)
    for r in range(dim):
        for c in range(r):
            if not abs(a[r, c] - a[c, r]) <= rtol * largest:
                return False
    return True


@numba.jit(**_NUMBA_OPTIONS)
def cholesky(a, out):
    """Lower Cholesky factor of ``a`` ``(D, D)`` (lower triangle read) into ``out``; whether it exists and is finite.

    Column by column (module docstring).  False as soon as a pivot is not
    finite and positive, which also catches every infinite or NaN entry of the
    factor: each enters a later pivot squared.
    """
    dim = a.shape[0]
    for j in range(dim):
        total, error = a[j, j], 0.0
        for k in range(j):
            total, error = compensated_add(total, error, -out[j, k] * out[j, k])
        pivot = total + error
        if not 0.0 < pivot < np.inf:
            return False
        diagonal = np.sqrt(pivot)
        out[j, j] = diagonal
        for i in range(j + 1, dim):
            total, error = a[i, j], 0.0
            for k in range(j):
                total, error = compensated_add(total, error, -out[i, k] * out[j, k])
            out[i, j] = (total + error) / diagonal
        for i in range(j):
            out[i, j] = 0.0
    return True


@numba.jit(**_NUMBA_OPTIONS)
def _cho_solve(chol, rhs, out):
    """``out = A^-1 rhs`` by substitution with ``L`` then ``L^T``; ``out`` may be ``rhs``; shapes ``(D, K)``."""
    dim, width = rhs.shape
    for r in range(dim):
        for j in range(width):
            out[r, j] = rhs[r, j]
        for k in range(r):
            factor = chol[r, k]
            for j in range(width):
                out[r, j] -= factor * out[k, j]
        pivot = chol[r, r]
        for j in range(width):
            out[r, j] /= pivot
    for r in range(dim - 1, -1, -1):
        for k in range(r + 1, dim):
            factor = chol[k, r]
            for j in range(width):
                out[r, j] -= factor * out[k, j]
        pivot = chol[r, r]
        for j in range(width):
            out[r, j] /= pivot


@numba.jit(**_NUMBA_OPTIONS)
def _refine(a, chol, rhs, x, total, error):
    """``x += A^-1 (rhs - A x)``, the residual by compensated dot products (module docstring).

    ``total`` and ``error`` (shape ``(D, K)``) are work space; the products are
    accumulated column by column of ``A``, so that every entry of the residual
    has its own accumulator (independent chains, which the compiler vectorises).
    """
    dim, width = rhs.shape
    for r in range(dim):
        for j in range(width):
            total[r, j] = rhs[r, j]
            error[r, j] = 0.0
    for k in range(dim):
        for r in range(dim):
            factor = -a[r, k]
            for j in range(width):
                product = factor * x[k, j]
                total[r, j], error[r, j] = compensated_add(total[r, j], error[r, j] + _fma(factor, x[k, j], -product),
                                                           product)
    for r in range(dim):
        for j in range(width):
            total[r, j] += error[r, j]
    _cho_solve(chol, total, total)
    for r in range(dim):
        for j in range(width):
            x[r, j] += total[r, j]


@numba.jit(**_NUMBA_OPTIONS)
def refined_solve_kernel(a, chol, rhs, out):
    """``out[i] = A_i^-1 rhs[i]``, refined, for stacks ``a, chol`` ``(n, D, D)`` and ``rhs, out`` ``(n, D, K)``."""
    total, error = np.empty(rhs.shape[1:]), np.empty(rhs.shape[1:])
    for i in range(a.shape[0]):
        _cho_solve(chol[i], rhs[i], out[i])
        _refine(a[i], chol[i], rhs[i], out[i], total, error)


@numba.jit(**_NUMBA_OPTIONS)
def quad_form_kernel(chol, x, out):
    """``out[i, j] = |L_j^-1 x[i, j]|^2`` for ``chol`` ``(m, D, D)``, ``x`` ``(n, m, D)``, ``out`` ``(n, m)``.

    Forward substitution, then the compensated sum of squares.
    """
    dim = chol.shape[1]
    y = np.empty(dim)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            total, error = 0.0, 0.0
            for r in range(dim):
                value = x[i, j, r]
                for k in range(r):
                    value -= chol[j, r, k] * y[k]
                value /= chol[j, r, r]
                y[r] = value
                total, error = compensated_add(total, error, value * value)
            out[i, j] = total + error


@numba.jit(**_NUMBA_OPTIONS)
def symmetric_cholesky_kernel(a, scale, out):
    """Whether every ``scale * a[i]`` of a stack ``(n, D, D)`` is symmetric (``SYMMETRY_RTOL``) and positive
    definite; if so ``out[i]`` holds the Cholesky factor of its symmetric part."""
    n, dim = a.shape[0], a.shape[1]
    part = np.empty((dim, dim))
    for i in range(n):
        if not is_symmetric(a[i], SYMMETRY_RTOL):
            return False
        for r in range(dim):
            for c in range(dim):
                part[r, c] = 0.5 * (scale * a[i, r, c] + scale * a[i, c, r])
        if not cholesky(part, out[i]):
            return False
    return True
