"""Test cases for the likelihood contract tests: one entry per likelihood class.

``test_contract.py`` is parametrised over every likelihood class exported by
``efvi.models.likelihoods`` and fails for any class without an entry here, so a new
likelihood cannot go untested.  Each case supplies independent references from
``scipy.stats`` (log densities, sampling, conditional moments).
"""

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import special, stats

from efvi.models import likelihoods as L


@dataclass
class LikelihoodCase:
    """Everything the contract tests need about one likelihood class.

    Attributes
    ----------
    make : callable(n) -> Likelihood
        An instance for n data points (per-point parameters of length n where
        the class has them, so that they are exercised).
    sample : callable(lik, rng, f) -> y
        Draws y_i | f_i from scipy.stats (f has shape (n,)).
    logpdf : callable(lik, f, y) -> ndarray
        scipy.stats log density, broadcasting f of shape (S, n) against y (n,).
    mean_var : callable(lik, f) -> (mean, var)
        scipy.stats conditional mean and variance of y given f.
    invalid_y : list of lists
        Observations outside the support (each must raise naming ``y``).
    extreme : list of (Likelihood, list)
        Instances and observations at the extremes of the issue (counts of
        1e6, large magnitudes), combined with latent means of +-1e3 and
        variances from 1e-12 to 1e6.
    finite : callable(lik, m, v, y) -> bool mask
        Where the exact E[log p] is finite in float64 (default everywhere).
    invalid_params : list of (callable, str)
        Constructions that must raise ValueError naming the string.
    closed_forms : tuple of str
        Private methods that the class overrides with a closed form.
    """

    make: Callable
    sample: Callable
    logpdf: Callable
    mean_var: Callable
    invalid_y: list
    extreme: list
    finite: Callable = lambda lik, m, v, y: np.ones(np.broadcast(m, v, y).shape, dtype=bool)
    invalid_params: list = field(default_factory=list)
    closed_forms: tuple = ()


def _trials(n):
    return 1.0 + 3.0 * (np.arange(n) % 7)


def _exposure(n):
    return 0.5 + 0.5 * (np.arange(n) % 4)


def _nbinom_p(lik, f):
    return special.expit(np.log(lik.total_count) - f)


def _below_overflow(log_value):
    return log_value < np.log(np.finfo(float).max)


CASES = {
    L.Gaussian: LikelihoodCase(
        make=lambda n: L.Gaussian(variance=0.7),
        sample=lambda lik, rng, f: rng.normal(f, np.sqrt(lik.variance)),
        logpdf=lambda lik, f, y: stats.norm.logpdf(y, f, np.sqrt(lik.variance)),
        mean_var=lambda lik, f: (f, np.full(np.shape(f), lik.variance)),
        invalid_y=[[0.0, np.inf]],
        extreme=[(L.Gaussian(variance=1e-6), [-1e6, 0.0, 1e6]), (L.Gaussian(variance=1e6), [-1e6, 0.0, 1e6])],
        invalid_params=[(lambda: L.Gaussian(variance=-1.0), "variance"),
                        (lambda: L.Gaussian(precision=0.0), "precision"),
                        (lambda: L.Gaussian(variance=1.0, precision=2.0), "precision")],
        closed_forms=("_variational_expectations", "_predict_mean_var", "_predict_log_density"),
    ),
    L.BernoulliLogit: LikelihoodCase(
        make=lambda n: L.BernoulliLogit(),
        sample=lambda lik, rng, f: (rng.uniform(size=f.shape) < special.expit(f)).astype(float),
        logpdf=lambda lik, f, y: stats.bernoulli.logpmf(y, special.expit(f)),
        mean_var=lambda lik, f: (stats.bernoulli.mean(special.expit(f)), stats.bernoulli.var(special.expit(f))),
        invalid_y=[[0.0, 2.0], [0.5], [-1.0, 1.0]],
        extreme=[(L.BernoulliLogit(), [0.0, 1.0])],
    ),
    L.BernoulliProbit: LikelihoodCase(
        make=lambda n: L.BernoulliProbit(),
        sample=lambda lik, rng, f: (rng.uniform(size=f.shape) < special.ndtr(f)).astype(float),
        logpdf=lambda lik, f, y: np.where(y == 1, special.log_ndtr(f), special.log_ndtr(-f)),
        mean_var=lambda lik, f: (stats.bernoulli.mean(special.ndtr(f)), stats.bernoulli.var(special.ndtr(f))),
        invalid_y=[[1.0, 3.0], [0.25]],
        extreme=[(L.BernoulliProbit(), [0.0, 1.0])],
        closed_forms=("_predict_mean_var", "_predict_log_density"),
    ),
    L.BinomialLogit: LikelihoodCase(
        make=lambda n: L.BinomialLogit(n_trials=_trials(n)),
        sample=lambda lik, rng, f: rng.binomial(lik.n_trials, special.expit(f)).astype(float),
        logpdf=lambda lik, f, y: stats.binom.logpmf(y, lik.n_trials, special.expit(f)),
        mean_var=lambda lik, f: (stats.binom.mean(lik.n_trials, special.expit(f)),
                                 stats.binom.var(lik.n_trials, special.expit(f))),
        invalid_y=[[0.0, -1.0], [1.5], [1.0, 1e9]],
        extreme=[(L.BinomialLogit(n_trials=1_000_000), [0.0, 1.0, 500_000.0, 999_999.0, 1_000_000.0])],
        invalid_params=[(lambda: L.BinomialLogit(n_trials=0), "n_trials"),
                        (lambda: L.BinomialLogit(n_trials=[2, 2.5]), "n_trials")],
    ),
    L.Poisson: LikelihoodCase(
        make=lambda n: L.Poisson(exposure=_exposure(n)),
        sample=lambda lik, rng, f: rng.poisson(lik.exposure * np.exp(f)).astype(float),
        logpdf=lambda lik, f, y: stats.poisson.logpmf(y, lik.exposure * np.exp(f)),
        mean_var=lambda lik, f: (stats.poisson.mean(lik.exposure * np.exp(f)),
                                 stats.poisson.var(lik.exposure * np.exp(f))),
        invalid_y=[[-1.0], [2.5, 3.0]],
        extreme=[(L.Poisson(), [0.0, 1.0, 1e6]), (L.Poisson(exposure=1e-6), [0.0, 1e6])],
        finite=lambda lik, m, v, y: _below_overflow(m + 0.5 * v + np.log(lik.exposure or 1.0)),
        invalid_params=[(lambda: L.Poisson(exposure=[1.0, -1.0]), "exposure")],
        closed_forms=("_variational_expectations", "_predict_mean_var"),
    ),
    L.NegativeBinomial: LikelihoodCase(
        make=lambda n: L.NegativeBinomial(total_count=2.5),
        sample=lambda lik, rng, f: rng.negative_binomial(lik.total_count, _nbinom_p(lik, f)).astype(float),
        logpdf=lambda lik, f, y: stats.nbinom.logpmf(y, lik.total_count, _nbinom_p(lik, f)),
        mean_var=lambda lik, f: (stats.nbinom.mean(lik.total_count, _nbinom_p(lik, f)),
                                 stats.nbinom.var(lik.total_count, _nbinom_p(lik, f))),
        invalid_y=[[3.0, -2.0], [0.1]],
        extreme=[(L.NegativeBinomial(total_count=2.5), [0.0, 1.0, 1e6]),
                 (L.NegativeBinomial(total_count=1e-3), [0.0, 1e6])],
        invalid_params=[(lambda: L.NegativeBinomial(total_count=0.0), "total_count")],
    ),
    L.StudentT: LikelihoodCase(
        make=lambda n: L.StudentT(df=4.0, scale=0.8),
        sample=lambda lik, rng, f: f + lik.scale * rng.standard_t(lik.df, size=f.shape),
        logpdf=lambda lik, f, y: stats.t.logpdf(y, lik.df, f, lik.scale),
        mean_var=lambda lik, f: (stats.t.mean(lik.df, f, lik.scale), stats.t.var(lik.df, f, lik.scale)),
        invalid_y=[[0.0, -np.inf]],
        extreme=[(L.StudentT(df=3.0, scale=1.0), [-1e6, 0.0, 1e6]), (L.StudentT(df=1.5, scale=1e-3), [-1e6, 1e6])],
        invalid_params=[(lambda: L.StudentT(df=0.0), "df"), (lambda: L.StudentT(scale=-1.0), "scale")],
    ),
    L.GammaLogLink: LikelihoodCase(
        make=lambda n: L.GammaLogLink(shape=2.5),
        sample=lambda lik, rng, f: rng.gamma(lik.shape, np.exp(f) / lik.shape),
        logpdf=lambda lik, f, y: stats.gamma.logpdf(y, lik.shape, scale=np.exp(f) / lik.shape),
        mean_var=lambda lik, f: (stats.gamma.mean(lik.shape, scale=np.exp(f) / lik.shape),
                                 stats.gamma.var(lik.shape, scale=np.exp(f) / lik.shape)),
        invalid_y=[[1.0, 0.0], [-2.0]],
        extreme=[(L.GammaLogLink(shape=2.5), [1e-6, 1.0, 1e6]), (L.GammaLogLink(shape=1e3), [1e-3, 1e6])],
        finite=lambda lik, m, v, y: _below_overflow(0.5 * v - m + np.log(lik.shape * y)),
        invalid_params=[(lambda: L.GammaLogLink(shape=-1.0), "shape")],
        closed_forms=("_variational_expectations", "_predict_mean_var"),
    ),
    L.Exponential: LikelihoodCase(
        make=lambda n: L.Exponential(),
        sample=lambda lik, rng, f: rng.exponential(np.exp(f)),
        logpdf=lambda lik, f, y: stats.expon.logpdf(y, scale=np.exp(f)),
        mean_var=lambda lik, f: (stats.expon.mean(scale=np.exp(f)), stats.expon.var(scale=np.exp(f))),
        invalid_y=[[0.0], [-1.0, 2.0]],
        extreme=[(L.Exponential(), [1e-6, 1.0, 1e6])],
        finite=lambda lik, m, v, y: _below_overflow(0.5 * v - m + np.log(y)),
        closed_forms=("_variational_expectations", "_predict_mean_var"),
    ),
}
"""Map from likelihood class to its :class:`LikelihoodCase`."""


def likelihood_classes():
    """Every concrete likelihood class exported by ``efvi.models.likelihoods``."""
    return [obj for name in L.__all__ if isinstance(obj := getattr(L, name), type)
            and issubclass(obj, L.Likelihood) and obj is not L.Likelihood]
