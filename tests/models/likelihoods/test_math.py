"""The compiled scalar special functions against high-precision references (mpmath, scipy)."""

import mpmath
import numpy as np
from scipy import special

from efvi.models.likelihoods import _math

mpmath.mp.dps = 60


def _reference_log_ndtr(z):
    x = mpmath.mpf(z)
    cdf = mpmath.ncdf(x)
    mills = mpmath.npdf(x) / cdf
    log_cdf = mpmath.log(cdf) if z < 0 else mpmath.log1p(-mpmath.ncdf(-x))
    return float(log_cdf), float(mills), float(x + mills)


def test_log_ndtr_and_inverse_mills_ratio_match_mpmath():
    z = np.concatenate([-np.logspace(3, np.log10(5.0), 40), np.linspace(-5.0, 37.0, 120)[1:], [-3.0, -2.999]])
    ours = np.array([_math.log_ndtr(x) for x in z])
    reference = np.array([_reference_log_ndtr(x) for x in z])
    relative = np.abs(ours - reference) / np.abs(reference)
    # Rounding z / sqrt(2) or z^2 by one ulp moves erfc(|z| / sqrt(2)) and
    # exp(-z^2 / 2) by ~ z^2 eps relative; above z = -5, z + lambda cancels by
    # a further factor <= 1 + z^2 (the continued fraction below -5 does not
    # cancel): allow 8 eps (1 + z^2) for log Phi and lambda, 8 eps (1 + z^2)^2
    # for z + lambda.
    eps = np.finfo(float).eps
    bound = np.stack([8 * eps * (1 + z**2), 8 * eps * (1 + z**2), 8 * eps * (1 + z**2) ** 2], axis=1)
    assert np.all(relative <= bound), relative.max(axis=0)


def test_log_ndtr_is_finite_far_in_the_tails():
    for z, log_cdf in [(-1e150, -5e299), (-1e3, special.log_ndtr(-1e3)), (1e150, 0.0)]:
        value, mills, shifted = _math.log_ndtr(z)
        assert np.isfinite([value, mills, shifted]).all()
        assert np.isclose(value, log_cdf, rtol=1e-14, atol=0.0)
    assert _math.ndtr(-40.0) == special.ndtr(-40.0)


def test_logistic_pieces_match_scipy():
    a = np.concatenate([-np.logspace(3, -3, 60), [0.0], np.logspace(-3, 3, 60)])
    ours = np.array([_math.logistic(x) for x in a])
    reference = [np.logaddexp(0.0, a), np.logaddexp(0.0, -a), special.expit(a), special.expit(-a)]
    for column, expected in zip(ours.T, reference):
        np.testing.assert_allclose(column, expected, rtol=4e-16, atol=0.0)


def test_log1p_matches_numpy():
    tiny = np.logspace(-300, 0, 300)
    x = np.concatenate([[0.0], tiny, -tiny[:-1] * 0.999, np.logspace(0, 300, 100)])
    ours = np.array([_math.log1p(v) for v in x])
    np.testing.assert_allclose(ours, np.log1p(x), rtol=4e-16, atol=0.0)
