"""Saving, loading and resuming fits."""

import autograd.numpy as anp
import numpy as np
import pytest

from efvi.expfam import Gamma, Gaussian
from efvi.inference import FitResult, Model, MonteCarloFactor
from efvi.models import glm, likelihoods


def _logistic_model():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(80), rng.normal(size=(80, 2))])
    y = (rng.random(80) < 1 / (1 + np.exp(-X @ [0.3, 1.0, -2.0]))).astype(float)
    return Model(latents={"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                 factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def test_save_load_round_trip(tmp_path):
    fit = _logistic_model().fit(max_iter=50)
    path = tmp_path / "fit.npz"
    fit.save(path)
    loaded = FitResult.load(path)
    np.testing.assert_array_equal(loaded.elbo_trace, fit.elbo_trace)
    np.testing.assert_allclose(loaded.posterior["w"].mean, fit.posterior["w"].mean, rtol=0)
    np.testing.assert_allclose(loaded.posterior["w"].cov, fit.posterior["w"].cov, rtol=0)
    np.testing.assert_array_equal(loaded.sites[0].precision, fit.sites[0].precision)
    np.testing.assert_array_equal(loaded.sites[0]["w"][0], fit.sites[0].natural_mean)
    assert loaded.n_iter == fit.n_iter and loaded.converged == fit.converged
    # the file holds no pickled objects
    with np.load(path, allow_pickle=False) as data:
        assert all(data[k].dtype != object for k in data.files)


def test_resume_reproduces_an_uninterrupted_fit(tmp_path):
    model = _logistic_model()
    full = model.fit(max_iter=12, tol=0.0, warn=False)
    part = model.fit(max_iter=5, tol=0.0, warn=False)
    path = tmp_path / "part.npz"
    part.save(path)
    resumed = model.fit(init=FitResult.load(path), max_iter=7, tol=0.0, warn=False)
    assert resumed.n_iter == full.n_iter and resumed.converged == full.converged
    np.testing.assert_allclose(resumed.elbo_trace, full.elbo_trace, rtol=1e-13)
    np.testing.assert_allclose(resumed.posterior["w"].mean, full.posterior["w"].mean, rtol=1e-12)


def test_resume_of_a_stochastic_fit_replays_the_random_stream():
    rng = np.random.default_rng(1)
    counts = rng.poisson(2.0, size=10).astype(float)

    def log_density(lam, y):
        return y * np.log(lam) - lam

    model = Model(latents={"rate": Gamma(1.0, 1.0)},
                  factors=[MonteCarloFactor(log_density, on="rate", data=(counts,), n_samples=8)])
    full = model.fit(max_iter=10, tol=0.0, seed=5, warn=False)
    part = model.fit(max_iter=4, tol=0.0, seed=5, warn=False)
    resumed = model.fit(init=part, max_iter=6, tol=0.0, seed=123, warn=False)
    np.testing.assert_allclose(resumed.posterior["rate"].natural[1], full.posterior["rate"].natural[1], rtol=1e-13)


def test_resume_with_a_different_model_is_rejected():
    fit = _logistic_model().fit(max_iter=3, warn=False)
    other = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), np.ones((5, 2)), np.ones(5), on="w")])
    with pytest.raises(ValueError, match="init"):
        other.fit(init=fit)


def test_resume_keeps_the_history_of_the_remaining_gain_rule(tmp_path):
    """Stopped one iteration before the estimated remaining gain ends the fit, a resumed fit stops where
    the uninterrupted one does (the rule needs the last three gains, two of them from before the save)."""
    model = _logistic_model()
    tol = 1e-8
    full = model.fit(tol=tol, acceleration=False)     # ended by the rule (not by an extrapolated step)
    assert full.converged and np.diff(full.elbo_trace)[-1] > tol * abs(full.elbo)   # the rule stopped it
    part = model.fit(max_iter=full.n_iter - 1, tol=tol, warn=False, acceleration=False)
    assert not part.converged
    path = tmp_path / "part.npz"
    part.save(path)
    resumed = model.fit(init=FitResult.load(path), tol=tol, acceleration=False)
    assert resumed.n_iter == full.n_iter and resumed.converged
    np.testing.assert_allclose(resumed.elbo_trace, full.elbo_trace, rtol=1e-13)
