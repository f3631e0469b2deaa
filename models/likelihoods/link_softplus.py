r"""The softplus link: :math:`\mu = \log(1 + e^{a})`, a positive mean that grows linearly, not exponentially.

With :math:`s = \operatorname{softplus}(a)`,

.. math::

    \log\mu = \log s, \quad (\log\mu)' = t = \frac{\sigma(a)}{s}, \quad
    (\log\mu)'' = t\,(\sigma(-a) - t).

Below :math:`a = \log 0.01` both :math:`s` and :math:`\sigma(-a) - t` cancel
or underflow, so with :math:`x = e^a` and
:math:`\log(1 + x) - x = x^2 P(x)` (:math:`P` the Taylor polynomial to
:math:`x^9`, exact to rounding there): :math:`\log\mu = a + \log(1 + xP)`,
:math:`t = 1 / ((1 + x)(1 + xP))` and :math:`(\log\mu)'' = t\,xP / ((1 + x)(1 + xP))`,
finite down to :math:`a = -\infty`.  :math:`\log(1 + e^{a})` has branch points
at :math:`a = \pm i\pi`.  Log-concave with the Poisson only: with Gamma,
exponential or negative-binomial data the log density is convex somewhere.
"""

import math

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._link import Link, register_link
from ._math import log1p, logistic

_SERIES_BELOW = math.log(0.01)


@numba.jit(**NUMBA_OPTIONS)
def log_mean(a):
    if a < _SERIES_BELOW:
        x = math.exp(a)
        p = x * (-0.5 + x * (1.0 / 3.0 + x * (-0.25 + x * (0.2 + x * (-1.0 / 6.0 + x * (1.0 / 7.0 + x * (
            -0.125 + x / 9.0)))))))
        ratio = 1.0 / ((1.0 + x) * (1.0 + p))
        return a + log1p(p), ratio, ratio * p / ((1.0 + x) * (1.0 + p))
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a)
    ratio = sigmoid_pos / softplus_pos
    return math.log(softplus_pos), ratio, ratio * (sigmoid_neg - ratio)


def _inverse_softplus(mean):
    return mean + np.log(-np.expm1(-mean))


SOFTPLUS = register_link(Link(
    "softplus", "positive", log_mean, link=_inverse_softplus, strip_half_width=np.pi,
    log_concave=frozenset({"poisson"}),
))
