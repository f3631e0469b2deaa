"""Exponential-link likelihoods start from the IRLS guess instead of the prior (``Likelihood.initial_latent``).

The first sites are the CVI targets at the guess with zero variance; the fit must reach the same
optimum as a fit from empty sites, and avoid the overshooting first step.
"""

import copy

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import Observe, glm, gp, lds, likelihoods

CASES = {
    "poisson": (likelihoods.Poisson(), lambda rng, f: rng.poisson(np.exp(f)).astype(float)),
    "poisson_exposure": (likelihoods.Poisson(exposure=np.linspace(0.5, 3.0, 80)),
                         lambda rng, f: rng.poisson(np.linspace(0.5, 3.0, 80) * np.exp(f)).astype(float)),
    "negative_binomial": (likelihoods.NegativeBinomial(total_count=3.0),
                          lambda rng, f: rng.negative_binomial(3.0, 3.0 / (3.0 + np.exp(f))).astype(float)),
    "gamma": (likelihoods.GammaLogLink(shape=2.0), lambda rng, f: rng.gamma(2.0, np.exp(f) / 2.0)),
    "exponential": (likelihoods.Exponential(), lambda rng, f: rng.exponential(np.exp(f))),
    "bernoulli_logit": (likelihoods.BernoulliLogit(), lambda rng, f: (rng.random(80) < 1 / (1 + np.exp(-f))) * 1.0),
    "bernoulli_probit": (likelihoods.BernoulliProbit(),
                         lambda rng, f: (rng.normal(size=80) < f) * 1.0),
    "binomial": (likelihoods.BinomialLogit(n_trials=5),
                 lambda rng, f: rng.binomial(5, 1 / (1 + np.exp(-f))).astype(float)),
}


def _from_prior(likelihood):
    """The same likelihood without a data-based guess (the fit starts from empty sites)."""
    plain = copy.copy(likelihood)
    plain.initial_latent = lambda y: None
    return plain


def _gaussian_prior(d):
    return Gaussian.from_mean_cov(np.zeros(d), np.eye(d))


def _problem(name, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(80), rng.normal(size=(80, 2))])
    f = X @ np.array([0.5, 0.8, -0.6])
    likelihood, draw = CASES[name]
    y = draw(rng, f)
    y[[3, 40]] = np.nan
    return X, y, likelihood


@pytest.mark.parametrize("name", sorted(CASES))
def test_first_sites_are_the_targets_at_the_guess_with_zero_variance(name, monkeypatch):
    # without the Newton steps that refine them (tests/models/glm/test_newton_start.py)
    monkeypatch.setattr(glm._informed, "NEWTON_STEPS", 0)
    X, y, likelihood = _problem(name)
    factor = glm.GLM(likelihood, X, y, on="w")
    model = Model({"w": _gaussian_prior(3)}, [factor])
    fit = model.fit(max_iter=0, warn=False)
    guess = likelihood.initial_latent(y)
    assert factor.informed_sites({"w": model.blocks["w"]}) is not None
    # independent route: the quadrature expectations with a tiny variance, differentiated numerically
    observed = ~np.isnan(y)
    eps = 1e-5
    observed_likelihood = likelihood.subset(observed)
    value = lambda m: observed_likelihood.log_density(m, y[observed])
    g_m = (value(guess[observed] + eps) - value(guess[observed] - eps)) / (2 * eps)
    g_mm = (value(guess[observed] + eps) - 2 * value(guess[observed]) + value(guess[observed] - eps)) / eps ** 2
    sites = fit.sites[0]
    np.testing.assert_allclose(sites.precision[observed], -g_mm, rtol=1e-4)
    np.testing.assert_allclose(sites.natural_mean[observed], g_m - g_mm * guess[observed], rtol=1e-4, atol=1e-4)
    assert np.all(sites.precision[~observed] == 0) and np.all(sites.natural_mean[~observed] == 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_informed_start_reaches_the_same_optimum_as_the_prior_start(name):
    X, y, likelihood = _problem(name, seed=1)
    fits = [Model({"w": _gaussian_prior(3)}, [glm.GLM(lik, X, y, on="w")]).fit(tol=1e-12, max_iter=500)
            for lik in (likelihood, _from_prior(likelihood))]
    assert all(f.converged for f in fits)
    np.testing.assert_allclose(fits[0].elbo, fits[1].elbo, rtol=1e-9)
    np.testing.assert_allclose(fits[0].posterior["w"].mean, fits[1].posterior["w"].mean, rtol=1e-5, atol=1e-6)


def test_markov_gp_poisson_takes_full_steps_from_the_informed_start():
    """From the prior the first full step overshoots (the ELBO collapses); from the IRLS guess it does not."""
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.5, 1.5, 400))
    y = rng.poisson(np.exp(1.5 + np.sin(t / 20.0))).astype(float)
    kernel = gp.kernels.Matern32(lengthscale=20.0, variance=1.0)
    informed = Model({"f": lds.MarkovGP(kernel, t)}, [Observe(likelihoods.Poisson(), y, on="f")])
    from_prior = Model({"f": lds.MarkovGP(kernel, t)}, [Observe(_from_prior(likelihoods.Poisson()), y, on="f")])
    first = [m.fit(step=1.0, max_iter=1, warn=False) for m in (informed, from_prior)]
    assert first[0].elbo_trace[1] > first[0].elbo_trace[0]
    assert first[1].elbo_trace[1] < first[1].elbo_trace[0]
    fits = [m.fit(tol=1e-12, max_iter=200) for m in (informed, from_prior)]
    assert np.all(fits[0].rho_trace[1:] == 1.0)
    assert fits[0].n_iter < fits[1].n_iter
    np.testing.assert_allclose(fits[0].elbo, fits[1].elbo, rtol=1e-10)


def test_init_prior_starts_every_factor_from_empty_sites():
    X, y, likelihood = _problem("poisson", seed=2)
    model = Model({"w": _gaussian_prior(3)}, [glm.GLM(likelihood, X, y, on="w")])
    start = model.fit(max_iter=0, warn=False, init="prior")
    assert np.all(start.sites[0].precision == 0) and np.all(start.sites[0].natural_mean == 0)
    np.testing.assert_array_equal(start.posterior["w"].mean, np.zeros(3))
    informed = model.fit(max_iter=0, warn=False)
    assert informed.elbo_trace[0] > start.elbo_trace[0]
    with pytest.raises(ValueError, match="init must be None, 'prior' or a FitResult"):
        model.fit(init="data")
