"""Pairwise squared distances as an autograd primitive, and a safe square root.

Stationary kernels are functions of the scaled distance.  With inputs scaled
by the lengthscales, :math:`a_i = x_i / \\ell`, the squared distance is

.. math::

    r^2_{ij} = \\lVert a_i - b_j \\rVert^2,
    \\qquad
    \\frac{\\partial r^2_{ij}}{\\partial a_i} = 2 (a_i - b_j).

The forward pass uses exact differences (a numba kernel, see ``_kernels.py``)
for up to ``_NUMBA_MAX_DIM`` features, where it is faster than BLAS.  Beyond
that it uses the BLAS expansion :math:`|a|^2 + |b|^2 - 2 a b^T` on inputs
centred at the mean of ``a``, whose rounding error is a few
:math:`\\epsilon (|a|^2 + |b|^2)`; pairs closer than
``_REFINE_RATIO * (|a|^2 + |b|^2)`` (near-duplicates, where that error would
dominate and a square root would amplify it) are recomputed from exact
differences, so every entry keeps a relative error of about
:math:`10^{-12}` or better.  Both routes give an exactly symmetric matrix with
a zero diagonal when ``b`` is None.  The
vector-Jacobian products are written with BLAS, so that autograd
differentiates kernel matrices with respect to ARD lengthscales at the cost of
two matrix products.

:func:`safe_sqrt` returns :math:`\\sqrt{\\max(r^2, 10^{-300})}`: at coincident
points that is :math:`10^{-150}` (invisible in any kernel value) with a zero
gradient, instead of the NaN that ``inf * 0`` would give; a stationary kernel
equals its variance there for every lengthscale, so zero is the correct
gradient.
"""

import autograd.numpy as anp
import numpy as np
from autograd.extend import defvjp, primitive

from ._kernels import _sqdist

_NUMBA_MAX_DIM = 10
_REFINE_RATIO = 1e-3
_SQRT_FLOOR = 1e-300


@primitive
def sqdist(a, b=None):
    """Pairwise squared Euclidean distances.

    Parameters
    ----------
    a : ndarray, shape (N, D)
    b : ndarray, shape (M, D), or None
        None means ``b = a``; the result is then exactly symmetric with a
        zero diagonal.

    Returns
    -------
    ndarray, shape (N, M)
        ``r2[i, j] = |a[i] - b[j]|^2 >= 0``.
    """
    a = np.ascontiguousarray(a, dtype=float)
    b = a if b is None else np.ascontiguousarray(b, dtype=float)
    if a.shape[1] <= _NUMBA_MAX_DIM:
        return _sqdist(a, b)
    symmetric = b is a
    shift = a.mean(axis=0)
    a = a - shift
    b = a if symmetric else b - shift
    sq_a, sq_b = np.einsum("ij,ij->i", a, a), np.einsum("ij,ij->i", b, b)
    r2 = a @ b.T
    r2 *= -2.0
    r2 += sq_a[:, None]
    r2 += sq_b[None, :]
    rows, cols = np.nonzero(r2 < _REFINE_RATIO * (sq_a[:, None] + sq_b[None, :]))
    r2[rows, cols] = np.einsum("ij,ij->i", a[rows] - b[cols], a[rows] - b[cols])
    np.maximum(r2, 0.0, out=r2)
    if symmetric:  # BLAS need not return an exactly symmetric Gram matrix
        r2 = 0.5 * (r2 + r2.T)
        np.fill_diagonal(r2, 0.0)
    return r2


def _vjp_a(ans, a, b=None):
    def vjp(g):
        if b is None:
            g = g + g.T
            return 2.0 * (g.sum(axis=1)[:, None] * a - g @ a)
        return 2.0 * (g.sum(axis=1)[:, None] * a - g @ b)

    return vjp


def _vjp_b(ans, a, b):
    return lambda g: 2.0 * (g.sum(axis=0)[:, None] * b - g.T @ a)


defvjp(sqdist, _vjp_a, _vjp_b)


def safe_sqrt(r2):
    """Elementwise square root with a zero (not NaN) gradient at ``r2 = 0``.

    Values below ``1e-300`` are raised to it before the root.

    Parameters
    ----------
    r2 : array_like
        Non-negative values (autograd boxes allowed).

    Returns
    -------
    array_like
        ``sqrt(r2)``, same shape.
    """
    return anp.sqrt(anp.maximum(r2, _SQRT_FLOOR))
