"""Hyperparameter gradients of the log normaliser by Fisher's identity.

With the sites ``t_t`` held fixed, ``Z(theta) = \\int p_theta(x) prod_t t_t(H_t x_t) dx``
and Fisher's identity gives

.. math::

    \\nabla_\\theta \\log Z(\\theta)
      = E_{q_\\theta}[\\nabla_\\theta \\log p_\\theta(x)]
      = \\nabla_{\\theta'} \\mathcal{Q}(\\theta', \\theta) \\big|_{\\theta' = \\theta},

where ``q_theta`` is the smoothed (pseudo-)posterior at ``theta`` and
``Q(theta', theta) = E_{q_theta}[log p_theta'(x)]`` is EM's expected complete
log prior (:func:`expected_log_prior`).  For the linear-Gaussian prior, with
smoothed means ``m_t``, covariances ``V_t`` and lag-one cross-covariances
``C_t = Cov(x_t, x_{t-1})``,

.. math::

    \\mathcal{Q} = -\\tfrac12 \\Big[\\log|2\\pi P_0| + \\mathrm{tr}(P_0^{-1} M_0)
        + \\sum_{t \\ge 1} \\log|2\\pi Q_t| + \\mathrm{tr}(Q_t^{-1} M_t)\\Big],

    M_0 = V_0 + (m_0 - \\bar m_0)(m_0 - \\bar m_0)^T, \\qquad
    M_t = S^{11}_t - A_t S^{10\\,T}_t - S^{10}_t A_t^T + A_t S^{00}_t A_t^T,

with ``S11_t = E[x_t x_t^T]``, ``S10_t = E[x_t x_{t-1}^T] = C_t + m_t m_{t-1}^T``
and ``S00_t = E[x_{t-1} x_{t-1}^T]`` (``m0bar``, ``P0`` the prior's initial
moments).

**The gradient without** ``Q_t^{-1}``.  Differentiating ``Q`` needs
``Q_t^{-1}``, which does not exist for tied times or a constant or periodic
part of a kernel (``Q_t = 0``), and for a short gap multiplies the rounding
error of ``M_t`` (a difference of second moments of size ``Pinf``) by
``|Q_t^{-1}|``.  But ``q_t = x_t - A_t x_{t-1}`` only enters through
``Q_t^{-1} q_t``, and the RTS smoother gives its posterior moments without
``Q_t^{-1}``: with the predicted moments ``mp_t``, ``Pp_t`` (``mp_0 = m0bar``,
``Pp_0 = P_0``), the filtered covariance ``P_t``, the gain
``G_{t-1} = P_{t-1} A_t^T Pp_t^{-1}`` and ``I - A_t G_{t-1} = Q_t Pp_t^{-1}``,

.. math::

    \\lambda_t = Pp_t^{-1} (m_t - mp_t) = E_q[Q_t^{-1} q_t], \\qquad
    N_t = Pp_t^{-1} (Pp_t - V_t) Pp_t^{-1} = Q_t^{-1} - Q_t^{-1} Cov_q(q_t) Q_t^{-1},

    Q_t^{-1} Cov_q(q_t, x_{t-1}) = -N_t A_t P_{t-1}

(``lambda_t``, ``N_t`` are the disturbance smoother's ``r``, ``N`` of Koopman
and Shephard's exact score, 1992), so the derivatives of ``log Z`` with
respect to the matrices of the prior are

.. math::

    \\frac{\\partial \\log Z}{\\partial Q_t} = \\tfrac12 (\\lambda_t \\lambda_t^T - N_t), \\quad
    \\frac{\\partial \\log Z}{\\partial A_t} = \\lambda_t m_{t-1}^T - N_t A_t P_{t-1}, \\quad
    \\frac{\\partial \\log Z}{\\partial P_0} = \\tfrac12 (\\lambda_0 \\lambda_0^T - N_0), \\quad
    \\frac{\\partial \\log Z}{\\partial \\bar m_0} = \\lambda_0,

and one reverse pass of ``autograd`` through ``build(theta)`` contracts them
with the derivatives of the matrices.  These are exact and continuous in
``Q_t``, so singular ``Q_t`` are fine; only ``Pp_t`` is inverted (it is
invertible wherever the smoother runs).

**In segments.**  Each step's terms need only the moments of that step and
the one before, so :func:`log_normaliser_grad_in_segments` computes them a
segment of steps at a time, as the low-memory smoother's backward pass
reaches each segment (:mod:`efvi.models.lds.smoother`), contracts them with
the derivatives of that segment's own matrices (reverse passes through the
matrices of its steps only) and sums the segments' contributions.  Nothing
is held per time step, the per-step arithmetic is the same, and only the
order of the sum differs, so both routes agree to rounding.
"""

import autograd
import autograd.numpy as anp
import numpy as np

from ._gradient_kernels import _prior_gradients
from .smoother import _filter_and_smooth, _segment_moments, _validate

VJP_STEPS = 16384
"""Time steps per reverse pass of :func:`log_normaliser_grad_in_segments` through ``build_steps``.  Autograd's
temporaries take about 330 bytes per step of a pass with a Matern-3/2 (5 MB here, 21 MB for a whole segment of
65,536 steps), and a pass costs about 1 ms besides (5% of the evaluation's time at this size, 25% at 4096)."""


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

    Its gradient is that of ``log Z`` (Fisher's identity); :func:`log_normaliser_grad`
    computes the same gradient without inverting ``Q_t`` (module notes).

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


def _prior_matrix_gradients(filtered, means, covs, A, first, offset=0):
    """``d log Z`` with respect to ``(A_t, Q_t)`` and ``(m0bar, P_0)`` at consecutive steps (module notes).

    The per-step contraction of Fisher's identity, shared by a whole pass and
    a pass in segments.  ``filtered`` holds the filter's moments (fields
    ``pred_means``, ``pred_covs``, ``covs``) and ``means`` (n, d), ``covs``
    (n, d, d) the smoothed ones of ``n`` consecutive steps, the first being
    step ``offset``; ``A`` is their ``(1 or n, d, d)`` transition stack.
    Returns ``(grad_A, grad_Q, grad_m0, grad_P0)``: the first two
    ``(n - 1, d, d)`` for the steps after the first; the last two, shapes
    ``(d,)`` and ``(d, d)``, for the initial step if ``first == 0`` (the
    first step is step 0), else unset.
    """
    n, d = means.shape
    grad_m0, grad_covs, grad_A = np.empty(d), np.empty((n, d, d)), np.empty((n, d, d))
    singular = _prior_gradients(filtered.pred_means, filtered.pred_covs, filtered.covs, means, covs, A, first,
                                grad_m0, grad_covs, grad_A, (0,) * d)
    if singular >= 0:
        raise ValueError(f"the predicted state covariance at time step {singular + offset} is singular, so the "
                         f"gradient of log Z is undefined; check transition and process_cov")
    return grad_A[1:], grad_covs[1:], grad_m0, grad_covs[0]


def _per_step(grad, like):
    """Gradient (T - 1, ...) of steps ``t >= 1`` shaped like the matrix ``like`` (per step or constant)."""
    if len(like) == grad.ndim:                                        # time-varying: step 0 unused
        return np.concatenate([np.zeros((1,) + grad.shape[1:]), grad])
    return grad.sum(axis=0)


def _flat_vjp(build, theta, *args):
    """``(vjp, parts)``: the arrays ``build(theta, *args)`` returns, and ``vjp(cotangents)``, the vector-Jacobian
    product in ``theta`` with one cotangent per part (parts of any shapes, flattened for autograd)."""
    shapes = []

    def flat(theta):
        parts = build(theta, *args)
        shapes[:] = [anp.shape(x) for x in parts]
        return anp.concatenate([anp.ravel(x) for x in parts])

    vjp, values = autograd.make_vjp(flat)(theta)
    sizes = [int(np.prod(shape)) for shape in shapes]
    parts = [part.reshape(shape) for part, shape in zip(np.split(values, np.cumsum(sizes)[:-1]), shapes)]
    return lambda cotangents: vjp(np.concatenate([np.ravel(x) for x in cotangents])), parts


def log_normaliser_grad(theta, build, site_natural_mean, site_precision, obs_row):
    """``log Z(theta)`` and its gradient with the sites held fixed (Fisher's identity, without ``Q_t^{-1}``).

    Parameters
    ----------
    theta : array_like, shape (p,)
        Hyperparameters.
    build : callable
        As in :func:`expected_log_prior`, except that ``process_cov`` need
        only be positive semi-definite (e.g. zero for tied times).
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

    See Also
    --------
    log_normaliser_grad_in_segments : the same, in segments of steps, keeping nothing per step.
    """
    theta = np.asarray(theta, dtype=float)
    vjp, (A, Q, m0, P0) = _flat_vjp(build, theta)
    arrays = _validate(site_natural_mean, site_precision, obs_row, A, Q, m0, P0)
    filtered, smoothed = _filter_and_smooth(*arrays)
    grad_A, grad_Q, grad_m0, grad_P0 = _prior_matrix_gradients(filtered, smoothed.means, smoothed.covs, arrays[3], 0)
    return smoothed.log_normaliser, vjp([_per_step(grad_A, A.shape), _per_step(grad_Q, Q.shape), grad_m0, grad_P0])


def log_normaliser_grad_in_segments(theta, build_steps, build_start, transitions, site_natural_mean, site_precision,
                                    obs_row, segment_steps):
    """:func:`log_normaliser_grad` segment by segment, holding ``O(segment_steps)`` values, none per step.

    The forward pass keeps the filter's state where each segment starts; the
    backward pass refilters each segment and smooths it
    (:mod:`efvi.models.lds.smoother`), and that segment's derivatives of
    ``log Z`` with respect to ``A_t``, ``Q_t`` are contracted at once with
    the derivatives of its own matrices (one autograd reverse pass through
    ``build_steps`` on its steps); the segments' contributions are summed.
    The per-step arithmetic is that of :func:`log_normaliser_grad`.

    Parameters
    ----------
    theta : array_like, shape (p,)
        Hyperparameters.
    build_steps : callable
        ``build_steps(theta, start, stop) -> (transition, process_cov)``, the
        stacks ``A_t``, ``Q_t`` of the steps ``start..stop-1``, shapes
        ``(stop - start, d, d)``, written with ``autograd.numpy``
        (``process_cov`` positive semi-definite); called with ``start >= 1``.
    build_start : callable
        ``build_start(theta) -> (init_mean, init_cov)``, shapes ``(d,)`` and
        ``(d, d)``, in ``autograd.numpy``.
    transitions : callable
        ``transitions(start, stop) -> (A, Q)``: the same stacks as float
        arrays (e.g. compiled), for the filter and smoother passes.
    site_natural_mean, site_precision : ndarray, shape (T,)
        The fixed sites ``gamma_t``, ``pi_t``, float64 and contiguous.
    obs_row : ndarray, shape (1 or T, d)
        ``H_t``, float64 and contiguous.
    segment_steps : int
        Time steps per segment.

    Returns
    -------
    log_normaliser : float
    grad : ndarray, shape (p,)

    Raises
    ------
    ValueError
        As :func:`log_normaliser_grad`.
    """
    theta = np.asarray(theta, dtype=float)
    start_vjp, (m0, P0) = _flat_vjp(build_start, theta)
    log_z, segments = _segment_moments(site_natural_mean, site_precision, obs_row, transitions, m0, P0,
                                       segment_steps)
    grad = np.zeros(theta.shape)
    for start, A, filtered, means, covs in segments:
        first = 0 if start == 0 else 1
        grad_A, grad_Q, grad_m0, grad_P0 = _prior_matrix_gradients(filtered, means, covs, A, first, start)
        for low in range(0, grad_A.shape[0], VJP_STEPS):        # the steps start + 1 + low ...
            high = min(low + VJP_STEPS, grad_A.shape[0])
            steps_vjp, _ = _flat_vjp(build_steps, theta, start + 1 + low, start + 1 + high)
            grad += steps_vjp([grad_A[low:high], grad_Q[low:high]])
        if start == 0:
            grad += start_vjp([grad_m0, grad_P0])
    return log_z, grad
