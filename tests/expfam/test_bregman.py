"""The log-gamma Bregman pieces of efvi.expfam._bregman against mpmath.

The references subtract numbers of size ``a log a`` (up to 1e13) to get
divergences down to 1e-32, so mpmath works with 80 digits.
"""

import mpmath
import numpy as np
import pytest

from efvi.expfam._bregman import (ASYMPTOTIC_MIN, binet_bregman, entropy_part, gammaln_bregman, gammaln_bregman_excess,
                                  log_gap, ratio_gap, xlogx_gap)

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


def _direct_pairs(seed, count):
    """Pairs of the direct route, ``c < 10 <= a`` with ``c <= a / 2``: ``c`` from 2**-53, ``a`` up to 1e15,
    a quarter of them on the boundaries (``a = max(10, 2c)``, ``c`` just below 10, ``c`` at and above 1)."""
    rng = np.random.default_rng(seed)
    c = np.exp(rng.uniform(np.log(2.0 ** -53), np.log(ASYMPTOTIC_MIN), count))
    a = np.maximum(ASYMPTOTIC_MIN, 2.0 * c) * 10.0 ** rng.uniform(0.0, 15.0, count)
    quarter = count // 4
    a[:quarter // 2] = np.maximum(ASYMPTOTIC_MIN, 2.0 * c[:quarter // 2])
    c[quarter // 2:quarter] = np.nextafter(ASYMPTOTIC_MIN, 0.0)
    c[quarter:quarter + 5], c[quarter + 5:quarter + 10] = 1.0, np.nextafter(1.0, 2.0)
    return c, a


def _excess(c, a):
    """``D(c, a) - a f(c / a)``."""
    t = c / a
    return _gammaln_bregman(c, a) - a * (t * mpmath.log(t) - t + 1)


def test_direct_route_matches_mpmath():
    """``R(c) - R(a) - (c - a) R'(a)`` with ``R(c)`` from log Gamma (``c <= 1``) or shifted series: no
    cancellation where ``c / a <= 1/2`` (3.4e-15 and 4.4e-16 seen on 3000 pairs)."""
    c, a = _direct_pairs(4, 400)
    with mpmath.workdps(DIGITS):
        pairs = [(mpmath.mpf(x), mpmath.mpf(y)) for x, y in zip(c, a)]
        binet = np.array([float(_binet(x) - _binet(y) - (x - y) * _binet_slope(y)) for x, y in pairs])
        excess = np.array([float(_excess(x, y)) for x, y in pairs])
    np.testing.assert_allclose(binet_bregman(c, a, c - a), binet, rtol=1e-14, atol=0)
    np.testing.assert_allclose(gammaln_bregman_excess(c, a, c - a), excess, rtol=2e-15, atol=0)


def test_excess_matches_mpmath_on_every_route():
    """The careful route (shifted or not) and the direct one, on the pairs of the other tests."""
    c, a = np.concatenate([_pairs(5, 300), _direct_pairs(6, 100)], axis=1)
    with mpmath.workdps(DIGITS):
        exact = np.array([float(_excess(mpmath.mpf(x), mpmath.mpf(y))) for x, y in zip(c, a)])
    assert np.all(exact > 0)
    np.testing.assert_allclose(gammaln_bregman_excess(c, a, c - a), exact, rtol=1e-13, atol=0)


def test_excess_keeps_its_digits_for_a_large_shape_against_a_moderate_one():
    """``c < 10 <= a``: the shifted recurrence would subtract ``a f(c / a) ~ a`` (7e-6 relative error at
    ``a = 1e12``, ``c = 5``); the direct route does not."""
    c, a = np.array([5.0, 9.5, 1.5, 0.3]), np.array([1e12, 1e9, 1e6, 1e15])
    with mpmath.workdps(DIGITS):
        exact = np.array([float(_excess(mpmath.mpf(x), mpmath.mpf(y))) for x, y in zip(c, a)])
    np.testing.assert_allclose(gammaln_bregman_excess(c, a, c - a), exact, rtol=1e-15, atol=0)


def test_mixed_batches_equal_entry_by_entry_evaluation():
    """Entries of the direct route, the shifted careful route and the unshifted one in one batch
    (routes split by boolean indexing) give what each entry gives alone."""
    c = np.array([1e-6, 0.1, 3.0, 0.101, 20.0, 2.0, 9.0, 1e3])
    a = np.array([221.0, 50.1, 1e8, 0.1, 30.0, 3.0, 12.0, 10.0])
    for function in (binet_bregman, gammaln_bregman_excess, gammaln_bregman):
        alone = np.array([function(x, y, x - y) for x, y in zip(c, a)])
        np.testing.assert_allclose(function(c, a, c - a), alone, rtol=1e-15, atol=0)
        np.testing.assert_allclose(function(c[::-1], a[::-1], (c - a)[::-1]), alone[::-1], rtol=1e-15, atol=0)


def test_ratio_gap_keeps_the_digits_of_both_kinds_of_pairs():
    """``x / y - 1`` near 1 (from exact differences to 1) and near 0 (where ``x - 1`` and ``y - 1`` are
    both about -1 and their difference would leave ``eps / y`` absolute error)."""
    rng = np.random.default_rng(7)
    near_x, near_y = 10.0 ** rng.uniform(-12, -1, (2, 100)) * rng.choice([-1.0, 1.0], (2, 100))
    small_x, small_y = 10.0 ** rng.uniform(-12, -1, (2, 100))
    with mpmath.workdps(DIGITS):
        near = [float((1 + mpmath.mpf(u)) / (1 + mpmath.mpf(v)) - 1) for u, v in zip(near_x, near_y)]
        small = [float(mpmath.mpf(u) / mpmath.mpf(v) - 1) for u, v in zip(small_x, small_y)]
    np.testing.assert_allclose(ratio_gap(1.0 + near_x, near_x, 1.0 + near_y, near_y), near, rtol=1e-15, atol=0)
    np.testing.assert_allclose(ratio_gap(small_x, small_x - 1.0, small_y, small_y - 1.0), small, rtol=1e-15, atol=0)


def test_binet_below_one_matches_mpmath_to_a_few_eps_absolute():
    """``R(c) = b(c) + R(c + 1)`` for ``c <= 1``: 3.6e-15 absolute seen on 5000 points (the ``gammaln``
    form used before: 8.9e-15)."""
    from efvi.expfam._bregman import _binet_below

    c = np.concatenate([np.exp(np.random.default_rng(8).uniform(np.log(2.0 ** -53), 0.0, 400)), [1.0]])
    with mpmath.workdps(DIGITS):
        exact = np.array([float(_binet(mpmath.mpf(x))) for x in c])
    np.testing.assert_allclose(_binet_below(c), exact, rtol=0, atol=4e-15)
