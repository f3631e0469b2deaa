r"""Gamma likelihood for positive continuous data, with a log link on the mean.

With shape :math:`k > 0` and mean :math:`e^{a}` (rate :math:`k e^{-a}`),

.. math::

    \log p(y \mid a) = k \log k - \log\Gamma(k) + (k - 1)\log y - k a - k y e^{-a},
    \qquad \operatorname{Var}[y \mid a] = e^{2a} / k,

which is ``scipy.stats.gamma(k, scale=exp(a) / k)``.  The derivatives are
:math:`-k + k y e^{-a}` and :math:`-k y e^{-a}` (log-concave), and
:math:`\mathbb E[e^{-a}] = e^{-m + v/2}` gives closed forms: with
:math:`\rho = k y e^{-m + v/2}`,

.. math::

    E = k\log k - \log\Gamma(k) + (k-1)\log y - k m - \rho, \quad
    \frac{\partial E}{\partial m} = \rho - k, \quad
    \frac{\partial E}{\partial v} = -\tfrac12 \rho,

and the predictive mean :math:`e^{m + v/2}` and variance
:math:`e^{2m + 2v}\left(1/k + 1 - e^{-v}\right)`.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood, zero_missing
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    shape = params[0]
    scaled = shape * y * math.exp(-a)
    return -shape * a - scaled, scaled - shape, -scaled


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return params[1] + (params[0] - 1.0) * math.log(y)


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    mu = math.exp(a)
    return mu, mu * mu / params[0]


class GammaLogLink(Likelihood):
    """Positive continuous data: y ~ Gamma(shape, rate=shape * exp(-a)), so E[y | a] = exp(a).

    Parameters
    ----------
    shape : float
        Shape k > 0; the coefficient of variation of y given a is 1/sqrt(k).
    n_points : int, optional
        Gauss-Hermite points of the quadrature route (the expectations and
        predictions here are closed form).
    """

    support = "positive real numbers"
    exponential_link = True
    _repr_fields = ("shape",)
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.inf  # entire in a: one 20-point rule (the closed form is used anyway)
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)

    def __init__(self, shape=1.0, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self.shape = float(check_positive(shape, "shape"))
        k = self.shape
        self._param_vector = np.array([k, k * math.log(k) - math.lgamma(k)])

    def _params(self):
        return self._param_vector

    def initial_latent(self, y):
        """``log y``: the IRLS start (the mean equals the observation)."""
        return np.log(y)

    def _outside_support(self, y, per_point):
        return ~(y > 0)

    def _variational_expectations(self, mean, var, y, n_points=None):
        k = self.shape
        with np.errstate(over="ignore"):
            scaled = k * y * np.exp(0.5 * var - mean)
        value = self._base_terms_of(y, self._per_point()) - k * mean - scaled
        return zero_missing(y, value, scaled - k, -0.5 * scaled)

    def _predict_mean_var(self, mean, var, n_points=None):
        with np.errstate(over="ignore"):
            y_mean = np.exp(mean + 0.5 * var)
            y_var = np.exp(2.0 * (mean + var) + np.log(1.0 / self.shape - np.expm1(-var)))
        return y_mean, y_var
