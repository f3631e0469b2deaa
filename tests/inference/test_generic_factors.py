"""Generic factors: Monte Carlo (a user-written log-density) and exact enumeration."""

import itertools

import autograd.numpy as anp
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from efvi.expfam import Bernoulli, Gamma, Gaussian
from efvi.inference import Decaying, Enumerated, ExpectedLogFactor, Model, MonteCarloFactor


def _logistic_data(n=60, seed=1):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.random(n) < expit(X @ np.array([0.5, -1.5]))).astype(float)
    return X, y


def _exact_optimum(X, y, n_points=60):
    """Independent route: scipy L-BFGS on the exact ELBO (Gauss-Hermite) over (m, Cholesky)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_points)
    weights = weights / weights.sum()
    dim = X.shape[1]
    rows, cols = np.tril_indices(dim)

    def unpack(theta):
        L = np.zeros((dim, dim))
        L[rows, cols] = theta[dim:]
        L[np.diag_indices(dim)] = np.exp(np.diag(L))
        return theta[:dim], L

    def neg_elbo(theta):
        m, L = unpack(theta)
        V = L @ L.T
        mean, sd = X @ m, np.sqrt(np.einsum("nd,de,ne->n", X, V, X))
        a = mean[:, None] + sd[:, None] * nodes[None, :]
        expected = (weights * (y[:, None] * a + log_expit(-a))).sum()
        kl = 0.5 * (np.trace(V) + m @ m - dim - 2 * np.sum(np.log(np.diag(L))))
        return -(expected - kl)

    res = minimize(neg_elbo, np.zeros(dim + len(rows)), method="L-BFGS-B", options={"gtol": 1e-10})
    m, L = unpack(res.x)
    return m, L @ L.T, -res.fun


def test_monte_carlo_logistic_regression_reaches_the_exact_optimum():
    X, y = _logistic_data()
    m_star, V_star, _ = _exact_optimum(X, y)

    def log_density(z, X, y):
        a = anp.sum(X * z, axis=-1)
        return y * a - anp.logaddexp(0.0, a)

    factor = MonteCarloFactor(log_density, on="w", data=(X, y), n_samples=200)
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(2), np.eye(2))}, factors=[factor])
    snapshots = []
    fit = model.fit(step=Decaying(rho0=1.0, delay=5.0, power=0.8), max_iter=300, tol=0.0, seed=3,
                    warn=False, callback=lambda info: snapshots.append(info.posterior["w"].natural))
    averaged = Gaussian.from_natural(tuple(np.mean([s[j] for s in snapshots[-100:]], axis=0) for j in range(2)))
    sd = np.sqrt(np.diag(V_star))
    np.testing.assert_allclose(averaged.mean, m_star, atol=0.02 * sd.max())
    np.testing.assert_allclose(averaged.cov, V_star, rtol=0.03)
    assert fit.n_iter == 300


def test_score_function_path_on_a_gamma_block():
    # y_i ~ Poisson(lambda) written as a log-density; the conjugate answer is known exactly
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, size=30).astype(float)

    def log_density(lam, y):
        return y * np.log(lam) - lam

    factor = MonteCarloFactor(log_density, on="rate", data=(counts,), n_samples=400)
    fit = Model(latents={"rate": Gamma(2.0, 1.0)}, factors=[factor]).fit(
        step=Decaying(delay=5.0, power=0.8), max_iter=200, tol=0.0, seed=1, warn=False)
    q = fit.posterior["rate"]
    assert q.shape == pytest.approx(2.0 + counts.sum(), rel=0.05)
    assert q.rate == pytest.approx(1.0 + len(counts), rel=0.05)


def _brute_force_mean_field(log_f, prior_p):
    """Maximise the mean-field ELBO over mu in (0,1)^K by enumeration and multi-start L-BFGS."""
    k = len(prior_p)
    configs = np.array(list(itertools.product([0, 1], repeat=k)))
    table = np.array([log_f(c) for c in configs])

    def neg_elbo(logits):
        mu = expit(logits)
        probs = np.prod(np.where(configs == 1, mu, 1 - mu), axis=1)
        expected = probs @ table
        kl = np.sum(mu * (np.log(mu) - np.log(prior_p)) + (1 - mu) * (np.log1p(-mu) - np.log1p(-prior_p)))
        return -(expected - kl)

    starts = itertools.product([-3.0, 0.0, 3.0], repeat=k)
    best = min((minimize(neg_elbo, np.array(s), method="L-BFGS-B", options={"gtol": 1e-12}) for s in starts),
               key=lambda r: r.fun)
    return expit(best.x), -best.fun


def test_enumeration_on_a_bernoulli_block_matches_brute_force():
    weights = np.array([1.0, -0.5, 0.3])

    def log_f(z):
        return weights @ z - 0.8 * z[0] * z[1] + np.log1p(z[1] + 2.0 * z[2])

    prior_p = np.array([0.3, 0.6, 0.5])
    fit = Model(latents={"z": Bernoulli(prior_p)}, factors=[Enumerated(log_f, on="z")]).fit(
        max_iter=500, tol=1e-14, warn=False)
    mu_star, elbo_star = _brute_force_mean_field(log_f, prior_p)
    np.testing.assert_allclose(fit.posterior["z"].mean, mu_star, atol=1e-6)
    assert fit.elbo == pytest.approx(elbo_star, abs=1e-9)


def test_expected_log_factor_is_conjugate_for_a_linear_expectation():
    # E_q[y log(lam) - lam] = y E[log lam] - E[lam] is linear in the Gamma mean parameters
    counts = np.array([1.0, 4.0, 2.0, 0.0])
    factor = ExpectedLogFactor(lambda mu, y: y * mu[0] - mu[1], on="rate", data=(counts,))
    fit = Model(latents={"rate": Gamma(1.5, 0.5)}, factors=[factor]).fit(step=1.0, max_iter=1, warn=False)
    q = fit.posterior["rate"]
    assert q.shape == pytest.approx(1.5 + counts.sum(), rel=1e-12)
    assert q.rate == pytest.approx(0.5 + len(counts), rel=1e-12)
    assert fit.sites[0]["rate"][0].shape == (4,)
