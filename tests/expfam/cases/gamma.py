"""Contract case for the Gamma family."""

import numpy as np
from scipy import stats

from efvi.expfam import Gamma

from . import FamilyCase, register_case
from ._draws import SHAPE_RATE_EXTREMES, log_uniform


def _natural(shape, rate):
    return np.asarray(shape, dtype=float) - 1.0, -np.asarray(rate, dtype=float)


_MODERATE = log_uniform([(-2.0, 3.0), (-2.0, 2.0)], _natural)
"""Shapes 1e-2..1e3 and rates 1e-2..1e2, log-uniform."""

_EXAMPLES = [
    Gamma([0.5, 2.0, 30.0], [1.0, 0.3, 5.0]),
    Gamma(3.0, 2.0),
]


def _scipy_logpdf(dist, z):
    return stats.gamma.logpdf(z, dist.shape, scale=1.0 / dist.rate)


def _scipy_entropy(dist):
    return stats.gamma.entropy(dist.shape, scale=1.0 / dist.rate)


_INVALID = [
    (lambda: Gamma(-1.0, 1.0), "shape"),
    (lambda: Gamma(0.0, 1.0), "shape"),
    (lambda: Gamma(1.0, -2.0), "rate"),
    (lambda: Gamma(1.0, 0.0), "rate"),
    (lambda: Gamma(np.nan, 1.0), "shape"),
    (lambda: Gamma(1.0, np.inf), "rate"),
    (lambda: Gamma([1.0, 2.0], [1.0, 2.0, 3.0]), "rate"),
    (lambda: Gamma.from_natural(([0.0], [1.0])), "natural"),
    (lambda: Gamma.from_natural(([-1.5], [-1.0])), "natural"),
    (lambda: Gamma.from_natural(([np.nan], [-1.0])), "natural[0]"),
    (lambda: Gamma.from_natural((np.zeros(2), -np.ones(3))), "natural[1]"),
    (lambda: Gamma.from_mean_params((1.0, 1.0)), "mean"),
    (lambda: Gamma.from_mean_params((0.0, -1.0)), "mean[1]"),
    (lambda: Gamma.from_mean_params((np.nan, 1.0)), "mean[0]"),
]

register_case(FamilyCase(
    family=Gamma,
    moderate=_MODERATE,
    extreme=[_natural(*SHAPE_RATE_EXTREMES)],
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
