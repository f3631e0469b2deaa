"""Where a GLM's sites start: data-informed sites, refined by Newton steps on the log joint.

A GLM starts from sites formed at the likelihood's data-based guess of each
``a_i`` (:meth:`efvi.models.likelihoods.Likelihood.initial_latent`) with zero
variance.  Their posterior mean is the weighted least-squares (IRLS) solution

.. math:: (\\Lambda_0 + X^T \\Pi X) w = \\Lambda_0 m_0 + X^T \\gamma .

**Full covariance.**  CVI with zero variances is Newton's method (IRLS) on the
log joint :math:`\\sum_i \\log p(y_i \\mid x_i^T w) + \\log N(w; m_0, \\Lambda_0^{-1})`:
the targets at ``a = X w`` with ``v = 0`` are the pseudo-observations of the
Newton step from ``w``.  A Newton step costs one Gram matrix, one
Cholesky factorisation, ``X w`` and one likelihood evaluation per point -- about
half a CVI iteration, which also needs the marginal variances, quadrature and the
ELBO -- and from a rough guess it moves the fit about as far as a CVI iteration.
So :func:`newton_sites` takes Newton steps while they raise the log joint by more
than ``NEWTON_GAIN`` of its size (at most ``NEWTON_STEPS``), keeping the sites of
the best point: from a poor guess CVI then starts near the MAP (breast-cancer
logistic regression, nearly separable: 12 evaluations instead of 18, 0.83x the
time).  An increase that fails (an overshoot, a precision
that is not positive definite: non-log-concave likelihoods) ends the steps there.

**Mean field.**  A diagonal posterior's sites also hold a part formed at a weight mean; forming
it at the prior mean would throw that information away (and from a diffuse
prior a log link's first step then overshoots by many orders of magnitude).
So the diagonal start solves the same system, by conjugate gradients on
``X`` (``O(N D)`` per iteration, no ``D x D`` matrix), preconditioned by its
diagonal.  It only has to be a good start: CVI converges from it either way.
"""

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.sparse.linalg import LinearOperator, cg

from ._linalg import gram_and_projection

MAX_CG_ITERATIONS = 50
"""Conjugate-gradient iterations of the start (each two passes over X)."""

NEWTON_STEPS = 8
"""Most Newton steps of a full-covariance start."""

NEWTON_GAIN = 0.05
"""No further Newton step once the next one is predicted (by its Newton decrement) to raise the log
joint by at most this fraction of its magnitude: the damped phase from a poor guess is over, and from
there CVI's own iterations converge about as fast as Newton's while also fitting the variances.  A
1e5-point logistic regression, whose guess is good, stops after the first step (whose Gram matrix is
the start's message anyway); taking Newton steps to the MAP there made the fit 1.17x slower."""


def newton_sites(X, prior_mean, prior_precision, natural_mean, precision, point_targets):
    """Informed sites after Newton steps on the log joint (see the module notes).

    Parameters
    ----------
    X : ndarray, shape (N, D), C-contiguous
    prior_mean : ndarray, shape (D,)
    prior_precision : ndarray, shape (D, D)
    natural_mean, precision : ndarray, shape (N,)
        The informed sites ``gamma_i``, ``pi_i``.
    point_targets : callable
        ``point_targets(a) -> (gamma, pi, g_m, log_lik)``: the zero-variance
        CVI targets at ``a`` (N,), the gradient ``g_m`` and ``sum_i log p(y_i | a_i)``.

    Returns
    -------
    sites : tuple of ndarray, each shape (N,)
        ``(gamma, pi)`` whose posterior mean has the highest log joint found (the
        given sites if no Newton step improved on their mean).
    message : tuple
        Their message ``(X^T gamma, -X^T diag(pi) X / 2)``, computed on the way.
    """
    sites, chosen = (natural_mean, precision), None
    best = -np.inf
    prior_shift = prior_precision @ prior_mean
    for _ in range(NEWTON_STEPS):
        projection, gram = gram_and_projection(X, sites[1], sites[0])
        try:
            factor = cho_factor(prior_precision + gram, lower=True, check_finite=False)
        except LinAlgError:
            break
        weights = cho_solve(factor, prior_shift + projection, check_finite=False)
        offset = weights - prior_mean
        gamma, pi, g_m, log_lik = point_targets(X @ weights)
        objective = log_lik - 0.5 * offset @ prior_precision @ offset
        if not (np.isfinite(objective) and objective > best):
            break                                   # an overshoot: keep the sites of the best point
        best, chosen = objective, (sites, (projection, -0.5 * gram))
        if not (np.all(np.isfinite(gamma)) and np.all(np.isfinite(pi))):
            break
        # what the next step would gain, by this step's curvature: g^T H^{-1} g / 2 (its Newton decrement);
        # far from the data it may overflow, and the next step's log joint decides instead
        with np.errstate(over="ignore", invalid="ignore"):
            gradient = g_m @ X - prior_precision @ offset
            predicted = 0.5 * gradient @ cho_solve(factor, gradient, check_finite=False)
        if predicted <= NEWTON_GAIN * abs(objective):
            break
        sites = (gamma, pi)                         # their posterior mean is one Newton step further
    if chosen is None:
        projection, gram = gram_and_projection(X, precision, natural_mean)
        return (natural_mean, precision), (projection, -0.5 * gram)
    return chosen


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
