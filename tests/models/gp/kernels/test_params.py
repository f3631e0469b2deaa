"""Hyperparameters on the log scale, immutability, algebra, validation, and autograd gradients."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from efvi.models.gp import kernels
from efvi.models.gp.kernels import _distance

from ._helpers import FD_RTOL, all_kernels, central_jacobian


def test_param_names_and_order():
    assert kernels.RBF(lengthscale=2.0).param_names == ("lengthscale", "variance")
    assert kernels.Matern32(lengthscale=[1.0, 2.0]).param_names == ("lengthscale[0]", "lengthscale[1]", "variance")
    assert kernels.Periodic().param_names == ("period", "lengthscale", "variance")
    assert kernels.Linear().param_names == ("variance",)
    assert kernels.Linear(offset=1.0).param_names == ("variance", "offset")
    k = kernels.Matern12(lengthscale=3.0, variance=0.5) + kernels.White(variance=0.1)
    assert k.param_names == ("k1.lengthscale", "k1.variance", "k2.variance")
    np.testing.assert_allclose(k.log_params, np.log([3.0, 0.5, 0.1]), rtol=0, atol=0)


def test_sums_and_products_flatten_and_nest():
    a, b, c = kernels.RBF(), kernels.Matern32(), kernels.White()
    assert len((a + b + c).parts) == 3 and len((a * b * c).parts) == 3
    nested = (a + b) * c
    assert nested.param_names[:2] == ("k1.k1.lengthscale", "k1.k1.variance")
    scaled = 2.0 * a
    assert isinstance(scaled, kernels.Product) and scaled.parts[0].variance == 2.0
    assert isinstance(a + 1.5, kernels.Sum) and isinstance(0.5 + a, kernels.Sum)


@pytest.mark.parametrize("name", list(all_kernels(1)))
def test_with_log_params_round_trip(name):
    kernel = all_kernels(2)[name]
    theta = kernel.log_params
    assert theta.shape == (kernel.n_params,) == (len(kernel.param_names),)
    shifted = kernel.with_log_params(theta + 0.3)
    assert type(shifted) is type(kernel) and repr(shifted) != repr(kernel)
    np.testing.assert_allclose(shifted.log_params, theta + 0.3, rtol=1e-14, atol=1e-14)
    X = np.random.default_rng(0).normal(size=(9, 2))
    np.testing.assert_allclose(kernel.with_log_params(theta)(X), kernel(X), rtol=1e-14, atol=1e-15)


def test_kernels_are_immutable():
    k = kernels.Matern52(lengthscale=[1.0, 2.0])
    with pytest.raises(AttributeError, match="immutable"):
        k.variance = 2.0
    with pytest.raises(ValueError):
        k.lengthscale[0] = 5.0


@pytest.mark.parametrize("name", list(all_kernels(1)))
def test_matrix_fn_agrees_with_fast_path(name):
    kernel = all_kernels(2)[name]
    rng = np.random.default_rng(1)
    X, X2 = rng.normal(size=(10, 2)), rng.normal(size=(4, 2))
    np.testing.assert_allclose(kernel.matrix_fn(X)(kernel.log_params), kernel(X), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(kernel.matrix_fn(X, X2)(kernel.log_params), kernel(X, X2), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("dim", [2, _distance._NUMBA_MAX_DIM + 2])
@pytest.mark.parametrize("name", list(all_kernels(1)))
def test_matrix_fn_gradient_matches_finite_differences(name, dim):
    kernel = all_kernels(dim)[name]
    rng = np.random.default_rng(2)
    X, X2 = rng.normal(size=(8, dim)), rng.normal(size=(5, dim))
    X[3] = X[1]  # a repeated point: zero distance inside the square root
    for f in (kernel.matrix_fn(X), kernel.matrix_fn(X, X2)):
        theta = kernel.log_params
        exact = autograd.jacobian(f)(theta)
        assert np.all(np.isfinite(exact))
        numeric = central_jacobian(f, theta).reshape(exact.shape)
        np.testing.assert_allclose(exact, numeric, rtol=0, atol=FD_RTOL * np.abs(exact).max())


def test_gradient_of_a_scalar_objective():
    # the lead's use: d/dtheta of a log marginal likelihood through K(theta)
    kernel = kernels.Matern32(lengthscale=[0.7, 1.5], variance=1.3) + kernels.White(variance=0.2)
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(15, 2)), rng.normal(size=15)
    matrix = kernel.matrix_fn(X)

    def log_marginal(theta):
        chol = anp.linalg.cholesky(matrix(theta))
        alpha = anp.linalg.solve(chol, y)
        return -0.5 * anp.dot(alpha, alpha) - anp.sum(anp.log(anp.diag(chol)))

    exact = autograd.grad(log_marginal)(kernel.log_params)
    numeric = central_jacobian(log_marginal, kernel.log_params)[0]
    np.testing.assert_allclose(exact, numeric, rtol=0, atol=FD_RTOL * np.abs(exact).max())


@pytest.mark.parametrize(
    "build, match",
    [
        (lambda: kernels.RBF(lengthscale=-1.0), "lengthscale must be > 0"),
        (lambda: kernels.Matern32(lengthscale=[1.0, 0.0]), "lengthscale must be > 0"),
        (lambda: kernels.Matern12(lengthscale=np.nan), "lengthscale must be finite"),
        (lambda: kernels.Matern52(lengthscale=np.ones((2, 2))), "lengthscale must be a scalar or a non-empty 1-D"),
        (lambda: kernels.RBF(variance=0.0), "variance must be > 0"),
        (lambda: kernels.White(variance=np.inf), "variance must be finite"),
        (lambda: kernels.Periodic(period=-2.0), "period must be > 0"),
        (lambda: kernels.Periodic(lengthscale=[1.0, 2.0]), "lengthscale must be a scalar"),
        (lambda: kernels.Periodic(n_harmonics=-1), "n_harmonics must be None or an integer >= 1"),
        (lambda: kernels.Linear(offset=-0.1), "offset must be > 0"),
        (lambda: kernels.Constant(variance="a"), "variance must be a numeric array"),
        (lambda: kernels.RBF(lengthscale=[1.0, 2.0]) + kernels.RBF(lengthscale=[1.0, 2.0, 3.0]), "input dimension"),
        (lambda: -1.0 * kernels.RBF(), "variance must be > 0"),
    ],
)
def test_invalid_parameters_raise_named_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_invalid_inputs_raise_named_errors():
    k = kernels.Matern32(lengthscale=[1.0, 2.0])
    with pytest.raises(ValueError, match="X must have 2 feature column"):
        k(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="X2 must have 2 feature column"):
        k(np.zeros((4, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="X must be finite"):
        kernels.RBF()(np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match=r"X must have shape \(N,\) or \(N, D\)"):
        kernels.RBF()(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="X2 must be finite"):
        kernels.RBF().matrix_fn(np.zeros(3), np.array([np.inf]))
    with pytest.raises(ValueError, match=r"log_params must have shape \(3,\); got shape \(2,\)"):
        k.with_log_params(np.zeros(2))
    with pytest.raises(ValueError, match="log_params must be finite"):
        kernels.RBF().with_log_params([0.0, np.nan])
    with pytest.raises(ValueError, match="variance must be finite"):
        kernels.RBF().with_log_params([0.0, 1e4])
    with pytest.raises(ValueError, match=r"log_params must have shape \(2,\)"):
        kernels.RBF().matrix_fn(np.zeros(3))(np.zeros(3))
