"""The log-gamma Bregman pieces of efvi.expfam._bregman against mpmath.

The references subtract numbers of size ``a log a`` (up to 1e13) to get
divergences down to 1e-32, so mpmath works with 80 digits.
"""

import mpmath
import numpy as np
import pytest

from efvi.expfam._bregman import ASYMPTOTIC_MIN, binet_bregman, entropy_part, gammaln_bregman, log_gap, xlogx_gap

DIGITS = 80


def _pairs(seed, count):
    """Arguments ``(c, a)`` with ``a`` in 1e-8..1e12 and ``c / a - 1`` from 1e-10 to 10, either sign."""
    rng = np.random.default_rng(seed)
    a = 10.0 ** rng.uniform(-8.0, 12.0, count)
    relative = 10.0 ** rng.uniform(-10.0, 1.0, count) * rng.choice([-1.0, 1.0], count)
    c = np.where(relative > -1.0, a * (1.0 + relative), a * 10.0 ** rng.uniform(-8.0, 0.0, count))
    return c, a


def _binet(x):
    """Binet's function ``R(x) = log Gamma(x) - (x - 1/2) log x + x - log(2 pi) / 2``."""
    return mpmath.loggamma(x) - (x - mpmath.mpf(0.5)) * mpmath.log(x) + x - mpmath.log(2 * mpmath.pi) / 2


def _binet_slope(x):
    return mpmath.digamma(x) - mpmath.log(x) + 1 / (2 * x)


def _gammaln_bregman(c, a):
    return mpmath.loggamma(c) - mpmath.loggamma(a) - (c - a) * mpmath.digamma(a)


def test_gammaln_bregman_matches_mpmath_to_1e_13():
    c, a = _pairs(0, 300)
    got = gammaln_bregman(c, a, c - a)
    with mpmath.workdps(DIGITS):
        exact = np.array([float(_gammaln_bregman(mpmath.mpf(x), mpmath.mpf(y))) for x, y in zip(c, a)])
    np.testing.assert_allclose(got, exact, rtol=1e-13, atol=0)


def test_binet_bregman_matches_mpmath():
    """Relative 1e-14 where both arguments use Stirling's series; elsewhere it is a difference of
    ``D`` and its ``f``, ``m`` parts, accurate to 1e-14 of ``D`` (what the KL formulas need)."""
    c, a = _pairs(1, 300)
    got = binet_bregman(c, a, c - a)
    exact, whole = [], []
    with mpmath.workdps(DIGITS):
        for x, y in zip(c, a):
            x, y = mpmath.mpf(x), mpmath.mpf(y)
            exact.append(float(_binet(x) - _binet(y) - (x - y) * _binet_slope(y)))
            whole.append(float(_gammaln_bregman(x, y)))
    exact, whole = np.array(exact), np.array(whole)
    large = np.minimum(a, c) >= ASYMPTOTIC_MIN
    assert np.all(exact > 0)
    np.testing.assert_allclose(got[large], exact[large], rtol=1e-14, atol=0)
    assert np.all(np.abs(got - exact)[~large] <= 1e-14 * (exact + whole)[~large])


@pytest.mark.parametrize("gap, reference", [
    (xlogx_gap, lambda d: (1 + d) * mpmath.log1p(d) - d),
    (log_gap, lambda d: d - mpmath.log1p(d)),
])
def test_elementary_gaps_match_mpmath_on_both_branches(gap, reference):
    """``|t - 1|`` from 1e-12 (Taylor series) to 1e3 (direct formula), and ``t`` down to 0.01."""
    rng = np.random.default_rng(2)
    delta = np.concatenate([-(10.0 ** rng.uniform(-12.0, np.log10(0.99), 200)), 10.0 ** rng.uniform(-12.0, 3.0, 200)])
    with mpmath.workdps(DIGITS):
        exact = np.array([float(reference(mpmath.mpf(d))) for d in delta])
    np.testing.assert_allclose(gap(1.0 + delta, delta), exact, rtol=2e-14, atol=0)
    assert gap(np.ones(3), np.zeros(3)).tolist() == [0.0, 0.0, 0.0]


def test_entropy_part_matches_mpmath():
    x = 10.0 ** np.random.default_rng(3).uniform(-8.0, 15.0, 300)
    with mpmath.workdps(DIGITS):
        exact = np.array([float(mpmath.loggamma(v) - (v - 1) * mpmath.digamma(v) + v) for v in map(mpmath.mpf, x)])
    np.testing.assert_allclose(entropy_part(x), exact, rtol=4e-15, atol=4e-15)


def test_pieces_broadcast_and_keep_shapes():
    a = np.array([[0.5], [50.0]])
    c = np.array([0.6, 60.0, 2e3])
    assert gammaln_bregman(c, a, c - a).shape == (2, 3)
    assert binet_bregman(c, a, c - a).shape == (2, 3)
    assert np.ndim(gammaln_bregman(2.0, 3.0, -1.0)) == 0
    assert entropy_part(a).shape == (2, 1)
