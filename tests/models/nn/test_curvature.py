"""Curvatures against explicit references: per-example loops, autograd Jacobians and Hessians, finite differences."""

import itertools

import numpy as np
import pytest
from autograd import grad, hessian, jacobian

from efvi.models import likelihoods, nn

from .reference import ACTIVATIONS, OUTPUTS, VARIANCE, output_hessian, outputs, pointwise_log_lik, problem, \
    total_log_lik

CASES = list(itertools.product(OUTPUTS, ACTIVATIONS))


def _per_example_squared_gradients(output, net, params, X, y):
    """sum_n g_n**2 by an explicit loop over examples, each gradient by autograd."""
    total = np.zeros(net.n_params)
    for n in range(len(y)):
        total += grad(total_log_lik(output, net, X[n:n + 1], y[n:n + 1]))(params) ** 2
    return total


def _gauss_newton(output, net, params, X):
    """sum_n J_n^T Lambda_n J_n with J_n from autograd's Jacobian of the outputs."""
    jac = jacobian(lambda w: outputs(net, w, X))(params)          # (B, K, P)
    lam = output_hessian(output, outputs(net, params, X))          # (B, K, K)
    return np.einsum("bkp,bkl,blq->pq", jac, lam, jac)


@pytest.mark.parametrize("output, activation", CASES)
def test_squared_gradients_equal_a_per_example_loop(output, activation):
    net, params, X, y = problem(output, activation)
    samples = np.stack([params, params + 0.3 * np.random.default_rng(2).normal(size=net.n_params)])
    _, _, single = net.log_lik_and_grads(params, X, y, curvature="squared_gradients")
    _, _, batched = net.log_lik_and_grads(samples, X, y, curvature="squared_gradients")
    assert single.shape == (net.n_params,) and batched.shape == (2, net.n_params)
    np.testing.assert_allclose(single, _per_example_squared_gradients(output, net, params, X, y),
                               rtol=1e-10, atol=1e-13)
    for s, sample in enumerate(samples):
        np.testing.assert_allclose(batched[s], _per_example_squared_gradients(output, net, sample, X, y),
                                   rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("output, activation", CASES)
def test_gauss_newton_diagonal_and_full_equal_autograd_jacobians(output, activation):
    net, params, X, y = problem(output, activation)
    reference = _gauss_newton(output, net, params, X)
    _, _, diagonal = net.log_lik_and_grads(params, X, y, curvature="gauss_newton")
    _, _, full = net.log_lik_and_grads(params, X, y, curvature="gauss_newton_full")
    np.testing.assert_allclose(diagonal, np.diag(reference), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(full, reference, rtol=1e-10, atol=1e-13)
    samples = np.stack([params, 0.5 * params])
    _, _, batched = net.log_lik_and_grads(samples, X, y, curvature="gauss_newton")
    np.testing.assert_allclose(batched[1], np.diag(_gauss_newton(output, net, 0.5 * params, X)),
                               rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("output, activation", CASES)
def test_exact_hessian_equals_autograd_and_differences_of_the_gradient(output, activation):
    net, params, X, y = problem(output, activation)
    _, _, hess = net.log_lik_and_grads(params, X, y, curvature="hessian")
    np.testing.assert_allclose(hess, hessian(total_log_lik(output, net, X, y))(params), rtol=1e-9, atol=1e-11)
    step, columns = 1e-6, [0, net.n_params // 2, net.n_params - 1]
    for column in columns:     # the hand-written gradient's central differences: independent of autograd
        shift = np.zeros(net.n_params)
        shift[column] = step
        difference = (net.log_lik_and_grads(params + shift, X, y)[1]
                      - net.log_lik_and_grads(params - shift, X, y)[1]) / (2 * step)
        np.testing.assert_allclose(hess[:, column], difference, rtol=1e-5, atol=1e-6)


def test_linear_gaussian_model_has_closed_form_curvatures():
    """No hidden layer, Gaussian output: Hessian = -X1^T X1 / variance, GGN its negative, squared gradients exact."""
    net = nn.MLP([3, 1], likelihood=likelihoods.Gaussian(variance=VARIANCE))
    rng = np.random.default_rng(3)
    X, y, params = rng.normal(size=(8, 3)), rng.normal(size=8), rng.normal(size=4)
    design = np.column_stack([X, np.ones(8)])                     # W rows, then the bias
    residual = y - design @ params
    _, gradient, hess = net.log_lik_and_grads(params, X, y, curvature="hessian")
    np.testing.assert_allclose(gradient, design.T @ residual / VARIANCE, rtol=1e-12)
    np.testing.assert_allclose(hess, -design.T @ design / VARIANCE, rtol=1e-12)
    np.testing.assert_allclose(net.log_lik_and_grads(params, X, y, "gauss_newton_full")[2], -hess, rtol=1e-12)
    np.testing.assert_allclose(net.log_lik_and_grads(params, X, y, "squared_gradients")[2],
                               (design ** 2).T @ (residual / VARIANCE) ** 2, rtol=1e-12)


def test_softmax_gauss_newton_diagonal_sums_each_examples_output_covariance():
    """One softmax layer: GGN diagonal of W[i, k] is sum_n x_ni^2 p_nk (1 - p_nk)."""
    net = nn.MLP([2, 4], likelihood=nn.Softmax())
    rng = np.random.default_rng(4)
    X, y, params = rng.normal(size=(6, 2)), rng.integers(0, 4, 6).astype(float), rng.normal(size=net.n_params)
    f = outputs(net, params, X)
    prob = np.exp(f) / np.exp(f).sum(axis=1, keepdims=True)
    diagonal = net.log_lik_and_grads(params, X, y, "gauss_newton")[2]
    weights, bias = net.unflatten(diagonal)[0]
    np.testing.assert_allclose(weights, (X ** 2).T @ (prob * (1 - prob)), rtol=1e-12)
    np.testing.assert_allclose(bias, (prob * (1 - prob)).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(net.log_lik_and_grads(params, X, y)[0], pointwise_log_lik("softmax", f, y).sum())
