"""Compiled kernels for the Gamma and Dirichlet mean-parameter maps.

Private: they take contiguous float64 arrays, assume validated input and are
wrapped by :mod:`efvi.expfam._special`.  Everything is built on one evaluation of
the digamma function and its first two derivatives at ``x > 0``,

.. math::

    \\psi(x) = \\log y - h, \\qquad \\psi'(x) = 1/x + g, \\qquad \\psi''(x) = t,

where ``y = x + 10`` if ``x < 10`` (else ``y = x``), the ten recurrence terms
:math:`\\psi(x) = \\psi(x + 10) - \\sum_{k<10} 1/(x + k)` are summed as
:math:`1/x + Q'(x)/Q(x)` with :math:`Q(x) = \\prod_{k=1}^{9}(x + k)` (and its
derivatives for :math:`\\psi', \\psi''`), and the asymptotic series in
Bernoulli numbers up to :math:`B_{14}` is accurate to 1e-16 relative at
``y >= 10``.  The evaluation has no branches or loops that depend on ``x``, so
a loop of it over an array vectorises; keeping ``log y`` apart lets callers
form :math:`\\log x - \\psi(x) = \\log(x / y) + h` and differences of
digammas with one logarithm and no cancellation.

Numba options are set here for every compiled kernel of ``expfam`` (the KL
kernels of :mod:`efvi.expfam._bregman_kernels`, the linear algebra of
:mod:`efvi.expfam._linalg_kernels`, the Categorical, Gaussian and
Normal-Wishart kernels beside their families), together with the one helper
they share, :func:`compensated_add`; rather than imported from ``models``,
because ``expfam`` imports neither of the other packages.  They match
``efvi.models._numba.NUMBA_OPTIONS`` (cached where :mod:`efvi.expfam.numba_cache`
finds a writable place, no fastmath, so NaN and inf keep their IEEE meaning)
plus ``error_model="numpy"``: a division by zero gives inf as in numpy instead
of raising, which is what lets LLVM vectorise the loops.
"""

import os
from math import exp, log, log1p, sqrt

import numba
import numpy as np

from .numba_cache import cache_enabled

_NUMBA_OPTIONS = dict(nopython=True, cache=cache_enabled(os.path.dirname(__file__)), nogil=True, fastmath=False,
                      error_model="numpy")

MAX_ITER = 100
"""Iterations allowed before a solve counts as not converged."""
_NEWTON_TOL = 3e-8
"""Stop after a (quadratic) Newton step this small: the error left is ~1e-15."""
_CUBIC_TOL = 2e-5
"""Stop after a (cubic) Halley/Chebyshev step this small: the error left is ~1e-14."""
_CUBIC_FROM = 0.2
"""Use the cubic correction once every relative Newton step is below this."""
_BLOCK_ROWS = 256
"""Dirichlet rows whose digamma evaluations are batched into one vectorised loop."""
_EULER = 0.5772156649015329
_ZETA2 = 1.6449340668482264
_Q_COEFFICIENTS = (45.0, 870.0, 9450.0, 63273.0, 269325.0, 723680.0, 1172700.0, 1026576.0, 362880.0)
"""``Q(x) = (x + 1)(x + 2)...(x + 9)``, highest power first after the leading 1."""


# ------------------------------------------------------------------ sums
@numba.jit(inline="always", **_NUMBA_OPTIONS)
def compensated_add(total, error, value):
    """Add ``value`` to the sum held as ``total + error``; return the new pair.

    Knuth's TwoSum gives the rounding error of ``total + value`` exactly, and
    the errors are summed apart (Neumaier): the final ``total + error`` is the
    exact sum rounded, plus at most about ``n u^2`` times the sum of the
    magnitudes, in any order (at least as accurate as numpy's pairwise sums,
    which every kernel of expfam that sums more than a few terms replaces).
    """
    summed = total + value
    virtual = summed - total
    return summed, error + ((total - (summed - virtual)) + (value - virtual))


# ------------------------------------------------------------------ digamma
@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _log_minus_digamma_series(y):
    """``log y - psi(y)`` for ``y >= 10`` by the asymptotic series."""
    r = 1.0 / y
    r2 = r * r
    return 0.5 * r + r2 * (1 / 12 - r2 * (1 / 120 - r2 * (1 / 252 - r2 * (
        1 / 240 - r2 * (1 / 132 - r2 * (691 / 32760 - r2 / 12))))))


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _digamma_parts(x):
    """Return ``(y, h, g, t)`` with ``psi(x) = log y - h``, ``psi'(x) = 1/x + g``, ``psi''(x) = t``."""
    shifted = x < 10.0
    z = x if shifted else 1.0
    # Q and its first three derivatives by Horner's rule: sum_{k=1}^{9} (x + k)^-j from them
    q, d1, d2, d3 = 1.0, 0.0, 0.0, 0.0
    for c in _Q_COEFFICIENTS:
        d3 = d3 * z + 3.0 * d2
        d2 = d2 * z + 2.0 * d1
        d1 = d1 * z + q
        q = q * z + c
    inv_q = 1.0 / q
    s1 = d1 * inv_q
    s2 = s1 * s1 - d2 * inv_q
    s3 = s1 * s2 + 0.5 * (d3 - d2 * s1) * inv_q
    y = x + 10.0 if shifted else x
    r = 1.0 / y
    r2 = r * r
    h = _log_minus_digamma_series(y)
    g = 0.5 * r2 + r * r2 * (1 / 6 - r2 * (1 / 30 - r2 * (1 / 42 - r2 * (
        1 / 30 - r2 * (5 / 66 - r2 * (691 / 2730 - r2 * 7 / 6))))))
    t = -r2 * (1.0 + r * (1.0 + r * (0.5 - r2 * (1 / 6 - r2 * (
        1 / 6 - r2 * (3 / 10 - r2 * 5 / 6))))))
    rx = 1.0 / x
    h = h + s1 + rx if shifted else h
    g = g + s2 + rx * rx - 10.0 * rx * r if shifted else g  # 1/y - 1/x = -10 / (x y)
    t = t - 2.0 * (s3 + rx * rx * rx) if shifted else t
    return y, h, g, t


@numba.jit(**_NUMBA_OPTIONS)
def _digamma_parts_array(x, y, h, g, t, size):
    """:func:`_digamma_parts` of ``x[:size]`` into ``y, h, g, t`` (a vectorised loop)."""
    for i in range(size):
        y[i], h[i], g[i], t[i] = _digamma_parts(x[i])


@numba.jit(**_NUMBA_OPTIONS)
def _digamma_increment(x, d):
    """``psi(x + d) - psi(x)`` for ``x > 0``, ``d >= 0``, accurate relative to the result.

    Term by term: ``1/(x + k) - 1/(x + d + k) = d / ((x + k)(x + d + k))``
    through the recurrence, then ``log1p(d / y)`` minus the change of the
    (small) series.
    """
    total = 0.0
    y = x
    while y < 10.0:
        total += d / (y * (y + d))
        y += 1.0
    return total + log1p(d / y) - (_log_minus_digamma_series(y + d) - _log_minus_digamma_series(y))


# ---------------------------------------------------------------------- Gamma
@numba.jit(**_NUMBA_OPTIONS)
def _gamma_shape(gap):
    """Solve ``log a - psi(a) = gap`` for ``a``; return ``(a, converged)``.

    Halley's method on ``H = log f(a) - log gap`` in ``log a``, with
    ``f = log a - psi(a)``; ``H`` is nearly linear in ``log a`` in both limits
    (``f ~ 1/a`` and ``f ~ 1/(2a)``).  Starts from Minka's approximation.
    """
    shape = (3.0 - gap + sqrt((gap - 3.0) ** 2 + 24.0 * gap)) / (12.0 * gap)
    log_gap = log(gap)
    for _ in range(MAX_ITER):
        y, h, g, t = _digamma_parts(shape)
        f = log(shape / y) + h if y != shape else h
        value = log(f) - log_gap
        slope = -shape * g / f
        curvature = slope - shape * shape * ((t + 1.0 / (shape * shape)) / f + g * g / (f * f))
        newton = -value / slope
        denominator = 1.0 + 0.5 * newton * curvature / slope
        cubic = denominator > 0.5
        step = newton / denominator if cubic else newton
        shape *= exp(step)
        if abs(step) < (_CUBIC_TOL if cubic else _NEWTON_TOL):
            return shape, True
    return shape, False


@numba.jit(**_NUMBA_OPTIONS)
def gamma_shape_kernel(gap, out):
    """``out[i] = a`` solving ``log a - psi(a) = gap[i]``; return the number not converged."""
    failed = 0
    for i in range(gap.shape[0]):
        out[i], ok = _gamma_shape(gap[i])
        failed += not ok
    return failed


# ------------------------------------------------------------------ Dirichlet
@numba.jit(**_NUMBA_OPTIONS)
def _pack_block(alpha, rows, count, x, big, rest):
    """Lay out ``alpha[rows[j]]`` and its total as ``x[j (K+1) : (j+1)(K+1)]`` for ``j < count``.

    Also records each row's largest component ``big[j]`` and the sum of the
    others ``rest[j]``, so the total is ``alpha[big] + rest`` with ``rest``
    exact to rounding however small it is.
    """
    K = alpha.shape[1]
    for j in range(count):
        row = alpha[rows[j]]
        largest = 0
        for k in range(1, K):
            if row[k] > row[largest]:
                largest = k
        others = 0.0
        for k in range(K):
            if k != largest:
                others += row[k]
            x[j * (K + 1) + k] = row[k]
        x[j * (K + 1) + K] = row[largest] + others
        big[j] = largest
        rest[j] = others


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _mean_log_from_parts(alpha, big, rest, y, h, g, t, mean_log, inv_trigamma, curvature):
    """``mean_log[k] = psi(alpha_k) - psi(alpha_0)`` from the digamma parts of one row.

    ``y, h, g, t`` hold the parts of ``alpha`` then of ``alpha_0``.  Also fills
    ``inv_trigamma[k] = 1 / psi'(alpha_k)`` and ``curvature[k] = psi''(alpha_k)``;
    returns ``(1 / psi'(alpha_0), psi''(alpha_0))``.  The other components are
    at most half of ``alpha_0``, so ``log(y_k / y_0) - h_k + h_0`` does not
    cancel; the largest one uses :func:`_digamma_increment`, which keeps its
    relative accuracy however close ``alpha_k`` is to ``alpha_0``.
    """
    K = alpha.shape[0]
    for k in range(K):
        if k == big:
            mean_log[k] = -_digamma_increment(alpha[k], rest)
        else:
            mean_log[k] = log(y[k] / y[K]) - h[k] + h[K]
        inv_trigamma[k] = alpha[k] / (1.0 + g[k] * alpha[k])
        curvature[k] = t[k]
    total = alpha[big] + rest
    return total / (1.0 + g[K] * total), t[K]


@numba.jit(**_NUMBA_OPTIONS)
def dirichlet_mean_log_kernel(alpha, out):
    """``out = psi(alpha) - psi(alpha_0)`` row-wise for ``alpha`` of shape ``(n, K)``."""
    n, K = alpha.shape
    width = K + 1
    x, y, h = np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width)
    g, t = np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width)
    rows = np.empty(_BLOCK_ROWS, dtype=np.int64)
    big = np.empty(_BLOCK_ROWS, dtype=np.int64)
    rest = np.empty(_BLOCK_ROWS)
    inv_trigamma, curvature = np.empty(K), np.empty(K)
    for start in range(0, n, _BLOCK_ROWS):
        count = min(_BLOCK_ROWS, n - start)
        for j in range(count):
            rows[j] = start + j
        _pack_block(alpha, rows, count, x, big, rest)
        _digamma_parts_array(x, y, h, g, t, count * width)
        for j in range(count):
            parts = slice(j * width, (j + 1) * width)
            _mean_log_from_parts(alpha[start + j], big[j], rest[j], y[parts], h[parts], g[parts], t[parts],
                                 out[start + j], inv_trigamma, curvature)


@numba.jit(**_NUMBA_OPTIONS)
def _approx_inverse_digamma(y, exp_y):
    """``(psi^{-1}(y), d psi^{-1}/dy)`` to within 0.3 %, given ``exp_y = e^y``.

    Above ``psi(2.2)``: ``e^y + 1/2 - 1/(24 e^y)`` (the asymptotic inverse).
    Below ``psi(0.12)``: the root of ``-1/x - gamma + zeta(2) x = y``.
    Between: ``1 / P(y)`` with ``P`` a quartic fitted to minimise the relative error.
    """
    if y >= 0.5442934367411452:
        return exp_y + 0.5 - 1.0 / (24.0 * exp_y), exp_y + 1.0 / (24.0 * exp_y)
    if y >= -8.728788667267626:
        p = (((0.000509490099 * y + 0.0123831633) * y + 0.113443597) * y - 0.48901362) * y + 0.684417297
        dp = ((4.0 * 0.000509490099 * y + 3.0 * 0.0123831633) * y + 2.0 * 0.113443597) * y - 0.48901362
        value = 1.0 / p
        return value, -dp * value * value
    a = y + _EULER
    root = sqrt(a * a + 4.0 * _ZETA2)
    value = 2.0 / (root - a)
    return value, 0.5 * value * value * (1.0 - a / root)


@numba.jit(**_NUMBA_OPTIONS)
def _dirichlet_start(mean_log, alpha):
    """Starting point: solve for ``u = psi(alpha_0)`` with approximate inverse digammas.

    Every ``alpha_k = psi^{-1}(mean_log_k + u)`` and ``alpha_0 = psi^{-1}(u)``,
    so ``sum_k psi^{-1}(mean_log_k + u) = psi^{-1}(u)`` is one equation in
    ``u``; with :func:`_approx_inverse_digamma` it costs no special functions.
    Start from its large-concentration root ``e^u = (K - 1) / (2 (1 - c))``,
    ``c = sum_k exp(mean_log_k) < 1``, and take two damped Newton steps.
    """
    K = mean_log.shape[0]
    c = 0.0
    for k in range(K):
        alpha[k] = exp(mean_log[k])
        c += alpha[k]
    u = log((K - 1) / (2.0 * (1.0 - c)))
    for _ in range(2):
        exp_u = exp(u)
        value, slope = _approx_inverse_digamma(u, exp_u)
        value, slope = -value, -slope
        for k in range(K):
            v, d = _approx_inverse_digamma(mean_log[k] + u, alpha[k] * exp_u)
            value += v
            slope += d
        u -= min(2.0, max(-2.0, value / slope))
    exp_u = exp(u)
    for k in range(K):
        alpha[k] = _approx_inverse_digamma(mean_log[k] + u, alpha[k] * exp_u)[0]


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _dirichlet_step(mean_log, alpha, big, rest, y, h, g, t, residual, inv_trigamma, curvature):
    """One step of the solve of ``psi(alpha_k) - psi(alpha_0) = mean_log_k``; return converged.

    The Jacobian ``J = diag(psi'(alpha)) - psi'(alpha_0) 1 1^T`` is inverted
    by Sherman-Morrison.  Far from the root a Newton step ``d`` is applied
    per component as ``alpha_k / (1 + s_k)`` if it shrinks ``alpha_k`` (exact
    where ``psi ~ -1/alpha``) or ``alpha_k exp(-s_k)`` if it grows it (exact
    where ``psi ~ log alpha``), ``s_k = d_k / alpha_k``, so ``alpha`` stays
    positive.  Close to it, Chebyshev's cubic step
    ``J^{-1}(r + T[d, d] / 2)`` with the second-derivative tensor
    ``T[d, d]_k = psi''(alpha_k) d_k^2 - psi''(alpha_0) (sum d)^2``.
    """
    K = mean_log.shape[0]
    inv_trigamma_total, curvature_total = _mean_log_from_parts(
        alpha, big, rest, y, h, g, t, residual, inv_trigamma, curvature)
    # J^{-1} v = D^{-1} v + D^{-1} 1 (sum_k v_k / q_k) / (1/q_0 - sum_k 1/q_k), with 1/q = inv_trigamma
    denominator = inv_trigamma_total
    weighted = 0.0
    for k in range(K):
        residual[k] -= mean_log[k]
        weighted += residual[k] * inv_trigamma[k]
        denominator -= inv_trigamma[k]
    shift = weighted / denominator
    largest = 0.0
    step_sum = 0.0
    for k in range(K):
        residual[k] = (residual[k] + shift) * inv_trigamma[k]  # the Newton step: alpha -= residual
        largest = max(largest, abs(residual[k] / alpha[k]))
        step_sum += residual[k]
    if largest >= _CUBIC_FROM:
        for k in range(K):
            relative = residual[k] / alpha[k]
            alpha[k] = alpha[k] / (1.0 + relative) if relative >= 0.0 else alpha[k] * exp(-relative)
        return False
    weighted = 0.0
    common = curvature_total * step_sum * step_sum
    for k in range(K):
        curvature[k] = 0.5 * (curvature[k] * residual[k] * residual[k] - common) * inv_trigamma[k]
        weighted += curvature[k]
    shift = weighted / denominator
    largest = 0.0
    for k in range(K):
        step = residual[k] + curvature[k] + shift * inv_trigamma[k]
        alpha[k] -= step
        largest = max(largest, abs(step / alpha[k]))
    return largest < _CUBIC_TOL


@numba.jit(**_NUMBA_OPTIONS)
def dirichlet_solve_kernel(mean_log, out):
    """Solve row-wise for ``mean_log`` of shape ``(n, K)``; return the number of rows not converged.

    Rows are processed in blocks; within a block the digamma evaluations of
    all rows still iterating go through one vectorised loop per step.
    """
    n, K = mean_log.shape
    width = K + 1
    x, y, h = np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width)
    g, t = np.empty(_BLOCK_ROWS * width), np.empty(_BLOCK_ROWS * width)
    rows = np.empty(_BLOCK_ROWS, dtype=np.int64)
    big = np.empty(_BLOCK_ROWS, dtype=np.int64)
    rest = np.empty(_BLOCK_ROWS)
    residual, inv_trigamma, curvature = np.empty(K), np.empty(K), np.empty(K)
    failed = 0
    for start in range(0, n, _BLOCK_ROWS):
        count = min(_BLOCK_ROWS, n - start)
        for j in range(count):
            rows[j] = start + j
            _dirichlet_start(mean_log[start + j], out[start + j])
        for _ in range(MAX_ITER):
            if count == 0:
                break
            _pack_block(out, rows, count, x, big, rest)
            _digamma_parts_array(x, y, h, g, t, count * width)
            still = 0
            for j in range(count):
                i = rows[j]
                parts = slice(j * width, (j + 1) * width)
                if not _dirichlet_step(mean_log[i], out[i], big[j], rest[j], y[parts], h[parts], g[parts],
                                       t[parts], residual, inv_trigamma, curvature):
                    rows[still] = i
                    still += 1
            count = still
        failed += count
    return failed
