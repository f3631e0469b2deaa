"""The weights a diagonal (mean-field) GLM posterior starts from.

A full-covariance GLM starts from sites formed at the likelihood's data-based
guess of each ``a_i`` (:meth:`efvi.models.likelihoods.Likelihood.initial_latent`):
its first posterior mean is then the weighted least-squares (IRLS) solution

.. math:: (\\Lambda_0 + X^T \\Pi X) w = \\Lambda_0 m_0 + X^T \\gamma .

A diagonal posterior's sites also hold a part formed at a weight mean; forming
it at the prior mean would throw that information away (and from a diffuse
prior a log link's first step then overshoots by many orders of magnitude).
So the diagonal start solves the same system, by conjugate gradients on
``X`` (``O(N D)`` per iteration, no ``D x D`` matrix), preconditioned by its
diagonal.  It only has to be a good start: CVI converges from it either way.
"""

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

MAX_CG_ITERATIONS = 50
"""Conjugate-gradient iterations of the start (each two passes over X)."""


def informed_weights(X, natural_mean, precision, prior_mean, prior_var):
    """Weighted least-squares weights of the informed sites, or None if they are not a valid start.

    Parameters
    ----------
    X : ndarray, shape (N, D)
    natural_mean, precision : ndarray, shape (N,)
        The sites ``gamma_i``, ``pi_i`` at the data-based guess.
    prior_mean, prior_var : ndarray, shape (D,)
        The diagonal Gaussian prior of the weights.

    Returns
    -------
    ndarray, shape (D,), or None
        The approximate solution of ``(Lambda_0 + X^T diag(pi) X) w = Lambda_0 m_0 + X^T gamma``;
        None if some ``pi_i`` is negative or not finite (the system may then not be positive
        definite: the fit starts at the prior instead).
    """
    if not (np.all(np.isfinite(precision)) and np.all(precision >= 0) and np.all(np.isfinite(natural_mean))):
        return None
    prior_precision = 1.0 / prior_var
    diagonal = prior_precision + (X * X).T @ precision

    def times(w):
        return prior_precision * w + X.T @ (precision * (X @ w))

    size = X.shape[1]
    system = LinearOperator((size, size), matvec=times, dtype=float)
    jacobi = LinearOperator((size, size), matvec=lambda r: r / diagonal, dtype=float)
    rhs = prior_precision * prior_mean + X.T @ natural_mean
    # scipy's default tolerance (1e-5 relative residual) is ample for a start
    weights, _ = cg(system, rhs, x0=rhs / diagonal, maxiter=MAX_CG_ITERATIONS, M=jacobi)
    return weights if np.all(np.isfinite(weights)) else None
