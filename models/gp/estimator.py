"""scikit-learn GP regressor and classifier built on the Model API.

``fit`` builds ``Model(latents={"f": GP(kernel, X)}, factors=[Observe(likelihood, y, on="f")])``
and runs CVI, learning the kernel hyperparameters by default; ``predict``
uses the posterior predictive at new inputs.  The default kernel is
``Matern32()`` (its lengthscale and variance learned).

With ``n_inducing`` (or ``inducing``) the prior is a sparse GP,
:class:`~efvi.models.gp.SparseGP`, at ``M`` inducing inputs: ``O(N M^2)`` per
iteration instead of ``O(N^3)``.  ``n_inducing=M`` takes the inducing inputs
from the training inputs: the distinct training inputs themselves when there
are at most ``M`` of them (the sparse GP is then the dense one), else the
centres of a k-means clustering of them (:func:`choose_inducing`: scikit-learn's
``KMeans``, one k-means++ run with ``random_state=0``, so the same data give
the same inputs).  k-means centres rather than a random subset of the data:
they cover the inputs where the data are dense and never coincide, so ``K_zz``
stays well conditioned, and for the same ``M`` they give a higher ELBO (on
3,000 points in 2-D with ``M = 50``, -1291.5 against -1315.0 on average over
five random subsets; the initialisation of Hensman et al., 2015).

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

A sparse GP cannot take the noise into its kernel: a white term has no
covariance with the inducing values, so it would enter only the conditional
variance of ``f_i`` given them, where the bound penalises it instead of
treating it as noise.  There the noise is the likelihood's own variance
``s^2 + exp(w)``, learned with the kernel (and the inducing inputs) by L-BFGS
on Titsias's (2009) collapsed bound, which a Gaussian likelihood's CVI fit
reaches in one step (:mod:`efvi.models.gp._sparse_regression`).
"""

import numpy as np

from ...expfam.checks import check_integer
from ...inference import Model

from .. import likelihoods
from .._estimator import (BaseEstimator, ClassifierMixin, RegressorMixin, binary_targets, check_fitted, check_X,
                          check_X_y, check_counts, check_fit_results, fit_options, set_fit_results)
from .._estimator_file import expect_array, expect_number
from ..observe import Observe
from ._sparse_regression import fit_collapsed
from .kernels import Kernel, Matern32, Sum, White
from .kernels._validation import as_inputs
from .prior import GP
from .sparse import SparseGP, SparseGPPosterior

NOISE_JITTER = 1e-6
"""Variance of the likelihood under a learned noise, relative to ``var(y)`` (the floor of ``noise_variance_``)."""


class _GPEstimator(BaseEstimator):
    """Kernel, fitting and latent predictions shared by the GP estimators."""

    def __init__(self, kernel=None, learn_hyperparameters=True, max_iter=200, tol=1e-9, progress=False,
                 n_inducing=None, inducing=None, learn_inducing=False):
        self.kernel = kernel
        self.learn_hyperparameters = learn_hyperparameters
        self.max_iter = max_iter
        self.tol = tol
        self.progress = progress
        self.n_inducing = n_inducing
        self.inducing = inducing
        self.learn_inducing = learn_inducing

    def _sparse(self):
        """Whether the prior is a sparse GP (``n_inducing`` or ``inducing`` given)."""
        return self.n_inducing is not None or self.inducing is not None

    def _inducing_inputs(self, X):
        """The starting inducing inputs, shape (M, D), for the training inputs ``X``; None for a dense GP."""
        if self.n_inducing is not None and self.inducing is not None:
            raise ValueError(f"give n_inducing or inducing, not both; got n_inducing={self.n_inducing!r} and "
                             f"inducing of shape {np.shape(self.inducing)}")
        if not self._sparse():
            if self.learn_inducing:
                raise ValueError("learn_inducing=True needs inducing inputs: set n_inducing (a number of them) "
                                 "or inducing (an array); got both None")
            return None
        if self.inducing is not None:
            inducing = as_inputs(self.inducing, "inducing", X.shape[1])
            if inducing.shape[0] == 0:
                raise ValueError(f"inducing must hold at least one inducing input; got shape {inducing.shape}")
            return inducing
        return choose_inducing(X, check_integer(self.n_inducing, "n_inducing", minimum=1, suffix=" or None"))

    def _prior(self, X, kernel):
        """The dense GP, or the sparse GP at :meth:`_inducing_inputs`, on the training inputs ``X``."""
        inducing = self._inducing_inputs(X)
        if inducing is None:
            return GP(kernel, X, learn_hyperparameters=self.learn_hyperparameters)
        return SparseGP(kernel, X, inducing, learn_hyperparameters=self.learn_hyperparameters,
                        learn_inducing=self.learn_inducing)

    def _kernel(self):
        if self.kernel is None:
            return Matern32()
        if not isinstance(self.kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel or None; got "
                             f"{type(self.kernel).__name__}")
        return self.kernel

    def _fit(self, X, y, kernel, likelihood):
        model = Model(latents={"f": self._prior(X, kernel)}, factors=[Observe(likelihood, y, on="f")])
        fit = model.fit(**fit_options(self))
        self.kernel_ = fit.priors["f"].kernel if "f" in fit.priors else kernel
        return self._set_results(fit)

    def _set_results(self, fit):
        set_fit_results(self, fit, "f")
        vars(self).pop("inducing_", None)
        if self._sparse():
            self.inducing_ = self.posterior_.inducing_inputs.copy()
        return self

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
        if self._sparse() != isinstance(self.posterior_, SparseGPPosterior):
            raise ValueError(f"posterior_ must be a {'sparse' if self._sparse() else 'dense'} GP posterior, as "
                             f"n_inducing={self.n_inducing!r} and inducing "
                             f"{'None' if self.inducing is None else 'given'} say; got {self.posterior_!r}")
        if self._sparse():
            expect_array(self, "inducing_", (self.posterior_.inducing_inputs.shape[0], self.n_features_in_))
        self._check_results()

    def _check_results(self):
        """The restored counters and ELBO trace against the fit (:func:`check_fit_results`)."""
        check_fit_results(self)


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
        here the log marginal likelihood (with inducing inputs, Titsias's (2009)
        collapsed bound on it).
    max_iter, tol, progress :
        Passed to :meth:`efvi.inference.Model.fit`.  With inducing inputs and a
        learned noise, ``max_iter`` bounds the evaluations of the collapsed
        bound (one exact CVI step each).
    n_inducing : int, optional
        Use a sparse GP with this many inducing inputs ``M``, taken from the
        training inputs: the distinct training inputs when there are at most
        ``M`` (the dense GP), else k-means centres of them (scikit-learn's
        ``KMeans``, ``random_state=0``).  None (and ``inducing`` None): the dense GP.
    inducing : array_like, shape (M, D), optional
        Use a sparse GP with these inducing inputs (instead of ``n_inducing``).
    learn_inducing : bool
        Learn the inducing inputs by maximising the ELBO (needs ``n_inducing`` or ``inducing``).

    Attributes
    ----------
    kernel_ : Kernel
        The signal kernel with the learned hyperparameters.
    noise_variance_ : float
        The noise variance used (learned or fixed).
    posterior_ : efvi.models.gp.GPPosterior or efvi.models.gp.SparseGPPosterior
        Posterior of ``f`` (of the dense GP: the signal plus the white noise term when the noise is learned).
    inducing_ : ndarray, shape (M, D)
        The inducing inputs used (learned ones with ``learn_inducing``); sparse GPs only.
    fit_result_, n_iter_, converged_, lower_bounds_, elbo_ :
        The fit, its iterations, convergence flag, ELBO trace and final ELBO.  With inducing
        inputs and a learned noise, ``fit_result_`` is the fit at the learned values, and
        ``n_iter_`` and ``lower_bounds_`` count and trace the evaluations of the bound.
    n_features_in_, feature_names_in_ :
        Number (and DataFrame names) of the input columns.

    Examples
    --------
    Fix the noise at a known variance instead of learning it:

    >>> from efvi.models import gp
    >>> model = gp.GPRegressor(noise_variance=0.09, learn_noise=False)

    Scale to many points with 100 inducing inputs (k-means centres of ``X``):

    >>> model = gp.GPRegressor(n_inducing=100)
    """

    def __init__(self, kernel=None, noise_variance=1.0, learn_noise=True, learn_hyperparameters=True,
                 max_iter=200, tol=1e-9, progress=False, n_inducing=None, inducing=None, learn_inducing=False):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol, progress, n_inducing, inducing,
                         learn_inducing)
        self.noise_variance = noise_variance
        self.learn_noise = learn_noise

    def _learns_noise(self):
        return bool(self.learn_noise) and bool(self.learn_hyperparameters)

    def _white_noise(self):
        """Whether the noise is learned as a ``White`` term of a dense GP's kernel."""
        return self._learns_noise() and not self._sparse()

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
        vars(self).pop("white_variance_", None)
        if not self._learns_noise():
            self._fit(X, y, kernel, likelihoods.Gaussian(variance=noise))
            self.noise_variance_ = noise
            return self
        jitter = NOISE_JITTER * (float(np.var(y)) if np.var(y) > 0 else 1.0)
        if self._sparse():
            learned = fit_collapsed(kernel, X, y, self._inducing_inputs(X), bool(self.learn_inducing), noise,
                                    jitter, fit_options(self), progress=bool(self.progress))
            self.kernel_, self.noise_variance_ = learned.kernel, learned.noise_variance
            self._set_results(learned.fit)
            self.n_iter_, self.converged_, self.lower_bounds_ = len(learned.bounds), learned.converged, learned.bounds
            return self
        self._fit(X, y, kernel + White(variance=noise), likelihoods.Gaussian(variance=jitter))
        *signal, white = self.kernel_.parts
        self.kernel_ = signal[0] if len(signal) == 1 else Sum(*signal)
        self.white_variance_ = float(np.exp(white.log_params[0]))
        self.noise_variance_ = self.white_variance_ + jitter
        return self

    def _check_fitted_state(self):
        super()._check_fitted_state()
        expect_number(self, "noise_variance_", positive=True)
        if self._white_noise():
            expect_number(self, "white_variance_", positive=True)

    def _check_results(self):
        if not (self._sparse() and self._learns_noise()):
            return super()._check_results()
        # the collapsed bound's search: n_iter_ and lower_bounds_ count and trace its evaluations
        check_counts(self, n_iter_minimum=1)
        bounds = expect_array(self, "lower_bounds_", (self.n_iter_,))
        if not np.all(np.isfinite(bounds)) or self.elbo_ != float(self.fit_result_.elbo):
            raise ValueError(f"lower_bounds_ must be finite and elbo_ the fit's {float(self.fit_result_.elbo)!r}; "
                             f"got elbo_ = {self.elbo_!r}")

    def predict_latent(self, X):
        """Posterior mean and variance of the noise-free function at new inputs, each shape (M,)."""
        mean, var = super().predict_latent(X)
        if self._white_noise():
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
    n_inducing, inducing, learn_inducing :
        A sparse GP at inducing inputs, as :class:`GPRegressor`.

    Attributes
    ----------
    classes_ : ndarray, shape (2,)
    kernel_, posterior_, inducing_, fit_result_, n_iter_, converged_, lower_bounds_, elbo_, n_features_in_,
    feature_names_in_ :
        As :class:`GPRegressor`.

    Examples
    --------
    >>> from efvi.models import gp
    >>> model = gp.GPClassifier(n_inducing=100)          # a sparse GP at 100 k-means centres of X
    """

    def __init__(self, kernel=None, link="logit", learn_hyperparameters=True, max_iter=200, tol=1e-9,
                 progress=False, n_inducing=None, inducing=None, learn_inducing=False):
        super().__init__(kernel, learn_hyperparameters, max_iter, tol, progress, n_inducing, inducing,
                         learn_inducing)
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


def choose_inducing(X, n_inducing):
    """``n_inducing`` inducing inputs taken from the training inputs ``X``, shape (N, D).

    The distinct rows of ``X`` (in their order in ``X``) when there are at most
    ``n_inducing``, else the centres of a k-means clustering of the distinct rows,
    each weighted by how often it occurs in ``X`` (scikit-learn's ``KMeans``: one
    k-means++ run, ``random_state=0``).  Above ``KMEANS_POINTS_PER_CENTRE *
    n_inducing`` distinct rows, k-means runs on that many of them drawn without
    replacement by a generator seeded with 0.  The same ``X`` always gives the
    same inducing inputs.

    Returns
    -------
    ndarray, shape (M, D), ``M <= n_inducing``
    """
    _, first, counts = np.unique(X, axis=0, return_index=True, return_counts=True)
    if first.shape[0] <= n_inducing:
        return np.ascontiguousarray(X[np.sort(first)])
    most = KMEANS_POINTS_PER_CENTRE * n_inducing
    if first.shape[0] > most:
        chosen = np.sort(np.random.default_rng(0).choice(first.shape[0], size=most, replace=False))
        first, counts = first[chosen], counts[chosen]
    from sklearn.cluster import KMeans

    clusters = KMeans(n_clusters=n_inducing, n_init=1, random_state=0).fit(X[first], sample_weight=counts)
    return np.ascontiguousarray(clusters.cluster_centers_)


KMEANS_POINTS_PER_CENTRE = 50
"""k-means runs on at most this many distinct training inputs per inducing input (a seeded random subset)."""
