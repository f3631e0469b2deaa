r"""Per-draw terms of the ELBO gradient estimators, on arrays; the estimate is their mean over draws.

Score function (Ranganath et al., 2014, Algorithm 1), in the block's natural
parameters :math:`\lambda_b`, with the score of an exponential family
:math:`\nabla_\lambda \log q(z) = \phi(z) - \mu`:

.. math:: c_s = (\phi(z_s) - \mu)\, w_s, \qquad w_s = \log p_b(z_s) - \log q_b(z_{b,s}),

with a control variate:

* ``"loo"``: :math:`w_s - \bar w_{-s}`, the mean of the other draws'
  weights as a baseline (Kool et al., 2019); unbiased because
  :math:`\bar w_{-s}` does not depend on :math:`z_s`.
* ``"optimal"``: :math:`c_s = f_s - a_{-s} \odot h_s` with :math:`f_s = h_s w_s`,
  :math:`h_s = \phi(z_s) - \mu` and, per coordinate :math:`d`,
  :math:`a_d = \operatorname{Cov}(f_d, h_d) / \operatorname{Var}(h_d)`
  (Algorithm 2; Paisley et al., 2012), estimated from the other draws so that
  the estimate stays unbiased.

Reparameterisation, for Gaussian blocks (Kingma and Welling, 2014; Titsias
and Lazaro-Gredilla, 2014): :math:`z = m + U\epsilon` with :math:`V = U U^T` gives
:math:`\nabla_m E[\log p] = E[g]`, :math:`\nabla_V E[\log p] = \tfrac12 \operatorname{sym}(E[g (z - m)^T]) V^{-1}`
(:math:`g = \nabla_z \log p_b`), which is :math:`\tfrac12 E[\nabla^2 \log p_b]`
by Stein's lemma.  In the mean parameters :math:`\mu = (m, V + m m^T)`,

.. math:: c_s^\mu = (g_s - \hat H_s m,\; \hat H_s / 2) - \lambda, \qquad
          \hat H_s = \operatorname{sym}(V^{-1} (z_s - m) g_s^T),

where :math:`-\lambda` is the exact mean-parameter gradient of the Gaussian
entropy; the natural-parameter terms are :math:`F(\lambda) c_s^\mu`
(:math:`\nabla_\lambda = F \nabla_\mu`).
"""

import numpy as np

from ...expfam import DiagonalGaussian, flatten

CONTROL_VARIATES = ("loo", "optimal", "none")


def score_terms(q, draws, log_p, control_variate):
    """Score-function terms of block ``q``: array ``(S,) + batch + (P,)`` in flattened natural coordinates.

    Parameters
    ----------
    q : ExponentialFamily
    draws : array, shape ``(S,) + batch + event``
    log_p : array, shape (S,)
        ``log p_b`` at each draw.
    control_variate : {"loo", "optimal", "none"}

    Returns
    -------
    terms : array ``(S,) + batch + (P,)``
    weights : array (S,)
        ``log p_b - log q_b`` at each draw.
    """
    family = type(q)
    n_samples = log_p.shape[0]
    score = flatten(q.sufficient_stats_of(draws), family.event_ndims) - flatten(q.mean_params, family.event_ndims)
    log_q = np.asarray(q.logpdf(draws)).reshape(n_samples, -1).sum(axis=1)
    weights = log_p - log_q
    w = weights.reshape((n_samples,) + (1,) * (score.ndim - 1))
    if control_variate == "none":
        return score * w, weights
    if control_variate == "loo":
        baseline = (w.sum(axis=0) - w) / (n_samples - 1)
        return score * (w - baseline), weights
    f = score * w
    return f - leave_one_out_coefficient(f, score) * score, weights


def leave_one_out_coefficient(f, h):
    """``a_{-s} = Cov(f, h) / Var(h)`` per coordinate from every draw but ``s``; shape of ``f``.

    Shifting ``f`` and ``h`` by constants leaves each leave-one-out covariance
    unchanged, so they are centred first (no cancellation between large sums).
    A coordinate whose ``h`` does not vary gets ``a = 0``.
    """
    n = f.shape[0] - 1
    f = f - f.mean(axis=0)
    h = h - h.mean(axis=0)
    sum_f, sum_h = f.sum(axis=0) - f, h.sum(axis=0) - h
    cov = (f * h).sum(axis=0) - f * h - sum_f * sum_h / n
    var = (h * h).sum(axis=0) - h * h - sum_h * sum_h / n
    positive = var > 0
    return np.where(positive, cov / np.where(positive, var, 1.0), 0.0)


def reparameterisation_terms(q, draws, gradients):
    """Reparameterisation terms of a Gaussian block in flattened mean coordinates, ``(S,) + batch + (P,)``.

    ``gradients`` is ``grad_z log p_b`` at each draw, shaped like ``draws``.
    The entropy's exact gradient ``-lambda`` is included in every term.
    """
    family = type(q)
    mean = q.mean
    centred = draws - mean
    if family is DiagonalGaussian:
        hess = gradients * centred / q.var
        parts = (gradients - hess * mean, 0.5 * hess)
    else:
        outer = np.einsum("...ij,...j,...k->...ik", q.precision, centred, gradients)
        hess = 0.5 * (outer + np.swapaxes(outer, -1, -2))
        parts = (gradients - np.einsum("...ij,...j->...i", hess, mean), 0.5 * hess)
    return flatten(parts, family.event_ndims) - flatten(q.natural, family.event_ndims)


def natural_from_euclidean(family, natural, terms):
    """``F(lambda)^{-1} c`` for flattened natural-coordinate terms ``c`` (``(S,) + batch + (P,)``).

    The result is in mean coordinates: ``F^{-1} grad_lambda = grad_mu``.  A
    matrix part's flattened coordinates hold each off-diagonal entry twice, so
    the Fisher information is singular there, as it is numerically for a
    nearly degenerate ``q``; then the minimum-norm solution (pseudo-inverse) is
    used, which for a matrix part is the symmetric one.
    """
    fisher = family.fisher(natural)
    try:
        if max(family.event_ndims) >= 2:
            raise np.linalg.LinAlgError
        inverse = np.linalg.inv(fisher)
    except np.linalg.LinAlgError:
        inverse = np.linalg.pinv(fisher, hermitian=True)
    return np.einsum("...ij,s...j->s...i", inverse, terms)


def euclidean_from_natural(family, natural, terms):
    """``F(lambda) c`` for flattened mean-coordinate terms ``c`` (``(S,) + batch + (P,)``): ``grad_lambda``."""
    return np.einsum("...ij,s...j->s...i", family.fisher(natural), terms)


def trace_variance(terms):
    """``sum_d Var_s(c_sd) / S``: the trace of the covariance of the mean of the per-draw terms."""
    return float(np.sum(np.var(terms, axis=0, ddof=1)) / terms.shape[0])
