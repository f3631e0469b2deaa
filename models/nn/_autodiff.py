"""The exact Hessian of an MLP's summed log-likelihood by autograd: the small-P route (VAN).

A second, autograd.numpy forward pass on the flat parameter vector; the hot
path (:mod:`._dense`) never uses it.
"""

import autograd.numpy as anp
from autograd import hessian

_ACTIVATIONS = {"relu": lambda pre: anp.maximum(pre, 0.0), "tanh": anp.tanh}


def _outputs(params, shapes, inputs, activation):
    act = _ACTIVATIONS[activation]
    hidden, offset = inputs, 0
    for index, (n_in, n_out) in enumerate(shapes):
        weights = anp.reshape(params[offset:offset + n_in * n_out], (n_in, n_out))
        offset += n_in * n_out
        pre = anp.dot(hidden, weights) + params[offset:offset + n_out]
        offset += n_out
        hidden = pre if index == len(shapes) - 1 else act(pre)
    return hidden


def log_lik_hessian(params, shapes, inputs, y, activation, output):
    """The (P, P) Hessian of ``sum_n log p(y_n | x_n, w)`` at ``params`` (shape (P,))."""
    def total(flat):
        return anp.sum(output.log_lik(_outputs(flat, shapes, inputs, activation)[None], y, anp))
    return hessian(total)(params)
