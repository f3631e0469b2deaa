"""Exact resume everywhere, and fits that never change the model they came from."""

import numpy as np
import pytest

from efvi.expfam import Gamma, Gaussian
from efvi.inference import Adaptive, FitResult, Model
from efvi.models import Observe, glm, gp, lds, likelihoods


def _gp_classification(learn=True, n=40):
    rng = np.random.default_rng(3)
    X = np.sort(rng.uniform(-3, 3, size=n))[:, None]
    y = (rng.random(n) < 1 / (1 + np.exp(-3 * np.sin(2 * X[:, 0])))).astype(float)
    prior = gp.GP(gp.kernels.Matern32(lengthscale=0.5, variance=0.5), X, learn_hyperparameters=learn)
    return Model({"f": prior}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])


def _markov_gp_counts(learn=True, n=300):
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 60, size=n))
    y = rng.poisson(np.exp(np.sin(t / 5))).astype(float)
    prior = lds.MarkovGP(gp.kernels.Matern32(lengthscale=1.0, variance=0.5), t, learn_hyperparameters=learn)
    return Model({"f": prior}, [Observe(likelihoods.Poisson(), y, on="f")])


def _logistic():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(120), rng.normal(size=(120, 3))])
    y = (rng.random(120) < 1 / (1 + np.exp(-X @ [0.3, 1.0, -2.0, 0.5]))).astype(float)
    return Model({"w": Gaussian.from_mean_cov(np.zeros(4), np.eye(4))},
                 [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def _linear_regression_vmp():
    rng = np.random.default_rng(5)
    X = np.column_stack([np.ones(60), rng.normal(size=(60, 2))])
    y = X @ [1.0, -0.5, 0.25] + 0.3 * rng.normal(size=60)
    return Model({"w": Gaussian.from_mean_cov(np.zeros(3), 10 * np.eye(3)), "tau": Gamma(1.0, 1.0)},
                 [glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w")])


def _assert_same_fit(a, b):
    np.testing.assert_array_equal(a.elbo_trace, b.elbo_trace)
    np.testing.assert_array_equal(a.rho_trace, b.rho_trace)
    assert a.n_iter == b.n_iter and a.converged == b.converged
    for name in a.posterior:
        np.testing.assert_array_equal(a.posterior[name].mean, b.posterior[name].mean)
        np.testing.assert_array_equal(a.posterior[name].var, b.posterior[name].var)
    assert a.hyperparameters == b.hyperparameters


@pytest.mark.parametrize("make, chunk", [(_gp_classification, 3), (_markov_gp_counts, 4), (_logistic, 2)])
def test_a_fit_resumed_from_files_in_chunks_equals_the_uninterrupted_fit(make, chunk, tmp_path):
    """Stopped every ``chunk`` iterations (inside site sweeps and inside the hyperparameter search),
    saved, loaded and resumed, the fit takes exactly the uninterrupted path."""
    model = make()
    full = model.fit(tol=1e-9)
    assert full.converged
    path = tmp_path / "fit.npz"
    part = model.fit(max_iter=chunk, tol=1e-9, warn=False)
    pieces = 1
    while not part.converged:
        part.save(path)
        part = model.fit(init=FitResult.load(path), max_iter=chunk, tol=1e-9, warn=False)
        pieces += 1
        assert pieces < 200
    assert pieces > 3
    _assert_same_fit(part, full)


def test_resume_with_learned_hyperparameters_reports_the_learned_values(tmp_path):
    model = _markov_gp_counts()
    full = model.fit()
    part = model.fit(max_iter=5, warn=False)
    part.save(tmp_path / "part.npz")
    loaded = FitResult.load(tmp_path / "part.npz")
    assert loaded.hyperparameters == part.hyperparameters
    resumed = model.fit(init=loaded)
    assert set(resumed.hyperparameters["f"]) == {"lengthscale", "variance"}
    assert resumed.hyperparameters == full.hyperparameters


@pytest.mark.parametrize("make", [_gp_classification, _markov_gp_counts, _logistic, _linear_regression_vmp])
def test_fitting_a_model_twice_gives_the_same_answer_and_leaves_the_model_unchanged(make):
    model = make()
    before = {b: (getattr(block, "kernel", None), np.array(block.hyperparameters()))
              for b, block in model.blocks.items()}
    first, second = model.fit(), model.fit()
    _assert_same_fit(first, second)
    for b, block in model.blocks.items():
        assert getattr(block, "kernel", None) is before[b][0]
        np.testing.assert_array_equal(block.hyperparameters(), before[b][1])


def test_the_users_prior_and_step_rule_objects_are_not_changed():
    kernel = gp.kernels.Matern32(lengthscale=0.5, variance=0.5)
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(30, 1))
    y = (rng.random(30) < 1 / (1 + np.exp(-2 * np.sin(2 * X[:, 0])))).astype(float)
    prior = gp.GP(kernel, X, learn_hyperparameters=True)
    rule = Adaptive(rho0=0.5)
    model = Model({"f": prior}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    first = model.fit(step=rule)
    second = model.fit(step=rule)
    assert first.converged
    assert prior.kernel is kernel and prior.name is None
    assert rule.initial_state() == {"current": 0.5, "rejected": False}
    np.testing.assert_array_equal(first.elbo_trace, second.elbo_trace)
    assert first.priors["f"].kernel is not kernel
    assert first.hyperparameters["f"]["lengthscale"] != pytest.approx(0.5)


def test_a_resumed_result_is_left_as_it_was():
    model = _logistic()
    part = model.fit(max_iter=2, warn=False)
    trace, sites = part.elbo_trace.copy(), part.sites[0].precision.copy()
    model.fit(init=part)
    np.testing.assert_array_equal(part.elbo_trace, trace)
    np.testing.assert_array_equal(part.sites[0].precision, sites)
    assert part.n_iter == 2
