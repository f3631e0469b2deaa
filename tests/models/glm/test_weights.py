"""Per-row weights of a GLM (``GLM(..., weights=)``, the estimators' ``sample_weight``).

A weight ``w_i`` multiplies ``log p(y_i | x_i^T w)``, so an integer weight must
give exactly the posterior of the data with the row repeated ``w_i`` times,
and a zero weight that of the data without the row: the independent
reference is the unweighted fit of the expanded (or reduced) data.
"""

import numpy as np
import pytest

from efvi import DiagonalGaussian, Gamma, Gaussian, Model, glm, likelihoods

N, D = 60, 3
TOL = 1e-10


def _data(kind, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(N), rng.normal(size=(N, D - 1))])
    a = X @ np.array([0.3, -0.8, 0.5])
    if kind == "logistic":
        return likelihoods.BernoulliLogit(), X, (rng.uniform(size=N) < 1 / (1 + np.exp(-a))).astype(float)
    return likelihoods.Poisson(), X, rng.poisson(np.exp(a)).astype(float)


def _posterior(likelihood, X, y, weights=None, prior=None, **options):
    prior = Gaussian.from_mean_cov(np.zeros(D), 2.0 * np.eye(D)) if prior is None else prior
    fit = Model({"w": prior}, [glm.GLM(likelihood, X, y, weights=weights)]).fit(**options)
    return fit, fit.posterior["w"]


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_integer_weights_equal_repeated_rows(kind):
    likelihood, X, y = _data(kind)
    weights = np.random.default_rng(1).integers(0, 4, size=N)
    repeat = np.repeat(np.arange(N), weights)
    # the ELBO pins the weights only to about sqrt(tol): the two fits must take the same iterates,
    # Anderson extrapolations included (a weighted site counts 1 / w_i in their least squares)
    weighted, q = _posterior(likelihood, X, y, weights, tol=1e-13, max_iter=500)
    expanded, ref = _posterior(likelihood, X[repeat], y[repeat], tol=1e-13, max_iter=500)
    assert weighted.converged and expanded.converged
    assert weighted.n_iter == expanded.n_iter and weighted.state.n_accelerated == expanded.state.n_accelerated
    np.testing.assert_allclose(weighted.elbo_trace, expanded.elbo_trace, rtol=1e-12)
    np.testing.assert_allclose(q.mean, ref.mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(q.cov, ref.cov, rtol=0, atol=TOL)
    assert weighted.elbo == pytest.approx(expanded.elbo, rel=1e-12)


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_mean_field_weights_equal_repeated_rows_iteration_by_iteration(kind):
    likelihood, X, y = _data(kind, seed=2)
    weights = np.random.default_rng(3).integers(1, 4, size=N)
    repeat = np.repeat(np.arange(N), weights)
    prior = DiagonalGaussian.from_mean_var(np.zeros(D), np.full(D, 2.0))
    # the same steps give the same iterates while the ELBO still moves by more than its rounding (the
    # convergence test may stop the two fits apart, and Anderson acceleration mixes residual vectors in which
    # a repeated row counts once per copy: both are off here)
    options = dict(tol=1e-300, warn=False, acceleration=False)
    for n_iter in (1, 4, 8):
        _, q = _posterior(likelihood, X, y, weights, prior, max_iter=n_iter, **options)
        _, ref = _posterior(likelihood, X[repeat], y[repeat], prior=prior, max_iter=n_iter, **options)
        np.testing.assert_allclose(q.mean, ref.mean, rtol=0, atol=TOL)
        np.testing.assert_allclose(q.var, ref.var, rtol=0, atol=TOL)


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_zero_weights_equal_dropping_the_rows(kind):
    likelihood, X, y = _data(kind, seed=4)
    weights = np.ones(N)
    weights[::3] = 0.0
    kept = weights > 0
    _, q = _posterior(likelihood, X, y, weights, tol=1e-13, max_iter=500)
    _, ref = _posterior(likelihood, X[kept], y[kept], tol=1e-13, max_iter=500)
    np.testing.assert_allclose(q.mean, ref.mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(q.cov, ref.cov, rtol=0, atol=TOL)


def test_weights_scale_a_gamma_noise_precision_block_too():
    rng = np.random.default_rng(5)
    X = np.column_stack([np.ones(N), rng.normal(size=(N, D - 1))])
    y = X @ np.array([1.0, 0.5, -0.3]) + 0.4 * rng.normal(size=N)
    weights = rng.integers(1, 4, size=N)
    repeat = np.repeat(np.arange(N), weights)
    latents = {"w": Gaussian.from_mean_cov(np.zeros(D), np.eye(D)), "tau": Gamma(2.0, 1.0)}
    fits = [Model(latents, [glm.GLM(likelihoods.Gaussian(precision="tau"), X_, y_, weights=w_)]).fit(tol=1e-13,
                                                                                                   max_iter=500)
            for X_, y_, w_ in ((X, y, weights), (X[repeat], y[repeat], None))]
    np.testing.assert_allclose(fits[0].posterior["w"].mean, fits[1].posterior["w"].mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(fits[0].posterior["tau"].natural, fits[1].posterior["tau"].natural, rtol=1e-12)


def test_unit_weights_change_nothing_with_minibatches():
    likelihood, X, y = _data("logistic", seed=6)
    options = dict(batch_size=20, seed=3, max_iter=30, warn=False)
    _, q = _posterior(likelihood, X, y, np.ones(N), **options)
    _, ref = _posterior(likelihood, X, y, **options)
    np.testing.assert_array_equal(q.mean, ref.mean)


def test_the_estimators_sample_weight_equals_repeated_rows():
    _, X, y = _data("logistic", seed=7)
    weights = np.random.default_rng(8).integers(0, 3, size=N)
    repeat = np.repeat(np.arange(N), weights)
    labels = np.where(y > 0, "yes", "no")
    options = dict(tol=1e-13, max_iter=500)
    weighted = glm.BayesianLogisticRegression(**options).fit(X[:, 1:], labels, sample_weight=weights)
    expanded = glm.BayesianLogisticRegression(**options).fit(X[repeat, 1:], labels[repeat])
    np.testing.assert_allclose(weighted.coef_cov_, expanded.coef_cov_, rtol=0, atol=TOL)
    np.testing.assert_allclose(weighted.predict_proba(X[:5, 1:]), expanded.predict_proba(X[:5, 1:]), rtol=0, atol=TOL)
    _, X, counts = _data("poisson", seed=9)
    model = glm.BayesianGLM(likelihood=likelihoods.Poisson(), **options)
    np.testing.assert_allclose(model.fit(X[:, 1:], counts, sample_weight=weights).coef_,
                               glm.BayesianGLM(likelihood=likelihoods.Poisson(), **options).fit(
                                   X[repeat, 1:], counts[repeat]).coef_, rtol=0, atol=TOL)


@pytest.mark.parametrize("weights, message", [
    (-np.ones(N), "weights must be finite and >= 0; got -1.0 at index 0"),
    (np.r_[np.ones(N - 1), np.nan], "weights must be finite and >= 0; got nan at index 59"),
    (np.r_[np.inf, np.ones(N - 1)], "weights must be finite and >= 0; got inf at index 0"),
    (np.ones(N - 1), r"weights must have shape \(60,\), one per data point; got shape \(59,\)"),
    (np.ones((N, 1)), r"weights must have shape \(60,\)"),
    (["a"] * N, "weights must be real numbers"),
    (np.ones(N) + 1j, "weights must be real numbers"),
])
def test_bad_weights_are_named(weights, message):
    likelihood, X, y = _data("logistic")
    with pytest.raises(ValueError, match=message):
        glm.GLM(likelihood, X, y, weights=weights)
    with pytest.raises(ValueError, match="sample_weight" + message[len("weights"):]):
        glm.BayesianLogisticRegression().fit(X, y, sample_weight=weights)


def test_all_zero_sample_weights_are_named():
    likelihood, X, y = _data("poisson")
    with pytest.raises(ValueError, match="sample_weight must not be all zero"):
        glm.BayesianGLM(likelihood=likelihood).fit(X, y, sample_weight=np.zeros(N))
