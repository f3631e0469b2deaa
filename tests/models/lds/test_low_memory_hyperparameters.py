"""Hyperparameter gradients of a low-memory Markov GP, computed segment by segment.

A low-memory block computes ``log Z(theta)`` and its gradient (Fisher's
identity) one segment of steps at a time, with each segment's matrices and
their derivatives computed when the backward pass reaches it.  The per-step
arithmetic is the stored block's, and only the sum over segments is
reordered, so both must agree to rounding (the stored block builds every
step's matrices and differentiates them in one reverse pass) at every
segment length: one step, a few steps, segments that do and do not divide
``T``, and one segment longer than ``T``.  The gradient is also checked
against central differences of ``log Z``, a learning fit against the stored
block's, and the memory held against the number of steps.
"""

import tracemalloc

import numpy as np
import pytest

from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods
from efvi.models.lds import fisher_identity
from efvi.models.lds import prior as lds_prior

from .test_hyperparameters import KERNELS as STORED_KERNELS

K = gp.kernels

KERNELS = dict(STORED_KERNELS,               # Matern 1/2, 3/2, 5/2, a sum, and a sum with a constant (Q_t singular)
               product=K.Matern32(lengthscale=2.0, variance=1.0) * K.Matern12(lengthscale=3.0, variance=0.7),
               periodic=K.Matern12(lengthscale=2.0, variance=0.5)      # Q_t singular in the periodic part
               + K.Periodic(period=1.3, lengthscale=3.0, variance=0.8, n_harmonics=2))

# (segment steps, steps per reverse pass through the matrices)
SEGMENTS = [(1, 16384), (7, 3), (16, 5), (500, 16384)]

T = 61


def _times(rng):
    """Irregular sorted times with two tied pairs (``dt = 0``: ``A_t = I``, ``Q_t = 0``)."""
    t = np.cumsum(rng.uniform(0.05, 0.4, T))
    t[[10, 41]] = t[[9, 40]]
    return t


def _sites(rng):
    """Random sites: some missing, one with a negative precision."""
    gamma, pi = rng.normal(size=T), rng.uniform(0.2, 3.0, T)
    missing = rng.uniform(size=T) < 0.2
    gamma[missing], pi[missing] = 0.0, 0.0
    pi[25] = -0.05
    return gamma, pi


def _blocks(kernel, t, segment_steps, vjp_steps, monkeypatch):
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", segment_steps)
    monkeypatch.setattr(fisher_identity, "VJP_STEPS", vjp_steps)
    return lds.MarkovGP(kernel, t, low_memory=True), lds.MarkovGP(kernel, t, low_memory=False)


def _assert_agree(lean, stored, rtol=1e-10):
    assert lean[0] == pytest.approx(stored[0], rel=rtol)
    np.testing.assert_allclose(lean[1], stored[1], rtol=rtol, atol=rtol * np.max(np.abs(stored[1])))


@pytest.mark.parametrize("kernel_name", list(KERNELS))
@pytest.mark.parametrize("segment_steps, vjp_steps", SEGMENTS)
def test_log_normaliser_in_segments_equals_the_stored_one(kernel_name, segment_steps, vjp_steps, monkeypatch):
    rng = np.random.default_rng([list(KERNELS).index(kernel_name), segment_steps])
    kernel = KERNELS[kernel_name]
    lean, stored = _blocks(kernel, _times(rng), segment_steps, vjp_steps, monkeypatch)
    message = _sites(rng)
    elsewhere = kernel.log_params + 0.1 * rng.normal(size=kernel.n_params)   # another block's matrices
    for theta in (kernel.log_params, elsewhere):
        _assert_agree(lean.log_normaliser(theta, message), stored.log_normaliser(theta, message))
    assert np.all(np.abs(stored.log_normaliser(elsewhere, message)[1]) > 1e-3)       # not vacuous


def _strongly_negative_sites(block, rng):
    """Sites with a factor ``1 + pi_t S_t < 0`` (the filtered covariances turn indefinite), made valid again
    by a large positive site at the next step."""
    gamma, pi = _sites(rng)
    prior = (block.H[0], block.A, block.Q, block.m0, block.P0)
    S = lds.kalman_filter(gamma, pi, *prior).pred_marginal_var
    for step in range(30, T - 1):
        trial = pi.copy()
        trial[step], trial[step + 1] = -1.5 / S[step], 300.0 / S[step + 1]
        if lds.kalman_smoother(gamma, trial, *prior, return_status=True).status == lds.STATUS_OK:
            return gamma, trial
    raise AssertionError("no valid strongly negative site found")


@pytest.mark.parametrize("segment_steps", [3, 32])
def test_log_normaliser_in_segments_through_indefinite_filtered_covariances(segment_steps, monkeypatch):
    rng = np.random.default_rng(3)
    kernel = KERNELS["matern52"]
    lean, stored = _blocks(kernel, _times(rng), segment_steps, 4, monkeypatch)
    message = _strongly_negative_sites(stored, rng)
    factors = 1.0 + message[1] * lds.kalman_filter(*message, stored.H[0], stored.A, stored.Q, stored.m0,
                                                   stored.P0).pred_marginal_var
    assert np.any(factors < 0)
    _assert_agree(lean.log_normaliser(kernel.log_params, message), stored.log_normaliser(kernel.log_params, message))


def _central_difference(function, x, h=1e-5):
    return np.array([(function(x + h * e) - function(x - h * e)) / (2 * h) for e in np.eye(x.shape[0])])


@pytest.mark.parametrize("kernel_name", ["matern52", "product", "periodic"])
def test_gradient_in_segments_matches_central_differences(kernel_name, monkeypatch):
    rng = np.random.default_rng(5)
    kernel = KERNELS[kernel_name]
    lean, _ = _blocks(kernel, _times(rng), 9, 4, monkeypatch)
    message = _sites(rng)
    theta = kernel.log_params + 0.1 * rng.normal(size=kernel.n_params)
    value, grad = lean.log_normaliser(theta, message)
    assert value == lean.log_normaliser(theta, message)[0]
    numeric = _central_difference(lambda x: lean.log_normaliser(x, message)[0], theta)
    # truncation O(h^2) and rounding 1e-16 |log Z| / h, both below 1e-8 here
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * np.max(np.abs(numeric)))


@pytest.mark.parametrize("kernel_name", ["matern32", "sum"])
def test_low_memory_learning_takes_the_stored_path(kernel_name, monkeypatch):
    """A whole learning fit: the same L-BFGS evaluations, hyperparameters and ELBO.

    A low-memory block is never extrapolated (it keeps no site history), so the stored fit runs without
    acceleration too; the two gradients differ by rounding only, so the paths agree to rounding."""
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", 16)
    rng = np.random.default_rng(2)
    t = np.cumsum(rng.uniform(0.05, 0.4, 100))
    t[[10, 41]] = t[[9, 40]]
    y = rng.poisson(np.exp(np.sin(t) + 0.7 * np.sin(6 * t))).astype(float)
    start = {"matern32": K.Matern32(lengthscale=1.0, variance=1.0),
             "sum": K.Matern32(lengthscale=1.0, variance=1.0) + K.Matern12(lengthscale=0.5, variance=0.2)}[kernel_name]
    fits = [Model({"f": lds.MarkovGP(start, t, learn_hyperparameters=True, low_memory=low)},
                  [Observe(likelihoods.Poisson(), y, on="f")]).fit(acceleration=False) for low in (True, False)]
    assert fits[0].converged and fits[1].converged
    logged = [np.array([theta for theta, _, _ in fit.state.hyper.evaluations]) for fit in fits]
    assert logged[0].shape == logged[1].shape and logged[0].shape[0] > 3            # the same L-BFGS path
    np.testing.assert_allclose(logged[0], logged[1], rtol=1e-8, atol=1e-8)
    learned = [fit.priors["f"].kernel.log_params for fit in fits]
    assert not np.allclose(learned[1], start.log_params, atol=0.05)                   # it moved
    np.testing.assert_allclose(learned[0], learned[1], rtol=1e-8, atol=1e-8)
    assert fits[0].elbo == pytest.approx(fits[1].elbo, rel=1e-10)
    np.testing.assert_allclose(fits[0].posterior["f"].mean, fits[1].posterior["f"].mean, rtol=1e-7, atol=1e-7)


def test_low_memory_log_normaliser_holds_nothing_per_step(monkeypatch):
    """Python-side allocations (numpy's and autograd's, traced by ``tracemalloc``) at the peak of one
    evaluation, in segments of 4096 steps, grow by far less than a float per added step (segment-sized arrays
    only, and one checkpoint per segment), where the stored block's take hundreds of bytes per step."""
    monkeypatch.setattr(lds_prior, "SEGMENT_STEPS", 4096)
    rng = np.random.default_rng(7)
    kernel = KERNELS["matern32"]
    peaks = {}
    for low, steps in ((True, 5 * 4096), (True, 30 * 4096), (False, 5 * 4096)):
        t = np.cumsum(rng.uniform(0.5, 1.5, steps))
        message = (rng.normal(size=steps), rng.uniform(0.2, 3.0, steps))
        block = lds.MarkovGP(kernel, t, low_memory=low)
        block.log_normaliser(kernel.log_params, message)            # compile or load the kernels first
        tracemalloc.start()
        try:
            block.log_normaliser(kernel.log_params, message)
            peaks[low, steps] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    per_added_step = (peaks[True, 30 * 4096] - peaks[True, 5 * 4096]) / (25 * 4096)
    assert per_added_step < 1.0 and peaks[False, 5 * 4096] / (5 * 4096) > 200.0, peaks


@pytest.mark.parametrize("low_memory", [True, False])
def test_bad_input_to_the_log_normaliser_is_named(low_memory):
    kernel = KERNELS["matern32"]
    block = lds.MarkovGP(kernel, np.arange(30.0), low_memory=low_memory)
    ones = np.ones(30)
    with pytest.raises(ValueError, match=r"log_params must have shape \(2,\); got shape \(3,\)"):
        block.log_normaliser(np.zeros(3), (ones, ones))
    with pytest.raises(ValueError, match=r"site_natural_mean must be finite .* at index \(29,\)"):
        block.log_normaliser(kernel.log_params, (np.r_[ones[:29], np.nan], ones))
    with pytest.raises(ValueError, match=r"site_precision must be finite .* at index \(3,\)"):
        block.log_normaliser(kernel.log_params, (ones, np.r_[ones[:3], np.inf, ones[4:]]))
    with pytest.raises(ValueError, match="site_natural_mean must be a numeric array"):
        block.log_normaliser(kernel.log_params, ("a", ones))
    with pytest.raises(ValueError, match="site_precision gives an invalid posterior at time step 0"):
        block.log_normaliser(kernel.log_params, (ones, -5.0 * ones))
    if low_memory:
        with pytest.raises(ValueError, match=r"must have shape \(30,\), one value per time step; got \(29,\)"):
            block.log_normaliser(kernel.log_params, (ones[:29], ones[:29]))
