r"""Binomial likelihood with a logit link.

.. math::

    y \mid a \sim \operatorname{Binomial}(n, \sigma(a)), \quad
    \log p(y \mid a) = \log\binom{n}{y} - y \operatorname{softplus}(-a)
        - (n - y) \operatorname{softplus}(a),

with derivatives :math:`y\,\sigma(-a) - (n - y)\,\sigma(a)` and
:math:`-n\,\sigma(a)\,\sigma(-a)`.  Writing both terms as negative softplus
values keeps every term bounded by :math:`n |a|`: no cancellation at large
:math:`|a|` or large :math:`n`.  The number of trials :math:`n` may differ per
data point.  Log-concave; expectations by Gauss-Hermite quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import as_float
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood
from ._checks import describe, is_integer, per_point_vector
from ._kernels import expectations, no_wide_rule, uncached_copies
from ._math import logistic
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a)
    failures = c - y
    value = -(y * softplus_neg + failures * softplus_pos)
    return value, y * sigmoid_neg - failures * sigmoid_pos, -c * sigmoid_pos * sigmoid_neg


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return math.lgamma(c + 1.0) - math.lgamma(y + 1.0) - math.lgamma(c - y + 1.0)


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    softplus_pos, softplus_neg, sigmoid_pos, sigmoid_neg = logistic(a)
    return c * sigmoid_pos, c * sigmoid_pos * sigmoid_neg


_log_lik_copy, _log_base_copy = uncached_copies(_log_lik, _log_base)


@numba.jit(**NUMBA_OPTIONS)
def _expectations_kernel(mean, var, y, per_point, params, rule):
    """The shared expectations kernel compiled with this likelihood's functions (see ``_kernels``)."""
    return expectations(_log_lik_copy, _log_base_copy, no_wide_rule, mean, var, y, per_point, params, rule)


def _check_trials(n_trials, name):
    trials = as_float(n_trials, name)
    if np.any(trials < 1) or not np.all(is_integer(trials)):
        raise ValueError(f"{name} must be a positive integer or an array of them; got {describe(trials)}")
    return trials


class BinomialLogit(Likelihood):
    """Successes out of ``n_trials``: y ~ Binomial(n_trials, sigmoid(a)).

    Parameters
    ----------
    n_trials : int or array_like of int, shape (N,)
        Number of trials (>= 1), shared or per data point.
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    support = "integer counts between 0 and n_trials"
    per_point_name = "n_trials"
    _repr_fields = ("n_trials",)
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.pi  # log(1 + e^a) has poles at a = +-i pi
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)
    _expectations_kernel = staticmethod(_expectations_kernel)

    def __init__(self, n_trials=1, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        trials = per_point_vector(n_trials, "n_trials", _check_trials)
        self.n_trials = trials.astype(np.int64) if trials.shape[0] > 1 else int(trials[0])
        self._trials = trials

    def _per_point(self):
        return self._trials

    def initial_latent(self, y):
        """``log((y + 1/2) / (n - y + 1/2))``: the IRLS start (proportion ``(y + 1/2) / (n + 1)``)."""
        return np.log((y + 0.5) / (self._trials - y + 0.5))

    def _outside_support(self, y, per_point):
        return (y < 0) | (y > per_point) | ~is_integer(y)

