"""Compiled derivatives of the state-space ``log Z`` with respect to the prior's matrices.

Fisher's identity written with the smoother's moments (Koopman and Shephard's
exact score): no ``Q_t^{-1}`` is needed, only the inverse of each predicted
covariance, so singular ``Q_t`` (tied times, constant or periodic kernel
parts) and very short gaps stay exact.  Used by
:mod:`efvi.models.lds.fisher_identity`.
"""

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._small import _ldl, _ldl_solve


@numba.jit(**NUMBA_OPTIONS)
def _prior_gradients(pred_means, pred_covs, filt_covs, means, covs, A, first, grad_mean0, grad_covs, grad_A, dims):
    """Derivatives of ``log Z`` with respect to the prior's matrices, from a filter-smoother pass over steps.

    The arrays hold consecutive steps, one per row (all ``T`` steps of a
    pass, or a segment's): with ``lam_t = Pp_t^{-1} (m_t - mp_t)`` and
    ``N_t = Pp_t^{-1} (Pp_t - V_t) Pp_t^{-1}`` (predicted ``mp``, ``Pp``
    (n, d) and (n, d, d), smoothed ``m``, ``V``), writes for the rows
    ``t = first..n-1`` ``grad_covs[t] = (lam_t lam_t^T - N_t) / 2`` (n, d, d):
    ``d log Z / dP_0`` if row 0 (``first = 0``) is the initial step,
    ``d log Z / dQ_t`` after; ``grad_A[t] = lam_t m_{t-1}^T - N_t A_t P_{t-1}``
    (n, d, d; row 0 untouched) with the filtered ``P`` = ``filt_covs``;
    ``grad_mean0 = lam_0`` (d,) if ``first = 0``.  ``A`` is a (1 or n, d, d)
    stack.  Returns the first row whose ``Pp_t`` is singular, else -1.
    """
    d = len(dims)
    T = means.shape[0]
    sA = 1 if A.shape[0] > 1 else 0
    Pp, F, inv, inv_pivots = np.empty(d * d), np.empty(d * d), np.empty(d * d), np.empty(d)
    lam, diff, N, AP = np.empty(d), np.empty(d * d), np.empty(d * d), np.empty(d * d)
    for t in range(first, T):
        for i in range(d):
            for j in range(d):
                Pp[i * d + j] = pred_covs[t, i, j]
                inv[i * d + j] = 1.0 if i == j else 0.0
        F, inv_pivots, ok = _ldl(Pp, F, inv_pivots, True, dims)
        if not ok:
            return t
        inv = _ldl_solve(F, inv_pivots, inv, dims)
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += inv[i * d + k] * (means[t, k] - pred_means[t, k])
            lam[i] = acc
            for j in range(d):          # diff = Pp^{-1} (Pp - V)
                acc = 0.0
                for k in range(d):
                    acc += inv[i * d + k] * (pred_covs[t, k, j] - covs[t, k, j])
                diff[i * d + j] = acc
        for i in range(d):
            for j in range(i, d):       # N = diff Pp^{-1}, symmetric
                acc = 0.0
                for k in range(d):
                    acc += 0.5 * (diff[i * d + k] * inv[k * d + j] + diff[j * d + k] * inv[k * d + i])
                N[i * d + j] = acc
                N[j * d + i] = acc
                grad_covs[t, i, j] = grad_covs[t, j, i] = 0.5 * (lam[i] * lam[j] - acc)
        if t == 0:
            for i in range(d):
                grad_mean0[i] = lam[i]
            continue
        ia = sA * t
        for i in range(d):
            for j in range(d):
                acc = 0.0
                for k in range(d):
                    acc += A[ia, i, k] * filt_covs[t - 1, k, j]
                AP[i * d + j] = acc
        for i in range(d):
            for j in range(d):
                acc = lam[i] * means[t - 1, j]
                for k in range(d):
                    acc -= N[i * d + k] * AP[k * d + j]
                grad_A[t, i, j] = acc
    return -1
