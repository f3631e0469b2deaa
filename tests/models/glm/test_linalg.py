"""The GLM's blocked BLAS passes against dense numpy formulas."""

import numpy as np
import pytest

from efvi.models.glm import _linalg


def _problem(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim))
    A = rng.normal(size=(dim, dim))
    cov = A @ A.T / dim + 0.1 * np.eye(dim)
    return rng, X, cov


@pytest.mark.parametrize("n", [1, 7, _linalg.ROW_BLOCK, 2 * _linalg.ROW_BLOCK + 13])
def test_marginals_match_dense(n):
    rng, X, cov = _problem(n, 6)
    mean = rng.normal(size=6)
    X_before = X.copy()
    means, variances = _linalg.marginals(X, mean, np.linalg.cholesky(np.linalg.inv(cov)))
    np.testing.assert_allclose(means, X @ mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(variances, np.einsum("nd,de,ne->n", X, cov, X), rtol=1e-11)
    np.testing.assert_array_equal(X, X_before)          # the in-place triangular solve works on a copy


@pytest.mark.parametrize("n", [1, _linalg.ROW_BLOCK + 5])
@pytest.mark.parametrize("signed", [False, True])
def test_gram_and_projection_match_dense(n, signed):
    rng, X, _ = _problem(n, 5, seed=1)
    weights = rng.normal(size=n) if signed else rng.random(n)
    vector = rng.normal(size=n)
    projection, gram = _linalg.gram_and_projection(X, weights, vector)
    np.testing.assert_allclose(projection, X.T @ vector, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gram, X.T @ (weights[:, None] * X), rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(gram, gram.T)
    assert _linalg.gram_and_projection(X, weights, None)[0] is None
    np.testing.assert_array_equal(_linalg.weighted_gram(X, weights), gram)
