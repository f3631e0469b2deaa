"""The bivariate toy of seed 001, section 3: Theorem 1, the corrected ELBO gradient, the three directions."""

import numpy as np
import pytest
from autograd import grad, hessian
from scipy import stats

from efvi.inference import vpng


@pytest.mark.parametrize("epsilon, sigma", [(0.5, 1.0), (0.01, 0.05), (1e-3, 1e-3), (1.5, 0.3)])
def test_theorem_1_predictive_fisher_is_inverse_of_sigma_plus_sigma2(epsilon, sigma):
    toy = vpng.BivariateToy.simulate(n=7, epsilon=epsilon, sigma=sigma)
    expected = np.linalg.inv(np.array([[1.0, 1.0 - epsilon], [1.0 - epsilon, 1.0]]) + sigma ** 2 * np.eye(2))
    np.testing.assert_allclose(toy.predictive_fisher(), expected, rtol=1e-10)


def test_theorem_1_against_nested_monte_carlo_of_the_definition():
    epsilon, sigma = 0.3, 0.4
    toy = vpng.BivariateToy.simulate(n=5, epsilon=epsilon, sigma=sigma)
    estimate = vpng.predictive_fisher_mc(lambda params, noise: params + sigma * noise, np.array([0.3, -0.2]),
                                         vpng.GaussianOutput(toy.likelihood_cov), noise_dim=2,
                                         n_outer=10000, n_inner=400, seed=1)
    exact = toy.predictive_fisher()
    np.testing.assert_allclose(estimate, exact, atol=0.04 * np.abs(exact).max())


@pytest.mark.parametrize("epsilon", [0.5, 0.01])
def test_corrected_elbo_gradient_and_hessian_match_autograd(epsilon):
    toy = vpng.BivariateToy.simulate(n=13, epsilon=epsilon, sigma=0.2, seed=3)
    for mean in (np.zeros(2), np.array([1.3, -0.7]), np.array([-4.0, 2.5])):
        np.testing.assert_allclose(toy.elbo_gradient(mean), grad(toy.elbo)(mean), rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(toy.elbo_hessian(), hessian(toy.elbo)(np.zeros(2)), rtol=1e-10)


def test_the_papers_printed_gradient_is_not_the_gradient():
    toy = vpng.BivariateToy.simulate(n=13, epsilon=0.1, sigma=0.2, seed=3)
    mean, total = np.array([0.4, -0.3]), toy.data.sum(axis=0)
    printed = -mean + np.linalg.solve(toy.likelihood_cov, total - mean) / toy.n
    assert not np.allclose(printed, grad(toy.elbo)(mean), rtol=0.1)


def test_elbo_equals_a_monte_carlo_estimate_from_scipy():
    toy = vpng.BivariateToy.simulate(n=4, epsilon=0.4, sigma=0.3, seed=2)
    mean = np.array([0.2, 0.5])
    draws = mean + toy.sigma * np.random.default_rng(0).standard_normal((200000, 2))
    log_joint = stats.multivariate_normal(np.zeros(2), np.eye(2)).logpdf(draws)
    for x in toy.data:
        log_joint += stats.multivariate_normal(x, toy.likelihood_cov).logpdf(draws)
    entropy = stats.multivariate_normal(mean, toy.sigma ** 2 * np.eye(2)).entropy()
    estimate, error = log_joint.mean() + entropy, log_joint.std() / np.sqrt(len(draws))
    assert abs(toy.elbo(mean) - estimate) < 5 * error


def test_optimum_is_the_exact_posterior_mean_and_gradient_vanishes_there():
    toy = vpng.BivariateToy.simulate(n=9, epsilon=0.05, sigma=0.1, seed=4)
    precision = np.eye(2) + toy.n * np.linalg.inv(toy.likelihood_cov)
    posterior_mean = np.linalg.solve(precision, np.linalg.solve(toy.likelihood_cov, toy.data.sum(axis=0)))
    np.testing.assert_allclose(toy.optimum(), posterior_mean, rtol=1e-10)
    np.testing.assert_allclose(toy.elbo_gradient(toy.optimum()), 0.0, atol=1e-9)


def test_vpng_points_at_the_optimum_where_gradient_and_q_natural_gradient_do_not():
    toy = vpng.BivariateToy.simulate(n=20, epsilon=0.01, sigma=0.05, seed=0)
    start = toy.optimum() - np.array([2.0, 1.9])
    directions = toy.directions(start)
    cos = {name: vpng.cosine(directions[name], directions["to_optimum"]) for name in ("gradient", "q_natural", "vpng")}
    assert cos["gradient"] == pytest.approx(cos["q_natural"], abs=1e-12)       # F_q = I / sigma^2
    assert cos["vpng"] > 0.99 and cos["gradient"] < 0.3


def test_bad_toy_input_is_named():
    with pytest.raises(ValueError, match=r"epsilon must be a float in \(0, 2\).*got 2.5"):
        vpng.BivariateToy(np.zeros((3, 2)), 2.5, 0.1)
    with pytest.raises(ValueError, match=r"sigma must be a positive finite float; got -0.1"):
        vpng.BivariateToy(np.zeros((3, 2)), 0.1, -0.1)
    with pytest.raises(ValueError, match=r"data must have shape \(n, 2\).*got shape \(3, 3\)"):
        vpng.BivariateToy(np.zeros((3, 3)), 0.1, 0.1)
    toy = vpng.BivariateToy(np.zeros((3, 2)), 0.1, 0.1)
    with pytest.raises(ValueError, match=r"mean must have shape \(2,\); got shape \(3,\)"):
        toy.elbo_gradient(np.zeros(3))
