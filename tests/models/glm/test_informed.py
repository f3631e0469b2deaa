"""The diagonal GLM's start: weighted least squares by conjugate gradients, against a dense solve."""

import numpy as np

from efvi.models.glm._informed import informed_weights


def test_informed_weights_solve_the_weighted_least_squares_system():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    gamma, pi = rng.normal(size=300), rng.gamma(2.0, 1.0, size=300)
    prior_mean, prior_var = rng.normal(size=6), rng.uniform(0.5, 4.0, size=6)
    dense = np.linalg.solve(np.diag(1.0 / prior_var) + X.T @ (pi[:, None] * X), prior_mean / prior_var + X.T @ gamma)
    np.testing.assert_allclose(informed_weights(X, gamma, pi, prior_mean, prior_var), dense, rtol=1e-4)


def test_informed_weights_decline_an_indefinite_system():
    X = np.ones((3, 2))
    assert informed_weights(X, np.zeros(3), np.array([1.0, -1.0, 1.0]), np.zeros(2), np.ones(2)) is None
    assert informed_weights(X, np.array([0.0, np.inf, 0.0]), np.ones(3), np.zeros(2), np.ones(2)) is None
