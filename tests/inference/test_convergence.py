"""Honest convergence: a fit is converged only when a full step would no longer move it."""

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.inference import Adaptive, ConvergenceWarning, Fixed, Model
from efvi.models import glm, likelihoods


def _poisson_counts(prior_var, level=1e5, n=100, seed=1):
    """Counts of about ``level`` under a diffuse prior: CVI targets at the prior overflow."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), 0.1 * rng.normal(size=n)])
    y = rng.poisson(np.exp(X @ [np.log(level), 0.5])).astype(float)
    return Model({"w": Gaussian.from_mean_cov(np.zeros(2), prior_var * np.eye(2))},
                 [glm.GLM(likelihoods.Poisson(), X, y, on="w")]), X, y


def _stationarity_residuals(X, prior_var, y, mean, cov):
    r"""Relative residuals of the optimality conditions of Gaussian VI for Poisson regression.

    With :math:`\lambda_i = \exp(x_i^T m + x_i^T V x_i / 2)` the ELBO is stationary where
    :math:`X^T (y - \lambda) = m / s_0` and :math:`V^{-1} = I / s_0 + X^T \operatorname{diag}(\lambda) X`.
    """
    rate = np.exp(X @ mean + np.einsum("ij,jk,ik->i", X, cov, X) / 2)
    mean_residual = X.T @ (y - rate) - mean / prior_var
    precision = np.eye(X.shape[1]) / prior_var + X.T @ (rate[:, None] * X)
    return (np.max(np.abs(mean_residual)) / np.max(np.abs(X.T @ y)),
            np.max(np.abs(np.linalg.inv(cov) - precision)) / np.max(np.abs(precision)))


@pytest.mark.parametrize("prior_var", [100.0, 1e4])
def test_exponential_link_from_the_prior_reaches_the_optimum(prior_var):
    """Counts of 1e5 under a diffuse prior, started at the prior: once converged=True 1e8 nats short of the
    optimum with a posterior variance of 1e-24 (prior variance 100), or a crash (1e4)."""
    model, X, y = _poisson_counts(prior_var)
    informed = model.fit(tol=1e-12)
    from_prior = model.fit(init="prior", tol=1e-12)
    assert informed.converged and from_prior.converged
    assert from_prior.elbo == pytest.approx(informed.elbo, abs=1e-6)
    mean_residual, precision_residual = _stationarity_residuals(X, prior_var, y, from_prior.posterior["w"].mean,
                                                                from_prior.posterior["w"].cov)
    assert mean_residual < 1e-9 and precision_residual < 1e-9
    np.testing.assert_allclose(from_prior.posterior["w"].mean, informed.posterior["w"].mean, rtol=1e-8)
    np.testing.assert_allclose(from_prior.posterior["w"].cov, informed.posterior["w"].cov, rtol=1e-6)


def _logistic(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ [0.5, 2.0, -1.0]))).astype(float)
    return Model({"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                 [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def test_a_tiny_step_is_never_reported_as_converged():
    """With rho = 1e-9 the ELBO barely changes, so the relative-change test passes at once."""
    model = _logistic()
    optimum = model.fit(tol=1e-12).elbo
    with pytest.warns(ConvergenceWarning, match="max_iter=5"):
        fit = model.fit(step=Fixed(1e-9), init="prior", max_iter=5)
    assert not fit.converged and fit.message
    assert optimum - fit.elbo > 10.0                # far from the optimum: nothing to call converged


def test_a_short_fixed_step_converges_once_the_full_step_would_not_move_the_fit():
    model = _logistic()
    reference = model.fit(tol=1e-12)
    fit = model.fit(step=Fixed(0.5), tol=1e-10, max_iter=500)
    assert fit.converged
    assert fit.elbo == pytest.approx(reference.elbo, abs=1e-10 * abs(reference.elbo) * 10)


def test_a_stalled_fit_stops_with_a_reason():
    """Under a diffuse prior the second full step overshoots; a rule that may not shorten it below 0.9 stalls."""
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(50), rng.normal(size=(50, 2))])
    y = (rng.random(50) < 1 / (1 + np.exp(-X @ [0.5, 4.0, -3.0]))).astype(float)
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(3), 100 * np.eye(3))},
                  [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    with pytest.warns(ConvergenceWarning, match="stalled"):
        fit = model.fit(step=Adaptive(rho0=1.0, shrink=0.5, min_rho=0.9), init="prior", acceleration=False)
    assert not fit.converged and "min_rho=0.9" in fit.message
    assert fit.n_iter == 2 and fit.rho_trace[-1] == 0.0       # stopped at once, not at max_iter
    assert model.fit(tol=1e-10).elbo - fit.elbo > 1.0           # and it was far from the optimum
