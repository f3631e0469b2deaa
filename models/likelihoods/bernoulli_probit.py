r"""Bernoulli likelihood with a probit link.

.. math::

    y \in \{0, 1\}, \quad p(y = 1 \mid a) = \Phi(a), \quad
    \log p(y \mid a) = \log\Phi(s a), \quad s = 2y - 1,

with derivatives :math:`s\,\lambda(sa)` and :math:`-\lambda(sa)\,(sa + \lambda(sa))`,
:math:`\lambda = \phi/\Phi` the inverse Mills ratio (computed without underflow
or cancellation for very negative arguments, see :mod:`._math`).  The
expected log likelihood needs quadrature, but the predictive distribution is
closed form:

.. math::

    P(y = 1) = \int \Phi(a)\, \mathcal N(a; m, v)\, da = \Phi\!\left(\frac{m}{\sqrt{1 + v}}\right).
"""

import numba
import numpy as np
from scipy.special import log_ndtr as _scipy_log_ndtr
from scipy.special import ndtr as _scipy_ndtr

from .._numba import NUMBA_OPTIONS

from ._base import Likelihood
from ._kernels import expectations, no_wide_rule, uncached_copies
from ._math import log_ndtr, ndtr, no_base_term


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    sign = 2.0 * y - 1.0
    log_cdf, mills, shifted = log_ndtr(sign * a)
    return log_cdf, sign * mills, -mills * shifted


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    return ndtr(a), ndtr(a) * ndtr(-a)


_log_lik_copy, _log_base_copy = uncached_copies(_log_lik, no_base_term)


@numba.jit(**NUMBA_OPTIONS)
def _expectations_kernel(mean, var, y, per_point, params, rule):
    """The shared expectations kernel compiled with this likelihood's functions (see ``_kernels``)."""
    return expectations(_log_lik_copy, _log_base_copy, no_wide_rule, mean, var, y, per_point, params, rule)


class BernoulliProbit(Likelihood):
    """Binary labels with a probit link: P(y = 1 | a) = Phi(a).

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "labels 0 or 1"
    _log_lik = staticmethod(_log_lik)
    strip_half_width = 2.0  # log Phi(a) is singular at the complex zeros of Phi, |Im a| > 2.7
    _log_base = staticmethod(no_base_term)
    _moments = staticmethod(_moments)
    _expectations_kernel = staticmethod(_expectations_kernel)

    def initial_latent(self, y):
        """``+-Phi^{-1}(3/4)``: the IRLS start (``P(y = 1) = (y + 1/2) / 2``)."""
        return 0.6744897501960817 * (2.0 * y - 1.0)

    def _outside_support(self, y, per_point):
        return (y != 0) & (y != 1)

    def _predict_mean_var(self, mean, var, n_points=None):
        z = mean / np.sqrt(1.0 + var)
        return _scipy_ndtr(z), _scipy_ndtr(z) * _scipy_ndtr(-z)

    def _predict_log_density(self, mean, var, y, n_points=None):
        return _scipy_log_ndtr((2.0 * y - 1.0) * mean / np.sqrt(1.0 + var))
