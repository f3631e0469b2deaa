"""The GLM factor: sites, missing data, predictions, the estimators and input checks."""

import numpy as np
import pytest
from scipy.special import expit

from efvi.expfam import DiagonalGaussian, Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods


@pytest.fixture
def logistic_data():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(120), rng.normal(size=(120, 2))])
    y = (rng.random(120) < expit(X @ [0.2, 1.5, -1.0])).astype(float)
    return X, y


def _fit(X, y, lik=None, prior_var=1.0, **kwargs):
    dim = X.shape[1]
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(dim), prior_var * np.eye(dim))},
                  factors=[glm.GLM(lik or likelihoods.BernoulliLogit(), X, y, on="w")])
    return model.fit(**kwargs)


def test_sites_reproduce_the_posterior_as_bayesian_linear_regression(logistic_data):
    X, y = logistic_data
    fit = _fit(X, y, tol=1e-15, max_iter=300, warn=False)
    sites = fit.sites[0]
    assert sites.precision.shape == (len(y),) and np.all(sites.precision > 0)
    # the posterior is the prior conditioned on pseudo-observations with noise 1/pi
    precision = np.eye(3) + X.T @ (sites.precision[:, None] * X)
    mean = np.linalg.solve(precision, X.T @ (sites.precision * sites.pseudo_obs))
    np.testing.assert_allclose(fit.posterior["w"].mean, mean, rtol=1e-9)
    np.testing.assert_allclose(fit.posterior["w"].precision, precision, rtol=1e-9)
    # and at the fixed point each site is the natural gradient of its own expected log-likelihood
    q = fit.posterior["w"]
    m_i, v_i = X @ q.mean, np.einsum("nd,de,ne->n", X, q.cov, X)
    _, g_m, g_v = likelihoods.BernoulliLogit().variational_expectations(m_i, v_i, y)
    np.testing.assert_allclose(sites.precision, -2 * g_v, rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(sites.natural_mean, g_m - 2 * g_v * m_i, rtol=1e-5, atol=1e-8)


def test_missing_responses_keep_empty_sites(logistic_data):
    X, y = logistic_data
    y_missing = y.copy()
    y_missing[::4] = np.nan
    fit = _fit(X, y_missing)
    assert np.all(fit.sites[0].precision[::4] == 0) and np.all(fit.sites[0].natural_mean[::4] == 0)
    observed = ~np.isnan(y_missing)
    reference = _fit(X[observed], y[observed])
    np.testing.assert_allclose(fit.posterior["w"].mean, reference.posterior["w"].mean, rtol=1e-8)
    assert fit.elbo == pytest.approx(reference.elbo, rel=1e-10)


def test_poisson_regression_recovers_the_weights():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(2000), rng.normal(size=(2000, 2)) * 0.5])
    counts = rng.poisson(np.exp(X @ [1.0, 0.5, -0.7]))
    fit = _fit(X, counts, likelihoods.Poisson(), prior_var=1.0)
    q = fit.posterior["w"]
    assert fit.converged
    np.testing.assert_allclose(q.mean, [1.0, 0.5, -0.7], atol=4 * np.sqrt(np.diag(q.cov)).max())


def test_estimator_matches_the_model_api(logistic_data):
    X, y = logistic_data
    est = glm.BayesianLogisticRegression().fit(X[:, 1:], y)
    fit = _fit(X, y)
    np.testing.assert_allclose(est.coef_, fit.posterior["w"].mean[1:], rtol=1e-10)
    assert est.intercept_ == pytest.approx(fit.posterior["w"].mean[0], rel=1e-10)
    np.testing.assert_allclose(est.coef_cov_, fit.posterior["w"].cov, rtol=1e-10)
    assert est.converged_ and est.n_iter_ == fit.n_iter
    proba = est.predict_proba(X[:5, 1:])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    # predictive probability = E[sigmoid(a)] under a ~ N(x^T m, x^T V x), by brute-force quadrature
    mean, var = est.predict_latent(X[:5, 1:])
    grid = np.linspace(-12, 12, 20001)
    density = np.exp(-0.5 * (grid[None] - mean[:, None]) ** 2 / var[:, None]) / np.sqrt(2 * np.pi * var[:, None])
    brute = np.trapezoid(density * expit(grid[None]), grid, axis=1)
    np.testing.assert_allclose(proba[:, 1], brute, rtol=1e-6)
    assert set(est.predict(X[:, 1:])) <= {0, 1}
    assert np.mean(est.predict(X[:, 1:]) == y) > 0.7


def test_diagonal_estimator_and_gaussian_estimator(logistic_data):
    X, y = logistic_data
    est = glm.BayesianGLM(likelihoods.Gaussian(variance=0.5), covariance="diag").fit(X[:, 1:], X @ [1.0, 2.0, 3.0])
    assert isinstance(est.posterior_, DiagonalGaussian)
    assert np.allclose(est.coef_cov_, np.diag(np.diag(est.coef_cov_)))
    np.testing.assert_allclose(est.predict(X[:3, 1:]), X[:3] @ est.posterior_.mean, rtol=1e-12)
    with pytest.raises(ValueError, match="covariance"):
        glm.BayesianGLM(covariance="banded").fit(X, y)
    with pytest.raises(ValueError, match="not fitted"):
        glm.BayesianLogisticRegression().predict(X)


def test_laplace_baseline_finds_the_map(logistic_data):
    X, y = logistic_data
    q, _ = glm.laplace(likelihoods.BernoulliLogit(), X, y, np.zeros(3), np.eye(3))
    gradient = X.T @ (y - expit(X @ q.mean)) - q.mean
    np.testing.assert_allclose(gradient, 0.0, atol=1e-8)
    hessian = np.eye(3) + X.T @ ((expit(X @ q.mean) * expit(-X @ q.mean))[:, None] * X)
    np.testing.assert_allclose(q.precision, hessian, rtol=1e-10)


def test_bad_inputs_name_the_argument(logistic_data):
    X, y = logistic_data
    with pytest.raises(ValueError, match="y"):
        glm.GLM(likelihoods.BernoulliLogit(), X, np.where(y > 0, 2.0, 0.0), on="w")
    with pytest.raises(ValueError, match="y"):
        glm.GLM(likelihoods.Poisson(), X, -y, on="w")
    with pytest.raises(ValueError, match="likelihood"):
        glm.GLM("logistic", X, y, on="w")
    X_inf = X.copy()
    X_inf[0, 0] = np.inf
    with pytest.raises(ValueError, match="X must be finite"):
        glm.GLM(likelihoods.BernoulliLogit(), X_inf, y, on="w")


def test_logistic_estimator_takes_any_two_labels(logistic_data):
    X, y = logistic_data
    coded = glm.BayesianLogisticRegression().fit(X[:, 1:], y)
    named = glm.BayesianLogisticRegression().fit(X[:, 1:], np.where(y == 1, "spam", "ham"))
    np.testing.assert_array_equal(named.classes_, ["ham", "spam"])
    np.testing.assert_array_equal(named.coef_, coded.coef_)
    np.testing.assert_array_equal(named.predict(X[:, 1:]), np.where(coded.predict(X[:, 1:]) == 1, "spam", "ham"))
    signs = glm.BayesianLogisticRegression().fit(X[:, 1:], 2 * y - 1)
    np.testing.assert_array_equal(signs.classes_, [-1, 1])
    np.testing.assert_array_equal(signs.predict_proba(X[:4, 1:]), coded.predict_proba(X[:4, 1:]))
    with pytest.raises(ValueError, match="y must hold exactly two classes.*got 3"):
        glm.BayesianLogisticRegression().fit(X[:, 1:], np.arange(len(y)) % 3)


@pytest.fixture
def poisson_exposure_data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 2)) * 0.5
    exposure = rng.uniform(0.5, 3.0, size=60)
    counts = rng.poisson(exposure * np.exp(0.4 + X @ [0.5, -0.7]))
    return X, exposure, counts


def test_predict_takes_the_per_point_parameter_of_new_inputs(poisson_exposure_data):
    X, exposure, counts = poisson_exposure_data
    est = glm.BayesianGLM(likelihoods.Poisson(exposure=exposure)).fit(X, counts)
    new_exposure = np.linspace(0.5, 4.0, 7)
    mean, var = est.predict_latent(X[:7])
    # E[e exp(a)] under a ~ N(mean, var): the log-normal mean
    np.testing.assert_allclose(est.predict(X[:7], exposure=new_exposure),
                               new_exposure * np.exp(mean + var / 2), rtol=1e-12)
    np.testing.assert_allclose(est.predict(X[:7], exposure=2.0), 2.0 * np.exp(mean + var / 2), rtol=1e-12)
    # needed but missing, even when the row count equals the training N (no silent reuse)
    with pytest.raises(ValueError, match=r"exposure must be given to predict, one value per row of X \(60\)"):
        est.predict(X)
    with pytest.raises(ValueError, match=r"exposure must be a scalar or have shape \(7,\).*got shape \(60,\)"):
        est.predict(X[:7], exposure=exposure)
    with pytest.raises(ValueError, match=r"unexpected keyword.*\['n_trials'\].*Poisson accepts only 'exposure'"):
        est.predict(X[:7], n_trials=3)


def test_predict_with_a_shared_or_no_per_point_parameter(poisson_exposure_data):
    X, exposure, counts = poisson_exposure_data
    est = glm.BayesianGLM(likelihoods.Poisson(exposure=2.0)).fit(X, counts)
    mean, var = est.predict_latent(X[:5])
    np.testing.assert_allclose(est.predict(X[:5]), 2.0 * np.exp(mean + var / 2), rtol=1e-12)
    np.testing.assert_allclose(est.predict(X[:5], exposure=np.full(5, 3.0)), 3.0 * np.exp(mean + var / 2),
                               rtol=1e-12)
    with pytest.raises(ValueError, match=r"unexpected keyword.*\['exposure'\].*Gaussian accepts none"):
        glm.BayesianGLM().fit(X, counts).predict(X[:5], exposure=1.0)


def test_binomial_predict_uses_the_new_trials(poisson_exposure_data):
    X, _, _ = poisson_exposure_data
    rng = np.random.default_rng(6)
    trials = rng.integers(1, 8, size=60)
    successes = rng.binomial(trials, expit(X @ [1.0, -1.0]))
    est = glm.BayesianGLM(likelihoods.BinomialLogit(n_trials=trials)).fit(X, successes)
    mean, var = est.predict_latent(X[:4])
    # E[n sigmoid(a)] under a ~ N(mean, var), by brute-force quadrature on a fine grid
    grid = np.linspace(-12, 12, 20001)
    density = np.exp(-0.5 * (grid[None] - mean[:, None]) ** 2 / var[:, None]) / np.sqrt(2 * np.pi * var[:, None])
    ones = np.trapezoid(density * expit(grid)[None], grid, axis=1)
    np.testing.assert_allclose(est.predict(X[:4], n_trials=[2, 3, 4, 5]), np.array([2, 3, 4, 5]) * ones, rtol=1e-7)
    with pytest.raises(ValueError, match="n_trials must be given to predict"):
        est.predict(X[:4])


def test_estimator_rejects_empty_data_and_a_non_bool_intercept(poisson_exposure_data):
    X, _, counts = poisson_exposure_data
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 2\)\)"):
        glm.BayesianGLM().fit(X[:0], counts[:0])
    with pytest.raises(ValueError, match="fit_intercept must be True or False; got 'no'"):
        glm.BayesianGLM(fit_intercept="no").fit(X, counts)
