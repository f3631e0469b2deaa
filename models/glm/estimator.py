"""scikit-learn estimators built on the Model API (not beside it).

``fit`` validates, builds ``Model(latents={"w": prior}, factors=[GLM(...)])``,
runs CVI and sets trailing-underscore results; ``predict`` uses the posterior
predictive of the likelihood.

``fit(X, y, sample_weight)`` weights each row's log-likelihood,
``w_i log p(y_i | x_i^T w)`` (the GLM factor's ``weights``): its site is
``w_i`` times the unweighted one, so an integer weight is the same as
repeating the row and a zero weight the same as dropping it.
"""

import numpy as np

from ...expfam import DiagonalGaussian, Gaussian
from ...expfam.checks import check_positive
from ...inference import Marginals, Model

from .. import likelihoods
from .._estimator import (BaseEstimator, ClassifierMixin, RegressorMixin, binary_targets, check_fitted, check_X,
                          check_X_y, check_fit_results, check_sample_weight, fit_options, set_fit_results)
from .._estimator_file import expect_array, expect_number
from .factor import GLM
from .predict import predict_latent


class _GLMEstimator(BaseEstimator):
    """Parameters, fit and predictions shared by the GLM estimators (see :class:`BayesianGLM`)."""

    def __init__(self, likelihood=None, prior_var=1.0, fit_intercept=True, covariance="full",
                 max_iter=200, tol=1e-8, step=None, batch_size=None, seed=0, progress=False):
        self.likelihood = likelihood
        self.prior_var = prior_var
        self.fit_intercept = fit_intercept
        self.covariance = covariance
        self.max_iter = max_iter
        self.tol = tol
        self.step = step
        self.batch_size = batch_size
        self.seed = seed
        self.progress = progress

    def _likelihood(self):
        return likelihoods.Gaussian(variance=1.0) if self.likelihood is None else self.likelihood

    def _design(self, X):
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"fit_intercept must be True or False; got {self.fit_intercept!r}")
        return np.hstack([np.ones((X.shape[0], 1)), X]) if self.fit_intercept else X

    def fit(self, X, y, sample_weight=None):
        """Fit the posterior of the weights.

        Parameters
        ----------
        X : array_like or DataFrame, shape (N, D)
        y : array_like, shape (N,)
        sample_weight : array_like, shape (N,), optional
            Non-negative weight of each row's log-likelihood (default: all 1).

        Returns
        -------
        self
        """
        X, y = check_X_y(self, X, y)
        return self._fit(X, y, check_sample_weight(sample_weight, X.shape[0]))

    def _fit(self, X, y, sample_weight):
        if self.covariance not in ("full", "diag"):
            raise ValueError(f"covariance must be 'full' or 'diag'; got {self.covariance!r}")
        design = self._design(X)
        dim = design.shape[1]
        var = float(check_positive(self.prior_var, "prior_var"))
        if self.covariance == "full":
            prior = Gaussian.from_mean_cov(np.zeros(dim), var * np.eye(dim))
        else:
            prior = DiagonalGaussian.from_mean_var(np.zeros(dim), np.full(dim, var))
        model = Model(latents={"w": prior}, factors=[GLM(self._likelihood(), design, y, on="w", weights=sample_weight)])
        fit = model.fit(step=self.step, batch_size=self.batch_size, seed=self.seed, **fit_options(self))
        self.intercept_, self.coef_, self.coef_cov_ = self._weights_summary(set_fit_results(self, fit, "w").posterior_)
        return self

    def _weights_summary(self, q):
        """``(intercept_, coef_, coef_cov_)`` of the weight posterior ``q``."""
        mean = np.asarray(q.mean)
        intercept = float(mean[0]) if self.fit_intercept else 0.0
        return intercept, mean[1:] if self.fit_intercept else mean, \
            np.asarray(q.cov) if self.covariance == "full" else np.diag(q.var)

    def _check_fitted_state(self):
        super()._check_fitted_state()
        dim = self.n_features_in_ + int(bool(self.fit_intercept))
        if isinstance(self.posterior_, Marginals) or np.shape(getattr(self.posterior_, "mean", None)) != (dim,):
            raise ValueError(f"posterior_ must be a weight posterior of dimension {dim} that predicts; got "
                             f"{self.posterior_!r}")
        expect_array(self, "coef_", (self.n_features_in_,))
        expect_array(self, "coef_cov_", (dim, dim))
        expect_number(self, "intercept_")
        check_fit_results(self)
        for name, value in zip(("intercept_", "coef_", "coef_cov_"), self._weights_summary(self.posterior_)):
            if not np.array_equal(getattr(self, name), value):
                raise ValueError(f"{name} must be what the weight posterior (posterior_) gives")

    def predict_latent(self, X):
        """Posterior mean and variance of ``a = x^T w`` at new inputs, each shape (M,)."""
        check_fitted(self, "posterior_")
        return predict_latent(self.posterior_, self._design(check_X(self, X)))

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


class BayesianGLM(RegressorMixin, _GLMEstimator):
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
    max_iter, tol, step, batch_size, seed, progress :
        Passed to :meth:`efvi.inference.Model.fit` (``progress=True`` shows a progress bar).

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
    n_features_in_ : int
    feature_names_in_ : ndarray of str, shape ``(n_features_in_,)``
        Only when ``X`` was a DataFrame with string column names.
    """


class BayesianLogisticRegression(ClassifierMixin, _GLMEstimator):
    """Bayesian logistic regression (Bernoulli-logit GLM) with ``predict`` and ``predict_proba``; binary only.

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points of the Bernoulli-logit expectations (default: the likelihood's).
    prior_var, fit_intercept, covariance, max_iter, tol, step, batch_size, seed, progress :
        As :class:`BayesianGLM`.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
        The two labels, sorted; the second is coded 1.
    coef_, intercept_, coef_cov_, posterior_, fit_result_, n_iter_, converged_, lower_bounds_,
    n_features_in_, feature_names_in_ :
        As :class:`BayesianGLM`.
    """

    def __init__(self, prior_var=1.0, fit_intercept=True, covariance="full", max_iter=200,
                 tol=1e-8, step=None, batch_size=None, seed=0, n_points=None, progress=False):
        self.prior_var = prior_var
        self.fit_intercept = fit_intercept
        self.covariance = covariance
        self.max_iter = max_iter
        self.tol = tol
        self.step = step
        self.batch_size = batch_size
        self.seed = seed
        self.n_points = n_points
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _likelihood(self):
        return likelihoods.BernoulliLogit(n_points=self.n_points)

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_array(self, "classes_", (2,), kind="OUbiuf")

    def fit(self, X, y, sample_weight=None):
        """Fit on two-class labels ``y`` of any type (``classes_`` holds them, sorted); returns ``self``.

        ``sample_weight`` (N,), optional, weights each row's log-likelihood (default: all 1).
        """
        X, y = check_X_y(self, X, y, y_numeric=False)
        self.classes_, coded = binary_targets(y)
        return self._fit(X, coded, check_sample_weight(sample_weight, X.shape[0]))

    def predict_proba(self, X):
        """Posterior predictive class probabilities, shape (M, 2), columns in the order of ``classes_``."""
        p1 = super().predict(X)
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X):
        """Most probable label (from ``classes_``) under the posterior predictive, shape (M,)."""
        second = self.predict_proba(X)[:, 1] > 0.5
        return self.classes_[second.astype(int)]
