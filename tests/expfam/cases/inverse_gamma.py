"""Contract case for the inverse Gamma family (derived maps)."""

import numpy as np
from scipy import stats

from efvi.expfam import InverseGamma

from . import FamilyCase, register_case
from ._draws import SHAPE_RATE_EXTREMES, log_uniform


def _natural(shape, scale):
    return -(np.asarray(shape, dtype=float) + 1.0), -np.asarray(scale, dtype=float)


_MODERATE = log_uniform([(-2.0, 3.0), (-2.0, 2.0)], _natural)
"""Shapes 1e-2..1e3 and scales 1e-2..1e2, log-uniform."""

_EXAMPLES = [
    InverseGamma([5.0, 7.0, 30.0], [1.0, 0.3, 5.0]),
    InverseGamma(6.0, 2.0),
]


def _scipy_logpdf(dist, z):
    return stats.invgamma.logpdf(z, dist.shape, scale=dist.scale)


def _scipy_entropy(dist):
    return stats.invgamma.entropy(dist.shape, scale=dist.scale)


_INVALID = [
    (lambda: InverseGamma(-1.0, 1.0), "shape"),
    (lambda: InverseGamma(0.0, 1.0), "shape"),
    (lambda: InverseGamma(1e-17, 1.0), "shape"),
    (lambda: InverseGamma(1.0, -2.0), "scale"),
    (lambda: InverseGamma(1.0, np.nan), "scale"),
    (lambda: InverseGamma([1.0, 2.0], [1.0, 2.0, 3.0]), "scale"),
    (lambda: InverseGamma.from_natural(([-0.5], [-1.0])), "natural"),
    (lambda: InverseGamma.from_natural(([-2.0], [1.0])), "natural"),
    (lambda: InverseGamma.from_natural(([np.nan], [-1.0])), "natural[0]"),
    (lambda: InverseGamma.from_natural((-2.0 * np.ones(2), -np.ones(3))), "natural[1]"),
    (lambda: InverseGamma.from_mean_params((-1.0, 1.0)), "mean"),
    (lambda: InverseGamma.from_mean_params((0.0, -1.0)), "mean"),
    (lambda: InverseGamma.from_mean_params((np.nan, 1.0)), "mean[0]"),
]

register_case(FamilyCase(
    family=InverseGamma,
    moderate=_MODERATE,
    extreme=[_natural(*SHAPE_RATE_EXTREMES)],
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
