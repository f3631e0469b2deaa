r"""Compiled Kalman filter and RTS smoother driven by Gaussian sites in a-space.

Every time step ``t`` sees the state through the scalar ``a_t = H_t x_t`` and
carries an unnormalised Gaussian site
``t_t(a) = exp(gamma_t a - pi_t a^2 / 2)``.  With the predicted moments
``(m, P)`` of ``x_t``, ``u = P H^T``, ``S = H u`` and ``mu = H m``, the
measurement update and the log-normaliser increment are

.. math::

    m' = m + u (\gamma - \pi \mu) / (1 + \pi S), \qquad
    P' = P - \pi u u^T / (1 + \pi S),

    \log Z_t = -\tfrac12 \log(1 + \pi S)
                + \frac{\gamma^2 S + 2 \gamma \mu - \pi \mu^2}{2 (1 + \pi S)},

algebraic identities whenever ``1 + pi S != 0`` (``pi`` may be negative).  Right after
predicting ``(mp_{t+1}, Pp_{t+1})`` from the filtered ``(m_t, P_t)`` the
filter also writes the backward conditional of the prior-times-sites chain,

.. math::

    x_t \mid x_{t+1} \sim N(G_t x_{t+1} + b_t, C_t), \qquad
    G_t = P_t A_{t+1}^T Pp_{t+1}^{-1}, \quad
    b_t = m_t - G_t mp_{t+1}, \quad
    C_t = P_t - G_t A_{t+1} P_t,

(the RTS gain from a square-root-free ``L D L^T`` solve), so the RTS
backward pass is the affine recursion

.. math::

    m^s_t = G_t m^s_{t+1} + b_t, \qquad
    P^s_t = G_t P^s_{t+1} G_t^T + C_t, \qquad
    Cov(x_{t+1}, x_t | all) = P^s_{t+1} G_t^T.

**Validity.**  The backward conditionals factorise the posterior as
``q(x) = q_f(x_{T-1}) prod_{t < T-1} q(x_t | x_{t+1})``, so its precision
is ``U^T D U`` with ``U`` unit block-triangular and
``D = blockdiag(C_0^{-1}, ..., C_{T-2}^{-1}, P_{T-1}^{-1})``: by Sylvester's
law of inertia the posterior is valid exactly when every ``C_t`` and the
last filtered covariance ``P_{T-1}`` are positive (semi-)definite.  ``C_t``
depends only on the sites up to ``t``, so the first ``t`` that fails is the
first step whose sites make the posterior invalid whatever the later ones.
While every factor ``1 + pi S`` is positive the filtered covariances are
positive definite, hence so are the ``C_t``, and nothing is tested (the path
of log-concave sites); once a factor has been negative the filter carries on
with indefinite filtered covariances (an indefinite ``L D L^T`` gives the
gain) and tests every later ``C_t`` and ``P_{T-1}``, which costs one small
factorisation per step.  The product of the factors is
``det(I + K Pi) > 0`` for a valid posterior, so ``log Z`` takes ``log|.|``.
It fails only where a factor is zero or a predicted covariance singular.

Solving for the gain in the forward pass keeps it off both passes' critical
dependency chains (the filter's runs through ``P``, the smoother's through
``P^s``), which roughly halves the cost of a pass at ``d = 2``; the running
``log Z`` multiplies the factors ``1 + pi S`` and takes one logarithm per
1e100 of range instead of one per step.

Arrays are contiguous float64.  ``H`` is ``(TH, d)``, ``A`` ``(TA, d, d)`` and
``Q`` ``(TQ, d, d)`` with each leading length either ``T`` (time-varying; for
``A`` and ``Q`` the length of the steps a call covers) or ``1`` (constant,
never copied ``T`` times).  Covariances are kept exactly symmetric: only the
upper triangle is computed and then mirrored.  Both passes cover any range
of steps and carry their state in and out through small arrays, so that a
long series can be smoothed segment by segment (:mod:`.smoother`).

Speed at small ``d``: the per-step state lives in tuples or small arrays,
see :mod:`._small`; ``dims, zeros, zz`` come from its :func:`work_for`.
"""

import math

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._small import _affine, _copy_into, _fresh, _ldl, _ldl_solve, _set

STATUS_OK = 0
"""Every step succeeded."""
STATUS_INVALID_SITE = 1
"""The sites make the posterior invalid: sites ``0..t`` already do, whatever the later ones, at the
reported step ``t`` (or ``1 + pi_t S_t`` is zero or not finite there)."""
STATUS_SINGULAR_PREDICTION = 2
"""The predicted covariance of the reported step is singular."""

PSD_RTOL = 1e-10
"""Relative tolerance of the semi-definiteness tests (rounding of covariances that are exactly singular)."""


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _psd_up_to_rounding(M, scale, shifted, F, inv_pivots, dims):
    """Whether ``M + PSD_RTOL diag(|scale_ii|)`` is positive definite (flat ``d * d`` work variables).

    ``scale`` is the covariance ``M`` was computed from: the shift accepts
    the rounding error of a matrix that is exactly singular (``Q_t = 0``),
    per state component.  Returns ``(shifted, F, inv_pivots, ok)``.
    """
    d = len(dims)
    for i in range(d):
        for j in range(d):
            shifted = _set(shifted, i * d + j, M[i * d + j])
        shifted = _set(shifted, i * d + i, M[i * d + i] + PSD_RTOL * abs(scale[i * d + i]) + 1e-300)
    F, inv_pivots, ok = _ldl(shifted, F, inv_pivots, False, dims)
    return shifted, F, inv_pivots, ok


CARRY_SIZE = 4
"""Length of the ``carry`` array of the passes: the running ``log Z``, the pending determinant, the indefinite
flag and the first singular step."""

WRITE = (0,)
"""``write`` argument of :func:`_filter` that stores the backward conditionals (a tuple, so that the choice is
made when the kernel is compiled: one specialisation each)."""
NO_WRITE = ()
"""``write`` argument of :func:`_filter` that forms the conditionals only where the validity test needs them."""


@numba.jit(**NUMBA_OPTIONS)
def _filter(gamma, pi, H, A, Q, start, stop, base, carry_mean, carry_cov, carry, keep, write, means, covs,
            pred_means, pred_covs, gains, offsets, cond_covs, a_pred_mean, a_pred_var, dims, zeros, zz):
    """Forward pass over the steps ``start..stop-1``: filtered moments, ``log Z``, backward conditionals, validity.

    A pass over all ``T`` steps is one call with ``start = base = 0``,
    ``stop = T``; a long series may be run segment by segment, each call
    carrying on from where the previous one stopped (module notes of
    :mod:`efvi.models.lds.smoother`).  ``gamma``, ``pi`` (T,) and ``H``
    (1 or T, d) are indexed by the step ``t``; ``A``, ``Q`` (1 or
    ``stop - start``, d, d) by ``t - start`` (a segment's own stacks).

    On entry ``carry_mean`` (d,) and ``carry_cov`` (d, d) hold ``m_0``,
    ``P_0`` (the prediction of step 0) if ``start == 0``, else the filtered
    moments of step ``start - 1``; ``carry`` (CARRY_SIZE,) holds the
    running ``log Z``, the pending product of the factors ``1 + pi S``, the
    indefinite flag and the first singular step (``0, 1, 0, -1`` at
    ``start == 0``).  On a successful return the three hold the same for
    step ``stop - 1``; at ``stop == T`` the carried moments are the last
    filtered ones and ``log Z`` is final.

    Right after predicting step ``t`` it forms the backward conditional of
    step ``t - 1``, ``x_{t-1} | x_t ~ N(G x_t + b, C)`` (module notes).  With
    ``write = WRITE`` it stores it in row ``t - 1 - base`` of ``gains``
    (n, d, d), ``offsets`` (n, d) and ``cond_covs`` (n, d, d), which the
    caller keeps within ``0..n-1`` (unchecked); with ``NO_WRITE`` it forms
    the conditional only where the validity test needs it, in the spare last
    row.  If ``keep`` it also fills, in row ``t - 1 - base`` (row ``t`` of a
    whole pass), the filtered ``means`` (n, d), ``covs`` (n, d, d), predicted
    ``pred_means``, ``pred_covs`` (moments given sites ``< t``) and the
    predictive moments of ``a_t``, ``a_pred_mean``, ``a_pred_var`` (n,);
    otherwise those six arrays are not touched (they may be dummies).
    ``dims, zeros, zz`` come from :func:`work_for`.

    Validity (module notes): once a factor ``1 + pi S`` has been negative,
    every later ``C_t`` and the last filtered covariance must be positive
    semi-definite (up to rounding) and every predicted covariance invertible.

    Returns ``(log Z, status, failed step, singular step)``: the first two
    describe the filter (``log Z`` is NaN and the step >= 0 if it failed);
    ``singular step`` is the first ``t`` whose predicted covariance is
    singular (the smoother gain is undefined there), else -1.
    """
    d = len(dims)
    T = gamma.shape[0]
    spare = gains.shape[0] - 1
    sH = 1 if H.shape[0] > 1 else 0
    sA = 1 if A.shape[0] > 1 else 0
    sQ = 1 if Q.shape[0] > 1 else 0
    m, mp, u, inv_pivots = _fresh(zeros), _fresh(zeros), _fresh(zeros), _fresh(zeros)
    P, Pp, AP, F, gain_t = _fresh(zz), _fresh(zz), _fresh(zz), _fresh(zz), _fresh(zz)
    no_shift = np.zeros((1, d))
    for i in range(d):
        for j in range(d):
            if start == 0:
                Pp = _set(Pp, i * d + j, carry_cov[i, j])
            else:
                P = _set(P, i * d + j, carry_cov[i, j])
        if start == 0:
            mp = _set(mp, i, carry_mean[i])
        else:
            m = _set(m, i, carry_mean[i])
    log_z = carry[0]
    det = carry[1]       # running product of (1 + pi S); its log|.| is moved into log_z now and then
    indefinite = carry[2] != 0.0  # a factor 1 + pi S has been negative: filtered covariances may be indefinite
    singular = int(carry[3])
    for t in range(start, stop):
        if t > 0:
            ia = sA * (t - start)
            iq = sQ * (t - start)
            mp, AP, Pp = _affine(A, ia, m, P, no_shift, 0, Q, iq, mp, AP, Pp, dims)
            # backward conditional of step t-1: G^T = Pp^{-1} A P, b = m - G mp, C = P - G A P
            F, inv_pivots, ok = _ldl(Pp, F, inv_pivots, indefinite, dims)
            slot = t - 1 - base if len(write) else spare
            if not ok:
                if indefinite:
                    return math.nan, STATUS_SINGULAR_PREDICTION, t, t
                if singular < 0:
                    singular = t
            elif len(write) or indefinite:
                gain_t = _ldl_solve(F, inv_pivots, _copy_into(gain_t, AP), dims)
                for i in range(d):
                    acc = m[i]
                    for k in range(d):
                        gains[slot, i, k] = gain_t[k * d + i]
                        acc -= gain_t[k * d + i] * mp[k]
                    offsets[slot, i] = acc
                    for j in range(i, d):
                        acc = P[i * d + j]
                        for k in range(d):
                            acc -= gain_t[k * d + i] * AP[k * d + j]
                        cond_covs[slot, i, j] = acc
                        cond_covs[slot, j, i] = acc
                if indefinite:
                    for i in range(d):
                        for j in range(d):
                            gain_t = _set(gain_t, i * d + j, cond_covs[slot, i, j])
                    AP, F, inv_pivots, ok = _psd_up_to_rounding(gain_t, P, AP, F, inv_pivots, dims)
                    if not ok:
                        return math.nan, STATUS_INVALID_SITE, t - 1, singular
        ih = sH * t
        S = 0.0
        mu = 0.0
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += Pp[i * d + k] * H[ih, k]
            u = _set(u, i, acc)
            S += H[ih, i] * acc
            mu += H[ih, i] * mp[i]
        row = t - 1 - base
        if keep:
            a_pred_mean[row] = mu
            a_pred_var[row] = S
        g = gamma[t]
        p = pi[t]
        denom = 1.0 + p * S
        if not denom > 0.0:
            if not -math.inf < denom < 0.0:
                return math.nan, STATUS_INVALID_SITE, t, singular
            indefinite = True
        inv = 1.0 / denom
        c_mean = (g - p * mu) * inv
        c_cov = p * inv
        for i in range(d):
            m = _set(m, i, mp[i] + c_mean * u[i])
            for j in range(i, d):
                v = Pp[i * d + j] - c_cov * u[i] * u[j]
                P = _set(P, i * d + j, v)
                P = _set(P, j * d + i, v)
        if keep:
            for i in range(d):
                pred_means[row, i] = mp[i]
                means[row, i] = m[i]
                for j in range(d):
                    pred_covs[row, i, j] = Pp[i * d + j]
                    covs[row, i, j] = P[i * d + j]
        log_z += 0.5 * (g * g * S + 2.0 * g * mu - p * mu * mu) * inv
        det *= denom
        if not 1e-100 < abs(det) < 1e100:
            log_z -= 0.5 * math.log(abs(det))
            det = 1.0
    if stop == T:
        if indefinite:
            AP, F, inv_pivots, ok = _psd_up_to_rounding(P, P, AP, F, inv_pivots, dims)
            if not ok:
                return math.nan, STATUS_INVALID_SITE, T - 1, singular
        log_z -= 0.5 * math.log(abs(det))
        det = 1.0
    for i in range(d):
        carry_mean[i] = m[i]
        for j in range(d):
            carry_cov[i, j] = P[i * d + j]
    carry[0] = log_z
    carry[1] = det
    carry[2] = 1.0 if indefinite else 0.0
    carry[3] = singular
    return log_z, STATUS_OK, -1, singular


@numba.jit(**NUMBA_OPTIONS)
def _smooth(H, gains, offsets, cond_covs, base, start, stop, T, carry_mean, carry_cov, store, origin, means, covs,
            cross_covs, a_mean, a_var, dims, zeros, zz):
    """RTS backward pass over the steps ``stop-1`` down to ``start`` (of ``T``), from :func:`_filter`'s conditionals.

    ``m^s_t = G_t m^s_{t+1} + b_t`` and ``P^s_t = G_t P^s_{t+1} G_t^T + C_t``
    with the conditional of step ``t`` at index ``t - base`` of ``gains``,
    ``offsets`` and ``cond_covs``.  On entry ``carry_mean`` (d,) and
    ``carry_cov`` (d, d) hold the smoothed moments of step ``stop`` (the
    last filtered ones, of step ``T - 1``, if ``stop == T``); on return
    those of step ``start``, so that a long series may be smoothed segment
    by segment.  Fills, in row ``t - origin`` (``origin = 0``: row ``t``),
    the smoothed a-marginals ``a_mean``, ``a_var`` (n,); if ``store`` also
    the smoothed ``means`` (n, d), ``covs`` (n, d, d) and
    ``cross_covs[t] = Cov(x_t, x_{t-1} | all) = P^s_t G_{t-1}^T``
    (n, d, d; ``cross_covs[0] = 0``, and row ``stop - origin`` is written
    too); otherwise those three arrays are not touched (they may be
    dummies).  ``dims, zeros, zz`` come from :func:`work_for`.
    """
    d = len(dims)
    sH = 1 if H.shape[0] > 1 else 0
    ms, m_new = _fresh(zeros), _fresh(zeros)
    Ps, GP = _fresh(zz), _fresh(zz)
    for i in range(d):
        ms = _set(ms, i, carry_mean[i])
        for j in range(d):
            Ps = _set(Ps, i * d + j, carry_cov[i, j])
    for t in range(stop - 1, start - 1, -1):
        if t < T - 1:
            jc = t - base
            m_new, GP, Ps = _affine(gains, jc, ms, Ps, offsets, jc, cond_covs, jc, m_new, GP, Ps, dims)
            ms = _copy_into(ms, m_new)
            if store:
                for i in range(d):
                    for j in range(d):
                        cross_covs[t + 1 - origin, i, j] = GP[j * d + i]
        row = t - origin
        if store:
            for i in range(d):
                means[row, i] = ms[i]
                for j in range(d):
                    covs[row, i, j] = Ps[i * d + j]
        ih = sH * t
        mean = 0.0
        var = 0.0
        for i in range(d):
            mean += H[ih, i] * ms[i]
            acc = 0.0
            for k in range(d):
                acc += Ps[i * d + k] * H[ih, k]
            var += H[ih, i] * acc
        a_mean[row] = mean
        a_var[row] = var
    if store and start == 0:
        for i in range(d):
            for j in range(d):
                cross_covs[start - origin, i, j] = 0.0
    for i in range(d):
        carry_mean[i] = ms[i]
        for j in range(d):
            carry_cov[i, j] = Ps[i * d + j]


@numba.jit(**NUMBA_OPTIONS)
def _first_not_psd(M, rtol, floor, dims, zeros, zz):
    """Index of the first matrix of the stack ``M`` (n, d, d) that is not symmetric PSD, else -1.

    Symmetry is checked to ``rtol`` times the largest entry; semi-definiteness
    by an ``L D L^T`` factorisation of ``M + rtol * max(max|M|, floor) * I``.  The
    ``floor`` (e.g. the size of the initial covariance) accepts the rounding
    noise of ``Q = Pinf - A Pinf A^T`` when ``Q`` itself is tiny (short gaps,
    long lengthscales), which is harmless next to the state covariance.
    ``dims, zeros, zz`` come from :func:`work_for`.
    """
    n = M.shape[0]
    d = len(dims)
    shifted, F, inv_pivots = _fresh(zz), _fresh(zz), _fresh(zeros)
    for s in range(n):
        scale = 0.0
        for i in range(d):
            for j in range(d):
                scale = max(scale, abs(M[s, i, j]))
        tol = rtol * max(scale, floor)
        for i in range(d):
            for j in range(d):
                if abs(M[s, i, j] - M[s, j, i]) > tol:
                    return s
                shifted = _set(shifted, i * d + j, M[s, i, j] + (tol + 1e-300 if i == j else 0.0))
        F, inv_pivots, ok = _ldl(shifted, F, inv_pivots, False, dims)
        if not ok:
            return s
    return -1
