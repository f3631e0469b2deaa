"""The GP block through the engine: exact regression, missing data, and CVI against independent optima.

References: the textbook GP-regression formulas and scikit-learn's
GaussianProcessRegressor for the Gaussian likelihood; for non-conjugate
likelihoods, the optimal Gaussian ELBO found by scipy L-BFGS over a mean and a
Cholesky factor (tests/models/gp/reference.py).
"""

import numpy as np
import pytest
from scipy.stats import multivariate_normal
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk_kernels

from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods

from .reference import (dense_site_posterior, gaussian_elbo, log_lik_logistic, log_lik_student_t,
                        optimal_gp_elbo)

EXACT = 1e-10
NOISE = 0.09


def _regression_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 6.0, size=(n, 1))
    return X, np.sin(X[:, 0]) + 0.8 + np.sqrt(NOISE) * rng.normal(size=n)


def _one_step(kernel, X, y, mean=0.0, noise=NOISE):
    model = Model({"f": gp.GP(kernel, X, mean=mean)}, [Observe(likelihoods.Gaussian(variance=noise), y, on="f")])
    return model.fit(step=1.0, max_iter=1, warn=False)


def _textbook(kernel, X, y, X_new, mean=0.0, noise=NOISE, full_cov=False):
    """Rasmussen & Williams eqs. 2.23-2.24 and 2.30, with a constant prior mean."""
    K = kernel(X) + noise * np.eye(len(y))
    cross = kernel(X, X_new)
    weights = np.linalg.solve(K, y - mean)
    cov = kernel(X_new) - cross.T @ np.linalg.solve(K, cross)
    return (mean + cross.T @ weights, cov if full_cov else np.diag(cov),
            multivariate_normal(np.full(len(y), mean), K).logpdf(y))


def test_gaussian_likelihood_is_exact_in_one_step_against_sklearn():
    X, y = _regression_data()
    kernel = gp.kernels.Matern32(lengthscale=0.8, variance=1.5)
    fit = _one_step(kernel, X, y)
    sklearn_kernel = sk_kernels.ConstantKernel(1.5) * sk_kernels.Matern(length_scale=0.8, nu=1.5)
    reference = GaussianProcessRegressor(sklearn_kernel, alpha=NOISE, optimizer=None).fit(X, y)
    mean, std = reference.predict(X, return_std=True)
    q = fit.posterior["f"]
    np.testing.assert_allclose(q.mean, mean, rtol=EXACT)
    np.testing.assert_allclose(q.var, std ** 2, rtol=1e-9)  # sklearn's variance loses ~1e-10 to cancellation
    assert fit.elbo == pytest.approx(reference.log_marginal_likelihood_value_, rel=EXACT)
    X_new = np.linspace(-1.0, 7.0, 17)[:, None]
    mean_new, std_new = reference.predict(X_new, return_std=True)
    predicted_mean, predicted_var = q.predict(X_new)
    np.testing.assert_allclose(predicted_mean, mean_new, rtol=EXACT, atol=EXACT)
    np.testing.assert_allclose(predicted_var, std_new ** 2, rtol=1e-9)


@pytest.mark.parametrize("prior_mean", [0.0, 0.8, -2.5])
def test_gaussian_likelihood_is_exact_in_one_step_with_a_constant_prior_mean(prior_mean):
    X, y = _regression_data(seed=1)
    X_new = np.linspace(-1.0, 7.0, 9)[:, None]
    kernel = gp.kernels.RBF(lengthscale=1.1, variance=0.7) + gp.kernels.Matern12(lengthscale=2.0, variance=0.3)
    fit = _one_step(kernel, X, y, mean=prior_mean)
    mean, var, log_marginal = _textbook(kernel, X, y, X, mean=prior_mean)
    q = fit.posterior["f"]
    np.testing.assert_allclose(q.mean, mean, rtol=EXACT)
    np.testing.assert_allclose(q.var, var, rtol=EXACT)
    assert fit.elbo == pytest.approx(log_marginal, rel=EXACT)
    mean_new, var_new, _ = _textbook(kernel, X, y, X_new, mean=prior_mean)
    predicted_mean, predicted_var = q.predict(X_new)
    np.testing.assert_allclose(predicted_mean, mean_new, rtol=EXACT)
    np.testing.assert_allclose(predicted_var, var_new, rtol=EXACT)
    _, cov_new, _ = _textbook(kernel, X, y, X_new, mean=prior_mean, full_cov=True)
    predicted_mean, predicted_cov = q.predict(X_new, full_cov=True)
    np.testing.assert_allclose(predicted_mean, mean_new, rtol=EXACT)
    np.testing.assert_allclose(predicted_cov, cov_new, rtol=0, atol=EXACT * np.abs(cov_new).max())


def test_missing_points_get_empty_sites_and_the_prediction_from_the_rest():
    X, y = _regression_data(seed=2)
    missing = np.array([3, 7, 8, 20])
    observed = np.setdiff1d(np.arange(len(y)), missing)
    y_nan = y.copy()
    y_nan[missing] = np.nan
    kernel = gp.kernels.Matern52(lengthscale=0.9, variance=1.2)
    fit = _one_step(kernel, X, y_nan, mean=0.5)
    assert np.all(fit.sites[0].precision[missing] == 0.0) and np.all(fit.sites[0].natural_mean[missing] == 0.0)
    assert np.all(fit.sites[0].precision[observed] > 0.0)
    mean, var, log_marginal = _textbook(kernel, X[observed], y[observed], X[missing], mean=0.5)
    q = fit.posterior["f"]
    np.testing.assert_allclose(q.mean[missing], mean, rtol=EXACT)
    np.testing.assert_allclose(q.var[missing], var, rtol=EXACT)
    assert fit.elbo == pytest.approx(log_marginal, rel=EXACT)


def test_missing_points_in_classification_equal_the_prediction_from_the_rest():
    X, y = _classification_data(n=30, seed=3)
    missing = np.array([0, 11, 12, 29])
    observed = np.setdiff1d(np.arange(len(y)), missing)
    y_nan = y.copy()
    y_nan[missing] = np.nan
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    full = _classify(kernel, X, y_nan, tol=1e-14)
    rest = _classify(kernel, X[observed], y[observed], tol=1e-14)
    assert np.all(full.sites[0].precision[missing] == 0.0)
    mean, var = rest.posterior["f"].predict(X[missing])
    # same fixed point; the two fits differ only by their convergence error (ELBO change < 1e-14 relative)
    np.testing.assert_allclose(full.posterior["f"].mean[missing], mean, rtol=1e-7)
    np.testing.assert_allclose(full.posterior["f"].var[missing], var, rtol=1e-7)
    assert full.elbo == pytest.approx(rest.elbo, rel=1e-12)


# ---------------------------------------------------------------- non-conjugate likelihoods
def _classification_data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    latent = np.sin(2.0 * X[:, 0]) + X[:, 1]
    return X, (latent + 0.5 * rng.normal(size=n) > 0).astype(float)


def _classify(kernel, X, y, **options):
    model = Model({"f": gp.GP(kernel, X)}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    return model.fit(**options)


def _dense_posterior_cov(fit, K):
    """Full posterior covariance implied by the fitted sites (the block reports only marginals)."""
    sites = fit.sites[0]
    return dense_site_posterior(K, sites.natural_mean, sites.precision)[1]


def test_classification_reaches_the_independent_optimum():
    X, y = _classification_data()
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    fit = _classify(kernel, X, y)
    assert fit.converged and fit.n_iter < 30
    assert np.all(np.diff(fit.elbo_trace) >= 0.0)
    K = kernel(X)
    mean, cov, optimum = optimal_gp_elbo(K, y, log_lik_logistic)
    assert abs(fit.elbo - optimum) < 1e-6
    q = fit.posterior["f"]
    # the ELBO of efvi's Gaussian, recomputed densely by the independent route, is the one it reports
    assert gaussian_elbo(q.mean, _dense_posterior_cov(fit, K), K, 0.0, y, log_lik_logistic) == pytest.approx(
        fit.elbo, abs=1e-9)
    # the default tol (1e-8 relative ELBO change) leaves ~1e-4 in the marginals (the ELBO is
    # quadratic near its optimum); converged tightly, the marginals match the optimum's
    tight = _classify(kernel, X, y, tol=1e-14, warn=False).posterior["f"]
    np.testing.assert_allclose(tight.mean, mean, rtol=0, atol=1e-6)
    np.testing.assert_allclose(tight.var, np.diag(cov), rtol=0, atol=1e-6)


def _robust_regression_data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0.0, 5.0, size=n))
    y = np.sin(X) + 0.1 * rng.normal(size=n)
    y[[9, 10, 11]] += np.array([3.0, 3.5, -3.0])  # neighbouring outliers on both sides
    return X, y


def test_student_t_sites_with_negative_precision_keep_the_posterior_valid():
    X, y = _robust_regression_data()
    kernel = gp.kernels.Matern52(lengthscale=1.0, variance=1.0)
    df, scale = 2.0, 0.1
    smallest_var = []
    model = Model({"f": gp.GP(kernel, X)}, [Observe(likelihoods.StudentT(df=df, scale=scale), y, on="f")])
    fit = model.fit(tol=1e-12, callback=lambda info: smallest_var.append(info.posterior["f"].var.min()) and False)
    assert fit.converged
    assert np.sum(fit.sites[0].precision < 0) >= 3  # the outliers push the posterior away
    assert fit.n_backoffs > 0  # some full steps would have left the valid set
    assert min(smallest_var) > 0.0
    K = kernel(X)
    assert np.linalg.eigvalsh(_dense_posterior_cov(fit, K)).min() > 0.0
    # the adaptive rule accepts a step only if the ELBO does not drop by more than 1e-11 relative
    assert np.all(np.diff(fit.elbo_trace) >= -1e-11 * np.abs(fit.elbo_trace[1:]))
    log_lik = log_lik_student_t(df, scale)
    mean, cov, optimum = optimal_gp_elbo(K, y, log_lik, n_points=120)
    assert abs(fit.elbo - optimum) < 1e-6
    np.testing.assert_allclose(fit.posterior["f"].mean, mean, rtol=0, atol=1e-6)
    np.testing.assert_allclose(fit.posterior["f"].var, np.diag(cov), rtol=0, atol=1e-6)


def test_invalid_prior_arguments_are_named():
    kernel = gp.kernels.RBF()
    with pytest.raises(ValueError, match=r"X must hold at least one input point; got shape \(0, 2\)"):
        gp.GP(kernel, np.zeros((0, 2)))
    with pytest.raises(ValueError, match=r"mean must be a scalar \(a constant prior mean\); got an array of shape \(5,\)"):
        gp.GP(kernel, np.zeros((5, 2)), mean=np.zeros(5))
    with pytest.raises(ValueError, match="X must be finite"):
        gp.GP(kernel, np.array([0.0, np.nan]))
    for bad in ("a", -1, 2.5, True):
        with pytest.raises(ValueError, match="hyper_max_iter must be an integer >= 1"):
            gp.GP(kernel, np.zeros((5, 2)), hyper_max_iter=bad)


def test_reprs_name_the_kernel_and_the_inputs():
    X = np.linspace(0.0, 1.0, 40)[:, None]
    assert repr(gp.GP(gp.kernels.RBF(lengthscale=0.5), X, mean=1.5)) == \
        "GP(kernel=RBF(lengthscale=0.5, variance=1.0), X=<40 inputs of dimension 1>, mean=1.5)"
    sparse = gp.SparseGP(gp.kernels.Matern52(), X, X[::8], learn_hyperparameters=True)
    assert repr(sparse) == ("SparseGP(kernel=Matern52(lengthscale=1.0, variance=1.0), X=<40 inputs of dimension 1>, "
                            "inducing=<5 inputs>, mean=0.0, learn_hyperparameters=True)")
