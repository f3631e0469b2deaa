r"""An exact rule for the Bernoulli-logit likelihood under wide Gaussians.

With :math:`g(a) = \log(1 + e^{-|a|})`, the softplus is
:math:`\operatorname{softplus}(\pm a) = \max(\pm a, 0) + g(a)`, so the binomial-logit
log likelihood (``c`` trials, ``y`` successes, as in :mod:`.binomial_logit`; the Bernoulli
likelihood has ``c = 1``) is

.. math::

    \ell(a) = -y \max(-a, 0) - (c - y) \max(a, 0) - c\, g(a).

Gauss-Hermite quadrature of :math:`\ell` needs many nodes when :math:`\sqrt v`
is large, because :math:`\ell` is singular at :math:`a = \pm i\pi`
(:mod:`._quadrature`: 80 and 160 nodes from :math:`\sqrt v = 1.19`).  The
split above avoids that.  For :math:`a \sim \mathcal N(m, v)`, :math:`s = \sqrt v`,
:math:`z = m / s`, the kinked terms have closed forms,

.. math::

    \mathbb E[\max(a, 0)] = m \Phi(z) + s \phi(z), \qquad
    \mathbb E[\max(-a, 0)] = -m \Phi(-z) + s \phi(z),

and, :math:`g` being even and :math:`f(t) = \mathcal N(t; m, v) + \mathcal N(t; -m, v)`,

.. math::

    G = \mathbb E[g(a)] = \int_0^\infty g(t)\, f(t)\, dt
      \approx \sum_k w_k f(t_k),

the Gauss rule whose *weight* is :math:`g` on :math:`[0, 40]`
(:func:`._quadrature.weighted_gauss_rules`; beyond 40, :math:`g < 5 \cdot 10^{-18}`).
The singular part is in the weight, and :math:`f` is entire and smoother the
larger :math:`v`, so few nodes suffice.  Then

.. math::

    E &= y m \Phi(-z) - (c - y) m \Phi(z) - c s \phi(z) - c G, \\
    \frac{\partial E}{\partial m} &= y \Phi(-z) - (c - y) \Phi(z) - c \frac{\partial G}{\partial m}, \qquad
    \frac{\partial E}{\partial v} = -c \left(\frac{\phi(z)}{2 s} + \frac{\partial G}{\partial v}\right),

with :math:`\partial_m \mathcal N(t; \pm m, v) = \pm \mathcal N \cdot (t \mp m) / v` and
:math:`\partial_v \mathcal N = \mathcal N \cdot ((t \mp m)^2 / v - 1) / (2 v)`: the exact
derivatives of the rule, as for Gauss-Hermite.  Each node costs two
exponentials, against an exponential and a logarithm per Gauss-Hermite node.

``BernoulliLogit`` uses the rule where the Gauss-Hermite ladder would need 80
nodes (:math:`\sqrt v > 0.38\pi = 1.19`), each point with the smallest rung
whose error at its :math:`\sqrt v` is below 1e-12 (``WIDE_EDGES``); a fixed
``n_points`` turns it off.  (``BinomialLogit`` has the same maths with ``c``
trials but uses the Gauss-Hermite ladder throughout.)  Breast-cancer logistic
regression at its optimum puts 349 of its 569 points there, which took 124
Gauss-Hermite nodes on average (up to 160, with errors in ``dE/dm`` up to 8e-8
beyond the ladder's last edge) and take 31 here, within 1e-12.
"""

import functools
import math

import numba
import numpy as np

from ._kernels import INLINED
from ._math import ndtr
from ._quadrature import LADDER_EDGES, LADDER_POINTS, weighted_gauss_rules

WIDE_FROM = LADDER_EDGES[LADDER_POINTS.index(40)] * np.pi
"""The rule replaces Gauss-Hermite above this ``sqrt(v)``: the edge of the 40-point Gauss-Hermite rung."""

WIDE_POINTS = (48, 44, 40, 36, 32, 28, 24, 20, 18, 16, 14, 12, 10, 8, 6, 4)
"""Sizes of the rule's rungs."""

WIDE_EDGES = (1.21, 1.31, 1.44, 1.61, 1.81, 2.08, 2.45, 2.7, 3.02, 3.43, 3.98, 4.78, 6.12, 9.42, 21.3)
"""Largest ``sqrt(v)`` at which each rung but the last is used.  Each rung is used only where its
worst error in ``G``, ``dG/dm`` and ``dG/dv`` over ``m`` in [0, 30] (``G`` is even in ``m``) is below
1e-12, as for the Gauss-Hermite ladder; that holds from (measured against adaptive quadrature on 301
values of ``m``) 48 points: 1.109, 44: 1.200, 40: 1.308, 36: 1.439, 32: 1.600, 28: 1.805, 24: 2.074,
20: 2.444, 18: 2.698, 16: 3.015, 14: 3.426, 12: 3.975, 10: 4.774, 8: 6.113, 6: 9.412, 4: 21.26, and
the error falls further as ``sqrt(v)`` grows."""

NEGLIGIBLE_EXPONENT = 40.0
"""Nodes where ``x = (t -+ m)^2 / (2 v)`` exceeds this are skipped.  A skipped term is below
``w_k exp(-x) <= w_k 4e-18``, and below ``w_k 2x exp(-x) <= w_k 3e-16`` with the ``(t -+ m)^2 / v``
factor of the ``v`` derivative; the weights sum to ``pi^2 / 12``, so ``G`` and its derivatives move
by less than 1e-15.  Far from the data's bulk most nodes are skipped (about half at the
breast-cancer optimum, which makes the rule 1.5x faster there)."""

_UPPER = 40
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _weight(t):
    """``g(t) = log(1 + exp(-t))`` for ``t >= 0``."""
    return np.log1p(np.exp(-t))


@functools.lru_cache(maxsize=None)
def wide_ladder():
    """The rungs of the rule as kernel arguments: ``(nodes, weights, counts, sd_edges)``.

    ``sd_edges`` is ``(WIDE_FROM, *WIDE_EDGES)``: Gauss-Hermite up to ``sd_edges[0]``, then rung ``r``
    up to ``sd_edges[r + 1]``, and the last rung beyond.
    """
    nodes, weights = weighted_gauss_rules(_weight, _UPPER, WIDE_POINTS)
    return nodes, weights, np.asarray(WIDE_POINTS, dtype=np.int64), np.array((WIDE_FROM, *WIDE_EDGES))


def logistic_rule(rule, n_points):
    """A likelihood's kernel ``rule`` with this module's rule for wide Gaussians (not with a fixed ``n_points``)."""
    return rule if n_points is not None else (*rule[:5], *wide_ladder())


@numba.jit(**INLINED)
def wide_rule(y, c, params, m, scale, nodes, weights, counts, sd_edges):
    """``(E - log_base, dE/dm, dE/dv)`` of one point by the rule above (``c`` trials; ``params`` unused).

    The point uses rung ``r``, the last with ``scale > sd_edges[r]`` (``wide_ladder``).
    """
    r = 0
    while r + 1 < sd_edges.shape[0] and scale > sd_edges[r + 1]:
        r += 1
    v = scale * scale
    half_precision = 0.5 / v
    total = 0.0  # sums over nodes of w (N+ + N-), w (N+ (t - m) - N- (t + m)), w (N+ (t - m)^2 + N- (t + m)^2)
    first = 0.0  # with N+- = exp(-(t -+ m)^2 / (2 v)), the normalising 1 / (s sqrt(2 pi)) applied below
    second = 0.0
    for k in range(counts[r]):
        t = nodes[r, k]
        w = weights[r, k]
        below = t - m
        above = t + m
        exponent = half_precision * below * below
        if exponent < NEGLIGIBLE_EXPONENT:
            plus = w * math.exp(-exponent)
            total += plus
            first += plus * below
            second += plus * below * below
        exponent = half_precision * above * above
        if exponent < NEGLIGIBLE_EXPONENT:
            minus = w * math.exp(-exponent)
            total += minus
            first -= minus * above
            second += minus * above * above
    norm = _INV_SQRT_2PI / scale
    g = norm * total
    g_mean = norm * first / v
    g_var = norm * (second / v - total) * half_precision
    z = m / scale
    lower = ndtr(-z)
    upper = ndtr(z)
    density = _INV_SQRT_2PI * math.exp(-0.5 * z * z)
    failures = c - y
    value = y * m * lower - failures * m * upper - c * (scale * density + g)
    return value, y * lower - failures * upper - c * g_mean, -c * (0.5 * density / scale + g_var)
