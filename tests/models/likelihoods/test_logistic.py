"""The Bernoulli-logit likelihood's exact rule for wide Gaussians against an independent brute-force integral.

The reference integrates ``ell``, ``ell'`` and ``ell'' / 2`` (Bonnet's and Price's theorems) against
N(m, v) by the trapezoidal rule on a uniform grid over m +- 40 sqrt(v), with step
min(sqrt(v) / 16, 0.1): the integrands are analytic in the strip |Im a| < pi, so the rule's error is
exponentially small in 1 / step (far below rounding), and it agrees with mpmath to about 1e-14.
It never splits ``ell`` as the rule does.
"""

import numpy as np
import pytest
from scipy import special

from efvi.models.likelihoods import BernoulliLogit, _kernels
from efvi.models.likelihoods._logistic import WIDE_EDGES, WIDE_FROM
from efvi.models.likelihoods._quadrature import PRICE_BELOW, ladder

MEAN = np.linspace(-30.0, 30.0, 25)
# both sides of every edge of the rule's ladder, then up to v = 1e4
WIDE_SDS = [WIDE_FROM * (1 + 1e-9), *(edge * (1 + side) for edge in WIDE_EDGES for side in (-1e-9, 1e-9)), 40.0, 100.0]


def _reference(mean, var, y):
    """E[log p(y | a)], dE/dm, dE/dv for a ~ N(mean_j, var), every j, by the trapezoidal rule."""
    scale = np.sqrt(var)
    step = min(scale / 16.0, 0.1)
    half = np.ceil(40.0 * scale / step)
    offset = step * np.arange(-half, half + 1)  # not np.arange(lo, hi, step): its spacing is rounded
    density = np.exp(-0.5 * (offset / scale) ** 2) * step / (scale * np.sqrt(2.0 * np.pi))
    a = np.asarray(mean)[:, None] + offset
    ell = -(y * np.logaddexp(0.0, -a) + (1.0 - y) * np.logaddexp(0.0, a))
    d1 = y * special.expit(-a) - (1.0 - y) * special.expit(a)
    d2 = -special.expit(a) * special.expit(-a)
    return ell @ density, d1 @ density, 0.5 * (d2 @ density)


def _errors(lik, mean, var, y):
    ours = lik.variational_expectations(mean, np.full_like(mean, var), np.full_like(mean, y))
    return np.array([np.max(np.abs(o - r)) for o, r in zip(ours, _reference(mean, var, y))])


@pytest.mark.parametrize("y", [0.0, 1.0])
def test_bernoulli_wide_rule_matches_brute_force(y):
    """Within 2e-12 of the reference for E, dE/dm and dE/dv, at both sides of every rung's edge."""
    lik = BernoulliLogit()
    worst = np.max([_errors(lik, MEAN, sd**2, y) for sd in WIDE_SDS], axis=0)
    assert np.all(worst <= 2e-12), worst


def test_whole_variance_range_matches_brute_force():
    """From v = 1e-8 to 1e4: the ladder's accuracy, 1e-11 per point (derivatives on Gauss-Hermite rungs:
    1e-10, as in test_quadrature), and the rule for wide Gaussians 1e-11 for all three."""
    lik = BernoulliLogit()
    mean = np.linspace(-30.0, 30.0, 13)
    for var in np.logspace(-8.0, 4.0, 49):
        tolerance = (1e-11, 1e-11, 1e-11) if np.sqrt(var) > WIDE_FROM else (1e-11, 1e-10, 1e-10)
        for y in (0.0, 1.0):
            errors = _errors(lik, mean, var, y)
            assert np.all(errors <= tolerance), (var, y, errors)


def test_wide_rule_derivatives_are_those_of_its_value():
    """dE/dm and dE/dv are the exact derivatives of the rule's E (central differences inside one rung)."""
    lik = BernoulliLogit()
    mean = np.linspace(-8.0, 8.0, 17)
    y = (np.arange(17) % 2).astype(float)
    h = 1e-5

    def value(mean, var):
        return lik.variational_expectations(mean, var, y)[0]

    for sd in (1.26, 1.7, 2.3, 4.0, 8.0):
        var = np.full(17, sd**2)
        _, d_mean, d_var = lik.variational_expectations(mean, var, y)
        np.testing.assert_allclose(d_mean, (value(mean + h, var) - value(mean - h, var)) / (2 * h), rtol=0, atol=1e-8)
        np.testing.assert_allclose(d_var, (value(mean, var + h) - value(mean, var - h)) / (2 * h), rtol=0, atol=1e-8)


def test_fixed_n_points_is_plain_gauss_hermite():
    """A fixed rule turns the rule for wide Gaussians off: the result is that Gauss-Hermite rule's."""
    lik = BernoulliLogit(n_points=20)
    mean, var, y = np.linspace(-3.0, 3.0, 7), np.full(7, 9.0), np.ones(7)
    fixed = lik._quadrature_expectations(mean, var, y)
    gauss_hermite = _kernels._gh_expectations(lik._log_lik, lik._log_base, mean, var, y, lik._per_point(),
                                              lik._params(), *ladder(np.pi, 20), PRICE_BELOW * np.pi)
    for a, b in zip(fixed, gauss_hermite):
        np.testing.assert_array_equal(a, b)
    adaptive = BernoulliLogit()._quadrature_expectations(mean, var, y)
    assert np.max(np.abs(fixed[0] - adaptive[0])) > 1e-6  # 20 points are far off at sqrt(v) = 3


def test_missing_observations_in_the_wide_rule_give_exact_zeros():
    lik = BernoulliLogit()
    mean, var = np.linspace(-5.0, 5.0, 6), np.full(6, 16.0)
    y = np.array([1.0, np.nan, 0.0, 1.0, np.nan, 0.0])
    missing = np.isnan(y)
    full = lik.variational_expectations(mean, var, np.nan_to_num(y))
    for with_nan, without in zip(lik.variational_expectations(mean, var, y), full):
        assert np.all(with_nan[missing] == 0.0)
        np.testing.assert_array_equal(with_nan[~missing], without[~missing])
