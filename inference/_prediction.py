"""Prediction at new inputs: the latent's Gaussian marginals and joint draws, and the posterior predictive of
new observations through a likelihood (what :meth:`FitResult.predict_latent` and :meth:`FitResult.predict`
return).
"""

import numpy as np

from ..expfam import ExponentialFamily

# Filled by the models at import (the engine never imports them): a posterior type -> how to predict its latent
# at new inputs.
_LATENT_PREDICTORS = {}


def register_latent_predictor(posterior_types, predict, sample):
    """Say how posteriors of ``posterior_types`` predict their latent at new inputs.

    For posteriors without a ``predict(inputs, full_cov)`` method of their own
    (e.g. a GLM's weight posterior, whose latent is ``a = x^T w``).

    Parameters
    ----------
    posterior_types : type or tuple of types
    predict : callable
        ``predict(posterior, inputs) -> (mean, var)``, each of shape (M,).
    sample : callable
        ``sample(posterior, inputs, n, rng) -> ndarray, shape (n, M)``: joint draws of the latent.
    """
    for kind in posterior_types if isinstance(posterior_types, tuple) else (posterior_types,):
        _LATENT_PREDICTORS[kind] = (predict, sample)


def can_predict(posterior):
    """Whether a posterior predicts its latent at new inputs (a registered type, or a ``predict`` method)."""
    return isinstance(posterior, tuple(_LATENT_PREDICTORS)) or (
        not isinstance(posterior, ExponentialFamily) and callable(getattr(posterior, "predict", None)))


def latent_prediction(posterior, inputs):
    """The :class:`LatentPrediction` of ``posterior`` at ``inputs`` (a registered predictor, else its ``predict``)."""
    for kind, (predict, sample) in _LATENT_PREDICTORS.items():
        if isinstance(posterior, kind):
            mean, var = predict(posterior, inputs)
            return LatentPrediction(mean, var, lambda n, rng: sample(posterior, inputs, n, rng))
    mean, var = posterior.predict(inputs)
    return LatentPrediction(mean, var, lambda n, rng: gaussian_draws(*posterior.predict(inputs, full_cov=True), n, rng))


def gaussian_draws(mean, cov, n, rng):
    """``n`` joint draws of ``N(mean, cov)`` for a positive semi-definite ``cov``.

    The square root comes from the eigendecomposition with negative
    eigenvalues (rounding) clipped at zero, so singular covariances, such as
    a posterior at repeated inputs, are sampled too.

    Parameters
    ----------
    mean : ndarray, shape (M,)
    cov : ndarray, shape (M, M)
    n : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (n, M)
    """
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    root = vectors * np.sqrt(np.maximum(values, 0.0))
    return mean + rng.standard_normal((n, mean.shape[0])) @ root.T


def _check_level(level):
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (int, float, np.floating, np.integer)) \
            or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be a number in (0, 1), e.g. 0.9 for a central 90% interval; got {level!r}")
    return float(level)


def _check_draws(n, seed):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer (the number of draws); got {n!r}")
    if isinstance(seed, np.random.Generator):
        return int(n), seed
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer))
                             or seed < 0):
        raise ValueError(f"seed must be None, a non-negative integer or a numpy Generator; got {seed!r}")
    return int(n), np.random.default_rng(seed)


class LatentPrediction:
    """The posterior of the latent at new inputs: Gaussian marginals, exact intervals and joint draws.

    What :meth:`FitResult.predict_latent` returns.

    Attributes
    ----------
    mean, var : ndarray, shape (M,)
        Posterior means and variances of the latent (``f(x)`` of a GP or Markov
        GP, ``H x_t`` of an LDS, ``x^T w`` of a GLM) at the new inputs.
    """

    def __init__(self, mean, var, draw):
        self.mean, self.var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
        self._draw = draw

    @property
    def std(self):
        """ndarray, shape (M,): posterior standard deviations."""
        return np.sqrt(self.var)

    def interval(self, level=0.9):
        """Central credible interval of each marginal; exact (Gaussian quantiles).

        Parameters
        ----------
        level : float in (0, 1)

        Returns
        -------
        lower, upper : ndarray, shape (M,)
        """
        from scipy.special import ndtri

        half = ndtri(0.5 + 0.5 * _check_level(level)) * self.std
        return self.mean - half, self.mean + half

    def sample(self, n, seed=None):
        """Joint posterior draws of the latent at the new inputs.

        Parameters
        ----------
        n : int
        seed : None, int or numpy.random.Generator

        Returns
        -------
        ndarray, shape (n, M)
        """
        n, rng = _check_draws(n, seed)
        return self._draw(n, rng)

    def __repr__(self):
        return f"LatentPrediction(n={self.mean.shape[0]})"


class Prediction:
    """Posterior-predictive marginals of new observations ``y`` through a likelihood.

    What :meth:`FitResult.predict` returns.

    Attributes
    ----------
    mean, var : ndarray, shape (M,)
        Predictive mean and variance of ``y`` (``likelihood.predict_mean_var``:
        closed forms or Gauss-Hermite quadrature over the latent).
    latent : LatentPrediction
        The latent at the same inputs.
    likelihood : efvi.models.likelihoods.Likelihood
    """

    def __init__(self, latent, likelihood):
        self.latent, self.likelihood = latent, likelihood
        self.mean, self.var = likelihood.predict_mean_var(latent.mean, latent.var)

    @property
    def kind(self):
        """How :meth:`interval` and :meth:`sample` treat ``y``: ``"gaussian"``, ``"discrete"`` or ``"other"``."""
        if getattr(self.likelihood, "conjugate", False):
            return "gaussian"
        size = self.mean.shape[0]
        if _accepts(self.likelihood, np.zeros(size)) and not _accepts(self.likelihood, np.full(size, 0.5)):
            return "discrete"
        return "other"

    def log_density(self, y):
        """Log predictive density of observations at the new inputs, shape (M,) (NaN where ``y`` is NaN)."""
        return self.likelihood.predict_log_density(self.latent.mean, self.latent.var, y)

    def interval(self, level=0.9):
        """Central predictive interval of each new observation.

        Exact for a Gaussian likelihood (``y ~ N(mean, var)``) and for
        discrete observations (the predictive CDF summed from
        ``likelihood.predict_log_density`` at 0, 1, 2, ..., which integrates
        over the latent by Gauss-Hermite quadrature; the interval is
        ``[q_lower, q_upper]`` with ``q`` the smallest count whose CDF reaches
        ``(1 -+ level) / 2``).  Other likelihoods need a ``sample(latent, rng)``
        method; their interval is then the Monte Carlo quantiles of 20,000
        posterior-predictive draws (seed 0).

        Parameters
        ----------
        level : float in (0, 1)

        Returns
        -------
        lower, upper : ndarray, shape (M,)
        """
        level = _check_level(level)
        probabilities = (0.5 - 0.5 * level, 0.5 + 0.5 * level)
        kind = self.kind
        if kind == "gaussian":
            from scipy.special import ndtri

            half = ndtri(probabilities[1]) * np.sqrt(self.var)
            return self.mean - half, self.mean + half
        if kind == "discrete":
            return _discrete_quantiles(self.likelihood, self.latent.mean, self.latent.var, probabilities)
        draws = self.sample(20_000, seed=0)
        lower, upper = np.quantile(draws, probabilities, axis=0)
        return lower, upper

    def sample(self, n, seed=None):
        """Posterior-predictive draws: a joint draw of the latent, then ``y_i | a_i`` independently.

        ``y | a`` is drawn by the likelihood's ``sample(latent, rng)`` (latent of
        shape (n, M); every efvi likelihood but ``Custom`` has one); for a
        discrete likelihood without one (a ``Custom`` count model) by inverting
        the CDF of ``likelihood.log_density`` at 0, 1, 2, ...

        Parameters
        ----------
        n : int
        seed : None, int or numpy.random.Generator

        Returns
        -------
        ndarray, shape (n, M)

        Raises
        ------
        NotImplementedError
            For a continuous likelihood without a sampler (a ``Custom`` log density).
        """
        n, rng = _check_draws(n, seed)
        latent = self.latent.sample(n, rng)
        sampler = getattr(self.likelihood, "sample", None)
        if callable(sampler):
            try:
                return np.asarray(sampler(latent, rng), dtype=float)
            except NotImplementedError:
                pass
        if self.kind == "discrete":
            return _discrete_draws(self.likelihood, latent, rng.uniform(size=latent.shape))
        raise NotImplementedError(
            f"posterior-predictive draws of y need {type(self.likelihood).__name__} to draw y given the latent "
            "(a sample(latent, rng) method; efvi inverts the CDF itself only for discrete likelihoods); "
            "the predictive mean and var are available")

    def __repr__(self):
        return f"Prediction(n={self.mean.shape[0]}, likelihood={self.likelihood!r})"


def _accepts(likelihood, y):
    try:
        likelihood.validate_y(y)
    except ValueError:
        return False
    return True


_MAX_COUNT = 10 ** 6


def _discrete_quantiles(likelihood, mean, var, probabilities):
    """Smallest counts whose predictive CDF reaches each probability, per point."""
    size = mean.shape[0]
    cdf = np.zeros(size)
    found = [np.full(size, np.nan) for _ in probabilities]
    for k in range(_MAX_COUNT):
        values = np.full(size, float(k))
        pmf = np.zeros(size)
        inside = _accepts_each(likelihood, values)
        if inside.any():
            pmf[inside] = np.exp(likelihood.predict_log_density(mean, var, np.where(inside, values, np.nan))[inside])
        cdf += pmf
        for q, out in zip(probabilities, found):
            out[np.isnan(out) & (cdf >= q * (1 - 1e-12))] = k
        if not np.isnan(found[-1]).any():
            return found[0], found[1]
    raise RuntimeError(f"the predictive CDF did not reach {probabilities[-1]} within {_MAX_COUNT} counts")


def _accepts_each(likelihood, values):
    """Which entries of ``values`` lie in the likelihood's support (per-point parameters respected)."""
    if _accepts(likelihood, values):
        return np.ones(values.shape[0], dtype=bool)
    inside = np.zeros(values.shape[0], dtype=bool)
    for i in range(values.shape[0]):
        probe = np.full(values.shape[0], np.nan)
        probe[i] = values[i]
        inside[i] = _accepts(likelihood, probe)
    return inside


def _discrete_draws(likelihood, latent, uniforms):
    """Inverse-CDF draws of counts ``y | a`` for latent draws of shape (n, M)."""
    draws = np.full(latent.shape, np.nan)
    cdf = np.zeros(latent.shape)
    for k in range(_MAX_COUNT):
        with np.errstate(invalid="ignore"):
            pmf = np.nan_to_num(np.exp(likelihood.log_density(latent, np.full(latent.shape[-1], float(k)))), nan=0.0)
        cdf += pmf
        draws[np.isnan(draws) & (cdf >= uniforms * (1 - 1e-12))] = k
        if not np.isnan(draws).any():
            return draws
    raise RuntimeError(f"a draw of y exceeded {_MAX_COUNT} counts")
