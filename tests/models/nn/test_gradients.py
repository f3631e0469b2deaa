"""Log-likelihood and gradient of the hand-written passes against autograd and scipy, for one and S weight samples."""

import itertools

import numpy as np
import pytest
from autograd import grad
from scipy import stats
from scipy.special import log_softmax

from .reference import ACTIVATIONS, OUTPUTS, VARIANCE, outputs, problem, total_log_lik

CASES = list(itertools.product(OUTPUTS, ACTIVATIONS))


@pytest.mark.parametrize("output, activation", CASES)
def test_log_lik_and_gradient_match_autograd(output, activation):
    net, params, X, y = problem(output, activation)
    log_lik, gradient, curv = net.log_lik_and_grads(params, X, y)
    reference = total_log_lik(output, net, X, y)
    assert curv is None
    assert np.shape(log_lik) == () and gradient.shape == (net.n_params,)
    np.testing.assert_allclose(log_lik, reference(params), rtol=1e-12)
    np.testing.assert_allclose(gradient, grad(reference)(params), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("output, activation", CASES)
def test_samples_axis_gives_each_samples_log_lik_and_gradient(output, activation):
    net, params, X, y = problem(output, activation)
    samples = params + 0.5 * np.random.default_rng(1).normal(size=(4, net.n_params))
    log_lik, gradient, _ = net.log_lik_and_grads(samples, X, y)
    reference = total_log_lik(output, net, X, y)
    assert log_lik.shape == (4,) and gradient.shape == (4, net.n_params)
    for s, sample in enumerate(samples):
        np.testing.assert_allclose(log_lik[s], reference(sample), rtol=1e-12)
        np.testing.assert_allclose(gradient[s], grad(reference)(sample), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("output", list(OUTPUTS))
def test_log_lik_equals_scipy_on_the_outputs(output):
    net, params, X, y = problem(output, "tanh")
    f = outputs(net, params, X)
    if output == "gaussian":
        expected = stats.norm.logpdf(y, f[:, 0], np.sqrt(VARIANCE)).sum()
    elif output == "bernoulli":
        expected = stats.bernoulli.logpmf(y, 1.0 / (1.0 + np.exp(-f[:, 0]))).sum()
    else:
        expected = log_softmax(f, axis=1)[np.arange(len(y)), y.astype(int)].sum()
    np.testing.assert_allclose(net.log_lik_and_grads(params, X, y)[0], expected, rtol=1e-12)


@pytest.mark.parametrize("output, activation", CASES)
def test_predict_outputs_match_the_reference_network(output, activation):
    net, params, X, _ = problem(output, activation)
    samples = np.stack([params, -params, 2.0 * params])
    np.testing.assert_allclose(net.predict_outputs(params, X), outputs(net, params, X), rtol=1e-12, atol=1e-14)
    batched = net.predict_outputs(samples, X)
    assert batched.shape == (3, len(X), net.n_outputs)
    for s, sample in enumerate(samples):
        np.testing.assert_allclose(batched[s], outputs(net, sample, X), rtol=1e-12, atol=1e-14)


def test_deeper_network_and_single_layer_gradients():
    for hidden in [(), (6, 5, 4)]:
        net, params, X, y = problem("softmax", "tanh", hidden=hidden)
        reference = total_log_lik("softmax", net, X, y)
        np.testing.assert_allclose(net.log_lik_and_grads(params, X, y)[1], grad(reference)(params),
                                   rtol=1e-10, atol=1e-12)


def test_extreme_logits_stay_finite_and_exact():
    net, params, X, y = problem("bernoulli", "relu")
    params = 60.0 * params
    log_lik, gradient, curv = net.log_lik_and_grads(params, X, y, curvature="gauss_newton")
    reference = total_log_lik("bernoulli", net, X, y)
    assert np.all(np.isfinite(gradient)) and np.all(np.isfinite(curv))
    np.testing.assert_allclose(log_lik, reference(params), rtol=1e-12)
    np.testing.assert_allclose(gradient, grad(reference)(params), rtol=1e-9, atol=1e-9)
