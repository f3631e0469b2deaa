"""GP kernel hyperparameters: the gradient of log Z(theta), and the learned values.

References: central finite differences of the value; for Gaussian regression,
the maximiser of the exact log marginal likelihood (scikit-learn's, with the
same kernel and fixed noise, optimised tightly by scipy L-BFGS); for
classification, refits with fixed hyperparameters around the learned ones.
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process import kernels as sk_kernels

from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods

from .kernels._helpers import central_jacobian

NOISE = 0.04


def _message(rng, n, negative):
    precision = rng.gamma(2.0, 1.0, size=n)
    natural_mean = rng.normal(size=n) * precision + rng.normal(size=n)
    precision[:4] = 0.0  # missing points
    natural_mean[:4] = 0.0
    if negative:
        precision[4:7] = -0.2  # small enough to keep the posterior valid (checked by the solver)
    return natural_mean, precision


@pytest.mark.parametrize("negative", [False, True], ids=["nonnegative", "negative"])
@pytest.mark.parametrize("kernel", [
    gp.kernels.Matern32(lengthscale=np.array([0.7, 1.6]), variance=1.3) + gp.kernels.White(variance=0.05),
    gp.kernels.RBF(lengthscale=0.9, variance=0.8) * gp.kernels.Linear(variance=0.5) + gp.kernels.Matern12(),
], ids=["ard_matern_plus_white", "rbf_times_linear_plus_matern12"])
def test_log_normaliser_gradient_matches_finite_differences(kernel, negative):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2.0, 2.0, size=(25, 2))
    block = gp.GP(kernel, X, mean=0.3)
    message = _message(rng, 25, negative)
    start = kernel.log_params + 0.1 * rng.normal(size=kernel.n_params)
    value, gradient = block.log_normaliser(start, message)
    numeric = central_jacobian(lambda theta: block.log_normaliser(theta, message)[0], start)[0]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6 * np.abs(numeric).max())
    assert np.isfinite(value)


def _regression_data(n=30, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 6.0, size=(n, 1))
    return X, np.sin(X[:, 0]) + np.sqrt(NOISE) * rng.normal(size=n)


def test_learned_hyperparameters_of_gaussian_regression_maximise_the_marginal_likelihood():
    X, y = _regression_data()
    block = gp.GP(gp.kernels.Matern52(lengthscale=0.5, variance=0.5), X, learn_hyperparameters=True)
    fit = Model({"f": block}, [Observe(likelihoods.Gaussian(variance=NOISE), y, on="f")]).fit(tol=1e-12)
    assert fit.converged
    assert np.array_equal(block.kernel.log_params, np.log([0.5, 0.5]))       # the model's block is unchanged
    lengthscale, variance = np.exp(fit.priors["f"].kernel.log_params)
    assert fit.hyperparameters["f"] == {"lengthscale": lengthscale, "variance": variance}

    sklearn_kernel = (sk_kernels.ConstantKernel(0.5, (1e-5, 1e5))
                      * sk_kernels.Matern(length_scale=0.5, nu=2.5, length_scale_bounds=(1e-5, 1e5)))
    reference = GaussianProcessRegressor(sklearn_kernel, alpha=NOISE, optimizer=None).fit(X, y)

    def negative_log_marginal(theta):
        value, gradient = reference.log_marginal_likelihood(theta, eval_gradient=True)
        return -value, -gradient

    best = minimize(negative_log_marginal, np.log([0.5, 0.5]), jac=True, method="L-BFGS-B",
                    options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 1000})
    ref_variance, ref_lengthscale = np.exp(best.x)
    np.testing.assert_allclose([lengthscale, variance], [ref_lengthscale, ref_variance], rtol=1e-4)
    # the ELBO of the Gaussian likelihood is the exact log marginal likelihood
    assert fit.elbo == pytest.approx(-best.fun, rel=1e-10, abs=1e-9)


def _classification_data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    latent = np.sin(2.0 * X[:, 0]) + X[:, 1]
    return X, (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-2.0 * latent))).astype(float)


def _classification_fit(kernel, X, y, learn):
    block = gp.GP(kernel, X, learn_hyperparameters=learn)
    fit = Model({"f": block}, [Observe(likelihoods.BernoulliLogit(), y, on="f")]).fit(tol=1e-12, max_iter=300)
    return fit, fit.priors.get("f", block)


def test_learning_hyperparameters_improves_the_classification_elbo_to_a_stationary_point():
    X, y = _classification_data()
    initial = gp.kernels.Matern32(lengthscale=3.0, variance=0.3)
    fixed, _ = _classification_fit(initial, X, y, learn=False)
    learned, block = _classification_fit(initial, X, y, learn=True)
    assert fixed.converged and learned.converged
    assert learned.elbo > fixed.elbo + 1.0
    # F(theta) = max_q ELBO(q, theta) is maximal at the learned theta: refit with fixed
    # hyperparameters nudged along each axis (h = 0.05 on the log scale)
    theta = block.kernel.log_params
    for i in range(theta.size):
        for sign in (-1.0, 1.0):
            nudged = theta.copy()
            nudged[i] += sign * 0.05
            other, _ = _classification_fit(block.kernel.with_log_params(nudged), X, y, learn=False)
            assert other.elbo < learned.elbo
    # and the gradient of log Z at the final sites vanishes
    _, gradient = block.log_normaliser(theta, (learned.sites[0].natural_mean, learned.sites[0].precision))
    assert np.abs(gradient).max() < 1e-4


def test_an_unconverged_hyperparameter_search_says_why():
    """The optimiser's own stop (here its iteration cap) is reported, not a max_iter it did not reach."""
    from efvi.inference.warnings import ConvergenceWarning

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(-3.0, 3.0, 30))
    y = np.sin(X) + 0.1 * rng.normal(size=30)
    prior = gp.GP(gp.kernels.Matern32(lengthscale=0.2, variance=3.0), X, learn_hyperparameters=True,
                  hyper_max_iter=1)
    model = Model({"f": prior}, [Observe(likelihoods.Gaussian(variance=0.01), y, on="f")])
    with pytest.warns(ConvergenceWarning, match="hyperparameter optimiser .* stopped without converging"):
        fit = model.fit(max_iter=500)
    assert not fit.converged
