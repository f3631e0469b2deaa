"""An independent reference for the MLP: a plain autograd.numpy network on the flat vector, and the problems tested.

Written apart from ``efvi.models.nn``: the parameters are read off the flat
vector one layer at a time, and each log-likelihood is the textbook formula
(``autograd.scipy.stats.norm``, ``log sigmoid``, ``logsumexp``).
"""

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import logsumexp
from autograd.scipy.stats import norm

from efvi.models import likelihoods, nn

VARIANCE = 0.7
N_CLASSES = 3
OUTPUTS = {
    "gaussian": (lambda: likelihoods.Gaussian(variance=VARIANCE), 1),
    "bernoulli": (lambda: likelihoods.Bernoulli(), 1),
    "softmax": (lambda: nn.Softmax(), N_CLASSES),
}
ACTIVATIONS = ("relu", "tanh")


def problem(output, activation, hidden=(5, 4), n_in=3, batch=9, seed=0):
    """``(net, params, X, y)``: a small network, a random parameter vector (not the init) and a batch."""
    make, n_out = OUTPUTS[output]
    net = nn.MLP([n_in, *hidden, n_out], activation, likelihood=make())
    rng = np.random.default_rng(seed)
    params = rng.normal(scale=0.6, size=net.n_params)
    X = rng.normal(size=(batch, n_in))
    if output == "gaussian":
        y = rng.normal(size=batch)
    else:
        y = rng.integers(0, max(n_out, 2), size=batch).astype(float)
    return net, params, X, y


def outputs(net, params, X):
    """The network's outputs f, shape (B, K), by autograd.numpy."""
    hidden, start = X, 0
    for layer, (n_in, n_out) in enumerate(zip(net.layer_sizes[:-1], net.layer_sizes[1:])):
        weights = anp.reshape(params[start:start + n_in * n_out], (n_in, n_out))
        bias = params[start + n_in * n_out:start + n_in * n_out + n_out]
        start += n_in * n_out + n_out
        hidden = anp.dot(hidden, weights) + bias
        if layer < len(net.layer_sizes) - 2:
            hidden = anp.maximum(hidden, 0.0) if net.activation == "relu" else anp.tanh(hidden)
    assert start == len(params)
    return hidden


def pointwise_log_lik(output, f, y):
    """log p(y_n | f_n), shape (B,), for outputs f of shape (B, K)."""
    if output == "gaussian":
        return norm.logpdf(y, f[:, 0], anp.sqrt(VARIANCE))
    if output == "bernoulli":
        return -anp.logaddexp(0.0, -(2.0 * y - 1.0) * f[:, 0])      # log sigmoid(+-f)
    log_prob = f - logsumexp(f, axis=1, keepdims=True)
    return anp.sum(log_prob * (y[:, None] == np.arange(f.shape[1])), axis=1)


def output_hessian(output, f):
    """Lambda_n = -d^2 log p / df^2, shape (B, K, K), written out for each output."""
    f = np.asarray(f)
    if output == "gaussian":
        return np.full((len(f), 1, 1), 1.0 / VARIANCE)
    if output == "bernoulli":
        p = 1.0 / (1.0 + np.exp(-f[:, 0]))
        return (p * (1.0 - p))[:, None, None]
    p = np.exp(f - f.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return np.stack([np.diag(row) - np.outer(row, row) for row in p])


def total_log_lik(output, net, X, y):
    """params -> sum_n log p(y_n | x_n, params), for autograd."""
    return lambda params: anp.sum(pointwise_log_lik(output, outputs(net, params, X), y))
