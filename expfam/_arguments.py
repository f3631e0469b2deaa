"""Checks of the arguments of ``from_natural``, ``logpdf`` and ``kl``, for every family.

A natural-parameter tuple has one array per part, with a common batch shape,
finite entries and a value inside the family's natural parameter space; an
error names the part and, for a value outside the space, prints every part at
the first offending batch index.  A draw ``z`` has shape ``sample_shape + batch_shape + event_shape`` (or, for a
family whose draws are tuples, each of its arrays does, with that array's
event shape); the leading part broadcasts with the batch shape.  The other
distribution of ``kl`` must be of the same family, with the same event shapes
of every natural-parameter part (same D or K) and a batch shape that
broadcasts.  Mismatches raise a ``ValueError`` naming the argument, the
expected shape and the received one, instead of numpy's broadcast message.
"""

import numpy as np

from .checks import _describe, as_float


def check_parameter_tuple(cls, params, name):
    """Validate a natural-parameter tuple of the family ``cls`` and return it as float arrays.

    Raises
    ------
    ValueError
        Naming ``name`` (or ``name[i]``) if the tuple has the wrong number of
        parts, a part is not finite, the parts' shapes disagree, or the value is
        outside the natural parameter space.
    """
    if not isinstance(params, (tuple, list)) or len(params) != len(cls.param_names):
        raise ValueError(
            f"{name} for {cls.__name__} must be a tuple of {len(cls.param_names)} arrays "
            f"({', '.join(cls.param_names)}); got {type(params).__name__}"
            + (f" of length {len(params)}" if isinstance(params, (tuple, list)) else "")
        )
    arrays = tuple(
        as_float(p, f"{name}[{i}] ({pname})", ndim_min=k)
        for i, (p, pname, k) in enumerate(zip(params, cls.param_names, cls.event_ndims))
    )
    batch = cls.batch_shape_of(arrays)
    for i, (arr, k, pname) in enumerate(zip(arrays, cls.event_ndims, cls.param_names)):
        if tuple(arr.shape[: arr.ndim - k]) != batch:
            raise ValueError(
                f"{name}[{i}] ({pname}) of {cls.__name__} has batch shape "
                f"{arr.shape[: arr.ndim - k]}, expected {batch} like {name}[0]"
            )
    cls._check_event_shapes(arrays, name)
    valid = np.asarray(cls.is_valid_natural(arrays))
    if not np.all(valid):
        where = tuple(int(i) for i in np.argwhere(~valid)[0]) if valid.ndim else ()
        received = ", ".join(
            f"{name}[{i}] = {_describe(np.broadcast_to(p, valid.shape + p.shape[p.ndim - k:])[where])}"
            for i, (p, k) in enumerate(zip(arrays, cls.event_ndims))
        )
        raise ValueError(
            f"{name} for {cls.__name__} is outside the natural parameter space at batch index {where}: "
            f"{cls._domain_description()}; got {received}"
        )
    return arrays


def check_draw(dist, z):
    """Validate draws ``z`` for the distribution ``dist``.

    Parameters
    ----------
    dist : ExponentialFamily
    z : array_like, or a tuple of them for a family with ``draw_parts``

    Returns
    -------
    parts : tuple of float arrays
        ``(z,)``, or the arrays of the tuple.
    events : tuple of tuple
        The event shape of each part.
    shape : tuple
        ``sample_shape + batch_shape``: the leading shapes and the batch shape broadcast.

    Raises
    ------
    ValueError
        Naming ``z`` (or ``z[i]``) if its event shape is not the batch's or its
        leading shape does not broadcast with the batch shape.
    """
    family = type(dist).__name__
    if type(dist).draw_parts:
        names = type(dist).draw_parts
        if not isinstance(z, (tuple, list)) or len(z) != len(names):
            raise ValueError(f"z for {family} must be a tuple ({', '.join(names)}) of arrays; got {type(z).__name__}")
        parts, events = tuple(z), dist.event_shape
        labels = [f"z[{i}] ({part})" for i, part in enumerate(names)]
    else:
        parts, events, labels = (z,), (dist.event_shape,), ["z"]
    arrays, shape = [], dist.batch_shape
    for part, event, label in zip(parts, events, labels):
        try:
            arr = np.asarray(part, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{label} must be a numeric array; got {type(part).__name__}") from None
        expected = f"sample_shape + {dist.batch_shape} + {event} (sample_shape + batch_shape + event_shape)"
        if arr.ndim < len(event) or arr.shape[arr.ndim - len(event):] != event:
            raise ValueError(f"{label} for this {family} must have shape {expected}; got shape {arr.shape}")
        try:
            shape = np.broadcast_shapes(shape, arr.shape[: arr.ndim - len(event)])
        except ValueError:
            raise ValueError(
                f"{label} for this {family} must have shape {expected}, its leading shape broadcasting "
                f"with the batch shape; got shape {arr.shape}"
            ) from None
        arrays.append(arr)
    return tuple(arrays), tuple(events), shape


def check_kl_other(dist, other):
    """Check that ``other`` can be the second argument of ``dist.kl``.

    Raises
    ------
    ValueError
        Naming ``other`` if it is not of ``dist``'s family, the event shape of
        one of its natural-parameter parts (D or K) differs, or its batch shape
        does not broadcast with ``dist``'s.
    """
    cls = type(dist)
    if not isinstance(other, cls):
        raise ValueError(f"other must be a {cls.__name__} for kl(); got {type(other).__name__}")
    for i, (mine, theirs, k, pname) in enumerate(zip(dist.natural, other.natural, cls.event_ndims,
                                                      cls.param_names)):
        expected, received = mine.shape[mine.ndim - k:], theirs.shape[theirs.ndim - k:]
        if expected != received:
            raise ValueError(
                f"other must have this {cls.__name__}'s event shapes for kl(): natural[{i}] ({pname}) "
                f"with event shape {expected}; got {received}"
            )
    try:
        np.broadcast_shapes(dist.batch_shape, other.batch_shape)
    except ValueError:
        raise ValueError(
            f"other must have a batch shape that broadcasts with {dist.batch_shape} for kl(); "
            f"got batch shape {other.batch_shape}"
        ) from None
