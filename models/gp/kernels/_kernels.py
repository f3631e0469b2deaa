"""Compiled kernels: pairwise squared distances and batched congruences.

For points :math:`a_i, b_j \\in \\mathbb{R}^D` the kernel returns

.. math::

    r^2_{ij} = \\sum_{k=1}^{D} (a_{ik} - b_{jk})^2

from the differences themselves, so that nearby points keep full relative
accuracy (the BLAS expansion :math:`|a|^2 + |b|^2 - 2 a^T b` loses it to
cancellation).  Called with ``b = a`` the result is exactly symmetric with an
exactly zero diagonal: entries ``(i, j)`` and ``(j, i)`` add the same squares
(``(-d)^2 == d^2`` in floating point) in the same order.  The whole matrix is
filled row by row, which is faster than mirroring one triangle into columns.

The congruence kernels compute :math:`A_t P A_t^T` for a batch of small
transition matrices (the process noise :math:`Q_t = P_\\infty - A_t P_\\infty
A_t^T` of a discretised state space) and the two vector-Jacobian products of
:math:`\\langle G, A P A^T \\rangle`,
:math:`(G_t + G_t^T) A_t P` and :math:`\\sum_t A_t^T G_t A_t` (``P``
symmetric), in one pass over ``t`` without ``(T, d, d)`` temporaries.
"""

import numba
import numpy as np

from ..._numba import NUMBA_OPTIONS


@numba.jit(**NUMBA_OPTIONS)
def _sqdist(a, b):
    n, dim = a.shape
    m = b.shape[0]
    out = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            s = 0.0
            for k in range(dim):
                d = a[i, k] - b[j, k]
                s += d * d
            out[i, j] = s
    return out


@numba.jit(**NUMBA_OPTIONS)
def congruence_into(A, P, out, from_p, dims):
    """``out[t] = A[t] P A[t]^T``, or ``P - A[t] P A[t]^T`` when ``from_p``, for symmetric ``P``.

    Each ``out[t]`` is exactly symmetric.  ``dims`` is any tuple of length
    ``d`` (the state dimension): its length is part of the compiled type, so
    the loops are compiled for each state size.  The process noise of a
    state-space kernel, ``Q_t = P_inf - A_t P_inf A_t^T``, is the ``from_p``
    case, with the same sums in the same order.
    """
    T, d = A.shape[0], len(dims)
    AP = np.empty((d, d))
    for t in range(T):
        for a in range(d):
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += A[t, a, i] * P[i, j]
                AP[a, j] = s
        for a in range(d):
            for b in range(a, d):
                s = 0.0
                for j in range(d):
                    s += AP[a, j] * A[t, b, j]
                if from_p:
                    out[t, a, b] = P[a, b] - s
                    out[t, b, a] = P[b, a] - s
                else:
                    out[t, a, b] = s
                    out[t, b, a] = s


@numba.jit(**NUMBA_OPTIONS)
def _congruence_vjp_a(G, A, P):
    """``out[t] = (G[t] + G[t]^T) A[t] P``: the gradient of ``<G, A P A^T>`` in ``A`` for symmetric ``P``."""
    T, d, _ = A.shape
    out = np.empty((T, d, d))
    SA = np.empty((d, d))
    for t in range(T):
        for a in range(d):
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += (G[t, a, i] + G[t, i, a]) * A[t, i, j]
                SA[a, j] = s
        for a in range(d):
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += SA[a, i] * P[i, j]
                out[t, a, j] = s
    return out


@numba.jit(**NUMBA_OPTIONS)
def _congruence_vjp_p(G, A):
    """``sum_t A[t]^T G[t] A[t]``: the gradient of ``<G, A P A^T>`` in ``P``."""
    T, d, _ = A.shape
    out = np.zeros((d, d))
    GA = np.empty((d, d))
    for t in range(T):
        for a in range(d):
            for j in range(d):
                s = 0.0
                for i in range(d):
                    s += G[t, a, i] * A[t, i, j]
                GA[a, j] = s
        for i in range(d):
            for j in range(d):
                s = 0.0
                for a in range(d):
                    s += A[t, a, i] * GA[a, j]
                out[i, j] += s
    return out
