"""GP regression with per-point Gaussian sites: the GP's conjugate computation.

The prior is ``f ~ N(0, K)`` and point ``i`` carries the site
``t_i(f_i) = exp(gamma_i f_i - pi_i f_i^2 / 2)``.  The posterior is
``N(m, Sigma)`` with ``Sigma = (K^{-1} + Pi)^{-1}`` and ``m = Sigma gamma``, and

.. math:: \\log Z = \\log \\int N(f; 0, K) \\prod_i t_i(f_i) \\, df
                 = -\\tfrac12 \\log|B| + \\tfrac12 \\gamma^T m .

Two stable routes, both exact:

* all ``pi_i >= 0`` (log-concave likelihoods): ``B = I + S K S`` with
  ``S = diag(sqrt(pi))`` (Rasmussen & Williams, Alg. 3.2), one Cholesky of
  ``B`` and one triangular inverse.  Zero-precision (missing) points need no
  special care in ``B``.  The marginal variances use
  ``L_B^{-1} S K = (L_B^T - L_B^{-1}) S^{-1}``, so no ``N^3`` product is
  formed; points with ``pi_i = 0`` get their variance from an explicit solve.
* some ``pi_i < 0`` (Student-t): with ``K = L L^T``, ``M = I + L^T Pi L`` and
  ``Sigma = L M^{-1} L^T``; ``M`` is positive definite exactly when the
  posterior is valid, otherwise :class:`inference.InvalidPosterior` is raised
  and the engine shortens the step.

Either way ``alpha = K^{-1} m = gamma - pi * m`` and predictions at new inputs
use ``W = K^{-1} - K^{-1} Sigma K^{-1}`` (``= S B^{-1} S`` on the first route).
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import lapack, solve_triangular

from inference import InvalidPosterior


@dataclass
class SitePosterior:
    """Result of :func:`site_posterior`.

    Attributes
    ----------
    mean, var : ndarray, shape (N,)
        Posterior marginals of ``f``.
    log_normaliser : float
        ``log Z`` of the prior times the sites.
    alpha : ndarray, shape (N,)
        ``K^{-1} m``; predictive mean at new inputs is ``k_*^T alpha``.
    """

    mean: np.ndarray
    var: np.ndarray
    log_normaliser: float
    alpha: np.ndarray
    _chol: np.ndarray
    _sqrt_precision: np.ndarray = None
    _kernel_chol: np.ndarray = None

    def predictive_var_reduction(self, cross):
        """``diag(k_*^T W k_*)`` for cross-covariances ``cross`` of shape (N, M)."""
        if self._sqrt_precision is not None:
            solved = solve_triangular(self._chol, self._sqrt_precision[:, None] * cross,
                                      lower=True, check_finite=False)
            return np.einsum("nm,nm->m", solved, solved)
        whitened = solve_triangular(self._kernel_chol, cross, lower=True, check_finite=False)
        reduced = solve_triangular(self._chol, whitened, lower=True, check_finite=False)
        return np.einsum("nm,nm->m", whitened, whitened) - np.einsum("nm,nm->m", reduced, reduced)

    def w_matrix(self):
        """``W = K^{-1} - K^{-1} Sigma K^{-1}`` (N, N), used for hyperparameter gradients."""
        n = self.mean.shape[0]
        if self._sqrt_precision is not None:
            inv_chol, _ = lapack.dtrtri(self._chol, lower=1)
            inv_chol = np.tril(inv_chol)
            s = self._sqrt_precision
            return (s[:, None] * (inv_chol.T @ inv_chol)) * s[None, :]
        inv_kchol = solve_triangular(self._kernel_chol, np.eye(n), lower=True, check_finite=False)
        reduced = solve_triangular(self._chol, inv_kchol, lower=True, check_finite=False)
        return inv_kchol.T @ inv_kchol - reduced.T @ reduced


def site_posterior(K, natural_mean, precision, jitter=1e-10):
    """Posterior marginals and log normaliser of ``N(0, K)`` times 1-D Gaussian sites.

    Parameters
    ----------
    K : ndarray, shape (N, N)
        Prior covariance (symmetric positive semi-definite).
    natural_mean, precision : ndarray, shape (N,)
        Site parameters ``gamma_i`` and ``pi_i`` (``pi_i`` may be 0, or negative
        if the posterior stays valid).
    jitter : float
        Relative diagonal jitter used only on the negative-precision route,
        where ``K`` itself is factorised, and only if ``K`` is numerically
        singular (its Cholesky factorisation fails without it).

    Returns
    -------
    SitePosterior

    Raises
    ------
    inference.InvalidPosterior
        If the sites make the posterior covariance non-positive-definite.
    """
    if np.any(precision < 0):
        return _indefinite_route(K, natural_mean, precision, jitter)
    return _nonnegative_route(K, natural_mean, precision)


def _nonnegative_route(K, gamma, pi):
    n = K.shape[0]
    s = np.sqrt(pi)
    B = s[:, None] * K * s[None, :]
    B[np.diag_indices(n)] += 1.0
    chol, info = lapack.dpotrf(B, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise InvalidPosterior("GP sites: I + S K S is not positive definite (is K PSD and finite?)")
    inv_chol, info = lapack.dtrtri(chol, lower=1)
    inv_chol = np.tril(inv_chol)
    c = K @ gamma
    alpha = gamma - s * _cho_solve(chol, s * c)
    mean = K @ alpha
    diag = np.diag(chol)
    strict_l = np.tril(chol, -1)
    strict_inv = np.tril(inv_chol, -1)
    observed = pi > 0
    var = np.diag(K).copy()
    if np.any(observed):
        # ||L_B^T e_j - L_B^{-1} e_j||^2 split into its strict-lower, diagonal and strict-upper parts
        row_part = np.einsum("ji,ji->j", strict_l, strict_l)
        col_part = np.einsum("ij,ij->j", strict_inv, strict_inv)
        d = pi * np.diag(K) - row_part                      # L_jj^2 - 1 without cancelling the 1
        diag_part = d * d / (diag * diag)
        reduction = (row_part + diag_part + col_part)[observed] / pi[observed]
        var[observed] -= reduction
    if not np.all(observed):
        missing = np.flatnonzero(~observed)
        solved = solve_triangular(chol, s[:, None] * K[:, missing], lower=True, check_finite=False)
        var[missing] -= np.einsum("nm,nm->m", solved, solved)
    log_normaliser = -np.sum(np.log(diag)) + 0.5 * gamma @ mean
    return SitePosterior(mean, var, float(log_normaliser), alpha, chol, _sqrt_precision=s)


def _indefinite_route(K, gamma, pi, jitter):
    n = K.shape[0]
    kernel_chol, info = lapack.dpotrf(K, lower=1, clean=1)
    if info != 0:  # numerically singular K (e.g. a smooth kernel on close inputs): add jitter
        scale = jitter * max(np.mean(np.diag(K)), 1e-300)
        kernel_chol, info = lapack.dpotrf(K + scale * np.eye(n), lower=1, clean=1)
    if info != 0:
        raise InvalidPosterior("GP prior covariance is not positive definite")
    M = kernel_chol.T @ (pi[:, None] * kernel_chol)
    M[np.diag_indices(n)] += 1.0
    chol, info = lapack.dpotrf(M, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        raise InvalidPosterior("GP sites with negative precision make the posterior covariance "
                               "non-positive-definite")
    W = solve_triangular(chol, kernel_chol.T, lower=True, check_finite=False)  # Sigma = W^T W
    mean = W.T @ (W @ gamma)
    var = np.einsum("ij,ij->j", W, W)
    log_normaliser = -np.sum(np.log(np.diag(chol))) + 0.5 * gamma @ mean
    return SitePosterior(mean, var, float(log_normaliser), gamma - pi * mean, chol,
                         _kernel_chol=kernel_chol)


def _cho_solve(chol, b):
    x, _ = lapack.dpotrs(chol, b, lower=1)
    return x
