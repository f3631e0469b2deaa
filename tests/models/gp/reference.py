"""Independent dense routes for the GP tests: the posterior of N(0, K) times 1-D Gaussian sites,
and the optimal Gaussian ELBO of a GP model found by scipy L-BFGS over (mean, Cholesky factor).

Nothing here uses efvi's solver, engine or likelihood kernels: the site posterior is
``inv(inv(K) + diag(pi))`` by explicit inverses, and the ELBO is written out in
autograd.numpy with Gauss-Hermite quadrature of each ``E[log p(y_i | f_i)]``.
"""

import autograd.numpy as anp
import autograd.scipy.special as asp
import numpy as np
from autograd import value_and_grad
from scipy.optimize import minimize


def dense_site_posterior(K, gamma, pi):
    """Dense ``Sigma = inv(inv(K) + diag(pi))``, ``m = Sigma gamma`` and ``log Z``.

    ``log Z = log int N(f; 0, K) exp(gamma^T f - f^T diag(pi) f / 2) df
    = (log|Sigma| - log|K| + gamma^T Sigma gamma) / 2``.

    Returns
    -------
    mean : ndarray (N,), cov : ndarray (N, N), log_normaliser : float
    """
    precision = np.linalg.inv(K) + np.diag(pi)
    cov = np.linalg.inv(precision)
    cov = 0.5 * (cov + cov.T)
    mean = cov @ gamma
    sign_cov, logdet_cov = np.linalg.slogdet(cov)
    sign_k, logdet_k = np.linalg.slogdet(K)
    assert sign_cov > 0 and sign_k > 0, "the dense reference needs a valid posterior"
    return mean, cov, 0.5 * (logdet_cov - logdet_k + gamma @ mean)


def log_lik_logistic(f, y):
    """``log p(y | f)`` of the Bernoulli-logit likelihood, ``y`` in {0, 1}."""
    return y * f - anp.logaddexp(0.0, f)


def log_lik_student_t(df, scale):
    """``log p(y | f)`` of Student-t noise with ``df`` degrees of freedom and scale ``scale``."""
    const = (asp.gammaln(0.5 * (df + 1.0)) - asp.gammaln(0.5 * df)
             - 0.5 * np.log(df * np.pi) - np.log(scale))

    def log_lik(f, y):
        return const - 0.5 * (df + 1.0) * anp.log1p(((y - f) / scale) ** 2 / df)

    return log_lik


def gaussian_elbo(mean, cov, K, prior_mean, y, log_lik, n_points=150):
    """Exact ELBO of ``q = N(mean, cov)`` under the prior ``N(prior_mean, K)`` (numpy, no optimisation)."""
    nodes, weights = _rule(n_points)
    sd = np.sqrt(np.diag(cov))
    f = mean[:, None] + sd[:, None] * nodes[None, :]
    expected = float(np.sum(np.asarray(log_lik(f, y[:, None])) @ weights))
    return expected - _gaussian_kl(mean - prior_mean, cov, K)


def optimal_gp_elbo(K, y, log_lik, prior_mean=0.0, n_points=150, init=None):
    """Maximise the ELBO of ``q(f) = N(m, S)`` for a GP prior ``N(prior_mean, K)`` by L-BFGS.

    ``S`` is parameterised by its Cholesky factor written as ``L_K C`` (``L_K``
    the Cholesky factor of ``K``, ``C`` lower triangular with a log diagonal)
    and ``m = prior_mean + L_K u``: a linear change of variables that keeps the
    problem well conditioned; any Gaussian is reachable.  The KL is then
    ``(||C||_F^2 + ||u||^2 - N) / 2 - sum log C_ii``.

    Returns
    -------
    mean : ndarray (N,), cov : ndarray (N, N), elbo : float
    """
    nodes, weights = _rule(n_points)
    n = K.shape[0]
    chol_k = np.linalg.cholesky(K)
    rows, cols = np.tril_indices(n)
    on_diag = rows == cols
    scatter = np.zeros((n * n, len(rows)))
    scatter[rows * n + cols, np.arange(len(rows))] = 1.0

    def unpack(theta):
        u, packed = theta[:n], theta[n:]
        packed = anp.where(on_diag, anp.exp(packed), packed)
        C = anp.reshape(anp.dot(scatter, packed), (n, n))
        return u, C, packed

    def neg_elbo(theta):
        u, C, packed = unpack(theta)
        mean = prior_mean + anp.dot(chol_k, u)
        sd = anp.sqrt(anp.sum(anp.dot(chol_k, C) ** 2, axis=1))
        f = mean[:, None] + sd[:, None] * nodes[None, :]
        expected = anp.sum(anp.dot(log_lik(f, y[:, None]), weights))
        kl = 0.5 * (anp.sum(C ** 2) + anp.dot(u, u) - n) - anp.sum(anp.where(on_diag, theta[n:], 0.0))
        return -(expected - kl)

    theta0 = np.zeros(n + len(rows)) if init is None else init
    result = minimize(value_and_grad(neg_elbo), theta0, jac=True, method="L-BFGS-B",
                      options={"maxiter": 50000, "maxcor": 50, "gtol": 1e-12, "ftol": 1e-16})
    u, C, _ = unpack(result.x)
    factor = chol_k @ C
    return prior_mean + chol_k @ u, factor @ factor.T, -float(result.fun)


def _rule(n_points):
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_points)
    return nodes, weights / weights.sum()


def _gaussian_kl(delta, cov, K):
    """``KL(N(mu + delta, cov) || N(mu, K))`` densely."""
    n = K.shape[0]
    K_inv = np.linalg.inv(K)
    logdet_k = np.linalg.slogdet(K)[1]
    logdet_cov = np.linalg.slogdet(cov)[1]
    return 0.5 * (np.trace(K_inv @ cov) + delta @ K_inv @ delta - n + logdet_k - logdet_cov)
