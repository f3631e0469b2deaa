"""Anderson acceleration of a whole sweep when a fit has several blocks (VMP and CVI block updates).

With several blocks one iteration is a sweep of block updates, a fixed-point map
on all the sites together; the engine extrapolates it and keeps the extrapolated
sites only where every posterior is valid and the ELBO does not decrease.
References: the same fits without acceleration run to their fixed point, and a
resumed fit against the uninterrupted one.
"""

import numpy as np
import pytest

from efvi import Model, glm, likelihoods
from efvi.expfam import DiagonalGaussian, Gamma
from efvi.inference import FitResult

from .test_convergence_audit import ard_mean_field_model


def _mean_field_regression(seed=2, n=200, dim=6):
    """Mean-field weights and a Gamma noise precision on correlated columns: Jacobi sweeps crawl."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim)) @ (0.3 * rng.normal(size=(dim, dim)) + np.eye(dim))
    X[:, 0] = 1.0
    y = X @ rng.normal(size=dim) + 0.5 * rng.normal(size=n)
    return Model({"w": DiagonalGaussian.from_mean_var(np.zeros(dim), np.ones(dim)), "tau": Gamma(1.0, 1.0)},
                 [glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w")])


def _monotone(fit):
    return np.all(np.diff(fit.elbo_trace) >= -1e-9 * abs(fit.elbo))


def test_mean_field_regression_with_gamma_noise_converges_in_a_fifth_of_the_sweeps():
    model = _mean_field_regression()
    fit = model.fit(warn=False)
    plain = model.fit(acceleration=False, warn=False)
    optimum = model.fit(acceleration=False, tol=0.0, max_iter=3000, warn=False)
    assert fit.converged and fit.n_iter <= 60 and fit.state.n_accelerated > 0 and _monotone(fit)
    assert not plain.converged and plain.n_iter == 200          # the sweeps alone crawl
    assert optimum.elbo - fit.elbo <= 1e-8 * abs(optimum.elbo)
    np.testing.assert_allclose(fit.posterior["w"].mean, optimum.posterior["w"].mean, rtol=0, atol=1e-4)


def test_ard_regression_with_mean_field_weights_takes_fewer_sweeps_to_the_same_optimum():
    model = ard_mean_field_model()
    fit = model.fit(max_iter=2000, warn=False)
    plain = model.fit(max_iter=2000, acceleration=False, warn=False)
    assert fit.converged and plain.converged and _monotone(fit)
    assert fit.n_iter <= 0.6 * plain.n_iter
    assert fit.elbo == pytest.approx(plain.elbo, abs=1e-8 * abs(plain.elbo))


def test_a_resumed_accelerated_fit_takes_the_uninterrupted_path(tmp_path):
    model = _mean_field_regression()
    whole = model.fit(warn=False)
    first = model.fit(max_iter=25, warn=False)
    assert 0 < first.state.n_accelerated < whole.state.n_accelerated       # stopped between extrapolations
    first.save(tmp_path / "fit.npz")
    for init in (first, FitResult.load(tmp_path / "fit.npz")):
        resumed = model.fit(init=init, warn=False)
        np.testing.assert_array_equal(resumed.elbo_trace, whole.elbo_trace)
        assert resumed.state.n_accelerated == whole.state.n_accelerated
