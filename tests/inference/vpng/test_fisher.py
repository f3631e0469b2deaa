"""F_r of Gaussian-linear models: the closed form against an autograd Gaussian Fisher and nested Monte Carlo;
the Gauss-Newton F_r' against its definition; Kronecker factors against the dense layer Fisher."""

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad, jacobian

from efvi.inference import vpng

DESIGN = np.array([[1.0, 0.5], [-0.3, 2.0], [0.8, 0.8]])
NOISE = np.array([[0.5, 0.1, 0.0], [0.1, 0.4, 0.05], [0.0, 0.05, 0.3]])
STD = np.array([0.7, 0.4])


def _gaussian_fisher_by_autograd(design, noise, params):
    """Fisher of N(A m, noise + A diag(exp(2 log s)) A^T) in (m, log s), from the general Gaussian formula."""
    def mean(p):
        return design @ p[:2]

    def cov(p):
        return noise + design @ anp.diag(anp.exp(2 * p[2:])) @ design.T
    d_mean, d_cov = jacobian(mean)(params), jacobian(cov)(params)                   # (d, P), (d, d, P)
    precision = np.linalg.inv(cov(params))
    scaled = np.einsum("ab,bci->aci", precision, d_cov)                               # P dC_i
    return d_mean.T @ precision @ d_mean + 0.5 * np.einsum("abi,baj->ij", scaled, scaled)


def test_closed_form_equals_the_general_gaussian_fisher():
    params = np.concatenate([[0.2, -1.0], np.log(STD)])
    closed = vpng.linear_gaussian_fisher(DESIGN, NOISE, STD, wrt="mean_and_log_std")
    np.testing.assert_allclose(closed, _gaussian_fisher_by_autograd(DESIGN, NOISE, params), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(vpng.linear_gaussian_fisher(DESIGN, NOISE, STD), closed[:2, :2], rtol=1e-12)


def test_closed_form_equals_nested_monte_carlo():
    def predict(params, noise):
        latent = params[..., :2] + anp.exp(params[..., 2:]) * noise
        return latent @ DESIGN.T
    params = np.concatenate([[0.2, -1.0], np.log(STD)])
    estimate = vpng.predictive_fisher_mc(predict, params, vpng.GaussianOutput(NOISE), noise_dim=2,
                                         n_outer=10000, n_inner=400, seed=0)
    exact = vpng.linear_gaussian_fisher(DESIGN, NOISE, STD, wrt="mean_and_log_std")
    # Monte Carlo error about 2 / sqrt(n_outer) of the largest entry, plus an O(1 / n_inner) bias (about 3% here)
    np.testing.assert_allclose(estimate, exact, atol=0.05 * np.abs(exact).max())


def test_per_point_designs_average_the_per_point_fishers():
    designs = np.stack([DESIGN, 2 * DESIGN, DESIGN[::-1]])
    average = np.mean([vpng.linear_gaussian_fisher(d, NOISE, STD, wrt="mean_and_log_std") for d in designs], axis=0)
    np.testing.assert_allclose(vpng.linear_gaussian_fisher(designs, NOISE, STD, wrt="mean_and_log_std"), average)


def test_gauss_newton_is_the_zero_width_limit_in_a_linear_model():
    def predict(params, noise):
        return (params + 0.3 * noise) @ DESIGN.T
    gauss_newton = vpng.gauss_newton_fisher(predict, np.array([0.1, 0.2]), vpng.GaussianOutput(NOISE), noise_dim=2)
    np.testing.assert_allclose(gauss_newton, DESIGN.T @ np.linalg.solve(NOISE, DESIGN), rtol=1e-10)
    np.testing.assert_allclose(gauss_newton, vpng.linear_gaussian_fisher(DESIGN, NOISE, 1e-8), rtol=1e-8)


def test_gauss_newton_equals_the_expected_outer_product_of_scores_of_r_prime():
    def predict(params, noise):
        return (params[..., :2] + anp.exp(params[..., 2:]) * noise) @ DESIGN.T
    params = np.array([0.3, -0.4, np.log(0.5), np.log(0.8)])
    output, n = vpng.BernoulliOutput(), 100000
    rng = np.random.default_rng(5)
    noise = rng.standard_normal((n, 2))
    new_data = output.sample(predict(params, noise), rng)
    scores = grad(lambda rows: anp.sum(output.log_prob(new_data, predict(rows, noise))))(np.tile(params, (n, 1)))
    monte_carlo = scores.T @ scores / n
    exact = vpng.gauss_newton_fisher(predict, params, output, noise_dim=2, n_samples=n, seed=5)
    np.testing.assert_allclose(monte_carlo, exact, atol=0.03 * np.abs(exact).max())


def test_kronecker_factors_of_one_layer_are_exact_for_a_single_example():
    rng = np.random.default_rng(0)
    a, delta = rng.standard_normal((1, 3)), rng.standard_normal((1, 2))
    fisher = vpng.KroneckerFisher(decay=0.0)
    fisher.update([a], [delta])
    W, b = rng.standard_normal((3, 2)), rng.standard_normal(2)
    damping = 0.3
    solved = fisher.solve([W, b], damping)
    a1 = np.append(a[0], 1.0)
    A, G = np.outer(a1, a1), np.outer(delta[0], delta[0])
    pi = np.sqrt((np.trace(A) / 4) / (np.trace(G) / 2))
    dense = np.kron(A + pi * np.sqrt(damping) * np.eye(4), G + np.sqrt(damping) / pi * np.eye(2))
    stacked = np.linalg.solve(dense, np.vstack([W, b]).ravel()).reshape(4, 2)          # row-major vec: A (x) G
    np.testing.assert_allclose(solved[0], stacked[:-1], rtol=1e-10)
    np.testing.assert_allclose(solved[1], stacked[-1], rtol=1e-10)


def test_low_rank_factors_of_full_rank_equal_the_exact_solve_and_truncate_otherwise():
    rng = np.random.default_rng(1)
    inputs, deltas = [rng.standard_normal((50, 6))], [rng.standard_normal((50, 4))]
    grads = [rng.standard_normal((6, 4)), rng.standard_normal(4)]
    exact, full, low = (vpng.KroneckerFisher(rank=rank) for rank in (None, 7, 2))
    for fisher in (exact, full, low):
        fisher.update(inputs, deltas)
    for got, want in zip(full.solve(grads, 0.1), exact.solve(grads, 0.1)):
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10)
    A, G = exact.factors_[0]

    def truncated(factor):                                                          # the top two eigenpairs
        values, vectors = np.linalg.eigh(factor)
        return vectors[:, -2:] @ np.diag(values[-2:]) @ vectors[:, -2:].T
    pi = np.sqrt((np.trace(A) / 7) / (np.trace(G) / 4))
    stacked = np.linalg.solve(truncated(A) + pi * np.sqrt(0.1) * np.eye(7), np.vstack([grads[0], grads[1]]))
    stacked = np.linalg.solve(truncated(G) + np.sqrt(0.1) / pi * np.eye(4), stacked.T).T
    np.testing.assert_allclose(np.vstack([low.solve(grads, 0.1)[0], low.solve(grads, 0.1)[1]]), stacked, rtol=1e-8)


def test_bad_fisher_input_is_named():
    with pytest.raises(ValueError, match=r"design must have shape .*got shape \(3,\)"):
        vpng.linear_gaussian_fisher(np.ones(3), 1.0, 1.0)
    with pytest.raises(ValueError, match=r"noise_cov must be > 0; got -1.0"):
        vpng.linear_gaussian_fisher(DESIGN, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"noise_cov must be a positive float or a \(3, 3\) matrix.*got shape \(2, 2\)"):
        vpng.linear_gaussian_fisher(DESIGN, np.eye(2), 1.0)
    with pytest.raises(ValueError, match=r"q_std must be > 0; got 0.0"):
        vpng.linear_gaussian_fisher(DESIGN, 1.0, [1.0, 0.0])
    with pytest.raises(ValueError, match=r"wrt must be one of .*got 'std'"):
        vpng.linear_gaussian_fisher(DESIGN, 1.0, 1.0, wrt="std")
    with pytest.raises(ValueError, match=r"predict must be a function .*got 3"):
        vpng.gauss_newton_fisher(3, np.zeros(2), vpng.BernoulliOutput(), noise_dim=2)
    with pytest.raises(ValueError, match=r"noise_dim must be an integer >= 1; got 0"):
        vpng.gauss_newton_fisher(lambda p, e: p + e, np.zeros(2), vpng.BernoulliOutput(), noise_dim=0)
    with pytest.raises(ValueError, match=r"output must provide sample, log_prob and fisher"):
        vpng.predictive_fisher_mc(lambda p, e: p + e, np.zeros(2), "gaussian", noise_dim=2)
    with pytest.raises(ValueError, match=r"predict must map params and noise"):
        vpng.gauss_newton_fisher(lambda p, e: anp.sum(p + e), np.zeros(2), vpng.BernoulliOutput(), noise_dim=2)
    with pytest.raises(ValueError, match=r"damping must be > 0 for Kronecker factors .*got 0.0"):
        fisher = vpng.KroneckerFisher()
        fisher.update([np.ones((2, 3))], [np.ones((2, 2))])
        fisher.solve([np.ones((3, 2)), np.ones(2)], 0.0)
