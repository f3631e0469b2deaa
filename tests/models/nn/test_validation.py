"""Construction, parameter layout, initialisation and named errors for bad input."""

import numpy as np
import pytest

from efvi.models import likelihoods, nn

from .reference import problem


def test_flat_layout_is_each_layers_row_major_weights_then_bias():
    net = nn.MLP([2, 3, 1], likelihood=likelihoods.Bernoulli())
    params = np.arange(net.n_params, dtype=float)
    assert net.n_params == 2 * 3 + 3 + 3 * 1 + 1
    (w1, b1), (w2, b2) = net.unflatten(params)
    np.testing.assert_array_equal(w1, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(b1, [6, 7, 8])
    np.testing.assert_array_equal(w2, [[9], [10], [11]])
    np.testing.assert_array_equal(b2, [12])
    np.testing.assert_array_equal(net.flatten(net.unflatten(params)), params)
    samples = np.stack([params, -params])
    np.testing.assert_array_equal(net.flatten(net.unflatten(samples)), samples)
    assert net.unflatten(samples)[0][0].shape == (2, 2, 3)


def test_init_params_is_deterministic_for_a_seed_and_scaled_by_fan_in():
    net = nn.MLP([400, 300, 1], activation="relu", likelihood=likelihoods.Gaussian(variance=1.0))
    first = net.init_params(3)
    np.testing.assert_array_equal(first, net.init_params(np.random.default_rng(3)))
    assert not np.array_equal(first, net.init_params(4))
    (w1, b1), (w2, b2) = net.unflatten(first)
    assert np.std(w1) == pytest.approx(np.sqrt(2 / 400), rel=0.01)       # He before ReLU
    assert np.std(w2) == pytest.approx(np.sqrt(1 / 300), rel=0.15)       # LeCun at the output
    assert not b1.any() and not b2.any()
    tanh = nn.MLP([400, 300, 1], activation="tanh", likelihood=likelihoods.Gaussian(variance=1.0))
    assert np.std(tanh.unflatten(tanh.init_params(3))[0][0]) == pytest.approx(np.sqrt(2 / 700), rel=0.01)


def test_attributes_say_what_the_network_predicts():
    regression = nn.MLP([4, 8, 1], "tanh", likelihood=likelihoods.Gaussian(variance=0.5))
    binary = nn.MLP([4, 8, 1], likelihood=likelihoods.BernoulliLogit())
    multiclass = nn.MLP([4, 8, 5], likelihood=nn.Softmax())
    assert (regression.task, regression.n_outputs, regression.n_classes) == ("regression", 1, None)
    assert (binary.task, binary.n_outputs, binary.n_classes) == ("classification", 1, 2)
    assert (multiclass.task, multiclass.n_outputs, multiclass.n_classes) == ("classification", 5, 5)
    assert repr(multiclass) == "MLP([4, 8, 5], activation='relu', likelihood=Softmax())"


@pytest.mark.parametrize("kwargs, match", [
    ({"layer_sizes": [3]}, "layer_sizes must be a sequence of at least two"),
    ({"layer_sizes": [3, 0, 1]}, "layer_sizes must be a sequence"),
    ({"layer_sizes": [3, 2.5, 1]}, "layer_sizes must be a sequence"),
    ({"activation": "sigmoid"}, "activation must be one of"),
    ({"likelihood": likelihoods.Poisson()}, "likelihood must be likelihoods.Gaussian"),
    ({"likelihood": likelihoods.Bernoulli(link="probit")}, "logit link.*'probit'"),
    ({"likelihood": likelihoods.Gaussian(precision="tau")}, "known variance.*'tau'"),
    ({"layer_sizes": [3, 4, 2], "likelihood": likelihoods.Bernoulli()}, "must end in 1 output unit.*got 2"),
    ({"layer_sizes": [3, 4, 1], "likelihood": nn.Softmax()}, "at least 2 output units.*got 1"),
])
def test_bad_construction_is_a_named_error(kwargs, match):
    arguments = {"layer_sizes": [3, 4, 1], "activation": "relu", "likelihood": likelihoods.Bernoulli()} | kwargs
    with pytest.raises(ValueError, match=match):
        nn.MLP(arguments.pop("layer_sizes"), arguments.pop("activation"), **arguments)


def test_likelihood_is_required():
    with pytest.raises(TypeError, match="likelihood"):
        nn.MLP([3, 1])


@pytest.mark.parametrize("output, X, y, match", [
    ("bernoulli", np.ones((9, 2)), None, r"X must have shape \(B, 3\).*got shape \(9, 2\)"),
    ("bernoulli", np.ones(9), None, r"X must have shape \(B, 3\)"),
    ("bernoulli", np.full((9, 3), np.nan), None, "X must be finite"),
    ("bernoulli", np.ones((9, 3)) * 1j, None, "X must be real"),
    ("bernoulli", None, np.zeros(8), r"y must have shape \(9,\).*got shape \(8,\)"),
    ("bernoulli", None, np.zeros((9, 1)), r"y must have shape \(9,\)"),
    ("bernoulli", None, np.full(9, 2.0), "y must contain labels 0 or 1.*2.0 at index 0"),
    ("softmax", None, np.full(9, 3.0), r"y must contain integer labels 0, ..., K-1 \(K = 3\).*3.0"),
    ("softmax", None, np.full(9, 0.5), "y must contain integer labels"),
    ("softmax", None, np.full(9, -1.0), "y must contain integer labels"),
    ("gaussian", None, np.full(9, np.inf), "y must be finite"),
])
def test_bad_batches_are_named_errors(output, X, y, match):
    net, params, X0, y0 = problem(output, "relu")
    X = X0 if X is None else X
    y = y0 if y is None else y
    with pytest.raises(ValueError, match=match):
        net.validate(X, y)
    with pytest.raises(ValueError, match=match):
        net.log_lik_and_grads(params, X, y)


def test_validate_returns_float_arrays():
    net, _, X, y = problem("softmax", "relu")
    X_checked, y_checked = net.validate(X.tolist(), y.astype(int))
    assert X_checked.dtype == y_checked.dtype == np.float64
    np.testing.assert_array_equal(y_checked, y)


def test_bad_params_and_curvature_are_named_errors():
    net, params, X, y = problem("gaussian", "tanh")
    with pytest.raises(ValueError, match=rf"params must have shape \({net.n_params},\) or \(S, {net.n_params}\)"):
        net.log_lik_and_grads(params[:-1], X, y)
    with pytest.raises(ValueError, match="params must be finite"):
        net.predict_outputs(np.full(net.n_params, np.nan), X)
    with pytest.raises(ValueError, match="params_samples must have shape"):
        net.predictive(np.ones((2, 3, net.n_params)), X)
    with pytest.raises(ValueError, match="curvature must be one of"):
        net.log_lik_and_grads(params, X, y, curvature="fisher")
    for curvature in ("hessian", "gauss_newton_full"):
        with pytest.raises(ValueError, match=f"curvature='{curvature}' takes params of shape"):
            net.log_lik_and_grads(np.stack([params, params]), X, y, curvature=curvature)
