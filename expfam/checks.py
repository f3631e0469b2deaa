"""Argument checks shared by all of efvi: errors name the argument, what was expected and what was received.

Every public entry point of efvi validates its input with these (the families,
the engine, the models), so that bad input fails early with a ``ValueError``
such as ``"scale must be > 0; got -1.0 at index (2,)"``.  They are public so
that code extending efvi (a new family, likelihood or factor) can give the
same messages.
"""

import numpy as np

from ._linalg import SYMMETRY_RTOL, is_symmetric

__all__ = ["as_float", "check_integer", "check_positive", "check_probability", "check_square", "check_pd",
           "is_symmetric", "SYMMETRY_RTOL"]


def _describe(x):
    x = np.asarray(x)
    if x.size <= 6:
        return repr(x.tolist()) if x.ndim else repr(x.item())
    return f"array of shape {x.shape}"


def _describe_input(x):
    """A short description of an input that is not numeric (a long one is not printed whole)."""
    text = repr(x)
    return text if len(text) <= 200 else f"{type(x).__name__} {text[:200]}..."


def _first_non_numeric_column(x):
    """``(name, dtype)`` of the first column of a data frame (anything with ``dtypes``) that is not numeric, or None."""
    dtypes = getattr(x, "dtypes", None)
    if dtypes is None or not hasattr(dtypes, "items"):
        return None
    for column, dtype in dtypes.items():
        if getattr(dtype, "kind", "O") not in "biuf":
            return column, dtype
    return None


def number(x):
    """A scalar formatted plainly (``1e-17``, ``-1.0``; never ``np.float64(...)``)."""
    return repr(np.asarray(x).item())


def violation(values, bad):
    """``"<value> at index <i>"`` for the first entry of ``values`` where ``bad`` holds.

    ``values`` and ``bad`` broadcast; the value is printed plainly, or as a small
    nested list when ``values`` has event dimensions that ``bad`` lacks.
    """
    bad = np.asarray(bad)
    values = np.asarray(values)
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    entry = values[index] if values.ndim >= len(index) else values
    return f"{_describe(entry)} at index {index}"


def as_float(x, name, ndim_min=0, finite=True):
    """Convert ``x`` to a float64 array and check that it is finite (unless ``finite=False``).

    Raises
    ------
    ValueError
        Naming ``name`` if ``x`` is not numeric or is complex, has fewer than
        ``ndim_min`` dimensions, or contains NaN or inf.
    """
    if np.iscomplexobj(x):
        raise ValueError(f"{name} must be real; got a complex array of shape {np.shape(x)}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        column = _first_non_numeric_column(x)
        if column is not None:
            raise ValueError(f"{name} must be numeric; got column {column[0]!r} of dtype {column[1]}") from None
        raise ValueError(f"{name} must be a numeric array; got {_describe_input(x)}") from None
    if arr.ndim < ndim_min:
        raise ValueError(f"{name} must have at least {ndim_min} dimension(s); got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0] if arr.ndim else ()
        raise ValueError(
            f"{name} must be finite (no NaN or inf); got a non-finite value at index "
            f"{tuple(int(i) for i in bad)} of {_describe(arr)}"
        )
    return arr


def check_integer(value, name, minimum=0, suffix=""):
    """``value`` as an int after checking it is a whole number (not a bool) ``>= minimum``.

    Parameters
    ----------
    value : int or whole float
    name : str
        Argument name for the error message.
    minimum : int
    suffix : str
        Appended to the expectation in the message (e.g. ``" or None"``).

    Returns
    -------
    int

    Raises
    ------
    ValueError
        Naming ``name``, the expectation and the value received.
    """
    whole = (isinstance(value, (int, np.integer))
             or (isinstance(value, (float, np.floating)) and float(value).is_integer()))
    if isinstance(value, (bool, np.bool_)) or not whole or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}{suffix}; got {value!r}")
    return int(value)


def check_positive(x, name):
    """Return ``x`` as a finite float array after checking that every entry is > 0."""
    arr = as_float(x, name)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0; got {violation(arr, arr <= 0)}")
    return arr


def check_probability(p, name, open_interval=False):
    """Return ``p`` as a float array after checking it lies in [0, 1] (or (0, 1))."""
    arr = as_float(p, name)
    bad = (arr <= 0) | (arr >= 1) if open_interval else (arr < 0) | (arr > 1)
    if np.any(bad):
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}; got {violation(arr, bad)}")
    return arr


def check_square(x, name):
    """Return ``x`` as a finite float array of shape ``(..., D, D)``."""
    arr = as_float(x, name, ndim_min=2)
    if arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must be square in its last two dimensions; got shape {arr.shape}")
    if arr.shape[-1] == 0:
        raise ValueError(f"{name} must be at least 1 x 1 in its last two dimensions; got shape {arr.shape}")
    return arr


def check_pd(x, name):
    """Return ``x`` as a float array after checking it is symmetric positive definite."""
    arr = check_square(x, name)
    if not np.allclose(arr, np.swapaxes(arr, -1, -2), rtol=1e-10, atol=1e-12 * np.max(np.abs(arr), initial=1.0)):
        raise ValueError(f"{name} must be symmetric; got {_describe(arr)}")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} must be positive definite; got {_describe(arr)}") from None
    return arr


def broadcast_pair(first, second, first_name, second_name):
    """``first`` and ``second`` broadcast to their common shape, as new (writable) float arrays.

    Raises
    ------
    ValueError
        Naming both arguments and their shapes if the shapes do not broadcast.
    """
    try:
        return tuple(np.array(x, dtype=float) for x in np.broadcast_arrays(first, second))
    except ValueError:
        raise ValueError(
            f"{first_name} of shape {np.shape(first)} and {second_name} of shape {np.shape(second)} do not broadcast"
        ) from None


def _smallest_representable(shift, scale):
    """The smallest float ``x`` with ``scale * (x - shift) > -1`` in float64 arithmetic."""
    candidate = shift + np.nextafter(-1.0, 0.0) / scale
    while not scale * (candidate - shift) > -1.0:
        candidate = np.nextafter(candidate, np.inf)
    return candidate


def natural_from_shape(x, name, natural_name, shift=1.0, scale=1.0, bound_name=None):
    """The natural parameter ``scale * (x - shift)`` of a shape-like argument, checked to be > -1.

    Shapes, concentrations and degrees of freedom enter the natural parameters
    as ``x - shift`` (scaled), which must be > -1: ``x > shift - 1 / scale``.
    A value just above that bound can still round to exactly -1 in float64
    (``1e-17 - 1 == -1``), a distribution the natural parametrisation cannot
    hold, so such values are rejected too, with the smallest one it can hold.

    Parameters
    ----------
    x : array_like, any shape
    name : str
        Argument named in errors.
    natural_name : str
        How the natural parameter is written in errors, e.g. ``"shape - 1"``.
    shift, scale : float
    bound_name : str, optional
        How the lower bound ``shift - 1 / scale`` is written in errors (default: its value).

    Returns
    -------
    ndarray, same shape as ``x``

    Raises
    ------
    ValueError
        Naming ``name``, the bound and the first offending value with its index.
    """
    arr = as_float(x, name)
    lower = shift - 1.0 / scale
    outside = ~(arr > lower)
    if np.any(outside):
        raise ValueError(f"{name} must be > {bound_name or number(lower)}; got {violation(arr, outside)}")
    natural = scale * (arr - shift)
    collapsed = ~(natural > -1.0)
    if np.any(collapsed):
        raise ValueError(
            f"{name} must be at least {number(_smallest_representable(shift, scale))}, the smallest value "
            f"whose natural parameter {natural_name} is > -1 in float64; got {violation(arr, collapsed)}"
        )
    return natural
