"""Argument checks of :mod:`efvi.inference.vpng` that :mod:`efvi.expfam.checks` does not already give."""

import numbers

import numpy as np


def check_real(value, name, *, low=None, high=None, low_open=True, expected):
    """``value`` as a float after checking it is a finite real above ``low`` and below ``high``."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and np.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high
    if not ok:
        raise ValueError(f"{name} must be {expected}; got {value!r}")
    return float(value)


def check_callable(value, name, expected):
    if not callable(value):
        raise ValueError(f"{name} must be {expected}; got {value!r}")
    return value
