"""Constant and white-noise kernels.

.. math::

    k_{\\mathrm{const}}(x, x') = c, \\qquad
    k_{\\mathrm{white}}(x, x') = \\sigma^2 \\, [\\text{same evaluation}].

``Constant(variance=c)`` is the covariance of a random offset
:math:`b \\sim N(0, c)`; as a factor, ``c * k`` scales another kernel with a
learnable amplitude.  For a scalar input its state space is one constant
state (``F = 0``, ``Q_c = 0``, ``P_inf = c``).

``White(variance)`` is independent noise at each evaluation: ``k(X)`` is
:math:`\\sigma^2 I` and a cross-covariance ``k(X, X2)`` is zero even where
points coincide (the scikit-learn ``WhiteKernel`` and GPflow convention).  It
has no state-space form; put observation noise in the likelihood instead.
Each has one hyperparameter, ``variance``.
"""

import autograd.numpy as anp
import numpy as np

from . import statespace
from ._base import Leaf, register_algebra
from ._validation import positive_param


class Constant(Leaf):
    """Constant kernel ``k(x, x') = variance``.

    Parameters
    ----------
    variance : float
        Positive value of the kernel.
    """

    def __init__(self, variance=1.0):
        self._init_params({"variance": positive_param(variance, "variance")})

    def _matrix(self, p, X, X2):
        return p[0] * np.ones((X.shape[0], X.shape[0] if X2 is None else X2.shape[0]))

    def _diag(self, p, X):
        return p[0] * anp.ones(X.shape[0])

    def _ss_dim(self):
        return 1

    def _ss_obs_row(self):
        return np.ones(1)

    def _ss_model(self, p):
        return statespace.constant_model(p[0])

    def _ss_transition(self, p, dt):
        return statespace.constant_transition(dt)


register_algebra("constant", Constant)


class White(Leaf):
    """White-noise kernel: ``variance * I`` on ``k(X)``, zero cross-covariance.

    Parameters
    ----------
    variance : float
        Positive noise variance.
    """

    def __init__(self, variance=1.0):
        self._init_params({"variance": positive_param(variance, "variance")})

    def _matrix(self, p, X, X2):
        if X2 is None:
            return p[0] * np.eye(X.shape[0])
        return p[0] * np.zeros((X.shape[0], X2.shape[0]))

    def _diag(self, p, X):
        return p[0] * anp.ones(X.shape[0])
