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

The checks of the inputs and the errors of a failed pass are in
:mod:`._smoother_inputs`, the scratch of the passes (:class:`Workspace`,
:func:`segment_of`) in :mod:`._workspace`; this module keeps the passes and
their results.
"""

from typing import NamedTuple

import numpy as np

from . import _kernels
from ._kernels import STATUS_OK, STATUS_SINGULAR_PREDICTION
from ._small import work_for
from ._smoother_inputs import _check_status, _validate
from ._workspace import _Moments, _new_moments, _new_scratch, _start_carry, segment_of

# re-exported: efvi.models.lds exports the statuses from here, and the blocks import the checks and the workspace
from ._kernels import STATUS_INVALID_SITE  # noqa: F401
from ._smoother_inputs import _validate_prior, _validate_sites_in_segments, check_process_cov  # noqa: F401
from ._workspace import PerThreadScratch, Workspace  # noqa: F401

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
