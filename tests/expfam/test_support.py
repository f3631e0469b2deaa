"""``logpdf`` outside the support is -inf, without warnings (as scipy.stats); NaN stays NaN.

Every registered family has an entry below: a distribution, draws outside its
support (empty for the Gaussians, whose support is everything) and one draw
inside, whose NaN-poisoned copy must give NaN.
"""

import warnings

import numpy as np
import pytest
from scipy import stats

from efvi import expfam
from efvi.expfam import (Bernoulli, Beta, Categorical, DiagonalGaussian, Dirichlet, Exponential, Gamma, Gaussian,
                         InverseGamma, NormalWishart, Poisson, Wishart)

_NOT_SYMMETRIC = [[2.0, 0.5], [0.0, 2.0]]
_NOT_PD = [[1.0, 2.0], [2.0, 1.0]]

SUPPORT = {
    "bernoulli": (Bernoulli(0.3), [2.0, 0.5, -1.0, np.inf], 1.0),
    "beta": (Beta(2.0, 3.0), [1.5, 0.0, 1.0, -0.2], 0.4),
    "categorical": (Categorical([0.2, 0.3, 0.5]), [3, -1, 0.5, 2.5], 2),
    "diagonal_gaussian": (DiagonalGaussian.from_mean_var([0.0, 1.0], [1.0, 2.0]), [], [0.5, 0.5]),
    "dirichlet": (Dirichlet([2.0, 2.0, 3.0]), [[0.9, 0.9, -0.8], [0.5, 0.5, 0.5], [0.0, 0.5, 0.5]], [0.2, 0.3, 0.5]),
    "exponential": (Exponential(2.0), [-1.0, -1e-300, np.inf], 0.0),
    "gamma": (Gamma(2.0, 1.0), [-1.0, 0.0, np.inf], 1.5),
    "gaussian": (Gaussian.from_mean_cov([0.0, 1.0], np.eye(2)), [], [0.5, 0.5]),
    "inverse_gamma": (InverseGamma(3.0, 2.0), [-1.0, 0.0, np.inf], 0.5),
    "normal_wishart": (NormalWishart([0.0, 1.0], 2.0, 4.0, np.eye(2)),
                       [([0.0, 0.0], _NOT_PD), ([0.0, 0.0], _NOT_SYMMETRIC), ([0.0, 0.0], -np.eye(2))],
                       ([0.5, 0.5], np.eye(2))),
    "poisson": (Poisson(3.0), [-1.0, 0.5, 2.5, np.inf], 4.0),
    "wishart": (Wishart(4.0, np.eye(2)), [_NOT_PD, _NOT_SYMMETRIC, -np.eye(2), np.zeros((2, 2))], np.eye(2)),
}


def test_every_registered_family_has_a_support_entry():
    assert sorted(SUPPORT) == expfam.names()


def _stack(q, draws):
    if type(q).draw_parts:
        return tuple(np.array([d[i] for d in draws], dtype=float) for i in range(len(type(q).draw_parts)))
    return np.array(draws, dtype=float)


def _poisoned(q, inside):
    """``inside`` with its first entry replaced by NaN."""
    parts = [np.array(p, dtype=float) for p in (inside if type(q).draw_parts else (inside,))]
    parts[0].flat[0] = np.nan
    return tuple(parts) if type(q).draw_parts else parts[0]


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_logpdf_outside_the_support_is_minus_infinity_and_nan_stays_nan(name):
    q, outside, inside = SUPPORT[name]
    draws = _stack(q, list(outside) + [inside, inside])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = q.logpdf(draws)
        poisoned = q.logpdf(_poisoned(q, inside))
    assert out.shape == (len(outside) + 2,)
    assert np.all(out[:len(outside)] == -np.inf)
    assert np.all(np.isfinite(out[len(outside):]))
    np.testing.assert_allclose(out[-1], q.logpdf(inside), rtol=1e-14)
    assert np.isnan(poisoned)


def test_scalar_supports_match_scipy():
    grid = np.array([-1.0, 0.0, 0.5, 1.0, 1.5, 2.0])
    checks = [
        (Bernoulli(0.3), stats.bernoulli(0.3).logpmf(grid)),
        (Beta(2.0, 3.0), stats.beta(2.0, 3.0).logpdf(grid)),
        (Gamma(2.0, 1.0), stats.gamma(2.0).logpdf(grid)),
        (Exponential(2.0), stats.expon(scale=0.5).logpdf(grid)),
        (InverseGamma(3.0, 2.0), stats.invgamma(3.0, scale=2.0).logpdf(grid)),
        (Poisson(3.0), stats.poisson(3.0).logpmf(grid)),
        (Categorical([0.2, 0.3, 0.5]), stats.rv_discrete(values=([0, 1, 2], [0.2, 0.3, 0.5])).logpmf(grid)),
    ]
    for q, reference in checks:
        np.testing.assert_allclose(q.logpdf(grid), reference, rtol=1e-13)


def test_wishart_support_accepts_the_rounding_of_a_symmetric_product():
    """A draw ``F F^T`` need not be bitwise symmetric; ``logpdf`` still takes it."""
    rng = np.random.default_rng(0)
    factor = rng.standard_normal((50, 3, 3))
    draws = factor @ np.swapaxes(factor, -1, -2) + 1e-3 * np.eye(3)
    q = Wishart(5.0, np.eye(3))
    assert np.all(np.isfinite(q.logpdf(draws)))
    assert np.all(np.isfinite(q.logpdf(q.sample(rng, 200))))
