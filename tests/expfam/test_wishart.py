"""Wishart-specific checks: the df solve, the closed-form Fisher, closed-form KL, Bartlett draws."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from scipy.special import digamma, multigammaln as scipy_multigammaln
from scipy.stats import wishart

from efvi.expfam import Wishart, flatten
from efvi.expfam.wishart import df_from_logdet_gap, multigammaln

from ._matrices import random_spd


def _logdet_gap(df, dim):
    """``E log|L| - log|E L|`` written out with scipy's digamma."""
    return sum(digamma(0.5 * (df - i)) for i in range(dim)) + dim * np.log(2.0) - dim * np.log(df)


@pytest.mark.parametrize("dim", [1, 2, 4])
def test_df_solve_inverts_the_logdet_gap(dim):
    df = dim - 1.0 + np.logspace(-3, 3, 400)
    np.testing.assert_allclose(df_from_logdet_gap(_logdet_gap(df, dim), dim), df, rtol=1e-12)
    large = dim - 1.0 + np.logspace(3, 6, 50)
    np.testing.assert_allclose(df_from_logdet_gap(_logdet_gap(large, dim), dim), large, rtol=1e-6)


def test_df_solve_keeps_the_batch_shape_and_rejects_impossible_gaps():
    gap = _logdet_gap(np.array([[3.0, 5.0, 40.0], [2.5, 8.0, 100.0]]), 2)
    assert df_from_logdet_gap(gap, 2).shape == (2, 3)
    with pytest.raises(ValueError, match="mean"):
        df_from_logdet_gap(np.array([-1.0, 0.0]), 2)


def test_multigammaln_matches_scipy():
    a = np.array([1.6, 3.0, 17.5])
    np.testing.assert_allclose(multigammaln(a, 3), [scipy_multigammaln(x, 3) for x in a], rtol=1e-13)


def test_fisher_closed_form_equals_autograd_hessian():
    rng = np.random.default_rng(30)
    scale, _ = random_spd(rng, 3, (2,), 1.5)
    natural = Wishart([3.5, 20.0], scale).natural
    fisher = Wishart.fisher(natural)
    assert fisher.shape == (2, 10, 10)
    for b in range(2):
        flat = flatten(tuple(np.asarray(p[b]) for p in natural), Wishart.event_ndims)
        hessian = autograd.hessian(lambda f: Wishart.log_partition((f[0], anp.reshape(f[1:], (3, 3)))))(flat)
        np.testing.assert_allclose(fisher[b], hessian, rtol=1e-10, atol=1e-12 * np.abs(hessian).max())


def _kl_closed_form(df0, scale0, df1, scale1):
    """KL(Wishart(df0, W0) || Wishart(df1, W1)), textbook formula with scipy special functions."""
    dim = scale0.shape[-1]
    ratio = np.linalg.solve(scale1, scale0)
    logdet_ratio = np.linalg.slogdet(ratio)[1]
    psi = sum(digamma(0.5 * (df0 - i)) for i in range(dim))
    return (
        -0.5 * df1 * logdet_ratio
        + 0.5 * df0 * (np.trace(ratio) - dim)
        + scipy_multigammaln(0.5 * df1, dim) - scipy_multigammaln(0.5 * df0, dim)
        + 0.5 * (df0 - df1) * psi
    )


def test_kl_matches_closed_form():
    rng = np.random.default_rng(31)
    scale0, _ = random_spd(rng, 3, (3,), 1.0)
    scale1, _ = random_spd(rng, 3, (3,), 1.0)
    df0, df1 = np.array([2.5, 6.0, 30.0]), np.array([4.0, 3.0, 25.0])
    kl = Wishart(df0, scale0).kl(Wishart(df1, scale1))
    expected = [_kl_closed_form(df0[b], scale0[b], df1[b], scale1[b]) for b in range(3)]
    np.testing.assert_allclose(kl, expected, rtol=1e-10)


def test_bartlett_draws_match_scipy_moments():
    """Sample mean and covariance of vec(L) against the Wishart formulas, with a 5-sigma tolerance."""
    rng = np.random.default_rng(32)
    scale, _ = random_spd(rng, 2, (), 1.0)
    q = Wishart(6.0, scale)
    n = 40000
    draws = q.sample(rng, n).reshape(n, 4)
    reference = wishart(6.0, scale).rvs(size=n, random_state=np.random.default_rng(33)).reshape(n, 4)
    # Var(L_ij) = df (W_ij^2 + W_ii W_jj); the mean of n draws has that over n.
    var = 6.0 * (scale.ravel() ** 2 + np.outer(np.diag(scale), np.diag(scale)).ravel())
    np.testing.assert_array_less(np.abs(draws.mean(0) - (6.0 * scale).ravel()), 5 * np.sqrt(var / n))
    np.testing.assert_array_less(np.abs(draws.mean(0) - reference.mean(0)), 5 * np.sqrt(2 * var / n))


def test_properties_and_constructor_broadcast():
    rng = np.random.default_rng(34)
    scale, _ = random_spd(rng, 2, (), 1.0)
    q = Wishart([3.0, 7.0], scale)
    assert q.batch_shape == (2,) and q.dim == 2
    np.testing.assert_allclose(q.df, [3.0, 7.0], rtol=1e-14)
    np.testing.assert_allclose(q.scale, np.broadcast_to(scale, (2, 2, 2)), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(q.mean, np.array([3.0, 7.0])[:, None, None] * scale, rtol=1e-12, atol=1e-14)
    expected_logdet = [_logdet_gap(df, 2) + np.linalg.slogdet(df * scale)[1] for df in (3.0, 7.0)]
    np.testing.assert_allclose(q.expected_logdet, expected_logdet, rtol=1e-12)


def test_var_is_the_diagonal_of_the_fisher_block_and_matches_monte_carlo():
    """``Var L_ij = df (W_ij^2 + W_ii W_jj)``: the vec(L) diagonal of the closed-form covariance
    (itself checked against the autograd Hessian above), and sample variances within 5 standard errors."""
    rng = np.random.default_rng(35)
    scale, _ = random_spd(rng, 3, (2,), 1.0)
    q = Wishart([4.5, 20.0], scale)
    assert q.var.shape == (2, 3, 3)
    fisher_diagonal = np.diagonal(Wishart.fisher(q.natural), axis1=-2, axis2=-1)[:, 1:].reshape(2, 3, 3)
    np.testing.assert_allclose(q.var, fisher_diagonal, rtol=1e-12)
    draws = q.sample(rng, 40000)
    squares = (draws - q.mean) ** 2
    standard_error = squares.std(axis=0) / np.sqrt(squares.shape[0])
    np.testing.assert_array_less(np.abs(squares.mean(axis=0) - q.var), 5 * standard_error)
