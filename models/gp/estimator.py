"""scikit-learn-style GP regressor and classifier built on the Model API.

``fit`` builds ``Model(latents={"f": GP(kernel, X)}, factors=[Observe(likelihood, y, on="f")])``
and runs CVI, optionally learning the kernel hyperparameters; ``predict`` uses
the posterior predictive at new inputs.
"""

import numpy as np

from ...inference import Model

from .. import likelihoods
from .._labels import binary_labels
from ..observe import Observe
from .kernels._validation import as_inputs
from .prior import GP


class _GPEstimator:
    def __init__(self, kernel, learn_hyperparameters=True, max_iter=200, tol=1e-9):
        self.kernel = kernel
        self.learn_hyperparameters = learn_hyperparameters
        self.max_iter = max_iter
        self.tol = tol

    def _likelihood(self):
        raise NotImplementedError

    def fit(self, X, y):
        """Fit the GP posterior (and hyperparameters); returns ``self``."""
        prior = GP(self.kernel, X, learn_hyperparameters=self.learn_hyperparameters)
        model = Model(latents={"f": prior}, factors=[Observe(self._likelihood(), y, on="f")])
        fit = model.fit(max_iter=self.max_iter, tol=self.tol)
        self.fit_result_ = fit
        self.posterior_ = fit.posterior["f"]
        self.kernel_ = fit.priors["f"].kernel if "f" in fit.priors else self.kernel
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.lower_bounds_ = fit.elbo_trace
        self.elbo_ = fit.elbo
        return self

    def predict_latent(self, X):
        """Posterior mean and variance of ``f`` at new inputs, each shape (M,)."""
        if not hasattr(self, "posterior_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")
        return self.posterior_.predict(as_inputs(X, "X", self.posterior_.n_features))


class GPRegressor(_GPEstimator):
    """GP regression with Gaussian noise of known variance (exact posterior in one step).

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
    noise_variance : float
    learn_hyperparameters : bool
    """

    def __init__(self, kernel, noise_variance=1.0, learn_hyperparameters=True, max_iter=200, tol=1e-9):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol)
        self.noise_variance = noise_variance

    def _likelihood(self):
        return likelihoods.Gaussian(variance=self.noise_variance)

    def predict(self, X, return_std=False):
        """Predictive mean of ``y`` (and its standard deviation) at new inputs."""
        mean, var = self.predict_latent(X)
        if return_std:
            return mean, np.sqrt(var + self.noise_variance)
        return mean


class GPClassifier(_GPEstimator):
    """Binary GP classification (Bernoulli-logit or -probit likelihood) by CVI.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
    link : {"logit", "probit"}
    learn_hyperparameters : bool
    """

    def __init__(self, kernel, link="logit", learn_hyperparameters=True, max_iter=200, tol=1e-9):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol)
        self.link = link

    def _likelihood(self):
        if self.link == "logit":
            return likelihoods.BernoulliLogit()
        if self.link == "probit":
            return likelihoods.BernoulliProbit()
        raise ValueError(f"link must be 'logit' or 'probit'; got {self.link!r}")

    def fit(self, X, y):
        """Fit on two-class labels ``y`` of any type (``classes_`` holds them, sorted); returns ``self``."""
        self.classes_, coded = binary_labels(y)
        return super().fit(X, coded)

    def predict_proba(self, X):
        """Predictive class probabilities, shape (M, 2), columns in the order of ``classes_``."""
        mean, var = self.predict_latent(X)
        p1 = self._likelihood().predict_mean_var(mean, var)[0]
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        """Most probable label (from ``classes_``), shape (M,)."""
        second = self.predict_proba(X)[:, 1] > 0.5
        return self.classes_[second.astype(int)]
