"""ARDPrior: VB ARD regression by VMP against the textbook mean-field updates (Bishop, 2006, section 7.2; Drugowitsch, 2013)."""

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from efvi.expfam import DiagonalGaussian, Gamma, Gaussian
from efvi.inference import ARDPrior, Model
from efvi.models import glm, likelihoods

A0, B0, C0, D0, S0 = 1e-2, 1e-2, 1e-2, 1e-2, 1e-6     # Gamma priors on alpha and tau; weight-prior precision


def _problem(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    w_true = np.array([1.5, -2.0, 0.8, 0.0, 0.0, 0.0])     # the last three features are irrelevant
    return X, X @ w_true + 0.5 * rng.normal(size=n)


def _model(X, y, weights=Gaussian):
    dim = X.shape[1]
    prior = (Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim) / S0) if weights is Gaussian
             else DiagonalGaussian.from_mean_var(np.zeros(dim), np.full(dim, 1 / S0)))
    return Model(latents={"w": prior, "alpha": Gamma(np.full(dim, A0), np.full(dim, B0)), "tau": Gamma(C0, D0)},
                 factors=[glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w"),
                          ARDPrior(on="w", precision="alpha")])


def _gamma_kl(a, b, c, d):
    """KL(Gamma(a, b) || Gamma(c, d)), textbook form."""
    return ((a - c) * digamma(a) - gammaln(a) + gammaln(c) + c * (np.log(b) - np.log(d))
            + a * (d - b) / b)


def _reference(X, y, sweeps=5000):
    """Iterate the closed-form mean-field updates q(w) q(alpha) q(tau) to convergence; return them and the ELBO."""
    n, dim = X.shape
    gram, xty = X.T @ X, X.T @ y
    e_alpha, e_tau = np.full(dim, A0 / B0), C0 / D0
    for _ in range(sweeps):
        cov = np.linalg.inv(e_tau * gram + np.diag(e_alpha + S0))
        mean = e_tau * cov @ xty
        e_w2 = mean ** 2 + np.diag(cov)
        a, b = A0 + 0.5, B0 + 0.5 * e_w2
        resid = np.sum((y - X @ mean) ** 2) + np.trace(gram @ cov)
        c, d = C0 + 0.5 * n, D0 + 0.5 * resid
        new_alpha, e_tau = a / b, c / d
        if np.max(np.abs(new_alpha - e_alpha) / new_alpha) < 1e-15:
            break
        e_alpha = new_alpha
    e_log_tau, e_log_alpha = digamma(c) - np.log(d), digamma(a) - np.log(b)
    log_lik = 0.5 * n * (e_log_tau - np.log(2 * np.pi)) - 0.5 * e_tau * resid
    log_ard = 0.5 * np.sum(e_log_alpha - np.log(2 * np.pi) - (a / b) * e_w2)
    kl_w = 0.5 * (S0 * np.sum(e_w2) - dim - np.linalg.slogdet(S0 * cov)[1])
    elbo = log_lik + log_ard - kl_w - np.sum(_gamma_kl(a, b, A0, B0)) - _gamma_kl(c, d, C0, D0)
    return mean, cov, a, b, c, d, elbo


@pytest.fixture(scope="module")
def fitted():
    X, y = _problem()
    # the parameters are checked to 1e-8, and an ELBO within tol of its optimum only bounds them to about
    # sqrt(tol): iterate to rounding (tol=0; VMP contracts by about 1e-3 per sweep here)
    return _model(X, y).fit(step=1.0, tol=0.0, max_iter=40, warn=False), _reference(X, y)


def test_vmp_fixed_point_is_the_closed_form_mean_field_solution(fitted):
    fit, (mean, cov, a, b, c, d, elbo) = fitted
    q_w, q_alpha, q_tau = fit.posterior["w"], fit.posterior["alpha"], fit.posterior["tau"]
    np.testing.assert_allclose(q_w.mean, mean, rtol=0, atol=1e-8)
    np.testing.assert_allclose(q_w.cov, cov, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(q_alpha.shape, a, rtol=1e-10)
    np.testing.assert_allclose(q_alpha.rate, b, rtol=1e-8)
    np.testing.assert_allclose([q_tau.shape, q_tau.rate], [c, d], rtol=1e-8)
    assert fit.elbo == pytest.approx(elbo, rel=1e-9)


def test_elbo_never_decreases(fitted):
    trace = np.asarray(fitted[0].elbo_trace)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))


def test_irrelevant_features_get_large_precisions(fitted):
    e_alpha = fitted[0].posterior["alpha"].mean
    assert np.min(e_alpha[3:]) > 10 * np.max(e_alpha[:3])     # about 20x here: VB keeps a_d = a0 + 1/2, so no precision diverges
    mean = fitted[0].posterior["w"].mean     # noise sd 0.5 and N = 200: standard errors about 0.035
    assert np.max(np.abs(mean[3:])) < 0.15 and np.max(np.abs(mean[:3] - [1.5, -2.0, 0.8])) < 0.1


def test_diagonal_gaussian_weights_give_the_diagonal_mean_field_fixed_point():
    X, y = _problem(n=60, seed=1)
    X = X * np.array([1, 2, 3, 1, 1, 1])
    fit = _model(X, y, weights=DiagonalGaussian).fit(step=1.0, tol=0.0, max_iter=300)   # tol=0: until the ELBO stops changing
    q_w, q_alpha, q_tau = fit.posterior["w"], fit.posterior["alpha"].mean, fit.posterior["tau"].mean
    # coordinate-wise fixed point of q(w_d): precision tau ||x_d||^2 + alpha_d + s, mean tau x_d^T (y - X_{-d} m_{-d}) / precision
    precision = q_tau * np.sum(X ** 2, 0) + q_alpha + S0
    partial = y[:, None] - X @ q_w.mean[:, None] + X * q_w.mean
    np.testing.assert_allclose(q_w.var, 1 / precision, rtol=1e-8)
    np.testing.assert_allclose(q_w.mean, q_tau * np.sum(X * partial, 0) / precision, rtol=0, atol=1e-8)
    assert np.all(np.diff(fit.elbo_trace) >= -1e-9 * np.abs(np.asarray(fit.elbo_trace[1:])))


@pytest.mark.parametrize("alpha, message", [
    (Gamma(1.0, 1.0), r"batch shape \(6,\).*got batch shape \(\)"),
    (Gamma(np.ones(4), np.ones(4)), r"batch shape \(6,\).*got batch shape \(4,\)"),
    (Gaussian.from_mean_cov(np.zeros(6), np.eye(6)), "precision='alpha' must be a Gamma block"),
])
def test_bad_precision_block_is_named(alpha, message):
    X, y = _problem(n=20)
    latents = {"w": Gaussian.from_mean_cov(np.zeros(6), np.eye(6)), "alpha": alpha}
    with pytest.raises(ValueError, match=message):
        Model(latents, [glm.GLM(likelihoods.Gaussian(1.0), X, y, on="w"), ARDPrior(on="w", precision="alpha")])


def test_bad_weight_block_and_names():
    with pytest.raises(ValueError, match="on='w' must be a Gaussian or DiagonalGaussian block; got Gamma"):
        Model({"w": Gamma(np.ones(3), 1.0), "alpha": Gamma(np.ones(3), 1.0)}, [ARDPrior(on="w", precision="alpha")])
    with pytest.raises(ValueError, match="precision must be the name of a block"):
        ARDPrior(on="w", precision=Gamma(1.0, 1.0))
    with pytest.raises(ValueError, match="two different blocks"):
        ARDPrior(on="w", precision="w")
