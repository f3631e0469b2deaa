"""Matern kernels of half-integer smoothness: 1/2, 3/2 and 5/2.

With :math:`\\nu = p + 1/2` and :math:`x = \\sqrt{2\\nu}\\, r` (``r`` the scaled
distance of :mod:`.stationary`),

.. math::

    k = \\sigma^2 \\, P_p(x) \\, e^{-x}, \\qquad
    P_0 = 1, \\quad P_1 = 1 + x, \\quad P_2 = 1 + x + x^2/3,

the exponential (Ornstein-Uhlenbeck), Matern-3/2 and Matern-5/2 kernels.  The
square root of the scaled squared distance is taken with a zero gradient at
coincident points.  For a scalar input each is a Gauss-Markov process of
state dimension ``p + 1`` (see :mod:`.statespace` for ``F``, ``P_inf`` and the
closed-form ``expm(F dt)``), with rate :math:`\\lambda = \\sqrt{2\\nu}/\\ell`.
"""

import numpy as np

import autograd.numpy as anp

from . import statespace
from ._distance import safe_sqrt
from .stationary import Stationary


class _Matern(Stationary):
    """Matern kernel of order ``p`` (``nu = p + 1/2``); subclasses fix ``_order`` and ``_poly``."""

    _order = None
    _poly = None  # coefficients of P_p, lowest degree first

    @classmethod
    def _radial(cls, r2):
        x = np.sqrt(2.0 * cls._order + 1.0) * safe_sqrt(r2)
        poly = cls._poly[-1]
        for c in cls._poly[-2::-1]:
            poly = poly * x + c
        return poly * anp.exp(-x)

    def _rate(self, p):
        lengthscale, variance = self._unpack(p)
        if anp.ndim(lengthscale):
            lengthscale = lengthscale[0]
        return np.sqrt(2.0 * self._order + 1.0) / lengthscale, variance

    def _ss_dim(self):
        return self._order + 1

    def _ss_obs_row(self):
        return statespace.matern_obs_row(self._order)

    def _ss_model(self, p):
        return statespace.matern_model(self._order, *self._rate(p))

    def _ss_transition(self, p, dt):
        return statespace.matern_transition(self._order, self._rate(p)[0], dt)


class Matern12(_Matern):
    """Exponential (Ornstein-Uhlenbeck) kernel ``variance * exp(-r)``.

    Parameters
    ----------
    lengthscale : float or array_like, shape (D,)
    variance : float
    """

    _order = 0
    _poly = (1.0,)


class Matern32(_Matern):
    """Matern-3/2 kernel ``variance * (1 + sqrt(3) r) exp(-sqrt(3) r)``.

    Parameters
    ----------
    lengthscale : float or array_like, shape (D,)
    variance : float
    """

    _order = 1
    _poly = (1.0, 1.0)


class Matern52(_Matern):
    """Matern-5/2 kernel ``variance * (1 + sqrt(5) r + 5 r^2 / 3) exp(-sqrt(5) r)``.

    Parameters
    ----------
    lengthscale : float or array_like, shape (D,)
    variance : float
    """

    _order = 2
    _poly = (1.0, 1.0, 1.0 / 3.0)
