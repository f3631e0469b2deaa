"""The stopping rule: relative ELBO change, or an estimate of the gain still to come."""

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.inference._gains import estimated_remaining_gain
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
    fit = _logistic().fit(tol=tol, acceleration=False)     # the rule alone (an extrapolation would end it sooner)
    gains = np.diff(fit.elbo_trace)
    assert fit.converged
    assert gains[-1] > tol * abs(fit.elbo)         # the plain change test alone would go on
    assert optimum - fit.elbo <= tol * abs(fit.elbo)


def test_the_change_test_also_asks_for_the_tail_at_the_last_rate():
    from efvi.inference._gains import tail_at_last_rate

    assert tail_at_last_rate([4.0, 3.0]) == pytest.approx(3.0 * 0.75 / 0.25)     # 3x the last gain at rate 0.75
    assert tail_at_last_rate([1.0, 2.0]) == np.inf                               # gains growing: not converging
    for gains in ([1.0], [1.0, -1e-15]):                                           # nothing to extrapolate from
        assert tail_at_last_rate(gains) == 0.0
    # after an extrapolated step no rate is known: a small change alone proves nothing
    assert tail_at_last_rate([np.nan, 1e-9]) == np.inf
    assert tail_at_last_rate([1.0, np.nan]) == np.inf
    assert tail_at_last_rate([np.nan, 1e-6, 1e-7]) == np.inf       # one ratio since: a transient
    # the slower of the last two rates: a gain that rose is no evidence of a fast rate
    assert tail_at_last_rate([1.0, 2.0, 0.1]) == np.inf
    assert tail_at_last_rate([1.0, 0.5, 0.1]) == pytest.approx(0.1 * 0.5 / 0.5)
    assert tail_at_last_rate([1.0, 0.1, 0.09]) == pytest.approx(0.09 * 0.9 / 0.1)


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


def test_the_remaining_gain_follows_a_slowly_rising_rate():
    """Future ratios are taken to rise twice as fast as the last two did; the sum stops once a term is
    below 1e-3 of it, bounding the rest by that term."""
    slow = [1.0, 0.2, 0.0402]                        # ratios 0.2, 0.201: rising by 0.002 a step
    terms = 0.0402 * np.cumprod(0.201 + 0.002 * np.arange(1, 21))
    stop = np.nonzero(terms <= 1e-3 * np.cumsum(terms))[0][0]
    assert estimated_remaining_gain(slow) == pytest.approx(terms[:stop + 1].sum() + terms[stop], rel=1e-12)
    # ratios 0.2 then 0.22: rising by 0.04 a step, they reach 1/2 within 7 steps: no bound
    assert estimated_remaining_gain([1.0, 0.2, 0.044]) == np.inf
    # a steady or falling rate: the geometric tail at the last ratio
    assert estimated_remaining_gain([1.0, 0.2, 0.03]) == pytest.approx(0.03 * 0.15 / 0.85)


def test_anderson_extrapolation_from_consecutive_iterates_solves_a_linear_map():
    """For s <- A s + b in R^3, the pairs of four consecutive iterates give the fixed point exactly."""
    from efvi.inference._acceleration import AndersonAccelerator

    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    A *= 0.8 / np.max(np.abs(np.linalg.eigvals(A)))
    b = rng.normal(size=3)
    accelerator = AndersonAccelerator(depth=5)
    s = np.zeros(3)
    assert accelerator.propose() is None                 # no history yet
    for _ in range(4):
        target = A @ s + b
        accelerator.record(s, target)
        s = target
    np.testing.assert_allclose(accelerator.propose(), np.linalg.solve(np.eye(3) - A, b), rtol=1e-9, atol=1e-12)


def test_a_fit_confirmed_after_extrapolations_is_within_its_tolerance():
    """Mean-field logistic regression on breast cancer converges slowly (rate ~0.9) and is extrapolated:
    the ordinary steps after an extrapolation only confirm convergence once two of them give a rate
    (the first ordinary step's small change used to stop it 5x its tolerance from the optimum)."""
    from sklearn.datasets import load_breast_cancer

    from efvi.expfam import DiagonalGaussian

    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    dim = X.shape[1]
    model = Model({"w": DiagonalGaussian.from_mean_var(np.zeros(dim), np.ones(dim))},
                  [glm.GLM(likelihoods.BernoulliLogit(), X, data.target.astype(float), on="w")])
    optimum = model.fit(tol=1e-14, max_iter=3000).elbo
    tol = 1e-8
    for init in (None, "prior"):
        fit = model.fit(init=init, tol=tol)
        assert fit.converged and fit.state.n_accelerated > 0
        assert optimum - fit.elbo <= tol * abs(optimum)


def test_the_history_is_kept_only_while_convergence_is_slow_and_restarts_after_a_gap():
    from efvi.inference._acceleration import AndersonAccelerator
    from efvi.inference._controller import HISTORY_ABOVE, Controller
    from efvi.inference._state import ControllerState

    controller = Controller(None, ControllerState({}, accelerator=AndersonAccelerator()), 1e-8, False)
    assert controller.keeps_history([0.0]) == (False, False)                 # no rate yet
    assert controller.keeps_history([0.0, 1.0, 1.5]) == (True, True)         # ratio 0.5: slow, start one
    assert controller.keeps_history([0.0, 1.0, 1.5, 1.7]) == (True, False)   # still slow: keep it
    fast = [0.0, 1.0, 1.0 + 0.5 * HISTORY_ABOVE]
    assert controller.keeps_history(fast) == (False, False)                  # fast: no history
    slow_again = fast + [fast[-1] + 0.5 * HISTORY_ABOVE * 0.9]
    assert controller.keeps_history(slow_again) == (True, True)              # after a gap: start afresh
    assert Controller(None, ControllerState({}), 1e-8, False).keeps_history([0.0]) == (False, False)


def test_a_full_step_that_swings_back_is_not_taken_for_convergence():
    """Breast-cancer probit regression, after extrapolated steps, reached a point where a full step
    gained 2e-7 nats 1e-4 nats from the optimum (the iteration swinging between two posteriors): the
    ELBO test passed, and only the full step's Jeffreys divergence shows that the fit still moves."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(X.shape[1]), np.eye(X.shape[1]))},
                  [glm.GLM(likelihoods.Bernoulli(link="probit"), X, data.target.astype(float), on="w")])
    optimum = model.fit(tol=1e-13, max_iter=2000).elbo
    tol = 1e-8
    fit = model.fit(tol=tol)
    assert fit.converged and fit.state.n_accelerated > 0
    assert optimum - fit.elbo <= tol * abs(optimum)


def test_the_ratios_of_gains_are_trusted_only_for_a_small_last_gain_in_a_regular_stretch():
    """A passed ELBO test needs the full step's divergence unless the last gain was within the tolerance
    and the last gains were positive and decreasing; the divergence test assumes the slowest recent rate."""
    from efvi.inference._controller import Controller
    from efvi.inference._gains import UNKNOWN_RATIO, largest_ratio, regular
    from efvi.inference._state import ControllerState

    full = [1.0] * 5
    assert regular([8.0, 4.0, 1.0], full[:3]) and regular([16.0, 8.0, 4.0, 2.0, 1.0], full)
    assert regular([8.0, 4.0, 1.0], [0.5] * 3)                      # a fixed short step: one map
    assert not regular([4.0, 1.0], full[:2])                        # too few to show a rate
    assert not regular([1.0, 1.5, 0.5, 0.1, 0.01], full)            # a gain rose
    assert not regular([4.0, np.nan, 1.0], full[:3]) and not regular([4.0, 1.0, -1e-12], full[:3])
    assert not regular([8.0, 4.0, 1.0], [0.25, 0.5, 1.0])           # back-offs: no one map
    assert largest_ratio([8.0, 4.0, 1.0]) == 0.5
    assert largest_ratio([5.0]) == UNKNOWN_RATIO
    assert largest_ratio([1.0, 2.0, 1.0]) == 1.0 and largest_ratio([1.0, 0.5, 0.0]) == 1.0

    from efvi.inference import Adaptive

    rule = Adaptive()
    controller = Controller(rule, ControllerState(rule.initial_state(), "Adaptive", rule.params()), 1e-8, False)
    elbo, allowed = -1e4, 1e-4
    controller.state.gains, controller.state.steps = [1e3, 2e2], [1.0, 1.0]
    assert controller.elbo_test(elbo, elbo - 1e-5, False, []) == "check"      # ratios 0.2, 5e-8: passed
    assert not controller.needs_divergence                                   # small and regular: trusted
    controller.state.gains, controller.state.steps = [1e3, 2e2], [1.0, 1.0]
    assert controller.elbo_test(elbo, elbo - 1e-3, False, []) == "check"      # passed on ratios 0.2, 5e-6
    assert controller.needs_divergence                                       # but 1e-3 > 1e-4: confirm
    # the test itself: J / (2 (1 - sqrt(r))) <= tol |ELBO| with r the largest recent ratio (here 0.2)
    controller.state.gains = [1.0, 0.2]
    limit = 2.0 * (1.0 - np.sqrt(0.2)) * allowed
    assert controller.divergence_converged(0.99 * limit, elbo) and not controller.divergence_converged(1.01 * limit, elbo)


def test_a_fast_transient_then_a_slower_rate_is_not_taken_for_convergence():
    """A Gaussian mixture whose gains fell by ratios 0.51, 0.023, 0.013 and then settled at 0.34 stopped
    9 tolerances from its optimum (found by an audit of the stopping rule); it must stop within one."""
    from efvi.expfam import Categorical, Dirichlet, NormalWishart
    from efvi.inference import CategoricalDirichlet, GaussianMixture

    rng = np.random.default_rng(1)
    centres = rng.normal(size=(3, 2)) * 3
    X = centres[rng.integers(0, 3, size=300)] + rng.normal(size=(300, 2))
    resp = rng.dirichlet(np.ones(4), size=300)
    model = Model({"weights": Dirichlet(np.full(4, 0.1)),
                   "theta": NormalWishart(np.tile(X.mean(0), (4, 1)), np.ones(4), np.full(4, 3.0),
                                          np.tile(np.linalg.inv(np.cov(X.T)), (4, 1, 1))),
                   "z": Categorical(resp)},
                  [CategoricalDirichlet(on="weights", assignments="z"),
                   GaussianMixture(X, assignments="z", components="theta")])
    best = model.fit(tol=1e-15, max_iter=100_000, warn=False).elbo
    fit = model.fit()
    assert fit.converged
    assert best - fit.elbo <= 1e-8 * abs(best)
