"""Conjugate factors: one step with rho = 1 is the exact posterior and the ELBO is the evidence."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import gammaln, multigammaln
from scipy.stats import binom, gamma, poisson, beta as beta_dist

from efvi.expfam import Beta, Dirichlet, Gamma, Gaussian, Wishart
from efvi.inference import BinomialBeta, CategoricalDirichlet, GaussianWishart, Model, PoissonGamma


def _one_step(latents, factors):
    return Model(latents, factors).fit(step=1.0, max_iter=1, warn=False)


def test_poisson_gamma_exact_posterior_and_evidence():
    counts = np.array([3, 0, 5, 2, 4])
    exposure = np.array([1.0, 0.5, 2.0, 1.0, 1.5])
    a0, b0 = 2.0, 0.7
    fit = _one_step({"rate": Gamma(a0, b0)}, [PoissonGamma(counts, on="rate", exposure=exposure)])
    q = fit.posterior["rate"]
    assert q.shape == pytest.approx(a0 + counts.sum(), rel=1e-12)
    assert q.rate == pytest.approx(b0 + exposure.sum(), rel=1e-12)
    evidence, _ = integrate.quad(
        lambda lam: np.prod(poisson.pmf(counts, exposure * lam)) * gamma.pdf(lam, a0, scale=1 / b0),
        0, np.inf, epsabs=0, epsrel=1e-12)
    assert fit.elbo == pytest.approx(np.log(evidence), abs=1e-8)


def test_poisson_gamma_groups_share_one_batched_block():
    counts, group = np.array([1, 2, 7, 9]), np.array([0, 0, 1, 1])
    fit = _one_step({"rate": Gamma(np.ones(2), np.ones(2))}, [PoissonGamma(counts, on="rate", group=group)])
    np.testing.assert_allclose(fit.posterior["rate"].shape, [4.0, 17.0])
    np.testing.assert_allclose(fit.posterior["rate"].rate, [3.0, 3.0])


def test_binomial_beta_exact_posterior_and_evidence():
    successes, trials = np.array([2, 5, 0, 7]), np.array([4, 6, 3, 10])
    a0, b0 = 1.5, 2.5
    fit = _one_step({"p": Beta(a0, b0)}, [BinomialBeta(successes, on="p", trials=trials)])
    q = fit.posterior["p"]
    assert q.natural[0] + 1 == pytest.approx(a0 + successes.sum())
    assert q.natural[1] + 1 == pytest.approx(b0 + (trials - successes).sum())
    evidence, _ = integrate.quad(
        lambda p: np.prod(binom.pmf(successes, trials, p)) * beta_dist.pdf(p, a0, b0), 0, 1,
        epsabs=0, epsrel=1e-12)
    assert fit.elbo == pytest.approx(np.log(evidence), abs=1e-8)


def test_categorical_dirichlet_with_observed_labels():
    labels = np.array([0, 2, 2, 1, 2, 0])
    alpha0 = np.array([0.5, 1.0, 2.0])
    fit = _one_step({"pi": Dirichlet(alpha0)}, [CategoricalDirichlet(on="pi", labels=labels)])
    counts = np.bincount(labels, minlength=3)
    np.testing.assert_allclose(fit.posterior["pi"].concentration, alpha0 + counts, rtol=1e-12)
    log_evidence = (gammaln(alpha0.sum()) - gammaln(alpha0.sum() + len(labels))
                    + np.sum(gammaln(alpha0 + counts) - gammaln(alpha0)))
    assert fit.elbo == pytest.approx(log_evidence, abs=1e-10)


def test_gaussian_wishart_known_mean_exact_posterior_and_evidence():
    rng = np.random.default_rng(2)
    X = rng.multivariate_normal([1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]], size=25)
    mu = np.array([1.0, -1.0])
    df0, scale0 = 4.0, np.array([[0.5, 0.1], [0.1, 0.8]])
    fit = _one_step({"L": Wishart(df0, scale0)}, [GaussianWishart(X, precision="L", mean=mu)])
    scatter = (X - mu).T @ (X - mu)
    df, scale = df0 + len(X), np.linalg.inv(np.linalg.inv(scale0) + scatter)
    q = fit.posterior["L"]
    assert q.df == pytest.approx(df, rel=1e-12)
    np.testing.assert_allclose(q.scale, scale, rtol=1e-10)
    n, dim = X.shape

    def log_norm(nu, W):
        return 0.5 * nu * dim * np.log(2) + 0.5 * nu * np.linalg.slogdet(W)[1] + multigammaln(nu / 2, dim)

    log_evidence = -0.5 * n * dim * np.log(2 * np.pi) + log_norm(df, scale) - log_norm(df0, scale0)
    assert fit.elbo == pytest.approx(log_evidence, abs=1e-9)


def test_gaussian_wishart_with_gaussian_mean_block_is_monotone_vmp():
    rng = np.random.default_rng(4)
    X = rng.multivariate_normal([2.0, 0.0], [[1.0, 0.4], [0.4, 0.5]], size=50)
    latents = {"mu": Gaussian.from_mean_cov(np.zeros(2), 10 * np.eye(2)), "L": Wishart(3.0, np.eye(2))}
    # parameters checked to 1e-8: iterate to rounding (an ELBO tolerance bounds them only to about sqrt(tol))
    fit = Model(latents, [GaussianWishart(X, precision="L", mean="mu")]).fit(step=1.0, max_iter=60, tol=0.0,
                                                                             warn=False)
    assert np.all(np.diff(fit.elbo_trace) >= -1e-10 * np.abs(fit.elbo_trace[1:]))
    q_mu, q_L = fit.posterior["mu"], fit.posterior["L"]
    e_prec = q_L.mean
    # hand-derived VMP fixed point
    post_prec = np.eye(2) / 10 + len(X) * e_prec
    np.testing.assert_allclose(q_mu.cov, np.linalg.inv(post_prec), rtol=1e-8)
    np.testing.assert_allclose(q_mu.mean, np.linalg.solve(post_prec, e_prec @ X.sum(0)), rtol=1e-8)
    scatter = (X - q_mu.mean).T @ (X - q_mu.mean) + len(X) * q_mu.cov
    np.testing.assert_allclose(np.linalg.inv(q_L.scale), np.eye(2) + scatter, rtol=1e-8)
