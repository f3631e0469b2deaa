"""Contract case for the diagonal Gaussian."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import norm

from efvi.expfam import DiagonalGaussian

from . import FamilyCase, register_case


def _natural(mean, var):
    return mean / var, -0.5 / var


@st.composite
def _moderate(draw):
    """D in 1..4, variances 1e-3..1e3, means within 10 standard deviations of 0."""
    dim = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,), (3,), (2, 2)]))
    log10_var = draw(arrays(float, batch + (dim,), elements=st.floats(-3.0, 3.0)))
    offsets = draw(arrays(float, batch + (dim,), elements=st.floats(-10.0, 10.0)))
    var = 10.0 ** log10_var
    return _natural(offsets * np.sqrt(var), var)


def _extreme():
    """Variances 1e-10 and 1e10, means up to 100 standard deviations from 0."""
    var = np.array([[1e-10, 1e10, 1.0], [1e10, 1e-10, 1e-10]])
    offsets = np.array([[100.0, -100.0, 0.0], [0.0, 3.0, -100.0]])
    return [_natural(offsets * np.sqrt(var), var)]


_EXAMPLES = [
    DiagonalGaussian.from_mean_var([[0.5, -1.0, 2.0], [0.0, 3.0, -0.2]], [[1.0, 0.2, 4.0], [0.5, 2.0, 0.1]]),
    DiagonalGaussian.from_mean_var([1.5], [0.3]),
]


def _scipy_logpdf(dist, z):
    return np.sum(norm(dist.mean, np.sqrt(dist.var)).logpdf(z), axis=-1)


def _scipy_entropy(dist):
    return np.sum(norm(dist.mean, np.sqrt(dist.var)).entropy(), axis=-1)


_INVALID = [
    (lambda: DiagonalGaussian.from_mean_var([0.0, 1.0], [1.0, -1.0]), "var"),
    (lambda: DiagonalGaussian.from_mean_var([0.0, 1.0], [1.0, 0.0]), "var"),
    (lambda: DiagonalGaussian.from_mean_var([0.0, np.nan], [1.0, 1.0]), "mean"),
    (lambda: DiagonalGaussian.from_mean_var([0.0, 1.0], [1.0, np.inf]), "var"),
    (lambda: DiagonalGaussian.from_mean_var([0.0, 1.0, 2.0], [1.0, 1.0]), "var"),
    (lambda: DiagonalGaussian.from_mean_var(0.0, 1.0), "mean"),
    (lambda: DiagonalGaussian.from_natural(([0.0, 1.0], [-1.0, 0.5])), "natural[1]"),
    (lambda: DiagonalGaussian.from_natural(([0.0, 1.0], [-1.0, -1.0, -1.0])), "natural[1]"),
    (lambda: DiagonalGaussian.from_mean_params(([0.0, 2.0], [1.0, 1.0])), "mean[1]"),
]

register_case(FamilyCase(
    family=DiagonalGaussian,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
