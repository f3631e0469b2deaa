"""Input checks shared by every family: errors name the argument, the expectation and the value."""

import numpy as np


def _describe(x):
    x = np.asarray(x)
    if x.size <= 6:
        return repr(x.tolist()) if x.ndim else repr(x.item())
    return f"array of shape {x.shape}"


def as_float(x, name, ndim_min=0):
    """Convert ``x`` to a float64 array and check that it is finite.

    Raises
    ------
    ValueError
        Naming ``name`` if ``x`` is not numeric, has fewer than ``ndim_min``
        dimensions, or contains NaN or inf.
    """
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array; got {x!r}") from None
    if arr.ndim < ndim_min:
        raise ValueError(f"{name} must have at least {ndim_min} dimension(s); got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0] if arr.ndim else ()
        raise ValueError(
            f"{name} must be finite (no NaN or inf); got a non-finite value at index "
            f"{tuple(int(i) for i in bad)} of {_describe(arr)}"
        )
    return arr


def check_positive(x, name):
    """Return ``x`` as a finite float array after checking that every entry is > 0."""
    arr = as_float(x, name)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0; got {_describe(arr)}")
    return arr


def check_probability(p, name, open_interval=False):
    """Return ``p`` as a float array after checking it lies in [0, 1] (or (0, 1))."""
    arr = as_float(p, name)
    bad = (arr <= 0) | (arr >= 1) if open_interval else (arr < 0) | (arr > 1)
    if np.any(bad):
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval}; got {_describe(arr)}")
    return arr


def check_square(x, name):
    """Return ``x`` as a finite float array of shape ``(..., D, D)``."""
    arr = as_float(x, name, ndim_min=2)
    if arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must be square in its last two dimensions; got shape {arr.shape}")
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
