r"""Generic Gauss-Hermite kernels shared by every likelihood.

A likelihood hands the kernels two compiled scalar functions (first-class
numba functions):

``log_lik(y, a, c, params) -> (ell, ell', ell'')``
    the part of :math:`\log p(y \mid a)` that depends on the latent :math:`a`,
    and its first two derivatives in :math:`a`;
``log_base(y, c, params) -> b``
    the rest, :math:`\log p(y \mid a) = b(y) + \ell(y, a)`, computed once per
    data point instead of once per node,

where ``c`` is a per-data-point parameter (trials, log exposure; 0 when there
is none) and ``params`` holds the likelihood's global parameters.  For
:math:`a_i \sim \mathcal N(m_i, v_i)` the kernels return

.. math::

    E_i = b(y_i) + \sum_k w_k \ell(a_{ik}), \quad
    \frac{\partial E_i}{\partial m_i} = \sum_k w_k \ell'(a_{ik}), \quad
    \frac{\partial E_i}{\partial v_i} = \sum_k w_k \ell'(a_{ik}) \frac{z_k}{2 \sqrt{v_i}},

with :math:`a_{ik} = m_i + \sqrt{v_i} z_k`: the exact derivatives of the
quadrature rule itself, so that the ELBO the engine evaluates and the gradient
it follows agree to rounding (Price's :math:`\tfrac12 \sum_k w_k \ell''` differs
from them by the quadrature error, which stalls an ELBO-checked step size).
The symmetric nodes are summed in pairs, :math:`z_k (\ell'(m + s z_k) - \ell'(m - s z_k))`,
so the :math:`v` derivative has no cancellation as :math:`v \to 0`, where it
tends to Price's form.  Each point's rule comes from the adaptive ladder of
:mod:`efvi.models.likelihoods._quadrature`.  A NaN :math:`y_i` is a missing observation: its three
outputs are exactly 0.

The scalar functions are passed as first-class function values with fixed
signatures rather than as dispatchers: a dispatcher-typed argument is keyed by
object identity, so numba's on-disk cache would miss in every new process,
whereas these kernels are compiled once, cached, and shared by all
likelihoods.  ``per_point`` has length 1 (one value for every point) or N.
"""

import math

import numba
import numpy as np
from numba import types

from .._numba import NUMBA_OPTIONS

_F8 = types.float64
_VEC = types.float64[::1]

LOG_LIK = types.FunctionType(types.UniTuple(_F8, 3)(_F8, _F8, _F8, _VEC))
"""Type of ``log_lik(y, a, c, params) -> (value, d/da, d2/da2)``."""

LOG_BASE = types.FunctionType(_F8(_F8, _F8, _VEC))
"""Type of ``log_base(y, c, params) -> value``."""

MOMENTS = types.FunctionType(types.UniTuple(_F8, 2)(_F8, _F8, _VEC))
"""Type of ``moments(a, c, params) -> (E[y | a], Var[y | a])``."""

_MAT = types.float64[:, ::1]
_IVEC = types.int64[::1]
_VEC3 = types.UniTuple(_VEC, 3)
_VEC2 = types.UniTuple(_VEC, 2)
_NEWTON_STEPS = 50
_HALVINGS = 60


@numba.jit(_VEC3(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC, _VEC, _MAT, _MAT, _IVEC, _VEC, _F8), **NUMBA_OPTIONS)
def _gh_expectations(log_lik, log_base, mean, var, y, per_point, params, nodes, weights, counts, sd_edges,
                     price_below):
    """E[log p(y_i | a_i)] and its derivatives in (m_i, v_i); see the module docstring.

    A point with ``v_i = 0`` needs one evaluation: ``E = ell(m)``,
    ``dE/dm = ell'(m)``, ``dE/dv = ell''(m) / 2``.

    Point ``i`` uses rule ``r``, the first with ``sqrt(v_i) <= sd_edges[r]`` (the last otherwise);
    ``nodes[r, :counts[r]]`` are symmetric (``z_k = -z_{n-1-k}``) with equal paired weights.
    Below ``sqrt(v_i) = price_below`` the rule is exact to rounding, and the ``v`` derivative
    uses Price's form, which avoids dividing a difference of ``ell'`` by a tiny ``sqrt(v_i)``.
    """
    n = mean.shape[0]
    shared = per_point.shape[0] == 1
    value = np.zeros(n)
    d_mean = np.zeros(n)
    d_var = np.zeros(n)
    for i in range(n):
        y_i = y[i]
        if math.isnan(y_i):
            continue
        c = per_point[0] if shared else per_point[i]
        scale = math.sqrt(var[i])
        if scale == 0.0:
            ell, d1, d2 = log_lik(y_i, mean[i], c, params)
            value[i] = log_base(y_i, c, params) + ell
            d_mean[i] = d1
            d_var[i] = 0.5 * d2
            continue
        r = 0
        while r < sd_edges.shape[0] and scale > sd_edges[r]:
            r += 1
        size = counts[r]
        m = mean[i]
        e = 0.0
        g = 0.0
        h = 0.0
        t = 0.0
        for k in range(size // 2):
            z = nodes[r, k]
            w = weights[r, k]
            ell_lo, d1_lo, d2_lo = log_lik(y_i, m + scale * z, c, params)
            ell_hi, d1_hi, d2_hi = log_lik(y_i, m - scale * z, c, params)
            e += w * (ell_lo + ell_hi)
            g += w * (d1_lo + d1_hi)
            h += w * (d2_lo + d2_hi)
            t += w * z * (d1_lo - d1_hi)
        if size % 2 == 1:
            ell, d1, d2 = log_lik(y_i, m, c, params)
            w = weights[r, size // 2]
            e += w * ell
            g += w * d1
            h += w * d2
        value[i] = log_base(y_i, c, params) + e
        d_mean[i] = g
        # the exact derivative of the quadrature rule in v, so that E and its gradient agree to
        # rounding; where the rule is exact anyway it equals Price's 1/2 E[d2 log p]
        d_var[i] = 0.5 * h if scale < price_below else t / (2.0 * scale)
    return value, d_mean, d_var


@numba.jit(types.UniTuple(_F8, 2)(LOG_LIK, _F8, _F8, _VEC, _F8, _F8), **NUMBA_OPTIONS)
def _laplace_proposal(log_lik, y, c, params, m, v):
    """Mode and curvature variance of ``ell(a) - (a - m)^2 / (2 v)`` by safeguarded Newton steps.

    Returns ``(m, 0)`` when ``v = 0``.  Where the log integrand is not concave
    at the mode the proposal keeps the prior variance ``v``.
    """
    if v <= 0.0:
        return m, 0.0
    a = m
    ell, d1, d2 = log_lik(y, a, c, params)
    value = ell
    for _ in range(50):
        grad = d1 - (a - m) / v
        curv = d2 - 1.0 / v
        if curv >= 0.0:
            curv = -1.0 / v
        step = -grad / curv
        t = 1.0
        for _ in range(60):
            trial = a + t * step
            ell_t, d1_t, d2_t = log_lik(y, trial, c, params)
            value_t = ell_t - 0.5 * (trial - m) ** 2 / v
            if value_t >= value or not math.isfinite(value):
                break
            t *= 0.5
        a, value, d1, d2 = trial, value_t, d1_t, d2_t
        if abs(t * step) <= 1e-12 * (1.0 + abs(a)):
            break
    curv = d2 - 1.0 / v
    return a, (-1.0 / curv if curv < 0.0 else v)


@numba.jit(_VEC(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC), **NUMBA_OPTIONS)
def _gh_log_predictive(log_lik, log_base, mean, var, y, per_point, params, nodes, log_weights):
    """log of integral p(y_i | a) N(a; m_i, v_i) da by adaptive Gauss-Hermite; NaN where y_i is NaN.

    The rule is centred at the mode of the integrand with its curvature
    variance s2 (the Laplace proposal), and the Gaussian ratio is folded into
    each node's log weight: for a_k = mode + s z_k,
    term_k = log w_k + ell(a_k) - (a_k - m)^2 / (2 v) + z_k^2 / 2 + log(s2 / v) / 2,
    summed by a running log-sum-exp.  Plain Gauss-Hermite would need many
    nodes when the likelihood is much narrower than N(m, v) (large counts).
    """
    n = mean.shape[0]
    shared = per_point.shape[0] == 1
    out = np.empty(n)
    for i in range(n):
        y_i = y[i]
        if math.isnan(y_i):
            out[i] = np.nan
            continue
        c = per_point[0] if shared else per_point[i]
        m = mean[i]
        v = var[i]
        centre, spread = _laplace_proposal(log_lik, y_i, c, params, m, v)
        scale = math.sqrt(spread)
        shift = 0.5 * math.log(spread / v) if v > 0.0 else 0.0
        top = -np.inf
        total = 0.0
        for k in range(nodes.shape[0]):
            a = centre + scale * nodes[k]
            ell, d1, d2 = log_lik(y_i, a, c, params)
            term = log_weights[k] + ell
            if v > 0.0:
                term += shift + 0.5 * nodes[k] * nodes[k] - 0.5 * (a - m) ** 2 / v
            if term == -np.inf:
                continue
            if term > top:
                total = total * math.exp(top - term) + 1.0
                top = term
            else:
                total += math.exp(term - top)
        out[i] = log_base(y_i, c, params) + (top + math.log(total) if total > 0.0 else -np.inf)
    return out


@numba.jit(_VEC2(MOMENTS, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC), **NUMBA_OPTIONS)
def _gh_predictive_moments(moments, mean, var, per_point, params, nodes, weights):
    """Predictive mean and variance of y_i: E[mu(a)] and E[s2(a)] + E[(mu(a) - E mu)^2]."""
    n = mean.shape[0]
    shared = per_point.shape[0] == 1
    out_mean = np.empty(n)
    out_var = np.empty(n)
    for i in range(n):
        c = per_point[0] if shared else per_point[i]
        scale = math.sqrt(var[i])
        mu_bar = 0.0
        for k in range(nodes.shape[0]):
            mu, s2 = moments(mean[i] + scale * nodes[k], c, params)
            mu_bar += weights[k] * mu
        if math.isinf(mu_bar):
            out_mean[i] = mu_bar
            out_var[i] = np.inf
            continue
        spread = 0.0
        for k in range(nodes.shape[0]):
            mu, s2 = moments(mean[i] + scale * nodes[k], c, params)
            spread += weights[k] * (s2 + (mu - mu_bar) ** 2)
        out_mean[i] = mu_bar
        out_var[i] = spread
    return out_mean, out_var


@numba.jit(_VEC3(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC), **NUMBA_OPTIONS)
def _pointwise(log_lik, log_base, latent, y, per_point, params):
    """log p(y_i | a_i) and its first two derivatives in a_i; NaN where y_i is NaN."""
    n = latent.shape[0]
    shared = per_point.shape[0] == 1
    value = np.empty(n)
    d1 = np.empty(n)
    d2 = np.empty(n)
    for i in range(n):
        y_i = y[i]
        if math.isnan(y_i):
            value[i] = d1[i] = d2[i] = np.nan
            continue
        c = per_point[0] if shared else per_point[i]
        ell, g, h = log_lik(y_i, latent[i], c, params)
        value[i] = log_base(y_i, c, params) + ell
        d1[i] = g
        d2[i] = h
    return value, d1, d2


@numba.jit(_VEC(LOG_BASE, _VEC, _VEC, _VEC), **NUMBA_OPTIONS)
def _base_terms(log_base, y, per_point, params):
    """The a-independent part b(y_i) of log p(y_i | a_i) for every point (closed forms reuse it)."""
    n = y.shape[0]
    shared = per_point.shape[0] == 1
    out = np.empty(n)
    for i in range(n):
        out[i] = log_base(y[i], per_point[0] if shared else per_point[i], params)
    return out
