"""``Custom`` likelihoods in fits with minibatches and hyperparameter learning, and their input errors.

Reference: the compiled likelihood of which each ``Custom`` is the twin
(``cases.py``: the same log density in autograd.numpy), fitted the same way;
both must reach the same ELBO to 1e-8 (relative), the same posterior and the
same learned hyperparameters.
"""

import autograd.numpy as anp
import numpy as np
import pytest

from efvi.expfam import Gaussian as GaussianPrior
from efvi.inference import Model
from efvi.models import Observe, glm, gp, lds
from efvi.models import likelihoods as L

from .cases import CASES

TWINS = ["Poisson-log", "Bernoulli-logit", "Binomial-probit", "Gamma-softplus"]
"""A closed form, a compiled quadrature kernel with its logistic rule, a per-point parameter and a non-log-concave
likelihood."""


def _same_fit(fits, block, trace=True):
    """The same final ELBO (1e-8 relative) and posterior mean; with ``trace``, the same ELBO at every iteration."""
    compiled, custom = fits
    assert abs(custom.elbo - compiled.elbo) <= 1e-8 * max(1.0, abs(compiled.elbo)), (compiled.elbo, custom.elbo)
    if trace:
        np.testing.assert_allclose(custom.elbo_trace, compiled.elbo_trace, rtol=1e-8, atol=1e-8)
    # where the fits stop on their own, the posterior is as well determined as the ELBO's tolerance allows
    np.testing.assert_allclose(custom.posterior[block].mean, compiled.posterior[block].mean, rtol=1e-6,
                               atol=1e-8 if trace else 1e-6)


def _glm_data(name, n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    case = CASES[name]
    lik = case.make(n)
    y = case.sample(lik, rng, X @ np.array([0.3, -0.8, 0.5]))
    y[7] = np.nan
    return X, y, lik, case.twin(lik)


@pytest.mark.parametrize("minibatch", ["svi", "sites"])
@pytest.mark.parametrize("name", TWINS)
def test_custom_twin_fits_a_glm_with_minibatches_like_its_compiled_likelihood(name, minibatch):
    X, y, lik, twin = _glm_data(name)
    prior = GaussianPrior.from_mean_cov(np.zeros(3), np.eye(3))
    fits = [Model({"w": prior}, [glm.GLM(likelihood, X, y, on="w")])
            .fit(batch_size=25, minibatch=minibatch, max_iter=25, tol=0.0, seed=3, warn=False)
            for likelihood in (lik, twin)]
    assert fits[0].n_iter == fits[1].n_iter == 25
    _same_fit(fits, "w")


def _times_and_labels(name, n=60, seed=1):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 10.0, n))
    case = CASES[name]
    lik = case.make(n)
    y = case.sample(lik, rng, 0.3 + 1.5 * np.sin(t))
    y[4] = np.nan
    return t, y, lik, case.twin(lik)


def _gp_prior(structure, t, kernel, learn=False):
    if structure == "gp":
        return gp.GP(kernel, t[:, None], learn_hyperparameters=learn)
    return lds.MarkovGP(kernel, t, learn_hyperparameters=learn)


@pytest.mark.parametrize("structure", ["gp", "markov_gp"])
@pytest.mark.parametrize("name", TWINS[:3])
def test_custom_twin_fits_a_gp_with_minibatches_like_its_compiled_likelihood(name, structure):
    t, y, lik, twin = _times_and_labels(name)
    kernel = gp.kernels.Matern32(lengthscale=2.0, variance=1.0)
    fits = [Model({"f": _gp_prior(structure, t, kernel)}, [Observe(likelihood, y, on="f")])
            .fit(batch_size=16, minibatch="sites", max_iter=20, tol=0.0, seed=2, warn=False)
            for likelihood in (lik, twin)]
    _same_fit(fits, "f")


@pytest.mark.parametrize("structure", ["gp", "markov_gp"])
@pytest.mark.parametrize("name", TWINS[:3])
def test_custom_twin_learns_the_same_kernel_hyperparameters(name, structure):
    t, y, lik, twin = _times_and_labels(name)
    start = gp.kernels.Matern32(lengthscale=0.7, variance=0.4)
    fits = [Model({"f": _gp_prior(structure, t, start, learn=True)}, [Observe(likelihood, y, on="f")])
            .fit(tol=1e-11, max_iter=1000) for likelihood in (lik, twin)]
    assert all(fit.converged for fit in fits)
    learned = [np.exp(fit.priors["f"].kernel.log_params) for fit in fits]
    assert not np.allclose(learned[0], [0.7, 0.4], rtol=0.05)           # the search moved
    np.testing.assert_allclose(learned[1], learned[0], rtol=1e-7)
    assert fits[1].hyperparameters["f"] == pytest.approx(fits[0].hyperparameters["f"], rel=1e-7)
    _same_fit(fits, "f", trace=False)     # each stops where its own ELBO gains fall below tol


# --- bad log_prob functions raise errors that name log_prob ------------------------------------

MEAN = np.array([-1.0, 0.0, 0.5, 1.0])
VAR = np.array([0.0, 0.1, 1.0, 3.0])
Y = np.array([0.5, -0.2, 1.0, 2.0])


def _calls(lik):
    """Every public route that evaluates ``log_prob``, on a fresh likelihood."""
    return {
        "variational_expectations": lambda: lik.variational_expectations(MEAN, VAR, Y),
        "log_density": lambda: lik.log_density(MEAN, Y),
        "predict_log_density": lambda: lik.predict_log_density(MEAN, VAR, Y),
        "fit": lambda: Model({"f": gp.GP(gp.kernels.Matern32(), MEAN[:, None])},
                             [Observe(lik, Y, on="f")]).fit(max_iter=3, warn=False),
    }


def _summed(y, f):
    return anp.sum(-0.5 * (y - f) ** 2)


def _centred(y, f):
    return -0.5 * (y - (f - anp.mean(f))) ** 2


def _cumulative(y, f):
    return anp.cumsum(-0.5 * (y - f) ** 2)


def _square_root(y, f):
    return -0.5 * (y - anp.sqrt(f)) ** 2


@pytest.mark.parametrize("route", list(_calls(L.Custom(_summed))))
@pytest.mark.parametrize("log_prob, message", [
    (_summed, r"^log_prob must return one value per element, an array of shape \(\d+,\); got shape \(\)"),
    (_centred, r"^log_prob must be elementwise .* it gave .* evaluated together and .* one point at a time"),
    (_cumulative, r"^log_prob must be elementwise"),
    (_square_root, r"^log_prob must return log densities .* got NaN at y=.*, f=-"),
], ids=["scalar", "centred", "cumulative", "nan"])
def test_bad_log_prob_is_named_with_what_it_returned(log_prob, message, route):
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=message):
        _calls(L.Custom(log_prob))[route]()


def test_a_log_prob_that_is_not_callable_is_named():
    for bad in (None, 3.0, "gaussian"):
        with pytest.raises(ValueError, match=f"^log_prob must be callable; got {bad!r}"):
            L.Custom(bad)


def test_an_elementwise_log_prob_passes_the_checks_once():
    calls = []

    def log_prob(y, f):
        calls.append(np.shape(f))
        return -0.5 * (y - f) ** 2

    lik = L.Custom(log_prob)
    lik.log_density(MEAN, Y)
    checks = len(calls)
    lik.log_density(MEAN, Y)
    assert checks == 1 + 1 + MEAN.size                  # together, one at a time, then the call itself
    assert len(calls) == checks + 1                     # the second call is not checked again
