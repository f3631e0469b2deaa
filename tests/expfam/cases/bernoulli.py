"""Contract case for the Bernoulli family."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from efvi.expfam import Bernoulli

from . import FamilyCase, register_case


@st.composite
def _moderate(draw):
    """Logits within +-15."""
    batch = draw(st.sampled_from([(), (3,), (2, 2)]))
    return (draw(arrays(float, batch, elements=st.floats(-15.0, 15.0))),)


def _extreme():
    """Logits +-15 and +-20 (p within 2e-9 of 0 or 1)."""
    return [(np.array([-20.0, -15.0, 15.0, 20.0]),)]


_EXAMPLES = [
    Bernoulli([0.2, 0.5, 0.9]),
    Bernoulli.from_logits([[-2.0, 3.0]]),
]


def _scipy_logpdf(dist, z):
    return stats.bernoulli.logpmf(z, dist.probs)


def _scipy_entropy(dist):
    return stats.bernoulli.entropy(dist.probs)


_INVALID = [
    (lambda: Bernoulli(1.5), "p must"),
    (lambda: Bernoulli(-0.1), "p must"),
    (lambda: Bernoulli(0.0), "p must"),
    (lambda: Bernoulli(1.0), "p must"),
    (lambda: Bernoulli(np.nan), "p must"),
    (lambda: Bernoulli.from_logits(np.nan), "logits"),
    (lambda: Bernoulli.from_natural(([np.inf],)), "natural[0]"),
    (lambda: Bernoulli.from_natural(([0.0], [1.0])), "natural"),
    (lambda: Bernoulli.from_mean_params((1.2,)), "mean[0]"),
    (lambda: Bernoulli.from_mean_params((0.0,)), "mean[0]"),
]

register_case(FamilyCase(
    family=Bernoulli,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
