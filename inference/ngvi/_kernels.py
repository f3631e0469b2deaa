"""Compiled per-parameter passes of the diagonal ngvi optimisers: one pass over the P parameters per step.

Private: the kernels take contiguous float64 arrays, assume validated input
and are called by the optimisers of :mod:`efvi.inference.ngvi`.  A step of a
mean-field optimiser is a handful of elementwise formulas over P parameters
(P = 79,510 for a 784-100-10 network); written as numpy expressions each
formula is a pass over memory with a temporary, and the passes cost as much as
the network's gradient.  Here each step is two passes:

* :func:`perturb`: the posterior standard deviations and the weight samples
  ``m + sigma eps``, drawing ``eps`` with the optimiser's own
  ``numpy.random.Generator`` (numba's port of numpy's ziggurat on the same bit
  generator: the draws are numpy's ``standard_normal``, in the same order);
* one update kernel per optimiser (:func:`ivon_update`, :func:`vogn_update`,
  :func:`vadam_update`, :func:`vprop_update`): the Monte Carlo averages, the
  curvature and mean updates and the checks of the result (finite entries,
  positive precisions), written into fresh arrays so that the optimiser's
  state is only replaced once the step is accepted.

Prior parameters arrive as arrays of length 1 (one number for every
parameter) or P.  An update kernel returns a status whose bit ``k`` says that
output ``k`` (in the order of its ``out_*`` arguments) has a NaN or inf entry,
and whose bit :data:`PRECISION_BIT` says that a precision is not positive.
The Monte Carlo sums are taken a row (sample) at a time into the output
arrays first (read in place for one sample), so that the main loop over parameters has no inner loop and
compiles to vector instructions; the status is an integer OR for the same
reason (a floating-point reduction would not vectorise without fastmath).

Numba options: as ``efvi.models._numba.NUMBA_OPTIONS`` (cached where
:mod:`efvi.expfam.numba_cache` finds a writable place, no fastmath, so NaN and
inf keep their IEEE meaning) plus ``error_model="numpy"``.
"""

import os
from math import isfinite, sqrt

import numba
import numpy as np

from ...expfam.numba_cache import cache_enabled

from . import _formulas

_NUMBA_OPTIONS = dict(nopython=True, cache=cache_enabled(os.path.dirname(__file__)), nogil=True, fastmath=False,
                      error_model="numpy")

PRECISION_BIT = 8
"""Status bit of a non-positive proposed precision."""


corrected_precision = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.corrected_precision)
_hess_estimate = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.ivon_hess_estimate)
_moving_average = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.moving_average)
_ivon_direction = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.ivon_direction)
_ivon_step_size = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.ivon_step_size)
_prior_gradient = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.prior_gradient)
_curvature_average = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.curvature_average)
_scaled_step = numba.jit(inline="always", **_NUMBA_OPTIONS)(_formulas.scaled_step)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _status(mean, hess, momentum, precision):
    """Status bits of one parameter's proposal (see the module docstring)."""
    return ((0 if isfinite(mean) else 1) | (0 if isfinite(hess) else 2) | (0 if isfinite(momentum) else 4)
            | (0 if precision > 0.0 else PRECISION_BIT))


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _store(i, mean, hess, momentum, precision, out_mean, out_hess, out_momentum):
    """Write parameter ``i``'s proposed state and return its status bits."""
    out_mean[i] = mean
    out_hess[i] = hess
    out_momentum[i] = momentum
    return _status(mean, hess, momentum, precision)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _strides(prior_precision, prior_mean):
    """Index strides (0 for one number, 1 for one per parameter) of the prior's arrays."""
    return (1 if prior_precision.size > 1 else 0), (1 if prior_mean.size > 1 else 0)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _row_sums(a, out):
    """The sum of the rows of ``a`` (S, P), in order: ``a[0]`` itself (no copy) when S = 1, else written into ``out``."""
    if a.shape[0] == 1:
        return a[0]
    for i in range(a.shape[1]):
        out[i] = a[0, i]
    for s in range(1, a.shape[0]):
        for i in range(a.shape[1]):
            out[i] += a[s, i]
    return out


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _row_product_sums(a, b, out):
    """The sum of the rows of ``a * b`` (both (S, P)), in order, written into ``out``."""
    for i in range(a.shape[1]):
        out[i] = a[0, i] * b[0, i]
    for s in range(1, a.shape[0]):
        for i in range(a.shape[1]):
            out[i] += a[s, i] * b[s, i]
    return out


@numba.jit(**_NUMBA_OPTIONS)
def corrected_precision_update(hess, hess_estimate, rho, delta, out):
    """:func:`corrected_precision` over arrays (P,), ``delta`` of length 1 or P, written into ``out``."""
    stride = 1 if delta.size > 1 else 0
    for i in range(hess.size):
        out[i] = corrected_precision(hess[i], hess_estimate[i], rho, delta[i * stride])


@numba.jit(**_NUMBA_OPTIONS)
def standard_normal(rng, out, n_fresh):
    """Fill ``out`` (S, P) with standard normals: ``n_fresh`` fresh rows, then their negatives (antithetic pairs)."""
    for s in range(n_fresh):
        for i in range(out.shape[1]):
            out[s, i] = rng.standard_normal()
    for s in range(n_fresh, out.shape[0]):
        for i in range(out.shape[1]):
            out[s, i] = -out[s - n_fresh, i]


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def posterior_std(hess, ess, prior_precision, std):
    """Write ``1 / sqrt(ess * hess + prior_precision)`` (prior of length 1 or P) into ``std`` (P,)."""
    stride = 1 if prior_precision.size > 1 else 0
    for i in range(hess.size):
        std[i] = 1.0 / sqrt(ess * hess[i] + prior_precision[i * stride])


@numba.jit(**_NUMBA_OPTIONS)
def sample_in_place(mean, noise, std, saved):
    """Copy ``mean`` into ``saved``, then overwrite it with the weight sample ``mean + noise * std`` (all (P,))."""
    for i in range(mean.size):
        saved[i] = mean[i]
        mean[i] = mean[i] + noise[i] * std[i]


@numba.jit(**_NUMBA_OPTIONS)
def perturb(rng, mean, hess, ess, prior_precision, n_fresh, noise, params, std):
    """Weight samples of the posterior ``N(mean, 1 / (ess hess + prior_precision))``.

    Parameters
    ----------
    rng : numpy.random.Generator
    mean, hess : ndarray (P,)
    ess : float
    prior_precision : ndarray (1,) or (P,)
    n_fresh : int
        Rows of fresh draws; the remaining ``S - n_fresh`` rows are their negatives.
    noise, params : ndarray (S, P)
        Written: the standard normals ``eps`` and ``mean + eps * std``.
    std : ndarray (P,)
        Written: ``1 / sqrt(ess * hess + prior_precision)``.
    """
    posterior_std(hess, ess, prior_precision, std)
    standard_normal(rng, noise, n_fresh)
    for s in range(noise.shape[0]):
        for i in range(mean.size):
            params[s, i] = mean[i] + noise[s, i] * std[i]


@numba.jit(**_NUMBA_OPTIONS)
def ivon_update(grads, noise, std, mean, hess, momentum, ess, prior_precision, prior_mean, beta1, rho, bias1,
                lr, hess_init, rescale_lr, clip_radius, out_mean, out_hess, out_momentum):
    """One IVON step (Shen et al., 2024) of every parameter; returns the status.

    Parameters
    ----------
    grads, noise : ndarray (S, P)
        Gradients of the average NLL at ``mean + std * noise`` and the draws ``noise``.
    std, mean, hess, momentum : ndarray (P,)
        The current state (``std`` as used for the draws).
    ess : float
    prior_precision, prior_mean : ndarray (1,) or (P,)
    beta1, rho, bias1 : float
        Momentum decay, ``1 - beta2`` and ``1 - beta1 ** step``.
    lr, hess_init : float
    rescale_lr : bool
        Step ``lr * (hess_init + delta)`` instead of ``lr``.
    clip_radius : float
    out_mean, out_hess, out_momentum : ndarray (P,)
        Written: the proposed state.
    """
    grad_sums = _row_sums(grads, out_momentum)
    grad_noise_sums = _row_product_sums(grads, noise, out_hess)
    return ivon_update_from_sums(grad_sums, grad_noise_sums, grads.shape[0], std, mean, hess, momentum, ess,
                                 prior_precision, prior_mean, beta1, rho, bias1, lr, hess_init, rescale_lr,
                                 clip_radius, out_mean, out_hess, out_momentum)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def ivon_update_from_sums(grad_sums, grad_noise_sums, n_samples, std, mean, hess, momentum, ess, prior_precision,
                          prior_mean, beta1, rho, bias1, lr, hess_init, rescale_lr, clip_radius, out_mean, out_hess,
                          out_momentum):
    """:func:`ivon_update` from the Monte Carlo sums (P,) of the gradients and of gradient times noise.

    The sums may alias ``out_momentum`` and ``out_hess`` (each entry is read before it is written).
    """
    p_stride, m_stride = _strides(prior_precision, prior_mean)
    status = 0
    for i in range(mean.size):
        delta = prior_precision[i * p_stride] / ess
        hess_estimate = _hess_estimate(grad_noise_sums[i], n_samples, std[i])
        new_momentum = _moving_average(momentum[i], grad_sums[i] / n_samples, beta1)
        new_hess = corrected_precision(hess[i], hess_estimate, rho, delta)
        direction = _ivon_direction(new_momentum, bias1, delta, mean[i], prior_mean[i * m_stride], new_hess)
        direction = min(max(direction, -clip_radius), clip_radius)
        new_mean = mean[i] - _ivon_step_size(lr, hess_init, delta, rescale_lr) * direction
        status |= _store(i, new_mean, new_hess, new_momentum, ess * new_hess + prior_precision[i * p_stride],
                         out_mean, out_hess, out_momentum)
    return status


@numba.jit(**_NUMBA_OPTIONS)
def vogn_update(grads, curv, mean, hess, momentum, ess, prior_precision, prior_mean, beta1, rho, bias1, lr,
                out_mean, out_hess, out_momentum):
    """One VOGN step (Khan et al., 2018) of every parameter; returns ``(status, n_corrected)``.

    The curvature is the CVI average ``(1 - rho) h + rho mean_s curv``, or the
    positivity-preserving update where that average would leave ``h + delta <= 0``.

    Parameters
    ----------
    grads, curv : ndarray (S, P)
        Gradients of the average NLL and per-example curvatures at each weight sample.
    mean, hess, momentum : ndarray (P,)
    ess : float
    prior_precision, prior_mean : ndarray (1,) or (P,)
    beta1, rho, bias1, lr : float
        Momentum decay, ``1 - beta2``, ``1 - beta1 ** step`` and the step.
    out_mean, out_hess, out_momentum : ndarray (P,)
        Written: the proposed state.
    """
    grad_sums = _row_sums(grads, out_momentum)
    curv_sums = _row_sums(curv, out_hess)
    return vogn_update_from_sums(grad_sums, curv_sums, grads.shape[0], mean, hess, momentum, ess, prior_precision,
                                 prior_mean, beta1, rho, bias1, lr, out_mean, out_hess, out_momentum)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def vogn_update_from_sums(grad_sums, curv_sums, n_samples, mean, hess, momentum, ess, prior_precision, prior_mean,
                          beta1, rho, bias1, lr, out_mean, out_hess, out_momentum):
    """:func:`vogn_update` from the Monte Carlo sums (P,) of the gradients and curvatures (may alias the outputs)."""
    p_stride, m_stride = _strides(prior_precision, prior_mean)
    status = 0
    n_corrected = 0
    for i in range(mean.size):
        delta = prior_precision[i * p_stride] / ess
        hess_estimate = curv_sums[i] / n_samples
        new_hess = _curvature_average(hess[i], hess_estimate, rho)
        if not new_hess + delta > 0.0:
            new_hess = corrected_precision(hess[i], hess_estimate, rho, delta)
            n_corrected += 1
        new_momentum = _moving_average(momentum[i], _prior_gradient(grad_sums[i] / n_samples, delta, mean[i],
                                                                    prior_mean[i * m_stride]), beta1)
        new_mean = _scaled_step(mean[i], lr, new_momentum, bias1, new_hess + delta)
        status |= _store(i, new_mean, new_hess, new_momentum, ess * new_hess + prior_precision[i * p_stride],
                         out_mean, out_hess, out_momentum)
    return status, n_corrected


@numba.jit(**_NUMBA_OPTIONS)
def vadam_update(grads, mean, hess, momentum, ess, prior_precision, prior_mean, beta1, beta2, bias1, bias2, lr,
                 out_mean, out_hess, out_momentum):
    """One Vadam step (Khan et al., 2018) of every parameter; returns the status.

    Parameters
    ----------
    grads : ndarray (S, P)
        Gradients of the average NLL at each weight sample.
    mean, hess, momentum : ndarray (P,)
    ess : float
    prior_precision, prior_mean : ndarray (1,) or (P,)
    beta1, beta2, bias1, bias2, lr : float
        Moment decays, their bias corrections ``1 - beta ** step`` and the step.
    out_mean, out_hess, out_momentum : ndarray (P,)
        Written: the proposed state.
    """
    grad_sums = _row_sums(grads, out_momentum)
    squared_sums = _row_product_sums(grads, grads, out_hess)
    return vadam_update_from_sums(grad_sums, squared_sums, grads.shape[0], mean, hess, momentum, ess,
                                  prior_precision, prior_mean, beta1, beta2, bias1, bias2, lr, out_mean, out_hess,
                                  out_momentum)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def vadam_update_from_sums(grad_sums, squared_sums, n_samples, mean, hess, momentum, ess, prior_precision,
                           prior_mean, beta1, beta2, bias1, bias2, lr, out_mean, out_hess, out_momentum):
    """:func:`vadam_update` from the Monte Carlo sums (P,) of the gradients and their squares (may alias the outputs)."""
    p_stride, m_stride = _strides(prior_precision, prior_mean)
    status = 0
    for i in range(mean.size):
        delta = prior_precision[i * p_stride] / ess
        new_momentum = _moving_average(momentum[i], _prior_gradient(grad_sums[i] / n_samples, delta, mean[i],
                                                                    prior_mean[i * m_stride]), beta1)
        new_hess = _moving_average(hess[i], squared_sums[i] / n_samples, beta2)
        new_mean = _scaled_step(mean[i], lr, new_momentum, bias1, sqrt(new_hess / bias2) + delta)
        status |= _store(i, new_mean, new_hess, new_momentum, ess * new_hess + prior_precision[i * p_stride],
                         out_mean, out_hess, out_momentum)
    return status


@numba.jit(**_NUMBA_OPTIONS)
def vprop_update(grads, mean, hess, ess, prior_precision, prior_mean, beta, lr, square_root, out_mean, out_hess):
    """One Vprop step (Khan et al., 2017) of every parameter; returns the status.

    Parameters
    ----------
    grads : ndarray (S, P)
    mean, hess : ndarray (P,)
    ess : float
    prior_precision, prior_mean : ndarray (1,) or (P,)
    beta, lr : float
    square_root : bool
        Divide by ``sqrt(s) + delta`` instead of ``s + delta``.
    out_mean, out_hess : ndarray (P,)
        Written: the proposed state.
    """
    grad_sums = _row_sums(grads, out_mean)
    squared_sums = _row_product_sums(grads, grads, out_hess)
    return vprop_update_from_sums(grad_sums, squared_sums, grads.shape[0], mean, hess, ess, prior_precision,
                                  prior_mean, beta, lr, square_root, out_mean, out_hess)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def vprop_update_from_sums(grad_sums, squared_sums, n_samples, mean, hess, ess, prior_precision, prior_mean, beta,
                           lr, square_root, out_mean, out_hess):
    """:func:`vprop_update` from the Monte Carlo sums (P,) of the gradients and their squares (may alias the outputs)."""
    p_stride, m_stride = _strides(prior_precision, prior_mean)
    status = 0
    for i in range(mean.size):
        delta = prior_precision[i * p_stride] / ess
        new_hess = _moving_average(hess[i], squared_sums[i] / n_samples, beta)
        scale = (sqrt(new_hess) if square_root else new_hess) + delta
        new_mean = _scaled_step(mean[i], lr, _prior_gradient(grad_sums[i] / n_samples, delta, mean[i],
                                                             prior_mean[i * m_stride]), 1.0, scale)
        out_mean[i] = new_mean
        out_hess[i] = new_hess
        status |= _status(new_mean, new_hess, 0.0, ess * new_hess + prior_precision[i * p_stride])
    return status
