"""The VPNG optimiser: its step on the toy is the hand formula; without curvature it is RMSprop; bad input named."""

import numpy as np
import pytest

from efvi.inference import vpng


def test_step_on_the_toy_matches_the_hand_formula():
    toy = vpng.BivariateToy.simulate(n=20, epsilon=0.01, sigma=0.05)
    fisher = toy.predictive_fisher()
    learning_rate, decay, damping, eps = 0.05, 0.9, 1e-3, 1e-8
    optimizer = vpng.VPNG(learning_rate, decay=decay, damping=damping, epsilon=eps)
    mean, square_avg = np.array([-1.0, 0.5]), np.zeros(2)
    params = mean.copy()
    for _ in range(3):
        direction = np.linalg.solve(fisher + damping * np.eye(2), toy.elbo_gradient(mean))
        square_avg = decay * square_avg + (1 - decay) * direction ** 2
        mean = mean + learning_rate * direction / (np.sqrt(square_avg) + eps)
        params = optimizer.step(params, toy.elbo_gradient(params), fisher)
        np.testing.assert_allclose(params, mean, rtol=1e-12)
    np.testing.assert_allclose(optimizer.square_avg_[0], square_avg, rtol=1e-12)
    assert optimizer.n_steps_ == 3


def test_natural_direction_is_theorem_1_preconditioning():
    toy = vpng.BivariateToy.simulate(n=5, epsilon=0.1, sigma=0.2)
    gradient = toy.elbo_gradient(np.zeros(2))
    direction = vpng.VPNG(damping=0.0).natural_direction(gradient, toy.predictive_fisher())
    np.testing.assert_allclose(direction, (toy.likelihood_cov + 0.04 * np.eye(2)) @ gradient, rtol=1e-10)


def test_without_curvature_it_is_rmsprop_on_lists_of_arrays():
    optimizer = vpng.VPNG(0.1, decay=0.5)
    params = [np.ones((2, 2)), np.zeros(3)]
    grads = [np.full((2, 2), 2.0), np.array([1.0, -1.0, 0.0])]
    new = optimizer.step(params, grads)
    np.testing.assert_allclose(new[0], 1 + 0.1 * 2 / (np.sqrt(0.5 * 4) + 1e-8))
    np.testing.assert_allclose(new[1], [0.1 / np.sqrt(0.5), -0.1 / np.sqrt(0.5), 0.0], rtol=1e-7)


def test_a_kronecker_fisher_plugs_in_through_solve():
    fisher = vpng.KroneckerFisher(decay=0.0)
    fisher.update([np.eye(3)], [np.eye(2)[[0, 1, 0]]])
    grads = [np.ones((3, 2)), np.ones(2)]
    optimizer = vpng.VPNG(0.1, damping=0.01)
    for got, want in zip(optimizer.natural_direction(grads, fisher), fisher.solve(grads, 0.01)):
        np.testing.assert_allclose(got, want)


def test_bad_optimizer_input_is_named():
    with pytest.raises(ValueError, match=r"learning_rate must be a positive finite float; got -0.1"):
        vpng.VPNG(-0.1)
    with pytest.raises(ValueError, match=r"decay must be a float in \[0, 1\); got 1.0"):
        vpng.VPNG(decay=1.0)
    with pytest.raises(ValueError, match=r"damping must be a finite float >= 0; got nan"):
        vpng.VPNG(damping=float("nan"))
    with pytest.raises(ValueError, match=r"fisher must be a \(P, P\) matrix .*got fisher of shape \(3, 3\) and "
                                         r"gradient of shape \(2,\)"):
        vpng.VPNG().step(np.zeros(2), np.ones(2), np.eye(3))
    with pytest.raises(ValueError, match=r"gradient must be finite"):
        vpng.VPNG().step(np.zeros(2), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"gradient must match params in layout"):
        vpng.VPNG().step([np.zeros(2)], [np.ones(3)])
