"""The stopping rule: relative ELBO change, or an estimate of the gain still to come."""

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.inference._controller import estimated_remaining_gain
from efvi.models import glm, gp, likelihoods
from efvi.models.observe import Observe


def test_estimate_is_the_geometric_tail_of_the_last_ratio():
    gains = [100.0, 10.0, 0.5]                      # ratios 0.1 then 0.05
    assert estimated_remaining_gain(gains) == pytest.approx(0.5 * 0.05 / 0.95, rel=1e-15)
    assert estimated_remaining_gain([7.0] + gains) == estimated_remaining_gain(gains)   # only the last three count
    steady = [100.0, 10.0, 1.0]                     # ratio 0.1 throughout: the tail 0.1 + 0.01 + ...
    assert estimated_remaining_gain(steady) == pytest.approx(1.0 / 9.0, rel=1e-15)


@pytest.mark.parametrize("gains", [
    [10.0, 1.0],                                    # too few
    [100.0, 10.0, 2.0],                             # ratio growing
    [100.0, 60.0, 1.0],                             # first ratio above 1/2
    [100.0, np.nan, 0.1],                           # an extrapolated step
    [100.0, 10.0, -0.1],                            # the ELBO fell
    [100.0, 10.0, 0.0],                             # a rejected step
])
def test_estimate_needs_a_steady_fast_rate(gains):
    assert estimated_remaining_gain(gains) == np.inf


def _logistic(seed=0, n=3000, dim=6):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, dim - 1))])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=dim)))).astype(float)
    prior = Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
    return Model(latents={"w": prior}, factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def _poisson(seed=1, n=2000, dim=4):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, dim - 1)) / 2])
    y = rng.poisson(np.exp(X @ rng.normal(size=dim) / 2)).astype(float)
    prior = Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
    return Model(latents={"w": prior}, factors=[glm.GLM(likelihoods.Poisson(), X, y, on="w")])


def _gp_classification(seed=2, n=150):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, size=n))[:, None]
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * np.sin(2 * x[:, 0])))).astype(float)
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    return Model({"f": gp.GP(kernel, x)}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])


@pytest.mark.parametrize("make", [_logistic, _poisson, _gp_classification])
def test_the_bound_holds_along_real_fits(make):
    """Wherever the rule applies, the gain the fit still made is at most 5% above the estimate."""
    fit = make().fit(tol=1e-14, max_iter=100, warn=False, acceleration=False)
    trace = np.array(fit.elbo_trace)
    gains = list(np.diff(trace))
    checked = 0
    for k in range(3, len(gains)):
        estimate = estimated_remaining_gain(gains[:k])
        if np.isfinite(estimate) and estimate > 1e-11 * abs(trace[-1]):    # above rounding
            still_to_gain = trace[-1] - trace[k]
            assert still_to_gain <= 1.05 * estimate
            checked += 1
    assert checked > 0


def test_the_rule_saves_the_confirming_step_without_losing_accuracy():
    model = _logistic()
    optimum = model.fit(tol=1e-14, max_iter=100, warn=False).elbo
    tol = 1e-9
    fit = _logistic().fit(tol=tol)
    gains = np.diff(fit.elbo_trace)
    assert fit.converged
    assert gains[-1] > tol * abs(fit.elbo)         # the plain change test alone would go on
    assert optimum - fit.elbo <= tol * abs(fit.elbo)


def test_the_change_test_also_asks_for_the_tail_at_the_last_rate():
    from efvi.inference._controller import _tail_at_last_rate

    assert _tail_at_last_rate([4.0, 3.0]) == pytest.approx(3.0 * 0.75 / 0.25)     # 3x the last gain at rate 0.75
    assert _tail_at_last_rate([1.0, 2.0]) == np.inf                               # gains growing: not converging
    for gains in ([1.0], [1.0, -1e-15], [np.nan, 1e-9]):                           # nothing to extrapolate from
        assert _tail_at_last_rate(gains) == 0.0


def test_a_slowly_converging_fit_stops_near_its_optimum_not_at_a_small_change():
    """Plain CVI from the prior on breast cancer contracts at about 0.75 per iteration: a change of tol
    alone would stop it about 3 tol |ELBO| short of the optimum."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(X.shape[1]), np.eye(X.shape[1]))},
                  [glm.GLM(likelihoods.BernoulliLogit(), X, data.target.astype(float), on="w")])
    optimum = model.fit(tol=1e-14, max_iter=1000).elbo
    tol = 1e-8
    fit = model.fit(init="prior", tol=tol, acceleration=False, max_iter=1000)
    assert fit.converged
    assert optimum - fit.elbo <= 1.2 * tol * abs(optimum)
