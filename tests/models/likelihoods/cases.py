"""Test cases for the likelihood contract tests: one entry per likelihood class and per (distribution, link) pair.

``test_contract.py`` is parametrised over these cases and fails for any
likelihood class exported by ``efvi.models.likelihoods``, or any pair of a
distribution with a registered link, without an entry here, so a new
likelihood or link cannot go untested.  Each case supplies independent
references from ``scipy.stats`` (log densities, sampling, conditional moments)
and, for every compiled likelihood, its ``Custom`` twin: the same log density
written in autograd.numpy, which must give the same expectations and fits.
"""

from dataclasses import dataclass, field
from typing import Callable

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import gammaln
from autograd.scipy.stats import norm
from scipy import special, stats

from efvi.models import likelihoods as L


@dataclass
class LikelihoodCase:
    """Everything the contract tests need about one likelihood.

    Attributes
    ----------
    make : callable(n) -> Likelihood
        An instance for n data points (per-point parameters of length n where
        the likelihood has them, so that they are exercised).
    sample : callable(lik, rng, f) -> y
        Draws y_i | f_i from scipy.stats or numpy (f has shape (n,)).
    logpdf : callable(lik, f, y) -> ndarray
        Reference log density, broadcasting f of shape (S, n) against y (n,).
    mean_var : callable(lik, f) -> (mean, var)
        Reference conditional mean and variance of y given f.
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
        Private methods that this likelihood computes in closed form.
    twin : callable(lik) -> Custom, or None
        The ``Custom`` likelihood with the same log density in autograd.numpy
        (every compiled likelihood has one; None for the ``Custom`` cases).
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
    twin: Callable = None


def _trials(n):
    return 1.0 + 3.0 * (np.arange(n) % 7)


def _exposure(n):
    return 0.5 + 0.5 * (np.arange(n) % 4)


def _below_overflow(log_value):
    return log_value < np.log(np.finfo(float).max)


LARGEST_NODE = L.gauss_hermite(160)[0].max()
"""The largest Gauss-Hermite node of the ladder: where ``exp(+-a)`` overflows at ``m +- LARGEST_NODE sqrt(v)``, a
quadrature of a log density that grows like it is -inf even where the exact value is finite."""


def _nodes_below_overflow(log_value, var):
    return _below_overflow(log_value + LARGEST_NODE * np.sqrt(var))


# --- independent references of each link: numpy/scipy, and autograd.numpy for the twins ------------

PROBABILITY_LINKS = {  # name -> (mean, log mean, log complement), numpy
    "logit": (special.expit, special.log_expit, lambda f: special.log_expit(-f)),
    "probit": (special.ndtr, special.log_ndtr, lambda f: special.log_ndtr(-f)),
    "cloglog": (lambda f: -np.expm1(-np.exp(f)), lambda f: np.log(-np.expm1(-np.exp(f))), lambda f: -np.exp(f)),
}

POSITIVE_LINKS = {  # name -> mean, numpy
    "log": np.exp,
    "softplus": lambda f: np.logaddexp(0.0, f),
}

TWIN_PROBABILITY_LINKS = {  # name -> (log mean, log complement), autograd.numpy
    "logit": (lambda f: -anp.logaddexp(0.0, -f), lambda f: -anp.logaddexp(0.0, f)),
    "probit": (norm.logcdf, lambda f: norm.logcdf(-f)),
    "cloglog": (lambda f: anp.log(-anp.expm1(-anp.exp(f))), lambda f: -anp.exp(f)),
}

TWIN_POSITIVE_LINKS = {  # name -> log mean, autograd.numpy
    "log": lambda f: f,
    "softplus": lambda f: anp.log(anp.logaddexp(0.0, f)),
}


def _twin(lik, log_prob, support, mean_var, per_point=None, per_point_name="per_point"):
    """A Custom likelihood with ``lik``'s flags, guess and quadrature strip (a finite one; 1 where ``lik``'s is entire)."""
    strip = lik.strip_half_width if np.isfinite(lik.strip_half_width) else 1.0
    guessed = type(lik).initial_latent is not L.Likelihood.initial_latent
    return L.Custom(log_prob, support, mean_var=mean_var,
                    initial_latent=(lambda y, *c: lik.initial_latent(y)) if guessed else None,
                    per_point=per_point, per_point_name=per_point_name, log_concave=lik.log_concave,
                    exponential_link=lik.exponential_link, strip_half_width=strip, n_points=lik.n_points)


def _gaussian_twin(lik):
    variance = lik.variance

    def log_prob(y, f):
        return -0.5 * anp.log(2.0 * np.pi * variance) - 0.5 * (y - f) ** 2 / variance

    return _twin(lik, log_prob, "real", lambda f: (f, np.full(np.shape(f), variance)))


def _student_t_twin(lik):
    df, scale = lik.df, lik.scale

    def log_prob(y, f):
        return (gammaln(0.5 * (df + 1.0)) - gammaln(0.5 * df) - 0.5 * anp.log(df * np.pi) - anp.log(scale)
                - 0.5 * (df + 1.0) * anp.log1p(((y - f) / scale) ** 2 / df))

    return _twin(lik, log_prob, "real", lambda f: (f, np.full(np.shape(f), scale ** 2 * df / (df - 2.0))))


def _bernoulli_twin(lik):
    log_mean, log_complement = TWIN_PROBABILITY_LINKS[lik.link]

    def log_prob(y, f):
        return anp.where(y == 1.0, log_mean(f), log_complement(f))

    def mean_var(f):
        mean = PROBABILITY_LINKS[lik.link][0](f)
        return mean, mean * (1.0 - mean)

    return _twin(lik, log_prob, "labels", mean_var)


def _binomial_twin(lik):
    log_mean, log_complement = TWIN_PROBABILITY_LINKS[lik.link]

    def log_prob(y, f, n):
        return (gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
                + y * log_mean(f) + (n - y) * log_complement(f))

    def mean_var(f, n):
        mean = PROBABILITY_LINKS[lik.link][0](f)
        return n * mean, n * mean * (1.0 - mean)

    return _twin(lik, log_prob, "bounded counts", mean_var, per_point=lik.n_trials, per_point_name="n_trials")


def _poisson_twin(lik):
    log_mean = TWIN_POSITIVE_LINKS[lik.link]

    def log_prob(y, f, exposure=1.0):
        log_rate = log_mean(f) + anp.log(exposure)
        return y * log_rate - anp.exp(log_rate) - gammaln(y + 1.0)

    def mean_var(f, exposure=1.0):
        rate = exposure * POSITIVE_LINKS[lik.link](f)
        return rate, rate

    return _twin(lik, log_prob, "counts", mean_var, per_point=lik.exposure, per_point_name="exposure")


def _negative_binomial_twin(lik):
    log_mean, r = TWIN_POSITIVE_LINKS[lik.link], lik.total_count

    def log_prob(y, f):
        log_mu = log_mean(f)
        return (gammaln(y + r) - gammaln(r) - gammaln(y + 1.0) + r * np.log(r) + y * log_mu
                - (y + r) * anp.logaddexp(np.log(r), log_mu))

    def mean_var(f):
        mean = POSITIVE_LINKS[lik.link](f)
        return mean, mean + mean ** 2 / r

    return _twin(lik, log_prob, "counts", mean_var)


def _gamma_twin(lik):
    log_mean, k = TWIN_POSITIVE_LINKS[lik.link], lik.shape

    def log_prob(y, f):
        log_mu = log_mean(f)
        return k * np.log(k) - gammaln(k) + (k - 1.0) * anp.log(y) - k * log_mu - k * y * anp.exp(-log_mu)

    def mean_var(f):
        mean = POSITIVE_LINKS[lik.link](f)
        return mean, mean ** 2 / k

    return _twin(lik, log_prob, "positive", mean_var)


# --- cases of the distributions with links ---------------------------------------------------------

def _probability(lik, f):
    mean, log_mean, log_complement = PROBABILITY_LINKS[lik.link]
    return mean(f), log_mean(f), log_complement(f)


def _bernoulli_case(link, make=None):
    make = make or (lambda n: L.Bernoulli(link=link))
    return LikelihoodCase(
        make=make,
        sample=lambda lik, rng, f: (rng.uniform(size=f.shape) < _probability(lik, f)[0]).astype(float),
        logpdf=lambda lik, f, y: np.where(y == 1, *_probability(lik, f)[1:]),
        mean_var=lambda lik, f: (stats.bernoulli.mean(_probability(lik, f)[0]),
                                 stats.bernoulli.var(_probability(lik, f)[0])),
        invalid_y=[[0.0, 2.0], [0.5], [-1.0, 1.0]],
        extreme=[(make(3), [0.0, 1.0])],
        # the complementary log-log's log(1 - mu) = -exp(a): E is -inf where exp(a) overflows at a node
        finite=(lambda lik, m, v, y: (y == 1) | _nodes_below_overflow(m, v)) if link == "cloglog"
        else LikelihoodCase.finite,
        invalid_params=[(lambda: L.Bernoulli(link="log"), "link"), (lambda: L.Bernoulli(link=2), "link")],
        closed_forms=("_predict_mean_var", "_predict_log_density") if link == "probit" else (),
        twin=_bernoulli_twin,
    )


def _binomial_logpmf(lik, f, y):
    _, log_mean, log_complement = _probability(lik, f)
    n = np.asarray(lik.n_trials, dtype=float)
    log_choose = special.gammaln(n + 1) - special.gammaln(y + 1) - special.gammaln(n - y + 1)
    return log_choose + y * log_mean + (n - y) * log_complement


def _binomial_case(link, make=None, with_trials=None):
    make = make or (lambda n: L.Binomial(n_trials=_trials(n), link=link))
    with_trials = with_trials or (lambda trials: L.Binomial(trials, link=link))
    return LikelihoodCase(
        make=make,
        sample=lambda lik, rng, f: rng.binomial(lik.n_trials, _probability(lik, f)[0]).astype(float),
        logpdf=_binomial_logpmf,
        mean_var=lambda lik, f: (stats.binom.mean(lik.n_trials, _probability(lik, f)[0]),
                                 stats.binom.var(lik.n_trials, _probability(lik, f)[0])),
        invalid_y=[[0.0, -1.0], [1.5], [1.0, 1e9]],
        extreme=[(with_trials(1_000_000), [0.0, 1.0, 500_000.0, 999_999.0, 1_000_000.0])],
        finite=(lambda lik, m, v, y: (y == lik.n_trials) | _nodes_below_overflow(m, v)) if link == "cloglog"
        else LikelihoodCase.finite,
        invalid_params=[(lambda: L.Binomial(n_trials=0, link=link), "n_trials"),
                        (lambda: L.Binomial(n_trials=[2, 2.5], link=link), "n_trials"),
                        (lambda: L.Binomial(3, link="softplus"), "link")],
        twin=_binomial_twin,
    )


def _rate(lik, f):
    return (1.0 if lik.exposure is None else lik.exposure) * POSITIVE_LINKS[lik.link](f)


def _poisson_case(link):
    return LikelihoodCase(
        make=lambda n: L.Poisson(exposure=_exposure(n), link=link),
        sample=lambda lik, rng, f: rng.poisson(_rate(lik, f)).astype(float),
        logpdf=lambda lik, f, y: stats.poisson.logpmf(y, _rate(lik, f)),
        mean_var=lambda lik, f: (stats.poisson.mean(_rate(lik, f)), stats.poisson.var(_rate(lik, f))),
        invalid_y=[[-1.0], [2.5, 3.0]],
        extreme=[(L.Poisson(link=link), [0.0, 1.0, 1e6]), (L.Poisson(exposure=1e-6, link=link), [0.0, 1e6])],
        finite=((lambda lik, m, v, y: _below_overflow(m + 0.5 * v + np.log(_rate(lik, 0.0)))) if link == "log"
                else LikelihoodCase.finite),
        invalid_params=[(lambda: L.Poisson(exposure=[1.0, -1.0], link=link), "exposure"),
                        (lambda: L.Poisson(link="logit"), "link")],
        closed_forms=("_variational_expectations", "_predict_mean_var") if link == "log" else (),
        twin=_poisson_twin,
    )


def _nbinom_p(lik, f):
    return special.expit(np.log(lik.total_count) - np.log(POSITIVE_LINKS[lik.link](f)))


def _negative_binomial_case(link):
    return LikelihoodCase(
        make=lambda n: L.NegativeBinomial(total_count=2.5, link=link),
        sample=lambda lik, rng, f: rng.negative_binomial(lik.total_count, _nbinom_p(lik, f)).astype(float),
        logpdf=lambda lik, f, y: stats.nbinom.logpmf(y, lik.total_count, _nbinom_p(lik, f)),
        mean_var=lambda lik, f: (stats.nbinom.mean(lik.total_count, _nbinom_p(lik, f)),
                                 stats.nbinom.var(lik.total_count, _nbinom_p(lik, f))),
        invalid_y=[[3.0, -2.0], [0.1]],
        extreme=[(L.NegativeBinomial(total_count=2.5, link=link), [0.0, 1.0, 1e6]),
                 (L.NegativeBinomial(total_count=1e-3, link=link), [0.0, 1e6])],
        invalid_params=[(lambda: L.NegativeBinomial(total_count=0.0, link=link), "total_count"),
                        (lambda: L.NegativeBinomial(link="probit"), "link")],
        twin=_negative_binomial_twin,
    )


def _gamma_finite(link):
    """Where E is finite: ``k y E[1 / mu]`` overflows like ``exp(-a)`` (the softplus link's ``1 / mu``
    grows like ``exp(-a)`` as ``a -> -inf``, at the smallest quadrature node)."""
    if link == "log":
        return lambda lik, m, v, y: _below_overflow(0.5 * v - m + np.log(lik.shape * y))
    return lambda lik, m, v, y: _nodes_below_overflow(-m + np.log(lik.shape * y), v)


def _gamma_case(link, make=None):
    make = make or (lambda n: L.Gamma(shape=2.5, link=link))

    def scale(lik, f):
        return POSITIVE_LINKS[lik.link](f) / lik.shape

    return LikelihoodCase(
        make=make,
        sample=lambda lik, rng, f: rng.gamma(lik.shape, scale(lik, f)),
        logpdf=lambda lik, f, y: stats.gamma.logpdf(y, lik.shape, scale=scale(lik, f)),
        mean_var=lambda lik, f: (stats.gamma.mean(lik.shape, scale=scale(lik, f)),
                                 stats.gamma.var(lik.shape, scale=scale(lik, f))),
        invalid_y=[[1.0, 0.0], [-2.0]],
        extreme=[(L.Gamma(shape=2.5, link=link), [1e-6, 1.0, 1e6]), (L.Gamma(shape=1e3, link=link), [1e-3, 1e6])],
        finite=_gamma_finite(link),
        invalid_params=[(lambda: L.Gamma(shape=-1.0, link=link), "shape"), (lambda: L.Gamma(link="logit"), "link")],
        closed_forms=("_variational_expectations", "_predict_mean_var") if link == "log" else (),
        twin=_gamma_twin,
    )


def _exponential_case(link):
    return LikelihoodCase(
        make=lambda n: L.Exponential(link=link),
        sample=lambda lik, rng, f: rng.exponential(POSITIVE_LINKS[lik.link](f)),
        logpdf=lambda lik, f, y: stats.expon.logpdf(y, scale=POSITIVE_LINKS[lik.link](f)),
        mean_var=lambda lik, f: (stats.expon.mean(scale=POSITIVE_LINKS[lik.link](f)),
                                 stats.expon.var(scale=POSITIVE_LINKS[lik.link](f))),
        invalid_y=[[0.0], [-1.0, 2.0]],
        extreme=[(L.Exponential(link=link), [1e-6, 1.0, 1e6])],
        finite=_gamma_finite(link),
        invalid_params=[(lambda: L.Exponential(link="cloglog"), "link")],
        closed_forms=("_variational_expectations", "_predict_mean_var") if link == "log" else (),
        twin=_gamma_twin,
    )


LINKED = {
    L.Bernoulli: _bernoulli_case,
    L.Binomial: _binomial_case,
    L.Poisson: _poisson_case,
    L.NegativeBinomial: _negative_binomial_case,
    L.Gamma: _gamma_case,
    L.Exponential: _exponential_case,
}
"""The distributions with links and the case of each with a given link."""


# --- the Custom cases: likelihoods given as autograd.numpy log densities --------------------------

LOGISTIC_SCALE = 0.7


def logistic_noise(y, f):
    """log density of y = f + LOGISTIC_SCALE * (standard logistic noise), in autograd.numpy."""
    u = (y - f) / LOGISTIC_SCALE
    return -u - 2.0 * anp.logaddexp(0.0, -u) - np.log(LOGISTIC_SCALE)


def poisson_with_exposure(y, f, exposure):
    """log density of y ~ Poisson(exposure * exp(f)), in autograd.numpy."""
    log_rate = f + anp.log(exposure)
    return y * log_rate - anp.exp(log_rate) - gammaln(y + 1.0)


def _custom_logistic(n):
    return L.Custom(logistic_noise, "real", mean_var=lambda f: (f, np.full(np.shape(f), (np.pi * LOGISTIC_SCALE) ** 2 / 3)),
                    initial_latent=lambda y: y, log_concave=True, strip_half_width=np.pi * LOGISTIC_SCALE)


def _custom_poisson(n):
    return L.Custom(poisson_with_exposure, "counts", mean_var=lambda f, u: (u * np.exp(f), u * np.exp(f)),
                    initial_latent=lambda y, u: np.log((y + 0.5) / u), per_point=_exposure(n),
                    per_point_name="exposure", log_concave=True, exponential_link=True)


CUSTOM_CASES = {
    "Custom-logistic_noise": LikelihoodCase(
        make=_custom_logistic,
        sample=lambda lik, rng, f: f + rng.logistic(0.0, LOGISTIC_SCALE, size=f.shape),
        logpdf=lambda lik, f, y: stats.logistic.logpdf(y, f, LOGISTIC_SCALE),
        mean_var=lambda lik, f: (stats.logistic.mean(f, LOGISTIC_SCALE), stats.logistic.var(f, LOGISTIC_SCALE)),
        invalid_y=[[0.0, np.inf]],
        extreme=[(_custom_logistic(3), [-1e6, 0.0, 1e6])],
        invalid_params=[(lambda: L.Custom(None), "log_prob"), (lambda: L.Custom(logistic_noise, "integers"), "support"),
                        (lambda: L.Custom(logistic_noise, strip_half_width=0.0), "strip_half_width"),
                        (lambda: L.Custom(logistic_noise, mean_var=3.0), "mean_var"),
                        (lambda: L.Custom(logistic_noise, per_point=1.0, per_point_name="support"), "per_point_name")],
    ),
    "Custom-poisson_exposure": LikelihoodCase(
        make=_custom_poisson,
        sample=lambda lik, rng, f: rng.poisson(lik.exposure * np.exp(f)).astype(float),
        logpdf=lambda lik, f, y: stats.poisson.logpmf(y, lik.exposure * np.exp(f)),
        mean_var=lambda lik, f: (stats.poisson.mean(lik.exposure * np.exp(f)),
                                 stats.poisson.var(lik.exposure * np.exp(f))),
        invalid_y=[[-1.0], [2.5, 3.0]],
        extreme=[],
        invalid_params=[(lambda: L.Custom(poisson_with_exposure, "counts", per_point=[1.0, np.nan]), "per_point")],
    ),
}


CASES = {
    "Gaussian": LikelihoodCase(
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
        twin=_gaussian_twin,
    ),
    "StudentT": LikelihoodCase(
        make=lambda n: L.StudentT(df=4.0, scale=0.8),
        sample=lambda lik, rng, f: f + lik.scale * rng.standard_t(lik.df, size=f.shape),
        logpdf=lambda lik, f, y: stats.t.logpdf(y, lik.df, f, lik.scale),
        mean_var=lambda lik, f: (stats.t.mean(lik.df, f, lik.scale), stats.t.var(lik.df, f, lik.scale)),
        invalid_y=[[0.0, -np.inf]],
        extreme=[(L.StudentT(df=3.0, scale=1.0), [-1e6, 0.0, 1e6]), (L.StudentT(df=1.5, scale=1e-3), [-1e6, 1e6])],
        invalid_params=[(lambda: L.StudentT(df=0.0), "df"), (lambda: L.StudentT(scale=-1.0), "scale")],
        twin=_student_t_twin,
    ),
    **{f"{cls.__name__}-{link}": make_case(link) for cls, make_case in LINKED.items()
       for link in L.LINKS if L.LINKS[link].domain == cls.domain},
    "BernoulliLogit": _bernoulli_case("logit", lambda n: L.BernoulliLogit()),
    "BernoulliProbit": _bernoulli_case("probit", lambda n: L.BernoulliProbit()),
    "BinomialLogit": _binomial_case("logit", lambda n: L.BinomialLogit(n_trials=_trials(n)), L.BinomialLogit),
    "GammaLogLink": _gamma_case("log", lambda n: L.GammaLogLink(shape=2.5)),
    **CUSTOM_CASES,
}
"""Map from case name to its :class:`LikelihoodCase`: every likelihood class, and every distribution with every
registered link onto its domain (``Bernoulli-probit``)."""


def likelihood_classes():
    """Every concrete likelihood class exported by ``efvi.models.likelihoods``."""
    return [obj for name in L.__all__ if isinstance(obj := getattr(L, name), type)
            and issubclass(obj, L.Likelihood) and obj is not L.Likelihood]


def compiled_cases():
    """Names of the cases of compiled likelihoods (all but the Custom ones)."""
    return [name for name, case in CASES.items() if not isinstance(case.make(1), L.Custom)]
