"""Engine behaviour: step rules, back-offs, warnings, callbacks, progress, acceleration."""

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.inference import (Adaptive, ConvergenceWarning, Decaying, Fixed, Model, StepBackoffWarning)
from efvi.inference.steps import resolve_step
from efvi.models import glm, likelihoods


def _logistic(n=100, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ [0.5, 2.0, -1.0]))).astype(float)
    return Model(latents={"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                 factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def _student_t():
    rng = np.random.default_rng(1)
    X = np.column_stack([np.ones(30), rng.normal(size=30)])
    y = X @ [0.0, 1.0] + 0.1 * rng.normal(size=30)
    y[:6] += 30.0
    return Model(latents={"w": Gaussian.from_mean_cov(np.zeros(2), 1e4 * np.eye(2))},
                 factors=[glm.GLM(likelihoods.StudentT(df=1.5, scale=0.1), X, y, on="w")])


def test_every_step_rule_reaches_the_same_optimum():
    model = _logistic()
    reference = model.fit(tol=1e-15, max_iter=500)      # means to rtol 1e-6 need the ELBO to ~1e-12 relative
    for step in (Fixed(0.5), Adaptive(rho0=0.3, grow=1.5), "adaptive"):
        fit = model.fit(step=step, tol=1e-15, max_iter=500, acceleration=False)
        assert fit.converged
        np.testing.assert_allclose(fit.posterior["w"].mean, reference.posterior["w"].mean, rtol=1e-6)
    fit = model.fit(step=Decaying(rho0=1.0, delay=20.0, power=0.6), tol=0.0, max_iter=150, warn=False)
    np.testing.assert_allclose(fit.posterior["w"].mean, reference.posterior["w"].mean, rtol=1e-6)


def test_acceleration_needs_fewer_iterations_and_keeps_the_answer():
    # breast cancer: plain CVI zig-zags with a ratio of about 0.75 per iteration
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(X.shape[1]), np.eye(X.shape[1]))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X, data.target.astype(float), on="w")])
    # from the prior plain CVI needs ~74 iterations; from the IRLS-style start ~34, of which the early,
    # fast-contracting ones leave little for extrapolation to gain
    for init, gain in (("prior", 2.0), (None, 1.3)):
        plain = model.fit(tol=1e-12, max_iter=500, acceleration=False, init=init)
        fast = model.fit(tol=1e-12, max_iter=500, init=init)
        assert plain.converged and fast.converged
        assert fast.n_iter < plain.n_iter / gain
        assert fast.elbo == pytest.approx(plain.elbo, abs=1e-8)


def test_invalid_proposals_are_never_accepted():
    # Student-t with huge outliers: full steps give a precision that is not positive definite
    seen = []
    with pytest.warns(StepBackoffWarning):
        fit = _student_t().fit(step=1.0, max_iter=60, warn=False,
                               callback=lambda info: seen.append(np.linalg.eigvalsh(info.posterior["w"].cov)))
    assert all(np.all(ev > 0) for ev in seen)
    assert np.any(fit.sites[0].precision < 0)


def test_backoff_warns_for_fixed_steps():
    model = _student_t()
    with pytest.warns(StepBackoffWarning):
        fit = model.fit(step=1.0, max_iter=60, warn=False)
    assert fit.n_backoffs > 0


def test_convergence_warning_callback_and_progress():
    model = _logistic()
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        model.fit(max_iter=2)
    calls = []
    fit = model.fit(callback=lambda info: calls.append(info.iteration) or info.iteration >= 3, warn=False)
    assert calls == [1, 2, 3] and fit.n_iter == 3 and not fit.converged
    assert model.fit(progress=True).converged


def _last_bar(stderr):
    """What a closed progress bar left on screen: the last redraw, ended by a newline."""
    assert stderr.endswith("\n"), "the bar was erased"
    return stderr.rstrip("\n").split("\r")[-1]


def test_the_progress_bar_stays_and_ends_at_the_iterations_run(capsys):
    model = _logistic()
    fit = model.fit(progress=True, max_iter=500)
    line = _last_bar(capsys.readouterr().err)
    assert line.startswith("efvi fit, converged: 100%") and f" {fit.n_iter}/{fit.n_iter} " in line
    assert "/500" not in line
    with pytest.warns(ConvergenceWarning):
        model.fit(progress=True, max_iter=2)
    assert _last_bar(capsys.readouterr().err).startswith("efvi fit, stopped at max_iter=2, not converged: 100%")
    model.fit(progress=True, max_iter=500, callback=lambda info: info.iteration >= 3)
    line = _last_bar(capsys.readouterr().err)
    assert line.startswith("efvi fit, stopped by the callback: 100%") and " 3/3 " in line


def test_step_rule_arguments():
    assert isinstance(resolve_step(None, stochastic=True), Decaying)
    assert isinstance(resolve_step(None, stochastic=False), Adaptive)
    with pytest.raises(ValueError, match="adaptive"):
        resolve_step("adaptive", stochastic=True)
    with pytest.raises(ValueError, match="power"):
        Decaying(power=0.4)
    with pytest.raises(ValueError, match="rho"):
        Fixed(0.0)
    with pytest.raises(ValueError, match="shrink"):
        Adaptive(shrink=1.5)
    assert Decaying(rho0=1.0, delay=1.0, power=1.0).rho(9) == pytest.approx(0.1)


def test_summary_mentions_every_block():
    fit = _logistic().fit()
    text = fit.summary()
    assert "ELBO" in text and "w:" in text and "converged" in text


def _linear_regression(n=200, seed=4, noise_var=0.25):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = X @ [0.3, -1.0, 0.7] + np.sqrt(noise_var) * rng.normal(size=n)
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                  factors=[glm.GLM(likelihoods.Gaussian(variance=noise_var), X, y, on="w")])
    # the exact posterior by dense Bayesian linear regression
    precision = np.eye(3) + X.T @ X / noise_var
    return model, X, precision, np.linalg.solve(precision, X.T @ y / noise_var)


def test_one_minibatch_epoch_sets_every_site_when_the_batch_size_does_not_divide_n():
    # N = 200, |B| = 30: six batches of 30 and a last one of the 20 leftover points
    model, X, precision, mean = _linear_regression()
    n_batches = int(np.ceil(200 / 30))
    before = model.fit(step=1.0, batch_size=30, minibatch="sites", init="prior", max_iter=n_batches - 1,
                       warn=False)
    assert np.count_nonzero(before.sites[0].precision == 0) == 200 - 30 * (n_batches - 1)
    epoch = model.fit(step=1.0, batch_size=30, minibatch="sites", init="prior", max_iter=n_batches,
                      warn=False)
    np.testing.assert_allclose(epoch.sites[0].precision, 1 / 0.25, rtol=1e-14)
    np.testing.assert_allclose(epoch.posterior["w"].precision, precision, rtol=1e-10)
    np.testing.assert_allclose(epoch.posterior["w"].mean, mean, rtol=1e-10)


def test_svi_scales_the_short_last_batch_by_its_own_size():
    # with rho = 1 the SVI message is (N / |B|) times the batch's sites, |B| the actual batch size
    model, X, _, _ = _linear_regression()
    before = model.fit(step=1.0, batch_size=30, minibatch="svi", init="prior", max_iter=6, warn=False)
    last = before.sites[0].precision == 0
    assert np.count_nonzero(last) == 20
    fit = model.fit(step=1.0, batch_size=30, minibatch="svi", init="prior", max_iter=7, warn=False)
    expected = np.eye(3) + (200 / 20) * X[last].T @ X[last] / 0.25
    np.testing.assert_allclose(fit.posterior["w"].precision, expected, rtol=1e-10)


@pytest.mark.parametrize("make, name", [
    (lambda: Decaying(power="a"), "power"), (lambda: Decaying(delay="a"), "delay"),
    (lambda: Decaying(delay=np.nan), "delay"), (lambda: Decaying(rho0="0.5"), "rho0"),
    (lambda: Fixed(True), "rho"), (lambda: Adaptive(grow="x"), "grow"),
    (lambda: Adaptive(shrink=None), "shrink"), (lambda: Adaptive(min_rho="tiny"), "min_rho"),
    (lambda: Adaptive(max_rho=[0.5]), "max_rho"),
])
def test_step_rule_arguments_of_the_wrong_type_raise_named_errors(make, name):
    with pytest.raises(ValueError, match=rf"^{name} must be .*; got "):
        make()
