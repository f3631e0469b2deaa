"""Contract case for the Poisson family (derived maps)."""

import numpy as np
from scipy import stats

from efvi.expfam import Poisson

from . import FamilyCase, register_case
from ._draws import log_uniform


_MODERATE = log_uniform([(-3.0, 3.0)], lambda rate: (np.log(rate),))
"""Rates 1e-3..1e3, log-uniform."""


def _extreme():
    """Rates 1e-100, 1e-8, 1e8 and 1e100."""
    return [(np.log([1e-100, 1e-8, 1e8, 1e100]),)]


_EXAMPLES = [
    Poisson([0.5, 3.0, 40.0]),
    Poisson(2.0),
]


def _scipy_logpdf(dist, z):
    return stats.poisson.logpmf(z, dist.rate)


def _scipy_entropy(dist):
    return stats.poisson.entropy(dist.rate)


_INVALID = [
    (lambda: Poisson(-1.0), "rate"),
    (lambda: Poisson(0.0), "rate"),
    (lambda: Poisson(np.nan), "rate"),
    (lambda: Poisson(np.inf), "rate"),
    (lambda: Poisson.from_natural(([np.nan],)), "natural[0]"),
    (lambda: Poisson.from_natural(([800.0],)), "natural"),
    (lambda: Poisson.from_natural(([0.0], [1.0])), "natural"),
    (lambda: Poisson.from_mean_params((0.0,)), "mean"),
    (lambda: Poisson.from_mean_params(([1.0, -2.0],)), "mean"),
    (lambda: Poisson.from_mean_params((np.nan,)), "mean[0]"),
]

register_case(FamilyCase(
    family=Poisson,
    moderate=_MODERATE,
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
