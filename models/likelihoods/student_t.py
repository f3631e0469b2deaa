r"""Student-t likelihood for robust regression (heavy-tailed noise).

.. math::

    y = a + s\,\varepsilon, \ \varepsilon \sim t_\nu, \qquad
    \log p(y \mid a) = \log\frac{\Gamma(\frac{\nu+1}{2})}{\Gamma(\frac{\nu}{2})\sqrt{\nu\pi}\, s}
        - \frac{\nu + 1}{2} \log(1 + u^2), \quad u = \frac{y - a}{s\sqrt\nu}.

With :math:`k = 1/(s\sqrt\nu)` and :math:`t = 1/(1 + u^2)`, the derivatives are
:math:`(\nu+1)\,k\,u\,t` and :math:`(\nu+1)\,k^2\,t\,(1 - 2t)`, evaluated in forms
that stay finite for any residual.  The second derivative is positive for
:math:`|u| > 1`: the likelihood is **not log-concave**, so a site precision
:math:`-2\,\partial E/\partial v` can be negative (outliers push the posterior
away); the engine must keep the posterior valid.  Expectations by quadrature.
"""

import math

import numba
import numpy as np

from ...expfam.checks import as_float, check_positive
from .._numba import NUMBA_OPTIONS

from ._base import Likelihood
from ._kernels import expectations, no_wide_rule, uncached_copies
from ._math import log1p
from ._quadrature import DEFAULT_N_POINTS


@numba.jit(**NUMBA_OPTIONS)
def _log_lik(y, a, c, params):
    half_df_plus = params[0]
    inv_width = params[1]
    u = (y - a) * inv_width
    if abs(u) > 1.0:
        inv_u = 1.0 / u
        log_term = 2.0 * math.log(abs(u)) + log1p(inv_u * inv_u)
        ratio = 1.0 / (u + inv_u)
        t = inv_u * inv_u / (1.0 + inv_u * inv_u)
    else:
        log_term = log1p(u * u)
        ratio = u / (1.0 + u * u)
        t = 1.0 / (1.0 + u * u)
    coefficient = 2.0 * half_df_plus * inv_width
    return -half_df_plus * log_term, coefficient * ratio, coefficient * inv_width * t * (1.0 - 2.0 * t)


@numba.jit(**NUMBA_OPTIONS)
def _log_base(y, c, params):
    return params[2]


@numba.jit(**NUMBA_OPTIONS)
def _moments(a, c, params):
    df = params[3]
    mean = a if df > 1.0 else np.nan
    var = params[4] * params[4] * df / (df - 2.0) if df > 2.0 else np.inf
    return mean, var


_log_lik_copy, _log_base_copy = uncached_copies(_log_lik, _log_base)


@numba.jit(**NUMBA_OPTIONS)
def _expectations_kernel(mean, var, y, per_point, params, rule):
    """The shared expectations kernel compiled with this likelihood's functions (see ``_kernels``)."""
    return expectations(_log_lik_copy, _log_base_copy, no_wide_rule, mean, var, y, per_point, params, rule)


class StudentT(Likelihood):
    """Heavy-tailed noise: y = a + scale * t_df.

    Parameters
    ----------
    df : float
        Degrees of freedom nu > 0 (the predictive mean needs nu > 1 and the
        variance nu > 2; otherwise they are NaN and inf).
    scale : float
        Scale s > 0 (the standard deviation is s * sqrt(nu / (nu - 2))).
    n_points : int, optional
        Gauss-Hermite points (default None: the adaptive ladder, 3 to 160 points by the variance).
    """

    log_concave = False
    _repr_fields = ("df", "scale")
    _log_lik = staticmethod(_log_lik)

    @property
    def strip_half_width(self):
        """``scale sqrt(df)``: log p has poles at ``a = y +- i scale sqrt(df)``."""
        return self.scale * np.sqrt(self.df)
    _log_base = staticmethod(_log_base)
    _moments = staticmethod(_moments)
    _expectations_kernel = staticmethod(_expectations_kernel)

    def __init__(self, df=3.0, scale=1.0, n_points=DEFAULT_N_POINTS):
        super().__init__(n_points)
        self.df = float(check_positive(df, "df"))
        self.scale = float(check_positive(scale, "scale"))
        nu, s = self.df, self.scale
        log_norm = math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu) - 0.5 * math.log(nu * math.pi) - math.log(s)
        self._param_vector = np.array([0.5 * (nu + 1.0), 1.0 / (s * math.sqrt(nu)), log_norm, nu, s])

    def _params(self):
        return self._param_vector

    def _draw(self, latent, rng):
        """``a + scale * t_df`` (the latent itself: the conditional mean is undefined for ``df <= 1``)."""
        latent = as_float(latent, "latent")
        return latent + self.scale * rng.standard_t(self.df, size=latent.shape)
