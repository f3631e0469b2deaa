r"""Poisson likelihood with a log link and an optional exposure.

.. math::

    y \mid a \sim \operatorname{Poisson}(\lambda), \quad
    \lambda = u\, e^{a}, \quad
    \log p(y \mid a) = y (a + c) - e^{a + c} - \log y!,

with exposure :math:`u > 0` (per data point or shared) and offset
:math:`c = \log u`.  Closed forms follow from
:math:`\mathbb E[e^{a}] = e^{m + v/2}` under :math:`a \sim \mathcal N(m, v)`:
with :math:`\bar\lambda = e^{m + c + v/2}`,

.. math::

    E = y (m + c) - \bar\lambda - \log y!, \quad
    \frac{\partial E}{\partial m} = y - \bar\lambda, \quad
    \frac{\partial E}{\partial v} = -\tfrac12 \bar\lambda,

and the predictive mean :math:`\bar\lambda` and variance
:math:`\bar\lambda + \bar\lambda^2 (e^{v} - 1)`.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood, zero_missing
from ._checks import is_integer, per_point_vector
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    z = a + c
    rate = math.exp(z)
    return y * z - rate, y - rate, -rate


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return -math.lgamma(y + 1.0)


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    rate = math.exp(a + c)
    return rate, rate


class Poisson(Likelihood):
    """Counts with a log link: y ~ Poisson(exposure * exp(a)).

    Parameters
    ----------
    exposure : float or array_like, shape (N,), optional
        Positive exposure (time at risk, population) multiplying the rate;
        default 1.
    n_points : int, optional
        Gauss-Hermite points of the quadrature route (the expectations and
        predictions here are closed form).
    """

    support = "non-negative integer counts"
    exponential_link = True
    per_point_name = "exposure"
    _repr_fields = ("exposure",)
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.inf  # entire in a: one 20-point rule (the closed form is used anyway)
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)

    def __init__(self, exposure=None, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        if exposure is None:
            self.exposure = None
            self._offset = np.zeros(1)
        else:
            exposure = per_point_vector(exposure, "exposure", check_positive)
            self.exposure = exposure if exposure.shape[0] > 1 else float(exposure[0])
            self._offset = np.log(exposure)

    def _per_point(self):
        return self._offset

    def initial_latent(self, y):
        """``log(y + 1/2) - log(exposure)``: the IRLS start."""
        return np.log(y + 0.5) - self._offset

    def _outside_support(self, y, per_point):
        return (y < 0) | ~is_integer(y)

    def _variational_expectations(self, mean, var, y, n_points=None):
        # numpy's SIMD exp is ~10x faster than a compiled scalar loop here; in-place to limit temporaries
        z = mean + self._offset
        rate = np.multiply(var, 0.5)
        rate += z
        with np.errstate(over="ignore"):
            np.exp(rate, out=rate)
        value = self._base_terms_of(y, self._offset) + y * z
        value -= rate
        d_mean = y - rate
        rate *= -0.5
        return zero_missing(y, value, d_mean, rate)

    def _predict_mean_var(self, mean, var, n_points=None):
        log_rate = mean + self._offset + 0.5 * var
        with np.errstate(over="ignore", divide="ignore"):
            rate = np.exp(log_rate)
            spread = np.exp(2.0 * log_rate + np.log(np.expm1(var)))
        return rate, rate + spread
