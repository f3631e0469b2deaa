"""The checks of the Kalman passes' inputs (:mod:`efvi.models.lds.smoother`), and the errors of a failed pass.

A public pass validates its arguments here into contiguous float64 arrays for
the compiled kernels; a block that checks its prior once and smooths many sets
of sites calls the parts (:func:`_validate_sites_in_segments`, :func:`_validate_prior`,
:func:`check_process_cov`) itself.
"""

import numpy as np

from ...expfam.checks import as_float, check_pd

from . import _kernels
from ._kernels import PSD_RTOL, STATUS_INVALID_SITE, STATUS_OK, STATUS_SINGULAR_PREDICTION
from ._small import work_for


def _time_stack(x, name, T, event_ndim):
    """``x`` as a contiguous ``(1 or T, *event)`` float array (constant if it has no time axis)."""
    arr = as_float(x, name)
    if arr.ndim == event_ndim:
        arr = arr[None]
    elif arr.ndim != event_ndim + 1 or arr.shape[0] != T:
        raise ValueError(
            f"{name} must have {event_ndim} dimension(s) (constant) or a leading time axis of "
            f"length T={T}; got shape {arr.shape}"
        )
    return np.ascontiguousarray(arr)


def _validate(site_natural_mean, site_precision, obs_row, transition, process_cov, init_mean, init_cov):
    """Check shapes, finiteness and definiteness; return contiguous float64 arrays for the kernels."""
    gamma, pi = _validate_sites(site_natural_mean, site_precision)
    return (gamma, pi) + _validate_prior(obs_row, transition, process_cov, init_mean, init_cov, gamma.shape[0])


def _validate_sites(site_natural_mean, site_precision):
    """The sites as contiguous float64 arrays of one shape (T,)."""
    gamma = as_float(site_natural_mean, "site_natural_mean")
    pi = as_float(site_precision, "site_precision")
    if gamma.ndim != 1 or gamma.shape[0] < 1:
        raise ValueError(f"site_natural_mean must have shape (T,) with T >= 1; got shape {gamma.shape}")
    if pi.shape != gamma.shape:
        raise ValueError(f"site_precision must have shape {gamma.shape} like site_natural_mean; got {pi.shape}")
    return np.ascontiguousarray(gamma), np.ascontiguousarray(pi)


def _validate_sites_in_segments(site_natural_mean, site_precision, T, segment_steps):
    """:func:`_validate_sites` for ``T`` steps without a temporary of ``T`` values: finiteness is checked
    ``segment_steps`` values at a time, and only a failure checks (and names the first bad value of) the whole."""
    gamma = as_float(site_natural_mean, "site_natural_mean", finite=False)
    pi = as_float(site_precision, "site_precision", finite=False)
    if gamma.shape != (T,) or pi.shape != (T,):
        raise ValueError(f"site_natural_mean and site_precision must have shape ({T},), one value per time step; "
                         f"got {gamma.shape} and {pi.shape}")
    for start in range(0, T, segment_steps):
        part = slice(start, start + segment_steps)
        if not (np.all(np.isfinite(gamma[part])) and np.all(np.isfinite(pi[part]))):
            _validate_sites(gamma, pi)
    return np.ascontiguousarray(gamma), np.ascontiguousarray(pi)


def _validate_prior(obs_row, transition, process_cov, init_mean, init_cov, T):
    """``(H, A, Q, m0, P0)`` checked for ``T`` steps; ``transition`` and ``process_cov`` may both be None
    (a prior that computes them segment by segment and checks each with :func:`check_process_cov`)."""
    m0 = as_float(init_mean, "init_mean")
    if m0.ndim != 1 or m0.shape[0] < 1:
        raise ValueError(f"init_mean must have shape (d,) with d >= 1; got shape {m0.shape}")
    d = m0.shape[0]
    P0 = np.ascontiguousarray(check_pd(init_cov, "init_cov"))
    if P0.shape != (d, d):
        raise ValueError(f"init_cov must have shape {(d, d)}; got {P0.shape}")
    H = _time_stack(obs_row, "obs_row", T, 1)
    stacks = [("obs_row", H, (d,))]
    A = Q = None
    if transition is not None:
        A = _time_stack(transition, "transition", T, 2)
        Q = _time_stack(process_cov, "process_cov", T, 2)
        stacks += [("transition", A, (d, d)), ("process_cov", Q, (d, d))]
    for name, arr, event in stacks:
        if arr.shape[1:] != event:
            raise ValueError(f"{name} must have trailing shape {event} for state dimension d={d}; got {arr.shape}")
    if Q is not None:
        check_process_cov(Q, P0)
    return H, A, Q, np.ascontiguousarray(m0), P0


def check_process_cov(Q, P0, offset=0):
    """Raise a ``ValueError`` naming the first matrix of the stack ``Q`` (n, d, d) that is not symmetric PSD.

    ``offset`` is the time step of ``Q[0]`` (a segment of a longer stack);
    the tolerance scales with ``P0`` (see ``_kernels._first_not_psd``).
    """
    bad = _kernels._first_not_psd(Q, PSD_RTOL, float(np.max(np.abs(P0))), *work_for(P0.shape[0]))
    if bad >= 0:
        raise ValueError(
            f"process_cov must be symmetric positive semi-definite; got a matrix that is not, "
            f"at index {bad + offset}: {Q[bad].tolist()}"
        )


def _check_status(status, step, return_status):
    """Raise the ``ValueError`` describing a failed step unless the caller wants the status."""
    if status == STATUS_OK or return_status:
        return
    if status == STATUS_INVALID_SITE:
        raise ValueError(
            f"site_precision gives an invalid posterior at time step {step}: the posterior precision "
            f"is not positive definite, as the sites of steps 0..{step} already make it so whatever the "
            f"later sites (or 1 + pi_t S_t = 0 at that step, which the filter cannot pass)"
        )
    if status == STATUS_SINGULAR_PREDICTION:
        raise ValueError(
            f"the predicted state covariance A_t P A_t^T + Q_t at time step {step} is singular, so the "
            f"smoother gain is undefined; check transition and process_cov"
        )
    raise RuntimeError(f"unknown kernel status {status}")
