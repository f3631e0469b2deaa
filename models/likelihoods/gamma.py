r"""Gamma likelihood for positive continuous data, with a log or softplus link on the mean.

With shape :math:`k > 0` and mean :math:`\mu = h(a)` (rate :math:`k / \mu`), in
terms of the link's :math:`\ell = \log\mu` (:mod:`._link`),

.. math::

    \log p(y \mid a) = k \log k - \log\Gamma(k) + (k - 1)\log y - k \ell - k y e^{-\ell},
    \qquad \operatorname{Var}[y \mid a] = \mu^2 / k,

which is ``scipy.stats.gamma(k, scale=mu / k)``.  The derivatives in
:math:`\ell` are :math:`-k + k y e^{-\ell}` and :math:`-k y e^{-\ell}`.  With
the log link (:math:`\ell = a`, log-concave), :math:`\mathbb E[e^{-a}] = e^{-m + v/2}`
gives closed forms: with :math:`\rho = k y e^{-m + v/2}`,

.. math::

    E = k\log k - \log\Gamma(k) + (k-1)\log y - k m - \rho, \quad
    \frac{\partial E}{\partial m} = \rho - k, \quad
    \frac{\partial E}{\partial v} = -\tfrac12 \rho,

and the predictive mean :math:`e^{m + v/2}` and variance
:math:`e^{2m + 2v}\left(1/k + 1 - e^{-v}\right)`.  The softplus link
:math:`\mu = \log(1 + e^a)` is not log-concave (for small :math:`y` the
:math:`-k \log\mu` term is convex): expectations by quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._base import zero_missing
from ._kernels import INLINED
from ._link import LINKS
from ._linked import LinkedLikelihood
from ._math import chain
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**INLINED)
def _log_lik(log_mean, log_complement, y, a, c, params):
    shape = params[0]
    log_mu, d1, d2 = log_mean(a)
    scaled = shape * y * math.exp(-log_mu)
    return chain(-shape * log_mu - scaled, scaled - shape, -scaled, d1, d2)


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return params[1] + (params[0] - 1.0) * math.log(y)


@numba.jit(**INLINED)
def _moments(log_mean, log_complement, a, c, params):
    mu = math.exp(log_mean(a)[0])
    return mu, mu * mu / params[0]


class Gamma(LinkedLikelihood):
    """Positive continuous data: y ~ Gamma(shape, rate=shape / h(a)), so E[y | a] = h(a).

    Parameters
    ----------
    shape : float
        Shape k > 0; the coefficient of variation of y given a is 1/sqrt(k).
    link : {"log", "softplus"}
        ``exp(a)`` (default; closed-form expectations) or ``log(1 + exp(a))``.
    n_points : int, optional
        Gauss-Hermite points (the log link's expectations and predictive
        moments are closed form).
    """

    support = "positive real numbers"
    family = "gamma"
    domain = "positive"
    default_link = "log"
    _repr_fields = ("shape", "link")
    _family_functions = (_log_lik, _log_base, _moments)

    def __init__(self, shape=1.0, link="log", n_points=DEFAULT_N_POINTS):
        super().__init__(link, n_points)
        self.shape = float(check_positive(shape, "shape"))
        k = self.shape
        self._param_vector = np.array([k, k * math.log(k) - math.lgamma(k)])

    def _params(self):
        return self._param_vector

    def _mean_guess(self, y):
        """``y``: the mean equals the observation (the log link's start is ``log y``)."""
        return y

    def _outside_support(self, y, per_point):
        return ~(y > 0)

    def _draw(self, latent, rng):
        """``Gamma(shape, scale = h(a) / shape)``: mean ``h(a)``."""
        mean, _ = self.conditional_moments(latent)
        return rng.gamma(self.shape, mean / self.shape)

    def _variational_expectations(self, mean, var, y, n_points=None):
        if self._link is not LINKS["log"]:
            return self._quadrature_expectations(mean, var, y, n_points)
        k = self.shape
        with np.errstate(over="ignore"):
            scaled = k * y * np.exp(0.5 * var - mean)
        value = self._base_terms_of(y, self._per_point()) - k * mean - scaled
        return zero_missing(y, value, scaled - k, -0.5 * scaled)

    def _predict_mean_var(self, mean, var, n_points=None):
        if self._link is not LINKS["log"]:
            return self._quadrature_predict_mean_var(mean, var, n_points)
        with np.errstate(over="ignore"):
            y_mean = np.exp(mean + 0.5 * var)
            y_var = np.exp(2.0 * (mean + var) + np.log(1.0 / self.shape - np.expm1(-var)))
        return y_mean, y_var
