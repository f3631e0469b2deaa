"""The digamma kernels and solves of efvi.expfam._special against scipy and exact identities."""

import numpy as np
import pytest
from scipy import special

from efvi.expfam import _kernels
from efvi.expfam._special import dirichlet_from_mean_log, dirichlet_mean_log, gamma_shape_from_log_gap

EPS = np.finfo(float).eps


def _assert_within(actual, desired, tolerance):
    """``|actual - desired| <= tolerance`` entrywise (``tolerance`` may be an array)."""
    excess = np.abs(actual - desired) - tolerance
    assert np.all(excess <= 0), f"worst excess {np.max(excess)!r} at {np.unravel_index(np.argmax(excess), excess.shape)}"


def _parts(x):
    return np.array([_kernels._digamma_parts(v) for v in x]).T


def _log_minus_digamma(x):
    y, h, _, _ = _parts(x)
    return np.log(x / y) + h


@pytest.fixture(scope="module")
def grid():
    return np.exp(np.random.default_rng(0).uniform(np.log(1e-4), np.log(1e6), 3000))


def test_digamma_and_derivatives_match_scipy(grid):
    y, h, g, t = _parts(grid)
    digamma = special.digamma(grid)
    _assert_within(np.log(y) - h, digamma, 4 * EPS * (np.abs(np.log(y)) + np.abs(h)))
    np.testing.assert_allclose(1.0 / grid + g, special.polygamma(1, grid), rtol=1e-14)
    np.testing.assert_allclose(t, special.polygamma(2, grid), rtol=1e-11)


def test_log_minus_digamma_is_accurate_where_scipy_cancels(grid):
    """``f(x) = log x - psi(x)`` obeys ``f(x) - f(x + 1) = 1/x + log(1 - 1/(x + 1))`` to relative 1e-14 of ``f``."""
    f = _log_minus_digamma(grid)
    step = f - _log_minus_digamma(grid + 1.0)
    _assert_within(step, 1.0 / grid + np.log1p(-1.0 / (grid + 1.0)), 1e-14 * f)
    small = grid < 10.0
    np.testing.assert_allclose(f[small], np.log(grid[small]) - special.digamma(grid[small]), rtol=1e-13)


def test_gamma_shape_solve_recovers_the_shape_and_zeroes_the_residual():
    shape = np.exp(np.random.default_rng(1).uniform(np.log(1e-3), np.log(1e8), 2000))
    gap = _log_minus_digamma(shape)
    solved = gamma_shape_from_log_gap(gap.reshape(40, 50)).reshape(-1)
    np.testing.assert_allclose(_log_minus_digamma(solved), gap, rtol=1e-14)
    np.testing.assert_allclose(solved, shape, rtol=1e-12)
    moderate = shape < 1e3
    np.testing.assert_allclose(gamma_shape_from_log_gap(np.log(shape[moderate]) - special.digamma(shape[moderate])),
                               shape[moderate], rtol=1e-10)


def test_dirichlet_mean_log_matches_scipy_without_cancellation():
    alpha = np.exp(np.random.default_rng(2).uniform(np.log(1e-2), np.log(1e3), (500, 4)))
    reference = special.digamma(alpha) - special.digamma(alpha.sum(axis=-1, keepdims=True))
    scale = np.abs(special.digamma(alpha)) + np.abs(special.digamma(alpha.sum(-1, keepdims=True)))
    _assert_within(dirichlet_mean_log(alpha), reference, 8 * EPS * scale)


def test_dirichlet_mean_log_of_a_dominant_component_keeps_its_digits():
    """``psi(a) - psi(a + d)`` for ``d << a``: Taylor series in ``d`` with scipy's polygammas."""
    big = np.array([1e2, 1e3, 1e4, 1e6])
    small = np.array([1e-2, 1e-3, 1e-1, 1e-2])
    mean_log = dirichlet_mean_log(np.stack([big, small], axis=-1))[:, 0]
    taylor = -sum(small ** k / special.factorial(k) * special.polygamma(k, big) for k in (1, 2, 3, 4))
    np.testing.assert_allclose(mean_log, taylor, rtol=1e-12)


@pytest.mark.parametrize("low, high", [(1e-2, 1e3), (1e-3, 1e4)])
@pytest.mark.parametrize("num", [2, 3, 5, 10])
def test_dirichlet_solve_recovers_concentrations(num, low, high):
    """Backward error 1e-13; forward error 1e-12 plus ``4 eps alpha_0``, the spread that
    rounding the mean parameters to float64 alone causes along ``alpha``."""
    alpha = np.exp(np.random.default_rng(num).uniform(np.log(low), np.log(high), (3000, num)))
    mean_log = dirichlet_mean_log(alpha)
    solved = dirichlet_from_mean_log(mean_log.reshape(30, 100, num)).reshape(alpha.shape)
    _assert_within(dirichlet_mean_log(solved), mean_log, 1e-13 * np.maximum(1.0, np.abs(mean_log)))
    _assert_within(solved, alpha, alpha * (1e-12 + 4 * EPS * alpha.sum(axis=-1, keepdims=True)))
