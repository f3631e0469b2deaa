r"""Poisson likelihood with a log or softplus link and an optional exposure.

.. math::

    y \mid a \sim \operatorname{Poisson}(\lambda), \quad
    \lambda = u\, h(a), \quad
    \log p(y \mid a) = y (\ell + c) - e^{\ell + c} - \log y!,

with the link's :math:`\ell = \log h(a)` (:mod:`._link`), exposure
:math:`u > 0` (per data point or shared) and offset :math:`c = \log u`.  With
the log link (:math:`\ell = a`) closed forms follow from
:math:`\mathbb E[e^{a}] = e^{m + v/2}` under :math:`a \sim \mathcal N(m, v)`:
with :math:`\bar\lambda = e^{m + c + v/2}`,

.. math::

    E = y (m + c) - \bar\lambda - \log y!, \quad
    \frac{\partial E}{\partial m} = y - \bar\lambda, \quad
    \frac{\partial E}{\partial v} = -\tfrac12 \bar\lambda,

and the predictive mean :math:`\bar\lambda` and variance
:math:`\bar\lambda + \bar\lambda^2 (e^{v} - 1)`.  The softplus link's rate
:math:`u \log(1 + e^{a})` grows linearly: expectations by quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._base import zero_missing
from ._checks import is_integer, per_point_vector
from ._kernels import INLINED
from ._link import LINKS
from ._linked import LinkedLikelihood
from ._math import chain
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**INLINED)
def _log_lik(log_mean, log_complement, y, a, c, params):
    log_rate, d1, d2 = log_mean(a)
    z = log_rate + c
    rate = math.exp(z)
    return chain(y * z - rate, y - rate, -rate, d1, d2)


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return -math.lgamma(y + 1.0)


@numba.jit(**INLINED)
def _moments(log_mean, log_complement, a, c, params):
    rate = math.exp(log_mean(a)[0] + c)
    return rate, rate


class Poisson(LinkedLikelihood):
    """Counts: y ~ Poisson(exposure * h(a)) for the link h.

    Parameters
    ----------
    exposure : float or array_like, shape (N,), optional
        Positive exposure (time at risk, population) multiplying the rate;
        default 1.
    link : {"log", "softplus"}
        ``exp(a)`` (default; closed-form expectations) or ``log(1 + exp(a))``.
    n_points : int, optional
        Gauss-Hermite points (the log link's expectations and predictive
        moments are closed form).
    """

    support = "non-negative integer counts"
    family = "poisson"
    domain = "positive"
    default_link = "log"
    per_point_name = "exposure"
    _repr_fields = ("exposure", "link")
    _family_functions = (_log_lik, _log_base, _moments)

    def __init__(self, exposure=None, link="log", n_points=DEFAULT_N_POINTS):
        super().__init__(link, n_points)
        if exposure is None:
            self.exposure = None
            self._offset = np.zeros(1)
        else:
            exposure = per_point_vector(exposure, "exposure", check_positive)
            self.exposure = exposure if exposure.shape[0] > 1 else float(exposure[0])
            self._offset = np.log(exposure)

    def _per_point(self):
        return self._offset

    def _mean_guess(self, y):
        """``(y + 1/2) / exposure`` (the log link's start is ``log(y + 1/2) - log(exposure)``)."""
        return (y + 0.5) / np.exp(self._offset)

    def _outside_support(self, y, per_point):
        return (y < 0) | ~is_integer(y)

    def _draw(self, latent, rng):
        """``Poisson(exposure h(a))``."""
        rate, _ = self.conditional_moments(latent)
        return rng.poisson(rate)

    def _variational_expectations(self, mean, var, y, n_points=None):
        if self._link is not LINKS["log"]:
            return self._quadrature_expectations(mean, var, y, n_points)
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
        if self._link is not LINKS["log"]:
            return self._quadrature_predict_mean_var(mean, var, n_points)
        log_rate = mean + self._offset + 0.5 * var
        with np.errstate(over="ignore", divide="ignore"):
            rate = np.exp(log_rate)
            spread = np.exp(2.0 * log_rate + np.log(np.expm1(var)))
        return rate, rate + spread
