"""scikit-learn-style estimators built on the Model API (not beside it).

``fit`` validates, builds ``Model(latents={"w": prior}, factors=[GLM(...)])``,
runs CVI and sets trailing-underscore results; ``predict`` uses the posterior
predictive of the likelihood.
"""

import numpy as np

from ...expfam import DiagonalGaussian, Gaussian
from ...expfam.checks import as_float, check_positive
from ...inference import Model

from .. import likelihoods
from .._labels import binary_labels
from .factor import GLM
from .predict import predict_latent


class BayesianGLM:
    """Bayesian generalised linear model fitted by CVI.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood, optional
        Default: ``likelihoods.Gaussian(variance=1.0)``.
    prior_var : float
        Prior variance of each weight (``w ~ N(0, prior_var I)``), intercept included.
    fit_intercept : bool
        Prepend a column of ones to ``X``.
    covariance : {"full", "diag"}
        Full-covariance Gaussian or mean-field (DiagonalGaussian) posterior.
    max_iter, tol, step, batch_size, seed :
        Passed to :meth:`efvi.inference.Model.fit`.

    Attributes
    ----------
    coef_ : ndarray, shape (D,)
        Posterior mean of the weights (without the intercept).
    intercept_ : float
        Posterior mean of the intercept (0 without one).
    coef_cov_ : ndarray, shape (D', D')
        Posterior covariance of all weights (intercept first when fitted).
    posterior_ : efvi.expfam.Gaussian or efvi.expfam.DiagonalGaussian
    fit_result_ : efvi.inference.FitResult
    n_iter_, converged_, lower_bounds_ :
        Iterations, convergence flag and ELBO trace.
    """

    def __init__(self, likelihood=None, prior_var=1.0, fit_intercept=True, covariance="full",
                 max_iter=200, tol=1e-8, step=None, batch_size=None, seed=0):
        self.likelihood = likelihood
        self.prior_var = prior_var
        self.fit_intercept = fit_intercept
        self.covariance = covariance
        self.max_iter = max_iter
        self.tol = tol
        self.step = step
        self.batch_size = batch_size
        self.seed = seed

    def _likelihood(self):
        return likelihoods.Gaussian(variance=1.0) if self.likelihood is None else self.likelihood

    def _design(self, X):
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}")
        X = as_float(X, "X", ndim_min=2)
        if X.ndim != 2:
            raise ValueError(f"X must have shape (N, D); got {X.shape}")
        return np.hstack([np.ones((X.shape[0], 1)), X]) if self.fit_intercept else X

    def fit(self, X, y):
        """Fit the posterior of the weights; returns ``self``."""
        if self.covariance not in ("full", "diag"):
            raise ValueError(f"covariance must be 'full' or 'diag'; got {self.covariance!r}")
        design = self._design(X)
        if design.shape[0] == 0:
            raise ValueError(f"X must have at least one row (data point); got shape {np.shape(X)}")
        dim = design.shape[1]
        var = float(check_positive(self.prior_var, "prior_var"))
        if self.covariance == "full":
            prior = Gaussian.from_mean_cov(np.zeros(dim), var * np.eye(dim))
        else:
            prior = DiagonalGaussian.from_mean_var(np.zeros(dim), np.full(dim, var))
        model = Model(latents={"w": prior}, factors=[GLM(self._likelihood(), design, y, on="w")])
        fit = model.fit(max_iter=self.max_iter, tol=self.tol, step=self.step,
                        batch_size=self.batch_size, seed=self.seed)
        q = fit.posterior["w"]
        self.fit_result_ = fit
        self.posterior_ = q
        mean = np.asarray(q.mean)
        self.intercept_ = float(mean[0]) if self.fit_intercept else 0.0
        self.coef_ = mean[1:] if self.fit_intercept else mean
        self.coef_cov_ = np.asarray(q.cov) if self.covariance == "full" else np.diag(q.var)
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.lower_bounds_ = fit.elbo_trace
        self.elbo_ = fit.elbo
        return self

    def _check_fitted(self):
        if not hasattr(self, "posterior_"):
            raise ValueError(f"this {type(self).__name__} is not fitted yet: call fit(X, y) first")

    def predict_latent(self, X):
        """Posterior mean and variance of ``a = x^T w`` at new inputs, each shape (M,)."""
        self._check_fitted()
        design = self._design(X)
        if design.shape[1] != self.coef_cov_.shape[0]:
            raise ValueError(f"X must have {self.coef_cov_.shape[0] - self.fit_intercept} columns; "
                             f"got {design.shape[1] - self.fit_intercept}")
        return predict_latent(self.posterior_, design)

    def predict(self, X, **per_point):
        """Posterior predictive mean of ``y`` at new inputs, shape (M,).

        Parameters
        ----------
        X : array_like, shape (M, D)
        **per_point : array_like, shape (M,) or scalar, optional
            The likelihood's per-point parameter at the new inputs, under its
            ``per_point_name`` (``exposure=`` for Poisson, ``n_trials=`` for
            BinomialLogit).  Required when the likelihood was given one value per
            training point; otherwise the likelihood's shared value is used.
        """
        mean, var = self.predict_latent(X)
        return self._predict_likelihood(mean.shape[0], per_point).predict_mean_var(mean, var)[0]

    def _predict_likelihood(self, n_rows, per_point):
        """The likelihood at ``n_rows`` new inputs, with the per-point parameter given to ``predict``."""
        likelihood = self._likelihood()
        name = likelihood.per_point_name
        unknown = sorted(set(per_point) - {name})
        if unknown:
            accepted = f"only {name!r}" if name is not None else "none"
            raise ValueError(f"predict got unexpected keyword argument(s) {unknown}; "
                             f"{type(likelihood).__name__} accepts {accepted}")
        if name not in per_point:
            if name is not None and np.ndim(getattr(likelihood, name)) > 0:
                raise ValueError(f"{name} must be given to predict, one value per row of X ({n_rows}): "
                                 f"the likelihood was fitted with a per-point {name}")
            return likelihood
        value = np.asarray(per_point[name])
        if value.ndim > 1 or (value.ndim == 1 and value.shape[0] != n_rows):
            raise ValueError(f"{name} must be a scalar or have shape ({n_rows},), one per row of X; "
                             f"got shape {value.shape}")
        return likelihood.with_per_point(per_point[name])


class BayesianLogisticRegression(BayesianGLM):
    """Bayesian logistic regression (Bernoulli-logit GLM) with ``predict`` and ``predict_proba``."""

    def __init__(self, prior_var=1.0, fit_intercept=True, covariance="full", max_iter=200,
                 tol=1e-8, step=None, batch_size=None, seed=0, n_points=None):
        super().__init__(None, prior_var, fit_intercept, covariance, max_iter, tol, step,
                         batch_size, seed)
        self.n_points = n_points

    def _likelihood(self):
        return likelihoods.BernoulliLogit(n_points=self.n_points)

    def fit(self, X, y):
        """Fit on two-class labels ``y`` of any type (``classes_`` holds them, sorted); returns ``self``."""
        self.classes_, coded = binary_labels(y)
        return super().fit(X, coded)

    def predict_proba(self, X):
        """Posterior predictive class probabilities, shape (M, 2), columns in the order of ``classes_``."""
        p1 = super().predict(X)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        """Most probable label (from ``classes_``) under the posterior predictive, shape (M,)."""
        second = self.predict_proba(X)[:, 1] > 0.5
        return self.classes_[second.astype(int)]
