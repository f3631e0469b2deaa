r"""Binomial likelihood for successes out of a number of trials, with a logit, probit or cloglog link.

.. math::

    y \mid a \sim \operatorname{Binomial}(n, \mu), \quad \mu = h(a), \quad
    \log p(y \mid a) = \log\binom{n}{y} + y \log\mu + (n - y) \log(1 - \mu),

with the link's ``log_mean`` and ``log_complement`` and their derivatives
(:mod:`._link`).  With the logit link, :math:`\log\mu = -\operatorname{softplus}(-a)`
and :math:`\log(1 - \mu) = -\operatorname{softplus}(a)` keep every term bounded
by :math:`n |a|`: no cancellation at large :math:`|a|` or large :math:`n`.  The
number of trials :math:`n` may differ per data point.  Log-concave with every
link here; expectations by Gauss-Hermite quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import as_float
from .._numba import NUMBA_OPTIONS

from ._checks import describe, is_integer, per_point_vector
from ._kernels import INLINED
from ._linked import LinkedLikelihood
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**INLINED)
def _log_lik(log_mean, log_complement, y, a, c, params):
    value, d1, d2 = log_mean(a)
    value_c, d1_c, d2_c = log_complement(a)
    failures = c - y
    # zero failures count log(1 - mu) 0 times, also where it is -inf (the cloglog link's -exp(a) beyond
    # a = 709.8): 0 * -inf would be NaN.  A select, not a branch (a branch here costs 5-10%).
    keep = failures != 0.0
    value_c, d1_c, d2_c = (value_c if keep else 0.0), (d1_c if keep else 0.0), (d2_c if keep else 0.0)
    return y * value + failures * value_c, y * d1 + failures * d1_c, y * d2 + failures * d2_c


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return math.lgamma(c + 1.0) - math.lgamma(y + 1.0) - math.lgamma(c - y + 1.0)


@numba.jit(**INLINED)
def _moments(log_mean, log_complement, a, c, params):
    mean = math.exp(log_mean(a)[0])
    return c * mean, c * mean * math.exp(log_complement(a)[0])


def _check_trials(n_trials, name):
    trials = as_float(n_trials, name)
    if np.any(trials < 1) or not np.all(is_integer(trials)):
        raise ValueError(f"{name} must be a positive integer or an array of them; got {describe(trials)}")
    return trials


class Binomial(LinkedLikelihood):
    """Successes out of ``n_trials``: y ~ Binomial(n_trials, h(a)) for the link h.

    Parameters
    ----------
    n_trials : int or array_like of int, shape (N,)
        Number of trials (>= 1), shared or per data point.
    link : {"logit", "probit", "cloglog"}
        ``sigmoid(a)``, ``Phi(a)`` or ``1 - exp(-exp(a))``; default ``"logit"``.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "integer counts between 0 and n_trials"
    family = "binomial"
    domain = "probability"
    default_link = "logit"
    per_point_name = "n_trials"
    _repr_fields = ("n_trials", "link")
    _family_functions = (_log_lik, _log_base, _moments)

    def __init__(self, n_trials=1, link="logit", n_points=DEFAULT_N_POINTS):
        super().__init__(link, n_points)
        trials = per_point_vector(n_trials, "n_trials", _check_trials)
        self.n_trials = trials.astype(np.int64) if trials.shape[0] > 1 else int(trials[0])
        self._trials = trials

    def _per_point(self):
        return self._trials

    def _mean_guess(self, y):
        """``(y + 1/2) / (n + 1)`` (the logit link's start is ``log((y + 1/2) / (n - y + 1/2))``)."""
        return (y + 0.5) / (self._trials + 1.0)

    def _outside_support(self, y, per_point):
        return (y < 0) | (y > per_point) | ~is_integer(y)

    def _draw(self, latent, rng):
        """``Binomial(n_trials, h(a))``; the mean is ``n_trials h(a)``."""
        mean, _ = self.conditional_moments(latent)
        trials = self._per_point_along(mean.shape).reshape(mean.shape if self._trials.shape[0] > 1 else ())
        return rng.binomial(trials.astype(np.int64), np.clip(mean / trials, 0.0, 1.0))
