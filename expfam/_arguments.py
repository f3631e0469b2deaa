"""Checks of the arguments of the class-level maps, ``from_natural``, ``logpdf`` and ``kl``, for every family.

Parameter arguments.  Every class-level map of a family (``natural_to_mean``,
``log_partition``, ``from_natural``, ... :data:`PARAMETER_ARGUMENTS`) reads its
parameter arguments with :func:`parameter_parts`: a tuple or list is the
parameter tuple and must have one array per part; for a family with one part
any other value (a bare array, a scalar, an autograd box) is that part, batched
as it stands; for a family with several parts it is an error naming the
argument, so that a bare array is never read as its own rows.

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

import functools
import inspect

import numpy as np
from autograd.tracer import getval, isbox

from .checks import _describe, as_float

PARAMETER_ARGUMENTS = {
    "log_partition": ("natural",),
    "natural_to_mean": ("natural",),
    "mean_to_natural": ("mean",),
    "fisher": ("natural",),
    "fisher_vp": ("natural", "vector"),
    "is_valid_natural": ("natural",),
    "is_valid_mean": ("mean",),
    "expected_log_base_measure": ("natural",),
    "inner": ("natural", "stats"),
    "batch_shape_of": ("params",),
    "check_natural": ("natural",),
    "from_natural": ("natural",),
    "from_valid_natural": ("natural",),
    "from_mean_params": ("mean",),
}
"""The class-level maps of a family and the names of their leading parameter arguments."""


def _is_tuple(params):
    """Whether ``params`` is a parameter tuple: a tuple or list, or autograd's box of one."""
    return isinstance(params, (tuple, list)) or (isbox(params) and isinstance(getval(params), (tuple, list)))


def parameter_parts(cls, params, name):
    """``params`` as a parameter tuple of the family ``cls`` (the parts themselves are not converted).

    Parameters
    ----------
    cls : type
        The family.
    params : tuple or list of array_like, or array_like
        A parameter tuple, or for a family with one part, that part alone.
    name : str
        The argument's name, for the error message.

    Returns
    -------
    tuple, or autograd's box of a tuple (which indexes like one)

    Raises
    ------
    ValueError
        Naming ``name`` if a tuple has the wrong number of parts, or if
        ``params`` is not a tuple and the family has several parts.
    """
    count = len(cls.param_names)
    if _is_tuple(params):
        if len(params) != count:
            raise ValueError(
                f"{name} for {cls.__name__} must be a tuple of {count} array{'s' if count > 1 else ''} "
                f"({', '.join(cls.param_names)}); got a {type(params).__name__} of length {len(params)}"
            )
        return params if type(params) is tuple or isbox(params) else tuple(params)
    if count == 1:
        return (params,)
    shape = f" of shape {np.shape(params)}" if not isbox(params) else ""
    raise ValueError(
        f"{name} for {cls.__name__} must be a tuple of {count} arrays ({', '.join(cls.param_names)}); "
        f"got a bare {type(params).__name__}{shape}"
    )


def reads_parameter_tuples(function, arguments):
    """Wrap the class-level map ``function(cls, ...)`` so that its leading ``arguments`` go through
    :func:`parameter_parts` (by position or by keyword)."""
    count = len(arguments)

    @functools.wraps(function)
    def wrapper(cls, *args, **kwargs):
        if count == 1 and args and type(args[0]) is tuple and len(args[0]) == len(cls.param_names):
            return function(cls, *args, **kwargs)                 # the common case, without copies
        args = list(args)
        for position, name in enumerate(arguments):
            if position < len(args):
                args[position] = parameter_parts(cls, args[position], name)
            elif name in kwargs:
                kwargs[name] = parameter_parts(cls, kwargs[name], name)
        return function(cls, *args, **kwargs)

    wrapper.reads_parameter_tuples = True
    return wrapper


def read_parameter_tuples(cls):
    """Make every class-level map of the family ``cls`` (:data:`PARAMETER_ARGUMENTS`) read its
    parameter arguments with :func:`parameter_parts`, wherever in its bases the map is defined."""
    for method, arguments in PARAMETER_ARGUMENTS.items():
        found = inspect.getattr_static(cls, method, None)
        if isinstance(found, classmethod) and not getattr(found.__func__, "reads_parameter_tuples", False):
            setattr(cls, method, classmethod(reads_parameter_tuples(found.__func__, arguments)))


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
    for i, (arr, k, pname) in enumerate(zip(arrays, cls.event_ndims, cls.param_names)):
        if 0 in arr.shape[arr.ndim - k:]:
            raise ValueError(
                f"{name}[{i}] ({pname}) of {cls.__name__} must have event dimensions of size >= 1; "
                f"got shape {arr.shape}"
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
