"""Arithmetic on natural-parameter tuples, shared by every family and the engine.

A family's parameters (natural or mean) are a tuple of arrays.  Array ``j`` has
``event_ndims[j]`` trailing event dimensions after the common batch shape.  The
inner product of a parameter tuple with a statistic tuple is

.. math:: \\langle \\lambda, \\phi \\rangle = \\sum_j \\sum_{\\text{event}} \\lambda_j \\phi_j,

the trace form for matrix-valued parts, so that the engine can add, scale and
interpolate natural parameters of any family in the same way.
"""

import autograd.numpy as anp
import numpy as np


def tree_add(a, b):
    """Return ``a + b`` part by part."""
    return tuple(x + y for x, y in zip(a, b))


def tree_sub(a, b):
    """Return ``a - b`` part by part."""
    return tuple(x - y for x, y in zip(a, b))


def tree_scale(a, scale):
    """Return ``scale * a`` part by part (``scale`` broadcasts against the batch)."""
    return tuple(scale * x for x in a)


def tree_lerp(a, b, rho):
    """Return ``(1 - rho) a + rho b`` part by part: the CVI/VMP site update.

    A full step (``rho == 1``) returns the parts of ``b`` themselves (no copy);
    parameter arrays are never modified in place.
    """
    if rho == 1.0:
        return tuple(b)
    return tuple(_lerp(x, y, rho) for x, y in zip(a, b))


def _lerp(x, y, rho):
    """``(1 - rho) x + rho y`` as ``x + rho (y - x)`` with one temporary (the parts can be large)."""
    out = np.subtract(y, x, dtype=float)
    if np.ndim(out) == 0:
        return x + rho * out
    out *= rho
    out += x
    return out


def inner(a, b, event_ndims):
    """Inner product of two parameter/statistic tuples over their event dimensions.

    Parameters
    ----------
    a, b : tuple of arrays
        Part ``j`` has shape ``batch + event_j``; batches broadcast.
    event_ndims : tuple of int
        Number of event dimensions of each part.

    Returns
    -------
    array, shape ``batch``
    """
    total = 0.0
    for x, y, k in zip(a, b, event_ndims):
        prod = x * y
        total = total + (prod.sum(axis=tuple(range(-k, 0))) if k else prod)
    return total


def flatten(params, event_ndims):
    """Concatenate the parts into one vector per batch element, shape ``batch + (P,)``."""
    batch = np.shape(params[0])[: np.ndim(params[0]) - event_ndims[0]]
    return np.concatenate(
        [np.reshape(p, batch + (-1,)) for p in params], axis=-1
    )


def unflatten(flat, like, event_ndims):
    """Inverse of :func:`flatten`: split ``flat`` into parts shaped like ``like`` (autograd-safe)."""
    batch = anp.shape(flat)[:-1]
    parts, start = [], 0
    for p, k in zip(like, event_ndims):
        event = np.shape(p)[np.ndim(p) - k:] if k else ()
        size = int(np.prod(event)) if k else 1
        parts.append(anp.reshape(flat[..., start:start + size], batch + tuple(event)))
        start += size
    return tuple(parts)
