"""Comparisons of parameter tuples and matrices shared by the family tests.

Parameter tuples are compared in flattened coordinates by the relative error
``max|x - y| / max(max|y|, ZERO_SCALE)`` per batch element: a parameter whose
every entry is below ``ZERO_SCALE`` is compared absolutely at that scale, since
float64 mean parameters cannot resolve relative changes of a parameter near
zero (a logit of 1e-154 has p = 0.5 exactly).
"""

import numpy as np
import pytest

from efvi import expfam

from .cases import CASES

ZERO_SCALE = 1e-3


def case_of(name):
    """The contract case of the registered family ``name``; fails the test if it has none."""
    if name not in CASES:
        pytest.fail(f"registered family {name!r} has no test case in tests/expfam/cases/")
    return CASES[name]


def floats(params):
    """The parts of a parameter tuple as float arrays."""
    return tuple(np.asarray(p, dtype=float) for p in params)


def flat(family, params):
    """A parameter tuple of ``family`` in flattened coordinates, shape ``batch + (P,)``."""
    return expfam.flatten(floats(params), family.event_ndims)


def relative_error(family, value, reference):
    """Per batch element, ``max|value - reference| / max(max|reference|, ZERO_SCALE)`` over the flattened parameters."""
    value, reference = flat(family, value), flat(family, reference)
    error = np.max(np.abs(value - reference), axis=-1)
    return error / np.maximum(np.max(np.abs(reference), axis=-1), ZERO_SCALE)


def matrix_relative_error(value, reference):
    """Per batch element, ``max|value - reference| / max|reference|`` over a matrix."""
    return np.max(np.abs(value - reference), axis=(-2, -1)) / np.max(np.abs(reference), axis=(-2, -1))
