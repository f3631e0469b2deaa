"""Linear (dot-product) kernel.

.. math::

    k(x, x') = \\sigma^2 \\, x^T x' + c,

the covariance of :math:`f(x) = w^T x + b` with :math:`w \\sim N(0, \\sigma^2 I)`
and, when an offset is given, :math:`b \\sim N(0, c)`.  With
:math:`\\sigma^2 = 1` it is scikit-learn's ``DotProduct(sigma_0)`` with
:math:`c = \\sigma_0^2`.  Hyperparameters, in ``log_params`` order:
``variance``, then ``offset`` if present.  It is not stationary and has no
state-space form here.
"""

import numpy as np

from ._base import Leaf
from ._validation import positive_param


class Linear(Leaf):
    """Linear kernel ``variance * x^T x' (+ offset)``.

    Parameters
    ----------
    variance : float
        Positive prior variance of each weight.
    offset : float or None, default None
        Positive prior variance of a bias term; None means no bias (and no
        hyperparameter).
    """

    def __init__(self, variance=1.0, offset=None):
        params = {"variance": positive_param(variance, "variance")}
        if offset is not None:
            params["offset"] = positive_param(offset, "offset")
        self._init_params(params)

    def _matrix(self, p, X, X2):
        if X2 is not None:
            return self._affine(p, X @ X2.T)
        gram = X @ X.T
        return self._affine(p, 0.5 * (gram + gram.T))  # BLAS need not be exactly symmetric

    def _diag(self, p, X):
        return self._affine(p, np.einsum("ij,ij->i", X, X))

    def _affine(self, p, inner):
        values = self._unpack(p)
        return values[0] * inner + (values[1] if len(values) > 1 else 0.0)
