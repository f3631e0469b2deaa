"""Stationary kernels: functions of a scaled distance, and the squared exponential.

A stationary kernel here has the form

.. math::

    k(x, x') = \\sigma^2 \\, \\kappa(r^2), \\qquad
    r^2 = \\sum_{d=1}^{D} \\frac{(x_d - x'_d)^2}{\\ell_d^2}, \\qquad \\kappa(0) = 1,

with a single lengthscale :math:`\\ell` or one per input dimension (ARD).  A
subclass supplies only the radial profile :math:`\\kappa` as a function of the
scaled squared distance, in autograd.numpy; this class scales the inputs,
takes distances, and multiplies by the variance.  Hyperparameters, in
``log_params`` order: ``lengthscale`` (1 or D entries), ``variance``.

The squared exponential (RBF) has :math:`\\kappa(r^2) = \\exp(-r^2/2)`.  Its
spectral density is not rational, so it has no finite state-space form.
"""

import autograd.numpy as anp

from ._base import Leaf
from ._distance import sqdist
from ._validation import positive_param


class Stationary(Leaf):
    """Base class of kernels ``variance * radial(r^2)`` of the scaled squared distance.

    Parameters
    ----------
    lengthscale : float or array_like, shape (D,)
        Positive lengthscale; a 1-D array gives one per input dimension (ARD)
        and fixes the input dimension to ``D``.
    variance : float
        Positive marginal variance ``k(x, x)``.
    """

    def __init__(self, lengthscale=1.0, variance=1.0):
        self._init_params(
            {
                "lengthscale": positive_param(lengthscale, "lengthscale", allow_vector=True),
                "variance": positive_param(variance, "variance"),
            }
        )

    @property
    def input_dim(self):
        """int or None: ``D`` for an ARD lengthscale, else None (any input dimension)."""
        lengthscale = self._params["lengthscale"]
        return None if lengthscale.ndim == 0 else lengthscale.size

    @staticmethod
    def _radial(r2):
        """Radial profile ``kappa(r^2)`` with ``kappa(0) = 1``; elementwise, autograd.numpy."""
        raise NotImplementedError

    def _matrix(self, p, X, X2):
        lengthscale, variance = self._unpack(p)
        return variance * self._radial(sqdist(X / lengthscale, None if X2 is None else X2 / lengthscale))

    def _diag(self, p, X):
        return self._unpack(p)[1] * anp.ones(X.shape[0])


class RBF(Stationary):
    """Squared-exponential kernel ``variance * exp(-r^2 / 2)``.

    Parameters
    ----------
    lengthscale : float or array_like, shape (D,)
    variance : float

    Examples
    --------
    >>> import numpy as np
    >>> k = RBF(lengthscale=[1.0, 2.0], variance=0.5)
    >>> k(np.zeros((3, 2))).shape
    (3, 3)
    """

    @staticmethod
    def _radial(r2):
        return anp.exp(-0.5 * r2)
