r"""Bernoulli likelihood for binary labels, with a logit, probit or complementary log-log link.

.. math::

    y \in \{0, 1\}, \quad P(y = 1 \mid a) = \mu = h(a), \quad
    \log p(y \mid a) = y \log\mu + (1 - y) \log(1 - \mu),

so a label evaluates only one of the link's ``log_mean`` (:math:`y = 1`) and
``log_complement`` (:math:`y = 0`), with their derivatives (:mod:`._link`).
Log-concave with every link here.  Expectations by Gauss-Hermite quadrature;
with the logit link, wide Gaussians (:math:`\sqrt v > 1.19`) use the exact rule
of :mod:`._logistic`.  With the probit link the predictive distribution is
closed form:

.. math::

    P(y = 1) = \int \Phi(a)\, \mathcal N(a; m, v)\, da = \Phi\!\left(\frac{m}{\sqrt{1 + v}}\right).
"""

import math

import numba
import numpy as np
from scipy.special import log_ndtr as _scipy_log_ndtr
from scipy.special import ndtr as _scipy_ndtr

from ._kernels import INLINED
from ._link import LINKS
from ._linked import LinkedLikelihood
from ._logistic import logistic_rule, wide_rule
from ._math import no_base_term
from ._quadrature import DEFAULT_N_POINTS

_ONE_TRIAL = np.ones(1)


@numba.jit(**INLINED)
def _log_lik(log_mean, log_complement, y, a, c, params):
    return log_mean(a) if y == 1.0 else log_complement(a)


@numba.jit(**INLINED)
def _moments(log_mean, log_complement, a, c, params):
    mean = math.exp(log_mean(a)[0])
    return mean, mean * math.exp(log_complement(a)[0])


class Bernoulli(LinkedLikelihood):
    """Binary labels: P(y = 1 | a) = h(a) for the link h.

    Parameters
    ----------
    link : {"logit", "probit", "cloglog"}
        ``sigmoid(a)``, ``Phi(a)`` or ``1 - exp(-exp(a))``; default ``"logit"``.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "labels 0 or 1"
    family = "bernoulli"
    domain = "probability"
    default_link = "logit"
    _repr_fields = ("link",)
    _family_functions = (_log_lik, no_base_term, _moments)

    def __init__(self, link="logit", n_points=DEFAULT_N_POINTS):
        super().__init__(link, n_points)

    def _per_point(self):
        return _ONE_TRIAL  # one trial: the logit link's rule for wide Gaussians is the binomial one

    def _mean_guess(self, y):
        """``(y + 1/2) / 2``: 3/4 for a 1, 1/4 for a 0 (the logit link's start is ``+-log 3``)."""
        return (y + 0.5) / 2.0

    def _outside_support(self, y, per_point):
        return (y != 0) & (y != 1)

    def _draw(self, latent, rng):
        """1 with probability ``h(a)``, else 0."""
        probability, _ = self.conditional_moments(latent)
        return (rng.uniform(size=probability.shape) < probability).astype(float)

    def _wide_rule(self):
        return wide_rule if self.link == "logit" else super()._wide_rule()

    def _quadrature_rule(self, n_points):
        """With the logit link, the exact rule of :mod:`._logistic` above ``sqrt(v) = 1.19`` (adaptive only)."""
        rule = super()._quadrature_rule(n_points)
        return logistic_rule(rule, n_points) if self.link == "logit" else rule

    def _predict_mean_var(self, mean, var, n_points=None):
        if self._link is not LINKS["probit"]:
            return super()._predict_mean_var(mean, var, n_points)
        z = mean / np.sqrt(1.0 + var)
        return _scipy_ndtr(z), _scipy_ndtr(z) * _scipy_ndtr(-z)

    def _predict_log_density(self, mean, var, y, n_points=None):
        if self._link is not LINKS["probit"]:
            return super()._predict_log_density(mean, var, y, n_points)
        return _scipy_log_ndtr((2.0 * y - 1.0) * mean / np.sqrt(1.0 + var))
