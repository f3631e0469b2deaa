"""The family registry: lookup by name, the listing, and registration errors."""

import pytest

from efvi import expfam
from efvi.expfam import ExponentialFamily

REQUIRED = ["bernoulli", "beta", "categorical", "diagonal_gaussian", "dirichlet", "exponential", "gamma", "gaussian",
            "inverse_gamma", "poisson", "wishart"]


def test_names_are_sorted_and_include_the_required_families():
    names = expfam.names()
    assert names == sorted(names)
    assert set(REQUIRED) <= set(names)


@pytest.mark.parametrize("name", expfam.names())
def test_get_returns_the_family_registered_under_its_name(name):
    family = expfam.get(name)
    assert issubclass(family, ExponentialFamily)
    assert family.name == name
    assert getattr(expfam, family.__name__) is family


def test_get_of_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ValueError, match="unknown exponential family 'weibull'") as info:
        expfam.get("weibull")
    for name in expfam.names():
        assert name in str(info.value)


def test_get_of_a_non_string_raises_value_error():
    with pytest.raises(ValueError, match="unknown exponential family"):
        expfam.get(["gamma"])


def test_registering_a_second_family_under_a_taken_name_raises():
    class Impostor(ExponentialFamily):
        name = "gamma"

    with pytest.raises(ValueError, match="already registered"):
        expfam.register(Impostor)
    assert expfam.get("gamma") is expfam.Gamma


def test_registering_the_same_class_twice_is_harmless():
    assert expfam.register(expfam.Gamma) is expfam.Gamma
    assert expfam.names().count("gamma") == 1


def test_defining_a_registered_family_again_replaces_it():
    """Running a family's definition twice (a script, a notebook cell, a docs example) re-registers it."""

    def define():
        @expfam.register
        class Redefined(ExponentialFamily):
            name = "redefined_in_test_registry"

        return Redefined

    first, second = define(), define()
    try:
        assert first is not second
        assert expfam.get("redefined_in_test_registry") is second
    finally:
        expfam._registry._FAMILIES.pop("redefined_in_test_registry")
