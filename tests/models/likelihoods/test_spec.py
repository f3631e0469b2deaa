"""Likelihoods as JSON (``likelihood.spec()``, ``likelihoods.from_spec``): what saved estimators and fits keep."""

import json

import numpy as np
import pytest

from efvi.models import likelihoods as L
from efvi.models.likelihoods.spec import SAVED_CLASSES

from .cases import CASES, compiled_cases, likelihood_classes

MEAN = np.array([-1.0, 0.0, 0.5, 2.0])
VAR = np.array([0.1, 1.0, 0.3, 0.5])


def test_every_compiled_likelihood_class_can_be_saved():
    compiled = {cls.__name__ for cls in likelihood_classes() if cls is not L.Custom}
    assert compiled == set(SAVED_CLASSES)


@pytest.mark.parametrize("name", compiled_cases())
def test_a_likelihood_rebuilt_from_its_spec_computes_the_same(name):
    likelihood = CASES[name].make(4)
    spec = json.loads(json.dumps(likelihood.spec(), allow_nan=False))       # what a file holds
    rebuilt = L.from_spec(spec)
    assert type(rebuilt) is type(likelihood) and repr(rebuilt) == repr(likelihood)
    y = CASES[name].sample(likelihood, np.random.default_rng(0), MEAN)
    for a, b in zip(likelihood.variational_expectations(MEAN, VAR, y), rebuilt.variational_expectations(MEAN, VAR, y)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(likelihood.predict_mean_var(MEAN, VAR), rebuilt.predict_mean_var(MEAN, VAR))


def test_options_and_latent_precisions_are_kept():
    for likelihood in (L.Bernoulli(link="cloglog", n_points=30), L.Gaussian(precision="tau"),
                       L.Gaussian(precision=4.0), L.Poisson(exposure=np.array([1.0, 2.5]), link="softplus")):
        rebuilt = L.from_spec(likelihood.spec())
        assert repr(rebuilt) == repr(likelihood) and rebuilt.n_points == likelihood.n_points
    assert L.from_spec(L.Gaussian(precision="tau").spec()).precision_block == "tau"


class _Mine(L.Poisson):
    """A likelihood class of one's own: code."""


@pytest.mark.parametrize("likelihood", [L.Custom(lambda y, f: -(y - f) ** 2), _Mine()], ids=["Custom", "subclass"])
def test_code_has_no_spec(likelihood):
    with pytest.raises(ValueError, match=f"a {type(likelihood).__name__} likelihood cannot be saved"):
        likelihood.spec()


@pytest.mark.parametrize("spec, message", [
    ("Poisson", "spec must be"),
    ({"class": "Poisson"}, "spec must be"),
    ({"class": "os.system", "arguments": {}}, "spec must name one of efvi's likelihood classes"),
    ({"class": "_Mine", "arguments": {}}, "spec must name one of efvi's likelihood classes"),
    ({"class": "Gamma", "arguments": {"shape": -1.0}}, "shape must be > 0"),
    ({"class": "Gamma", "arguments": {"rate": 1.0}}, r"spec's arguments \['rate'\] do not suit Gamma"),
    ({"class": "Gamma", "arguments": {"shape": {"a": 1}}}, "spec's argument 'shape' of Gamma must be a number"),
    ({"class": "Binomial", "arguments": {"n_trials": [1, 2.5]}}, "n_trials must be a positive integer"),
])
def test_bad_specs_are_named(spec, message):
    with pytest.raises(ValueError, match=message):
        L.from_spec(spec)
