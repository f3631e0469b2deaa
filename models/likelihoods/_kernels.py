r"""Generic Gauss-Hermite kernels shared by every likelihood.

A likelihood hands the kernels two compiled scalar functions (first-class
numba functions, or compile-time constants in its own kernel, see below):

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
tends to Price's form (used where that sum is NaN: :math:`\ell'` infinite at
both nodes of a pair, when :math:`e^{a}` overflows).  Each point's rule comes from the adaptive ladder of
:mod:`efvi.models.likelihoods._quadrature`.  A NaN :math:`y_i` is a missing observation: its three
outputs are exactly 0.

**Each likelihood's own expectations kernel.**  The variational expectations
are the engine's hot path, so a likelihood that integrates numerically
compiles its own copy of them: a short kernel in its module calls
``expectations`` with copies of its scalar functions (``uncached_copies``) and,
for the logistic likelihoods, an exact rule for wide Gaussians
(:mod:`._logistic`; ``no_wide_rule`` for the others).  numba then knows the
functions at compile time and inlines them into the node loop, and caches the
kernel beside the likelihood's module.  A kernel made by a factory that closes
over the functions would miss numba's cache in every new process (numba keys a
closure's entry on the pickled dispatchers, whose identity is per process),
and so would one called from Python with the functions as arguments.  The
other kernels here, and ``_gh_expectations`` for a likelihood without a kernel
of its own, take the scalar functions as first-class function values with
fixed signatures: compiled once, cached and shared by all likelihoods, at the
price of numba looking up each function's address at every call (about 30 us
each) and of an indirect call per node.  numba's cache checks only the time
stamp of the module that defines a kernel, so after editing a function here or
in :mod:`._math`, remove the numba cache files (``__pycache__/*.nbi``, ``*.nbc``)
of this folder to recompile the kernels that use it.  ``per_point`` has length
1 (one value for every point) or N.
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


_UNCACHED = dict(NUMBA_OPTIONS, cache=False)
INLINED = dict(_UNCACHED, inline="always")
"""Options of the kernels compiled into each likelihood's own kernel (numba IR inlining, no cache)."""


@numba.jit(**INLINED)
def _node_sums(log_lik, y, c, params, m, scale, nodes, weights, r, size, price):
    """``sum_k w_k ell(a_k)``, ``sum_k w_k ell'(a_k)`` and, with ``price``, ``sum_k w_k ell''(a_k)``, else the
    paired ``sum_k w_k z_k (ell'(m + s z_k) - ell'(m - s z_k))`` over rung ``r`` (``size`` nodes).

    The sum that is not needed is not computed: the compiler drops ``ell''`` where it goes unused.
    """
    e = 0.0
    g = 0.0
    v = 0.0
    for k in range(size // 2):
        z = nodes[r, k]
        w = weights[r, k]
        ell_lo, d1_lo, d2_lo = log_lik(y, m + scale * z, c, params)
        ell_hi, d1_hi, d2_hi = log_lik(y, m - scale * z, c, params)
        e += w * (ell_lo + ell_hi)
        g += w * (d1_lo + d1_hi)
        if price:
            v += w * (d2_lo + d2_hi)
        else:
            v += w * z * (d1_lo - d1_hi)
    if size % 2 == 1:
        ell, d1, d2 = log_lik(y, m, c, params)
        w = weights[r, size // 2]
        e += w * ell
        g += w * d1
        if price:
            v += w * d2
    return e, g, v


@numba.jit(**INLINED)
def gauss_hermite_point(log_lik, y, c, params, m, scale, nodes, weights, counts, sd_edges, price_below):
    """``(sum_k w_k ell(a_k), dE/dm, dE/dv)`` of one point with ``scale = sqrt(v) >= 0``; see the module docstring.

    The point uses rung ``r``, the first with ``scale <= sd_edges[r]`` (the last otherwise), whose
    ``nodes[r, :counts[r]]`` are symmetric (``z_k = -z_{n-1-k}``) with equal paired weights.  Below
    ``scale = price_below`` the rule is exact to rounding, and the ``v`` derivative uses Price's
    form, which avoids dividing a difference of ``ell'`` by a tiny ``scale``.  With ``v = 0`` one
    evaluation gives ``ell(m)``, ``ell'(m)`` and ``ell''(m) / 2``.
    """
    if scale == 0.0:
        ell, d1, d2 = log_lik(y, m, c, params)
        return ell, d1, 0.5 * d2
    r = 0
    while r < sd_edges.shape[0] and scale > sd_edges[r]:
        r += 1
    size = counts[r]
    price = scale < price_below
    e, g, v = _node_sums(log_lik, y, c, params, m, scale, nodes, weights, r, size, price)
    if price:
        return e, g, 0.5 * v
    if math.isnan(v):
        # ell' infinite at both nodes of a pair (inf - inf, where exp(a) overflows): Price's form
        return e, g, 0.5 * _node_sums(log_lik, y, c, params, m, scale, nodes, weights, r, size, True)[2]
    # the exact derivative of the quadrature rule in v, so that E and its gradient agree to
    # rounding; where the rule is exact anyway it equals Price's 1/2 E[d2 log p]
    return e, g, v / (2.0 * scale)


NO_WIDE_RULE = (np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1, dtype=np.int64), np.array([np.inf]))
"""The wide-Gaussian entries of ``rule`` for a likelihood without such a rule: it starts at ``sqrt(v) = inf``."""


@numba.jit(**INLINED)
def no_wide_rule(y, c, params, m, scale, nodes, weights, counts, sd_edges):
    """The ``wide_rule`` of a likelihood without one (never called: see ``NO_WIDE_RULE``)."""
    return 0.0, 0.0, 0.0


@numba.jit(**INLINED)
def expectations(log_lik, log_base, wide_rule, mean, var, y, per_point, params, rule):
    """E[log p(y_i | a_i)] and its derivatives in (m_i, v_i) for every point.

    ``rule`` is ``(nodes, weights, counts, sd_edges, price_below)`` of the Gauss-Hermite ladder (see
    ``gauss_hermite_point``) followed by ``(nodes, weights, counts, sd_edges)`` of a likelihood's own
    rule for wide Gaussians: points with ``sqrt(v_i) > sd_edges[0]`` of the latter get
    ``wide_rule(y_i, c_i, params, m_i, sqrt(v_i), nodes, weights, counts, sd_edges)`` instead
    (``_logistic``; ``no_wide_rule`` and ``NO_WIDE_RULE`` for the others).  Either returns the
    ``a``-dependent part of ``E_i`` and the two derivatives; ``log_base`` adds the rest.

    Inlined (numba IR) into each likelihood's kernel, so that the functions it is given are
    compile-time constants there: were they arguments of a call, they would be process-specific
    addresses in the compiled code, which numba does not cache.  The arrays are taken out of
    ``rule`` once, before the loop: taken out for every point, each would be reference-counted for
    every point (about 15 ns a point).
    """
    nodes, weights, counts, sd_edges, price_below, wide_nodes, wide_weights, wide_counts, wide_edges = rule
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
        if scale > wide_edges[0]:
            e, d_mean[i], d_var[i] = wide_rule(y_i, c, params, mean[i], scale, wide_nodes, wide_weights,
                                               wide_counts, wide_edges)
        else:
            e, d_mean[i], d_var[i] = gauss_hermite_point(log_lik, y_i, c, params, mean[i], scale, nodes, weights,
                                                         counts, sd_edges, price_below)
        value[i] = log_base(y_i, c, params) + e
    return value, d_mean, d_var


def uncached_copies(*functions):
    """Copies of a likelihood's compiled scalar functions for its own kernel, which compiles and caches them.

    The kernel does not call the functions themselves because numba keys a cache entry on the
    signature as it is asked for: without a return type when a kernel calls a function, with one
    when it is a first-class value.  Both routes would compile the function in the first process but
    cache only the first route's entry, so the next process would compile it again.
    """
    return tuple(numba.jit(**_UNCACHED)(function.py_func) for function in functions)


def _first_class_expectations(log_lik, log_base, mean, var, y, per_point, params, nodes, weights, counts, sd_edges,
                              price_below):
    rule = (nodes, weights, counts, sd_edges, price_below, *NO_WIDE_RULE)
    return expectations(log_lik, log_base, no_wide_rule, mean, var, y, per_point, params, rule)


def __getattr__(name):
    """Build a kernel of ``_LAZY`` on first use (compiled, or loaded from the cache) and keep it.

    ``_gh_expectations(log_lik, log_base, mean, var, y, per_point, params, nodes, weights, counts,
    sd_edges, price_below)`` is ``expectations`` by Gauss-Hermite with first-class scalar functions,
    for likelihoods without a kernel of their own (no rule for wide Gaussians).
    """
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    signature, body, callees = _LAZY[name]
    for callee in callees:          # the body calls them by their global names
        __getattr__(callee)
    kernel = numba.jit(signature, **NUMBA_OPTIONS)(body)
    globals()[name] = kernel
    return kernel


def _laplace_proposal_body(log_lik, y, c, params, m, v):
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


def _gh_log_predictive_body(log_lik, log_base, mean, var, y, per_point, params, nodes, log_weights):
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


def _gh_predictive_moments_body(moments, mean, var, per_point, params, nodes, weights):
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


def _pointwise_body(log_lik, log_base, latent, y, per_point, params):
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


def _base_terms_body(log_base, y, per_point, params):
    """The a-independent part b(y_i) of log p(y_i | a_i) for every point (closed forms reuse it)."""
    n = y.shape[0]
    shared = per_point.shape[0] == 1
    out = np.empty(n)
    for i in range(n):
        out[i] = log_base(y[i], per_point[0] if shared else per_point[i], params)
    return out


def _conditional_moments_body(moments, latent, per_point, params):
    """E[y_i | a_i] and Var[y_i | a_i] at given latent values (no integration): the samplers' parameters."""
    n = latent.shape[0]
    shared = per_point.shape[0] == 1
    out_mean = np.empty(n)
    out_var = np.empty(n)
    for i in range(n):
        out_mean[i], out_var[i] = moments(latent[i], per_point[0] if shared else per_point[i], params)
    return out_mean, out_var


_LAZY = {
    "_gh_expectations": (_VEC3(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC, _VEC, _MAT, _MAT, _IVEC, _VEC, _F8),
                         _first_class_expectations, ()),
    "_laplace_proposal": (types.UniTuple(_F8, 2)(LOG_LIK, _F8, _F8, _VEC, _F8, _F8), _laplace_proposal_body, ()),
    "_gh_log_predictive": (_VEC(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC),
                           _gh_log_predictive_body, ("_laplace_proposal",)),
    "_gh_predictive_moments": (_VEC2(MOMENTS, _VEC, _VEC, _VEC, _VEC, _VEC, _VEC), _gh_predictive_moments_body, ()),
    "_pointwise": (_VEC3(LOG_LIK, LOG_BASE, _VEC, _VEC, _VEC, _VEC), _pointwise_body, ()),
    "_base_terms": (_VEC(LOG_BASE, _VEC, _VEC, _VEC), _base_terms_body, ()),
    "_conditional_moments": (_VEC2(MOMENTS, _VEC, _VEC, _VEC), _conditional_moments_body, ()),
}
"""The kernels that take a likelihood's scalar functions as first-class values: name -> (signature,
Python body, kernels the body calls by name).  With explicit signatures numba would compile (or load)
them at import, about 0.15 s; :func:`__getattr__` builds each on first use instead."""
