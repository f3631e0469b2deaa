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

The diagonal (mean-field) forms are compiled, one pass over the parameters
per step, in :mod:`._kernels`; the full-covariance form of VAN is here.
"""

import numpy as np


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
        ``"always"``: the positivity-preserving rule; ``"auto"``: the plain average
        ``(1 - rho) H + rho H_hat`` unless it is not positive definite, then the rule.

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
