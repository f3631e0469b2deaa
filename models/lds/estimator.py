"""A scikit-learn regressor for a function of time (Gaussian values or Poisson counts) by a Markov GP.

``MarkovGPRegressor().fit(t, y)`` sorts the times, builds
``Model(latents={"f": MarkovGP(kernel, t)}, factors=[Observe(likelihood, y, on="f")])``
and runs CVI with the kernel's hyperparameters learned: O(T) per sweep
through the compiled Kalman smoother.  ``predict`` at new times (between,
before or after the data) uses ``fit.posterior["f"].predict(t_new)``.

* ``likelihood="gaussian"``: ``y = offset + f(t) + noise`` with ``offset`` the
  mean of the training ``y``.  The noise variance is fixed (``noise_variance``):
  a learned white-noise term has no state-space form (see
  :class:`efvi.models.gp.GPRegressor` for a dense GP that learns it).
* ``likelihood="poisson"``: ``y ~ Poisson(offset * exp(f(t)))`` with ``offset``
  the mean count, so ``f`` is the log rate relative to it.
"""

import numpy as np

from ...inference import Model

from .. import likelihoods
from .._estimator import (BaseEstimator, RegressorMixin, check_fitted, check_X, check_X_y, fit_options,
                          set_fit_results)
from .._estimator_file import expect_number
from ..gp.kernels import Kernel, Matern32
from ..observe import Observe
from .prior import MarkovGP

LIKELIHOODS = ("gaussian", "poisson")
"""The ``likelihood=`` names of :class:`MarkovGPRegressor`."""


class MarkovGPRegressor(RegressorMixin, BaseEstimator):
    """Regression of Gaussian values or Poisson counts on time with a Markov (state-space) GP.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel, optional
        A kernel with a state-space form (default ``Matern32()``).
    likelihood : {"gaussian", "poisson"}
    noise_variance : float
        Gaussian noise variance (fixed); unused for counts.
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
    posterior_ : efvi.models.lds.StateSpacePosterior
        Posterior of ``f`` at the sorted training times.
    fit_result_, n_iter_, converged_, lower_bounds_, elbo_ :
        The fit, its iterations, convergence flag, ELBO trace and final ELBO.
    n_features_in_ : int
        Always 1: the column of times.
    """

    def __init__(self, kernel=None, likelihood="gaussian", noise_variance=1.0, learn_hyperparameters=True,
                 max_iter=200, tol=1e-9, progress=False):
        self.kernel = kernel
        self.likelihood = likelihood
        self.noise_variance = noise_variance
        self.learn_hyperparameters = learn_hyperparameters
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress

    def _times(self, X):
        if X.shape[1] != 1:
            raise ValueError(f"X must be one column of times, shape (N, 1); got {X.shape[1]} columns")
        return X[:, 0]

    def _likelihood(self, offset):
        if self.likelihood == "gaussian":
            return likelihoods.Gaussian(variance=self.noise_variance)
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
        mean_y = float(np.mean(y))
        self.offset_ = mean_y if self.likelihood != "poisson" else (mean_y if mean_y > 0 else 1.0)
        likelihood = self._likelihood(self.offset_)
        targets = y - self.offset_ if self.likelihood == "gaussian" else y
        order = np.argsort(t, kind="stable")
        prior = MarkovGP(kernel, t[order], learn_hyperparameters=self.learn_hyperparameters)
        fit = Model({"f": prior}, [Observe(likelihood, targets[order], on="f")]).fit(**fit_options(self))
        self.kernel_ = fit.priors["f"].kernel if "f" in fit.priors else kernel
        return set_fit_results(self, fit, "f")

    def _check_fitted_state(self):
        super()._check_fitted_state()
        if self.n_features_in_ != 1 or not callable(getattr(self.posterior_, "predict", None)):
            raise ValueError(f"a fitted MarkovGPRegressor has one input column and a posterior that predicts; got "
                             f"n_features_in_={self.n_features_in_!r} and {self.posterior_!r}")
        expect_number(self, "offset_")
        if not isinstance(self.kernel_, Kernel):
            raise ValueError(f"kernel_ must be a kernel; got {self.kernel_!r}")

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


__all__ = ["MarkovGPRegressor", "LIKELIHOODS"]
