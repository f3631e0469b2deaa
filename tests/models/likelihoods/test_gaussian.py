"""The Gaussian likelihood's closed forms with an unknown (Gamma) precision."""

import numpy as np
import pytest
from scipy import special, stats

from efvi.models.likelihoods import Gaussian, gaussian_expectations, gaussian_precision_site

MEAN = np.array([-1.0, 0.0, 0.5, 2.0])
VAR = np.array([0.1, 1.0, 0.3, 2.0])
Y = np.array([-0.5, 0.3, np.nan, 4.0])
SHAPE, RATE = 3.0, 2.0  # q(tau) = Gamma(shape, rate)
E_TAU = SHAPE / RATE
E_LOG_TAU = special.digamma(SHAPE) - np.log(RATE)


def test_expectations_under_a_gamma_precision_match_monte_carlo():
    rng = np.random.default_rng(0)
    samples = 400_000
    tau = rng.gamma(SHAPE, 1.0 / RATE, size=(samples, 1))
    a = MEAN + np.sqrt(VAR) * rng.standard_normal((samples, MEAN.size))
    observed = ~np.isnan(Y)
    logp = stats.norm.logpdf(Y[observed], a[:, observed], 1.0 / np.sqrt(tau))
    value, _, _ = gaussian_expectations(MEAN, VAR, Y, E_TAU, E_LOG_TAU)
    se = logp.std(axis=0) / np.sqrt(samples)
    assert np.all(np.abs(value[observed] - logp.mean(axis=0)) <= 5 * se)
    assert value[~observed] == 0.0


def test_derivatives_match_finite_differences():
    h = 1e-6
    observed = ~np.isnan(Y)
    value, d_mean, d_var = gaussian_expectations(MEAN, VAR, Y, E_TAU, E_LOG_TAU)
    fd_mean = (gaussian_expectations(MEAN + h, VAR, Y, E_TAU, E_LOG_TAU)[0]
               - gaussian_expectations(MEAN - h, VAR, Y, E_TAU, E_LOG_TAU)[0]) / (2 * h)
    fd_var = (gaussian_expectations(MEAN, VAR + h, Y, E_TAU, E_LOG_TAU)[0]
              - gaussian_expectations(MEAN, VAR - h, Y, E_TAU, E_LOG_TAU)[0]) / (2 * h)
    np.testing.assert_allclose(d_mean[observed], fd_mean[observed], rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(d_var[observed], fd_var[observed], rtol=1e-8, atol=1e-8)
    assert np.all(d_mean[~observed] == 0.0) and np.all(d_var[~observed] == 0.0)


def test_fixed_variance_uses_the_same_function():
    lik = Gaussian(variance=0.4)
    for a, b in zip(lik.variational_expectations(MEAN, VAR, Y),
                    gaussian_expectations(MEAN, VAR, Y, 1 / 0.4, -np.log(0.4))):
        np.testing.assert_array_equal(a, b)
    assert Gaussian(precision=2.5).variance == pytest.approx(0.4, rel=1e-15)


def test_precision_site_gives_the_expectation_linearly():
    shape_site, rate_site = gaussian_precision_site(MEAN, VAR, Y)
    value, _, _ = gaussian_expectations(MEAN, VAR, Y, E_TAU, E_LOG_TAU)
    observed = ~np.isnan(Y)
    linear = -0.5 * np.log(2 * np.pi) + shape_site * E_LOG_TAU + rate_site * E_TAU
    np.testing.assert_allclose(value[observed], linear[observed], rtol=1e-14)
    assert np.all(shape_site[~observed] == 0.0) and np.all(rate_site[~observed] == 0.0)
    rng = np.random.default_rng(1)
    a = MEAN + np.sqrt(VAR) * rng.standard_normal((200_000, MEAN.size))
    squares = -0.5 * (Y - a) ** 2
    se = squares.std(axis=0) / np.sqrt(a.shape[0])
    assert np.all(np.abs(rate_site[observed] - squares.mean(axis=0)[observed]) <= 5 * se[observed])


def test_precision_block_is_stored_and_fixed_variance_methods_explain():
    lik = Gaussian(precision="tau")
    assert lik.precision_block == "tau" and lik.variance is None and lik.conjugate
    for call in (lambda: lik.variational_expectations(MEAN, VAR, np.zeros(4)),
                 lambda: lik.predict_mean_var(MEAN, VAR), lambda: lik.log_density(0.0, 1.0)):
        with pytest.raises(ValueError, match="'tau'.*gaussian_expectations"):
            call()
    assert Gaussian().precision_block is None


def test_invalid_precision_moments_are_named():
    with pytest.raises(ValueError, match="precision"):
        gaussian_expectations(MEAN, VAR, Y, -1.0, 0.0)
    with pytest.raises(ValueError, match="log_precision"):
        gaussian_expectations(MEAN, VAR, Y, 1.0, np.zeros(3))
    with pytest.raises(ValueError, match="var"):
        gaussian_expectations(MEAN, -VAR, Y, 1.0, 0.0)
    with pytest.raises(ValueError, match="precision"):
        Gaussian(variance=1.0, precision="tau")
