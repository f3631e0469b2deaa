"""Hyperparameter gradients of the log normaliser by Fisher's identity.

With the sites ``t_t`` held fixed, ``Z(theta) = \\int p_theta(x) prod_t t_t(H_t x_t) dx``
and Fisher's identity gives

.. math::

    \\nabla_\\theta \\log Z(\\theta)
      = E_{q_\\theta}[\\nabla_\\theta \\log p_\\theta(x)]
      = \\nabla_{\\theta'} \\mathcal{Q}(\\theta', \\theta) \\big|_{\\theta' = \\theta},

where ``q_theta`` is the smoothed (pseudo-)posterior at ``theta`` and
``Q(theta', theta) = E_{q_theta}[log p_theta'(x)]`` is EM's expected complete
log prior.  For the linear-Gaussian prior it needs only the smoothed means
``m_t``, covariances ``V_t`` and lag-one cross-covariances
``C_t = Cov(x_t, x_{t-1})``:

.. math::

    \\mathcal{Q} = -\\tfrac12 \\Big[\\log|2\\pi P_0| + \\mathrm{tr}(P_0^{-1} M_0)
        + \\sum_{t \\ge 1} \\log|2\\pi Q_t| + \\mathrm{tr}(Q_t^{-1} M_t)\\Big],

    M_0 = V_0 + (m_0 - \\bar m_0)(m_0 - \\bar m_0)^T, \\qquad
    M_t = S^{11}_t - A_t S^{10\\,T}_t - S^{10}_t A_t^T + A_t S^{00}_t A_t^T,

with ``S11_t = E[x_t x_t^T]``, ``S10_t = E[x_t x_{t-1}^T] = C_t + m_t m_{t-1}^T``
and ``S00_t = E[x_{t-1} x_{t-1}^T]`` (``m0bar``, ``P0`` the prior's initial
moments).  ``Q`` is written with ``autograd.numpy`` and vectorised over time,
so ``autograd.grad`` of it is the gradient of ``log Z``.
"""

import autograd
import autograd.numpy as anp
import numpy as np

from .smoother import kalman_smoother


def _swap(x):
    return anp.swapaxes(x, -1, -2)


def _residual_second_moment(A, S11, S10, S00):
    """``E[(x_t - A x_{t-1})(x_t - A x_{t-1})^T]`` from second moments (stacks of equal shape)."""
    AS10 = anp.matmul(A, _swap(S10))
    return S11 - AS10 - _swap(AS10) + anp.matmul(anp.matmul(A, S00), _swap(A))


def _gaussian_expected_log(cov, M, count):
    """``-1/2 sum_i [log|2 pi cov_i| + tr(cov_i^{-1} M_i)]`` over ``count`` terms.

    Either ``cov`` is one (d, d) matrix shared by all terms and ``M`` the sum of
    their second moments, or both are stacks (count, d, d).
    """
    d = cov.shape[-1]
    log_det = 2.0 * anp.sum(anp.log(anp.diagonal(anp.linalg.cholesky(cov), axis1=-1, axis2=-2)))
    if anp.ndim(cov) == 2:
        log_det = count * log_det
    quad = anp.sum(anp.diagonal(anp.linalg.solve(cov, M), axis1=-1, axis2=-2))
    return -0.5 * (count * d * np.log(2.0 * np.pi) + log_det + quad)


def expected_log_prior(theta, build, smoothed):
    """EM's ``E_q[log p_theta(x_0, ..., x_{T-1})]`` under fixed smoothed moments, differentiable in ``theta``.

    Parameters
    ----------
    theta : array_like
        Hyperparameters passed to ``build``.
    build : callable
        ``build(theta) -> (transition, process_cov, init_mean, init_cov)`` with
        shapes ``(T, d, d)`` or ``(d, d)``, ``(T, d, d)`` or ``(d, d)``,
        ``(d,)``, ``(d, d)``, written with ``autograd.numpy``.  ``process_cov``
        and ``init_cov`` must be positive definite.
    smoothed : SmootherResult
        Anything with ``means`` (T, d), ``covs`` (T, d, d) and ``cross_covs``
        (T, d, d) (``Cov(x_t, x_{t-1})``), e.g. from :func:`kalman_smoother`;
        treated as constants.

    Returns
    -------
    float
        The expected log prior density (an autograd box when differentiated).
    """
    A, Q, m0, P0 = build(theta)
    means, covs, cross = (np.asarray(smoothed.means), np.asarray(smoothed.covs), np.asarray(smoothed.cross_covs))
    T = means.shape[0]
    second = covs + means[:, :, None] * means[:, None, :]
    diff0 = means[0] - m0
    value = _gaussian_expected_log(P0, covs[0] + anp.outer(diff0, diff0), 1)
    if T == 1:
        return value
    S11, S00 = second[1:], second[:-1]
    S10 = cross[1:] + means[1:, :, None] * means[:-1, None, :]
    time_varying_A = anp.ndim(A) == 3
    if anp.ndim(Q) == 2:
        if time_varying_A:
            M = anp.sum(_residual_second_moment(A[1:], S11, S10, S00), axis=0)
        else:
            M = _residual_second_moment(A, S11.sum(0), S10.sum(0), S00.sum(0))
        return value + _gaussian_expected_log(Q, M, T - 1)
    A_steps = A[1:] if time_varying_A else A * np.ones((T - 1, 1, 1))
    M = _residual_second_moment(A_steps, S11, S10, S00)
    return value + _gaussian_expected_log(Q[1:], M, T - 1)


def log_normaliser_grad(theta, build, site_natural_mean, site_precision, obs_row):
    """``log Z(theta)`` and its gradient with the sites held fixed (Fisher's identity).

    Parameters
    ----------
    theta : array_like, shape (p,)
        Hyperparameters.
    build : callable
        As in :func:`expected_log_prior`.
    site_natural_mean, site_precision : array_like, shape (T,)
        The fixed sites ``gamma_t``, ``pi_t``.
    obs_row : array_like, shape (d,) or (T, d)
        ``H_t``.

    Returns
    -------
    log_normaliser : float
        ``log Z(theta)``.
    grad : ndarray, shape (p,)
        ``d log Z / d theta``.

    Raises
    ------
    ValueError
        As :func:`kalman_smoother`, e.g. if the sites make the posterior invalid at ``theta``.
    """
    theta = np.asarray(theta, dtype=float)
    A, Q, m0, P0 = build(theta)
    smoothed = kalman_smoother(site_natural_mean, site_precision, obs_row, A, Q, m0, P0)
    grad = autograd.grad(expected_log_prior)(theta, build, smoothed)
    return smoothed.log_normaliser, grad
