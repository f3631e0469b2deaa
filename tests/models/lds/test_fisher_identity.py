"""Fisher-identity gradients of log Z against finite differences, autograd of EM's expected log prior and a
dense expected log prior."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from efvi.models.lds import expected_log_prior, kalman_smoother, log_normaliser_grad

from .dense_reference import dense_posterior, dense_prior

T = 40
_rng = np.random.default_rng(10)
DT = _rng.uniform(0.05, 0.6, size=T)  # irregular time steps; DT[0] is unused
SITE_PRECISION = _rng.gamma(2.0, 1.0, size=T)
SITE_PRECISION[[3, 17, 18]] = 0.0
SITE_PRECISION[25] = -0.05
SITE_NATURAL_MEAN = np.where(SITE_PRECISION != 0.0, np.sin(np.cumsum(DT)) * SITE_PRECISION + 0.1, 0.0)
OBS_ROW = np.array([1.0, 0.0])


def matern32(theta):
    """Matern-3/2 state space, theta = (log lengthscale, log variance): A and Q both time-varying."""
    lam = np.sqrt(3.0) / anp.exp(theta[0])
    s2 = anp.exp(theta[1])
    decay = anp.exp(-lam * DT)[:, None, None]
    A = decay * anp.stack([anp.stack([1.0 + lam * DT, DT], -1), anp.stack([-lam**2 * DT, 1.0 - lam * DT], -1)], -2)
    P_inf = anp.array([[s2, 0.0], [0.0, lam**2 * s2]])
    Q = P_inf - anp.matmul(anp.matmul(A, P_inf), anp.swapaxes(A, -1, -2))
    return A, Q, anp.zeros(2), P_inf


def oscillator(theta):
    """Damped rotation with isotropic noise on a regular grid, theta = (log damping, log noise): A, Q constant."""
    decay, angle = anp.exp(-anp.exp(theta[0]) * 0.3), 0.4
    A = decay * anp.array([[np.cos(angle), np.sin(angle)], [-np.sin(angle), np.cos(angle)]])
    return A, anp.exp(theta[1]) * anp.eye(2), anp.array([0.5, -0.2]), anp.eye(2)


def drifting_noise(theta):
    """Constant A with time-varying Q_t = q DT_t I, theta = (log q, log a)."""
    A = anp.exp(theta[1]) * anp.array([[1.0, 0.1], [0.0, 1.0]])
    return A, anp.exp(theta[0]) * DT[:, None, None] * anp.eye(2), anp.zeros(2), 2.0 * anp.eye(2)


def varying_transition(theta):
    """Time-varying A_t with constant Q, theta = (log rate, noise scale)."""
    rate = anp.exp(-anp.exp(theta[0]) * DT)[:, None, None]
    A = rate * anp.eye(2) + 0.1 * DT[:, None, None] * anp.array([[0.0, 1.0], [0.0, 0.0]])
    return A, (0.5 + theta[1]**2) * anp.array([[1.0, 0.3], [0.3, 1.0]]), anp.zeros(2), anp.eye(2)


BUILDS = [(matern32, [np.log(0.7), np.log(1.3)]), (oscillator, [np.log(0.5), np.log(0.2)]),
          (drifting_noise, [np.log(0.8), np.log(0.95)]), (varying_transition, [np.log(0.6), 0.4])]


def _log_z(theta, build):
    A, Q, m0, P0 = build(np.asarray(theta))
    return kalman_smoother(SITE_NATURAL_MEAN, SITE_PRECISION, OBS_ROW, A, Q, m0, P0).log_normaliser


@pytest.mark.parametrize("build, theta", BUILDS, ids=[b.__name__ for b, _ in BUILDS])
def test_gradient_matches_central_finite_differences(build, theta):
    theta = np.asarray(theta)
    log_z, grad = log_normaliser_grad(theta, build, SITE_NATURAL_MEAN, SITE_PRECISION, OBS_ROW)
    assert log_z == _log_z(theta, build)
    step = 1e-5
    fd = np.array([(_log_z(theta + step * e, build) - _log_z(theta - step * e, build)) / (2 * step)
                   for e in np.eye(theta.size)])
    # central differences: truncation O(step^2) and rounding O(eps |log Z| / step), both below 1e-8 here
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-7)
    assert np.all(np.abs(grad) > 1e-3)  # the check is not vacuous


@pytest.mark.parametrize("build, theta", BUILDS, ids=[b.__name__ for b, _ in BUILDS])
def test_expected_log_prior_matches_dense_gaussian_expectation(build, theta):
    """E_q[log N(x; mu, Sigma)] = -1/2 [n log 2 pi + log|Sigma| + tr(Sigma^-1 (V + (m - mu)(m - mu)^T))]."""
    theta = np.asarray(theta)
    A, Q, m0, P0 = (np.asarray(x) for x in build(theta))
    A = np.broadcast_to(A, (T, 2, 2)).copy()
    Q = np.broadcast_to(Q, (T, 2, 2)).copy()
    smoothed = kalman_smoother(SITE_NATURAL_MEAN, SITE_PRECISION, OBS_ROW, A, Q, m0, P0)
    posterior = dense_posterior(SITE_NATURAL_MEAN, SITE_PRECISION, np.tile(OBS_ROW, (T, 1)), A, Q, m0, P0)
    mean0, cov0 = dense_prior(A, Q, m0, P0)
    V = np.linalg.inv(posterior["precision"])
    r = posterior["means"].ravel() - mean0
    expected = -0.5 * (2 * T * np.log(2 * np.pi) + np.linalg.slogdet(cov0)[1]
                       + np.trace(np.linalg.solve(cov0, V + np.outer(r, r))))
    assert expected_log_prior(theta, build, smoothed) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("build, theta", BUILDS, ids=[b.__name__ for b, _ in BUILDS])
def test_gradient_equals_that_of_the_expected_log_prior(build, theta):
    """The route without Q_t^{-1} against autograd of EM's Q function, which inverts Q_t (fine here)."""
    theta = np.asarray(theta)
    _, grad = log_normaliser_grad(theta, build, SITE_NATURAL_MEAN, SITE_PRECISION, OBS_ROW)
    A, Q, m0, P0 = build(theta)
    smoothed = kalman_smoother(SITE_NATURAL_MEAN, SITE_PRECISION, OBS_ROW, A, Q, m0, P0)
    np.testing.assert_allclose(grad, autograd.grad(expected_log_prior)(theta, build, smoothed), rtol=1e-10)


def rotation_plus_offset(theta):
    """Singular Q_t: a noiseless rotation by angle theta[0] DT_t (its only dependence on theta[0] is through
    A_t), a constant offset of variance exp(theta[1]) (A = 1, Q = 0) and an AR(1) part, theta = (angle rate,
    log offset variance, log decay)."""
    angle = theta[0] * DT
    c, s = anp.cos(angle), anp.sin(angle)
    decay = anp.exp(-anp.exp(theta[2]) * DT)
    zero, one = np.zeros(T), np.ones(T)
    A = anp.stack([anp.stack([c, -s, zero, zero], -1), anp.stack([s, c, zero, zero], -1),
                   anp.stack([zero, zero, one, zero], -1), anp.stack([zero, zero, zero, decay], -1)], -2)
    Q = anp.stack([anp.stack([zero, zero, zero, zero], -1)] * 3 + [anp.stack([zero, zero, zero, 1.0 - decay**2], -1)],
                  -2)
    P0 = anp.diag(anp.stack([1.0, 1.0, anp.exp(theta[1]), 1.0]))
    return A, Q, anp.zeros(4), P0


def test_gradient_with_singular_process_noise_matches_finite_differences():
    theta = np.array([2.0, np.log(0.7), np.log(0.4)])
    obs_row = np.array([1.0, 0.0, 1.0, 1.0])
    A, Q, m0, P0 = rotation_plus_offset(theta)
    assert np.all(np.linalg.matrix_rank(Q[1:]) == 1)

    def log_z(x):
        A, Q, m0, P0 = rotation_plus_offset(x)
        return kalman_smoother(SITE_NATURAL_MEAN, SITE_PRECISION, obs_row, A, Q, m0, P0).log_normaliser

    value, grad = log_normaliser_grad(theta, rotation_plus_offset, SITE_NATURAL_MEAN, SITE_PRECISION, obs_row)
    assert value == log_z(theta)
    step = 1e-5
    fd = np.array([(log_z(theta + step * e) - log_z(theta - step * e)) / (2 * step) for e in np.eye(3)])
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-7)
    assert np.all(np.abs(grad) > 1e-2)


def test_singular_predicted_covariance_raises_a_value_error():
    """A = 0 and Q = 0 leave nothing to invert: a ValueError naming the step, not a LinAlgError."""
    def degenerate(theta):
        return np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), anp.exp(theta[0]) * np.ones((1, 1))

    with pytest.raises(ValueError, match=r"time step 1\b.*singular"):
        log_normaliser_grad(np.zeros(1), degenerate, SITE_NATURAL_MEAN, SITE_PRECISION, [1.0])
