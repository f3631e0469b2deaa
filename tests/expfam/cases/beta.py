"""Contract case for the Beta family."""

import numpy as np
from scipy import stats

from efvi.expfam import Beta

from . import FamilyCase, register_case
from ._draws import log_uniform


_MODERATE = log_uniform([(-2.0, 3.0), (-2.0, 3.0)], lambda a, b: (a - 1.0, b - 1.0))
"""Both shapes 1e-2..1e3, log-uniform."""


def _extreme():
    """Shapes 1e-3 and 1e4 in every combination, and 1 against each."""
    a = np.array([1e-3, 1e-3, 1e4, 1e4, 1.0, 1.0, 1e-3, 1e4])
    b = np.array([1e-3, 1e4, 1e-3, 1e4, 1e-3, 1e4, 1.0, 1.0])
    return [(a - 1.0, b - 1.0)]


_EXAMPLES = [
    Beta([0.5, 2.0, 5.0], [0.7, 3.0, 1.5]),
    Beta(4.0, 0.9),
]


def _scipy_logpdf(dist, z):
    return stats.beta.logpdf(z, dist.a, dist.b)


def _scipy_entropy(dist):
    return stats.beta.entropy(dist.a, dist.b)


_INVALID = [
    (lambda: Beta(-1.0, 1.0), "a must"),
    (lambda: Beta(1.0, 0.0), "b must"),
    (lambda: Beta(np.nan, 1.0), "a must"),
    (lambda: Beta(1.0, np.inf), "b must"),
    (lambda: Beta([1.0, 2.0], [1.0, 2.0, 3.0]), "b of shape"),
    (lambda: Beta.from_natural(([-1.5], [0.0])), "natural"),
    (lambda: Beta.from_natural(([0.0], [np.nan])), "natural[1]"),
    (lambda: Beta.from_natural((np.zeros(2), np.zeros(3))), "natural[1]"),
    (lambda: Beta.from_mean_params((-0.1, -0.1)), "mean"),
    (lambda: Beta.from_mean_params((np.nan, -1.0)), "mean[0]"),
]

register_case(FamilyCase(
    family=Beta,
    moderate=_MODERATE,
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
