"""Contract case for the Gamma family."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from efvi.expfam import Gamma

from . import FamilyCase, register_case

_BATCHES = [(), (3,), (2, 2)]


def _natural(shape, rate):
    return np.asarray(shape, dtype=float) - 1.0, -np.asarray(rate, dtype=float)


@st.composite
def _moderate(draw):
    """Shapes 1e-2..1e3 and rates 1e-2..1e2, log-uniform."""
    batch = draw(st.sampled_from(_BATCHES))
    log10_shape = draw(arrays(float, batch, elements=st.floats(-2.0, 3.0)))
    log10_rate = draw(arrays(float, batch, elements=st.floats(-2.0, 2.0)))
    return _natural(10.0 ** log10_shape, 10.0 ** log10_rate)


def _extreme():
    """Shapes 1e-3 and 1e6, each with rates 1e-3, 1 and 1e3."""
    shape = np.repeat([1e-3, 1e6], 3)
    rate = np.tile([1e-3, 1.0, 1e3], 2)
    return [_natural(shape, rate)]


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
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
