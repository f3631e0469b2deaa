r"""Negative binomial likelihood for over-dispersed counts, with a log link on the mean.

With mean :math:`\mu = e^{a}` and total count (inverse dispersion) :math:`r > 0`,

.. math::

    p(y \mid a) = \frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        \left(\frac{r}{r + \mu}\right)^{r} \left(\frac{\mu}{r + \mu}\right)^{y},
    \qquad \operatorname{Var}[y \mid a] = \mu + \mu^2 / r,

which is ``scipy.stats.nbinom(n=r, p=r / (r + mu))``.  With
:math:`b = a - \log r`,

.. math::

    \log p(y \mid a) = \log\frac{\Gamma(y + r)}{\Gamma(r)\, y!}
        - y \operatorname{softplus}(-b) - r \operatorname{softplus}(b),

the binomial form with :math:`r` in place of :math:`n - y`: derivatives
:math:`y\,\sigma(-b) - r\,\sigma(b)` and :math:`-(y + r)\,\sigma(b)\,\sigma(-b)`,
bounded and free of overflow.  Log-concave; expectations by quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import check_positive
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood
from ._checks import is_integer
from ._kernels import expectations, no_wide_rule, uncached_copies
from ._math import logistic
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    total_count = params[0]
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a - params[1])
    value = -(y * softplus_neg + total_count * softplus_pos)
    d1 = y * sigmoid_neg - total_count * sigmoid_pos
    return value, d1, -(y + total_count) * sigmoid_pos * sigmoid_neg


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return math.lgamma(y + params[0]) - params[2] - math.lgamma(y + 1.0)


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    mu = math.exp(a)
    return mu, mu + mu * mu / params[0]


_log_lik_copy, _log_base_copy = uncached_copies(_log_lik, _log_base)


@numba.jit(**NUMBA_OPTIONS)
def _expectations_kernel(mean, var, y, per_point, params, rule):
    """The shared expectations kernel compiled with this likelihood's functions (see ``_kernels``)."""
    return expectations(_log_lik_copy, _log_base_copy, no_wide_rule, mean, var, y, per_point, params, rule)


class NegativeBinomial(Likelihood):
    """Over-dispersed counts: mean exp(a), variance mean + mean**2 / total_count.

    Parameters
    ----------
    total_count : float
        r > 0 (not necessarily an integer); large values approach the Poisson.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "non-negative integer counts"
    _repr_fields = ("total_count",)
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.pi  # log(r + e^a) is singular where e^a = -r
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)
    _expectations_kernel = staticmethod(_expectations_kernel)

    def __init__(self, total_count=1.0, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self.total_count = float(check_positive(total_count, "total_count"))
        r = self.total_count
        self._param_vector = np.array([r, math.log(r), math.lgamma(r)])

    def _params(self):
        return self._param_vector

    def initial_latent(self, y):
        """``log(y + 1/2)``: the IRLS start, as for the Poisson."""
        return np.log(y + 0.5)

    def _outside_support(self, y, per_point):
        return (y < 0) | ~is_integer(y)
