"""Forward filtering, backward sampling (:mod:`efvi.models.lds.sampling`): joint draws of a state-space posterior.

The draws are checked three ways: the compiled backward pass against a slow
numpy FFBS written from the filter's moments (the same normals give the same
draws); the sample moments against the smoother's marginals and against the
dense posterior covariance, with tolerances from the number of draws; and a
low-memory block against a stored one (bit for bit).
"""

import numpy as np
import pytest
from scipy import stats

from efvi.models import gp, lds
from efvi.models.lds import prior as lds_prior
from efvi.models.lds.sampling import backward_draws

K = gp.kernels
KERNEL = K.Matern52(lengthscale=2.0, variance=1.1) + K.Matern12(lengthscale=0.5, variance=0.2)
FALSE_ALARM = 1e-6
"""Chance that a correct sampler fails one of the Monte Carlo checks below (Bonferroni over the entries)."""


def _problem(T=30, seed=0):
    """A Markov GP on irregular times with a tied pair (a singular backward conditional) and positive sites."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 12.0, T))
    t[7] = t[6]
    gamma, pi = rng.normal(size=T), rng.uniform(0.5, 3.0, T)
    pi[[3, 20]] = 0.0
    gamma[[3, 20]] = 0.0
    block = lds.MarkovGP(KERNEL, t)
    return block, block.posterior((gamma, pi))


def _dense_posterior(block, q):
    """Mean and covariance of ``f`` from the ``T x T`` kernel matrix (``B = I + S K S``, safe at tied times)."""
    Kmat = block.kernel(block.t)
    S = np.sqrt(q.precision)
    B = np.eye(Kmat.shape[0]) + S[:, None] * Kmat * S[None, :]
    cov = Kmat - (Kmat * S[None, :]) @ np.linalg.solve(B, S[:, None] * Kmat)
    return cov @ q.natural_mean, cov


def _z(n_checks):
    return stats.norm.isf(FALSE_ALARM / (2 * n_checks))


def _numpy_ffbs(block, q, normals):
    """Textbook FFBS from :func:`lds.kalman_filter`'s moments: ``x_t | x_{t+1}`` with gain ``P_t A^T Pp^{-1}``."""
    A, _ = lds_prior.segment_of(block._transitions(), 0, block.n_points)
    f = lds.kalman_filter(q.natural_mean, q.precision, block.H[0], A, block.Q, block.m0, block.P0)
    T, n, d = normals.shape
    x = f.means[-1] + normals[0] @ np.linalg.cholesky(f.covs[-1]).T
    out = np.empty((n, T))
    out[:, -1] = x @ block.H[0]
    for t in range(T - 2, -1, -1):
        gain = np.linalg.solve(f.pred_covs[t + 1], A[t + 1] @ f.covs[t]).T
        cond = f.covs[t] - gain @ A[t + 1] @ f.covs[t]
        root = np.linalg.cholesky(0.5 * (cond + cond.T))
        x = f.means[t] + (x - f.pred_means[t + 1]) @ gain.T + normals[T - 1 - t] @ root.T
        out[:, t] = x @ block.H[0]
    return out


def test_compiled_backward_pass_equals_a_numpy_ffbs_where_the_conditionals_are_positive_definite():
    rng = np.random.default_rng(3)
    t = np.sort(rng.uniform(0.0, 12.0, 25))
    block = lds.MarkovGP(KERNEL, t)
    q = block.posterior((rng.normal(size=25), rng.uniform(0.5, 3.0, 25)))
    draws = q.sample(np.random.default_rng(5), 7)
    normals = np.random.default_rng(5).standard_normal((25, 7, block.state_dim))
    np.testing.assert_allclose(draws, _numpy_ffbs(block, q, normals), rtol=1e-9, atol=1e-9)


def test_draws_have_the_smoothers_marginals_and_the_dense_covariance():
    block, q = _problem()
    n = 40000
    draws = q.sample(np.random.default_rng(1), n)
    T = block.n_points
    assert draws.shape == (n, T) and np.all(np.isfinite(draws))
    # means: standard error sqrt(var / n)
    assert np.all(np.abs(draws.mean(axis=0) - q.mean) <= _z(T) * np.sqrt(q.var / n))
    # covariances: the sample covariance of Gaussian draws has standard error sqrt((S_ii S_jj + S_ij^2) / n)
    mean, cov = _dense_posterior(block, q)
    np.testing.assert_allclose(q.mean, mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(q.var, np.diag(cov), rtol=1e-8, atol=1e-8)
    error = np.cov(draws.T) - cov
    standard_error = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(error) <= _z(T * (T + 1) // 2) * standard_error)
    # the tied pair is one value of f in every draw
    np.testing.assert_allclose(draws[:, 7], draws[:, 6], rtol=0, atol=1e-8)


def test_joint_draws_at_new_times_have_the_predictive_moments():
    block, q = _problem()
    new = np.array([-1.0, 3.3, 5.0, 14.0])
    n = 40000
    own, at_new = q.sample_joint(np.random.default_rng(2), n, new)
    assert own.shape == (n, block.n_points) and at_new.shape == (n, 4)
    mean, cov = q.predict(new, full_cov=True)
    assert np.all(np.abs(at_new.mean(axis=0) - mean) <= _z(4) * np.sqrt(np.diag(cov) / n))
    standard_error = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(at_new.T) - cov) <= _z(10) * standard_error)
    assert np.all(np.abs(own.mean(axis=0) - q.mean) <= _z(block.n_points) * np.sqrt(q.var / n))


def test_a_general_lds_draws_at_its_steps_and_forecasts():
    rng = np.random.default_rng(4)
    A = np.array([[0.9, 0.2], [0.0, 0.8]])
    block = lds.LDS(A, 0.1 * np.eye(2), np.array([1.0, 0.5]), np.zeros(2), np.eye(2), n_steps=20)
    q = block.posterior((rng.normal(size=20), np.full(20, 2.0)))
    n = 40000
    own, ahead = q.sample_joint(np.random.default_rng(6), n, np.array([3, 21, 24]))
    np.testing.assert_array_equal(ahead[:, 0], own[:, 3])
    mean, cov = q.predict(np.array([3, 21, 24]), full_cov=True)
    assert np.all(np.abs(ahead.mean(axis=0) - mean) <= _z(3) * np.sqrt(np.diag(cov) / n))
    assert np.all(np.abs(own.var(axis=0) / q.var - 1.0) <= _z(20) * np.sqrt(2.0 / n))


def test_a_low_memory_block_draws_what_a_stored_block_draws(monkeypatch):
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", 8)
    _, stored = _problem(T=45)
    lean_block = lds.MarkovGP(KERNEL, stored._prior.t, low_memory=True)
    assert lean_block.low_memory and lean_block._workspace.segment_steps == 8
    lean = lean_block.posterior((stored.natural_mean, stored.precision))
    np.testing.assert_array_equal(lean.sample(np.random.default_rng(9), 50), stored.sample(np.random.default_rng(9), 50))


def test_invalid_sites_are_refused_as_the_smoother_refuses_them():
    block, _ = _problem()
    gamma, pi = np.zeros(30), np.full(30, -50.0)
    with pytest.raises(ValueError, match="invalid posterior at time step"):
        backward_draws(gamma, pi, block.H, block._transitions(), block.m0, block.P0, 3, np.random.default_rng(0))
