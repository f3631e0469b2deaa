r"""The complementary log-log link: :math:`\mu = 1 - \exp(-e^{a})`, an asymmetric link for probabilities.

With :math:`x = e^a`, :math:`\log(1 - \mu) = -x` (all three values :math:`-x`),
and

.. math::

    \log\mu = \log(1 - e^{-x}), \quad
    (\log\mu)' = r = \frac{x}{e^{x} - 1}, \quad
    (\log\mu)'' = r\,(1 - r - x).

Accurate forms: :math:`\log(1 - e^{-x})` by ``expm1`` for :math:`x \le \log 2`
and by ``log1p`` above; below :math:`x = 10^{-5}` (where :math:`x` may
underflow) the series :math:`\log\mu = a - x/2 + x^2/24` and
:math:`r = 1 - x/2 + x^2/12`; :math:`r = e^{a - x} / (1 - e^{-x})` for
:math:`x > \log 2`, which is 0, not NaN, when :math:`x` overflows; and below
:math:`x = 0.1`, where :math:`1 - r - x` cancels, its series
:math:`-x/2 - x^2/12 + x^4/720 - x^6/30240 + x^8/1209600` from the Bernoulli
numbers.  :math:`\log\mu` is singular where :math:`e^{a} = 2\pi i k`, so
:math:`|\mathrm{Im}\, a| < \pi/2` is analytic.  The log density grows like
:math:`e^{a}` (``exponential``).
"""

import math

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._link import Link, register_link
from ._math import log1p

_LOG_2 = math.log(2.0)


@numba.jit(**NUMBA_OPTIONS)
def log_mean(a):
    x = math.exp(a)
    if x < 1e-5:
        value = a - 0.5 * x + x * x / 24.0
        ratio = 1.0 - 0.5 * x + x * x / 12.0
    elif x <= _LOG_2:
        value = math.log(-math.expm1(-x))
        ratio = x / math.expm1(x)
    else:
        value = log1p(-math.exp(-x))
        ratio = math.exp(a - x) / -math.expm1(-x)
    if x < 0.1:
        x2 = x * x
        gap = -x * (0.5 + x * (1.0 / 12.0 - x2 * (1.0 / 720.0 - x2 * (1.0 / 30240.0 - x2 / 1209600.0))))
    else:
        gap = 1.0 - ratio - x
    return value, ratio, ratio * gap if ratio != 0.0 else 0.0


@numba.jit(**NUMBA_OPTIONS)
def log_complement(a):
    x = math.exp(a)
    return -x, -x, -x


def _cloglog(mean):
    return np.log(-np.log1p(-mean))


CLOGLOG = register_link(Link(
    "cloglog", "probability", log_mean, link=_cloglog, strip_half_width=0.5 * np.pi, exponential=True,
    log_concave=frozenset({"bernoulli", "binomial"}), log_complement=log_complement,
))
