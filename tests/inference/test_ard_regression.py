"""ard_regression: the mean-field ARD posterior by a direct fixed-point solve, against Model.fit and ARDRegression.

Tolerances.  Every solve here stops when the relative ELBO change is at most ``tol`` (twice in a row for
ard_regression, once plus the engine's gap estimate for Model.fit).  Near the optimum the ELBO is quadratic in
the weights' mean with curvature Cov[w]^-1, so a state whose ELBO is within ``gap`` nats of the optimum has
weights within ``sd_d sqrt(2 gap)`` of it.  With linear convergence at a ratio of at most 0.9 per iteration the
gap left is at most 10 times the last change, ``gap <= 10 tol |ELBO|``; two such states are within twice that.
The precisions are far less determined by the ELBO (a Gamma posterior of shape a0 + 1/2 is wide), so they are
compared where the data pin them.  scikit-learn stops when the summed change of its coefficients is below 1e-3.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import ARDRegression

from efvi.expfam import Gamma, Gaussian
from efvi.inference import ARDPrior, ConvergenceWarning, Model
from efvi.inference.conjugate.ard_regression import ard_regression
from efvi.models import glm, likelihoods

TOL = 1e-8


def _diabetes():
    data = load_diabetes()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    return np.column_stack([np.ones(len(features)), features]), (data.target - data.target.mean()) / data.target.std()


def _model(X, y, prior=(1e-6, 1e-6), weight_precision=1e-6):
    dim = X.shape[1]
    return Model(latents={"w": Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim) / weight_precision),
                          "alpha": Gamma(np.full(dim, prior[0]), np.full(dim, prior[1])),
                          "tau": Gamma(*prior)},
                 factors=[glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w"),
                          ARDPrior(on="w", precision="alpha")])


def _weight_bound(result, tol):
    """``sd_d sqrt(2 gap)`` for two states each within ``10 tol |ELBO|`` of the optimum (module docstring)."""
    return 2 * np.sqrt(np.diag(result.posterior["w"].cov)) * np.sqrt(2 * 10 * tol * abs(result.elbo))


@pytest.fixture(scope="module")
def diabetes():
    X, y = _diabetes()
    return X, y, _model(X, y).fit(tol=TOL), ARDRegression(fit_intercept=False).fit(X, y)


@pytest.mark.parametrize("update, accelerate", [("mackay", True), ("mackay", False), ("vb", True), ("vb", False)])
def test_every_route_reaches_the_engines_mean_field_fixed_point(update, accelerate):
    """Iterated to rounding, each map's fixed point is VMP's, and the ELBO is the engine's to 1e-9."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6))
    y = X @ np.array([1.5, -2.0, 0.8, 0.0, 0.0, 0.0]) + 0.5 * rng.normal(size=200)
    prior = (1e-2, 1e-2)                         # finite precisions for the irrelevant weights: a sharp fixed point
    reference = _model(X, y, prior).fit(step=1.0, tol=0.0, max_iter=60, warn=False)
    result = ard_regression(X, y, precision_prior=prior, noise_prior=prior, update=update, accelerate=accelerate,
                            tol=1e-15, max_iter=2000, warn=False)
    for block in ("w", "alpha", "tau"):
        np.testing.assert_allclose(result.posterior[block].mean, reference.posterior[block].mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(result.posterior["w"].cov, reference.posterior["w"].cov, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(result.posterior["alpha"].shape, reference.posterior["alpha"].shape, rtol=1e-12)
    assert result.elbo == pytest.approx(reference.elbo, rel=1e-9)


def test_diabetes_agrees_with_the_default_fit_within_the_stopping_rule(diabetes):
    X, y, fit, _ = diabetes
    result = ard_regression(X, y, tol=TOL)
    assert result.converged and result.n_iter < 40
    assert abs(result.elbo - fit.elbo) <= 20 * TOL * abs(fit.elbo)
    assert np.all(np.abs(result.posterior["w"].mean - fit.posterior["w"].mean) <= _weight_bound(result, TOL))
    np.testing.assert_allclose(result.posterior["tau"].mean, fit.posterior["tau"].mean, rtol=1e-4)
    ours, theirs = result.posterior["alpha"].mean, fit.posterior["alpha"].mean
    pinned = theirs < 1e3                        # features the data use: their precisions are determined
    np.testing.assert_allclose(ours[pinned], theirs[pinned], rtol=1e-2)
    np.testing.assert_array_equal(ours > 1e4, theirs > 1e4)


def test_diabetes_agrees_with_scikit_learns_ard_regression(diabetes):
    X, y, _, sklearn = diabetes
    result = ard_regression(X, y, tol=TOL)
    # scikit-learn's weights are within its tol = 1e-3 (summed change) of its fixed point; ours within 1e-4
    np.testing.assert_allclose(result.posterior["w"].mean, sklearn.coef_, rtol=0, atol=1e-3)
    kept = sklearn.lambda_ < 1e3
    np.testing.assert_allclose(result.posterior["alpha"].mean[kept], sklearn.lambda_[kept], rtol=1e-2)
    np.testing.assert_allclose(result.posterior["tau"].mean, sklearn.alpha_, rtol=1e-3)
    # scikit-learn prunes a weight when its precision passes threshold_lambda; ours keep a Gamma posterior there
    np.testing.assert_array_equal(result.posterior["alpha"].mean > sklearn.threshold_lambda, sklearn.coef_ == 0)
    np.testing.assert_allclose(result.predict(X), sklearn.predict(X), rtol=0, atol=1e-3)


def test_mackay_needs_fewer_iterations_than_the_mean_field_sweep(diabetes):
    X, y, _, _ = diabetes
    counts = {update: ard_regression(X, y, update=update, accelerate=False).n_iter for update in ("mackay", "vb")}
    assert counts["mackay"] < counts["vb"]
    assert ard_regression(X, y).n_iter < counts["mackay"]


def test_predictive_std_adds_the_noise_to_the_weights_spread(diabetes):
    X, y, _, _ = diabetes
    result = ard_regression(X, y)
    mean, std = result.predict(X[:3], return_std=True)
    cov = result.posterior["w"].cov
    np.testing.assert_allclose(std ** 2, np.einsum("md,de,me->m", X[:3], cov, X[:3]) + 1 / result.posterior["tau"].mean)
    np.testing.assert_allclose(mean, X[:3] @ result.posterior["w"].mean)


def test_wide_problems_converge():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 20))
    result = ard_regression(X, X[:, 0] - X[:, 1] + 0.01 * rng.normal(size=8))
    assert result.converged and np.all(np.isfinite(result.posterior["w"].mean))


def test_not_converging_warns():
    X, y = _diabetes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ard_regression(X, y, max_iter=3)
    assert not result.converged and any(issubclass(w.category, ConvergenceWarning) for w in caught)


@pytest.mark.parametrize("kwargs, message", [
    ({"update": "em"}, r"update must be one of \('mackay', 'vb'\); got 'em'"),
    ({"precision_prior": (1.0, -1.0)}, r"precision_prior must be > 0"),
    ({"noise_prior": (1.0, 1.0, 1.0)}, r"noise_prior must be \(shape, rate\)"),
    ({"weight_prior_precision": 0.0}, r"weight_prior_precision must be > 0"),
    ({"tol": -1.0}, r"tol must be >= 0"),
    ({"max_iter": 0}, r"max_iter must be an integer >= 1"),
    ({"y": np.ones(3)}, r"y must have shape \(10,\) to match X; got shape \(3,\)"),
])
def test_bad_arguments_are_named(kwargs, message):
    arguments = {"X": np.ones((10, 2)), "y": np.ones(10)} | kwargs
    with pytest.raises(ValueError, match=message):
        ard_regression(arguments.pop("X"), arguments.pop("y"), **arguments)
