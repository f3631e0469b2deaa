"""Bayesian linear regression: the conjugate Gaussian path is exact VMP."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from efvi.expfam import Gamma, Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    w = np.array([0.5, -1.0, 2.0])
    y = X @ w + 0.3 * rng.normal(size=40)
    return X, y


def test_known_noise_one_step_is_exact_posterior(data):
    X, y = data
    m0, S0, noise = np.array([0.1, 0.0, -0.2]), np.diag([1.0, 2.0, 0.5]), 0.09
    model = Model(latents={"w": Gaussian.from_mean_cov(m0, S0)},
                  factors=[glm.GLM(likelihoods.Gaussian(variance=noise), X, y, on="w")])
    fit = model.fit(step=1.0, max_iter=1, warn=False)
    precision = np.linalg.inv(S0) + X.T @ X / noise
    cov = np.linalg.inv(precision)
    mean = cov @ (np.linalg.solve(S0, m0) + X.T @ y / noise)
    q = fit.posterior["w"]
    np.testing.assert_allclose(q.mean, mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q.cov, cov, rtol=1e-10, atol=1e-13)
    log_marginal = multivariate_normal(X @ m0, X @ S0 @ X.T + noise * np.eye(len(y))).logpdf(y)
    assert fit.elbo == pytest.approx(log_marginal, abs=1e-9)
    # the sites are the pseudo-observations y with noise variance 0.09
    np.testing.assert_allclose(fit.sites[0].pseudo_obs, y, rtol=1e-12)
    np.testing.assert_allclose(fit.sites[0].precision, 1 / noise, rtol=1e-12)


def test_default_adaptive_step_also_exact_in_one_iteration(data):
    X, y = data
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                  factors=[glm.GLM(likelihoods.Gaussian(variance=0.5), X, y, on="w")])
    fit = model.fit()
    assert fit.converged and fit.n_iter <= 2
    cov = np.linalg.inv(np.eye(3) + X.T @ X / 0.5)
    np.testing.assert_allclose(fit.posterior["w"].mean, cov @ X.T @ y / 0.5, rtol=1e-10)


def test_gamma_noise_vmp_monotone_and_fixed_point(data):
    X, y = data
    m0, S0 = np.zeros(3), 4.0 * np.eye(3)
    a0, b0 = 2.0, 1.0
    model = Model(latents={"w": Gaussian.from_mean_cov(m0, S0), "tau": Gamma(a0, b0)},
                  factors=[glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w")])
    fit = model.fit(step=1.0, max_iter=100, tol=0.0, warn=False)
    trace = fit.elbo_trace
    assert np.all(np.diff(trace) >= -1e-10 * np.abs(trace[1:])), np.diff(trace).min()
    assert trace[-1] > trace[0]
    q_w, q_tau = fit.posterior["w"], fit.posterior["tau"]
    e_tau = q_tau.shape / q_tau.rate
    precision = np.linalg.inv(S0) + e_tau * X.T @ X
    np.testing.assert_allclose(q_w.cov, np.linalg.inv(precision), rtol=1e-8)
    np.testing.assert_allclose(q_w.mean, np.linalg.solve(precision, e_tau * X.T @ y), rtol=1e-8)
    resid = y - X @ q_w.mean
    rate = b0 + 0.5 * (resid @ resid + np.trace(X.T @ X @ q_w.cov))
    assert q_tau.shape == pytest.approx(a0 + len(y) / 2, rel=1e-12)
    assert q_tau.rate == pytest.approx(rate, rel=1e-8)
    # the precision sites are per data point: (1/2, -E[(y_i - a_i)^2]/2)
    shape_sites, rate_sites = fit.sites[0]["tau"]
    assert shape_sites.shape == (len(y),)
    np.testing.assert_allclose(shape_sites, 0.5)
