"""GP regression with per-point Gaussian sites: the GP's conjugate computation.

The prior is ``f ~ N(0, K)`` and point ``i`` carries the site
``t_i(f_i) = exp(gamma_i f_i - pi_i f_i^2 / 2)``.  The posterior is
``N(m, Sigma)`` with ``Sigma = (K^{-1} + Pi)^{-1}`` and ``m = Sigma gamma``, and

.. math:: \\log Z = \\log \\int N(f; 0, K) \\prod_i t_i(f_i) \\, df
                 = -\\tfrac12 \\log|B| + \\tfrac12 \\gamma^T m .

Two stable routes, both exact:

* all ``pi_i >= 0`` (log-concave likelihoods): ``B = I + S K S`` with
  ``S = diag(sqrt(pi))`` (Rasmussen & Williams, Alg. 3.2), one Cholesky of
  ``B`` and one triangular inverse, both in place (LAPACK ``dpotrf``,
  ``dtrtri``), and two compiled passes over the triangles that collect the
  sums of squares below and the solve with ``B``.  Zero-precision (missing)
  points need no special care in ``B``.  The marginal variances use
  ``L_B^{-1} S K = (L_B^T - L_B^{-1}) S^{-1}``, so no ``N^3`` product is formed; points with ``pi_i = 0`` get their variance
  from a triangular product.  The variances need ``diag(B^{-1})``, so
  ``dtrtri`` (as many flops as the Cholesky) is the floor of this route: about
  two Cholesky factorisations per call.
* some ``pi_i < 0`` (Student-t): with ``K = L L^T``, ``M = I + L^T Pi L`` and
  ``Sigma = L M^{-1} L^T``; ``M`` is positive definite exactly when the
  posterior is valid, otherwise :class:`efvi.inference.InvalidPosterior` is raised
  and the engine shortens the step.

Either way ``alpha = K^{-1} m = gamma - pi * m`` and predictions at new inputs
use ``W = K^{-1} - K^{-1} Sigma K^{-1}`` (``= S B^{-1} S`` on the first route).

Small noise (large ``pi_i``) is the hard case for accuracy: ``gamma_i`` and
``pi_i m_i`` are both about ``y_i / sigma^2``.  The first route therefore
computes ``alpha = S B^{-1} S^{-1} gamma`` (plus the zero-precision sites'
part), takes ``m_i = (gamma_i - alpha_i) / pi_i`` and
``v_i = (1 - (B^{-1})_{ii}) / pi_i`` where the site dominates the prior, and
returns ``KL(q || p)`` in a closed form free of ``pi``-sized terms; with them
GP regression at noise variance ``1e-10`` keeps the accuracy of a dense
``K + sigma^2 I`` solve.
"""

from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas, lapack, solve_triangular

from ...inference import InvalidPosterior

from ._solver_kernels import forward_pass, scaled_plus_identity_lower, transposed_pass


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
    kl : float
        ``KL(q || N(0, K))`` in a closed form that stays accurate at large site
        precisions (see :func:`_result`).
    """

    mean: np.ndarray
    var: np.ndarray
    log_normaliser: float
    alpha: np.ndarray
    kl: float
    _inv_upper: np.ndarray = None  # first route: U^{-1} = L_B^{-T} (Fortran order; strict lower
    #                                 triangle not cleared: only read as a triangular matrix)
    _sqrt_precision: np.ndarray = None
    _chol: np.ndarray = None  # second route: Cholesky factors of M and K
    _kernel_chol: np.ndarray = None
    _prior_only: bool = False  # no sites: W = 0

    def predictive_var_reduction(self, cross):
        """``diag(k_*^T W k_*)`` for cross-covariances ``cross`` of shape (N, M); returns shape (M,)."""
        added, removed = self._reduction_factors(cross)
        reduction = np.einsum("nm,nm->m", added, added)
        if removed is not None:
            reduction -= np.einsum("nm,nm->m", removed, removed)
        return reduction

    def predictive_cov_reduction(self, cross):
        """``k_*^T W k_*`` for cross-covariances ``cross`` of shape (N, M); returns shape (M, M)."""
        added, removed = self._reduction_factors(cross)
        reduction = added.T @ added
        if removed is not None:
            reduction -= removed.T @ removed
        return reduction

    def _reduction_factors(self, cross):
        """``(A, C)`` with ``k_*^T W k_* = A^T A - C^T C`` (``C`` is None on the first route)."""
        if self._prior_only:
            return np.zeros((1, cross.shape[1])), None
        if self._inv_upper is not None:
            return _apply_inverse_chol(self._inv_upper, self._sqrt_precision[:, None] * cross), None
        whitened = solve_triangular(self._kernel_chol, cross, lower=True, check_finite=False)
        return whitened, solve_triangular(self._chol, whitened, lower=True, check_finite=False)

    def w_matrix(self):
        """``W = K^{-1} - K^{-1} Sigma K^{-1}`` (N, N), used for hyperparameter gradients."""
        n = self.mean.shape[0]
        if self._prior_only:
            return np.zeros((n, n))
        if self._inv_upper is not None:
            # S B^{-1} S with B^{-1} = U^{-1} U^{-T}, one BLAS dsyrk (upper triangle); LAPACK's
            # dlauum would need a third of the flops but OpenBLAS threads it badly at small N
            product = blas.dsyrk(1.0, np.triu(self._inv_upper))
            upper_part = np.triu(product)
            inverse = upper_part + upper_part.T
            inverse[np.diag_indices(n)] *= 0.5
            s = self._sqrt_precision
            inverse *= s[:, None]
            inverse *= s[None, :]
            return inverse
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
    efvi.inference.InvalidPosterior
        If the sites make the posterior covariance non-positive-definite.
    """
    if not (np.any(precision) or np.any(natural_mean)):     # no sites: the prior itself, no factorisation
        n = precision.shape[0]
        return SitePosterior(np.zeros(n), np.diag(K).copy(), 0.0, np.zeros(n), 0.0, _prior_only=True)
    if np.any(precision < 0):
        return _indefinite_route(K, natural_mean, precision, jitter)
    return _nonnegative_route(K, natural_mean, precision)


def _nonnegative_route(K, gamma, pi):
    n = pi.shape[0]
    s = np.sqrt(pi)
    observed = pi > 0
    B = scaled_plus_identity_lower(np.ascontiguousarray(K), s)
    # B is symmetric, so B.T is a Fortran-ordered view of it: LAPACK factorises it in place
    # as U^T U, which leaves L = U^T (B = L L^T) in B's C-ordered memory, and then inverts U
    # in place; the only N x N array allocated is B.  Only one triangle of B is ever written
    # or read (every later step reads U and U^{-1} as triangular matrices), so the other one
    # is neither filled nor cleared: together 5-10% of a call at N = 2000.
    upper, info = lapack.dpotrf(B.T, lower=0, clean=0, overwrite_a=1)
    if info != 0:
        raise InvalidPosterior("GP sites: I + S K S is not positive definite (is K PSD and finite?)")
    chol = upper.T
    diag = chol.diagonal().copy()
    # alpha = (I + Pi K)^{-1} gamma = gamma_0 + S B^{-1} w, where gamma_0 holds the sites of zero
    # precision and w = S^{-1} gamma - S K gamma_0 on the others.  Unlike gamma - S B^{-1} S K gamma,
    # this does not cancel when pi is large (small noise).  The solve B^{-1} = L^{-T} L^{-1} rides
    # along the two O(N^2) passes the variances need anyway: L^{-1} by substitution in the pass
    # over the rows of L, L^{-T} by the triangular inverse in the pass over the columns of L^{-1}
    scaled = np.zeros(n)
    scaled[observed] = gamma[observed] / s[observed]               # S^{-1} gamma
    free = np.where(observed, 0.0, gamma)                          # gamma_0
    w = scaled - s * _symmetric_times(K, free) if np.any(free) else scaled
    row_part, half_solved = forward_pass(chol, w)
    inv_upper, info = lapack.dtrtri(upper, lower=0, overwrite_c=1)  # U^{-1} = L^{-T}, over L
    if info != 0:
        raise InvalidPosterior("GP sites: the Cholesky factor of I + S K S is singular")
    col_part, solved = transposed_pass(inv_upper.T, half_solved)
    alpha = free + s * solved
    # Where a site is at least as precise as the prior at its point (pi_j K_jj >= 1), the marginals
    # come from the site's side: m_j = (gamma_j - alpha_j) / pi_j = (gamma_j / s_j - c_j) / s_j with
    # c = B^{-1} w, and v_j = (1 - (B^{-1})_jj) / pi_j (Sigma = S^{-1} (I - B^{-1}) S^{-1} on the
    # observed block).  Their rounding errors are eps |y_j| and eps / pi_j, while K alpha sums
    # terms of size pi |y| and K_jj - (reduction) cancels to eps K_jj.  Elsewhere (weak sites,
    # missing points) the site side would divide by a small s_j: there m = K alpha and
    # v_j = K_jj - ||L_B^T e_j - L_B^{-1} e_j||^2 / pi_j, split into its strict-lower, diagonal and
    # strict-upper parts; (B^{-1})_jj = 1 / L_jj^2 + col_part_j
    prior_var = np.diag(K)
    var = prior_var.copy()
    inv_diag = 1.0 / (diag * diag) + col_part
    dominant = pi * prior_var >= 1.0
    weak = observed & ~dominant
    # K alpha only where some point needs it (GP regression with small noise needs none)
    mean = np.empty(n) if np.all(dominant) else _symmetric_times(K, alpha)
    mean[dominant] = (scaled[dominant] - solved[dominant]) / s[dominant]
    var[dominant] = (1.0 - inv_diag[dominant]) / pi[dominant]
    d = pi[weak] * prior_var[weak] - row_part[weak]          # L_jj^2 - 1 without cancelling the 1
    var[weak] -= (row_part[weak] + d * d / (diag[weak] ** 2) + col_part[weak]) / pi[weak]
    if not np.all(observed):
        missing = np.flatnonzero(~observed)
        solved_missing = _apply_inverse_chol(inv_upper, s[:, None] * K[:, missing])
        var[missing] -= np.einsum("nm,nm->m", solved_missing, solved_missing)
    log_det = 2.0 * np.sum(np.log(diag))
    return _result(mean, var, alpha, gamma, pi, log_det, _inv_upper=inv_upper, _sqrt_precision=s)


def _result(mean, var, alpha, gamma, pi, log_det, **factors):
    r"""Assemble a :class:`SitePosterior` from the marginals, ``alpha = K^{-1} m`` and ``log_det``.

    ``log_det`` is ``log|B| = log|I + S K S| = log|K| - log|Sigma|`` (``log|M|`` on the
    second route, the same number).  With ``alpha = K^{-1} m`` and ``K^{-1} Sigma = I - Pi Sigma``,

    .. math:: KL(q || p) = \tfrac12 (\mathrm{tr}(K^{-1}\Sigma) + m^T K^{-1} m - N + \log|K| - \log|\Sigma|)
                         = \tfrac12 (m^T \alpha - \textstyle\sum_i \pi_i v_i + \log|B|),

    in which no term grows with the site precisions (the site formula's
    ``sum_i E_q[log t_i] - log Z`` is the same number as a difference of terms of
    size ``pi_i m_i^2``, which cancel badly at small noise).
    """
    log_normaliser = -0.5 * log_det + 0.5 * gamma @ mean
    kl = 0.5 * (mean @ alpha - pi @ var + log_det)
    return SitePosterior(mean, var, float(log_normaliser), alpha, float(kl), **factors)


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
    log_det = 2.0 * np.sum(np.log(np.diag(chol)))
    return _result(mean, var, gamma - pi * mean, gamma, pi, log_det, _chol=chol, _kernel_chol=kernel_chol)


def _symmetric_times(K, x):
    """``K x`` for symmetric ``K`` by scipy's BLAS (dsymv on a Fortran-ordered view, no copy).

    The hot path keeps to scipy's BLAS: alternating with numpy's (a separate
    OpenBLAS build with its own thread pool) slows both down on few cores.
    """
    return blas.dsymv(1.0, K.T if K.flags.c_contiguous else K, x)


def _apply_inverse_chol(inv_upper, b):
    """``L^{-1} b`` from ``U^{-1} = L^{-T}`` (a triangular product, BLAS dtrmm)."""
    return blas.dtrmm(1.0, inv_upper, np.asfortranarray(b), lower=0, trans_a=1)
