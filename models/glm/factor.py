"""The GLM factor: ``y_i ~ p(y | a_i)`` with ``a_i = x_i^T w`` and a Gaussian block ``w``.

It is the one site factor (:mod:`efvi.models.sites`) with the rows of ``X`` as
its projection (:class:`efvi.models.glm.rows.Rows`: the conjugate computation,
full, mean-field or, with fewer rows than columns, dual).
"""

import numpy as np

from ...expfam.checks import as_float

from ..sites import GaussianSiteFactor
from .rows import Rows

# the GLM on rows held as Dask arrays: efvi.models.glm.distributed registers its class here (at the import of
# efvi.models.glm, without importing Dask), so that this module never imports it
_DISTRIBUTED = []


def register_distributed(cls):
    """Make ``GLM(likelihood, X, y, ...)`` build ``cls`` when ``X`` or ``y`` is a dask array; returns ``cls``."""
    _DISTRIBUTED[:] = [cls]
    return cls


class GLM(GaussianSiteFactor):
    """A generalised linear model likelihood on a Gaussian weight block.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
        E.g. ``likelihoods.BernoulliLogit()`` or ``likelihoods.Gaussian(variance=0.1)``
        or ``likelihoods.Gaussian(precision="tau")`` with a Gamma block ``tau``.
    X : array_like, shape (N, D)
        Design matrix (finite; include a column of ones for an intercept).  Dask arrays
        for ``X`` or ``y`` give a :class:`efvi.models.glm.distributed.DaskGLM` (rows and sites
        stay on the Dask workers).
    y : array_like, shape (N,)
        Responses; NaN marks a missing one.
    on : str
        Name of the Gaussian or DiagonalGaussian block of weights, dimension D.
    weights : array_like, shape (N,), optional
        Non-negative weight of each row's log-likelihood, ``w_i log p(y_i | a_i)``
        (scikit-learn's ``sample_weight``): an integer weight equals repeating
        the row, a zero weight dropping it.  Default: all 1.
    """

    def __new__(cls, likelihood=None, X=None, y=None, *args, **kwargs):
        # dask arrays select the distributed GLM (efvi.models.glm.distributed), which alone imports dask
        if cls is GLM and (hasattr(X, "__dask_graph__") or hasattr(y, "__dask_graph__")):
            cls = _DISTRIBUTED[0]
        return super().__new__(cls)

    def __init__(self, likelihood, X, y, on="w", weights=None):
        self.X = np.ascontiguousarray(as_float(X, "X", ndim_min=2))
        if self.X.ndim != 2:
            raise ValueError(f"X must have shape (N, D); got {self.X.shape}")
        if self.X.shape[1] == 0:
            raise ValueError(f"X must have at least one column (D >= 1, one per weight); got shape {self.X.shape}")
        super().__init__(likelihood, y, on, projection=Rows(self.X), weights=weights)
        if self.y.shape[0] != self.X.shape[0]:
            raise ValueError(f"y must have one entry per row of X ({self.X.shape[0]}); got {self.y.shape[0]}")

    def blas_flops(self):
        """``N D^2``: the weights' precision ``X^T diag(w) X`` of the full-covariance update."""
        n, d = self.X.shape
        return float(n) * d * d
