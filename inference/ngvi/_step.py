"""The Gaussian natural-gradient step shared by every optimiser of :mod:`efvi.inference.ngvi`.

Pure functions on arrays.  Quantities are kept *per example*: ``grad`` is the
gradient of the minibatch's average negative log-likelihood, ``hess`` the
running average of its curvature, ``delta = prior_precision / ess`` the prior
precision per example (one number, or one per parameter, elementwise) and
``m_0`` the prior mean, so that the posterior precision is

.. math:: S = \\lambda (h + \\delta), \\qquad \\lambda = \\text{ess}.

With the step size ``rho`` used for both parameters, no momentum and exact
expectations, one step is the CVI step of Khan and Nielsen (2018), eqs. 16-17:

.. math:: h_{t+1} = (1 - \\rho) h_t + \\rho \\hat h, \\qquad
          m_{t+1} = m_t - \\rho (h_{t+1} + \\delta)^{-1} (\\hat g + \\delta (m_t - m_0)).

The precision update may be replaced by the positivity-preserving rule of
Lin, Schmidt and Khan (2020), used by IVON (Shen et al., 2024):

.. math:: h_{t+1} = h_t + \\rho G + \\tfrac{1}{2} \\rho^2 G (h_t + \\delta)^{-1} G,
          \\qquad G = \\hat h - h_t,

which equals :math:`(h_t + \\delta) \\{1 + (1 - \\rho r)^2\\}/2 - \\delta`
with :math:`r = (h_t - \\hat h) / (h_t + \\delta)` elementwise, hence keeps
:math:`h + \\delta > 0` whatever :math:`\\hat h` is.
"""

import numpy as np


def corrected_precision_update(hess, hess_estimate, rho, delta):
    """The positivity-preserving update of a diagonal curvature (Lin et al., 2020; Shen et al., 2024).

    Parameters
    ----------
    hess, hess_estimate : ndarray (P,)
        Current running curvature ``h`` (with ``h + delta > 0``) and this step's estimate.
    rho : float
        Step, ``1 - beta2``.
    delta : float or ndarray (P,)
        Prior precision per example, one number or one per parameter.

    Returns
    -------
    ndarray (P,)
        ``h + rho G + rho^2 G^2 / (2 (h + delta))`` with ``G = hess_estimate - h``.
    """
    gap = hess_estimate - hess
    return hess + rho * gap + 0.5 * rho ** 2 * gap ** 2 / (hess + delta)


def diagonal_precision_update(hess, hess_estimate, rho, delta, correction="auto"):
    """One step of the running diagonal curvature, never leaving ``h + delta > 0``.

    Parameters
    ----------
    hess, hess_estimate : ndarray (P,)
    rho : float
        Step ``1 - beta2`` in ``[0, 1]``.
    delta : float or ndarray (P,)
    correction : {"auto", "always"}
        ``"always"``: the positivity-preserving rule everywhere (IVON).
        ``"auto"``: the plain CVI average ``(1 - rho) h + rho h_hat`` wherever it
        keeps the precision positive, the positivity-preserving rule elsewhere.

    Returns
    -------
    hess_new : ndarray (P,)
    n_corrected : int
        How many coordinates took the positivity-preserving rule (``"auto"`` only).
    """
    if correction == "always":
        return corrected_precision_update(hess, hess_estimate, rho, delta), 0
    plain = (1.0 - rho) * hess + rho * hess_estimate
    bad = ~(plain + delta > 0)
    n_bad = int(np.count_nonzero(bad))
    if n_bad:
        plain[bad] = corrected_precision_update(hess[bad], hess_estimate[bad], rho,
                                                np.broadcast_to(delta, hess.shape)[bad])
    return plain, n_bad


def full_precision_update(hess, hess_estimate, rho, delta, correction="auto"):
    """One step of a running full curvature matrix, never leaving ``H + diag(delta)`` positive definite.

    Parameters
    ----------
    hess, hess_estimate : ndarray (P, P)
        Symmetric; ``hess + diag(delta)`` positive definite.
    rho : float
    delta : float or ndarray (P,)
        Prior precision per example, one number or one per parameter.
    correction : {"auto", "always"}
        As :func:`diagonal_precision_update`; "auto" corrects the whole matrix
        when the plain average is not positive definite.

    Returns
    -------
    hess_new : ndarray (P, P)
    corrected : bool
    """
    prior = np.diag(np.broadcast_to(delta, hess.shape[:1]))
    if correction == "auto":
        plain = (1.0 - rho) * hess + rho * hess_estimate
        plain = 0.5 * (plain + plain.T)
        if _is_positive_definite(plain + prior):
            return plain, False
    gap = hess_estimate - hess
    shifted = hess + prior
    update = hess + rho * gap + 0.5 * rho ** 2 * gap @ np.linalg.solve(shifted, gap)
    return 0.5 * (update + update.T), True


def _is_positive_definite(matrix):
    if not np.all(np.isfinite(matrix)):
        return False
    try:
        np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        return False
    return True


def reparameterised_hessian(grads, noise, std):
    """IVON's Hessian estimate ``g * eps / sigma`` from reparameterised gradients (Shen et al., 2024).

    By Stein's lemma ``E[g(m + sigma eps) eps] = sigma E[diag H]``, so the
    estimate is unbiased for the expected diagonal Hessian of the loss.

    Parameters
    ----------
    grads : ndarray (S, P)
        Gradients of the average negative log-likelihood at ``m + sigma eps_s``.
    noise : ndarray (S, P)
        The standard-normal draws ``eps_s``.
    std : ndarray (P,)
        Posterior standard deviations ``sigma``.

    Returns
    -------
    ndarray (P,)
        The Monte Carlo average over samples.
    """
    return np.mean(grads * noise, axis=0) / std
