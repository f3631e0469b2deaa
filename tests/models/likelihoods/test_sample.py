"""Draws of ``y | a`` (``Likelihood.sample``) against scipy.stats, for every compiled likelihood and link.

For each case the draws at six latent values are compared with the scipy.stats
distribution of ``y | a`` (built here from the case's parameters and an
independent numpy/scipy form of its link): the sample mean within five
standard errors of the distribution's mean, the sample variance within five
standard errors of its variance (where the fourth moment is finite), and the
whole distribution by a Kolmogorov-Smirnov test (continuous) or a chi-square
test on the probabilities of the values (discrete), at a fixed seed.
"""

import numpy as np
import pytest
from scipy import stats

from efvi import Model, Observe, gp
from efvi.models import likelihoods as L

from .cases import CASES, POSITIVE_LINKS, PROBABILITY_LINKS, compiled_cases

N = 6
LATENT = np.array([-2.0, -0.7, 0.0, 0.4, 1.2, 2.0])
DRAWS = 20_000
N_SIGMA = 5.0
MIN_P_VALUE = 1e-4


def _reference(lik, f):
    """The scipy.stats distribution of y | a = f (vectorised over the points), and whether it is discrete."""
    if isinstance(lik, L.Gaussian):
        return stats.norm(f, np.sqrt(lik.variance)), False
    if isinstance(lik, L.StudentT):
        return stats.t(lik.df, f, lik.scale), False
    if isinstance(lik, (L.Bernoulli, L.Binomial)):
        p = PROBABILITY_LINKS[lik.link][0](f)
        if isinstance(lik, L.Bernoulli):
            return stats.bernoulli(p), True
        return stats.binom(np.asarray(lik.n_trials), p), True
    mean = POSITIVE_LINKS[lik.link](f)
    if isinstance(lik, L.Poisson):
        return stats.poisson(mean * (1.0 if lik.exposure is None else np.asarray(lik.exposure))), True
    if isinstance(lik, L.NegativeBinomial):
        return stats.nbinom(lik.total_count, lik.total_count / (lik.total_count + mean)), True
    if isinstance(lik, L.Exponential):
        return stats.expon(scale=mean), False
    if isinstance(lik, L.Gamma):
        return stats.gamma(lik.shape, scale=mean / lik.shape), False
    raise AssertionError(f"no scipy reference for {type(lik).__name__}: add one to this test")


@pytest.fixture(params=compiled_cases())
def case_draws(request):
    lik = CASES[request.param].make(N)
    latent = np.broadcast_to(LATENT, (DRAWS, N))
    draws = lik.sample(latent, np.random.default_rng(12))
    return lik, draws


def test_draws_have_the_shape_and_support_of_y(case_draws):
    lik, draws = case_draws
    assert draws.shape == (DRAWS, N) and draws.dtype == np.float64
    for row in draws[:500]:
        lik.validate_y(row)         # raises for a value outside the support


def test_draw_moments_are_within_five_standard_errors(case_draws):
    lik, draws = case_draws
    reference, _ = _reference(lik, LATENT)
    mean, var = reference.mean(), reference.var()
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= N_SIGMA * np.sqrt(var / DRAWS))
    kurtosis = reference.stats(moments="k")
    finite = np.isfinite(kurtosis) & (var > 0)
    # the sample variance's standard error: var sqrt((excess kurtosis + 2 + 2 / (n - 1)) / n)
    error = var * np.sqrt((np.where(finite, kurtosis, 0.0) + 2.0 + 2.0 / (DRAWS - 1)) / DRAWS)
    assert np.all(np.abs(draws.var(axis=0, ddof=1) - var)[finite] <= N_SIGMA * error[finite])


def test_draws_follow_the_scipy_distribution(case_draws):
    lik, draws = case_draws
    for i in range(N):
        reference, discrete = _reference(lik.subset(np.array([i])), LATENT[i:i + 1])   # with point i's parameter
        if not discrete:
            assert stats.kstest(draws[:, i], lambda y: reference.cdf(y)).pvalue > MIN_P_VALUE, f"point {i}"
            continue
        values, counts = np.unique(draws[:, i], return_counts=True)
        expected = DRAWS * np.ravel(reference.pmf(values))
        big = expected >= 5.0        # pool the rare values (and the unseen rest of the support) into one cell
        observed = np.append(counts[big], DRAWS - counts[big].sum())
        expected = np.append(expected[big], DRAWS - expected[big].sum())
        keep = expected > 0
        if keep.sum() > 1:
            assert stats.chisquare(observed[keep], expected[keep]).pvalue > MIN_P_VALUE, f"point {i}"


def test_per_point_parameters_run_along_the_last_axis():
    lik = L.Poisson(exposure=[1.0, 100.0])
    draws = lik.sample(np.zeros((5000, 2)), 0)
    assert draws[:, 0].mean() < 2.0 and draws[:, 1].mean() > 90.0
    trials = L.Binomial(n_trials=[1, 50]).sample(np.zeros((200, 2)), 1)
    assert trials[:, 0].max() <= 1 and trials[:, 1].max() > 1
    with pytest.raises(ValueError, match="latent must have 2 entries along its last axis"):
        lik.sample(np.zeros((4, 3)), 0)


def test_seeds_reproduce_and_bad_latents_are_named():
    lik = L.Gamma(shape=2.0)
    np.testing.assert_array_equal(lik.sample(np.ones(4), 3), lik.sample(np.ones(4), np.random.default_rng(3)))
    with pytest.raises(ValueError, match="latent"):
        lik.sample(np.array([0.0, np.nan]), 0)
    with pytest.raises(ValueError, match="fixed variance"):
        L.Gaussian(precision="tau").sample(np.zeros(3), 0)
    with pytest.raises(NotImplementedError, match="Custom cannot draw"):
        L.Custom(lambda y, f: -(y - f) ** 2).sample(np.zeros(3), 0)


@pytest.mark.parametrize("likelihood, y_of", [
    (L.Gamma(shape=3.0), lambda f, rng: rng.gamma(3.0, np.exp(f) / 3.0)),
    (L.Exponential(), lambda f, rng: rng.exponential(np.exp(f))),
    (L.StudentT(df=5.0, scale=0.3), lambda f, rng: f + 0.3 * rng.standard_t(5.0, size=f.shape)),
], ids=lambda v: type(v).__name__ if isinstance(v, L.Likelihood) else "")
def test_posterior_predictive_draws_of_a_fit(likelihood, y_of):
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(0.0, 6.0, 40))
    y = y_of(np.sin(x), rng)
    fit = Model({"f": gp.GP(gp.kernels.Matern52(lengthscale=1.5), x[:, None])},
                [Observe(likelihood, y, on="f")]).fit()
    predictive = fit.predict(np.array([[1.0], [4.0]]), likelihood)
    draws = predictive.sample(40_000, seed=2)
    assert draws.shape == (40_000, 2)
    # the draws' mean against the predictive mean (quadrature), within five standard errors of the draws
    error = draws.std(axis=0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - predictive.mean) <= N_SIGMA * error)
    lower, upper = predictive.interval(0.8)
    assert np.all(lower < predictive.mean) and np.all(predictive.mean < upper)
