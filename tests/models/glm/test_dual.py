"""The GLM's dual route (N < D) against the primal route on the same model, entry by entry."""

import numpy as np
import pytest

from efvi.expfam import Gamma, Gaussian
from efvi.inference import FitResult, Model
from efvi.models import glm, likelihoods
from efvi.models.glm.dual import DualWeights


def _problem(n=25, dim=60, seed=0, poisson=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim)) / np.sqrt(dim) * 2
    w = rng.normal(size=dim)
    if poisson:
        y = rng.poisson(np.exp(X @ w / 2)).astype(float)
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-X @ w))).astype(float)
    return rng, X, y


def _prior(rng, dim, general):
    if not general:
        return Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
    A = rng.normal(size=(dim, dim)) / np.sqrt(dim)
    return Gaussian.from_mean_cov(0.3 * rng.normal(size=dim), A @ A.T + 0.5 * np.eye(dim))


def _primal(likelihood, X, y):
    factor = glm.GLM(likelihood, X, y, on="w")
    factor.replace_block = lambda block: None          # keep the D x D route
    return factor


@pytest.mark.parametrize("general_prior", [False, True])
@pytest.mark.parametrize("poisson", [False, True])
def test_dual_equals_primal(general_prior, poisson):
    rng, X, y = _problem(poisson=poisson)
    y[3] = np.nan                                          # a missing point keeps an empty site
    prior = _prior(rng, X.shape[1], general_prior)
    make = likelihoods.Poisson if poisson else likelihoods.BernoulliLogit
    dual_model = Model({"w": prior}, [glm.GLM(make(), X, y, on="w")])
    primal_model = Model({"w": prior}, [_primal(make(), X, y)])
    block = dual_model.blocks["w"]
    assert isinstance(block, DualWeights)
    # the two conjugate computations from the same sites (those of a converged primal fit)
    primal = primal_model.fit(tol=1e-12, max_iter=200)
    sites = (primal.sites[0].natural_mean, primal.sites[0].precision)
    q_dual, q_primal = block.posterior(sites), primal.posterior["w"]
    np.testing.assert_allclose(q_dual.mean, q_primal.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q_dual.cov, q_primal.cov, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q_dual.var, q_primal.var, rtol=1e-10)
    np.testing.assert_allclose(q_dual.points.mean, X @ q_primal.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(q_dual.points.var, np.einsum("nd,de,ne->n", X, q_primal.cov, X), rtol=1e-10)
    assert block.kl(q_dual) == pytest.approx(primal_model.blocks["w"].kl(q_primal), rel=1e-10)
    X_new = rng.normal(size=(7, X.shape[1]))
    mean, var = q_dual.predict(X_new)
    np.testing.assert_allclose(mean, X_new @ q_primal.mean, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(var, np.einsum("md,de,me->m", X_new, q_primal.cov, X_new), rtol=1e-10)
    np.testing.assert_allclose(q_dual.to_gaussian().precision, q_primal.precision, rtol=1e-7, atol=1e-9)
    # and the fits reach the same optimum
    dual = dual_model.fit(tol=1e-12, max_iter=200)
    assert dual.converged and dual.elbo == pytest.approx(primal.elbo, rel=1e-10)
    np.testing.assert_allclose(dual.posterior["w"].mean, q_primal.mean, rtol=1e-5, atol=1e-7)
    assert dual.sites[0].precision[3] == 0.0


def test_dual_with_a_gamma_noise_block_equals_primal():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 45))
    y = X @ rng.normal(size=45) / 5 + 0.3 * rng.normal(size=20)
    latents = {"w": Gaussian.from_mean_cov(np.zeros(45), np.eye(45)), "tau": Gamma(2.0, 1.0)}
    dual = Model(latents, [glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w")]).fit(tol=1e-13)
    primal = Model(latents, [_primal(likelihoods.Gaussian(precision="tau"), X, y)]).fit(tol=1e-13)
    assert dual.converged and primal.converged
    assert dual.elbo == pytest.approx(primal.elbo, rel=1e-11)
    np.testing.assert_allclose(dual.posterior["tau"].mean, primal.posterior["tau"].mean, rtol=1e-9)
    np.testing.assert_allclose(dual.posterior["w"].mean, primal.posterior["w"].mean, rtol=1e-8, atol=1e-11)


def test_dual_minibatches_and_resume(tmp_path):
    _, X, y = _problem(n=24, dim=40, seed=2)
    prior = Gaussian.from_mean_cov(np.zeros(40), np.eye(40))
    model = Model({"w": prior}, [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    kwargs = dict(step=0.5, batch_size=10, minibatch="sites", tol=0.0, warn=False)
    full = model.fit(max_iter=12, **kwargs)
    primal = Model({"w": prior}, [_primal(likelihoods.BernoulliLogit(), X, y)]).fit(max_iter=12, **kwargs)
    np.testing.assert_allclose(full.posterior["w"].mean, primal.posterior["w"].mean, rtol=1e-9, atol=1e-12)
    part = model.fit(max_iter=5, **kwargs)
    part.save(tmp_path / "dual.npz")
    resumed = model.fit(init=FitResult.load(tmp_path / "dual.npz"), max_iter=7, **kwargs)
    np.testing.assert_array_equal(resumed.posterior["w"].mean, full.posterior["w"].mean)


def test_wide_logistic_regression_is_solved_in_the_data_space():
    """N = 50, D = 2000: the primal route factorises a 2000 x 2000 matrix per proposal."""
    _, X, y = _problem(n=50, dim=2000, seed=4)
    fit = Model({"w": Gaussian.from_mean_cov(np.zeros(2000), np.eye(2000))},
                [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit(tol=1e-13, max_iter=500)
    assert fit.converged and fit.posterior["w"].mean.shape == (2000,)
    # the optimality condition of the mean: X^T g_m = S_0^{-1} (m - m_0) with g_m = dE/dm at the marginals
    q = fit.posterior["w"]
    points = q.points
    from efvi.models.likelihoods import BernoulliLogit

    _, d_mean, _ = BernoulliLogit().variational_expectations(points.mean, points.var, y)
    np.testing.assert_allclose(X.T @ d_mean, q.mean, atol=1e-7 * np.abs(q.mean).max())
