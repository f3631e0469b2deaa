"""Fisher information by automatic differentiation, for families without a closed form.

The Fisher information in flattened coordinates is the Hessian of the
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


def hessian_of_log_partition(log_partition, natural, event_ndims):
    """Hessian of ``log_partition`` at each batch element, in flattened coordinates.

    Parameters
    ----------
    log_partition : callable(tuple of arrays) -> array, shape ``batch``
        Written with ``autograd.numpy``.
    natural : tuple of arrays
        Part ``j`` has shape ``batch + event_j``.
    event_ndims : tuple of int

    Returns
    -------
    array, shape ``batch + (P, P)``, with ``P`` the flattened size (:func:`efvi.expfam.flatten`).
    """
    natural = tuple(np.asarray(p, dtype=float) for p in natural)
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
