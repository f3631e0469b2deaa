"""BLAS/LAPACK pieces of the GLM's conjugate computation (Bayesian linear regression).

The two costs per iteration are a weighted Gram matrix ``X^T diag(w) X`` and the
marginal variances ``v_i = x_i^T V x_i``; both are done with level-3 BLAS
(``dsyrk`` and a triangular solve), never a Python loop over rows.
"""

import numpy as np
from scipy.linalg import blas


def weighted_gram(X, weights):
    """``X^T diag(weights) X`` with symmetric rank-k updates.

    Parameters
    ----------
    X : ndarray, shape (N, D)
    weights : ndarray, shape (N,)
        Any sign (negative weights arise from non-log-concave likelihoods).

    Returns
    -------
    ndarray, shape (D, D), symmetric.
    """
    negative = weights < 0
    if not negative.any():
        return _syrk(X * np.sqrt(weights)[:, None])
    positive = weights > 0
    return (_syrk(X[positive] * np.sqrt(weights[positive])[:, None])
            - _syrk(X[negative] * np.sqrt(-weights[negative])[:, None]))


def _syrk(B):
    """``B^T B`` for a C-contiguous B of shape (N, D): dsyrk on ``B.T``, a Fortran view (no copy)."""
    upper = blas.dsyrk(1.0, np.ascontiguousarray(B).T, trans=0, lower=0)
    return np.triu(upper) + np.triu(upper, 1).T


def marginal_variances(X, cov_chol):
    """``v_i = x_i^T V x_i = ||R^T x_i||^2`` from the lower Cholesky factor ``R`` of the covariance.

    One ``(N, D) x (D, D)`` product (level-3 BLAS); a triangular solve with the
    precision's factor costs the same flops but runs at half the speed.

    Parameters
    ----------
    X : ndarray, shape (N, D)
    cov_chol : ndarray, shape (D, D), lower triangular, ``V = R R^T``.

    Returns
    -------
    ndarray, shape (N,)
    """
    projected = X @ cov_chol
    return np.einsum("nd,nd->n", projected, projected)
