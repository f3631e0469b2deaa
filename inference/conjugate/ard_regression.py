r"""Variational Bayesian ARD regression by a direct fixed-point solve (MacKay's updates or the mean-field sweep).

The model is the one that :class:`~efvi.inference.ARDPrior` builds with a
Gaussian GLM and a Gamma noise precision:

.. math:: y \mid w, \tau \sim N(X w, I / \tau), \qquad
          w_d \mid \alpha_d \sim N(0, 1 / \alpha_d), \qquad
          \alpha_d \sim \mathrm{Gamma}(a_0, b_0), \qquad
          \tau \sim \mathrm{Gamma}(c_0, d_0),

with the weights' own broad prior :math:`N(0, I / s_0)` multiplying the ARD
factor, and the mean field :math:`q(w) q(\alpha) q(\tau)`.  Given the means
:math:`\bar\alpha, \bar\tau`, :math:`q(w) = N(m, \Sigma)` with
:math:`\Sigma = (\bar\tau X^\top X + \operatorname{diag}(\bar\alpha) + s_0 I)^{-1}`,
:math:`m = \bar\tau \Sigma X^\top y`, and then

.. math:: q(\alpha_d) = \mathrm{Gamma}\big(a_0 + \tfrac12,\; b_0 + \tfrac12 (m_d^2 + \Sigma_{dd})\big),
          \qquad
          q(\tau) = \mathrm{Gamma}\big(c_0 + \tfrac N2,\; d_0 + \tfrac12 (\|y - X m\|^2
          + \operatorname{tr} X^\top X \Sigma)\big)

(Bishop and Tipping, 2000; Drugowitsch, 2013).  Iterating these is the
coordinate ascent that ``Model.fit(step=1.0)`` runs (``update="vb"``); it is
slow where a precision heads for a large value, since each sweep raises it by
a bounded factor.

**MacKay's updates** (``update="mackay"``, the default) reach the same fixed
point faster.  The mean-field equation :math:`\bar\alpha_d (m_d^2 + \Sigma_{dd}
+ 2 b_0) = 1 + 2 a_0` is rearranged with the uncertainty term on the right,
evaluated at the current precision, and likewise for the noise:

.. math:: \bar\alpha_d \leftarrow \frac{\gamma_d + 2 a_0}{m_d^2 + 2 b_0}, \qquad
          \gamma_d = 1 - \bar\alpha_d \Sigma_{dd}, \qquad
          \bar\tau \leftarrow \frac{N + 2 c_0 - \bar\tau \operatorname{tr} X^\top X \Sigma}
                                   {\|y - X m\|^2 + 2 d_0} ,

MacKay's (1992) re-estimation with :math:`\gamma_d` the number of
well-determined parameters, as in scikit-learn's ``ARDRegression``
(:math:`\bar\tau \operatorname{tr} X^\top X \Sigma = \sum_d \gamma_d - s_0
\operatorname{tr} \Sigma`).  A fixed point of either map is a fixed point of the
other, so both return the same variational posterior, the stationary point of
the ELBO.  What scikit-learn computes differs only in what it does with the
precisions: it treats them as point estimates (type-II maximum likelihood) and
prunes a weight whose precision passes ``threshold_lambda``; here every weight
keeps its Gamma posterior, and a switched-off feature has a large
:math:`\bar\alpha_d` (of order :math:`1 / a_0`) and a weight near zero.  The
MacKay map does not raise the ELBO monotonically; it is used only to choose
the next :math:`\bar\alpha, \bar\tau`, and every iterate reported is the
consistent mean-field triple above with its exact ELBO.
"""

import warnings

import numpy as np
from scipy.linalg import lapack

from ...expfam import Gamma, Gaussian
from ...expfam.checks import as_float, check_integer, check_positive
from ...expfam.gamma import kl_from_natural
from .._acceleration import AndersonAccelerator
from ..warnings import ConvergenceWarning

__all__ = ["ard_regression", "ARDRegressionResult"]

UPDATES = ("mackay", "vb")


class ARDRegressionResult:
    """The variational posterior of :func:`ard_regression` and how the solve went.

    Attributes
    ----------
    posterior : dict
        ``"w"``: :class:`~efvi.expfam.Gaussian` (D,); ``"alpha"``:
        :class:`~efvi.expfam.Gamma` of batch shape (D,); ``"tau"``: a scalar Gamma.
    elbo_trace : ndarray, shape (n_iter,)
        The ELBO of the mean-field state after each iteration.
    n_iter : int
    converged : bool
        Whether the relative ELBO change met ``tol`` (twice in a row) before ``max_iter``.
    update : str
        ``"mackay"`` or ``"vb"``.
    """

    def __init__(self, posterior, elbo_trace, converged, update):
        self.posterior = posterior
        self.elbo_trace = np.asarray(elbo_trace, dtype=float)
        self.n_iter = len(self.elbo_trace)
        self.converged = converged
        self.update = update

    @property
    def elbo(self):
        """The ELBO of the returned posterior."""
        return float(self.elbo_trace[-1])

    def predict(self, X, return_std=False):
        """Predictive mean ``X E[w]`` (M,) and, with ``return_std``, ``sqrt(x^T Cov[w] x + 1 / E[tau])`` (M,)."""
        weights = self.posterior["w"]
        X = as_float(X, "X")
        if X.ndim != 2 or X.shape[1] != weights.mean.shape[0]:
            raise ValueError(f"X must have shape (M, {weights.mean.shape[0]}); got shape {X.shape}")
        mean = X @ weights.mean
        if not return_std:
            return mean
        return mean, np.sqrt(np.einsum("md,de,me->m", X, weights.cov, X) + 1.0 / self.posterior["tau"].mean)


def ard_regression(X, y, *, precision_prior=(1e-6, 1e-6), noise_prior=(1e-6, 1e-6), weight_prior_precision=1e-6,
                   update="mackay", accelerate=True, tol=1e-8, max_iter=300, warn=True):
    r"""Variational Bayesian ARD regression: :math:`q(w) q(\alpha) q(\tau)` at the mean-field fixed point.

    The same posterior as ``Model.fit`` of the ARD model (module docstring),
    found by a dense fixed-point solve: one Cholesky factorisation of a
    (D, D) matrix per iteration, ``O(N D^2)`` once for :math:`X^\top X`.

    Parameters
    ----------
    X : array_like, shape (N, D)
    y : array_like, shape (N,)
    precision_prior, noise_prior : tuple of two floats
        Shape and rate :math:`(a_0, b_0)` of each :math:`\alpha_d` and
        :math:`(c_0, d_0)` of :math:`\tau`; positive.
    weight_prior_precision : float
        :math:`s_0`, the precision of the weights' own prior :math:`N(0, I / s_0)`; positive.
    update : {"mackay", "vb"}
        How the precisions' means are re-estimated between weight updates:
        MacKay's fixed-point form (fewer iterations) or the mean-field
        coordinate update.  Both converge to the same posterior.
    accelerate : bool
        Anderson-accelerate the chosen map in the log precisions (depth 3;
        :mod:`efvi.inference._acceleration`): an extrapolated point is kept
        only if its ELBO is not below the last one, else the plain update is
        taken and the history restarts.
    tol : float
        Stop when the relative change of the ELBO is at most ``tol`` in two
        iterations in a row (one small change after an extrapolation can be
        luck).
    max_iter : int
    warn : bool
        Emit :class:`~efvi.inference.ConvergenceWarning` when ``max_iter`` is reached.

    Returns
    -------
    ARDRegressionResult
    """
    X, y, priors, s0, tol, max_iter = _check_arguments(X, y, precision_prior, noise_prior,
                                                       weight_prior_precision, update, tol, max_iter)
    problem = (X.T @ X, X.T @ y, float(y @ y), X.shape[0], *priors[0], *priors[1], s0)
    precisions = (mackay_precisions if update == "mackay" else vb_precisions)
    log_point = np.log(np.append(np.ones(X.shape[1]), 1.0 / max(float(np.var(y)), np.finfo(float).tiny)))
    accelerator = AndersonAccelerator(depth=3) if accelerate else None
    trace, converged, plain = [], False, None
    for _ in range(max_iter):
        state = mean_field_state(problem, np.exp(log_point[:-1]), np.exp(log_point[-1]))
        if plain is not None and state["elbo"] < trace[-1]:            # an extrapolation that lost ELBO
            log_point, plain = plain, None
            accelerator.reset()
            state = mean_field_state(problem, np.exp(log_point[:-1]), np.exp(log_point[-1]))
        trace.append(state["elbo"])
        if len(trace) > 2 and max(abs(trace[-1] - trace[-2]), abs(trace[-2] - trace[-3])) <= tol * abs(trace[-1]):
            converged = True
            break
        alpha, tau = precisions(problem, state, np.exp(log_point[:-1]), np.exp(log_point[-1]))
        target = np.log(np.append(alpha, tau))
        proposal = None
        if accelerator is not None:
            accelerator.record(log_point, target)
            proposal = accelerator.propose()
        log_point, plain = (target, None) if proposal is None else (proposal, target)
    if not converged and warn:
        change = abs(trace[-1] - trace[-2]) / abs(trace[-1]) if len(trace) > 1 else float("nan")
        warnings.warn(f"ard_regression did not converge in {max_iter} iterations (relative ELBO change {change:.1e}, "
                      f"tol={tol:g}); raise max_iter", ConvergenceWarning, stacklevel=2)
    posterior = {"w": Gaussian.from_mean_cov(state["mean"], state["cov"]),
                 "alpha": Gamma(state["alpha_shape"], state["alpha_rate"]),
                 "tau": Gamma(state["tau_shape"], state["tau_rate"])}
    return ARDRegressionResult(posterior, trace, converged, update)


def _check_arguments(X, y, precision_prior, noise_prior, weight_prior_precision, update, tol, max_iter):
    """The validated arguments of :func:`ard_regression`; errors name the argument."""
    X = as_float(X, "X")
    y = as_float(y, "y")
    if X.ndim != 2 or 0 in X.shape:
        raise ValueError(f"X must be a non-empty matrix (N, D); got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got shape {y.shape}")
    priors = [check_positive(p, name) for p, name in ((precision_prior, "precision_prior"),
                                                      (noise_prior, "noise_prior"))]
    for prior, name in zip(priors, ("precision_prior", "noise_prior")):
        if prior.shape != (2,):
            raise ValueError(f"{name} must be (shape, rate), two positive floats; got shape {prior.shape}")
    s0 = float(check_positive(weight_prior_precision, "weight_prior_precision"))
    if update not in UPDATES:
        raise ValueError(f"update must be one of {UPDATES}; got {update!r}")
    tol = float(as_float(tol, "tol"))
    if tol < 0:
        raise ValueError(f"tol must be >= 0; got {tol!r}")
    max_iter = check_integer(max_iter, "max_iter", minimum=1)
    return X, y, priors, s0, tol, max_iter


def mean_field_state(problem, alpha, tau):
    r"""q(w) from the precisions' means, the Gammas that q(w) implies, and the ELBO of that triple.

    Parameters
    ----------
    problem : tuple
        ``(X^T X (D, D), X^T y (D,), y^T y, N, a0, b0, c0, d0, s0)``.
    alpha : ndarray, shape (D,)
        :math:`\bar\alpha` used for q(w).
    tau : float
        :math:`\bar\tau` used for q(w).

    Returns
    -------
    dict
        ``mean`` (D,), ``cov`` (D, D), ``second`` :math:`m^2 + \operatorname{diag}\Sigma` (D,),
        ``residual`` :math:`\|y - Xm\|^2`, ``spread`` :math:`\operatorname{tr} X^\top X \Sigma`,
        the Gamma parameters ``alpha_shape``, ``alpha_rate`` (D,), ``tau_shape``, ``tau_rate``,
        and ``elbo``.
    """
    gram, xty, yty, n, a0, b0, c0, d0, s0 = problem
    dim = len(xty)
    precision = tau * gram
    precision.flat[::dim + 1] += alpha + s0
    factor, info = lapack.dpotrf(precision, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"the weights' posterior precision is not positive definite (dpotrf info {info})")
    cov, _ = lapack.dpotri(factor, lower=1)
    cov = np.tril(cov) + np.tril(cov, -1).T
    mean = tau * (cov @ xty)
    second = mean ** 2 + cov.diagonal()
    residual = max(yty - 2.0 * mean @ xty + mean @ gram @ mean, 0.0)
    spread = float(np.vdot(gram, cov))
    tau_shape, tau_rate = c0 + 0.5 * n, d0 + 0.5 * (residual + spread)
    shapes = np.append(np.full(dim, a0 + 0.5), tau_shape)                # the D precisions, then the noise's
    rates = np.append(b0 + 0.5 * second, tau_rate)
    e_log, e_value = Gamma.natural_to_mean((shapes - 1.0, -rates))
    log_2pi = np.log(2 * np.pi)
    prior_shapes, prior_rates = np.append(np.full(dim, a0), c0), np.append(np.full(dim, b0), d0)
    kl = kl_from_natural((shapes - 1.0, -rates), (prior_shapes - 1.0, -prior_rates))
    elbo = (0.5 * n * (e_log[-1] - log_2pi) - 0.5 * e_value[-1] * (residual + spread)
            + 0.5 * np.sum(e_log[:-1] - log_2pi - e_value[:-1] * second)
            - 0.5 * (s0 * np.sum(second) - dim - dim * np.log(s0) + 2.0 * np.sum(np.log(factor.diagonal())))
            - np.sum(kl))
    alpha_shape, alpha_rate = shapes[:-1], rates[:-1]
    return {"mean": mean, "cov": cov, "second": second, "residual": residual, "spread": spread,
            "alpha_shape": alpha_shape, "alpha_rate": alpha_rate, "tau_shape": tau_shape, "tau_rate": tau_rate,
            "elbo": float(elbo)}


def vb_precisions(problem, state, alpha, tau):
    """The mean-field coordinate update: the means of the Gammas in ``state``."""
    return state["alpha_shape"] / state["alpha_rate"], state["tau_shape"] / state["tau_rate"]


def mackay_precisions(problem, state, alpha, tau):
    r"""MacKay's re-estimation (module docstring): :math:`(\gamma_d + 2 a_0) / (m_d^2 + 2 b_0)` and the noise's.

    Where a re-estimate is not positive (the noise's can be when N < D), the
    mean-field update takes its place for that iteration.
    """
    _, _, _, n, a0, b0, c0, d0, _ = problem
    well_determined = 1.0 - alpha * np.diag(state["cov"])
    new_alpha = (well_determined + 2.0 * a0) / (state["mean"] ** 2 + 2.0 * b0)
    new_tau = (n + 2.0 * c0 - tau * state["spread"]) / (state["residual"] + 2.0 * d0)
    vb_alpha, vb_tau = vb_precisions(problem, state, alpha, tau)        # where MacKay's is not positive (N < D)
    return (np.where(new_alpha > 0, new_alpha, vb_alpha), new_tau if new_tau > 0 else vb_tau)
