"""Contract case for the Exponential family (derived maps)."""

import numpy as np
from scipy import stats

from efvi.expfam import Exponential

from . import FamilyCase, register_case
from ._draws import log_uniform


_MODERATE = log_uniform([(-3.0, 3.0)], lambda rate: (-rate,))
"""Rates 1e-3..1e3, log-uniform."""


def _extreme():
    """Rates 1e-12, 1e-4, 1e4 and 1e100.

    Not 1e-100: from its start at rate 1, Newton's method approaches the
    boundary ``lambda = 0`` by at most halving the distance per iteration (the
    full step leaves the natural parameter space), so a rate ``r`` takes about
    ``log2(1 / r)`` iterations, more than ``_newton.MAX_ITER`` below about 1e-25.
    """
    return [(-np.array([1e-12, 1e-4, 1e4, 1e100]),)]


_EXAMPLES = [
    Exponential([0.5, 2.0, 30.0]),
    Exponential(3.0),
]


def _scipy_logpdf(dist, z):
    return stats.expon.logpdf(z, scale=1.0 / dist.rate)


def _scipy_entropy(dist):
    return stats.expon.entropy(scale=1.0 / dist.rate)


_INVALID = [
    (lambda: Exponential(-1.0), "rate"),
    (lambda: Exponential(0.0), "rate"),
    (lambda: Exponential(np.nan), "rate"),
    (lambda: Exponential([1.0, np.inf]), "rate"),
    (lambda: Exponential.from_natural(([1.0],)), "natural"),
    (lambda: Exponential.from_natural(([np.nan],)), "natural[0]"),
    (lambda: Exponential.from_natural(([-1.0], [-1.0])), "natural"),
    (lambda: Exponential.from_mean_params((-1.0,)), "mean"),
    (lambda: Exponential.from_mean_params((np.inf,)), "mean[0]"),
]

register_case(FamilyCase(
    family=Exponential,
    moderate=_MODERATE,
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
