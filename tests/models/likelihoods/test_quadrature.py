"""Gauss-Hermite rules and the adaptive log predictive density against independent integrals."""

import numpy as np
import pytest
from scipy import integrate, special, stats

from efvi.models import likelihoods as L
from efvi.models.likelihoods._quadrature import MAX_N_POINTS, gauss_hermite, weighted_gauss_rules


@pytest.mark.parametrize("n_points", [1, 2, 7, 20, 100])
def test_rule_integrates_gaussian_moments_exactly(n_points):
    nodes, weights = gauss_hermite(n_points)
    assert nodes.shape == weights.shape == (n_points,)
    assert np.all(weights > 0)
    for degree in range(2 * n_points):
        exact = np.prod(np.arange(degree - 1, 0, -2, dtype=float)) if degree % 2 == 0 else 0.0
        scale = weights @ np.abs(nodes) ** degree  # rounding is relative to the sum of |terms|
        assert abs(weights @ nodes**degree - exact) <= 1e-13 * scale


def test_rule_arrays_are_private_copies():
    nodes, weights = gauss_hermite(5)
    nodes[:] = 0.0
    assert np.any(gauss_hermite(5)[0] != 0.0)


@pytest.mark.parametrize("bad", [0, -3, MAX_N_POINTS + 1, 2.5, "20"])
def test_n_points_is_validated(bad):
    with pytest.raises(ValueError, match="n_points"):
        gauss_hermite(bad)


def _log_integral(logpdf, m, v, lower, upper, peak):
    value, _ = integrate.quad(lambda a: np.exp(logpdf(a) + stats.norm.logpdf(a, m, np.sqrt(v))),
                              lower, upper, points=[peak], limit=500, epsabs=0.0, epsrel=1e-13)
    return np.log(value)


NARROW = [  # the likelihood is much narrower than N(m, v): plain Gauss-Hermite would need many nodes
    (L.Poisson(), 500.0, 5.0, 4.0, lambda a: stats.poisson.logpmf(500, np.exp(a)), np.log(500)),
    (L.Poisson(), 1e4, 0.0, 1.0, lambda a: stats.poisson.logpmf(1e4, np.exp(a)), np.log(1e4)),
    (L.NegativeBinomial(50.0), 2000.0, 2.0, 3.0,
     lambda a: stats.nbinom.logpmf(2000, 50, special.expit(np.log(50) - a)), np.log(2000)),
    (L.GammaLogLink(200.0), 5.0, 0.0, 2.0, lambda a: stats.gamma.logpdf(5, 200, scale=np.exp(a) / 200), np.log(5)),
    (L.BinomialLogit(1000), 900.0, 0.0, 9.0, lambda a: stats.binom.logpmf(900, 1000, special.expit(a)), np.log(9)),
    (L.BernoulliProbit(), 0.0, 40.0, 1.0, lambda a: special.log_ndtr(-a), 20.0),
    (L.StudentT(3.0, 0.5), 10.0, 0.0, 0.1, lambda a: stats.t.logpdf(10, 3, a, 0.5), 0.0),
]


@pytest.mark.parametrize("lik, y, m, v, logpdf, peak", NARROW, ids=lambda x: type(x).__name__ if isinstance(x, L.Likelihood) else "")
def test_adaptive_log_predictive_matches_adaptive_integration(lik, y, m, v, logpdf, peak):
    expected = _log_integral(logpdf, m, v, m - 40 * np.sqrt(v), m + 40 * np.sqrt(v), peak)
    for n_points in (20, 100):
        value = lik._quadrature_predict_log_density(np.array([m]), np.array([v]), np.array([y]), n_points)[0]
        assert abs(value - expected) < 1e-10 * (1 + abs(expected)), (n_points, value, expected)


def test_zero_variance_gives_the_log_density():
    lik = L.Poisson()
    y = np.array([0.0, 3.0, 1e6])
    m = np.array([-1.0, 1.0, np.log(1e6)])
    expected = stats.poisson.logpmf(y, np.exp(m))
    # log p cancels terms of size y log(rate) + rate + log(y!): both routes round at that scale
    scale = np.abs(y * m) + np.exp(m) + special.gammaln(y + 1)
    value = lik._quadrature_predict_log_density(m, np.zeros(3), y)
    assert np.all(np.abs(value - expected) <= 8 * np.finfo(float).eps * (1 + scale))


@pytest.mark.parametrize("sd_over_d", [0.001, 0.008, 0.0085, 0.02, 0.024, 0.03, 0.06, 0.1, 0.14, 0.2, 0.27, 0.29, 0.32,
                                       0.35, 0.38, 0.5, 1.0])
def test_adaptive_ladder_matches_a_160_point_rule_on_every_rung(sd_over_d):
    """At every rung's edge the logistic expectation is within 1e-11 of a fine rule, its derivatives within 1e-10
    (the edges bound the value's error; the derivatives' is up to ~4e-11 there)."""
    lik = L.BernoulliLogit()
    m = np.linspace(-6.0, 6.0, 97)
    v = np.full_like(m, (sd_over_d * lik.strip_half_width) ** 2)
    for y in (0.0, 1.0):
        labels = np.full_like(m, y)
        adaptive = lik.variational_expectations(m, v, labels)
        fine = lik.variational_expectations(m, v, labels, n_points=160)
        scale = 1.0 if sd_over_d <= 0.38 else 1e4 * max(1.0, sd_over_d) ** 2
        for a, b, tol in zip(adaptive, fine, (1e-11, 1e-10, 1e-10)):
            np.testing.assert_allclose(a, b, rtol=0, atol=tol * scale)


def test_weighted_gauss_rules_are_gauss_rules():
    """Weight 1 gives Gauss-Legendre; the logistic weight's rules integrate polynomials of degree < 2n exactly."""
    sizes = (3, 8, 20)
    nodes, weights = weighted_gauss_rules(np.ones_like, 4, sizes)
    for r, size in enumerate(sizes):
        x, w = np.polynomial.legendre.leggauss(size)
        np.testing.assert_allclose(nodes[r, :size], 2.0 + 2.0 * x, rtol=0, atol=1e-13)
        np.testing.assert_allclose(weights[r, :size], 2.0 * w, rtol=0, atol=1e-14)
        assert np.all(nodes[r, size:] == 0.0) and np.all(weights[r, size:] == 0.0)

    def weight(t):
        return np.log1p(np.exp(-t))

    sizes = (4, 16, 48)
    nodes, weights = weighted_gauss_rules(weight, 40, sizes)
    for r, size in enumerate(sizes):
        for degree in range(0, 2 * size, 5):
            poly = np.polynomial.Legendre.basis(degree, domain=[0.0, 40.0])
            exact = sum(integrate.quad(lambda t: weight(t) * poly(t), lo, lo + 2.0, epsabs=1e-14, epsrel=1e-11)[0]
                        for lo in range(0, 40, 2))
            assert abs(weights[r, :size] @ poly(nodes[r, :size]) - exact) < 1e-13, (size, degree)
    with pytest.raises(ValueError, match="sizes"):
        weighted_gauss_rules(weight, 40, (65,))
