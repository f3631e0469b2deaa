r"""Scalar special functions shared by the likelihoods, compiled with numba.

Every function here takes and returns float64 scalars and is safe over the
whole float64 line: it never returns NaN for a finite argument and it keeps
full relative precision in the tails, where the naive formulas overflow or
cancel.

*Logistic pieces.*  With :math:`e = \exp(-|a|) \in (0, 1]`,

.. math::

    \operatorname{softplus}(a) = \log(1 + e^a) = \max(a, 0) + \log(1 + e),
    \qquad \sigma(a) = \frac{1}{1 + e^{-a}},

so one exponential, one logarithm and one division give
:math:`\operatorname{softplus}(\pm a)` and :math:`\sigma(\pm a)` without
overflow.  With :math:`u = 1 + x` rounded, :math:`\log(1 + x)` is
:math:`\log u + (x - (u - 1)) / u`: :math:`x - (u - 1)` is the rounding error
of :math:`u` (exact for :math:`u < 2^{53}`), so the correction is exact to
first order, the result is accurate to about one ulp (checked against mpmath)
and needs no branch; it is about twice as fast as libm's ``log1p``, and its
division :math:`1 / u` is the one the sigmoid needs (compiled once when both are
inlined).

*Gaussian CDF.*  :math:`\Phi(z) = \tfrac12 \operatorname{erfc}(-z/\sqrt2)`, and
the inverse Mills ratio :math:`\lambda(z) = \phi(z) / \Phi(z)`, which gives the
derivatives :math:`(\log\Phi)' = \lambda` and
:math:`(\log\Phi)'' = -\lambda (z + \lambda)`.  Above :math:`z = -5` these
come from ``erfc``, and :math:`z + \lambda` loses at most a factor
:math:`(1 + z^2)^2 \le 700` of relative precision (about 1e-13) to rounding and
cancellation.  For :math:`z \le -5`, where that loss grows (and ``erfc``
underflows below :math:`z \approx -38`), we use Laplace's continued fraction for
the Mills ratio :math:`R(x) = \Phi(-x)/\phi(x)`, with :math:`x = -z`:

.. math::

    R(x) = \cfrac{1}{x + t(x)}, \qquad
    t(x) = \cfrac{1}{x + \cfrac{2}{x + \cfrac{3}{x + \cdots}}},

so that :math:`\lambda = x + t` and :math:`z + \lambda = t` with no
cancellation, and :math:`\log\Phi(z) = -z^2/2 - \tfrac12\log 2\pi - \log(x + t)`.
Evaluated backwards from depth :math:`\min(70, 10 + 600/x^2)`, it is accurate to
about one ulp for every :math:`x \ge 3` (checked against mpmath).
"""

import math

import numba

from .._numba import NUMBA_OPTIONS

LOG_2PI = math.log(2.0 * math.pi)
_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_MILLS_TAIL = -5.0


@numba.jit(**NUMBA_OPTIONS)
def log1p(x):
    """log(1 + x) for x > -1, accurate to about one ulp (see the module docstring; faster than libm's log1p)."""
    u = 1.0 + x
    return math.log(u) + (x - (u - 1.0)) / u


@numba.jit(**NUMBA_OPTIONS)
def logistic(a):
    """Return ``(softplus(a), softplus(-a), sigmoid(a), sigmoid(-a))`` for a float ``a``."""
    e = math.exp(-abs(a))
    log_term = log1p(e)
    r = 1.0 / (1.0 + e)  # the same division as in log1p(e): compiled once
    small = e * r
    positive = a >= 0.0  # selects, not branches: Gauss-Hermite nodes change sign unpredictably
    return max(a, 0.0) + log_term, max(-a, 0.0) + log_term, r if positive else small, small if positive else r


@numba.jit(**NUMBA_OPTIONS)
def _mills_tail(x):
    """t(x) of the module docstring (x >= 5), by backward evaluation of the continued fraction."""
    t = 0.0
    for k in range(min(70, 10 + int(600.0 / (x * x))), 0, -1):
        t = k / (x + t)
    return t


@numba.jit(**NUMBA_OPTIONS)
def log_ndtr(z):
    """Return ``(log Phi(z), lambda(z), z + lambda(z))`` with lambda = phi / Phi (inverse Mills ratio)."""
    if z <= _MILLS_TAIL:
        x = -z
        t = _mills_tail(x)
        return -0.5 * z * z - 0.5 * LOG_2PI - math.log(x + t), x + t, t
    if z < 0.0:
        cdf = 0.5 * math.erfc(-z / _SQRT_2)
        log_cdf = math.log(cdf)
    else:
        cdf = 1.0 - 0.5 * math.erfc(z / _SQRT_2)
        log_cdf = log1p(-0.5 * math.erfc(z / _SQRT_2))
    mills = _INV_SQRT_2PI * math.exp(-0.5 * z * z) / cdf
    return log_cdf, mills, z + mills


@numba.jit(**NUMBA_OPTIONS)
def ndtr(z):
    """Standard normal CDF Phi(z)."""
    return 0.5 * math.erfc(-z / _SQRT_2)


@numba.jit(**NUMBA_OPTIONS)
def no_base_term(y, per_point, params):
    """The a-independent part of log p(y | a) for likelihoods that have none: 0."""
    return 0.0


@numba.jit(**NUMBA_OPTIONS)
def chain(value, d1, d2, inner_d1, inner_d2):
    """``(f(u), d/da, d2/da2)`` of ``f(u(a))`` from ``f, f', f''`` at ``u`` and ``u', u''``: the chain rule.

    The ``f' u''`` term is skipped where ``u'' = 0`` (the log link's ``u = a``, where the compiler then
    drops it), so that an infinite ``f'`` does not make ``d2`` NaN.
    """
    second = d2 * inner_d1 * inner_d1
    if inner_d2 != 0.0:
        second += d1 * inner_d2
    return value, d1 * inner_d1, second
