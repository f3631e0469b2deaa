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


def _check_shape(value, x):
    shape = np.shape(getval(value))
    if shape != x.shape:
        raise ValueError(f"log_prob must return one value per element, an array of shape {x.shape}; "
                         f"got shape {shape}")


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
        _check_shape(value, x)
        return np.asarray(value, dtype=np.float64), np.asarray(vjp(ones), dtype=np.float64), None
    values = []

    def first(point):
        vjp, value = make_vjp(function, point)
        _check_shape(value, x)
        values.append(value)
        return vjp(ones)

    vjp_first, d1 = make_vjp(first, x)
    d2 = vjp_first(ones)
    return (np.asarray(getval(values[0]), dtype=np.float64), np.asarray(d1, dtype=np.float64),
            np.asarray(d2, dtype=np.float64))
