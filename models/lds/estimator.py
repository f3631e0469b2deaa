r"""A scikit-learn regressor for a function of time (Gaussian values or Poisson counts) by a Markov GP.

``MarkovGPRegressor().fit(t, y)`` sorts the times, builds
``Model(latents={"f": MarkovGP(kernel, t)}, factors=[Observe(likelihood, y, on="f")])``
and runs CVI with the kernel's hyperparameters learned: O(T) per sweep
through the compiled Kalman smoother.  ``predict`` at new times (between,
before or after the data) uses ``fit.posterior["f"].predict(t_new)``.

* ``likelihood="gaussian"``: ``y = offset + f(t) + noise`` with ``offset`` the
  mean of the training ``y``.  The noise variance is learned by default
  (``learn_noise``), starting at ``noise_variance``.
* ``likelihood="poisson"``: ``y ~ Poisson(offset * exp(f(t)))`` with ``offset``
  the mean count, so ``f`` is the log rate relative to it.

How the noise is learned
------------------------
A white-noise term has no state-space form, so the noise cannot join the
kernel as it does in :class:`efvi.models.gp.GPRegressor`; and the engine
learns hyperparameters of prior blocks, not of likelihoods.  The regressor
therefore maximises the marginal likelihood over the noise variance by EM
(type-II maximum likelihood), around the fit that learns the kernel: with a
Gaussian likelihood the CVI fit is exact, so its posterior marginals
``N(m_t, v_t)`` of ``f`` at the training times give the EM update

.. math:: \sigma^2 \leftarrow \frac1T \sum_t \big((y_t - m_t)^2 + v_t\big),

which never lowers the marginal likelihood; each fit starts from the previous
kernel, and the loop stops when ``sigma^2`` changes by less than
``NOISE_RTOL`` (relative) or after ``NOISE_MAX_ITER`` fits.  Its fixed point
is a stationary point of the marginal likelihood in the noise and the
kernel's hyperparameters jointly.  EM is the slow part (each step is a fit,
O(T) each); it moves fastest when the start is within a factor of a few of
the answer.
"""

import warnings

import numpy as np

from ...expfam.checks import check_positive
from ...inference import ConvergenceWarning, Model

from .. import likelihoods
from .._estimator import (BaseEstimator, RegressorMixin, check_fit_results, check_fitted, check_X, check_X_y,
                          fit_options, set_fit_results)
from .._estimator_file import expect_number
from ..gp.kernels import Kernel, Matern32
from ..observe import Observe
from .prior import MarkovGP

LIKELIHOODS = ("gaussian", "poisson")
"""The ``likelihood=`` names of :class:`MarkovGPRegressor`."""

NOISE_RTOL = 1e-4
"""The learned noise variance has converged when an EM step changes it by less than this, relative."""

NOISE_MAX_ITER = 100
"""Most EM steps (each a fit) of a learned noise variance."""


class MarkovGPRegressor(RegressorMixin, BaseEstimator):
    """Regression of Gaussian values or Poisson counts on time with a Markov (state-space) GP.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel, optional
        A kernel with a state-space form (default ``Matern32()``).
    likelihood : {"gaussian", "poisson"}
    noise_variance : float
        Gaussian noise variance, in the units of ``y``: the starting value when it
        is learned, else the fixed value; unused for counts.
    learn_noise : bool
        Learn the noise variance (Gaussian values only) by EM on the marginal
        likelihood, around the fits that learn the kernel (see the module's
        notes).  ``learn_noise=False`` keeps it at ``noise_variance``.
    learn_hyperparameters : bool
        Learn the kernel's hyperparameters by maximising the ELBO.
    max_iter, tol, progress :
        Passed to :meth:`efvi.inference.Model.fit`.

    Attributes
    ----------
    kernel_ : Kernel
        The kernel with the learned hyperparameters.
    offset_ : float
        The training mean (Gaussian) or mean count (Poisson) that ``f`` is relative to.
    noise_variance_ : float
        The Gaussian noise variance used (learned or fixed); absent for counts.
    n_noise_iter_ : int
        EM steps of the learned noise (fits run; 0 when it is fixed or for counts).
    posterior_ : efvi.models.lds.StateSpacePosterior
        Posterior of ``f`` at the sorted training times.
    fit_result_, n_iter_, converged_, lower_bounds_, elbo_ :
        The fit, its iterations, convergence flag, ELBO trace and final ELBO.
    n_features_in_ : int
        Always 1: the column of times.
    """

    def __init__(self, kernel=None, likelihood="gaussian", noise_variance=1.0, learn_noise=True,
                 learn_hyperparameters=True, max_iter=200, tol=1e-9, progress=False):
        self.kernel = kernel
        self.likelihood = likelihood
        self.noise_variance = noise_variance
        self.learn_noise = learn_noise
        self.learn_hyperparameters = learn_hyperparameters
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress

    def _times(self, X):
        if X.shape[1] != 1:
            raise ValueError(f"X must be one column of times, shape (N, 1); got {X.shape[1]} columns")
        return X[:, 0]

    def _likelihood(self, offset, noise_variance=None):
        if self.likelihood == "gaussian":
            return likelihoods.Gaussian(variance=self.noise_variance_ if noise_variance is None else noise_variance)
        if self.likelihood == "poisson":
            return likelihoods.Poisson(exposure=offset)
        raise ValueError(f"likelihood must be one of {', '.join(map(repr, LIKELIHOODS))}; got {self.likelihood!r}")

    def fit(self, X, y):
        """Fit the posterior of ``f`` and the kernel's hyperparameters.

        Parameters
        ----------
        X : array_like or DataFrame, shape (N, 1)
            Times, in any order.
        y : array_like, shape (N,)
            Values (Gaussian) or non-negative integer counts (Poisson).

        Returns
        -------
        self
        """
        X, y = check_X_y(self, X, y)
        t = self._times(X)
        kernel = Matern32() if self.kernel is None else self.kernel
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel or None; got {type(kernel).__name__}")
        for name in ("noise_variance_", "n_noise_iter_"):
            vars(self).pop(name, None)
        mean_y = float(np.mean(y))
        self.offset_ = mean_y if self.likelihood != "poisson" else (mean_y if mean_y > 0 else 1.0)
        gaussian = self.likelihood == "gaussian"
        noise = float(check_positive(self.noise_variance, "noise_variance")) if gaussian else None
        likelihood = self._likelihood(self.offset_, noise)
        targets = y - self.offset_ if gaussian else y
        order = np.argsort(t, kind="stable")
        fit = self._fit(kernel, t[order], targets[order], likelihood)
        self.n_noise_iter_ = 0
        if gaussian and self.learn_noise:
            fit, noise = self._learn_noise(fit, t[order], targets[order], noise)
        if gaussian:
            self.noise_variance_ = noise
        return set_fit_results(self, fit, "f")

    def _fit(self, kernel, t, targets, likelihood):
        """The CVI fit at sorted times ``t`` (learning the kernel if asked); sets ``kernel_``."""
        prior = MarkovGP(kernel, t, learn_hyperparameters=self.learn_hyperparameters)
        fit = Model({"f": prior}, [Observe(likelihood, targets, on="f")]).fit(**fit_options(self))
        self.kernel_ = fit.priors["f"].kernel if "f" in fit.priors else kernel
        return fit

    def _learn_noise(self, fit, t, targets, noise):
        """EM on the noise variance from the first fit: the last fit and the noise it used."""
        for _ in range(NOISE_MAX_ITER):
            new = em_noise_variance(targets, fit.posterior["f"])
            converged = abs(new - noise) <= NOISE_RTOL * noise
            if converged:
                break
            noise = new
            fit = self._fit(self.kernel_, t, targets, likelihoods.Gaussian(variance=noise))
            self.n_noise_iter_ += 1
        else:
            warnings.warn(f"the noise variance did not converge in {NOISE_MAX_ITER} EM steps (last {noise!r})",
                          ConvergenceWarning, stacklevel=3)
        return fit, noise

    def _check_fitted_state(self):
        super()._check_fitted_state()
        if self.n_features_in_ != 1 or not callable(getattr(self.posterior_, "predict", None)):
            raise ValueError(f"a fitted MarkovGPRegressor has one input column and a posterior that predicts; got "
                             f"n_features_in_={self.n_features_in_!r} and {self.posterior_!r}")
        expect_number(self, "offset_")
        if isinstance(self.n_noise_iter_, bool) or not isinstance(self.n_noise_iter_, int) \
                or not 0 <= self.n_noise_iter_ <= NOISE_MAX_ITER:
            raise ValueError(f"n_noise_iter_ must be an integer in [0, {NOISE_MAX_ITER}]; got {self.n_noise_iter_!r}")
        if self.likelihood == "gaussian":
            expect_number(self, "noise_variance_", positive=True)
            if not self.learn_noise and self.noise_variance_ != float(self.noise_variance):
                raise ValueError(f"noise_variance_ must be the fixed noise_variance {float(self.noise_variance)!r}; "
                                 f"got {self.noise_variance_!r}")
        if not isinstance(self.kernel_, Kernel):
            raise ValueError(f"kernel_ must be a kernel; got {self.kernel_!r}")
        check_fit_results(self)

    def predict_latent(self, X):
        """Posterior mean and variance of ``f`` at new times ``X`` (M, 1), each shape (M,)."""
        check_fitted(self, "posterior_")
        return self.posterior_.predict(self._times(check_X(self, X)))

    def predict(self, X, return_std=False):
        """Predictive mean of ``y`` (and its standard deviation) at new times ``X`` (M, 1), each (M,)."""
        mean, var = self.predict_latent(X)
        mean_y, var_y = self._likelihood(self.offset_).predict_mean_var(mean, var)
        if self.likelihood == "gaussian":
            mean_y = mean_y + self.offset_
        return (mean_y, np.sqrt(var_y)) if return_std else mean_y


def em_noise_variance(targets, posterior):
    """The EM update of a Gaussian noise variance: the mean expected squared residual under the posterior.

    Parameters
    ----------
    targets : ndarray, shape (T,)
        The observations (less the offset), in the order of the posterior's times.
    posterior : object with ``mean`` and ``var``, each of T values
        The posterior marginals of ``f`` at those times.

    Returns
    -------
    float
        :math:`\\frac1T \\sum_t ((y_t - m_t)^2 + v_t)`.
    """
    mean, var = np.ravel(posterior.mean), np.ravel(posterior.var)
    return float(np.mean((targets - mean) ** 2 + var))


__all__ = ["MarkovGPRegressor", "LIKELIHOODS", "NOISE_RTOL", "NOISE_MAX_ITER", "em_noise_variance"]
