"""Every closed form of a family against the route the base class derives from its log-partition.

:class:`efvi.expfam.ExponentialFamily` derives ``natural_to_mean`` (autograd's
gradient of ``log_partition``), ``fisher`` (its Hessian) and ``mean_to_natural``
(Newton's method on the gradient).  A family that overrides one of them with a
closed form is found by inspecting its class, so a new closed form is tested
here as soon as it exists; each is compared with the base class's method
called explicitly on the contract cases' parameters.

Tolerances.  ``RTOL`` = 1e-10 relative (``tests/expfam/_compare.py``) at the
moderate parameters (for ``mean_to_natural``, those where the derived solve
converges: ``newton_moderate``), except the Fisher information of the families on logits
(Bernoulli, Categorical), where the derived route is the less accurate one:
autograd's Hessian of ``log(1 + sum_k exp(l_k))`` forms ``1 - p`` by
subtraction, losing ``eps / (1 - p) <= K eps exp(max |l|)`` relative for ``K``
classes (7e-10 at the logit 15 of the moderate Bernoulli cases); there the
tolerance is ``RTOL + 4 K eps exp(max |l|)``.  At the extremes ``EXTREME_RTOL``
= 1e-6, as in the contract's round trip; the derived ``mean_to_natural`` only
where the case says it converges there (``derived_extremes``; elsewhere
``tests/expfam/test_newton.py`` checks that it raises).
"""

import numpy as np
import pytest
from hypothesis import given, settings

from efvi import expfam
from efvi.expfam import Exponential, ExponentialFamily, InverseGamma, Poisson

from ._compare import case_of, floats, matrix_relative_error, relative_error

MAPS = ("natural_to_mean", "fisher", "mean_to_natural")
RTOL = 1e-10
EXTREME_RTOL = 1e-6
LOGIT_FAMILIES = ("bernoulli", "categorical")
_EPS = np.finfo(float).eps


def overrides(family, method):
    """Whether ``family`` (or a base class of it other than ExponentialFamily) defines ``method``."""
    return any(method in vars(base) for base in family.__mro__
               if base is not ExponentialFamily and issubclass(base, ExponentialFamily))


CLOSED_FORMS = [(name, method) for name in expfam.names() for method in MAPS if overrides(expfam.get(name), method)]


def derived(family, method, params):
    """The base class's (derived) ``method`` of ``family`` at ``params``."""
    return getattr(ExponentialFamily, method).__func__(family, params)


def _fisher_rtol(name, natural, rtol):
    """``rtol``, plus the rounding of the derived Fisher information for the families on logits (module docstring)."""
    if name not in LOGIT_FAMILIES:
        return rtol
    logits = np.abs(natural[0])
    if name == "categorical":
        classes = logits.shape[-1] + 1
        logits = np.max(logits, axis=-1)
    else:
        classes = 2
    return rtol + 4.0 * classes * _EPS * np.exp(logits)


def _error_and_tolerance(name, method, natural, rtol):
    """Per batch element: the closed form's error against the derived route at ``natural``, and its tolerance."""
    family = expfam.get(name)
    if method == "natural_to_mean":
        return relative_error(family, family.natural_to_mean(natural), derived(family, method, natural)), rtol
    if method == "fisher":
        error = matrix_relative_error(family.fisher(natural), derived(family, method, natural))
        return error, _fisher_rtol(name, natural, rtol)
    mean = family.natural_to_mean(natural)
    return relative_error(family, family.mean_to_natural(mean), derived(family, method, mean)), rtol


def test_the_families_have_closed_forms_to_test():
    assert {"gamma", "gaussian", "wishart"} <= {name for name, _ in CLOSED_FORMS}


@pytest.mark.parametrize("family", [Poisson, Exponential, InverseGamma])
def test_the_new_families_take_every_map_from_their_log_partition(family):
    assert [method for method in MAPS if overrides(family, method)] == []
    assert "log_partition" in vars(family) and "sufficient_stats" in vars(family)


@pytest.mark.parametrize("name, method", CLOSED_FORMS)
def test_closed_form_equals_the_derived_route_at_moderate_parameters(name, method):
    case = case_of(name)

    @settings(max_examples=15 if name != "normal_wishart" or method != "mean_to_natural" else 4, deadline=None)
    @given(case.newton_moderate if method == "mean_to_natural" else case.moderate)
    def check(natural):
        error, tolerance = _error_and_tolerance(name, method, floats(natural), RTOL)
        assert np.all(error <= tolerance), (error, tolerance)

    check()


@pytest.mark.parametrize("name, method", CLOSED_FORMS)
def test_closed_form_equals_the_derived_route_at_the_extremes(name, method):
    case = case_of(name)
    if method == "mean_to_natural" and not case.derived_extremes:
        pytest.skip(f"the derived mean_to_natural of {name} does not converge at its extremes (test_newton.py)")
    for natural in case.extreme:
        error, tolerance = _error_and_tolerance(name, method, floats(natural), EXTREME_RTOL)
        assert np.all(error <= tolerance), (error, tolerance)
