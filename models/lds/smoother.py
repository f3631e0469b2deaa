"""Kalman filter and RTS smoother for a linear-Gaussian prior times Gaussian sites.

The prior is the linear-Gaussian state-space model

.. math::

    x_0 \\sim N(m_0, P_0), \\qquad
    x_t = A_t x_{t-1} + q_t, \\quad q_t \\sim N(0, Q_t), \\quad t = 1, \\dots, T-1,

and every step ``t`` carries an unnormalised Gaussian site on the scalar
``a_t = H_t x_t``,

.. math::

    t_t(a) = \\exp(\\gamma_t a - \\tfrac12 \\pi_t a^2),

with ``pi_t = gamma_t = 0`` for a missing observation.  The (pseudo-)posterior
is ``p(x) prod_t t_t(H_t x_t) / Z``.  The filter-smoother returns its
marginals, lag-one cross-covariances and the log normaliser

.. math::

    \\log Z = \\log \\int p(x) \\prod_t t_t(H_t x_t) \\, dx
            = \\sum_t -\\tfrac12 \\log(1 + \\pi_t S_t)
              + \\frac{\\gamma_t^2 S_t + 2 \\gamma_t \\mu_t - \\pi_t \\mu_t^2}{2 (1 + \\pi_t S_t)},

where ``mu_t``, ``S_t`` are the one-step predictive mean and variance of
``a_t``.  Site precisions may be negative (non-log-concave likelihoods):
``1 + pi_t S_t > 0`` at every step is sufficient for a valid posterior, not
necessary (a later positive site can outweigh a negative one).  The exact
test (:mod:`._kernels`) is that the covariances ``C_t`` of the RTS backward
conditionals ``x_t | x_{t+1}`` and the last filtered covariance be positive
semi-definite.  When they are not, the functions raise a ``ValueError``
naming the first step ``t`` whose sites ``0..t`` make the posterior invalid
whatever the later sites, or, with ``return_status=True``, return
``status != 0`` and ``failed_step`` so that the caller can back off.

Cost ``O(T d^3)`` in compiled code; ``A``, ``Q`` and ``H`` may be constant
(given without a time axis) or time-varying.

**Memory.**  The filter writes, for every step, the backward conditional that
the smoother reads (``2 d^2 + d`` values: 80 bytes per step at ``d = 2``).  A
block that reuses a :class:`Workspace` with ``segment_steps = K`` runs the
pass in segments of ``K`` steps instead (Griewank's checkpointing): the
forward pass keeps only the filter's state at the start of each segment
(``d + d^2 + 4`` values per segment) and the conditionals of the last
segment; the backward pass refilters each earlier segment from its
checkpoint, one step past its end, and smooths it.  The arithmetic is the
same, operation by operation, so the results are identical bit for bit; the
pass then holds ``O(K + T / K)`` values instead of ``O(T)`` and costs one
more forward pass over the earlier segments.  The transition and process
covariance may be computed per segment too (:func:`segment_of`), so that a
Markov GP keeps nothing per step but its times.  For hyperparameter
gradients (:mod:`.fisher_identity`) the same passes hand over each
segment's filter and smoother moments in turn, from the last segment back
(:func:`_segment_moments`), instead of every step's at once.
"""

import threading
from typing import NamedTuple

import numpy as np

from ...expfam.checks import as_float, check_pd

from . import _kernels
from ._kernels import PSD_RTOL, STATUS_INVALID_SITE, STATUS_OK, STATUS_SINGULAR_PREDICTION
from ._small import work_for

_PARAMETERS_DOC = """
    site_natural_mean : array_like, shape (T,)
        ``gamma_t``, the linear coefficient of each site.
    site_precision : array_like, shape (T,)
        ``pi_t``, the precision of each site (may be negative; 0 with
        ``gamma_t = 0`` means no observation).
    obs_row : array_like, shape (d,) or (T, d)
        ``H_t``, the row mapping the state to ``a_t``; constant if 1-D.
    transition : array_like, shape (d, d) or (T, d, d)
        ``A_t`` (``A_0`` unused); constant if 2-D.
    process_cov : array_like, shape (d, d) or (T, d, d)
        ``Q_t``, symmetric positive semi-definite (``Q_0`` unused); constant if 2-D.
    init_mean : array_like, shape (d,)
        ``m_0``.
    init_cov : array_like, shape (d, d)
        ``P_0``, symmetric positive definite.
    return_status : bool, default False
        If False, a failed step raises ``ValueError``; if True the result
        carries ``status`` and ``failed_step`` instead (its arrays are then
        only partly filled and ``log_normaliser`` is NaN)."""


class FilterResult(NamedTuple):
    """Output of :func:`kalman_filter`.

    Attributes
    ----------
    means : ndarray, shape (T, d)
        Filtered means ``E[x_t | sites 0..t]``.
    covs : ndarray, shape (T, d, d)
        Filtered covariances (indefinite once a factor ``1 + pi_t S_t`` has
        been negative, even when the posterior is valid).
    pred_means : ndarray, shape (T, d)
        Predicted means ``E[x_t | sites 0..t-1]`` (``pred_means[0] = m_0``).
    pred_covs : ndarray, shape (T, d, d)
        Predicted covariances.
    pred_marginal_mean : ndarray, shape (T,)
        One-step predictive mean ``mu_t`` of ``a_t``.
    pred_marginal_var : ndarray, shape (T,)
        One-step predictive variance ``S_t`` of ``a_t``.
    log_normaliser : float
        ``log Z``.
    status : int
        ``STATUS_OK`` (0), ``STATUS_INVALID_SITE`` or ``STATUS_SINGULAR_PREDICTION``.
    failed_step : int
        The time step that failed, -1 on success.
    """

    means: np.ndarray
    covs: np.ndarray
    pred_means: np.ndarray
    pred_covs: np.ndarray
    pred_marginal_mean: np.ndarray
    pred_marginal_var: np.ndarray
    log_normaliser: float
    status: int
    failed_step: int


class SmootherResult(NamedTuple):
    """Output of :func:`kalman_smoother`.

    Attributes
    ----------
    means : ndarray, shape (T, d)
        Smoothed means ``E[x_t | all sites]``.
    covs : ndarray, shape (T, d, d)
        Smoothed covariances.
    cross_covs : ndarray, shape (T, d, d)
        ``Cov(x_t, x_{t-1} | all sites)``; ``cross_covs[0]`` is zero.
    marginal_mean : ndarray, shape (T,)
        Smoothed mean of ``a_t = H_t x_t``.
    marginal_var : ndarray, shape (T,)
        Smoothed variance of ``a_t``.
    log_normaliser : float
        ``log Z``.
    status, failed_step : int
        As in :class:`FilterResult`.
    """

    means: np.ndarray
    covs: np.ndarray
    cross_covs: np.ndarray
    marginal_mean: np.ndarray
    marginal_var: np.ndarray
    log_normaliser: float
    status: int
    failed_step: int


class MarginalsResult(NamedTuple):
    """Output of :func:`smoothed_marginals`: the fields of the same name in :class:`SmootherResult`."""

    marginal_mean: np.ndarray
    marginal_var: np.ndarray
    log_normaliser: float
    status: int
    failed_step: int


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


class PerThreadScratch:
    """Base of objects that keep scratch arrays per thread in ``self._local``: they pickle without them.

    A ``threading.local`` cannot be pickled, and its arrays are scratch, so a
    pickled copy (``pickle``, ``joblib``, ``multiprocessing``) starts with
    none and allocates them on first use.
    """

    def __init__(self):
        self._local = threading.local()

    def __getstate__(self):
        return {key: value for key, value in self.__dict__.items() if key != "_local"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._local = threading.local()


class Workspace(PerThreadScratch):
    """Scratch arrays of the compiled passes, reused by successive passes of one problem size.

    A state-space block smooths a new set of sites every CVI iteration.
    Allocating the scratch afresh each time costs as much as the backward
    pass itself (the operating system hands out new pages), so a block keeps
    one workspace.  Each thread gets its own arrays.

    Parameters
    ----------
    segment_steps : int, optional
        Smooth in segments of this many steps (module notes): the scratch
        holds ``min(T, segment_steps) (2 d^2 + d)`` values instead of
        ``T (2 d^2 + d)``.  None: one segment of ``T`` steps.
    """

    def __init__(self, segment_steps=None):
        super().__init__()
        self.segment_steps = segment_steps

    def arrays(self, T, d):
        """``(gains, offsets, cond_covs, checkpoints)`` for ``T`` steps of size ``d`` (see :func:`_new_scratch`)."""
        arrays = getattr(self._local, "arrays", None)
        key = (T, d)
        if arrays is None or arrays[0] != key:
            arrays = self._local.arrays = (key, _new_scratch(T, d, self.segment_steps))
        return arrays[1]


def _new_scratch(T, d, segment_steps=None):
    """Rows for the conditionals of one segment of ``n = min(T, segment_steps)`` steps, plus one spare
    (``_kernels._filter``), and the checkpoints of every segment start (None for a single segment)."""
    n = T if segment_steps is None else min(T, segment_steps)
    n_segments = -(-T // n) if n else 0
    checkpoints = (np.empty((n_segments, d)), np.empty((n_segments, d, d)),
                   np.empty((n_segments, _kernels.CARRY_SIZE))) if n_segments > 1 else None
    return np.empty((n + 1, d, d)), np.empty((n + 1, d)), np.empty((n + 1, d, d)), checkpoints


def _start_carry(m0, P0):
    """The ``carry`` arguments of the compiled passes at step 0: ``(m_0, P_0, [log Z, det, indefinite, singular])``."""
    return np.array(m0, dtype=float), np.array(P0, dtype=float), np.array([0.0, 1.0, 0.0, -1.0])


def segment_of(transitions, start, stop):
    """The ``(A, Q)`` stacks of steps ``start..stop-1`` (a constant stays one matrix).

    ``transitions`` is a pair of ``(1 or T, d, d)`` stacks, or a callable
    ``(start, stop) -> (A, Q)`` that computes a segment's stacks on demand
    (a Markov GP that does not store them).
    """
    if callable(transitions):
        return transitions(start, stop)
    return tuple(x if x.shape[0] == 1 else x[start:stop] for x in transitions)


class _Moments(NamedTuple):
    """The filter moments that :func:`_kernels._filter` keeps, one row per step (of a pass or a segment):
    the first six fields of :class:`FilterResult`."""

    means: np.ndarray
    covs: np.ndarray
    pred_means: np.ndarray
    pred_covs: np.ndarray
    a_pred_mean: np.ndarray
    a_pred_var: np.ndarray


def _new_moments(n, d):
    """:class:`_Moments` of ``n`` rows for state dimension ``d`` (``n = 1``: dummies for a pass that keeps none)."""
    return _Moments(np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d)), np.empty((n, d, d)), np.empty(n),
                    np.empty(n))


def _run_filter(gamma, pi, H, A, Q, start, stop, carry_mean, carry_cov, carry, keep, write, moments, scratch):
    """One call of :func:`_kernels._filter` over the steps ``start..stop-1`` with conditionals in ``scratch``
    (row 0: the conditional of step ``start - 1``) and, if ``keep``, moments in ``moments`` (row 0: step ``start``)."""
    m = moments
    return _kernels._filter(gamma, pi, H, A, Q, start, stop, start - 1, carry_mean, carry_cov, carry, keep, write,
                            m.means, m.covs, m.pred_means, m.pred_covs, *scratch[:3], m.a_pred_mean, m.a_pred_var,
                            *work_for(carry_mean.shape[0]))


def _forward(gamma, pi, H, A, Q, m0, P0, return_status, check_singular=False, conditionals=True):
    """Run the compiled filter over all steps keeping its moments; raise on failure unless ``return_status``.

    Returns ``(FilterResult, backward)`` where ``backward`` holds the arrays
    the smoother reads (gains, offsets, conditional covariances, last
    filtered moments; the first three empty without ``conditionals``).  With
    ``check_singular`` a singular predicted covariance (which only the
    smoother needs to invert) is a failure too.
    """
    T, d = gamma.shape[0], m0.shape[0]
    moments = _new_moments(T, d)
    scratch = _new_scratch(T, d) if conditionals else _new_scratch(0, d)
    last_mean, last_cov, carry = _start_carry(m0, P0)
    write = _kernels.WRITE if conditionals else _kernels.NO_WRITE
    log_z, status, step, singular = _run_filter(gamma, pi, H, A, Q, 0, T, last_mean, last_cov, carry, True, write,
                                                moments, scratch)
    if check_singular and status == STATUS_OK and singular >= 0:
        log_z, status, step = np.nan, STATUS_SINGULAR_PREDICTION, singular
    _check_status(status, step, return_status)
    filtered = FilterResult(*moments, log_z, status, step)
    return filtered, scratch[:3] + (last_mean, last_cov)


def _checkpointed_filter(gamma, pi, H, transitions, m0, P0, scratch, last_moments=None):
    """The forward pass in segments of the scratch's length, saving the filter's state where each one starts.

    ``scratch`` is :func:`_new_scratch`'s (or a :class:`Workspace`'s); the
    conditionals of the last segment are written into it (the backward pass
    recomputes the others), and with ``last_moments`` (:class:`_Moments`,
    one row per step of a segment, plus one) its filter moments too.
    Returns ``(log Z, status, failed step, carry_mean, carry_cov)``, the
    carried moments being the last filtered ones; a singular predicted
    covariance is a failure (the smoother cannot pass it).
    """
    T, d = gamma.shape[0], m0.shape[0]
    gains, offsets, cond_covs, checkpoints = scratch
    length = gains.shape[0] - 1
    dummies = _new_moments(1, d)
    carry_mean, carry_cov, carry = _start_carry(m0, P0)
    for segment, start in enumerate(range(0, T, length)):
        stop = min(T, start + length)
        if checkpoints is not None:
            for saved, now in zip(checkpoints, (carry_mean, carry_cov, carry)):
                saved[segment] = now
        A, Q = segment_of(transitions, start, stop)
        # the conditionals of the last segment are kept; the others are recomputed in the backward pass
        write = _kernels.WRITE if stop == T else _kernels.NO_WRITE
        keep = stop == T and last_moments is not None
        log_z, status, step, singular = _run_filter(gamma, pi, H, A, Q, start, stop, carry_mean, carry_cov, carry,
                                                    keep, write, last_moments if keep else dummies, scratch)
        if status != STATUS_OK:
            break
    if status == STATUS_OK and singular >= 0:
        log_z, status, step = np.nan, STATUS_SINGULAR_PREDICTION, singular
    return log_z, status, step, carry_mean, carry_cov


def _run_smoother(gamma, pi, H, transitions, m0, P0, store, return_status, workspace=None):
    """Filter plus RTS pass on arrays already checked by :func:`_validate` (no input checks here).

    The entry point for callers that validate a prior once and then smooth
    many sets of sites (e.g. every CVI iteration, with a :class:`Workspace`).
    ``transitions`` is as in :func:`segment_of`; with a workspace of
    ``segment_steps`` the pass runs in segments (module notes).  With
    ``store`` it returns a :class:`SmootherResult`, otherwise a
    :class:`MarginalsResult`; failures raise unless ``return_status``.
    """
    T, d = gamma.shape[0], m0.shape[0]
    scratch = _new_scratch(T, d) if workspace is None else workspace.arrays(T, d)
    gains, offsets, cond_covs, checkpoints = scratch
    length = gains.shape[0] - 1
    starts = range(0, T, length)
    log_z, status, step, carry_mean, carry_cov = _checkpointed_filter(gamma, pi, H, transitions, m0, P0, scratch)
    _check_status(status, step, return_status)
    n = T if store else 1
    means, covs, cross_covs = np.empty((n, d)), np.empty((n, d, d)), np.empty((n, d, d))
    a_mean, a_var = np.empty(T), np.empty(T)
    if status == STATUS_OK:
        for segment in range(len(starts) - 1, -1, -1):
            start = starts[segment]
            stop = min(T, start + length)
            if stop < T:
                # refilter from the segment's checkpoint one step past its end, keeping its conditionals
                _refilter(gamma, pi, H, transitions, start, stop, checkpoints, segment, scratch)
            _kernels._smooth(H, gains, offsets, cond_covs, start - 1, start, stop, T, carry_mean, carry_cov, store,
                             0, means, covs, cross_covs, a_mean, a_var, *work_for(d))
    else:
        a_mean.fill(np.nan)
        a_var.fill(np.nan)
    args = (a_mean, a_var, log_z, status, step)
    if store:
        return SmootherResult(means, covs, cross_covs, *args)
    return MarginalsResult(*args)


def _refilter(gamma, pi, H, transitions, start, stop, checkpoints, segment, scratch, moments=None):
    """Refilter the steps ``start..stop`` (one past the segment's end) from the segment's checkpoint, writing
    their conditionals into ``scratch`` and, with ``moments``, their filter moments; returns the ``A`` stack."""
    A, Q = segment_of(transitions, start, stop + 1)
    saved_mean, saved_cov, saved = (part[segment] for part in checkpoints)
    keep = moments is not None
    _run_filter(gamma, pi, H, A, Q, start, stop + 1, saved_mean, saved_cov, saved, keep, _kernels.WRITE,
                moments if keep else _new_moments(1, saved_mean.shape[0]), scratch)
    return A


def _segment_moments(gamma, pi, H, transitions, m0, P0, segment_steps):
    """The forward pass in segments, then each segment's filter and smoother moments, from the last segment back.

    What Fisher's identity reads per step (:mod:`.fisher_identity`), with
    ``O(segment_steps + T / segment_steps)`` values held at a time: the
    forward pass keeps checkpoints (module notes); the backward pass
    refilters each segment one step past its end, keeping the filter's
    moments, and smooths it keeping the smoothed ones.

    Returns
    -------
    log_normaliser : float
    segments : iterator
        Of ``(start, A, filtered, means, covs)``, from the last segment to the
        first: the rows of ``filtered`` (:class:`_Moments`), smoothed
        ``means`` (n, d) and ``covs`` (n, d, d) are the steps ``start..stop``
        (the first step of the next segment included, so that every step's
        predecessor is in the same rows; ``stop = T - 1`` for the last
        segment), and ``A`` is their transition stack (1 or n, d, d).  The
        arrays are overwritten by the next segment.

    Raises
    ------
    ValueError
        As :func:`kalman_smoother`, when the sites make the posterior invalid
        or a predicted covariance is singular.
    """
    T, d = gamma.shape[0], m0.shape[0]
    scratch = _new_scratch(T, d, segment_steps)
    filtered = _new_moments(scratch[0].shape[0], d)
    log_z, status, step, carry_mean, carry_cov = _checkpointed_filter(gamma, pi, H, transitions, m0, P0, scratch,
                                                                      last_moments=filtered)
    _check_status(status, step, False)
    return log_z, _smoothed_segments(gamma, pi, H, transitions, scratch, filtered, carry_mean, carry_cov)


def _smoothed_segments(gamma, pi, H, transitions, scratch, filtered, carry_mean, carry_cov):
    """The backward pass of :func:`_segment_moments` (a generator)."""
    T, d = gamma.shape[0], carry_mean.shape[0]
    gains, offsets, cond_covs, checkpoints = scratch
    length = gains.shape[0] - 1
    rows = length + 1
    means, covs, cross_covs = np.empty((rows, d)), np.empty((rows, d, d)), np.empty((rows, d, d))
    a_mean, a_var = np.empty(rows), np.empty(rows)
    starts = range(0, T, length)
    for segment in range(len(starts) - 1, -1, -1):
        start = starts[segment]
        stop = min(T, start + length)
        if stop < T:
            A = _refilter(gamma, pi, H, transitions, start, stop, checkpoints, segment, scratch, filtered)
            n = stop + 1 - start
            means[n - 1], covs[n - 1] = carry_mean, carry_cov       # the smoothed moments of step stop
        else:
            A = segment_of(transitions, start, stop)[0]
            n = stop - start
        _kernels._smooth(H, gains, offsets, cond_covs, start - 1, start, stop, T, carry_mean, carry_cov, True, start,
                         means, covs, cross_covs, a_mean, a_var, *work_for(d))
        yield start, A, _Moments(*(x[:n] for x in filtered)), means[:n], covs[:n]


def _filter_and_smooth(gamma, pi, H, A, Q, m0, P0):
    """Filter keeping its moments plus the full RTS pass, on arrays checked by :func:`_validate`.

    Returns ``(FilterResult, SmootherResult)``; failures raise ``ValueError``.
    """
    filtered, (gains, offsets, cond_covs, last_mean, last_cov) = _forward(gamma, pi, H, A, Q, m0, P0, False,
                                                                          check_singular=True)
    T, d = gamma.shape[0], m0.shape[0]
    means, covs, cross_covs = np.empty((T, d)), np.empty((T, d, d)), np.empty((T, d, d))
    a_mean, a_var = np.empty(T), np.empty(T)
    _kernels._smooth(H, gains, offsets, cond_covs, -1, 0, T, T, last_mean, last_cov, True, 0, means, covs, cross_covs,
                     a_mean, a_var, *work_for(d))
    return filtered, SmootherResult(means, covs, cross_covs, a_mean, a_var, filtered.log_normaliser, STATUS_OK, -1)


def kalman_filter(site_natural_mean, site_precision, obs_row, transition, process_cov, init_mean, init_cov,
                  *, return_status=False):
    """Kalman filter of the prior times the sites: filtered and predicted moments and ``log Z``.

    Parameters
    ----------{params}

    Returns
    -------
    FilterResult
        ``means`` (T, d), ``covs`` (T, d, d), ``pred_means`` (T, d),
        ``pred_covs`` (T, d, d), ``pred_marginal_mean`` (T,),
        ``pred_marginal_var`` (T,), ``log_normaliser``, ``status``,
        ``failed_step``.

    Raises
    ------
    ValueError
        On invalid input, or (unless ``return_status``) when the sites make
        the posterior invalid (module notes).
    """
    gamma, pi, H, A, Q, m0, P0 = _validate(site_natural_mean, site_precision, obs_row, transition, process_cov,
                                           init_mean, init_cov)
    return _forward(gamma, pi, H, A, Q, m0, P0, return_status, conditionals=False)[0]


def kalman_smoother(site_natural_mean, site_precision, obs_row, transition, process_cov, init_mean, init_cov,
                    *, return_status=False):
    """Kalman filter plus RTS smoother: smoothed moments, cross-covariances and ``log Z``.

    Parameters
    ----------{params}

    Returns
    -------
    SmootherResult
        ``means`` (T, d), ``covs`` (T, d, d), ``cross_covs`` (T, d, d),
        ``marginal_mean`` (T,), ``marginal_var`` (T,), ``log_normaliser``,
        ``status``, ``failed_step``.

    Raises
    ------
    ValueError
        On invalid input, or (unless ``return_status``) when the sites make
        the posterior invalid (module notes) or a predicted covariance is singular.

    See Also
    --------
    smoothed_marginals : the same pass keeping only the marginals of ``a_t``.
    """
    gamma, pi, H, A, Q, m0, P0 = _validate(site_natural_mean, site_precision, obs_row, transition, process_cov,
                                           init_mean, init_cov)
    return _run_smoother(gamma, pi, H, (A, Q), m0, P0, store=True, return_status=return_status)


def smoothed_marginals(site_natural_mean, site_precision, obs_row, transition, process_cov, init_mean, init_cov,
                       *, return_status=False):
    """Smoothed marginals of ``a_t = H_t x_t`` and ``log Z`` only (the lean pass a site update needs).

    Same computation as :func:`kalman_smoother`, but the backward pass writes
    neither smoothed state moments nor cross-covariances: it reads the
    filter's arrays and keeps one smoothed state at a time.

    Parameters
    ----------{params}

    Returns
    -------
    MarginalsResult
        ``marginal_mean`` (T,), ``marginal_var`` (T,), ``log_normaliser``,
        ``status``, ``failed_step``.

    Raises
    ------
    ValueError
        As :func:`kalman_smoother`.
    """
    gamma, pi, H, A, Q, m0, P0 = _validate(site_natural_mean, site_precision, obs_row, transition, process_cov,
                                           init_mean, init_cov)
    return _run_smoother(gamma, pi, H, (A, Q), m0, P0, store=False, return_status=return_status)


for _function in (kalman_filter, kalman_smoother, smoothed_marginals):
    _function.__doc__ = _function.__doc__.format(params=_PARAMETERS_DOC)
del _function
