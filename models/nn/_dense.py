r"""Forward and backward passes of a dense network, batched over Monte Carlo weight samples.

Pure functions on arrays.  A network is a list of layers ``(W, b)`` with
``W`` of shape ``(S, d_in, d_out)`` and ``b`` of shape ``(S, d_out)``: ``S``
weight samples share one batch of inputs ``X`` of shape ``(B, d_0)``, and
every layer is one batched matmul over the sample axis.

Backward passes carry an extra axis ``M`` of output directions: a
backpropagated error has shape ``(S, M, B, d)``.  ``M = 1`` for the gradient
of the log-likelihood (the output direction is its residual
:math:`r_n = \partial \log p / \partial f_n`); ``M = K`` for the Gauss-Newton
diagonal, whose output directions are the columns of a factor
:math:`\Lambda_n = L_n L_n^\top` of the output Hessian.

For a dense layer the gradient of example :math:`n` is the outer product
:math:`a_n \delta_n^\top` of its input and its backpropagated error, so sums of
squared per-example gradients need no per-example tensors:

.. math::

    \sum_n \sum_m (a_n \delta_{nm}^\top)^{\circ 2}
        = (A^{\circ 2})^\top \Big(\sum_m \Delta_m^{\circ 2}\Big), \qquad
    \sum_n \sum_m \delta_{nm}^{\circ 2} \ \text{for the biases},

one matmul per layer, the size of the gradient's own.
"""

import numpy as np


def _relu(pre):
    return np.maximum(pre, 0.0)


def _relu_slope(pre, post):
    return pre > 0.0


def _tanh_slope(pre, post):
    return 1.0 - post * post


ACTIVATIONS = {"relu": (_relu, _relu_slope), "tanh": (np.tanh, _tanh_slope)}


def forward(layers, inputs, activation):
    """Network outputs and the cache a backward pass needs.

    Parameters
    ----------
    layers : list of (ndarray (S, d_in, d_out), ndarray (S, d_out))
    inputs : ndarray, shape (B, d_0)
    activation : str
        A key of ``ACTIVATIONS``.

    Returns
    -------
    outputs : ndarray, shape (S, B, K)
    cache : (list, list)
        ``layer_inputs`` (``inputs``, then each hidden layer's activations,
        shape (S, B, d)) and ``pre_activations`` of the hidden layers.
    """
    act = ACTIVATIONS[activation][0]
    layer_inputs, pre_activations = [inputs], []
    hidden = inputs
    for weights, bias in layers[:-1]:
        pre = np.matmul(hidden, weights)
        pre += bias[:, None, :]
        hidden = act(pre)
        pre_activations.append(pre)
        layer_inputs.append(hidden)
    weights, bias = layers[-1]
    outputs = np.matmul(hidden, weights)
    outputs += bias[:, None, :]
    return outputs, (layer_inputs, pre_activations)


def backward(layers, cache, activation, output_errors):
    """Backpropagate output directions to every layer's pre-activations.

    Parameters
    ----------
    layers : list of (W, b)
    cache : from :func:`forward`
    activation : str
    output_errors : ndarray, shape (S, M, B, K)

    Returns
    -------
    list of ndarray, shape (S, M, B, d_l)
        The error at each layer's output (pre-activation), first layer first.
    """
    slope = ACTIVATIONS[activation][1]
    layer_inputs, pre_activations = cache
    errors = [output_errors]
    for index in range(len(layers) - 1, 0, -1):
        weights_t = np.swapaxes(layers[index][0], -1, -2)[:, None]
        local = slope(pre_activations[index - 1], layer_inputs[index])[:, None]
        error = np.matmul(errors[-1], weights_t)
        error *= local
        errors.append(error)
    return errors[::-1]


def _inputs_t(layer_input):
    """A layer's input transposed to (..., d_in, B) for the weight sums."""
    return np.swapaxes(layer_input, -1, -2)


def gradient_sums(cache, errors, out):
    """Write each layer's summed gradient, ``A^T Delta`` and ``sum_n delta_n``, into ``out`` (``M = 1`` errors).

    Parameters
    ----------
    cache : from :func:`forward`
    errors : from :func:`backward`
    out : list of (ndarray (S, d_in, d_out), ndarray (S, d_out))
        Writeable views (of one flat (S, P) array).
    """
    for layer_input, error, (weights, bias) in zip(cache[0], errors, out):
        np.matmul(_inputs_t(layer_input), error[:, 0], out=weights)
        np.sum(error[:, 0], axis=-2, out=bias)


def squared_sums(cache, errors, out):
    """Write ``(A^2)^T sum_m Delta_m^2`` and ``sum_n sum_m delta_nm^2`` per layer into ``out``.

    The sums over examples (and output directions) of the squared per-example
    gradients; ``out`` as in :func:`gradient_sums`.
    """
    for layer_input, error, (weights, bias) in zip(cache[0], errors, out):
        squared = np.einsum("smbd,smbd->sbd", error, error) if error.shape[1] > 1 else np.square(error[:, 0])
        np.matmul(_inputs_t(np.square(layer_input)), squared, out=weights)
        np.sum(squared, axis=-2, out=bias)


def per_example_gradients(cache, errors):
    """Per layer, the per-example gradients ``a_n delta_nm^T`` and ``delta_nm`` of one weight sample.

    Materialises ``(M, B, d_in, d_out)``: only for the full (P, P) curvature at small P.

    Returns
    -------
    list of (ndarray (M, B, d_in, d_out), ndarray (M, B, d_out))
    """
    grads = []
    for layer_input, error in zip(cache[0], errors):
        layer_input = layer_input.reshape(layer_input.shape[-2:])
        grads.append((np.einsum("bi,mbj->mbij", layer_input, error[0]), error[0]))
    return grads
