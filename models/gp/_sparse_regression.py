r"""Sparse GP regression that learns the noise variance with the kernel: L-BFGS on Titsias's collapsed bound.

The dense :class:`~efvi.models.gp.GPRegressor` learns the noise as a
``White`` term of the kernel.  In a sparse GP that term would be wrong: white
noise has no covariance with the inducing values, so it enters only the
conditional variance ``d_i`` of ``f_i`` given ``u``, and the SVGP bound charges
it as ``-(d_i + sigma^2) / (2 s^2)`` in the expected Gaussian log-likelihood of
variance ``s^2`` instead of treating it as noise (its optimum drives ``sigma^2``
to zero).  The noise belongs to the likelihood, ``y_i ~ N(f_i, sigma^2)``, and
with a Gaussian likelihood the CVI fit at fixed ``(theta, Z, sigma^2)`` is exact
in one step, with the ELBO equal to the collapsed bound of Titsias (2009):

.. math:: \mathcal{L}(\theta, Z, \sigma^2) = \log N(y; 0, Q + \sigma^2 I)
          - \frac{\operatorname{tr}(K - Q)}{2 \sigma^2}, \qquad Q = K_{xz} K_{zz}^{-1} K_{zx}.

The engine learns only a prior block's hyperparameters, so this module
maximises ``L`` over the kernel's log hyperparameters, the inducing inputs
(optionally) and ``log(sigma^2 - s^2)`` itself, by L-BFGS.  At the optimal
``q(v)`` the gradient is the partial derivative at fixed ``q(v)`` (envelope
theorem): the block's :meth:`~efvi.models.gp.SparseGP.elbo_gradient` for the
kernel and the inducing inputs, and for the noise, with the marginals
``N(m_i, v_i)`` of ``f_i``,

.. math:: \frac{\partial \mathcal{L}}{\partial \sigma^2}
          = \sum_i \frac{(y_i - m_i)^2 + v_i - \sigma^2}{2 \sigma^4}.

As for the dense regressor the variance is ``sigma^2 = s^2 + exp(w)`` with a
floor ``s^2`` (``NOISE_JITTER * var(y)``), so that with the inducing inputs at
the training inputs both maximise the same log marginal likelihood.
"""

import warnings

import numpy as np

from ...inference import ConvergenceWarning, Model
from ...inference.blas_threads import blas_threads_for
from ...inference.lbfgs import describe, minimise
from ...inference.progress import close_progress_bar, progress_bar
from .. import likelihoods
from ..observe import Observe
from .sparse import SparseGP


class SparseRegression:
    """The result of :func:`fit_collapsed`.

    Attributes
    ----------
    fit : efvi.inference.FitResult
        The CVI fit at the learned values (fixed hyperparameters).
    kernel : Kernel
        The learned kernel.
    noise_variance : float
        The learned ``sigma^2``.
    bounds : ndarray, shape (n_evaluations,)
        The bound at each evaluation, the last at the learned values.
    converged : bool
    message : str
        Why the optimiser stopped without converging ("" when it converged).
    """

    def __init__(self, fit, kernel, noise_variance, bounds, converged, message):
        self.fit, self.kernel, self.noise_variance = fit, kernel, noise_variance
        self.bounds, self.converged, self.message = bounds, converged, message


class BudgetSpent(Exception):
    """The evaluations allowed (``max_iter``) are spent."""


class CollapsedBound:
    """``theta -> (-L, -dL/dtheta)`` with ``theta = (log kernel parameters, inducing inputs?, log(sigma^2 - s^2))``.

    Parameters
    ----------
    kernel : Kernel
        Starting kernel.
    X : ndarray, shape (N, D)
    y : ndarray, shape (N,)
    inducing : ndarray, shape (M, D)
        Starting (or fixed) inducing inputs.
    learn_inducing : bool
    noise_floor : float
        ``s^2 > 0``.
    fit_options : dict
        Keyword arguments of :meth:`efvi.inference.Model.fit` for the fit at each evaluation.

    Attributes
    ----------
    bounds : list of float
        The bound at each evaluation.
    best : tuple
        ``(theta, -L)`` of the highest bound so far.
    budget : int or None
        Evaluations allowed: one more raises :class:`BudgetSpent`.
    bar : progress bar or None
        Updated at each evaluation.
    """

    def __init__(self, kernel, X, y, inducing, learn_inducing, noise_floor, fit_options):
        self.learner = SparseGP(kernel, X, inducing, learn_hyperparameters=True, learn_inducing=learn_inducing)
        self.X, self.y, self.noise_floor = X, y, float(noise_floor)
        self.fit_options = dict(fit_options, progress=False, warn=False)
        self.bounds = []
        self.last = None        # (theta, value, gradient, fit, kernel, noise variance) of the last evaluation
        self.best = (None, np.inf)
        self.budget = self.bar = None

    def start(self, noise_variance):
        """The starting ``theta`` with ``sigma^2 = noise_floor + noise_variance``."""
        return np.append(self.learner.hyperparameters(), np.log(noise_variance))

    def __call__(self, theta):
        if self.last is None or not np.array_equal(theta, self.last[0]):
            if self.budget is not None and len(self.bounds) >= self.budget:
                raise BudgetSpent
            # an invalid trial point is a bound of -inf to the optimiser; an invalid start raises
            self.last = (np.array(theta, dtype=float),) + self._evaluate(theta, invalid_ok=self.last is not None)
            self.bounds.append(-self.last[1])
            if self.last[1] < self.best[1]:
                self.best = self.last[:2]
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(elbo=f"{-self.last[1]:.6g}")
        return self.last[1], self.last[2].copy()

    def _evaluate(self, theta, invalid_ok):
        try:
            learner = self.learner.with_hyperparameters(theta[:-1])
            variance = self.noise_floor + float(np.exp(theta[-1]))
            block = SparseGP(learner.kernel, self.X, learner.Z, jitter=learner.jitter)
            fit = Model({"f": block}, [Observe(likelihoods.Gaussian(variance=variance), self.y, on="f")]).fit(
                **self.fit_options)
        except ValueError:        # a kernel matrix that is not positive definite, or an overflowing value
            if not invalid_ok:
                raise
            return np.inf, np.zeros_like(theta), None, None, None
        q, sites = fit.posterior["f"], fit.sites[0]
        mean, var = q.marginals()
        d_noise = 0.5 * float(np.sum((self.y - mean) ** 2 + var - variance)) / variance ** 2
        gradient = np.append(learner.elbo_gradient(q, [((sites.natural_mean, sites.precision), None, 1.0)]),
                             d_noise * (variance - self.noise_floor))
        return -fit.elbo, -gradient, fit, learner.kernel, variance


def fit_collapsed(kernel, X, y, inducing, learn_inducing, noise_variance, noise_floor, fit_options,
                  hyper_max_iter=100, progress=False):
    """Learn the kernel, the noise variance and (optionally) the inducing inputs of a sparse GP regression.

    Parameters
    ----------
    kernel : Kernel
        Starting kernel (its log hyperparameters are learned).
    X : ndarray, shape (N, D)
    y : ndarray, shape (N,)
    inducing : ndarray, shape (M, D)
    learn_inducing : bool
    noise_variance : float
        Starting ``sigma^2 - noise_floor`` (> 0).
    noise_floor : float
        The smallest noise variance ``s^2`` (> 0).
    fit_options : dict
        ``max_iter``: the evaluations of the bound allowed (one CVI step each);
        ``tol``: the optimiser stops when the bound changes by less than ``1e-3 tol``, relative.
    hyper_max_iter : int
        L-BFGS iterations.
    progress : bool
        Show a progress bar over the evaluations (tqdm).

    Returns
    -------
    SparseRegression
        At the highest bound evaluated (L-BFGS-B's answer when it converged).  A
        line search that fails where the last evaluations agree to ``tol``
        (relative) counts as converged: L-BFGS-B's ``ftol`` of ``1e-3 tol`` can be
        below the round-off of a bound summed over ``N`` points.
    """
    m = float(len(inducing))
    with blas_threads_for(len(X) * m * m + m ** 3):
        return _fit_collapsed(CollapsedBound(kernel, X, y, inducing, learn_inducing, noise_floor, fit_options),
                              noise_variance, fit_options, hyper_max_iter, progress)


def _fit_collapsed(objective, noise_variance, fit_options, hyper_max_iter, progress):
    start = objective.start(noise_variance)
    tol, objective.budget = float(fit_options["tol"]), max(int(fit_options["max_iter"]), 1)
    objective.bar = progress_bar(progress, objective.budget, "efvi sparse GP regression")
    outcome = "failed"
    try:
        objective(start)
        _, converged, message = minimise(objective, start, tol, hyper_max_iter, lambda: objective.bounds)
        outcome = "converged" if converged else "not converged"
    except BudgetSpent:
        converged, message = False, (f"the fit stopped at max_iter={objective.budget} evaluations of the "
                                     f"collapsed bound before {describe(tol)} converged")
        outcome = f"stopped at max_iter={objective.budget}, not converged"
    finally:
        close_progress_bar(objective.bar, outcome)
        objective.bar = None
    objective.budget = None
    objective(objective.best[0])             # the fit at the best values: the last evaluation, or one more
    fit, learned, variance = objective.last[3:]
    if message:
        warnings.warn(message, ConvergenceWarning, stacklevel=4)
    return SparseRegression(fit, learned, variance, np.asarray(objective.bounds), converged, message)
