"""Engine behaviour: step rules, back-offs, warnings, callbacks, progress, acceleration."""

import numpy as np
import pytest

from expfam import Gaussian
from inference import (Adaptive, ConvergenceWarning, Decaying, Fixed, Model, StepBackoffWarning)
from inference.steps import resolve_step
from models import glm, likelihoods


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
    reference = model.fit(tol=1e-12)
    for step in (Fixed(0.5), Adaptive(rho0=0.3, grow=1.5), "adaptive"):
        fit = model.fit(step=step, tol=1e-12, max_iter=500, acceleration=False)
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
