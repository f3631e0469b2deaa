"""State-space forms: autocovariance, Lyapunov, expm, joint covariance, gradients, errors."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
import scipy.linalg

from efvi.models.gp import kernels

from ._helpers import FD_RTOL, central_jacobian

LAGS = np.array([0.0, 1e-7, 1e-3, 0.05, 0.3, 0.9, 2.0, 5.0, 12.0])


def _state_space_kernels():
    return {
        "Matern12": kernels.Matern12(lengthscale=0.8, variance=1.3),
        "Matern32": kernels.Matern32(lengthscale=0.6, variance=2.0),
        "Matern52": kernels.Matern52(lengthscale=[1.4], variance=0.7),
        "Constant": kernels.Constant(variance=0.5),
        "Periodic": kernels.Periodic(period=1.7, lengthscale=1.1, variance=0.9),
        "Sum": kernels.Matern32(lengthscale=0.5) + kernels.Matern52(lengthscale=3.0, variance=0.4),
        "Scaled": 1.8 * kernels.Matern52(lengthscale=0.9),
        "Product": kernels.Matern32(lengthscale=1.2) * kernels.Matern12(lengthscale=2.5, variance=0.6),
        "QuasiPeriodic": kernels.Matern32(lengthscale=3.0) * kernels.Periodic(period=1.0, lengthscale=1.3),
        "Mixed": kernels.Matern12(lengthscale=0.3) + 0.5 * kernels.Matern52(lengthscale=2.0) + kernels.Constant(0.2),
    }


def _truncation_error(kernel):
    """Error bound of the state-space autocovariance (zero for exact forms)."""
    if isinstance(kernel, kernels.Periodic):
        return kernel.truncation_error()
    if isinstance(kernel, kernels.Product):
        periodic = [p for p in kernel.parts if isinstance(p, kernels.Periodic)]
        others = [p for p in kernel.parts if not isinstance(p, kernels.Periodic)]
        return sum(_truncation_error(p) for p in periodic) * np.prod([p.diag(np.zeros(1))[0] for p in others])
    return 0.0


CASES = _state_space_kernels()


@pytest.mark.parametrize("name", list(CASES))
def test_autocovariance_equals_kernel(name):
    kernel = CASES[name]
    ss = kernel.state_space()
    A, _ = kernel.discretise(LAGS)
    implied = np.einsum("i,tij,jk,k->t", ss.H, A, ss.Pinf, ss.H)
    scale = kernel.diag(np.zeros(1))[0]
    bound = _truncation_error(kernel) + 1e-13 * scale
    np.testing.assert_allclose(implied, kernel(np.zeros(1), LAGS)[0], rtol=0, atol=bound)
    assert ss.state_dim == kernel.state_dim == ss.H.shape[0]


@pytest.mark.parametrize("name", list(CASES))
def test_stationary_covariance_solves_lyapunov(name):
    ss = CASES[name].state_space()
    noise = ss.L @ ss.Qc @ ss.L.T
    residual = ss.F @ ss.Pinf + ss.Pinf @ ss.F.T + noise
    scale = np.abs(ss.F).max() * np.abs(ss.Pinf).max()
    np.testing.assert_allclose(residual, 0.0, rtol=0, atol=1e-13 * scale)
    np.testing.assert_array_equal(ss.Pinf, ss.Pinf.T)
    assert np.linalg.eigvalsh(ss.Pinf).min() > 0


@pytest.mark.parametrize("name", list(CASES))
def test_transition_equals_matrix_exponential(name):
    kernel = CASES[name]
    ss = kernel.state_space()
    # the periodic resonators spin at up to J * 2 pi / period: keep |F dt| moderate for scipy's expm
    lags = LAGS[LAGS <= 2.0] if kernel.state_dim > 3 else LAGS
    A, Q = kernel.discretise(lags)
    expm = np.array([scipy.linalg.expm(ss.F * dt) for dt in lags])
    np.testing.assert_allclose(A, expm, rtol=0, atol=1e-12 * np.abs(expm).max())
    np.testing.assert_array_equal(Q, np.swapaxes(Q, 1, 2))
    np.testing.assert_allclose(Q, ss.Pinf - A @ ss.Pinf @ np.swapaxes(A, 1, 2), rtol=0, atol=1e-15 * np.abs(ss.Pinf).max())


def test_matern_closed_forms_from_the_brief():
    ell, s2, dt = 0.7, 1.6, np.array([0.0, 0.2, 1.3])
    lam = np.sqrt(3.0) / ell
    ss = kernels.Matern32(lengthscale=ell, variance=s2).state_space()
    np.testing.assert_allclose(ss.F, [[0.0, 1.0], [-(lam**2), -2.0 * lam]], rtol=1e-15)
    np.testing.assert_allclose(ss.Pinf, np.diag([s2, lam**2 * s2]), rtol=1e-15)
    A, _ = kernels.Matern32(lengthscale=ell, variance=s2).discretise(dt)
    expected = np.exp(-lam * dt)[:, None, None] * np.array(
        [[[1 + lam * d, d], [-(lam**2) * d, 1 - lam * d]] for d in dt]
    )
    np.testing.assert_allclose(A, expected, rtol=1e-14, atol=1e-15)
    ss52 = kernels.Matern52(lengthscale=ell, variance=s2).state_space()
    np.testing.assert_allclose(ss52.H @ ss52.Pinf @ ss52.H, s2, rtol=1e-15)


def _joint_covariance(A, Q, Pinf, H):
    """Covariance of (f_1, ..., f_T) from the recursion x_1 ~ N(0, Pinf), x_k = A_k x_{k-1} + q_k."""
    T, d = A.shape[0], Pinf.shape[0]
    P = np.zeros((T, T, d, d))
    P[0, 0] = Pinf
    for k in range(1, T):
        for j in range(k):
            P[k, j] = A[k] @ P[k - 1, j]
            P[j, k] = P[k, j].T
        P[k, k] = A[k] @ P[k - 1, k - 1] @ A[k].T + Q[k]
    return np.einsum("i,abij,j->ab", H, P, H)


@pytest.mark.parametrize("name", list(CASES))
def test_joint_covariance_on_irregular_times_equals_dense(name):
    kernel = CASES[name]
    t = np.sort(np.random.default_rng(4).uniform(0.0, 6.0, size=25))
    t[7] = t[6]  # a zero gap
    A, Q = kernel.discretise(np.diff(t, prepend=t[0]))
    ss = kernel.state_space()
    scale = kernel.diag(np.zeros(1))[0]
    bound = _truncation_error(kernel) + 1e-10 * scale
    np.testing.assert_allclose(_joint_covariance(A, Q, ss.Pinf, ss.H), kernel(t), rtol=0, atol=bound)


def _check_projected_gradient(f, theta, shapes, seed):
    """Gradient of random projections ``sum_i <W_i, out_i>`` of ``f``'s outputs: autograd vs differences.

    A random projection weighs every output entry, so one backward pass per
    projection checks the whole Jacobian (a full Jacobian of a 57-dimensional
    quasi-periodic state would take tens of thousands of passes).
    """
    rng = np.random.default_rng(seed)
    for _ in range(2):
        weights = [rng.normal(size=shape) for shape in shapes]

        def projection(log_params):
            return sum(anp.sum(w * out) for w, out in zip(weights, f(log_params)))

        exact = autograd.grad(projection)(theta)
        assert np.all(np.isfinite(exact))
        numeric = central_jacobian(projection, theta)[0]
        np.testing.assert_allclose(exact, numeric, rtol=0, atol=FD_RTOL * np.abs(exact).max())


@pytest.mark.parametrize("name", list(CASES))
def test_discretise_fn_gradient_matches_finite_differences(name):
    kernel = CASES[name]
    dt = np.array([0.0, 0.04, 0.5, 1.7])
    f = kernel.discretise_fn(dt)
    theta = kernel.log_params
    A, Q = f(theta)
    A_fast, Q_fast = kernel.discretise(dt)
    np.testing.assert_allclose(A, A_fast, rtol=1e-14, atol=1e-14 * np.abs(A_fast).max())
    np.testing.assert_allclose(Q, Q_fast, rtol=1e-13, atol=1e-14 * np.abs(kernel.state_space().Pinf).max())
    _check_projected_gradient(f, theta, [A.shape, Q.shape], seed=5)


@pytest.mark.parametrize("name", list(CASES))
def test_stationary_cov_fn_gradient_matches_finite_differences(name):
    kernel = CASES[name]
    f = kernel.stationary_cov_fn()
    theta = kernel.log_params
    Pinf = f(theta)
    np.testing.assert_allclose(Pinf, kernel.state_space().Pinf, rtol=1e-14, atol=1e-300)
    _check_projected_gradient(lambda x: (f(x),), theta, [Pinf.shape], seed=6)


def test_periodic_truncation_error_is_exact_and_default_is_negligible():
    coarse = kernels.Periodic(period=2.0, lengthscale=0.7, variance=1.4, n_harmonics=3)
    ss = coarse.state_space()
    lags = np.linspace(0.0, 4.0, 41)
    A, _ = coarse.discretise(lags)
    error = np.einsum("i,tij,jk,k->t", ss.H, A, ss.Pinf, ss.H) - coarse(np.zeros(1), lags)[0]
    bound = coarse.truncation_error()
    assert bound > 1e-3  # three harmonics are visibly truncated
    np.testing.assert_allclose(-error[0], bound, rtol=1e-12)  # attained at lag 0 (and at the period)
    np.testing.assert_allclose(-error[20], bound, rtol=1e-10)
    assert np.abs(error).max() <= bound * (1 + 1e-12)
    auto = kernels.Periodic(period=2.0, lengthscale=0.7, variance=1.4)
    assert auto.truncation_error() <= 1e-12 * 1.4
    assert kernels.Periodic(lengthscale=0.7, n_harmonics=auto.n_harmonics - 1).truncation_error() > 1e-12


def test_discretised_state_space_is_a_valid_prior():
    kernel = kernels.Matern52(lengthscale=0.4) + kernels.Matern12(lengthscale=5.0)
    _, Q = kernel.discretise(np.array([1e-9, 1e-3, 1.0, 100.0]))
    scale = np.abs(kernel.state_space().Pinf).max()
    assert all(np.linalg.eigvalsh(q).min() >= -1e-12 * scale for q in Q)


@pytest.mark.parametrize(
    "kernel", [kernels.RBF(), kernels.Linear(), kernels.White(), kernels.Matern32() + kernels.RBF()]
)
def test_kernels_without_state_space_raise(kernel):
    with pytest.raises(NotImplementedError, match="no finite-dimensional state-space form"):
        kernel.state_space()
    for method in (kernel.discretise, kernel.discretise_fn):
        with pytest.raises(NotImplementedError, match="no finite-dimensional state-space form"):
            method(np.ones(3))
    with pytest.raises(NotImplementedError, match="no finite-dimensional state-space form"):
        kernel.stationary_cov_fn()


def test_state_space_needs_scalar_time_and_valid_gaps():
    with pytest.raises(ValueError, match="needs a scalar input"):
        kernels.Matern32(lengthscale=[1.0, 2.0]).state_space()
    with pytest.raises(ValueError, match=r"dt must be >= 0.*dt\[1\] = -0.5"):
        kernels.Matern32().discretise(np.array([0.1, -0.5]))
    with pytest.raises(ValueError, match="dt must be finite"):
        kernels.Matern32().discretise_fn(np.array([np.nan]))
    with pytest.raises(ValueError, match="dt must be a 1-D array"):
        kernels.Matern32().discretise(np.ones((2, 2)))
    with pytest.raises(ValueError, match="pass n_harmonics"):
        kernels.Periodic(lengthscale=0.02).state_space()
