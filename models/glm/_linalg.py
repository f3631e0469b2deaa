"""BLAS/LAPACK pieces of the GLM's conjugate computation (Bayesian linear regression).

The two costs per iteration are a weighted Gram matrix ``X^T diag(w) X`` and the
marginal variances ``v_i = x_i^T V x_i``; both are done with level-3 BLAS
(``dsyrk`` and a triangular solve), never a Python loop over rows.
"""

import numpy as np
from scipy.linalg import blas, solve_triangular


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
    """``B^T B`` for B of shape (N, D) via dsyrk on the Fortran view (no copy of B)."""
    upper = blas.dsyrk(1.0, np.asfortranarray(B), trans=1, lower=0)
    return np.triu(upper) + np.triu(upper, 1).T


def marginal_variances(X, precision_chol):
    """``v_i = x_i^T Lambda^{-1} x_i`` from the lower Cholesky factor of the precision.

    Parameters
    ----------
    X : ndarray, shape (N, D)
    precision_chol : ndarray, shape (D, D), lower triangular, ``Lambda = L L^T``.

    Returns
    -------
    ndarray, shape (N,)
    """
    solved = solve_triangular(precision_chol, X.T, lower=True, check_finite=False)
    return np.einsum("dn,dn->n", solved, solved)
