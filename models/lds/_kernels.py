r"""Compiled Kalman filter and RTS smoother driven by Gaussian sites in a-space.

Every time step ``t`` sees the state through the scalar ``a_t = H_t x_t`` and
carries an unnormalised Gaussian site
``t_t(a) = exp(gamma_t a - pi_t a^2 / 2)``.  With the predicted moments
``(m, P)`` of ``x_t``, ``u = P H^T``, ``S = H u`` and ``mu = H m``, the
measurement update and the log-normaliser increment are

.. math::

    m' = m + u (\\gamma - \\pi \\mu) / (1 + \\pi S), \\qquad
    P' = P - \\pi u u^T / (1 + \\pi S),

    \\log Z_t = -\\tfrac12 \\log(1 + \\pi S)
                + \\frac{\\gamma^2 S + 2 \\gamma \\mu - \\pi \\mu^2}{2 (1 + \\pi S)},

valid whenever ``1 + pi S > 0`` (``pi`` may be negative).  The filter keeps
the predicted moments ``(mp_t, Pp_t)`` for the RTS backward pass, whose gain
``G_t = P_t A_{t+1}^T Pp_{t+1}^{-1}`` comes from a Cholesky solve, with

.. math::

    m^s_t = m_t + G_t (m^s_{t+1} - mp_{t+1}), \qquad
    P^s_t = P_t + G_t (P^s_{t+1} - Pp_{t+1}) G_t^T, \qquad
    Cov(x_{t+1}, x_t | all) = P^s_{t+1} G_t^T.

Arrays are contiguous float64.  ``H`` is ``(TH, d)``, ``A`` ``(TA, d, d)`` and
``Q`` ``(TQ, d, d)`` with each leading length either ``T`` (time-varying) or
``1`` (constant, never copied ``T`` times).  Covariances are kept exactly
symmetric: only the upper triangle is computed and then mirrored.

Speed at small ``d``.  Every kernel takes ``dims``, any tuple of length
``d`` (the wrapper passes ``(0,) * d``): numba types a tuple by its length,
so ``d = len(dims)`` is a compile-time constant and LLVM unrolls the small
loops over the state (one cached compilation per ``d``; 2-4x faster than a
run-time ``d``).  For the same reason the loop bodies are written out flat:
a call that passes several arrays costs more than the arithmetic.
"""

import math

import numba
import numpy as np

from models._numba import NUMBA_OPTIONS

STATUS_OK = 0
"""Every step succeeded."""
STATUS_INVALID_SITE = 1
"""``1 + pi_t S_t <= 0`` (or not finite) at the reported step."""
STATUS_SINGULAR_PREDICTION = 2
"""The predicted covariance of the reported step is not positive definite."""


@numba.jit(**NUMBA_OPTIONS)
def _cholesky_solve(L, inv_diag, B, dims):
    """Factor symmetric ``L`` (d, d) in place (lower triangle) and overwrite ``B`` (d, n) with ``L^{-T} L^{-1} B``.

    Only the lower triangle of ``L`` is read.  Returns False, leaving ``B``
    partly solved, if ``L`` is not positive definite.
    """
    d = len(dims)
    for j in range(d):
        s = L[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        ljj = math.sqrt(s)
        L[j, j] = ljj
        inv_diag[j] = 1.0 / ljj
        for i in range(j + 1, d):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s * inv_diag[j]
    for c in range(B.shape[1]):
        for i in range(d):
            s = B[i, c]
            for k in range(i):
                s -= L[i, k] * B[k, c]
            B[i, c] = s * inv_diag[i]
        for i in range(d - 1, -1, -1):
            s = B[i, c]
            for k in range(i + 1, d):
                s -= L[k, i] * B[k, c]
            B[i, c] = s * inv_diag[i]
    return True


@numba.jit(**NUMBA_OPTIONS)
def _filter(gamma, pi, H, A, Q, m0, P0, means, covs, pred_means, pred_covs, a_pred_mean, a_pred_var, dims):
    """Forward pass.

    Fills the filtered ``means`` (T, d), ``covs`` (T, d, d), the predicted
    ``pred_means``, ``pred_covs`` (moments of ``x_t`` given sites ``< t``)
    and the predictive moments of ``a_t``, ``a_pred_mean``, ``a_pred_var``
    (T,).  ``dims`` is any tuple of length ``d`` (see the module notes).
    Returns ``(log Z, status, failed step)``; the failed step is -1 on
    success.
    """
    d = len(dims)
    T = gamma.shape[0]
    sH = 1 if H.shape[0] > 1 else 0
    sA = 1 if A.shape[0] > 1 else 0
    sQ = 1 if Q.shape[0] > 1 else 0
    work = np.empty((d, d))
    u = np.empty(d)
    log_z = 0.0
    for t in range(T):
        if t == 0:
            for i in range(d):
                pred_means[0, i] = m0[i]
                for j in range(d):
                    pred_covs[0, i, j] = P0[i, j]
        else:
            ia = sA * t
            iq = sQ * t
            for i in range(d):
                acc = 0.0
                for k in range(d):
                    acc += A[ia, i, k] * means[t - 1, k]
                pred_means[t, i] = acc
                for j in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += A[ia, i, k] * covs[t - 1, k, j]
                    work[i, j] = acc
            for i in range(d):
                for j in range(i, d):
                    acc = Q[iq, i, j]
                    for k in range(d):
                        acc += work[i, k] * A[ia, j, k]
                    pred_covs[t, i, j] = acc
                    pred_covs[t, j, i] = acc
        ih = sH * t
        S = 0.0
        mu = 0.0
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += pred_covs[t, i, k] * H[ih, k]
            u[i] = acc
            S += H[ih, i] * acc
            mu += H[ih, i] * pred_means[t, i]
        a_pred_mean[t] = mu
        a_pred_var[t] = S
        g = gamma[t]
        p = pi[t]
        denom = 1.0 + p * S
        if not denom > 0.0:
            return math.nan, STATUS_INVALID_SITE, t
        c_mean = (g - p * mu) / denom
        c_cov = p / denom
        for i in range(d):
            means[t, i] = pred_means[t, i] + c_mean * u[i]
            for j in range(i, d):
                v = pred_covs[t, i, j] - c_cov * u[i] * u[j]
                covs[t, i, j] = v
                covs[t, j, i] = v
        if p != 0.0 or g != 0.0:
            log_z += -0.5 * math.log1p(p * S) + (g * g * S + 2.0 * g * mu - p * mu * mu) / (2.0 * denom)
    return log_z, STATUS_OK, -1


@numba.jit(**NUMBA_OPTIONS)
def _smooth(H, A, means, covs, pred_means, pred_covs, a_mean, a_var, store, dims):
    """RTS backward pass over the output of :func:`_filter`.

    Fills the smoothed a-marginals ``a_mean``, ``a_var`` (T,).  If ``store``,
    overwrites ``means``/``covs`` with the smoothed moments and ``pred_covs``
    with ``pred_covs[t] = Cov(x_t, x_{t-1} | all)`` (``pred_covs[0] = 0``);
    otherwise every input array is left as it is.  Returns
    ``(status, failed step)``.
    """
    d = len(dims)
    T = means.shape[0]
    sH = 1 if H.shape[0] > 1 else 0
    sA = 1 if A.shape[0] > 1 else 0
    m_next = means[T - 1].copy()
    P_next = covs[T - 1].copy()
    gain_t = np.empty((d, d))
    chol = np.empty((d, d))
    inv_diag = np.empty(d)
    delta = np.empty((d, d))
    work = np.empty((d, d))
    diff = np.empty(d)
    for t in range(T - 1, -1, -1):
        if t < T - 1:
            ia = sA * (t + 1)
            # gain_t = G_t^T = Pp_{t+1}^{-1} A_{t+1} P_t (Cholesky solve)
            for i in range(d):
                diff[i] = m_next[i] - pred_means[t + 1, i]
                for j in range(d):
                    chol[i, j] = pred_covs[t + 1, i, j]
                    delta[i, j] = P_next[i, j] - pred_covs[t + 1, i, j]
                    acc = 0.0
                    for k in range(d):
                        acc += A[ia, i, k] * covs[t, k, j]
                    gain_t[i, j] = acc
            if not _cholesky_solve(chol, inv_diag, gain_t, dims):
                return STATUS_SINGULAR_PREDICTION, t + 1
            if store:
                for i in range(d):
                    for j in range(d):
                        acc = 0.0
                        for k in range(d):
                            acc += P_next[i, k] * gain_t[k, j]
                        pred_covs[t + 1, i, j] = acc
            for i in range(d):
                acc = means[t, i]
                for k in range(d):
                    acc += gain_t[k, i] * diff[k]
                m_next[i] = acc
                for j in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc += gain_t[k, i] * delta[k, j]
                    work[i, j] = acc
            for i in range(d):
                for j in range(i, d):
                    acc = covs[t, i, j]
                    for k in range(d):
                        acc += work[i, k] * gain_t[k, j]
                    P_next[i, j] = acc
                    P_next[j, i] = acc
            if store:
                for i in range(d):
                    means[t, i] = m_next[i]
                    for j in range(d):
                        covs[t, i, j] = P_next[i, j]
        ih = sH * t
        mean = 0.0
        var = 0.0
        for i in range(d):
            mean += H[ih, i] * m_next[i]
            acc = 0.0
            for k in range(d):
                acc += P_next[i, k] * H[ih, k]
            var += H[ih, i] * acc
        a_mean[t] = mean
        a_var[t] = var
    if store:
        pred_covs[0, :, :] = 0.0
    return STATUS_OK, -1


@numba.jit(**NUMBA_OPTIONS)
def _first_not_psd(M, rtol, floor, dims):
    """Index of the first matrix of the stack ``M`` (n, d, d) that is not symmetric PSD, else -1.

    Symmetry is checked to ``rtol`` times the largest entry; semi-definiteness
    by a Cholesky factorisation of ``M + rtol * max(max|M|, floor) * I``.  The
    ``floor`` (e.g. the size of the initial covariance) accepts the rounding
    noise of ``Q = Pinf - A Pinf A^T`` when ``Q`` itself is tiny (short gaps,
    long lengthscales), which is harmless next to the state covariance.
    """
    n = M.shape[0]
    d = len(dims)
    L = np.empty((d, d))
    inv_diag = np.empty(d)
    no_rhs = np.empty((d, 0))
    for s in range(n):
        scale = 0.0
        for i in range(d):
            for j in range(d):
                scale = max(scale, abs(M[s, i, j]))
        for i in range(d):
            for j in range(d):
                if abs(M[s, i, j] - M[s, j, i]) > rtol * max(scale, floor):
                    return s
                L[i, j] = M[s, i, j]
            L[i, i] += rtol * max(scale, floor) + 1e-300
        if not _cholesky_solve(L, inv_diag, no_rhs, dims):
            return s
    return -1
