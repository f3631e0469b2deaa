"""Contract case for the categorical family."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from efvi.expfam import Categorical

from . import FamilyCase, register_case


@st.composite
def _moderate(draw):
    """K in 2..5, logits relative to the last class within +-15."""
    num = draw(st.integers(2, 5))
    batch = draw(st.sampled_from([(), (3,), (2, 2)]))
    return (draw(arrays(float, batch + (num - 1,), elements=st.floats(-15.0, 15.0))),)


def _extreme():
    """Logits +-15 and 20 against the reference class (K = 3)."""
    return [(np.array([[15.0, -15.0], [-15.0, -15.0], [15.0, 15.0], [0.0, 20.0], [-20.0, 15.0]]),)]


_EXAMPLES = [
    Categorical([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]),
    Categorical.from_logits([0.0, 1.0, -1.0, 2.0]),
]


def _one_hot(dist, z):
    return (np.asarray(z)[..., None] == np.arange(dist.num_classes)).astype(int)


def _scipy_logpdf(dist, z):
    return stats.multinomial.logpmf(_one_hot(dist, z), 1, dist.probs)


def _scipy_entropy(dist):
    return stats.multinomial.entropy(1, dist.probs)


_INVALID = [
    (lambda: Categorical([0.5, 0.6]), "probs"),
    (lambda: Categorical([1.2, -0.2]), "probs"),
    (lambda: Categorical([0.0, 1.0]), "probs"),
    (lambda: Categorical([0.5, np.nan]), "probs"),
    (lambda: Categorical([1.0]), "probs"),
    (lambda: Categorical.from_logits([np.nan, 0.0]), "logits"),
    (lambda: Categorical.from_logits(1.0), "logits"),
    (lambda: Categorical.from_natural(([np.inf],)), "natural[0]"),
    (lambda: Categorical.from_natural((1.0,)), "natural[0]"),
    (lambda: Categorical.from_mean_params(([0.6, 0.5],)), "mean"),
    (lambda: Categorical.sufficient_stats([2], 2), "z"),
    (lambda: Categorical.sufficient_stats([0.5], 2), "z"),
    (lambda: Categorical([[0.2, 0.8], [0.5, 0.5]]).logpdf([0, 1, 1]), "z"),
]

register_case(FamilyCase(
    family=Categorical,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
    # the mean parameters hold p_0..p_{K-2}; p_last = 1 - sum p has absolute error ~K eps, so
    # log p_last is off by ~K eps / p_last <= 5 * 2.2e-16 * 4 e^15 = 1.4e-8 when every logit is +15
    # (K = 5), against max|logit| >= 13 there: a relative bound of about 1e-9
    mean_to_natural_rtol=2e-9,
))
