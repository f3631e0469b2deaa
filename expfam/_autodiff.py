"""Mean parameters and Fisher information by automatic differentiation of the log-partition.

These are the derived maps of :class:`efvi.expfam.ExponentialFamily`, used by
families without closed forms and as the reference every closed form is
tested against.  The mean parameters are the gradient of the log-partition:
since the batch elements are independent, the gradient of
:math:`\\sum_b A(\\lambda_b)` holds every element's gradient, in one reverse
pass.  The Fisher information in flattened coordinates is the Hessian of the
log-partition.  For a batch of ``B`` distributions with ``P`` flattened natural
parameters, the Hessian of :math:`\\sum_b A(\\lambda_b)` is block diagonal, so
one Hessian-vector product with the ``j``-th unit vector repeated over the batch
gives column ``j`` of every block at once: ``P`` reverse-over-reverse passes of
autograd, whatever the batch size.
"""

import autograd
import autograd.numpy as anp
import numpy as np

from . import _params


def _unflatten(flat, shapes):
    parts, start = [], 0
    batch = flat.shape[:-1]
    for event in shapes:
        size = int(np.prod(event))
        parts.append(anp.reshape(flat[..., start:start + size], batch + event))
        start += size
    return tuple(parts)


def broadcast_parts(params, event_ndims):
    """The parts of ``params`` as float arrays with their batch shapes broadcast to a common one."""
    params = tuple(np.asarray(p, dtype=float) for p in params)
    batches = [p.shape[:p.ndim - k] for p, k in zip(params, event_ndims)]
    batch = np.broadcast_shapes(*batches)
    if all(b == batch for b in batches):
        return params
    return tuple(np.array(np.broadcast_to(p, batch + p.shape[p.ndim - k:])) for p, k in zip(params, event_ndims))


def gradient_of_log_partition(log_partition, natural, event_ndims):
    """Gradient of ``log_partition`` at each batch element: the mean parameters ``grad A(lambda)``.

    Parameters
    ----------
    log_partition : callable(tuple of arrays) -> array, shape ``batch``
        Written with ``autograd.numpy``.
    natural : tuple of arrays
        Part ``j`` has shape ``batch_j + event_j``; the batch shapes broadcast.
    event_ndims : tuple of int

    Returns
    -------
    tuple of float arrays, part ``j`` of shape ``batch + event_j`` (the broadcast batch)
    """
    natural = broadcast_parts(natural, event_ndims)
    gradient = autograd.grad(lambda nat: anp.sum(log_partition(nat)))(natural)
    return tuple(np.asarray(g, dtype=float) for g in gradient)


def hessian_of_log_partition(log_partition, natural, event_ndims):
    """Hessian of ``log_partition`` at each batch element, in flattened coordinates.

    Parameters are those of :func:`gradient_of_log_partition`.

    Returns
    -------
    array, shape ``batch + (P, P)``, with ``P`` the flattened size (:func:`efvi.expfam.flatten`).
    """
    natural = broadcast_parts(natural, event_ndims)
    shapes = tuple(tuple(p.shape[p.ndim - k:]) if k else () for p, k in zip(natural, event_ndims))
    flat = _params.flatten(natural, event_ndims)

    def total(f):
        return anp.sum(log_partition(_unflatten(f, shapes)))

    gradient = autograd.grad(total)
    columns = []
    for j in range(flat.shape[-1]):
        direction = np.zeros_like(flat)
        direction[..., j] = 1.0
        columns.append(autograd.grad(lambda f: anp.sum(gradient(f) * direction))(flat))
    return np.stack(columns, axis=-1)
