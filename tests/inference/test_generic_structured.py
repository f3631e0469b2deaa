"""Generic factors on structured Gaussian blocks (GP, Markov GP) take the 1-D site path of Observe."""

import autograd.numpy as anp
import numpy as np
import pytest
from scipy.special import gammaln

from efvi.inference import Decaying, ExpectedLogFactor, Model, MonteCarloFactor
from efvi.models import Observe, gp, lds, likelihoods


def _counts(n=40, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 20, size=n))
    return t, rng.poisson(np.exp(np.sin(t / 3))).astype(float)


def _prior(kind, t):
    kernel = gp.kernels.Matern32(lengthscale=3.0, variance=1.0)
    return gp.GP(kernel, t[:, None]) if kind == "gp" else lds.MarkovGP(kernel, t)


def _poisson_expected_log(mu, y):
    """E[y a - exp(a) - log y!] under a ~ N(m, v), written in the mean parameters (E[a], E[a^2])."""
    first, second = mu
    return y * first - anp.exp(first + 0.5 * (second - first ** 2)) - gammaln(y + 1.0)


@pytest.mark.parametrize("kind", ["gp", "markov"])
def test_expected_log_factor_on_a_structured_block_equals_observe(kind):
    t, y = _counts()
    # both run to their fixed points (the ELBO is flat there: 1e-10 in it is 1e-5 in the means)
    reference = Model({"f": _prior(kind, t)}, [Observe(likelihoods.Poisson(), y, on="f")]).fit(
        tol=0.0, max_iter=60, warn=False)
    fit = Model({"f": _prior(kind, t)}, [ExpectedLogFactor(_poisson_expected_log, on="f", data=(y,))]).fit(
        tol=0.0, max_iter=60, warn=False)
    assert fit.elbo == pytest.approx(reference.elbo, rel=1e-12)
    np.testing.assert_allclose(fit.posterior["f"].mean, reference.posterior["f"].mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fit.posterior["f"].var, reference.posterior["f"].var, rtol=1e-7)
    np.testing.assert_allclose(fit.sites[0].precision, reference.sites[0].precision, rtol=1e-7)


def test_monte_carlo_factor_on_a_gp_approaches_the_exact_posterior():
    t, y = _counts()
    reference = Model({"f": _prior("gp", t)}, [Observe(likelihoods.Poisson(), y, on="f")]).fit(tol=1e-12)

    def log_density(a, counts):
        return counts * a - anp.exp(a)

    fit = Model({"f": _prior("gp", t)}, [MonteCarloFactor(log_density, on="f", data=(y,), n_samples=400)]).fit(
        step=Decaying(rho0=1.0, delay=5.0, power=0.7), max_iter=60, tol=0.0, warn=False, seed=3)
    error = np.abs(fit.posterior["f"].mean - reference.posterior["f"].mean).max()
    assert error < 0.05 * np.abs(reference.posterior["f"].mean).max()
    np.testing.assert_allclose(fit.posterior["f"].var, reference.posterior["f"].var, rtol=0.1)


def test_a_structured_block_needs_one_data_point_per_point():
    t, y = _counts()
    with pytest.raises(ValueError, match="39 data points but block 'f' has 40 points"):
        Model({"f": _prior("gp", t)}, [ExpectedLogFactor(_poisson_expected_log, on="f", data=(y[:-1],))])
    with pytest.raises(ValueError, match="must return that shape"):
        Model({"f": _prior("markov", t)},
              [MonteCarloFactor(lambda a, c: a.sum(axis=0), on="f", data=(y,))]).fit(max_iter=1, warn=False)
