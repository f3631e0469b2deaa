r"""Negative binomial likelihood for over-dispersed counts, with a log or softplus link on the mean.

With mean :math:`\mu = h(a)` and total count (inverse dispersion) :math:`r > 0`,

.. math::

    p(y \mid a) = \frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        \left(\frac{r}{r + \mu}\right)^{r} \left(\frac{\mu}{r + \mu}\right)^{y},
    \qquad \operatorname{Var}[y \mid a] = \mu + \mu^2 / r,

which is ``scipy.stats.nbinom(n=r, p=r / (r + mu))``.  With the link's
:math:`\ell = \log\mu` (:mod:`._link`) and :math:`b = \ell - \log r`,

.. math::

    \log p(y \mid a) = \log\frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        - y \operatorname{softplus}(-b) - r \operatorname{softplus}(b),

the binomial form with :math:`r` in place of :math:`n - y`: derivatives in
:math:`\ell` :math:`y\,\sigma(-b) - r\,\sigma(b)` and :math:`-(y + r)\,\sigma(b)\,\sigma(-b)`,
bounded and free of overflow.  Log-concave with the log link (:math:`\ell = a`),
not with the softplus link; expectations by quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._checks import is_integer
from ._kernels import INLINED
from ._linked import LinkedLikelihood
from ._math import chain, logistic
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**INLINED)
def _log_lik(log_mean, log_complement, y, a, c, params):
    total_count = params[0]
    log_mu, d1_mu, d2_mu = log_mean(a)
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(log_mu - params[1])
    value = -(y * softplus_neg + total_count * softplus_pos)
    d1 = y * sigmoid_neg - total_count * sigmoid_pos
    return chain(value, d1, -(y + total_count) * sigmoid_pos * sigmoid_neg, d1_mu, d2_mu)


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return math.lgamma(y + params[0]) - params[2] - math.lgamma(y + 1.0)


@numba.jit(**INLINED)
def _moments(log_mean, log_complement, a, c, params):
    mu = math.exp(log_mean(a)[0])
    return mu, mu + mu * mu / params[0]


class NegativeBinomial(LinkedLikelihood):
    """Over-dispersed counts: mean h(a) for the link h, variance mean + mean**2 / total_count.

    Parameters
    ----------
    total_count : float
        r > 0 (not necessarily an integer); large values approach the Poisson.
    link : {"log", "softplus"}
        ``exp(a)`` (default) or ``log(1 + exp(a))``.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "non-negative integer counts"
    family = "negative_binomial"
    domain = "positive"
    default_link = "log"
    family_strip_half_width = np.pi  # log(r + e^l) is singular where e^l = -r
    _repr_fields = ("total_count", "link")
    _family_functions = (_log_lik, _log_base, _moments)

    def __init__(self, total_count=1.0, link="log", n_points=DEFAULT_N_POINTS):
        super().__init__(link, n_points)
        self.total_count = float(check_positive(total_count, "total_count"))
        r = self.total_count
        self._param_vector = np.array([r, math.log(r), math.lgamma(r)])

    def _params(self):
        return self._param_vector

    def _mean_guess(self, y):
        """``y + 1/2`` (the log link's start is ``log(y + 1/2)``, as for the Poisson)."""
        return y + 0.5

    def _outside_support(self, y, per_point):
        return (y < 0) | ~is_integer(y)

    def _draw(self, latent, rng):
        """numpy's ``negative_binomial(total_count, p)`` with ``p = r / (r + h(a))``: mean ``h(a)``."""
        mean, _ = self.conditional_moments(latent)
        return rng.negative_binomial(self.total_count, 1.0 / (1.0 + mean / self.total_count))
