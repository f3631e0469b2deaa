"""The one divergence rule: its arithmetic, its saved state, and every numpy ngvi optimiser stopped by it."""

import numpy as np
import pytest

from efvi.inference import DivergenceError, ngvi
from efvi.inference.divergence import DivergenceRule

from .ngvi.models import LinearRegression, LogisticRegression


def test_a_loss_that_rises_orders_of_magnitude_above_the_window_best_is_divergence():
    rule = DivergenceRule(factor=1e4, window=5, name="Opt")
    for step, loss in enumerate([2.3, 1.0, 0.5, 30.0, 0.4], start=1):   # minibatch noise: 60x, not 1e4x
        rule(step, loss=loss)
    with pytest.raises(DivergenceError, match="step 6: Opt diverged: the loss rose to 2.3e\\+04") as info:
        rule(6, loss=0.4 + 1e4 * 2.3 + 1.0)
    assert (info.value.step, info.value.what, info.value.reference) == (6, "loss", 0.4)


def test_the_loss_scale_is_the_first_or_best_loss_so_negative_losses_work():
    rule = DivergenceRule(factor=10.0, window=100)
    rule(1, loss=-50.0)
    rule(2, loss=-50.0 + 400.0)          # 8 times the scale 50: not yet
    with pytest.raises(DivergenceError):
        rule.check(3, loss=-50.0 + 600.0)


def test_the_norm_reference_is_the_window_minimum_after_steps_floored_at_one():
    rule = DivergenceRule(factor=100.0, window=3)
    rule(1, norm=0.0)                    # from zero ...
    rule(2, norm=90.0)                   # ... to the solution's scale: floor 1, within 100x
    rule(3, norm=95.0)
    rule(4, norm=1000.0)                 # 11x the window minimum 90
    rule(5, norm=5000.0)                 # the window (steps 3-5) minimum is 95: 53x
    with pytest.raises(DivergenceError, match="parameter norm grew to 2e\\+05 from 1000") as info:
        rule(6, norm=2e5)                # the window (steps 4-6) minimum is 1000: 200x
    assert info.value.what == "parameter norm"


def test_a_refused_step_leaves_the_history_and_the_state_dict_round_trips():
    rule = DivergenceRule(factor=10.0, window=4)
    for step, (loss, norm) in enumerate([(3.0, 1.0), (2.0, 2.0), (1.0, 3.0)], start=1):
        rule(step, loss=loss, norm=norm)
    saved = rule.state_dict()
    with pytest.raises(DivergenceError):
        rule(4, loss=1e3, norm=3.0)
    assert rule.state_dict() == saved
    other = DivergenceRule()
    other.load_state_dict(saved)
    assert other.state_dict() == saved
    for bad in ({**saved, "losses": [[2, 1.0], [1, 2.0]]}, {**saved, "norms": [[1, float("nan")]]},
                {**saved, "factor": 0.5}, {"factor": 10.0}):
        with pytest.raises(ValueError, match="divergence state must be"):
            other.load_state_dict(bad)


@pytest.mark.parametrize("factor, window", [(1.0, 10), (float("inf"), 10), (10.0, 0), (10.0, 2.5), (True, 3)])
def test_invalid_rule_settings_are_named(factor, window):
    with pytest.raises(ValueError, match="divergence (factor|window)"):
        DivergenceRule(factor, window)


def _regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 4))
    return X, 1e3 * (X @ rng.normal(size=4) + rng.normal(size=100))


@pytest.mark.parametrize("make, lr", [
    (ngvi.Adam, 1e8), (ngvi.RMSprop, 1e8), (ngvi.IVON, 1e6), (ngvi.Vadam, 1e6), (ngvi.Vprop, 1e6),
    (ngvi.VOGN, 1e3), (ngvi.VAN, 1e3)])
def test_every_ngvi_optimiser_stops_a_diverging_run_by_name_with_its_state_kept(make, lr):
    X, y = _regression()
    model = LinearRegression(4, 1.0)
    if make in (ngvi.VOGN, ngvi.VAN):    # softmax-free logistic regression on inputs 100 times too large
        model, y = LogisticRegression(4), (X[:, 0] > 0).astype(float)
        X = 100 * X
    opt = make(model, 100, lr=lr)
    with pytest.raises(DivergenceError, match=f"{make.__name__} diverged") as info:
        for step in range(200):
            rows = slice((step * 20) % 100, (step * 20) % 100 + 20)
            opt.step(X[rows], y[rows])
    assert opt.n_steps == info.value.step - 1
    location = getattr(opt, "mean", getattr(opt, "params", None))
    assert np.all(np.isfinite(location))


@pytest.mark.parametrize("make, lr", [(ngvi.Adam, 0.05), (ngvi.IVON, 0.1), (ngvi.VOGN, 0.1), (ngvi.Vadam, 0.05)])
def test_healthy_runs_in_large_units_are_not_stopped(make, lr):
    X, y = _regression()                 # y in thousands: the solution's norm is ~1e3 from a start near 0
    opt = make(LinearRegression(4, 1.0), 100, lr=lr)
    for step in range(300):
        rows = slice((step * 20) % 100, (step * 20) % 100 + 20)
        opt.step(X[rows], y[rows])
    assert opt.n_steps == 300


def test_the_bayesian_mlp_estimators_stop_a_diverging_fit_by_name():
    from efvi.models.nn import BayesianMLPClassifier, BayesianMLPRegressor

    X, y = _regression()
    with pytest.raises(DivergenceError, match="IVON diverged"):
        BayesianMLPRegressor(hidden_layer_sizes=(8,), lr=1e6, epochs=3).fit(X, y)
    labels = (X[:, 0] > 0).astype(int)
    with pytest.raises(DivergenceError, match="IVON diverged"):
        BayesianMLPClassifier(hidden_layer_sizes=(8,), lr=1e9, epochs=3).fit(100 * X, labels)


def test_the_vpng_optimiser_stops_a_diverging_run_and_keeps_its_state():
    from efvi.inference import vpng
    from efvi.inference.ngvi import NonFiniteGradientError

    opt = vpng.VPNG(learning_rate=0.1)
    params = np.array([1.0, -1.0])
    for loss in (2.0, 1.5):
        params = opt.step(params, -params, loss=loss)
    saved = [a.copy() for a in opt.square_avg_]
    with pytest.raises(DivergenceError, match="step 3: the VPNG optimiser diverged: the loss") as info:
        opt.step(params, -params, loss=1e6)
    with pytest.raises(NonFiniteGradientError, match="step 3"):
        opt.step(params, np.array([1e200, 0.0]))           # its square overflows
    assert info.value.step == 3 and opt.n_steps_ == 2
    assert all(np.array_equal(a, b) for a, b in zip(saved, opt.square_avg_))
