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

valid whenever ``1 + pi S > 0`` (``pi`` may be negative).  Right after
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

Solving for the gain in the forward pass keeps it off both passes' critical
dependency chains (the filter's runs through ``P``, the smoother's through
``P^s``), which roughly halves the cost of a pass at ``d = 2``; the running
``log Z`` multiplies the factors ``1 + pi S`` and takes one logarithm per
1e100 of range instead of one per step.

Arrays are contiguous float64.  ``H`` is ``(TH, d)``, ``A`` ``(TA, d, d)`` and
``Q`` ``(TQ, d, d)`` with each leading length either ``T`` (time-varying) or
``1`` (constant, never copied ``T`` times).  Covariances are kept exactly
symmetric: only the upper triangle is computed and then mirrored.

Speed at small ``d``.  The per-step state (``m``, ``P``, the prediction,
the gain) lives in work variables that are either tuples or small arrays,
chosen by :func:`work_for`: vectors are ``d``-long and matrices flat
``d * d``-long in row-major order (entry ``(i, j)`` at ``i * d + j``).  The
kernels take ``dims = (0,) * d``, so that ``d = len(dims)`` is a compile-time
constant (one cached compilation per ``d``) and LLVM unrolls the loops over
the state, and are written once against three helpers: ``x[i]`` reads, ``x =
_set(x, i, v)`` writes and ``_fresh(x)`` makes an independent work variable.

* ``d <= TUPLE_MAX_D``: tuples.  After unrolling they stay in registers (``_set`` is numba's ``tuple_setitem``).  Small
  numpy arrays would not do: every store into an array might alias every other
  array and forces reloads.  This is 1.5-2x faster at ``d = 2``.
* larger ``d``: arrays allocated once per call and updated in place
  (``_set`` assigns and returns the array).  Tuples there would compile for
  minutes and run in ``O(d^2)`` per element access.

Everything called inside a time loop is inlined.
"""

import math

import numba
import numpy as np
from numba.core import types
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.extending import overload

from models._numba import NUMBA_OPTIONS

STATUS_OK = 0
"""Every step succeeded."""
STATUS_INVALID_SITE = 1
"""``1 + pi_t S_t <= 0`` (or not finite) at the reported step."""
STATUS_SINGULAR_PREDICTION = 2
"""The predicted covariance of the reported step is not positive definite."""

TUPLE_MAX_D = 3
"""Largest state dimension whose work variables are tuples (see the module notes)."""


def work_for(d):
    """The last three arguments of the kernels for state dimension ``d``: ``dims, zeros, zz``.

    ``dims = (0,) * d`` makes ``d = len(dims)`` a compile-time constant in
    either mode; ``zeros`` and ``zz`` are the templates of the vector and
    flat-matrix work variables: tuples ``(0.0,) * d`` and ``(0.0,) * (d * d)``
    up to ``TUPLE_MAX_D``, arrays beyond (module notes).
    """
    if d <= TUPLE_MAX_D:
        return (0,) * d, (0.0,) * d, (0.0,) * (d * d)
    return (0,) * d, np.zeros(d), np.zeros(d * d)


def _set(x, i, v):
    """``x`` with entry ``i`` set to ``v`` (compiled only, see the overload)."""
    raise NotImplementedError("compiled-only helper")


@overload(_set, inline="always")
def _set_overload(x, i, v):
    if isinstance(x, types.UniTuple):
        return lambda x, i, v: tuple_setitem(x, i, v)
    if isinstance(x, types.Array):
        def set_in_place(x, i, v):
            x[i] = v
            return x
        return set_in_place
    return None


def _fresh(x):
    """An independent work variable shaped like ``x`` (compiled only, see the overload)."""
    raise NotImplementedError("compiled-only helper")


@overload(_fresh, inline="always")
def _fresh_overload(x):
    if isinstance(x, types.UniTuple):
        return lambda x: x
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    return None


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _copy_into(dst, src):
    """``dst`` holding the entries of ``src``."""
    for k in range(len(src)):
        dst = _set(dst, k, src[k])
    return dst


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _ldl(M, F, inv_pivots, dims):
    """``L D L^T`` factorisation of the symmetric flat ``d * d`` matrix ``M`` into ``F`` (lower triangle read).

    Square-root free (one division per pivot), which matters at small ``d``
    where it runs once per time step.  Returns ``(F, inv_pivots, ok)``: the
    strict lower triangle of ``F`` holds the unit factor ``L``, its strict
    upper triangle ``(L D)^T``; ``inv_pivots`` (d) holds ``1 / D``; ``ok`` is
    False if a pivot is not positive (``M`` not positive definite).
    """
    d = len(dims)
    F = _copy_into(F, M)
    for j in range(d):
        s = F[j * d + j]
        for k in range(j):
            s -= F[j * d + k] * F[k * d + j]
        if not s > 0.0:
            return F, inv_pivots, False
        inv = 1.0 / s
        inv_pivots = _set(inv_pivots, j, inv)
        for i in range(j + 1, d):
            s = F[i * d + j]
            for k in range(j):
                s -= F[i * d + k] * F[k * d + j]
            F = _set(F, j * d + i, s)
            F = _set(F, i * d + j, s * inv)
    return F, inv_pivots, True


@numba.jit(inline="always", **NUMBA_OPTIONS)
def _ldl_solve(F, inv_pivots, B, dims):
    """``M^{-1} B`` in place of the flat ``d * d`` matrix ``B`` (``d`` columns), given ``_ldl(M)``."""
    d = len(dims)
    for c in range(d):
        for i in range(d):
            s = B[i * d + c]
            for k in range(i):
                s -= F[i * d + k] * B[k * d + c]
            B = _set(B, i * d + c, s)
        for i in range(d - 1, -1, -1):
            s = B[i * d + c] * inv_pivots[i]
            for k in range(i + 1, d):
                s -= F[k * d + i] * B[k * d + c]
            B = _set(B, i * d + c, s)
    return B


@numba.jit(**NUMBA_OPTIONS)
def _filter(gamma, pi, H, A, Q, m0, P0, keep, means, covs, pred_means, pred_covs, gains, offsets, cond_covs,
            last_mean, last_cov, a_pred_mean, a_pred_var, dims, zeros, zz):
    """Forward pass: filtered moments, ``log Z`` and the backward conditionals for the smoother.

    After predicting ``(mp_{t+1}, Pp_{t+1})`` from the filtered ``(m_t, P_t)``
    it writes the backward conditional ``x_t | x_{t+1} ~ N(G_t x_{t+1} + b_t, C_t)``
    (module notes) to ``gains`` (T, d, d), ``offsets`` (T, d) and
    ``cond_covs`` (T, d, d) for ``t < T - 1``, and at the end the filtered
    moments of the last step to ``last_mean`` (d,), ``last_cov`` (d, d).  If
    ``keep`` it also fills the filtered ``means`` (T, d), ``covs`` (T, d, d)
    and predicted ``pred_means``, ``pred_covs`` (moments given sites ``< t``);
    otherwise those four arrays are not touched (they may be dummies).  The
    predictive moments of ``a_t`` go to ``a_pred_mean``, ``a_pred_var`` (T,),
    all of them if ``keep``, otherwise only at a failing step.
    ``dims, zeros, zz`` come from :func:`work_for`.

    Returns ``(log Z, status, failed step, singular step)``: the first two
    describe the filter (``log Z`` is NaN and the step >= 0 if a site is
    invalid); ``singular step`` is the first ``t`` whose predicted covariance
    is not positive definite (the smoother gain is undefined there), else -1.
    """
    d = len(dims)
    T = gamma.shape[0]
    sH = 1 if H.shape[0] > 1 else 0
    sA = 1 if A.shape[0] > 1 else 0
    sQ = 1 if Q.shape[0] > 1 else 0
    m, mp, u, inv_pivots = _fresh(zeros), _fresh(zeros), _fresh(zeros), _fresh(zeros)
    P, Pp, AP, F, gain_t = _fresh(zz), _fresh(zz), _fresh(zz), _fresh(zz), _fresh(zz)
    for i in range(d):
        mp = _set(mp, i, m0[i])
        for j in range(d):
            Pp = _set(Pp, i * d + j, P0[i, j])
    log_z = 0.0
    det = 1.0       # running product of (1 + pi S); its log is moved into log_z now and then
    singular = -1
    for t in range(T):
        if t > 0:
            ia = sA * t
            iq = sQ * t
            for i in range(d):
                acc = 0.0
                for k in range(d):
                    acc += A[ia, i, k] * m[k]
                mp = _set(mp, i, acc)
                for j in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += A[ia, i, k] * P[k * d + j]
                    AP = _set(AP, i * d + j, acc)
            for i in range(d):
                for j in range(i, d):
                    acc = Q[iq, i, j]
                    for k in range(d):
                        acc += AP[i * d + k] * A[ia, j, k]
                    Pp = _set(Pp, i * d + j, acc)
                    Pp = _set(Pp, j * d + i, acc)
            # backward conditional of step t-1: G^T = Pp^{-1} A P, b = m - G mp, C = P - G A P
            F, inv_pivots, ok = _ldl(Pp, F, inv_pivots, dims)
            if ok:
                gain_t = _ldl_solve(F, inv_pivots, _copy_into(gain_t, AP), dims)
                for i in range(d):
                    acc = m[i]
                    for k in range(d):
                        gains[t - 1, i, k] = gain_t[k * d + i]
                        acc -= gain_t[k * d + i] * mp[k]
                    offsets[t - 1, i] = acc
                    for j in range(i, d):
                        acc = P[i * d + j]
                        for k in range(d):
                            acc -= gain_t[k * d + i] * AP[k * d + j]
                        cond_covs[t - 1, i, j] = acc
                        cond_covs[t - 1, j, i] = acc
            elif singular < 0:
                singular = t
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
        if keep:
            a_pred_mean[t] = mu
            a_pred_var[t] = S
        g = gamma[t]
        p = pi[t]
        denom = 1.0 + p * S
        if not (denom > 0.0 and denom < math.inf):
            a_pred_mean[t] = mu
            a_pred_var[t] = S
            return math.nan, STATUS_INVALID_SITE, t, singular
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
                pred_means[t, i] = mp[i]
                means[t, i] = m[i]
                for j in range(d):
                    pred_covs[t, i, j] = Pp[i * d + j]
                    covs[t, i, j] = P[i * d + j]
        log_z += 0.5 * (g * g * S + 2.0 * g * mu - p * mu * mu) * inv
        det *= denom
        if not 1e-100 < det < 1e100:
            log_z -= 0.5 * math.log(det)
            det = 1.0
    log_z -= 0.5 * math.log(det)
    for i in range(d):
        last_mean[i] = m[i]
        for j in range(d):
            last_cov[i, j] = P[i * d + j]
    return log_z, STATUS_OK, -1, singular


@numba.jit(**NUMBA_OPTIONS)
def _smooth(H, gains, offsets, cond_covs, last_mean, last_cov, store, means, covs, cross_covs, a_mean, a_var,
            dims, zeros, zz):
    """RTS backward pass over the backward conditionals written by :func:`_filter`.

    ``m^s_t = G_t m^s_{t+1} + b_t`` and ``P^s_t = G_t P^s_{t+1} G_t^T + C_t``,
    starting from the last filtered moments.  Fills the smoothed
    a-marginals ``a_mean``, ``a_var`` (T,); if ``store`` also the smoothed
    ``means`` (T, d), ``covs`` (T, d, d) and ``cross_covs[t] =
    Cov(x_t, x_{t-1} | all) = P^s_t G_{t-1}^T`` (``cross_covs[0] = 0``);
    otherwise those three arrays are not touched (they may be dummies).
    ``dims, zeros, zz`` come from :func:`work_for`.
    """
    d = len(dims)
    T = a_mean.shape[0]
    sH = 1 if H.shape[0] > 1 else 0
    ms, m_new = _fresh(zeros), _fresh(zeros)
    Ps, GP = _fresh(zz), _fresh(zz)
    for i in range(d):
        ms = _set(ms, i, last_mean[i])
        for j in range(d):
            Ps = _set(Ps, i * d + j, last_cov[i, j])
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            for i in range(d):
                acc = offsets[t, i]
                for k in range(d):
                    acc += gains[t, i, k] * ms[k]
                m_new = _set(m_new, i, acc)
                for j in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += gains[t, i, k] * Ps[k * d + j]
                    GP = _set(GP, i * d + j, acc)
            if store:
                for i in range(d):
                    for j in range(d):
                        cross_covs[t + 1, i, j] = GP[j * d + i]
            ms = _copy_into(ms, m_new)
            for i in range(d):
                for j in range(i, d):
                    acc = cond_covs[t, i, j]
                    for k in range(d):
                        acc += GP[i * d + k] * gains[t, j, k]
                    Ps = _set(Ps, i * d + j, acc)
                    Ps = _set(Ps, j * d + i, acc)
        if store:
            for i in range(d):
                means[t, i] = ms[i]
                for j in range(d):
                    covs[t, i, j] = Ps[i * d + j]
        ih = sH * t
        mean = 0.0
        var = 0.0
        for i in range(d):
            mean += H[ih, i] * ms[i]
            acc = 0.0
            for k in range(d):
                acc += Ps[i * d + k] * H[ih, k]
            var += H[ih, i] * acc
        a_mean[t] = mean
        a_var[t] = var
    if store:
        for i in range(d):
            for j in range(d):
                cross_covs[0, i, j] = 0.0


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
        F, inv_pivots, ok = _ldl(shifted, F, inv_pivots, dims)
        if not ok:
            return s
    return -1
