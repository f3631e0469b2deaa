"""Predictive distributions averaged over weight samples, against a direct computation from the reference outputs."""

import numpy as np
from scipy.special import expit, softmax

from .reference import VARIANCE, outputs, problem


def _samples(net, params, n_samples=5, seed=6):
    return params + 0.4 * np.random.default_rng(seed).normal(size=(n_samples, net.n_params))


def test_regression_predictive_is_the_mixture_of_the_samples_gaussians():
    net, params, X, _ = problem("gaussian", "relu")
    samples = _samples(net, params)
    means = np.array([outputs(net, sample, X)[:, 0] for sample in samples])        # (S, B)
    mean, var = net.predictive(samples, X)
    np.testing.assert_allclose(mean, means.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, np.mean(VARIANCE + means ** 2, axis=0) - means.mean(axis=0) ** 2, rtol=1e-10)
    one_mean, one_var = net.predictive(params, X)
    np.testing.assert_allclose(one_mean, outputs(net, params, X)[:, 0], rtol=1e-12)
    np.testing.assert_allclose(one_var, np.full(len(X), VARIANCE), rtol=1e-12)


def test_regression_predictive_matches_sampling_the_mixture():
    net, params, X, _ = problem("gaussian", "tanh")
    samples = _samples(net, params, n_samples=3)
    mean, var = net.predictive(samples, X)
    rng = np.random.default_rng(7)
    which = rng.integers(0, 3, size=200_000)
    draws = np.array([outputs(net, sample, X)[:, 0] for sample in samples])[which] \
        + np.sqrt(VARIANCE) * rng.standard_normal((200_000, len(X)))
    np.testing.assert_allclose(mean, draws.mean(axis=0), atol=0.01)
    np.testing.assert_allclose(var, draws.var(axis=0), rtol=0.02)


def test_bernoulli_predictive_averages_sigmoid_probabilities_in_two_columns():
    net, params, X, _ = problem("bernoulli", "tanh")
    samples = _samples(net, params)
    prob = np.mean([expit(outputs(net, sample, X)[:, 0]) for sample in samples], axis=0)
    np.testing.assert_allclose(net.predictive(samples, X), np.column_stack([1 - prob, prob]), rtol=1e-12)


def test_softmax_predictive_averages_class_probabilities():
    net, params, X, _ = problem("softmax", "relu")
    samples = _samples(net, params)
    expected = np.mean([softmax(outputs(net, sample, X), axis=1) for sample in samples], axis=0)
    predicted = net.predictive(samples, X)
    np.testing.assert_allclose(predicted, expected, rtol=1e-12)
    np.testing.assert_allclose(predicted.sum(axis=1), 1.0, rtol=1e-14)
