r"""A Bayesian Gaussian mixture estimator on the VMP engine.

The model is that of scikit-learn's ``BayesianGaussianMixture`` with a
Dirichlet prior on the weights:

.. math::

    \pi \sim \mathrm{Dir}(\alpha_0 1_K), \qquad
    (\mu_k, \Lambda_k) \sim \mathrm{NW}(m_0, \beta_0, \nu_0, W_0), \qquad
    z_i \mid \pi \sim \mathrm{Cat}(\pi), \qquad
    x_i \mid z_i = k \sim N(\mu_k, \Lambda_k^{-1}),

fitted by :class:`efvi.inference.Model` with the blocks ``weights``
(Dirichlet), ``components`` (Normal-Wishart) and ``z`` (Categorical) and the
factors :class:`~efvi.inference.CategoricalDirichlet` and
:class:`~efvi.inference.GaussianMixture`.  The assignments start from k-means
labels; one component is the closed-form conjugate update.  The estimator keeps
the posterior as arrays (not the fit), so that it pickles.  ``score_samples`` is the log posterior predictive density, a mixture
of Student-t densities with weights :math:`\alpha_k / \sum_j \alpha_j`.
"""

import numpy as np
from scipy.special import digamma, logsumexp
from scipy.stats import multivariate_t

from ...expfam import Categorical, Dirichlet, NormalWishart
from ...expfam.checks import check_integer, check_positive
from ...inference import CategoricalDirichlet, GaussianMixture, Model

from .._estimator import BaseEstimator, DensityMixin, check_counts, check_fitted, check_X, fit_options
from .._estimator_file import expect_array

_LOG_2PI = np.log(2.0 * np.pi)

DERIVED = {"weights_": "weight_concentration_ / weight_concentration_.sum()",
           "precisions_": "degrees_of_freedom_ * scale_, the expected precisions",
           "covariances_": "the inverses of precisions_"}
"""How the fitted attributes that repeat the posterior are derived from it (checked when a file is loaded)."""


def _posterior_attributes(concentration, components):
    """The fitted attributes that describe the posterior: Dirichlet ``concentration`` (K,), NormalWishart components."""
    concentration = np.asarray(concentration, dtype=float)
    precisions = np.asarray(components.expected_precision, dtype=float)
    return {"weight_concentration_": concentration, "weights_": concentration / concentration.sum(),
            "means_": np.asarray(components.mean, dtype=float), "mean_precision_": np.asarray(components.beta, float),
            "degrees_of_freedom_": np.asarray(components.df, dtype=float),
            "scale_": np.asarray(components.scale, dtype=float), "precisions_": precisions,
            "covariances_": np.linalg.inv(precisions)}


class BayesianGaussianMixture(DensityMixin, BaseEstimator):
    """Variational Bayesian Gaussian mixture with full covariances, fitted by VMP.

    Parameters
    ----------
    n_components : int
        Number of components K (an upper bound: unused ones get weights near zero).
    weight_concentration_prior : float, optional
        Dirichlet concentration of each weight (default ``1 / n_components``).
    mean_precision_prior : float
        ``beta_0``: the prior precision of the means, relative to the component precision.
    mean_prior : array_like, shape (D,), optional
        ``m_0`` (default: the mean of ``X``).
    degrees_of_freedom_prior : float, optional
        ``nu_0 > D - 1`` (default ``D``).
    covariance_prior : array_like, shape (D, D), optional
        Prior covariance, the inverse of the Wishart scale ``W_0`` (default: the covariance of ``X``).
    reg_covar : float
        Added to the diagonal of the default covariance prior (keeps it positive definite).
    max_iter, tol, progress :
        Passed to :meth:`efvi.inference.Model.fit`.
    seed : int
        Seeds the k-means start and the fit.

    Attributes
    ----------
    weights_ : ndarray, shape (K,)
        Posterior mean weights.
    weight_concentration_ : ndarray, shape (K,)
        Posterior Dirichlet concentrations.
    means_ : ndarray, shape (K, D)
        Posterior mean of each component mean.
    precisions_ : ndarray, shape (K, D, D)
        Posterior mean of each component precision, ``nu_k W_k``.
    covariances_ : ndarray, shape (K, D, D)
        Inverses of ``precisions_``.
    mean_precision_, degrees_of_freedom_ : ndarray, shape (K,)
        Posterior ``beta_k`` and ``nu_k``.
    scale_ : ndarray, shape (K, D, D)
        Posterior Wishart scales ``W_k``.
    n_iter_, converged_, lower_bounds_, lower_bound_ :
        Iterations, convergence flag, ELBO trace and final ELBO.
    n_features_in_, feature_names_in_ :
        Number (and DataFrame names) of the input columns.
    """

    def __init__(self, n_components=1, weight_concentration_prior=None, mean_precision_prior=1.0, mean_prior=None,
                 degrees_of_freedom_prior=None, covariance_prior=None, reg_covar=1e-6, max_iter=200, tol=1e-8,
                 seed=0, progress=False):
        self.n_components = n_components
        self.weight_concentration_prior = weight_concentration_prior
        self.mean_precision_prior = mean_precision_prior
        self.mean_prior = mean_prior
        self.degrees_of_freedom_prior = degrees_of_freedom_prior
        self.covariance_prior = covariance_prior
        self.reg_covar = reg_covar
        self.max_iter = max_iter
        self.tol = tol
        self.seed = seed
        self.progress = progress

    def _priors(self, X):
        n, dim = X.shape
        k = check_integer(self.n_components, "n_components", minimum=1)
        if n < k:
            raise ValueError(f"X must have at least n_components={k} samples; got n_samples={n}")
        alpha = 1.0 / k if self.weight_concentration_prior is None else self.weight_concentration_prior
        alpha = float(check_positive(alpha, "weight_concentration_prior"))
        beta = float(check_positive(self.mean_precision_prior, "mean_precision_prior"))
        mean0 = X.mean(axis=0) if self.mean_prior is None else np.asarray(self.mean_prior, dtype=float)
        if mean0.shape != (dim,):
            raise ValueError(f"mean_prior must have shape ({dim},); got {mean0.shape}")
        df = float(dim if self.degrees_of_freedom_prior is None else self.degrees_of_freedom_prior)
        if not df > dim - 1:
            raise ValueError(f"degrees_of_freedom_prior must exceed n_features - 1 = {dim - 1}; got {df}")
        if self.covariance_prior is None:
            cov0 = np.atleast_2d(np.cov(X.T, bias=True)) + float(self.reg_covar) * np.eye(dim)
        else:
            cov0 = np.asarray(self.covariance_prior, dtype=float)
            if cov0.shape != (dim, dim):
                raise ValueError(f"covariance_prior must have shape ({dim}, {dim}); got {cov0.shape}")
        weights = {"weights": Dirichlet(np.full(k, alpha))} if k > 1 else {}   # one component: no weights
        return {**weights,
                "components": NormalWishart(np.tile(mean0, (k, 1)), np.full(k, beta), np.full(k, df),
                                            np.tile(np.linalg.inv(cov0), (k, 1, 1)))}

    def _start(self, X, k):
        """Responsibilities from k-means labels, smoothed so that every class has positive probability."""
        from sklearn.cluster import KMeans

        labels = KMeans(n_clusters=k, n_init=1, random_state=self.seed).fit(X).labels_
        return 0.9 * np.eye(k)[labels] + 0.1 / k

    def fit(self, X, y=None):
        """Fit the posterior of the weights, the components and the assignments.

        Parameters
        ----------
        X : array_like or DataFrame, shape (N, D)
        y : ignored

        Returns
        -------
        self
        """
        X = check_X(self, X, reset=True)
        latents = self._priors(X)
        k = latents["components"].batch_shape[0]
        if k == 1:
            return self._fit_one(X, latents["components"])
        latents["z"] = Categorical(self._start(X, k))
        model = Model(latents, [CategoricalDirichlet(on="weights", assignments="z"),
                                GaussianMixture(X, assignments="z", components="components")])
        fit = model.fit(seed=self.seed, **fit_options(self))
        self._set_posterior(fit.posterior["weights"].concentration, fit.posterior["components"])
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        self.lower_bounds_ = fit.elbo_trace
        self.lower_bound_ = fit.elbo
        return self

    def _fit_one(self, X, prior):
        """One component: the conjugate update in closed form, and the ELBO is the exact log evidence."""
        n, dim = X.shape
        stats = (X.sum(axis=0)[None], np.array([n], float), (X.T @ X)[None], np.array([n], float))
        natural = tuple(p + s for p, s in zip(prior.natural, stats))
        evidence = float(np.sum(NormalWishart.log_partition(natural) - NormalWishart.log_partition(prior.natural))
                         - 0.5 * n * dim * _LOG_2PI)
        concentration = 1.0 if self.weight_concentration_prior is None else self.weight_concentration_prior
        self._set_posterior(np.array([concentration + n], float), NormalWishart.from_valid_natural(natural))
        self.n_iter_, self.converged_ = 1, True
        self.lower_bounds_, self.lower_bound_ = np.array([evidence]), evidence
        return self

    def _set_posterior(self, concentration, components):
        # arrays only (no family objects), so that a fitted estimator pickles and copies
        for name, value in _posterior_attributes(concentration, components).items():
            setattr(self, name, value)

    def _check_fitted_state(self):
        super()._check_fitted_state()
        k, dim = self.n_components, self.n_features_in_
        for name in ("weights_", "weight_concentration_", "mean_precision_", "degrees_of_freedom_"):
            expect_array(self, name, (k,))
        expect_array(self, "means_", (k, dim))
        for name in ("precisions_", "covariances_", "scale_"):
            expect_array(self, name, (k, dim, dim))
        bounds = expect_array(self, "lower_bounds_", (None,))
        check_counts(self, n_iter_minimum=1)
        if bounds.shape[0] < 1 or self.lower_bound_ != bounds[-1]:
            raise ValueError(f"lower_bound_ must be the last of lower_bounds_; got {self.lower_bound_!r}")
        if not np.all(self.weight_concentration_ > 0):
            raise ValueError(f"weight_concentration_ must be positive (a Dirichlet's); got {self.weight_concentration_}")
        try:        # the components' family checks beta > 0, df > D - 1 and a symmetric positive definite scale
            components = NormalWishart(self.means_, self.mean_precision_, self.degrees_of_freedom_, self.scale_)
        except ValueError as err:
            raise ValueError(f"means_, mean_precision_, degrees_of_freedom_ and scale_ must describe Normal-Wishart "
                             f"components ({err})") from None
        for name, value in _posterior_attributes(self.weight_concentration_, components).items():
            if not np.allclose(getattr(self, name), value, rtol=1e-12, atol=0.0):
                raise ValueError(f"{name} must be what the components give ({DERIVED.get(name, 'their own parameters')})")

    def _components(self):
        check_fitted(self, "weights_")
        return NormalWishart(self.means_, self.mean_precision_, self.degrees_of_freedom_, self.scale_)

    def _log_responsibilities(self, X):
        components = self._components()
        X = check_X(self, X)
        expected_log_weight = digamma(self.weight_concentration_) - digamma(self.weight_concentration_.sum())
        expected_log_density = 0.5 * (components.expected_logdet_precision - X.shape[1] * _LOG_2PI
                                      - components.expected_mahalanobis(X))
        log_resp = expected_log_weight + expected_log_density
        return log_resp - logsumexp(log_resp, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Posterior probabilities of each component for new points, shape (M, K)."""
        return np.exp(self._log_responsibilities(X))

    def predict(self, X):
        """The most probable component of each point, shape (M,)."""
        return np.argmax(self._log_responsibilities(X), axis=1)

    def fit_predict(self, X, y=None):
        """Fit, then the most probable component of each training point, shape (N,)."""
        return self.fit(X).predict(X)

    def score_samples(self, X):
        """Log posterior predictive density of each point (a mixture of Student-t densities), shape (M,)."""
        components = self._components()
        X = check_X(self, X)
        dim = X.shape[1]
        dof = components.df - dim + 1.0
        scale_factor = (components.beta + 1.0) / (components.beta * dof)
        log_terms = [np.log(w) + multivariate_t(loc=m, shape=c * np.linalg.inv(W), df=v).logpdf(X).reshape(-1)
                     for w, m, c, W, v in zip(self.weights_, self.means_, scale_factor, components.scale, dof)]
        return logsumexp(np.stack(log_terms, axis=1), axis=1)

    def score(self, X, y=None):
        """Mean log posterior predictive density of the points."""
        return float(np.mean(self.score_samples(X)))
