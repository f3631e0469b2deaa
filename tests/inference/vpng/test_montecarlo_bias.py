"""The bias of the nested Monte Carlo F_r (issue 25 item 5), measured over repetitions against the closed form.

The near-singular toy of seed 001 (epsilon = 0.01) with a wide q (sigma = 0.5) is where a plain
self-normalised score estimate fails: it overstated F_r 5.4 times at K = 50 inner draws and 1.4 times at
K = 400.  Each check averages R independent estimates, each of n_outer = 500 outer draws; the ratio of an
estimate to the exact F_r, along each eigenvector of F_r and in the trace, has a standard error se over the
repetitions.  An unbiased estimator's mean ratio lies within 3.5 se of 1 (a two-sided miss has probability
about 5e-4 per figure); the issue asks for the bias within 10%.
"""

import autograd.numpy as anp
import numpy as np
import pytest

from efvi.inference import vpng

START = np.array([0.3, -0.2])


def _toy_estimates(sigma, n_inner, repetitions, control_variate):
    toy = vpng.BivariateToy.simulate(n=20, epsilon=0.01, sigma=sigma)
    exact = toy.predictive_fisher()
    values, vectors = np.linalg.eigh(exact)

    def predict(params, noise):
        return params + sigma * noise

    def log_q(params, latent):
        return -0.5 * anp.sum((latent - params) ** 2, axis=-1) / sigma ** 2
    extra = {"latent": predict, "log_q": log_q} if control_variate else {}
    ratios = []
    for repetition in range(repetitions):
        estimate = vpng.predictive_fisher_mc(predict, START, vpng.GaussianOutput(toy.likelihood_cov), noise_dim=2,
                                             n_outer=500, n_inner=n_inner, seed=1000 + repetition, **extra)
        ratios.append([np.trace(estimate) / np.trace(exact), *(np.diag(vectors.T @ estimate @ vectors) / values)])
    ratios = np.array(ratios)
    return ratios.mean(axis=0), ratios.std(axis=0, ddof=1) / np.sqrt(repetitions)


@pytest.mark.parametrize("n_inner, repetitions", [(50, 40), (400, 10)])
def test_control_variate_estimate_is_unbiased_on_the_near_singular_toy(n_inner, repetitions):
    mean, standard_error = _toy_estimates(0.5, n_inner, repetitions, control_variate=True)
    assert np.all(np.abs(mean - 1) < 3.5 * standard_error), (mean, standard_error)
    assert np.all(np.abs(mean - 1) < 0.1), mean


def test_pathwise_estimate_is_unbiased_where_q_is_narrow_and_within_ten_percent_at_400_draws_where_wide():
    mean, standard_error = _toy_estimates(0.05, 50, 40, control_variate=False)
    assert np.all(np.abs(mean - 1) < 3.5 * standard_error), (mean, standard_error)
    mean, standard_error = _toy_estimates(0.5, 400, 10, control_variate=False)
    assert np.all(np.abs(mean - 1) < 0.1), mean


def test_conditional_importance_sampling_gives_an_unbiased_score_for_one_x():
    """One exact posterior draw among K - 1 prior draws: the self-normalised score's mean is the exact score.

    For a fixed x' the exact posterior of z = lambda + sigma eps is Gaussian; averaging the conditional estimate
    over 20000 sets of K = 5 particles gives the score (Sigma + sigma^2 I)^-1 (x' - lambda) within 4 standard
    errors; a plain self-normalised average of the K - 1 = 4 prior draws is further off.
    """
    sigma, cov = 0.5, vpng.toy_covariance(0.01)
    rng = np.random.default_rng(0)
    x = START + np.array([0.4, -0.3])
    posterior_cov = np.linalg.inv(np.linalg.inv(cov) + np.eye(2) / sigma ** 2)
    posterior_mean = posterior_cov @ (np.linalg.solve(cov, x) + START / sigma ** 2)
    sets, K = 20000, 5
    exact_draws = rng.multivariate_normal(posterior_mean, posterior_cov, size=sets)[:, None]
    particles = np.concatenate([exact_draws, START + sigma * rng.standard_normal((sets, K - 1, 2))], axis=1)
    residual = x - particles
    log_lik = -0.5 * np.einsum("skd,de,ske->sk", residual, np.linalg.inv(cov), residual)
    scores = residual @ np.linalg.inv(cov)                                              # pathwise: Sigma^-1 (x - z)
    exact = np.linalg.solve(cov + sigma ** 2 * np.eye(2), x - START)
    for first, unbiased in ((0, True), (1, False)):                   # with the exact draw; prior draws only
        weights = np.exp(log_lik[:, first:] - log_lik[:, first:].max(axis=1, keepdims=True))
        estimates = np.einsum("sk,skd->sd", weights / weights.sum(axis=1, keepdims=True), scores[:, first:])
        error = estimates.std(axis=0, ddof=1) / np.sqrt(sets)
        assert np.all(np.abs(estimates.mean(axis=0) - exact) < 4 * error) == unbiased, (estimates.mean(0), exact)


def test_control_variate_coefficient_picks_the_steadier_score_per_direction():
    rng = np.random.default_rng(2)
    target = rng.standard_normal((4000, 2))
    steady = target + np.array([0.01, 3.0]) * rng.standard_normal((4000, 2))            # good in coordinate 0
    noisy = target + np.array([3.0, 0.01]) * rng.standard_normal((4000, 2))             # good in coordinate 1
    coefficient = vpng.montecarlo.control_variate_coefficient(steady, noisy)
    np.testing.assert_allclose(coefficient, np.diag([0.0, 1.0]), atol=0.02)


def test_latent_and_log_q_come_together():
    with pytest.raises(ValueError, match=r"latent and log_q must be given together"):
        vpng.predictive_fisher_mc(lambda p, e: p + e, np.zeros(2), vpng.BernoulliOutput(), noise_dim=2,
                                  latent=lambda p, e: p + e)
    with pytest.raises(ValueError, match=r"log_q must be a function .*got 3"):
        vpng.predictive_fisher_mc(lambda p, e: p + e, np.zeros(2), vpng.BernoulliOutput(), noise_dim=2,
                                  latent=lambda p, e: p + e, log_q=3)
