r"""Compiled backward sampling of a state-space posterior from the filter's backward conditionals.

The Kalman filter (:mod:`._kernels`) writes, for every step, the backward
conditional of the prior-times-sites chain,

.. math::

    x_t \mid x_{t+1} \sim N(G_t x_{t+1} + b_t, C_t),

and ends with the last filtered moments ``x_{T-1} ~ N(m_{T-1}, P_{T-1})``.
Drawing ``x_{T-1}`` first and then each ``x_t`` given the draw of
``x_{t+1}`` gives exact joint draws of the posterior (forward filtering,
backward sampling: Carter and Kohn, 1994; Frühwirth-Schnatter, 1994) at
``O(T d^2)`` per draw after one ``O(T d^3)`` filter.  The covariances are
positive semi-definite for a valid posterior (:mod:`._kernels`, validity);
their square roots come from a Cholesky factorisation that sets a pivot
at or below rounding to zero, so an exactly singular ``C_t`` (e.g.
``Q_t = 0``) is sampled too.
"""

import math

import numba

from .._numba import NUMBA_OPTIONS

PIVOT_RTOL = 1e-12
"""A Cholesky pivot at or below this fraction of its diagonal entry is rounding of a singular covariance: zero."""


@numba.jit(**NUMBA_OPTIONS)
def _semidefinite_cholesky(C, root):
    """Lower-triangular ``root`` (d, d) with ``root root^T = C`` for a positive semi-definite ``C`` (d, d).

    A pivot ``<= PIVOT_RTOL * C_jj`` (a direction of zero variance, up to
    rounding) gives a zero column.
    """
    d = C.shape[0]
    for j in range(d):
        for i in range(d):
            root[i, j] = 0.0
    for j in range(d):
        pivot = C[j, j]
        for k in range(j):
            pivot -= root[j, k] * root[j, k]
        if not pivot > PIVOT_RTOL * abs(C[j, j]):
            continue
        diagonal = math.sqrt(pivot)
        root[j, j] = diagonal
        for i in range(j + 1, d):
            value = C[i, j]
            for k in range(j):
                value -= root[i, k] * root[j, k]
            root[i, j] = value / diagonal


@numba.jit(**NUMBA_OPTIONS)
def _backward_sample(H, gains, offsets, cond_covs, base, start, stop, T, last_mean, last_cov, states, normals,
                     out, root, previous):
    """Backward sampling over the steps ``stop-1`` down to ``start`` (of ``T``), from :func:`._kernels._filter`'s
    conditionals.

    ``H`` is (1 or T, d); the conditional of step ``t`` is at index
    ``t - base`` of ``gains`` (·, d, d), ``offsets`` (·, d) and
    ``cond_covs`` (·, d, d).  ``states`` (n, d) holds, on entry, the ``n``
    draws of ``x_stop`` (unread if ``stop == T``: step ``T - 1`` is drawn from
    ``last_mean`` (d,) and ``last_cov`` (d, d)), on return those of
    ``x_start``.  ``normals`` (stop - start, n, d) are standard normal, row
    ``k`` for step ``stop - 1 - k``.  Writes ``out[:, t] = H_t x_t``
    (``out`` is (n, T)).  ``root`` (d, d) and ``previous`` (d,) are work arrays.
    """
    n, d = states.shape
    sH = 1 if H.shape[0] > 1 else 0
    for t in range(stop - 1, start - 1, -1):
        row = stop - 1 - t
        if t == T - 1:
            _semidefinite_cholesky(last_cov, root)
        else:
            _semidefinite_cholesky(cond_covs[t - base], root)
        ih = sH * t
        for s in range(n):
            for i in range(d):
                previous[i] = states[s, i]
            value = 0.0
            for i in range(d):
                x = last_mean[i] if t == T - 1 else offsets[t - base, i]
                if t < T - 1:
                    for k in range(d):
                        x += gains[t - base, i, k] * previous[k]
                for k in range(i + 1):
                    x += root[i, k] * normals[row, s, k]
                states[s, i] = x
                value += H[ih, i] * x
            out[s, t] = value
