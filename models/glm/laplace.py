"""Baseline: MAP by Newton's method plus a Laplace approximation for a GLM.

The MAP weights maximise ``sum_i log p(y_i | x_i^T w) + log N(w; m_0, S_0)``.
Newton's method with a backtracking line search uses the likelihood's
compiled first and second derivatives; the Laplace posterior is
``N(w_MAP, H^{-1})`` with ``H = S_0^{-1} - X^T diag(l''(a)) X`` at the mode.
"""

import numpy as np

from ...expfam import Gaussian

from ._linalg import weighted_gram


def laplace(likelihood, X, y, prior_mean, prior_cov, tol=1e-10, max_iter=100):
    """MAP + Laplace for ``y_i ~ likelihood(x_i^T w)``, ``w ~ N(prior_mean, prior_cov)``.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
        Log-concave for Newton's method to be reliable.
    X : ndarray, shape (N, D)
    y : ndarray, shape (N,)
    prior_mean : ndarray, shape (D,)
    prior_cov : ndarray, shape (D, D)
    tol : float
        Stop when the Newton decrement squared is below ``tol``.
    max_iter : int

    Returns
    -------
    posterior : efvi.expfam.Gaussian
        ``N(w_MAP, H^{-1})``.
    n_iter : int
    """
    y = likelihood.validate_y(y)
    prior_precision = np.linalg.inv(prior_cov)
    w = np.array(prior_mean, dtype=float)

    def objective(weights):
        return np.nansum(likelihood.log_density(X @ weights, y)) - 0.5 * (weights - prior_mean) @ prior_precision @ (
            weights - prior_mean)

    value = objective(w)
    for n_iter in range(1, max_iter + 1):
        _, d1, d2 = likelihood._pointwise(X @ w, y)
        d1, d2 = np.nan_to_num(d1), np.nan_to_num(d2)
        gradient = X.T @ d1 - prior_precision @ (w - prior_mean)
        hessian = prior_precision + weighted_gram(X, -d2)
        step = np.linalg.solve(hessian, gradient)
        decrement = gradient @ step
        t = 1.0
        while True:
            candidate = w + t * step
            new_value = objective(candidate)
            if new_value >= value + 0.25 * t * decrement or t < 1e-10:
                break
            t *= 0.5
        w, value = candidate, new_value
        if decrement < tol:
            break
    _, _, d2 = likelihood._pointwise(X @ w, y)
    hessian = prior_precision + weighted_gram(X, -np.nan_to_num(d2))
    return Gaussian.from_mean_precision(w, hessian), n_iter
