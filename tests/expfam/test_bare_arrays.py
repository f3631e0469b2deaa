"""Parameter arguments of the class-level maps: a bare array is the one part, or an error; never misread.

For every registered family and every map of
:data:`efvi.expfam._arguments.PARAMETER_ARGUMENTS`: a family with one part
gives the same result for a bare array as for a 1-tuple; a family with several
raises a ``ValueError`` naming the argument instead of reading the array's
rows as its parts.
"""

import re

import numpy as np
import pytest
from scipy import special

from efvi import expfam
from efvi.expfam import Bernoulli, ExponentialFamily
from efvi.expfam._arguments import PARAMETER_ARGUMENTS

from .cases import CASES

NAMES = expfam.names()
SINGLE = [name for name in NAMES if len(expfam.get(name).param_names) == 1]
MULTIPLE = [name for name in NAMES if len(expfam.get(name).param_names) > 1]


def _arguments(name):
    """Valid parameter tuples for every argument name of the maps, from the family's first example."""
    q = CASES[name].examples[0]
    return {"natural": q.natural, "mean": q.mean_params, "vector": q.natural, "stats": q.mean_params,
            "params": q.natural}


def _same(value, reference):
    """Whether two results of a map are equal: distributions by their natural parameters, tuples part by part."""
    if isinstance(reference, ExponentialFamily):
        return type(value) is type(reference) and _same(value.natural, reference.natural)
    if isinstance(reference, tuple) and not all(isinstance(r, (int, np.integer)) for r in reference):
        return len(value) == len(reference) and all(_same(v, r) for v, r in zip(value, reference))
    return np.array_equal(np.asarray(value), np.asarray(reference))


def test_the_families_split_into_single_and_multiple_parts():
    assert {"bernoulli", "categorical", "dirichlet", "exponential", "poisson"} <= set(SINGLE)
    assert {"gamma", "inverse_gamma", "gaussian", "wishart"} <= set(MULTIPLE)


@pytest.mark.parametrize("method", sorted(PARAMETER_ARGUMENTS))
@pytest.mark.parametrize("name", SINGLE)
def test_a_single_part_family_reads_a_bare_array_as_its_part(name, method):
    family = expfam.get(name)
    arguments = _arguments(name)
    names = PARAMETER_ARGUMENTS[method]
    in_tuples = [arguments[argument] for argument in names]
    bare = [arguments[argument][0] for argument in names]
    assert _same(getattr(family, method)(*bare), getattr(family, method)(*in_tuples))
    keywords = dict(zip(names, bare))
    assert _same(getattr(family, method)(**keywords), getattr(family, method)(*in_tuples))


@pytest.mark.parametrize("method", sorted(PARAMETER_ARGUMENTS))
@pytest.mark.parametrize("name", MULTIPLE)
def test_a_multi_part_family_rejects_a_bare_array_naming_the_argument(name, method):
    family = expfam.get(name)
    arguments = _arguments(name)
    names = PARAMETER_ARGUMENTS[method]
    for position, argument in enumerate(names):
        call = [arguments[other] for other in names]
        call[position] = np.stack([np.ravel(p)[0] * np.ones(2) for p in arguments[argument]])
        pattern = (f"^{re.escape(argument)} for {family.__name__} must be a tuple of {len(family.param_names)} "
                   r"arrays .*got a bare ndarray of shape")
        with pytest.raises(ValueError, match=pattern):
            getattr(family, method)(*call)


def test_the_issue_example_gives_two_probabilities():
    """``Bernoulli.natural_to_mean(np.array([0., 1.]))`` used to return 0.5 alone (the rows read as parts)."""
    (probabilities,) = Bernoulli.natural_to_mean(np.array([0.0, 1.0]))
    np.testing.assert_array_equal(probabilities, special.expit([0.0, 1.0]))
    assert probabilities.shape == (2,)


def test_a_tuple_of_the_wrong_length_names_the_argument():
    with pytest.raises(ValueError, match=r"^natural for Bernoulli must be a tuple of 1 array .*length 2"):
        Bernoulli.natural_to_mean((np.zeros(2), np.zeros(2)))
    with pytest.raises(ValueError, match=r"^mean for Gamma must be a tuple of 2 arrays .*length 1"):
        expfam.Gamma.mean_to_natural((np.ones(2),))
