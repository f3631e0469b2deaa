"""The compiled discretisation of a Markov GP's kernel equals the autograd.numpy one of ``Kernel.discretise``.

Both build ``A_t = expm(F dt_t)`` and ``Q_t = Pinf - A_t Pinf A_t^T`` from
the same closed forms; the compiled one writes into given arrays.  Checked
for every kernel kind with a state-space form, alone and combined, on
irregular gaps with ties (``dt = 0``), tiny and very large gaps; and the
per-segment matrices of a low-memory Markov GP against the whole series'.
"""

import numpy as np
import pytest

from efvi.models import gp, lds
from efvi.models.gp.kernels import Matern32
from efvi.models.gp.kernels._compiled_statespace import covered, discretise, discretise_into
from efvi.models.lds import prior as lds_prior

K = gp.kernels

KERNELS = {
    "matern12": K.Matern12(lengthscale=0.7, variance=1.3),
    "matern32": K.Matern32(lengthscale=2.0, variance=0.5),
    "matern52": K.Matern52(lengthscale=3.3, variance=2.0),
    "matern32_ard": K.Matern32(lengthscale=[1.7], variance=0.4),
    "constant": K.Constant(variance=1.7),
    "periodic": K.Periodic(period=3.0, lengthscale=1.2, variance=0.9),
    "sum": K.Matern52(lengthscale=4.0) + K.Matern12(lengthscale=0.3, variance=0.1) + K.Constant(0.2),
    "product": K.Matern32(lengthscale=3.0) * K.Periodic(period=10.0, lengthscale=2.0, n_harmonics=3),
    "product3": K.Matern12(lengthscale=1.0) * K.Matern32(lengthscale=2.0) * K.Constant(2.0),
    "nested": (K.Matern32(lengthscale=3.0) + K.Constant(0.5)) * K.Matern12(lengthscale=5.0, variance=2.0)
    + K.Periodic(period=2.0, lengthscale=3.0, n_harmonics=2),
}


def _gaps(rng, T=400):
    dt = rng.exponential(1.0, T)
    dt[rng.uniform(size=T) < 0.15] = 0.0                      # tied times
    dt[[0, 5, 6, 7]] = [0.0, 1e-13, 1e-7, 1e3]
    return dt


class _Subclass(Matern32):
    """A kernel class the compiled code does not know."""


@pytest.mark.parametrize("name", list(KERNELS))
def test_compiled_discretisation_equals_kernel_discretise(name):
    kernel = KERNELS[name]
    dt = _gaps(np.random.default_rng(list(KERNELS).index(name)))
    assert covered(kernel)
    A_ref, Q_ref = kernel.discretise(dt)
    A, Q = discretise(kernel, dt)
    scale = np.max(np.abs(kernel.state_space().Pinf))
    np.testing.assert_allclose(A, A_ref, rtol=1e-15, atol=1e-15 * np.max(np.abs(A_ref)))
    np.testing.assert_allclose(Q, Q_ref, rtol=1e-15, atol=1e-15 * scale)
    np.testing.assert_array_equal(Q, np.swapaxes(Q, 1, 2))               # exactly symmetric
    # into given (non-contiguous) arrays too
    d = kernel.state_dim
    A_out, Q_out = np.full((dt.shape[0], d, d), np.nan), np.full((dt.shape[0], d, d), np.nan)
    assert discretise_into(kernel, dt, A_out, Q_out, kernel.state_space().Pinf)
    np.testing.assert_array_equal(A_out, A)
    np.testing.assert_array_equal(Q_out, Q)


def test_matern32_matches_its_closed_form():
    """Independent route: ``A = exp(-lam dt) [[1 + lam dt, dt], [-lam^2 dt, 1 - lam dt]]``."""
    lengthscale, variance = 1.9, 0.6
    lam = np.sqrt(3.0) / lengthscale
    dt = _gaps(np.random.default_rng(7))
    A, Q = discretise(K.Matern32(lengthscale=lengthscale, variance=variance), dt)
    e = np.exp(-lam * dt)
    expected = np.stack([np.stack([1.0 + lam * dt, dt], -1), np.stack([-lam**2 * dt, 1.0 - lam * dt], -1)], -2)
    np.testing.assert_allclose(A, e[:, None, None] * expected, rtol=1e-13, atol=1e-300)
    Pinf = variance * np.diag([1.0, lam**2])
    np.testing.assert_allclose(Q, Pinf - A @ Pinf @ np.swapaxes(A, 1, 2), rtol=1e-12, atol=1e-15)


def test_uncovered_kernel_falls_back_and_bad_gaps_are_named():
    kernel = _Subclass(lengthscale=1.5)
    dt = _gaps(np.random.default_rng(3), 50)
    assert not covered(kernel) and not covered(kernel + K.Matern12())
    A_out = Q_out = np.empty((50, 2, 2))
    assert not discretise_into(kernel, dt, A_out, Q_out, kernel.state_space().Pinf)
    for got, expected in zip(discretise(kernel, dt), kernel.discretise(dt)):
        np.testing.assert_array_equal(got, expected)
    with pytest.raises(ValueError, match="dt must be >= 0"):
        discretise(KERNELS["matern32"], np.array([0.0, -1.0]))
    with pytest.raises(ValueError, match="dt"):
        discretise_into(KERNELS["matern32"], np.array([0.0, np.inf]), A_out[:2], Q_out[:2], np.eye(2))


@pytest.mark.parametrize("name", ["matern32", "nested"])
def test_segment_matrices_equal_the_whole_series_and_survive_reuse(name):
    kernel = KERNELS[name]
    t = np.cumsum(_gaps(np.random.default_rng(11), 100))
    stored = lds.MarkovGP(kernel, t, low_memory=False)
    lean = lds.MarkovGP(kernel, t, low_memory=True)
    segments = lean._transitions()
    for start, stop in [(0, 1), (0, 17), (17, 40), (39, 100), (90, 150), (0, 100), (5, 6)]:
        A, Q = segments(start, stop)
        np.testing.assert_array_equal(A, stored.A[start:stop])
        np.testing.assert_array_equal(Q, stored.Q[start:stop])


def test_low_memory_pass_does_not_allocate_segment_matrices_afresh(monkeypatch):
    """Two passes of a low-memory block reuse one set of per-segment arrays."""
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", 16)
    rng = np.random.default_rng(5)
    t = np.cumsum(rng.uniform(0.1, 1.0, 70))
    block = lds.MarkovGP(KERNELS["matern32"], t, low_memory=True)
    gamma, pi = rng.normal(size=70), rng.uniform(0.1, 2.0, 70)
    first = block.posterior((gamma, pi))
    arrays = block._transitions()._arrays(17)
    second = block.posterior((gamma, pi))
    assert all(a is b for a, b in zip(arrays, block._transitions()._arrays(17)))
    np.testing.assert_array_equal(first.mean, second.mean)
    np.testing.assert_array_equal(first.var, second.var)
