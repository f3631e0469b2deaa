"""scikit-learn-style GPRegressor and GPClassifier: results equal the Model API's and independent references."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk_kernels

from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods

NOISE = 0.09


def _regression_data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 6.0, size=(n, 1))
    return X, np.sin(X[:, 0]) + np.sqrt(NOISE) * rng.normal(size=n)


def _classification_data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    latent = np.sin(2.0 * X[:, 0]) + X[:, 1]
    return X, (rng.uniform(size=n) < expit(2.0 * latent)).astype(float)


def test_regressor_predictions_equal_sklearn_with_fixed_hyperparameters():
    X, y = _regression_data()
    X_new = np.linspace(-1.0, 7.0, 15)[:, None]
    kernel = gp.kernels.Matern52(lengthscale=0.8, variance=1.5)
    model = gp.GPRegressor(kernel, noise_variance=NOISE, learn_hyperparameters=False).fit(X, y)
    reference = GaussianProcessRegressor(
        sk_kernels.ConstantKernel(1.5) * sk_kernels.Matern(length_scale=0.8, nu=2.5), alpha=NOISE, optimizer=None,
    ).fit(X, y)
    mean, latent_std = reference.predict(X_new, return_std=True)
    np.testing.assert_allclose(model.predict(X_new), mean, rtol=1e-10, atol=1e-12)
    predicted_mean, predicted_std = model.predict(X_new, return_std=True)
    np.testing.assert_allclose(predicted_mean, mean, rtol=1e-10, atol=1e-12)
    # the estimator's std is of y (latent variance plus the noise); sklearn's is of f
    np.testing.assert_allclose(predicted_std ** 2, latent_std ** 2 + NOISE, rtol=1e-9)
    assert model.converged_ and model.n_iter_ >= 1
    assert model.elbo_ == pytest.approx(reference.log_marginal_likelihood_value_, rel=1e-10)
    assert model.lower_bounds_[-1] == model.elbo_


def test_regressor_learns_hyperparameters_without_changing_its_arguments():
    X, y = _regression_data(seed=1)
    kernel = gp.kernels.Matern52(lengthscale=0.5, variance=0.5)
    model = gp.GPRegressor(kernel, noise_variance=NOISE).fit(X, y)
    assert model.kernel is kernel and np.allclose(kernel.log_params, np.log([0.5, 0.5]))
    assert not np.allclose(model.kernel_.log_params, kernel.log_params)
    assert model.noise_variance == NOISE and model.noise_variance_ != NOISE
    fixed = gp.GPRegressor(kernel, noise_variance=NOISE, learn_hyperparameters=False).fit(X, y)
    assert model.elbo_ > fixed.elbo_
    # predictions use the learned kernel and noise: the same as a fixed-hyperparameter fit with them
    refit = gp.GPRegressor(model.kernel_, noise_variance=model.noise_variance_,
                           learn_hyperparameters=False).fit(X, y)
    assert refit.elbo_ == pytest.approx(model.elbo_, rel=1e-9)
    X_new = np.linspace(0.0, 6.0, 7)[:, None]
    np.testing.assert_allclose(model.predict(X_new), refit.predict(X_new), rtol=1e-10, atol=1e-12)


def _model_api_fit(kernel, X, y, likelihood):
    return Model({"f": gp.GP(kernel, X)}, [Observe(likelihood, y, on="f")]).fit(max_iter=200, tol=1e-9)


def test_classifier_equals_the_model_api_and_its_probabilities_are_the_predictive_integral():
    X, y = _classification_data()
    X_new = np.random.default_rng(5).normal(size=(10, 2))
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    model = gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, y)
    fit = _model_api_fit(kernel, X, y, likelihoods.BernoulliLogit())
    assert model.n_iter_ == fit.n_iter and model.converged_ == fit.converged and model.elbo_ == fit.elbo
    mean, var = fit.posterior["f"].predict(X_new)
    latent_mean, latent_var = model.predict_latent(X_new)
    np.testing.assert_array_equal(latent_mean, mean)
    np.testing.assert_array_equal(latent_var, var)
    proba = model.predict_proba(X_new)
    assert proba.shape == (10, 2)
    expected = [integrate.quad(lambda f, m=m, s=s: expit(f) * norm.pdf(f, m, s), m - 12 * s, m + 12 * s,
                               epsabs=1e-13, epsrel=1e-12)[0] for m, s in zip(mean, np.sqrt(var))]
    np.testing.assert_allclose(proba[:, 1], expected, rtol=1e-9)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-15)
    np.testing.assert_array_equal(model.predict(X_new), (proba[:, 1] > 0.5).astype(int))
    # on its own training data the classifier beats the majority class
    assert np.mean(model.predict(X) == y) > max(np.mean(y), 1 - np.mean(y))


def test_probit_classifier_probabilities_have_their_closed_form():
    X, y = _classification_data(seed=1)
    kernel = gp.kernels.RBF(lengthscale=1.2, variance=1.5)
    model = gp.GPClassifier(kernel, link="probit", learn_hyperparameters=False).fit(X, y)
    fit = _model_api_fit(kernel, X, y, likelihoods.BernoulliProbit())
    assert model.elbo_ == fit.elbo
    X_new = np.random.default_rng(6).normal(size=(8, 2))
    mean, var = fit.posterior["f"].predict(X_new)
    np.testing.assert_allclose(model.predict_proba(X_new)[:, 1], norm.cdf(mean / np.sqrt(1.0 + var)), rtol=1e-12)


def test_classifier_with_hyperparameter_learning_improves_the_elbo():
    X, y = _classification_data()
    kernel = gp.kernels.Matern32(lengthscale=3.0, variance=0.3)
    learned = gp.GPClassifier(kernel, max_iter=300).fit(X, y)
    fixed = gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, y)
    assert learned.converged_ and learned.elbo_ > fixed.elbo_
    assert learned.kernel is kernel and not np.allclose(learned.kernel_.log_params, kernel.log_params)


@pytest.mark.parametrize("estimator, method", [
    (gp.GPRegressor(gp.kernels.RBF()), "predict"),
    (gp.GPRegressor(gp.kernels.RBF()), "predict_latent"),
    (gp.GPClassifier(gp.kernels.RBF()), "predict"),
    (gp.GPClassifier(gp.kernels.RBF()), "predict_latent"),
    (gp.GPClassifier(gp.kernels.RBF()), "predict_proba"),
], ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_unfitted_estimators_raise_a_clear_error(estimator, method):
    with pytest.raises(ValueError, match=f"{type(estimator).__name__} is not fitted yet"):
        getattr(estimator, method)(np.zeros((3, 1)))


def test_invalid_arguments_are_named():
    X, y = _classification_data()
    with pytest.raises(ValueError, match="link"):
        gp.GPClassifier(gp.kernels.RBF(), link="cauchit").fit(X, y)
    with pytest.raises(ValueError, match="y must hold exactly two classes"):
        gp.GPClassifier(gp.kernels.RBF(), learn_hyperparameters=False).fit(X, y + np.arange(len(y)))
    with pytest.raises(ValueError, match=r"inconsistent numbers of samples: \[40, 39\]"):
        gp.GPRegressor(gp.kernels.RBF()).fit(X, y[:-1])
    with pytest.raises(ValueError, match="kernel"):
        gp.GPRegressor("rbf").fit(X, y)
    with pytest.raises(ValueError, match=r"0 sample\(s\) \(shape=\(0, 2\)\)"):
        gp.GPRegressor(gp.kernels.RBF()).fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match="y must hold a label for every point; got None at index 0"):
        gp.GPClassifier(gp.kernels.RBF(), learn_hyperparameters=False).fit(
            X, np.where(np.arange(len(y)) == 0, None, np.where(y == 1, "a", "b")))
    with pytest.raises(ValueError, match="y must hold labels of one sortable type"):
        gp.GPClassifier(gp.kernels.RBF(), learn_hyperparameters=False).fit(
            X, np.array(["a", 1] * (len(y) // 2), dtype=object))
    fitted = gp.GPRegressor(gp.kernels.RBF(), learn_hyperparameters=False).fit(X, y)
    with pytest.raises(ValueError, match=rf"X has 3 features, but GPRegressor is expecting {X.shape[1]} features"):
        fitted.predict(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        fitted.predict(np.full((1, X.shape[1]), np.nan))
    with pytest.raises(ValueError, match="X_new must have"):
        fitted.posterior_.predict(np.zeros((4, 3)))


def test_classifier_takes_any_two_labels():
    X, y = _classification_data()
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    coded = gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, y)
    named = gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, np.where(y == 1, "yes", "no"))
    np.testing.assert_array_equal(named.classes_, ["no", "yes"])
    assert named.elbo_ == coded.elbo_
    np.testing.assert_array_equal(named.predict(X), np.where(coded.predict(X) == 1, "yes", "no"))
    with pytest.raises(ValueError, match="y must hold exactly two classes.*got 1"):
        gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, np.zeros(len(y)))
