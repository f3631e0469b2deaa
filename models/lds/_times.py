"""Times of a Markov GP as floats: calendar times become days since the first one.

A Markov GP's kernel works on real numbers, so dates (``numpy.datetime64``,
``pandas.Timestamp``, ``datetime.datetime``, a ``pandas.DatetimeIndex``) are
converted to float days since the first time given, ``(t - t[0]) / 1 day``:
a lengthscale of 7 then means a week.  New times for prediction are measured
from the same origin.
"""

import datetime

import numpy as np

from ...expfam.checks import as_float

DAY = np.timedelta64(1, "D")
"""The unit that datetime times are converted to."""


def times_as_float(t, name, origin=None):
    """``t`` as a float64 array, with datetimes converted to days since ``origin`` (default: their first entry).

    Parameters
    ----------
    t : array_like
        Real numbers, or datetimes (numpy ``datetime64``, pandas ``Timestamp``
        or ``DatetimeIndex``, ``datetime.datetime``; timezone-aware ones are
        taken in UTC).
    name : str
        Argument named in errors.
    origin : numpy.datetime64, optional
        The time that becomes 0.0.

    Returns
    -------
    values : ndarray of float64
    origin : numpy.datetime64 or None
        The origin used (None when ``t`` holds plain numbers).

    Raises
    ------
    ValueError
        Naming ``name`` if ``t`` is neither real numbers nor datetimes, with a
        hint how to convert other time types.
    """
    dates = _as_datetime64(t)
    if dates is None:
        kind = np.asarray(t).dtype.kind
        if kind not in "iufO":
            raise ValueError(
                f"{name} must be an array of real numbers or datetimes; got dtype {np.asarray(t).dtype}. "
                f"Convert other times to numbers first, e.g. durations with t / np.timedelta64(1, 'D')"
            )
        return as_float(t, name, ndim_min=1), None
    if dates.size == 0:
        return np.zeros(dates.shape), origin
    if np.any(np.isnat(dates)):
        bad = tuple(int(i) for i in np.argwhere(np.isnat(dates))[0])
        raise ValueError(f"{name} must hold valid datetimes; got NaT at index {bad}")
    if origin is None:
        origin = dates.reshape(-1)[0]
    return (dates - origin) / DAY, origin


def _as_datetime64(t):
    """``t`` as a ``datetime64[ns]`` array if it holds datetimes, else None."""
    arr = np.asarray(t)
    if arr.dtype.kind == "M":
        return arr.astype("datetime64[ns]")
    if arr.dtype.kind != "O" or arr.size == 0:
        return None
    flat = arr.reshape(-1)
    if not all(isinstance(x, (datetime.datetime, np.datetime64)) for x in flat):
        return None
    return np.array([_one_datetime64(x) for x in flat], dtype="datetime64[ns]").reshape(arr.shape)


def _one_datetime64(x):
    if hasattr(x, "to_datetime64"):                       # pandas Timestamp (UTC if timezone-aware)
        return x.to_datetime64()
    if isinstance(x, datetime.datetime) and x.tzinfo is not None:
        x = x.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return np.datetime64(x, "ns")
