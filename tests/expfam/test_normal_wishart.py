"""Normal-Wishart checks: expectations against Monte Carlo, the conjugate update, structure."""

import numpy as np
import pytest
from scipy.special import polygamma
from scipy.stats import multivariate_normal

from efvi.expfam import NormalWishart, Wishart

from ._matrices import random_spd


def _example(rng, dim=2, batch=(2,)):
    scale, _ = random_spd(rng, dim, batch, 1.0)
    return NormalWishart(rng.normal(size=batch + (dim,)), 10.0 ** rng.uniform(-0.5, 0.5, batch),
                         dim + 2.0 + 10.0 * rng.uniform(size=batch), scale)


def _assert_within_monte_carlo(draws, expected, sigmas=5.0):
    """Sample means of ``draws`` (first axis) agree with ``expected`` within ``sigmas`` standard errors."""
    n = draws.shape[0]
    error = np.abs(draws.mean(axis=0) - expected)
    np.testing.assert_array_less(error, sigmas * draws.std(axis=0) / np.sqrt(n) + 1e-12)


def test_expectations_match_monte_carlo():
    rng = np.random.default_rng(40)
    q = _example(rng)
    mu, precision = q.sample(rng, 40000)
    lam_mu = np.einsum("...ij,...j->...i", precision, mu)
    _assert_within_monte_carlo(lam_mu, np.einsum("...ij,...j->...i", q.expected_precision, q.mean))
    _assert_within_monte_carlo(np.sum(mu * lam_mu, axis=-1), -2.0 * q.mean_params[1])
    _assert_within_monte_carlo(precision, q.expected_precision)
    _assert_within_monte_carlo(np.linalg.slogdet(precision)[1], q.expected_logdet_precision)
    _assert_within_monte_carlo(mu, q.mean)


def test_expected_mahalanobis_matches_monte_carlo_and_closed_form():
    rng = np.random.default_rng(41)
    q = _example(rng, dim=3)
    x = rng.normal(size=(5, 3))
    expected = q.expected_mahalanobis(x)
    assert expected.shape == (5, 2)
    mu, precision = q.sample(rng, 40000)
    diff = x[:, None, None, :] - mu[None]
    draws = np.einsum("...i,...ij,...j->...", diff, precision[None], diff)
    _assert_within_monte_carlo(np.moveaxis(draws, 1, 0), expected)
    closed = (3 / q.beta + q.df * np.einsum("nbi,bij,nbj->nb", x[:, None] - q.mean, q.scale, x[:, None] - q.mean))
    np.testing.assert_allclose(expected, closed, rtol=1e-12)


def test_conjugate_update_matches_the_textbook_posterior():
    """Adding (x, 1, x x^T, 1) per observation gives Bishop's (10.60)-(10.63) posterior."""
    rng = np.random.default_rng(42)
    dim, n = 2, 30
    prior_scale, _ = random_spd(rng, dim, (), 1.0)
    prior = NormalWishart(np.array([0.5, -0.2]), 2.0, 4.0, prior_scale)
    x = rng.normal(size=(n, dim)) @ np.array([[1.0, 0.3], [0.0, 0.7]]) + 1.0
    site = (x.sum(0), float(n), x.T @ x, float(n))
    posterior = NormalWishart.from_natural(tuple(p + s for p, s in zip(prior.natural, site)))
    mean_x = x.mean(0)
    scatter = (x - mean_x).T @ (x - mean_x)
    beta_n = prior.beta + n
    offset = mean_x - prior.mean
    scale_inv = np.linalg.inv(prior_scale) + scatter + prior.beta * n / beta_n * np.outer(offset, offset)
    np.testing.assert_allclose(posterior.beta, beta_n, rtol=1e-14)
    np.testing.assert_allclose(posterior.df, prior.df + n, rtol=1e-14)
    np.testing.assert_allclose(posterior.mean, (prior.beta * prior.mean + n * mean_x) / beta_n, rtol=1e-12)
    np.testing.assert_allclose(posterior.scale, np.linalg.inv(scale_inv), rtol=1e-10)
    # Bayes' rule pointwise: log posterior - log prior - log likelihood is the same constant everywhere.
    mu, precision = prior.sample(rng, 6)
    log_lik = [sum(multivariate_normal(mu[k], np.linalg.inv(precision[k])).logpdf(x)) for k in range(6)]
    evidence = prior.logpdf((mu, precision)) + np.array(log_lik) - posterior.logpdf((mu, precision))
    np.testing.assert_allclose(evidence, evidence[0], rtol=1e-10)


def test_precision_marginal_is_the_wishart():
    rng = np.random.default_rng(43)
    q = _example(rng, dim=3)
    marginal = Wishart(q.df, q.scale)
    np.testing.assert_allclose(q.expected_logdet_precision, marginal.expected_logdet, rtol=1e-12)
    np.testing.assert_allclose(q.expected_precision, marginal.mean, rtol=1e-12)
    np.testing.assert_allclose(NormalWishart.log_partition(q.natural),
                               Wishart.log_partition(marginal.natural) - 1.5 * np.log(q.beta), rtol=1e-12)


def test_fisher_precision_block_matches_the_wishart_formulas():
    """The (-Lambda/2, log|Lambda|/2) block of the autograd Fisher against Wishart closed forms."""
    rng = np.random.default_rng(44)
    q = _example(rng)
    fisher = NormalWishart.fisher(q.natural)
    dim, df, scale = 2, q.df, q.scale
    assert fisher.shape == (2, 8, 8)
    np.testing.assert_allclose(fisher, np.swapaxes(fisher, -1, -2), atol=1e-12 * np.abs(fisher).max())
    block = slice(dim + 1, dim + 1 + dim * dim)
    ww = np.einsum("bik,bjl->bijkl", scale, scale)
    cov_lambda = df[:, None, None] * (ww + np.swapaxes(ww, -1, -2)).reshape(2, 4, 4)
    np.testing.assert_allclose(fisher[:, block, block], 0.25 * cov_lambda, rtol=1e-10)
    var_logdet = sum(polygamma(1, 0.5 * (df - i)) for i in range(dim))
    np.testing.assert_allclose(fisher[:, -1, -1], 0.25 * var_logdet, rtol=1e-10)
    np.testing.assert_allclose(fisher[:, block, -1], -0.5 * scale.reshape(2, 4), rtol=1e-10)


def test_constructor_properties_round_trip():
    rng = np.random.default_rng(45)
    scale, _ = random_spd(rng, 3, (), 2.0)
    mean = rng.normal(size=3)
    q = NormalWishart(mean, [0.5, 2.0], 7.0, scale)
    assert q.batch_shape == (2,) and q.dim == 3
    np.testing.assert_allclose(q.mean, np.broadcast_to(mean, (2, 3)), rtol=1e-13)
    np.testing.assert_allclose(q.beta, [0.5, 2.0], rtol=1e-15)
    np.testing.assert_allclose(q.df, [7.0, 7.0], rtol=1e-15)
    np.testing.assert_allclose(q.scale, np.broadcast_to(scale, (2, 3, 3)), rtol=1e-10)


def test_samples_are_pairs_that_logpdf_and_sufficient_stats_accept():
    rng = np.random.default_rng(46)
    q = _example(rng, dim=2, batch=(3,))
    mu, precision = q.sample(rng, 4)
    assert mu.shape == (4, 3, 2) and precision.shape == (4, 3, 2, 2)
    assert q.logpdf((mu, precision)).shape == (4, 3)
    stats = NormalWishart.sufficient_stats((mu, precision))
    assert [s.shape for s in stats] == [(4, 3, 2), (4, 3), (4, 3, 2, 2), (4, 3)]
    with pytest.raises(ValueError, match="z"):
        q.logpdf(mu)


def test_var_of_mu_and_of_the_precision_match_monte_carlo():
    """``Var mu = diag(W^-1) / (beta (nu - D - 1))`` (the Student-t marginal) and the Wishart
    element variances of the precision, against sample variances within 5 standard errors.
    ``nu = D + 12`` keeps the fourth moments of ``mu`` finite, so the standard error is too."""
    rng = np.random.default_rng(43)
    scale, _ = random_spd(rng, 3, (2,), 1.0)
    q = NormalWishart(rng.normal(size=(2, 3)), [0.5, 3.0], [15.0, 40.0], scale)
    assert q.var.shape == (2, 3) and q.precision_var.shape == (2, 3, 3)
    mu, precision = q.sample(rng, 60000)
    _assert_within_monte_carlo((mu - q.mean) ** 2, q.var)
    _assert_within_monte_carlo((precision - q.expected_precision) ** 2, q.precision_var)
    np.testing.assert_allclose(q.precision_var, Wishart(q.df, q.scale).var, rtol=1e-12)
    np.testing.assert_allclose(
        q.var, np.diagonal(np.linalg.inv(q.scale), axis1=-2, axis2=-1) / (q.beta * (q.df - 4.0))[:, None], rtol=1e-12)


def test_var_of_mu_is_infinite_without_a_second_moment():
    """The Student-t marginal of ``mu`` has ``nu - D + 1`` degrees of freedom: no variance for ``nu <= D + 1``."""
    q = NormalWishart(np.zeros(2), 1.0, [1.5, 3.0, 3.5], np.eye(2))
    assert np.all(np.isinf(q.var[:2])) and np.all(np.isfinite(q.var[2]))
    np.testing.assert_allclose(q.var[2], 1.0 / 0.5, rtol=1e-14)


def _numpy_factors(natural):
    """``(beta, m, df, W^-1, chol(W^-1), log|W^-1|)`` by numpy and LAPACK: the reference of the compiled pass."""
    eta1, beta, eta3, eta4 = natural
    outer = eta1[..., :, None] * eta1[..., None, :] / beta[..., None, None]
    scale_inv = 0.5 * (eta3 + np.swapaxes(eta3, -1, -2)) - outer
    chol = np.linalg.cholesky(scale_inv)
    return (beta, eta1 / beta[..., None], eta4 + eta1.shape[-1], scale_inv, chol,
            2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1))


@pytest.mark.parametrize("dim", [1, 2, 5, 65])
def test_from_valid_natural_tests_like_is_valid_natural_and_keeps_the_numpy_factors(dim):
    """One compiled pass (``D <= 64``; numpy above) tests validity and factors ``W^-1``; the distribution
    keeps the factors for its mean parameters and log-partition, which equal the classmethods'."""
    rng = np.random.default_rng(46 + dim)
    q = _example(rng, dim=dim, batch=(3,))
    fresh = NormalWishart.from_valid_natural(q.natural)
    for got, expected in zip(fresh._held_factors(), _numpy_factors(q.natural)):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    for got, expected in zip(fresh.mean_params, NormalWishart.natural_to_mean(q.natural)):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(fresh.log_partition_value(), NormalWishart.log_partition(q.natural), rtol=1e-13)
    eta1, beta, eta3, eta4 = q.natural
    bad_beta, bad_df, asymmetric, indefinite, overflow = beta.copy(), eta4.copy(), eta3.copy(), eta3.copy(), beta.copy()
    bad_beta[1], bad_df[2] = -1.0, -1.0
    asymmetric[0, 0, -1] += 1e-6 * np.abs(eta3).max()
    indefinite[2] = -np.eye(dim)
    overflow[1] = 1e-320
    for natural in [(eta1, bad_beta, eta3, eta4), (eta1, beta, eta3, bad_df), (eta1, beta, asymmetric, eta4),
                    (eta1, beta, indefinite, eta4), (eta1 + 1e160, overflow, eta3, eta4)]:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            expected = bool(np.all(NormalWishart.is_valid_natural(natural)))
            assert (NormalWishart.from_valid_natural(natural) is not None) == expected
        assert expected == (dim == 1 and natural[2] is asymmetric)
