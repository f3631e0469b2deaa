"""The public surface of each optimiser, and where each one's mean goes on Bayesian linear regression."""

import numpy as np
import pytest

import efvi
from efvi.inference import ngvi

from .models import LinearRegression, LogisticRegression

NOISE_VAR, PRIOR_PRECISION = 0.25, 1.0


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + np.sqrt(NOISE_VAR) * rng.normal(size=200)
    precision = PRIOR_PRECISION * np.eye(3) + X.T @ X / NOISE_VAR
    return X, y, np.linalg.solve(precision, X.T @ y / NOISE_VAR), precision


@pytest.mark.parametrize("cls, family", [
    (ngvi.IVON, efvi.DiagonalGaussian), (ngvi.VOGN, efvi.DiagonalGaussian), (ngvi.Vadam, efvi.DiagonalGaussian),
    (ngvi.Vprop, efvi.DiagonalGaussian), (ngvi.BayesByBackprop, efvi.DiagonalGaussian), (ngvi.VAN, efvi.Gaussian),
])
def test_posterior_samples_and_predictions(regression, cls, family):
    X, y, _, _ = regression
    optimizer = cls(LinearRegression(3, NOISE_VAR), len(y), seed=0)
    loss = optimizer.step(X[:50], y[:50])
    assert np.isfinite(loss) and loss > 0
    assert isinstance(optimizer.posterior, family)
    samples = optimizer.sample(2000, seed=1)
    assert samples.shape == (2000, 3)
    np.testing.assert_allclose(samples.mean(axis=0), optimizer.posterior.mean, atol=5 * np.sqrt(
        np.max(np.diag(np.atleast_2d(np.cov(samples.T)))) / 2000))
    mean, var = optimizer.predict(X[:5], n_samples=50)
    assert mean.shape == var.shape == (5,) and np.all(var > NOISE_VAR)


def test_classification_predictions_are_probabilities():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(float)
    optimizer = ngvi.IVON(LogisticRegression(2), 40)
    optimizer.step(X, y)
    proba = optimizer.predict(X, n_samples=20)
    assert proba.shape == (40, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.mark.parametrize("make, n_steps, tol", [
    (lambda m, n: ngvi.Vadam(m, n, prior_precision=PRIOR_PRECISION, lr=0.05, mc_samples=8, seed=0), 1500, 0.1),
    (lambda m, n: ngvi.Vprop(m, n, prior_precision=PRIOR_PRECISION, lr=0.05, beta=0.9, mc_samples=8, seed=0), 600,
     0.1),
    (lambda m, n: ngvi.Vprop(m, n, prior_precision=PRIOR_PRECISION, lr=0.02, beta=0.99, mc_samples=8, seed=0,
                             sqrt=True), 1500, 0.1),
    (lambda m, n: ngvi.BayesByBackprop(m, n, prior_precision=PRIOR_PRECISION, lr=0.02, mc_samples=8, seed=0), 1500,
     0.1),
    (lambda m, n: ngvi.IVON(m, n, prior_precision=PRIOR_PRECISION, lr=0.5, betas=(0.8, 0.99), mc_samples=8,
                            rescale_lr=False, seed=0), 300, 0.1),
    (lambda m, n: ngvi.Adam(m, n, prior_precision=PRIOR_PRECISION, lr=0.05), 1500, 1e-3),
    (lambda m, n: ngvi.RMSprop(m, n, prior_precision=PRIOR_PRECISION, lr=0.01, beta=0.9), 1500, 1e-3),
], ids=["Vadam", "Vprop", "Vprop-sqrt", "BayesByBackprop", "IVON", "Adam", "RMSprop"])
def test_means_reach_the_posterior_mean_of_linear_regression(regression, make, n_steps, tol):
    """For a linear model ``E_q[grad]`` is the gradient at the mean, so every method's mean
    converges to the exact posterior mean (the MAP, for the point estimates), whatever its variance;
    ``tol`` is in posterior standard deviations, for the average of the last half of the iterates
    (Vadam's and Vprop's own variances stay near the prior's, so their iterates are noisy)."""
    X, y, mean, precision = regression
    optimizer = make(LinearRegression(3, NOISE_VAR), len(y))
    iterates = []
    for _ in range(n_steps):
        optimizer.step(X, y)
        iterates.append(optimizer.params if isinstance(optimizer, (ngvi.Adam, ngvi.RMSprop)) else optimizer.mean)
    estimate = np.mean(iterates[n_steps // 2:], axis=0)
    assert np.max(np.abs(estimate - mean) * np.sqrt(np.diag(precision))) < tol


def test_bayes_by_backprop_reaches_the_mean_field_variances(regression):
    """The mean-field optimum of linear regression has precisions diag(P)."""
    X, y, _, precision = regression
    bbb = ngvi.BayesByBackprop(LinearRegression(3, NOISE_VAR), len(y), prior_precision=PRIOR_PRECISION, lr=0.01,
                               mc_samples=16, seed=0)
    for _ in range(3000):
        bbb.step(X, y)
    np.testing.assert_allclose(bbb.precision, np.diag(precision), rtol=0.1)


def test_point_estimates_have_no_posterior(regression):
    X, y, _, _ = regression
    adam = ngvi.Adam(LinearRegression(3, NOISE_VAR), len(y))
    with pytest.raises(AttributeError, match="point estimate"):
        adam.posterior
    np.testing.assert_array_equal(adam.sample(3), np.zeros((3, 3)))


def test_ess_tempers_the_posterior(regression):
    """VAN with step 1 and ess = n_data / T is the posterior with the likelihood raised to 1/T."""
    X, y, _, _ = regression
    van = ngvi.VAN(LinearRegression(3, NOISE_VAR), len(y), prior_precision=PRIOR_PRECISION, lr=1.0,
                   betas=(0.0, 0.0), mc_samples=2, antithetic=True, ess=len(y) / 2)
    van.step(X, y)
    np.testing.assert_allclose(van.precision, PRIOR_PRECISION * np.eye(3) + X.T @ X / NOISE_VAR / 2, rtol=1e-12)
