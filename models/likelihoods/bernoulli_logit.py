r"""Bernoulli likelihood with a logit link (logistic regression, GP classification).

.. math::

    y \in \{0, 1\}, \quad p(y = 1 \mid a) = \sigma(a) = \frac{1}{1 + e^{-a}}, \quad
    \log p(y \mid a) = -\operatorname{softplus}(-(2y - 1)\, a).

This is the binomial likelihood with one trial, and it reuses that file's
compiled log density, derivatives and moments with :math:`n = 1` (the binomial
coefficient is 1, so there is no :math:`a`-independent term to evaluate).
Log-concave; expectations by Gauss-Hermite quadrature, and for wide Gaussians
(:math:`\sqrt v > 1.19`) by the exact rule of :mod:`._logistic`; the predictive
mean is :math:`P(y = 1) = \mathbb E[\sigma(a)]`.
"""

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._base import Likelihood
from ._kernels import expectations, uncached_copies
from ._logistic import logistic_rule, wide_rule
from ._math import no_base_term
from .binomial_logit import _log_lik, _moments

_ONE_TRIAL = np.ones(1)
_log_lik_copy, _log_base_copy = uncached_copies(_log_lik, no_base_term)


@numba.jit(**NUMBA_OPTIONS)
def _expectations_kernel(mean, var, y, per_point, params, rule):
    """The shared expectations kernel compiled with this likelihood's functions (see ``_kernels``)."""
    return expectations(_log_lik_copy, _log_base_copy, wide_rule, mean, var, y, per_point, params, rule)


class BernoulliLogit(Likelihood):
    """Binary labels with a logit link: P(y = 1 | a) = sigmoid(a).

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "labels 0 or 1"
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.pi  # log(1 + e^a) has poles at a = +-i pi
    _log_base = staticmethod(no_base_term)
    _moments = staticmethod(_moments)
    _expectations_kernel = staticmethod(_expectations_kernel)

    def _per_point(self):
        return _ONE_TRIAL

    def initial_latent(self, y):
        """``+-log 3``: the IRLS start (``P(y = 1) = (y + 1/2) / 2``)."""
        return np.log(3.0) * (2.0 * y - 1.0)

    def _outside_support(self, y, per_point):
        return (y != 0) & (y != 1)

    def _quadrature_rule(self, n_points):
        """Gauss-Hermite, and above ``sqrt(v) = 1.19`` the exact rule of :mod:`._logistic` (adaptive only)."""
        return logistic_rule(super()._quadrature_rule(n_points), n_points)
