"""Joint posterior draws of dense and sparse GP blocks (``sample``, ``sample_joint``) against their moments.

References are independent of the posteriors' ``predict``: the dense GP's
posterior from ``(K^{-1} + Pi)^{-1}`` written with ``B = I + S K S``, the sparse
GP's ``q(f)`` from its inducing posterior ``q(u) = N(m_u, S_u)`` pushed
through ``p(f | u)``.  Tolerances come from the number of draws.
"""

import numpy as np
from scipy import stats

from efvi.models import gp
from efvi.models.gp._sparse_posterior import InducingView

K = gp.kernels
KERNEL = K.Matern32(lengthscale=1.2, variance=0.9)
N_DRAWS = 40000
FALSE_ALARM = 1e-6


def _within_monte_carlo_error(draws, mean, cov):
    """Sample mean and covariance within ``z`` standard errors of ``mean``, ``cov`` (Bonferroni over entries)."""
    n, m = draws.shape
    z = stats.norm.isf(FALSE_ALARM / (2 * (m + m * (m + 1) // 2)))
    variances = np.diag(cov)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= z * np.sqrt(variances / n))
    standard_error = np.sqrt((np.outer(variances, variances) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(draws.T) - cov) <= z * standard_error + 1e-12)


def _sites(rng, n):
    return rng.normal(size=n), rng.uniform(0.5, 4.0, n)


def test_dense_gp_draws_at_its_inputs_and_at_new_inputs_have_the_posterior_moments():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 6.0, (15, 1))
    X_new = np.array([[-0.5], [2.0], [7.0]])
    block = gp.GP(KERNEL, X, mean=0.3)
    gamma, pi = _sites(rng, 15)
    q = block.posterior((gamma, pi))
    both = np.vstack([X, X_new])
    Kmat = KERNEL(both)
    S = np.zeros(18)
    S[:15] = np.sqrt(pi)
    B = np.eye(18) + S[:, None] * Kmat * S[None, :]
    cov = Kmat - (Kmat * S[None, :]) @ np.linalg.solve(B, S[:, None] * Kmat)
    shifted = np.concatenate([gamma - pi * 0.3, np.zeros(3)])       # the sites on g = f - mean
    mean = cov @ shifted + 0.3
    own = q.sample(np.random.default_rng(1), N_DRAWS)
    assert own.shape == (N_DRAWS, 15)
    _within_monte_carlo_error(own, mean[:15], cov[:15, :15])
    own, new = q.sample_joint(np.random.default_rng(2), N_DRAWS, X_new)
    _within_monte_carlo_error(np.hstack([own, new]), mean, cov)


def test_sparse_gp_draws_are_the_inducing_posterior_through_the_prior_conditional():
    rng = np.random.default_rng(3)
    X = rng.uniform(0.0, 6.0, (20, 1))
    Z = np.linspace(0.0, 6.0, 6)[:, None]
    block = gp.SparseGP(KERNEL, X, Z, mean=-0.2)
    gamma, pi = _sites(rng, 20)
    q = block.posterior(InducingView(block, 20).message((gamma, pi), None))
    inducing = q.inducing
    X_new = np.array([[1.1], [8.0]])
    both = np.vstack([X, X_new])
    Kzz = KERNEL(Z) + block.jitter * np.eye(6)
    A = np.linalg.solve(Kzz, KERNEL(Z, both)).T
    mean = -0.2 + A @ (inducing.mean - (-0.2))
    cov = KERNEL(both) - A @ KERNEL(Z, both) + A @ inducing.cov @ A.T
    own, new = q.sample_joint(np.random.default_rng(4), N_DRAWS, X_new)
    _within_monte_carlo_error(np.hstack([own, new]), mean, cov)
    np.testing.assert_allclose(mean[:20], q.mean, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(np.diag(cov)[:20], q.var, rtol=1e-6, atol=1e-7)
    assert q.sample(np.random.default_rng(5), 3).shape == (3, 20)
