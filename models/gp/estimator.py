"""scikit-learn GP regressor and classifier built on the Model API.

``fit`` builds ``Model(latents={"f": GP(kernel, X)}, factors=[Observe(likelihood, y, on="f")])``
and runs CVI, learning the kernel hyperparameters by default; ``predict``
uses the posterior predictive at new inputs.  The default kernel is
``Matern32()`` (its lengthscale and variance learned).

How :class:`GPRegressor` learns the noise
-----------------------------------------
The engine learns hyperparameters of prior *blocks* (L-BFGS on the ELBO with
the sites re-converged at each trial value, :mod:`efvi.models._hyper`); a
likelihood has none.  So the regressor puts the noise in the prior:

.. math:: f = g + \\epsilon, \\quad g \\sim GP(0, k), \\quad \\epsilon \\sim N(0, \\sigma^2 I),
          \\qquad y = f + \\delta, \\quad \\delta \\sim N(0, s^2 I),

i.e. the kernel ``k + White(sigma^2)`` and a Gaussian likelihood of tiny
variance ``s^2 = NOISE_JITTER * var(y)``.  ``y`` is then Gaussian with covariance
``K + (sigma^2 + s^2) I``, the ELBO at the (one-step, exact) sites is the log
marginal likelihood, and ``sigma^2`` is learned with the kernel's parameters by
the same exact gradient.  The fitted noise is ``noise_variance_ = sigma^2 + s^2``.
Predictions of ``g`` drop the white term: ``White`` has zero
cross-covariance, so the predictive mean is the signal's and its variance is
that of ``f`` less ``sigma^2``.
"""

import numpy as np

from ...inference import Model

from .. import likelihoods
from .._estimator import (BaseEstimator, ClassifierMixin, RegressorMixin, binary_targets, check_fitted, check_X,
                          check_X_y, fit_options, set_fit_results)
from .._estimator_file import expect_array, expect_number
from ..observe import Observe
from .kernels import Kernel, Matern32, Sum, White
from .prior import GP

NOISE_JITTER = 1e-6
"""Variance of the likelihood under a learned noise, relative to ``var(y)`` (the floor of ``noise_variance_``)."""


class _GPEstimator(BaseEstimator):
    """Kernel, fitting and latent predictions shared by the GP estimators."""

    def __init__(self, kernel=None, learn_hyperparameters=True, max_iter=200, tol=1e-9, progress=False):
        self.kernel = kernel
        self.learn_hyperparameters = learn_hyperparameters
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress

    def _kernel(self):
        if self.kernel is None:
            return Matern32()
        if not isinstance(self.kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel or None; got "
                             f"{type(self.kernel).__name__}")
        return self.kernel

    def _fit(self, X, y, kernel, likelihood):
        prior = GP(kernel, X, learn_hyperparameters=self.learn_hyperparameters)
        model = Model(latents={"f": prior}, factors=[Observe(likelihood, y, on="f")])
        fit = model.fit(**fit_options(self))
        self.kernel_ = fit.priors["f"].kernel if "f" in fit.priors else kernel
        return set_fit_results(self, fit, "f")

    def predict_latent(self, X):
        """Posterior mean and variance of ``f`` at new inputs, each shape (M,)."""
        check_fitted(self, "posterior_")
        return self.posterior_.predict(check_X(self, X))

    def _check_fitted_state(self):
        super()._check_fitted_state()
        if getattr(self.posterior_, "n_features", None) != self.n_features_in_:
            raise ValueError(f"posterior_ must be a GP posterior on {self.n_features_in_} input columns that "
                             f"predicts; got {self.posterior_!r}")
        if not isinstance(self.kernel_, Kernel):
            raise ValueError(f"kernel_ must be a kernel; got {self.kernel_!r}")


class GPRegressor(RegressorMixin, _GPEstimator):
    """GP regression with Gaussian noise whose variance is learned with the kernel's hyperparameters.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel, optional
        Covariance of the signal (default ``Matern32()``); without a noise term.
    noise_variance : float
        The noise variance: the starting value when it is learned, else the fixed value.
    learn_noise : bool
        Learn the noise variance (with the kernel's hyperparameters, so only when
        ``learn_hyperparameters``).  ``learn_noise=False`` keeps it at ``noise_variance``.
    learn_hyperparameters : bool
        Learn the kernel's hyperparameters (and the noise) by maximising the ELBO,
        here the log marginal likelihood.
    max_iter, tol, progress :
        Passed to :meth:`efvi.inference.Model.fit`.

    Attributes
    ----------
    kernel_ : Kernel
        The signal kernel with the learned hyperparameters.
    noise_variance_ : float
        The noise variance used (learned or fixed).
    posterior_ : efvi.models.gp.GPPosterior
        Posterior of ``f`` (the signal plus the white noise term when the noise is learned).
    fit_result_, n_iter_, converged_, lower_bounds_, elbo_ :
        The fit, its iterations, convergence flag, ELBO trace and final ELBO.
    n_features_in_, feature_names_in_ :
        Number (and DataFrame names) of the input columns.

    Examples
    --------
    Fix the noise at a known variance instead of learning it:

    >>> from efvi.models import gp
    >>> model = gp.GPRegressor(noise_variance=0.09, learn_noise=False)
    """

    def __init__(self, kernel=None, noise_variance=1.0, learn_noise=True, learn_hyperparameters=True,
                 max_iter=200, tol=1e-9, progress=False):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol, progress)
        self.noise_variance = noise_variance
        self.learn_noise = learn_noise

    def _learns_noise(self):
        return bool(self.learn_noise) and bool(self.learn_hyperparameters)

    def fit(self, X, y):
        """Fit the GP posterior, the kernel's hyperparameters and the noise.

        Parameters
        ----------
        X : array_like or DataFrame, shape (N, D)
        y : array_like, shape (N,)

        Returns
        -------
        self
        """
        X, y = check_X_y(self, X, y)
        noise = float(self.noise_variance)
        if not noise > 0.0:
            raise ValueError(f"noise_variance must be positive; got {self.noise_variance!r}")
        kernel = self._kernel()
        if not self._learns_noise():
            self._fit(X, y, kernel, likelihoods.Gaussian(variance=noise))
            self.noise_variance_ = noise
            return self
        jitter = NOISE_JITTER * (float(np.var(y)) if np.var(y) > 0 else 1.0)
        self._fit(X, y, kernel + White(variance=noise), likelihoods.Gaussian(variance=jitter))
        *signal, white = self.kernel_.parts
        self.kernel_ = signal[0] if len(signal) == 1 else Sum(*signal)
        self.white_variance_ = float(np.exp(white.log_params[0]))
        self.noise_variance_ = self.white_variance_ + jitter
        return self

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_number(self, "noise_variance_", positive=True)
        if self._learns_noise():
            expect_number(self, "white_variance_", positive=True)

    def predict_latent(self, X):
        """Posterior mean and variance of the noise-free function at new inputs, each shape (M,)."""
        mean, var = super().predict_latent(X)
        if self._learns_noise():
            var = np.maximum(var - self.white_variance_, 0.0)
        return mean, var

    def predict(self, X, return_std=False):
        """Predictive mean of ``y`` (and its standard deviation, noise included) at new inputs, each (M,)."""
        mean, var = self.predict_latent(X)
        if return_std:
            return mean, np.sqrt(var + self.noise_variance_)
        return mean


class GPClassifier(ClassifierMixin, _GPEstimator):
    """Binary GP classification (Bernoulli-logit or -probit likelihood) by CVI.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel, optional
        Default ``Matern32()``, its hyperparameters learned.
    link : {"logit", "probit"}
    learn_hyperparameters : bool
    max_iter, tol, progress :
        Passed to :meth:`efvi.inference.Model.fit`.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
    kernel_, posterior_, fit_result_, n_iter_, converged_, lower_bounds_, elbo_, n_features_in_,
    feature_names_in_ :
        As :class:`GPRegressor`.
    """

    def __init__(self, kernel=None, link="logit", learn_hyperparameters=True, max_iter=200, tol=1e-9,
                 progress=False):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol, progress)
        self.link = link

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _likelihood(self):
        if self.link == "logit":
            return likelihoods.BernoulliLogit()
        if self.link == "probit":
            return likelihoods.BernoulliProbit()
        raise ValueError(f"link must be 'logit' or 'probit'; got {self.link!r}")

    def fit(self, X, y):
        """Fit on two-class labels ``y`` of any type (``classes_`` holds them, sorted); returns ``self``."""
        X, y = check_X_y(self, X, y, y_numeric=False)
        self.classes_, coded = binary_targets(y)
        return self._fit(X, coded, self._kernel(), self._likelihood())

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_array(self, "classes_", (2,), kind="OUbiuf")

    def predict_proba(self, X):
        """Predictive class probabilities, shape (M, 2), columns in the order of ``classes_``."""
        mean, var = self.predict_latent(X)
        p1 = self._likelihood().predict_mean_var(mean, var)[0]
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        """Most probable label (from ``classes_``), shape (M,)."""
        second = self.predict_proba(X)[:, 1] > 0.5
        return self.classes_[second.astype(int)]
