"""Gamma-specific checks: the stable KL and entropy against mpmath, tiny shapes, the support."""

import warnings

import mpmath
import numpy as np
import pytest
from scipy import special, stats

from efvi.expfam import ExponentialFamily, Gamma

DIGITS = 60
EPS = np.finfo(float).eps


def _exact_kl(q, p):
    """KL(q || p) in mpmath, with the shapes exactly ``natural[0] + 1`` (no rounding)."""
    with mpmath.workdps(DIGITS):
        a = mpmath.mpf(float(q.natural[0])) + 1
        c = mpmath.mpf(float(p.natural[0])) + 1
        b, d = mpmath.mpf(float(q.rate)), mpmath.mpf(float(p.rate))
        return float((a - c) * mpmath.digamma(a) - mpmath.loggamma(a) + mpmath.loggamma(c)
                     + c * (mpmath.log(b) - mpmath.log(d)) + a * (d - b) / b)


def _pairs(seed, count, log10_max_shape):
    """Pairs of Gamma distributions: independent small changes, common changes of shape and rate
    (where the terms of the textbook formula cancel), and unrelated pairs."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        a, b = 10.0 ** rng.uniform(-6.0, log10_max_shape), 10.0 ** rng.uniform(-3.0, 3.0)
        change = 10.0 ** rng.uniform(-12.0, -1.0)
        kind = i % 3
        if kind == 0:
            c, d = a * (1.0 + change * rng.standard_normal()), b * (1.0 + change * rng.standard_normal())
        elif kind == 1:
            c, d = a * (1.0 + change), b * (1.0 + change)
        else:
            c, d = a * np.exp(2.0 * rng.standard_normal()), b * np.exp(2.0 * rng.standard_normal())
        yield Gamma(a, b), Gamma(c, d)


def test_kl_matches_mpmath_in_the_concentrated_regime():
    """Relative error below 1e-13 + eps sqrt(shape) (under 3e-11 at shape 1e10); the generic route
    loses up to 0.36 relative on such pairs and returns negative values."""
    for q, p in _pairs(0, 300, 10.0):
        exact = _exact_kl(q, p)
        assert abs(float(q.kl(p)) - exact) <= (1e-13 + EPS * np.sqrt(float(q.shape))) * exact, (q.shape, p.shape)


def _vague_prior_pairs(seed, count):
    """Posteriors of shape 10..1e10 against priors of shape 2**-52..10, with independent rates or with
    equal means (where the shapes alone carry the KL), one in four the other way round."""
    rng = np.random.default_rng(seed)
    for i in range(count):
        a, c = 10.0 ** rng.uniform(1.0, 10.0), np.exp(rng.uniform(np.log(2.0 ** -52), np.log(10.0)))
        b = 10.0 ** rng.uniform(-3.0, 3.0)
        d = b * c / a if i % 2 else 10.0 ** rng.uniform(-6.0, 3.0)
        pair = (Gamma(a, b), Gamma(c, d))
        yield pair[::-1] if i % 4 == 3 else pair


def test_kl_of_posteriors_against_vague_priors_matches_mpmath():
    """The regime of a variational fit (3.1e-14 seen on 800 pairs).  Before the direct route of
    efvi.expfam._bregman and ratio_gap, up to 8.5e-8 (2.2e-8 for shape 1e10 against Gamma(1e-6, 1e-6))."""
    default_prior = Gamma(1e-6, 1e-6)
    for shape, rate in [(221.000001, 180.3), (5e4, 3e4), (1e6, 7e5), (1e8, 3e7), (1e10, 1e9)]:
        q = Gamma(shape, rate)
        np.testing.assert_allclose(q.kl(default_prior), _exact_kl(q, default_prior), rtol=1e-15)
    for q, p in _vague_prior_pairs(3, 200):
        exact = _exact_kl(q, p)
        assert abs(float(q.kl(p)) - exact) <= 1e-13 * exact, (q.shape, q.rate, p.shape, p.rate)


def test_kl_of_the_audited_pairs_keeps_its_digits():
    """``Gamma(a, a)`` against ``Gamma(a, a (1 + 1e-6))``: exact KL ``a (x - log(1 + x))``, ``x = 1e-6``."""
    x = 1e-6
    exact_per_shape = float(mpmath.mpf(x) - mpmath.log1p(mpmath.mpf(x)))
    for a in [1e4, 1e6, 1e8]:
        q, p = Gamma(a, a), Gamma(a, a * (1 + x))
        x_stored = (p.rate - q.rate) / q.rate
        exact = a * exact_per_shape * (x_stored / x) ** 2
        np.testing.assert_allclose(q.kl(p), exact, rtol=1e-8)
        np.testing.assert_allclose(q.kl(p), _exact_kl(q, p), rtol=1e-13)


def test_kl_is_non_negative_for_many_near_identical_pairs():
    rng = np.random.default_rng(1)
    a = 10.0 ** rng.uniform(-3.0, 12.0, 5000)
    b = 10.0 ** rng.uniform(-3.0, 3.0, 5000)
    for scale in [1e-12, 1e-9, 1e-6]:
        q = Gamma(a, b)
        independent = Gamma(a * (1 + scale * rng.standard_normal(5000)), b * (1 + scale * rng.standard_normal(5000)))
        common = 1 + scale * rng.standard_normal(5000)
        together = Gamma(a * common, b * common)
        assert np.all(q.kl(independent) >= 0) and np.all(q.kl(together) >= 0)
    np.testing.assert_array_equal(q.kl(q), 0.0)


def test_kl_equals_the_bregman_route_and_the_shape_rate_identity_when_well_conditioned():
    """Shapes 0.1..100: the generic Bregman KL, and ``D(c, a) + a (x - log1p x) + (a - c) log1p x``."""
    rng = np.random.default_rng(2)
    a, c = 10.0 ** rng.uniform(-1.0, 2.0, (2, 200))
    b, d = 10.0 ** rng.uniform(-1.0, 1.0, (2, 200))
    q, p = Gamma(a, b), Gamma(c, d)
    x = (d - b) / b
    bregman = special.gammaln(c) - special.gammaln(a) - (c - a) * special.digamma(a)
    identity = bregman + a * (x - np.log1p(x)) + (a - c) * np.log1p(x)
    np.testing.assert_allclose(q.kl(p), ExponentialFamily._kl(q, p), rtol=1e-10)
    np.testing.assert_allclose(q.kl(p), identity, rtol=1e-10)


def test_kl_broadcasts_batches():
    q = Gamma([[1.0], [2.0]], 1.0)
    p = Gamma([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])
    kl = q.kl(p)
    assert kl.shape == (2, 3)
    np.testing.assert_allclose(kl[1, 2], Gamma(2.0, 1.0).kl(Gamma(3.5, 3.0)), rtol=1e-14)


def test_entropy_matches_mpmath_for_concentrated_gammas():
    """``Gamma(1e9, 1e9)``: the generic route is off by 3e-6 absolute; this one by about 1e-15."""
    shape = np.array([1e-6, 0.5, 3.0, 9.99, 10.0, 1e3, 1e6, 1e9, 1e13])
    rate = np.array([1e-3, 1.0, 2.0, 1.0, 0.1, 1e3, 1e6, 1e9, 7.0])
    q = Gamma(shape, rate)
    with mpmath.workdps(DIGITS):
        exact = [float(a - mpmath.log(b) + mpmath.loggamma(a) + (1 - a) * mpmath.digamma(a))
                 for a, b in zip((mpmath.mpf(x) + 1 for x in q.natural[0]), map(mpmath.mpf, rate))]
    np.testing.assert_allclose(q.entropy(), exact, rtol=2e-15, atol=2e-15)
    moderate = Gamma(shape[1:5], rate[1:5])
    np.testing.assert_allclose(moderate.entropy(), stats.gamma.entropy(moderate.shape, scale=1 / moderate.rate),
                               rtol=1e-13)


def test_tiny_shapes_are_rejected_naming_the_value_and_the_smallest_one():
    smallest = 2.0 ** -53
    with pytest.raises(ValueError, match=r"shape must be at least 1\.1102230246251565e-16.*got 1e-17 at index \(1,\)"):
        Gamma([1.0, 1e-17], 1.0)
    q = Gamma(smallest, 1.0)
    assert q.shape == smallest and Gamma.is_valid_natural(q.natural)
    assert np.isfinite(q.entropy()) and np.all(np.isfinite(q.mean_params))
    with pytest.raises(ValueError, match=r"shape must be > 0\.0; got -2\.0 at index \(\)"):
        Gamma(-2.0, 1.0)


def test_small_shapes_keep_the_documented_relative_precision():
    """``a - 1`` holds ``a`` to within half a unit in the last place of numbers near 1: ``2**-54 / a``."""
    for a in [1e-6, 1e-10, 1e-13]:
        assert abs(Gamma(a, 1.0).shape - a) <= 2.0 ** -54


def test_logpdf_is_minus_infinity_outside_the_support_without_warnings():
    q = Gamma([2.0, 0.5, 1.0], 1.5)
    z = np.array([[-1.0, 0.0, 0.7], [2.0, np.inf, -0.0], [np.nan, 1.0, 3.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = q.logpdf(z)
    inside = np.array([[False, False, True], [True, False, False], [False, True, True]])
    assert np.all(out[~inside & ~np.isnan(z)] == -np.inf)
    assert np.isnan(out[2, 0])
    np.testing.assert_allclose(out[inside], stats.gamma.logpdf(z, q.shape, scale=1 / q.rate)[inside], rtol=1e-13)
