"""Predictions of a GLM's linear predictor ``a = x^T w`` at new rows, from any weight posterior.

The weights' posterior is a full :class:`efvi.expfam.Gaussian` (the primal
route: means ``X_new m`` and variances ``||L^{-1} x||^2`` with ``L`` the
Cholesky factor of the posterior precision, the same blocked pass as the
fit's marginals), a :class:`efvi.expfam.DiagonalGaussian` (mean field:
``(X_new * X_new) @ var``), or the dual route's
:class:`efvi.models.glm.dual.DualPosterior` (the N x N solve).
"""

import numpy as np

from ...expfam import DiagonalGaussian, Gaussian
from ...expfam.checks import as_float
from ...inference.result import register_latent_predictor

from ._linalg import marginals
from .dual import DualPosterior


def predict_latent(posterior, X_new):
    """Posterior mean and variance of ``a = x^T w`` at the rows of ``X_new``.

    Parameters
    ----------
    posterior : efvi.expfam.Gaussian, efvi.expfam.DiagonalGaussian or DualPosterior
        The weights' posterior (``fit.posterior["w"]``), batch shape ().
    X_new : array_like, shape (M, D)
        New rows (finite).

    Returns
    -------
    mean, var : ndarray, shape (M,)

    Raises
    ------
    ValueError
        If ``X_new`` is not a finite (M, D) array with the weights' D columns, or
        ``posterior`` is not a weight posterior.
    """
    if not isinstance(posterior, (Gaussian, DiagonalGaussian, DualPosterior)):
        raise ValueError("posterior must be a weight posterior (efvi.Gaussian, efvi.DiagonalGaussian or the "
                         f"dual route's DualPosterior); got {type(posterior).__name__}")
    mean = np.asarray(posterior.mean)
    if mean.ndim != 1:
        raise ValueError(f"posterior must have batch shape (); got weights of shape {mean.shape}")
    X_new = np.ascontiguousarray(as_float(X_new, "X_new", ndim_min=2))
    if X_new.ndim != 2 or X_new.shape[1] != mean.shape[0]:
        raise ValueError(f"X_new must have shape (M, {mean.shape[0]}); got {X_new.shape}")
    if isinstance(posterior, DualPosterior):
        return posterior.predict(X_new)
    if isinstance(posterior, DiagonalGaussian):
        return X_new @ mean, (X_new * X_new) @ np.asarray(posterior.var)
    means, variances = marginals(X_new, mean, posterior.precision_cholesky)
    return means, np.maximum(variances, 0.0)


def sample_latent(posterior, X_new, n, rng):
    """``n`` joint posterior draws of ``a = X_new w``, shape (n, M): draws of the weights times the rows."""
    predict_latent(posterior, X_new)                  # validates both arguments
    X_new = np.asarray(X_new, dtype=float)
    weights = posterior.to_gaussian() if isinstance(posterior, DualPosterior) else posterior
    return weights.sample(rng, n) @ X_new.T


register_latent_predictor((Gaussian, DiagonalGaussian, DualPosterior), predict_latent, sample_latent)

__all__ = ["predict_latent"]
