"""Independent route to the optimal Gaussian ELBO of a GLM: scipy L-BFGS over (mean, Cholesky).

The ELBO is computed exactly (Gauss-Hermite quadrature of each E[log p(y_i | a_i)])
and differentiated by autograd; nothing here uses efvi's engine or kernels.
"""

import autograd.numpy as anp
import numpy as np
from autograd import value_and_grad
from scipy.optimize import minimize


def _log_lik_logistic(a, y):
    return y * a - anp.logaddexp(0.0, a)


def optimal_gaussian_elbo(X, y, prior_var=1.0, diagonal=False, log_lik=_log_lik_logistic, n_points=20,
                          init=None):
    """Maximise the ELBO of ``N(m, V)`` (full or diagonal) for a GLM with prior ``N(0, prior_var I)``.

    Returns
    -------
    mean : ndarray (D,), cov : ndarray (D, D), elbo : float
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_points)
    weights = weights / weights.sum()
    n, dim = X.shape
    rows, cols = np.tril_indices(dim)
    scatter = _scatter(rows, cols, dim)

    def unpack(theta):
        m = theta[:dim]
        if diagonal:
            return m, anp.diag(anp.exp(theta[dim:]))
        matrix = anp.reshape(anp.dot(scatter, theta[dim:]), (dim, dim))   # packed lower triangle
        return m, matrix - anp.diag(anp.diag(matrix)) + anp.diag(anp.exp(anp.diag(matrix)))

    def neg_elbo(theta):
        m, L = unpack(theta)
        mean = anp.dot(X, m)
        sd = anp.sqrt(anp.sum(anp.dot(X, L) ** 2, axis=1))
        a = mean[:, None] + sd[:, None] * nodes[None, :]
        expected = anp.sum(anp.dot(log_lik(a, y[:, None]), weights))
        V_trace = anp.sum(L ** 2)
        logdet = 2 * anp.sum(anp.log(anp.abs(anp.diag(L))))
        kl = 0.5 * (V_trace / prior_var + anp.dot(m, m) / prior_var - dim + dim * np.log(prior_var) - logdet)
        return -(expected - kl)

    size = dim + (dim if diagonal else len(rows))
    theta0 = np.zeros(size) if init is None else init
    res = minimize(value_and_grad(neg_elbo), theta0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "maxcor": 50, "gtol": 1e-11, "ftol": 1e-16})
    m, L = unpack(res.x)
    return np.asarray(m), np.asarray(L @ L.T), -float(res.fun)


def _scatter(rows, cols, dim):
    """Matrix mapping the packed lower triangle to the flattened (dim, dim) matrix."""
    S = np.zeros((dim * dim, len(rows)))
    S[rows * dim + cols, np.arange(len(rows))] = 1.0
    return S
