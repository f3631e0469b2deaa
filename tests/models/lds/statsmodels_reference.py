"""statsmodels' exact Kalman filter and smoother as an independent reference for Gaussian observations.

statsmodels writes the model as ``y_t = Z_t x_t + eps_t``, ``x_{t+1} = T_t x_t + R eta_t``
with the state of the first step distributed as ``N(a_1, P_1)``.  Ours is
``x_0 ~ N(m_0, P_0)``, ``x_t = A_t x_{t-1} + q_t``, so ``T_t = A_{t+1}``,
``R = I``, ``Cov(eta_t) = Q_{t+1}`` and the known initialisation is
``(m_0, P_0)``; NaN in ``y`` is a missing observation in both.
"""

import numpy as np
from statsmodels.tsa.statespace.mlemodel import MLEModel


def _time_last(matrix, T, event_ndim):
    """``(T, *event)`` from a constant or time-varying array, with the time axis moved last."""
    arr = np.asarray(matrix, dtype=float)
    if arr.ndim == event_ndim:
        arr = np.broadcast_to(arr, (T,) + arr.shape)
    return np.moveaxis(arr, 0, -1)


def statsmodels_smoother(y, noise_var, transition, process_cov, obs_row, init_mean, init_cov):
    """Run statsmodels on ``y_t = H_t x_t + N(0, noise_var)`` and return what the tests compare.

    Parameters
    ----------
    y : ndarray, shape (T,)
        Observations (NaN = missing).
    noise_var : float
    transition, process_cov : ndarray, shape (d, d) or (T, d, d)
        ``A_t`` and ``Q_t`` in our convention (index 0 unused).
    obs_row : ndarray, shape (d,) or (T, d)
    init_mean : ndarray, shape (d,)
    init_cov : ndarray, shape (d, d)

    Returns
    -------
    dict
        ``log_likelihood`` (float), ``state_means`` (T, d), ``state_covs`` (T, d, d),
        ``mean`` and ``var`` of ``H_t x_t`` (T,).
    """
    y = np.asarray(y, dtype=float)
    T, d = y.shape[0], np.shape(init_mean)[0]
    model = MLEModel(y, k_states=d, k_posdef=d, initialization="known",
                     initial_state=np.asarray(init_mean, float), initial_state_cov=np.asarray(init_cov, float))
    H = _time_last(obs_row, T, 1)                         # (d, T)
    model["design"] = H[None] if H.ndim == 2 else H[None, :, None]
    model["obs_cov"] = np.array([[float(noise_var)]])
    A = np.moveaxis(_time_last(transition, T, 2), -1, 0)  # (T, d, d), our indexing
    Q = np.moveaxis(_time_last(process_cov, T, 2), -1, 0)
    # statsmodels' T_t maps x_t to x_{t+1}: our A_{t+1}; the last one is never used
    model["transition"] = np.moveaxis(np.concatenate([A[1:], A[:1]]), 0, -1)
    model["selection"] = np.eye(d)
    model["state_cov"] = np.moveaxis(np.concatenate([Q[1:], Q[:1]]), 0, -1)
    result = model.ssm.smooth()
    means = result.smoothed_state.T
    covs = np.moveaxis(result.smoothed_state_cov, -1, 0)
    rows = np.broadcast_to(np.asarray(obs_row, float), (T, d))
    return {
        "log_likelihood": float(np.sum(result.llf_obs)),
        "state_means": means,
        "state_covs": covs,
        "mean": np.einsum("ti,ti->t", rows, means),
        "var": np.einsum("ti,tij,tj->t", rows, covs, rows),
    }
