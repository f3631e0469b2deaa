"""Contract case for the Dirichlet family."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from efvi.expfam import Dirichlet

from . import FamilyCase, register_case


@st.composite
def _moderate(draw):
    """K in 2..5, concentrations 1e-2..1e3, log-uniform."""
    num = draw(st.integers(2, 5))
    batch = draw(st.sampled_from([(), (3,), (2, 2)]))
    log10_alpha = draw(arrays(float, batch + (num,), elements=st.floats(-2.0, 3.0)))
    return (10.0 ** log10_alpha - 1.0,)


def _extreme():
    """Concentrations 1e-3..1e4: all small, all large, and mixed, for K = 3 and K = 5."""
    three = np.array([
        [1e-3, 1e-3, 1e-3], [1e4, 1e4, 1e4], [1e-3, 1e4, 1.0], [1e4, 1e-3, 1e-3], [1e-3, 1e-3, 1e4],
    ])
    five = np.array([[1e-3, 1e-2, 1.0, 1e2, 1e4], [1e4, 1e4, 1e4, 1e4, 1e-3]])
    return [(three - 1.0,), (five - 1.0,)]


_EXAMPLES = [
    Dirichlet([[0.5, 2.0, 3.0], [4.0, 1.0, 0.8]]),
    Dirichlet([1.5, 2.5]),
]


def _per_distribution(dist, fn):
    """Apply ``fn(alpha, index)`` to each distribution of the batch (scipy's dirichlet does not broadcast)."""
    alpha = dist.concentration
    flat = alpha.reshape(-1, alpha.shape[-1])
    return np.stack([fn(a, j) for j, a in enumerate(flat)], axis=-1)


def _scipy_logpdf(dist, z):
    num = dist.concentration.shape[-1]
    rows = z.reshape(z.shape[0], -1, num)
    out = _per_distribution(dist, lambda a, j: stats.dirichlet.logpdf(rows[:, j].T, a))
    return out.reshape(z.shape[:-1])


def _scipy_entropy(dist):
    return _per_distribution(dist, lambda a, j: stats.dirichlet.entropy(a)).reshape(dist.batch_shape)


_INVALID = [
    (lambda: Dirichlet([1.0, -1.0]), "concentration"),
    (lambda: Dirichlet([1.0, 0.0]), "concentration"),
    (lambda: Dirichlet([1.0, np.nan]), "concentration"),
    (lambda: Dirichlet([1.0]), "concentration"),
    (lambda: Dirichlet(2.0), "concentration"),
    (lambda: Dirichlet.from_natural(([-1.5, 0.0],)), "natural"),
    (lambda: Dirichlet.from_natural(([0.0],)), "natural[0]"),
    (lambda: Dirichlet.from_natural(([0.0, np.nan],)), "natural[0]"),
    (lambda: Dirichlet.from_natural((0.0,)), "natural[0]"),
    (lambda: Dirichlet.from_mean_params(([-0.1, -0.1],)), "mean"),
    (lambda: Dirichlet.from_mean_params(([np.inf, -1.0],)), "mean[0]"),
]

register_case(FamilyCase(
    family=Dirichlet,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_EXAMPLES,
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
))
