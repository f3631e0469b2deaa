"""Input checks for the likelihoods: every error names the argument, the expectation and the value."""

import numpy as np

from ...expfam.checks import as_float


def describe(x):
    """A short text for an array in an error message: its values if few, else its shape."""
    x = np.asarray(x)
    return repr(x.tolist()) if x.size <= 6 else f"array of shape {x.shape}"


def as_vector(x, name):
    """Return ``x`` as a 1-D C-contiguous float64 copy; NaN and inf are left for the caller to judge.

    Raises
    ------
    ValueError
        Naming ``name`` if ``x`` is not numeric, is complex or is not one-dimensional.
    """
    arr = np.array(as_float(x, name, finite=False), order="C", copy=True)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    return arr


def check_gaussian_marginals(mean, var):
    """Validate the marginals N(mean_i, var_i) of the latent: 1-D, equal length, finite, var >= 0.

    Returns
    -------
    mean, var : ndarray, shape (N,)
        C-contiguous float64 copies.
    """
    mean = as_vector(mean, "mean")
    var = as_vector(var, "var")
    if mean.shape != var.shape:
        raise ValueError(f"mean and var must have the same shape; got {mean.shape} and {var.shape}")
    as_float(mean, "mean")
    as_float(var, "var")
    if np.any(var < 0):
        index = int(np.argmax(var < 0))
        raise ValueError(f"var must be >= 0; got {var[index].item()!r} at index {index}")
    return mean, var


def check_same_length(y, mean, name="y"):
    """Raise a ValueError naming ``name`` unless ``y`` has the shape of ``mean``."""
    if y.shape != mean.shape:
        raise ValueError(f"{name} must have the shape of mean {mean.shape}; got shape {y.shape}")


def raise_outside_support(y, bad, name, support):
    """Raise the ValueError for the entries of ``y`` flagged in ``bad`` (a boolean mask)."""
    y = np.asarray(y)
    index = np.flatnonzero(bad)
    where = np.unravel_index(index[0], y.shape) if y.ndim else ()
    where = int(where[0]) if len(where) == 1 else tuple(int(i) for i in where)
    raise ValueError(
        f"{name} must contain {support} (NaN marks a missing value); got {y[bad][0].item()!r} at index "
        f"{where} ({index.size} invalid entr{'y' if index.size == 1 else 'ies'} in {describe(y)})"
    )


def per_point_vector(x, name, check):
    """Return a per-point parameter as a 1-D float64 array (a scalar becomes length 1).

    ``check(arr, name)`` validates the values (e.g. positivity) and raises on failure.
    """
    arr = np.atleast_1d(check(x, name)).astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D array; got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def is_integer(x):
    """Boolean mask of the entries of ``x`` that are whole numbers (False for NaN)."""
    return np.floor(x) == x
