r"""Gaussian likelihood with a known variance or an unknown precision.

.. math::

    \log p(y \mid a, \tau) = \tfrac12 \log\tau - \tfrac12 \log 2\pi
        - \tfrac{\tau}{2} (y - a)^2 .

Everything is closed form.  Under :math:`a \sim \mathcal N(m, v)` and an
independent precision with moments :math:`\mathbb E[\tau]`,
:math:`\mathbb E[\log\tau]` (fixed :math:`\tau = 1/\sigma^2`, or a Gamma
posterior block),

.. math::

    E = \tfrac12 \mathbb E[\log\tau] - \tfrac12\log 2\pi
        - \tfrac12 \mathbb E[\tau] \left((y - m)^2 + v\right), \quad
    \frac{\partial E}{\partial m} = \mathbb E[\tau](y - m), \quad
    \frac{\partial E}{\partial v} = -\tfrac12 \mathbb E[\tau],

so the site is exactly :math:`\pi = \mathbb E[\tau]`, pseudo-observation
:math:`y` (conjugate: it does not depend on :math:`q(a)`).  For a Gamma
precision block (natural parameters :math:`(\alpha - 1, -\beta)` on the
statistics :math:`(\log\tau, \tau)`), the expected log likelihood is linear in
those statistics with coefficients :math:`(\tfrac12, -\tfrac12((y-m)^2 + v))`:
that pair is the conjugate site of the precision (:func:`gaussian_precision_site`).
The predictive is :math:`\mathcal N(y; m, v + \sigma^2)`.
"""

import math

import numba
import numpy as np

from ...expfam import Gamma
from ...expfam.checks import as_float, check_positive
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood, zero_missing
from ._checks import check_gaussian_marginals, check_same_length
from ._math import LOG_2PI
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    precision = params[0]
    residual = y - a
    return -0.5 * precision * residual * residual, precision * residual, -precision


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return 0.5 * (params[1] - LOG_2PI)


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    return a, 1.0 / params[0]


def _gaussian_expectations(mean, var, y, precision, log_precision):
    residual = y - mean
    value = 0.5 * (log_precision - LOG_2PI) - 0.5 * precision * (residual * residual + var)
    d_mean = precision * residual
    d_var = np.broadcast_to(-0.5 * precision, np.shape(mean))
    return zero_missing(y, value, d_mean, d_var)


def gaussian_expectations(mean, var, y, precision, log_precision):
    """Closed-form E[log N(y_i; a_i, 1/tau)] under a_i ~ N(mean_i, var_i) and a precision tau.

    Parameters
    ----------
    mean, var : array_like, shape (N,)
        Marginals of the latent (finite; var >= 0).
    y : array_like, shape (N,)
        Observations; NaN marks a missing value.
    precision : float or array_like, shape (N,)
        E[tau] (> 0); the fixed precision 1/variance when tau is known.
    log_precision : float or array_like, shape (N,)
        E[log tau]; log(precision) when tau is known.

    Returns
    -------
    value, d_mean, d_var : ndarray, shape (N,)
        E[log p], its derivative in mean_i and in var_i; 0 where y is NaN.
    """
    mean, var = check_gaussian_marginals(mean, var)
    y = Gaussian().validate_y(y)
    check_same_length(y, mean)
    precision = check_positive(precision, "precision")
    log_precision = as_float(log_precision, "log_precision")
    for name, value in (("precision", precision), ("log_precision", log_precision)):
        if value.shape not in ((), mean.shape):
            raise ValueError(f"{name} must be a scalar or have the shape of mean {mean.shape}; got {value.shape}")
    return _gaussian_expectations(mean, var, y, precision, log_precision)


def gaussian_precision_site(mean, var, y):
    """Per-point conjugate site of a Gamma precision block tau in a Gaussian likelihood.

    Parameters
    ----------
    mean, var : array_like, shape (N,)
        Marginals of the latent a_i.
    y : array_like, shape (N,)
        Observations; NaN marks a missing value.

    Returns
    -------
    shape_site, rate_site : ndarray, shape (N,)
        Coefficients of E[log tau] and E[tau] in E[log p(y_i | a_i, tau)]:
        1/2 and -((y_i - mean_i)^2 + var_i)/2, i.e. the contribution to the
        Gamma natural parameters (alpha - 1, -beta); 0 where y is NaN.
    """
    mean, var = check_gaussian_marginals(mean, var)
    y = Gaussian().validate_y(y)
    check_same_length(y, mean)
    return _gaussian_precision_site(mean, var, y)


def _gaussian_precision_site(mean, var, y):
    residual = y - mean
    return zero_missing(y, np.full(mean.shape, 0.5), -0.5 * (residual * residual + var))


class Gaussian(Likelihood):
    """Gaussian observation noise: y ~ N(a, variance).

    Parameters
    ----------
    variance : float, optional
        Known noise variance (> 0); 1.0 unless ``precision`` is given.
    precision : float or str, optional
        A known precision 1/variance, or the name of a Gamma latent block
        holding an unknown precision (the engine then passes its moments to
        :func:`gaussian_expectations`).
    n_points : int, optional
        Gauss-Hermite points of the quadrature route (used only by tests and
        comparisons: everything here is closed form).

    Attributes
    ----------
    variance : float or None
        The known variance; None when the precision is a latent block.
    precision_block : str or None
        Name of the latent block of the precision, if unknown.
    """

    conjugate = True
    _repr_fields = ("variance", "precision_block")
    _log_lik = staticmethod(_log_lik)
    strip_half_width = np.inf  # quadratic in a: every rule is exact
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)

    def __init__(self, variance=None, precision=None, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self.precision_block = None
        if isinstance(precision, str):
            if variance is not None:
                raise ValueError(f"give either variance or precision, not both; got {variance!r} and {precision!r}")
            self.precision_block = precision
            self.variance = None
        elif precision is not None:
            if variance is not None:
                raise ValueError(f"give either variance or precision, not both; got {variance!r} and {precision!r}")
            self.variance = 1.0 / float(check_positive(precision, "precision"))
        else:
            self.variance = 1.0 if variance is None else float(check_positive(variance, "variance"))
        if self.variance is not None:
            self._param_vector = np.array([1.0 / self.variance, -math.log(self.variance)])

    @property
    def latent_parameters(self):
        """``{"precision": (block name, Gamma)}`` when the precision is a latent block, else empty."""
        return {} if self.precision_block is None else {"precision": (self.precision_block, Gamma)}

    def site_expectations(self, q, mean, var, y, n_points=None):
        """Closed-form expectations at the Gamma block's ``E[tau]`` and ``E[log tau]``, with its conjugate sites."""
        if self.precision_block is None:
            return super().site_expectations(q, mean, var, y, n_points)
        e_log_tau, e_tau = q[self.precision_block].mean_params
        expected, d_mean, d_var = _gaussian_expectations(mean, var, y, float(e_tau), float(e_log_tau))
        return expected, d_mean, d_var, {self.precision_block: _gaussian_precision_site(mean, var, y)}

    def _params(self):
        if self.variance is None:
            raise ValueError(
                f"this Gaussian likelihood's precision is the latent block {self.precision_block!r}; "
                "its expectations need that block's moments: use "
                "gaussian_expectations(mean, var, y, E[tau], E[log tau])"
            )
        return self._param_vector

    def _variational_expectations(self, mean, var, y, n_points=None):
        precision, log_precision = self._params()
        return _gaussian_expectations(mean, var, y, precision, log_precision)

    def _predict_mean_var(self, mean, var, n_points=None):
        self._params()
        return mean.copy(), var + self.variance

    def _spec_arguments(self):
        return {"variance": self.variance} if self.precision_block is None else {"precision": self.precision_block}

    def _draw(self, latent, rng):
        """``a + sqrt(variance) z`` with ``z`` standard normal."""
        if self.variance is None:
            raise ValueError(f"this Gaussian likelihood's precision is the latent block {self.precision_block!r}; "
                             "draws of y need a fixed variance: pass Gaussian(variance=...), e.g. the inverse of "
                             "the precision's posterior mean")
        mean, var = self.conditional_moments(latent)
        return mean + np.sqrt(var) * rng.standard_normal(mean.shape)

    def _predict_log_density(self, mean, var, y, n_points=None):
        self._params()
        total = var + self.variance
        return -0.5 * (LOG_2PI + np.log(total) + (y - mean) ** 2 / total)
