"""Input checks for kernels: errors name the argument, the expectation and the value.

Hyperparameters must be finite and strictly positive (they are optimised on the
log scale); inputs must be finite with a consistent number of features; time
gaps for state-space discretisation must be finite and non-negative.
"""

import numpy as np

from ....expfam.checks import as_float, check_positive


def positive_param(value, name, allow_vector=False):
    """Return a hyperparameter as a read-only float64 array after checking it.

    Parameters
    ----------
    value : float or array_like, shape () or (D,)
        The hyperparameter.
    name : str
        Its name, used in error messages.
    allow_vector : bool, default False
        Accept a non-empty 1-D array (a per-dimension, ARD, lengthscale).

    Returns
    -------
    ndarray, shape () or (D,)

    Raises
    ------
    ValueError
        If ``value`` is not finite, not > 0, or has the wrong shape.
    """
    arr = check_positive(value, name)
    if arr.ndim > 1 or (arr.ndim == 1 and not allow_vector) or (arr.ndim == 1 and arr.size == 0):
        expected = "a scalar or a non-empty 1-D array" if allow_vector else "a scalar"
        raise ValueError(f"{name} must be {expected}; got an array of shape {arr.shape}")
    arr = np.array(arr, dtype=float)
    arr.setflags(write=False)
    return arr


def as_inputs(X, name, n_features=None):
    """Return inputs as a C-contiguous float64 array of shape ``(N, D)``.

    Parameters
    ----------
    X : array_like, shape (N,) or (N, D)
        Input points; a 1-D array is read as ``N`` points in one dimension.
    name : str
        The argument's name, used in error messages.
    n_features : int or None
        Required number of columns ``D`` (None: any ``D >= 1``).

    Returns
    -------
    ndarray, shape (N, D)

    Raises
    ------
    ValueError
        If ``X`` is not finite, not 1-D or 2-D, has no columns, or has a
        number of columns other than ``n_features``.
    """
    arr = as_float(X, name)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise ValueError(f"{name} must have shape (N,) or (N, D) with D >= 1; got shape {arr.shape}")
    if n_features is not None and arr.shape[1] != n_features:
        raise ValueError(f"{name} must have {n_features} feature column(s); got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def as_log_params(log_params, size):
    """Return a finite 1-D float64 vector of length ``size`` (hyperparameters on the log scale)."""
    arr = as_float(log_params, "log_params")
    if arr.shape != (size,):
        raise ValueError(f"log_params must have shape ({size},); got shape {arr.shape}")
    return arr


def as_time_gaps(dt):
    """Return time gaps as a finite, non-negative float64 array of shape ``(T,)``."""
    arr = as_float(dt, "dt")
    if arr.ndim != 1:
        raise ValueError(f"dt must be a 1-D array of time gaps, shape (T,); got shape {arr.shape}")
    if np.any(arr < 0):
        i = int(np.argmax(arr < 0))
        raise ValueError(f"dt must be >= 0 (times sorted in increasing order); got dt[{i}] = {float(arr[i])!r}")
    return np.ascontiguousarray(arr)
