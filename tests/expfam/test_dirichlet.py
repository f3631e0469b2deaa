"""Dirichlet- and Beta-specific checks: the stable KL and entropy against mpmath, tiny
concentrations, the support."""

import warnings

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from efvi.expfam import Beta, Dirichlet, ExponentialFamily

DIGITS = 60
EPS = np.finfo(float).eps


def _exact_kl(shifted_q, shifted_p):
    """KL(Dir(alpha) || Dir(beta)) in mpmath from ``alpha - 1`` and ``beta - 1`` (no rounding of ``alpha``)."""
    with mpmath.workdps(DIGITS):
        alpha = [mpmath.mpf(float(x)) + 1 for x in shifted_q]
        beta = [mpmath.mpf(float(x)) + 1 for x in shifted_p]
        alpha0, beta0 = mpmath.fsum(alpha), mpmath.fsum(beta)
        return float(mpmath.loggamma(alpha0) - mpmath.loggamma(beta0)
                     + mpmath.fsum(mpmath.loggamma(b) - mpmath.loggamma(a) for a, b in zip(alpha, beta))
                     + mpmath.fsum((a - b) * (mpmath.digamma(a) - mpmath.digamma(alpha0)) for a, b in zip(alpha, beta)))


def _exact_entropy(shifted):
    with mpmath.workdps(DIGITS):
        alpha = [mpmath.mpf(float(x)) + 1 for x in shifted]
        alpha0 = mpmath.fsum(alpha)
        return float(mpmath.fsum(mpmath.loggamma(a) - (a - 1) * mpmath.digamma(a) for a in alpha)
                     - mpmath.loggamma(alpha0) + (alpha0 - len(alpha)) * mpmath.digamma(alpha0))


def _pairs(seed, count, log10_max_total):
    """Concentration pairs, K = 2..5: independent small changes, a common relative change (where
    the terms of the textbook formula cancel), a nearly common one, and unrelated pairs."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        num = int(rng.integers(2, 6))
        alpha = 10.0 ** rng.uniform(-3.0, 0.0, num)
        alpha *= 10.0 ** rng.uniform(-5.0, log10_max_total) / alpha.sum()
        change = 10.0 ** rng.uniform(-12.0, -1.0)
        kind = i % 4
        if kind == 0:
            beta = alpha * (1 + change * rng.standard_normal(num))
        elif kind == 1:
            beta = alpha * (1 + change)
        elif kind == 2:
            beta = alpha * (1 + change * (1 + 1e-3 * rng.standard_normal(num)))
        else:
            beta = alpha * np.exp(2.0 * rng.standard_normal(num))
        yield Dirichlet(alpha), Dirichlet(beta)


def test_kl_matches_mpmath_in_the_concentrated_regime():
    """Relative error below 1e-13 + eps sqrt(alpha_0); the generic route loses up to 0.36 relative."""
    for q, p in _pairs(0, 300, 10.0):
        exact = _exact_kl(q.natural[0], p.natural[0])
        total = float(q.concentration.sum())
        error = abs(float(q.kl(p)) - exact)
        assert error <= (1e-13 + EPS * np.sqrt(total)) * exact, (q.concentration, p.concentration)


def _vague_prior_pairs(seed, count):
    """Posteriors ``beta + n`` (counts 1e-6..1e9) against priors ``beta`` of 1e-6..10 (equal entries, or
    not in one of three), K = 2..5."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        num = int(rng.integers(2, 6))
        prior = np.exp(rng.uniform(np.log(1e-6), np.log(10.0), num if i % 3 == 0 else 1)) * np.ones(num)
        yield Dirichlet(prior + 10.0 ** rng.uniform(-6.0, 9.0, num)), Dirichlet(prior)


def test_kl_of_posteriors_against_vague_priors_matches_mpmath():
    """The regime of a variational fit (2e-14 seen on 600 pairs).  Before the direct route of
    efvi.expfam._bregman and ratio_gap, up to 2.8e-8 (2.6e-11 for counts 1e8 [.37, .26, .2, .17] against
    Dirichlet(0.1))."""
    prior = Dirichlet(np.full(4, 0.1))
    for scale in [1e2, 1e4, 1e6, 1e8]:
        q = Dirichlet(0.1 + scale * np.array([0.37, 0.26, 0.2, 0.17]))
        np.testing.assert_allclose(q.kl(prior), _exact_kl(q.natural[0], prior.natural[0]), rtol=1e-15)
    for q, p in _vague_prior_pairs(3, 200):
        exact = _exact_kl(q.natural[0], p.natural[0])
        assert abs(float(q.kl(p)) - exact) <= 1e-13 * exact, (q.concentration, p.concentration)


def test_kl_of_the_audited_pairs_keeps_its_digits():
    """``alpha = s [1, 2, 3]`` against ``1.001 alpha``: 4.9967e-7 at every scale (the generic
    route gave 3.2e-7 at 1e8)."""
    for scale in [1e3, 1e6, 1e8, 1e12]:
        q, p = Dirichlet(scale * np.array([1.0, 2.0, 3.0])), Dirichlet(1.001 * scale * np.array([1.0, 2.0, 3.0]))
        np.testing.assert_allclose(q.kl(p), _exact_kl(q.natural[0], p.natural[0]), rtol=1e-13)


def test_kl_is_non_negative_for_many_near_identical_pairs():
    rng = np.random.default_rng(1)
    alpha = 10.0 ** rng.uniform(-2.0, 10.0, (4000, 1)) * 10.0 ** rng.uniform(-2.0, 0.0, (4000, 3))
    q = Dirichlet(alpha)
    for scale in [1e-12, 1e-9, 1e-6]:
        independent = Dirichlet(alpha * (1 + scale * rng.standard_normal(alpha.shape)))
        common = Dirichlet(alpha * (1 + scale * rng.standard_normal((4000, 1))))
        assert np.all(q.kl(independent) >= 0) and np.all(q.kl(common) >= 0)
    np.testing.assert_array_equal(q.kl(q), 0.0)


def test_kl_equals_the_bregman_route_and_the_sum_of_log_gamma_divergences_when_well_conditioned():
    """Concentrations 0.1..100: the generic KL and ``sum_k D(beta_k, alpha_k) - D(beta_0, alpha_0)``."""
    rng = np.random.default_rng(2)
    alpha, beta = 10.0 ** rng.uniform(-1.0, 2.0, (2, 100, 4))
    q, p = Dirichlet(alpha), Dirichlet(beta)

    def bregman(c, a):
        return special.gammaln(c) - special.gammaln(a) - (c - a) * special.digamma(a)

    identity = bregman(beta, alpha).sum(-1) - bregman(beta.sum(-1), alpha.sum(-1))
    np.testing.assert_allclose(q.kl(p), ExponentialFamily._kl(q, p), rtol=1e-10)
    np.testing.assert_allclose(q.kl(p), identity, rtol=1e-10)


def test_beta_kl_and_entropy_are_the_dirichlet_ones_and_match_mpmath():
    rng = np.random.default_rng(3)
    a, b = 10.0 ** rng.uniform(-2.0, 9.0, (2, 50))
    q, p = Beta(a, b), Beta(a * (1 + 1e-5), b * (1 - 2e-5))
    pairs = np.stack([a, b], -1)
    np.testing.assert_allclose(q.kl(p), Dirichlet(pairs).kl(Dirichlet(pairs * [1 + 1e-5, 1 - 2e-5])), rtol=1e-14)
    np.testing.assert_allclose(q.entropy(), Dirichlet(pairs).entropy(), rtol=1e-14)
    exact = [_exact_kl((x, y), (u, v)) for x, y, u, v in zip(*q.natural, *p.natural)]
    np.testing.assert_allclose(q.kl(p), exact, rtol=1e-12)
    assert Beta([[1.0], [2.0]], 3.0).kl(Beta([1.5, 2.5, 3.5], 1.0)).shape == (2, 3)


def test_entropy_matches_mpmath_and_scipy():
    """Concentrated rows (alpha_0 up to 6e12) against mpmath, moderate ones against scipy."""
    alpha = np.array([[1e-6, 0.5, 3.0], [9.99, 10.0, 10.01], [1e4, 2e4, 3e4], [1e8, 2e8, 3e8], [1e12, 2e12, 3e12],
                      [1e-3, 1.0, 1e9]])
    q = Dirichlet(alpha)
    exact = [_exact_entropy(row) for row in q.natural[0]]
    np.testing.assert_allclose(q.entropy(), exact, rtol=1e-14, atol=1e-14)
    moderate = Dirichlet(alpha[:3])
    np.testing.assert_allclose(moderate.entropy(), [stats.dirichlet.entropy(row) for row in moderate.concentration],
                               rtol=1e-10)


def test_tiny_concentrations_are_rejected_naming_the_value_and_the_smallest_one():
    with pytest.raises(ValueError, match=r"concentration must be at least 1\.11.*got 1e-20 at index \(1, 0\)"):
        Dirichlet([[1.0, 1.0], [1e-20, 1e-20]])
    with pytest.raises(ValueError, match=r"a must be at least 1\.11.*got 1e-17 at index \(\)"):
        Beta(1e-17, 2.0)
    with pytest.raises(ValueError, match=r"b must be at least 1\.11"):
        Beta(2.0, 1e-17)
    q = Dirichlet([2.0 ** -53, 1.0])
    assert np.all(np.isfinite(q.mean_params[0])) and np.isfinite(q.entropy())


def test_logpdf_is_minus_infinity_off_the_simplex_without_warnings():
    q = Dirichlet([[2.0, 2.0], [0.5, 3.0]])
    z = np.array([[[0.3, 0.7], [0.9, 0.9]], [[0.0, 1.0], [1.2, -0.2]], [[np.nan, 0.5], [0.5, 0.5 + 1e-12]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = q.logpdf(z)
    assert out.shape == (3, 2)
    assert np.all(out[[0, 1, 1], [1, 0, 1]] == -np.inf) and np.isnan(out[2, 0])
    np.testing.assert_allclose(out[0, 0], stats.dirichlet.logpdf([0.3, 0.7], [2.0, 2.0]), rtol=1e-13)
    np.testing.assert_allclose(out[2, 1], stats.dirichlet.logpdf([0.5, 0.5], [0.5, 3.0]), rtol=1e-10)
    assert Dirichlet([2.0, 2.0, 2.0]).logpdf([0.5, 0.5, 0.5]) == -np.inf


def test_beta_logpdf_is_minus_infinity_outside_the_unit_interval():
    q = Beta(2.0, [2.0, 0.5])
    z = np.array([[1.5, 0.0], [-0.1, 1.0], [0.25, np.nan]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = q.logpdf(z)
    assert np.all(out[:2] == -np.inf) and np.isnan(out[2, 1])
    np.testing.assert_allclose(out[2, 0], stats.beta.logpdf(0.25, 2.0, 2.0), rtol=1e-13)
