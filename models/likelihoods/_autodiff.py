r"""Elementwise first and second derivatives of an autograd.numpy function, vectorised.

For an elementwise :math:`f` (each output depends only on the input of the
same index), the Jacobian is diagonal, so one vector-Jacobian product with a
vector of ones gives every :math:`f'(x_i)`, and differentiating that product
once more gives every :math:`f''(x_i)`: one forward pass and two backward
passes of reverse mode (``autograd.elementwise_grad`` twice, without
recomputing :math:`f` for each derivative).
"""

import numpy as np
from autograd.core import make_vjp
from autograd.tracer import getval


def check_log_prob_shape(value, shape):
    """Raise unless ``value`` (a log_prob's output, possibly traced by autograd) has shape ``shape``."""
    received = np.shape(getval(value))
    if received != shape:
        raise ValueError(f"log_prob must return one value per element, an array of shape {shape}; "
                         f"got shape {received}")


def elementwise_derivatives(function, x, second=True):
    """``function(x)`` and its first and second derivatives, elementwise.

    Parameters
    ----------
    function : callable
        Elementwise autograd.numpy function of one array.
    x : ndarray
        Points, any shape.
    second : bool
        Whether to compute the second derivative (else None is returned for it).

    Returns
    -------
    value, d1, d2 : ndarray, the shape of x (``d2`` None unless ``second``)

    Raises
    ------
    ValueError
        If ``function`` does not return an array of the shape of ``x``.
    """
    ones = np.ones(x.shape)
    if not second:
        vjp, value = make_vjp(function, x)
        check_log_prob_shape(value, x.shape)
        return np.asarray(value, dtype=np.float64), np.asarray(vjp(ones), dtype=np.float64), None
    values = []

    def first(point):
        vjp, value = make_vjp(function, point)
        check_log_prob_shape(value, x.shape)
        values.append(value)
        return vjp(ones)

    vjp_first, d1 = make_vjp(first, x)
    d2 = vjp_first(ones)
    return (np.asarray(getval(values[0]), dtype=np.float64), np.asarray(d1, dtype=np.float64),
            np.asarray(d2, dtype=np.float64))
