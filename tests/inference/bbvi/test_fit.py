"""bbvi.fit: convergence to the CVI optimum on logistic regression, to the VMP fixed point on a
two-block model, the steps, the result, and named errors for bad input."""

import math

import autograd.numpy as anp
import numpy as np
import pytest

from efvi.expfam import DiagonalGaussian, Gamma, Gaussian, flatten
from efvi.inference import ConvergenceWarning, Model, bbvi
from efvi.models import glm, likelihoods

from .models import GaussianMean, NormalGamma


def NO_STOPPING(n_iter):
    """Options that keep the stopping rule from ever being checked: these tests look at the iterates of a
    fixed schedule after exactly ``n_iter`` steps (the rule needs two windows)."""
    return {"window": n_iter, "warn": False}


def _logistic(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ [0.5, 2.0, -1.0]))).astype(float)

    def log_joint(w):                                   # vectorized: w has shape (S, 3)
        a = w @ X.T
        return anp.sum(y * a - anp.logaddexp(0.0, a), axis=-1) - 0.5 * anp.sum(w ** 2, axis=-1)

    def expected_log_joint(q):
        mean, var = X @ q.mean, np.einsum("nd,de,ne->n", X, np.atleast_2d(q.cov if hasattr(q, "cov") else
                                                                          np.diag(q.var)), X)
        return (np.sum(likelihoods.BernoulliLogit().variational_expectations(mean, var, y)[0])
                - 0.5 * np.sum(q.mean ** 2 + q.var))

    return X, y, log_joint, expected_log_joint


@pytest.mark.parametrize("family,estimator,control_variate", [
    (DiagonalGaussian, "score", "loo"), (DiagonalGaussian, "score", "optimal"),
    (DiagonalGaussian, "reparam", None), (Gaussian, "reparam", None)])
def test_bbvi_reaches_the_cvi_optimum_of_logistic_regression(family, estimator, control_variate):
    """Within the stationary Monte Carlo spread of a natural step rho with gradient variance v: |dlambda| ~ sqrt(rho v / 2)."""
    X, y, log_joint, expected = _logistic()
    prior = (DiagonalGaussian.from_mean_var(np.zeros(3), np.ones(3)) if family is DiagonalGaussian
             else Gaussian.from_mean_cov(np.zeros(3), np.eye(3)))
    cvi = Model({"w": prior}, [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit(tol=1e-12)

    def schedule(t):
        return 0.3 / (1 + t / 50) ** 0.6

    n_iter = 2000
    fit = bbvi.fit(log_joint, prior, estimator=estimator, control_variate=control_variate, n_iter=n_iter,
                   n_samples=10, seed=0, vectorized=True, learning_rate=schedule, expected_log_joint=expected,
                   **NO_STOPPING(n_iter))
    q = fit.posterior["z"]
    error = np.linalg.norm(flatten(q.natural, family.event_ndims) - flatten(cvi.posterior["w"].natural,
                                                                          family.event_ndims))
    spread = np.sqrt(schedule(n_iter - 1) * fit.grad_variance["z"][-200:].mean() / 2)
    assert error < 4 * spread
    # the log joint above has no constants: the CVI ELBO is this one minus (D / 2) log(2 pi)
    assert cvi.elbo + 1.5 * np.log(2 * np.pi) - fit.exact_elbo_trace[-1] == pytest.approx(0.0, abs=0.05)
    np.testing.assert_allclose(q.mean, cvi.posterior["w"].mean, atol=0.1 * np.sqrt(cvi.posterior["w"].var).max())


def _vmp_fixed_point(model, n_iter=200):
    """Coordinate ascent on q(mu) q(tau) for the normal-gamma model, by hand."""
    y, n = model.y, len(model.y)
    shape, rate = model.init["tau"].shape, model.init["tau"].rate
    for _ in range(n_iter):
        e_tau = shape / rate
        precision = 1 / model.s0 ** 2 + n * e_tau
        mean, var = e_tau * y.sum() / precision, 1 / precision
        shape = model.a0 + n / 2
        rate = model.b0 + 0.5 * (np.sum((y - mean) ** 2) + n * var)
    return mean, var, shape, rate


@pytest.mark.parametrize("control_variate", ["loo", "optimal"])
def test_two_block_fit_with_terms_reaches_the_vmp_fixed_point(control_variate):
    model = NormalGamma()

    def schedule(t):
        return 0.5 / (1 + t / 20) ** 0.7

    n_iter = 1500
    fit = bbvi.fit(model.terms, model.init, control_variate=control_variate, n_iter=n_iter, n_samples=10, seed=1,
                   learning_rate=schedule, **NO_STOPPING(n_iter))
    mean, var, shape, rate = _vmp_fixed_point(model)
    assert fit.options["rao_blackwellised"]
    targets = {"mu": DiagonalGaussian.from_mean_var([mean], [var]), "tau": Gamma(shape, rate)}
    for name, target in targets.items():
        error = np.linalg.norm(flatten(fit.posterior[name].natural, type(target).event_ndims)
                               - flatten(target.natural, type(target).event_ndims))
        spread = np.sqrt(schedule(n_iter - 1) * fit.grad_variance[name][-200:].mean() / 2)
        assert error < 4 * spread, (name, error, spread)
    assert fit.posterior["mu"].mean[0] == pytest.approx(mean, abs=0.02)
    assert fit.posterior["tau"].mean == pytest.approx(shape / rate, rel=0.05)


@pytest.mark.parametrize("step,learning_rate", [("adam", 0.05), ("sgd", 0.2)])
def test_euclidean_steps_reach_the_posterior_of_a_conjugate_model(step, learning_rate):
    model = GaussianMean(DiagonalGaussian, dim=1, n=4)
    fit = bbvi.fit(_batched(model), model.init, step=step, learning_rate=lambda t: learning_rate / (1 + t / 500),
                   n_iter=3000, n_samples=10, seed=0, vectorized=True, **NO_STOPPING(3000))
    q = DiagonalGaussian.from_natural(model.posterior_natural())
    assert fit.posterior["z"].mean[0] == pytest.approx(q.mean[0], abs=0.05)
    assert fit.posterior["z"].var[0] == pytest.approx(q.var[0], rel=0.1)


def test_a_step_that_leaves_the_parameter_space_is_backed_off_and_q_stays_valid():
    """... and when halvings dominate (most steps halved: the learning rate is too large) the fit says so."""
    model = GaussianMean(DiagonalGaussian, dim=1)
    with pytest.warns(ConvergenceWarning, match="step halvings dominate: 7 of 11 steps were halved"):
        fit = bbvi.fit(model.log_joint, model.init, learning_rate=5.0, control_variate="none", n_iter=11, seed=0)
    assert fit.n_backoffs > fit.n_halved_steps == 7 and not fit.converged
    assert fit.message.startswith("step halvings dominate")
    assert DiagonalGaussian.is_valid_natural(fit.posterior["z"].natural)
    assert np.all(np.isfinite(fit.elbo_trace))


def test_a_diverging_run_stops_with_a_named_error():
    """The same far too large step without a control variate: the mean runs off (issue 25) and is stopped."""
    from efvi.inference import DivergenceError

    model = GaussianMean(DiagonalGaussian, dim=1)
    with pytest.raises(DivergenceError, match="step 12: bbvi.fit diverged: the parameter norm") as info:
        bbvi.fit(model.log_joint, model.init, learning_rate=5.0, control_variate="none", n_iter=30, seed=0)
    assert info.value.step == 12


def test_result_traces_and_names():
    model = GaussianMean(DiagonalGaussian)
    exact = {}

    def expected_log_joint(q):
        exact["q"] = q
        natural = {"z": q.natural}
        return model.exact_elbo(natural) - float(np.sum(q.entropy()))

    fit = bbvi.fit(model.log_joint, model.init, n_iter=25, seed=3, expected_log_joint=expected_log_joint, warn=False)
    assert fit.n_iter == 25 and len(fit.elbo_trace) == 26 and len(fit.exact_elbo_trace) == 26
    assert fit.grad_variance["z"].shape == (25,) and np.all(fit.grad_variance_trace >= 0)
    assert isinstance(exact["q"], DiagonalGaussian)            # single-block mode: q itself, not a dict
    assert fit.elbo == fit.exact_elbo_trace[-1]
    assert fit.exact_elbo_trace[-1] == pytest.approx(model.exact_elbo({"z": fit.posterior["z"].natural}))
    assert set(fit.timings) == {"total", "per_iteration"}
    assert fit.elbo_standard_error_trace.shape == (26,) and np.all(fit.elbo_standard_error_trace >= 0)
    assert not fit.converged and "needs at least 199 iterations" in fit.message
    assert "NOT converged" in fit.summary() and "converged=False" in repr(fit)
    again = bbvi.fit(model.log_joint, model.init, n_iter=25, seed=3, warn=False)
    np.testing.assert_array_equal(again.elbo_trace, fit.elbo_trace)  # seeded: reproducible


def _batched(model):
    """The log joint of a GaussianMean model for all draws at once, ``z`` of shape (S, D)."""
    def log_joint(z):
        return (-0.5 * anp.sum(z ** 2, axis=-1) / model.prior_var
                - 0.5 * anp.sum((model.y[None] - z[:, None]) ** 2, axis=(1, 2)) / model.noise_var)
    return log_joint


def test_vectorized_and_per_draw_log_joints_agree():
    model = GaussianMean(DiagonalGaussian)

    batched = _batched(model)
    for estimator in ("score", "reparam"):
        one = bbvi.gradient(model.log_joint, model.init, estimator=estimator, seed=0)
        many = bbvi.gradient(batched, model.init, estimator=estimator, seed=0, vectorized=True)
        np.testing.assert_allclose(many.euclidean["z"], one.euclidean["z"], rtol=1e-10)


# ---------------------------------------------------------------------- bad input
def _gaussian():
    return DiagonalGaussian.from_mean_var(np.zeros(2), np.ones(2))


def _fine(z):
    return -0.5 * anp.sum(z ** 2)


@pytest.mark.parametrize("log_joint,message", [
    (lambda z: anp.nan * anp.sum(z), "log_joint must return a finite log density.*got nan"),
    (lambda z: -anp.inf + anp.sum(z), "log_joint must return a finite log density.*got -inf"),
    (lambda z: z, r"log_joint must return a scalar.*shape \(2,\)"),
    ("not callable", "log_joint must be a callable; got str"),
    (lambda z: anp.sum(z) + 1j, r"log_joint must return a real log density; got the complex value .*\+1\.j\]: efvi would drop"),
    (lambda z: "-1.5", "log_joint must return a number .a real log density.; got str '-1.5'"),
    (lambda z: None, "log_joint must return a number .a real log density.; got NoneType None"),
])
@pytest.mark.parametrize("estimator", ["score", "reparam"])
def test_a_bad_log_joint_is_named(log_joint, message, estimator):
    with pytest.raises(ValueError, match=message):
        bbvi.fit(log_joint, _gaussian(), estimator=estimator, n_iter=2, seed=0)


@pytest.mark.parametrize("log_joint,cause", [
    (lambda z: -0.5 * np.sum(np.asarray(z, dtype=float) ** 2), "ValueError: setting an array element with a "
                                                                 "sequence"),
    (lambda z: -0.5 * float(z[0]) ** 2 - 0.5 * float(z[1]) ** 2, "TypeError: float.. argument must be"),
    (lambda z: -0.5 * math.exp(z[0]) - 0.5 * math.exp(z[1]), "TypeError: must be real number, not ArrayBox"),
])
def test_a_log_joint_autograd_cannot_trace_is_named_for_reparameterisation(log_joint, cause):
    """Plain numpy works for the score function (it only evaluates), and is named for reparameterisation."""
    assert np.isfinite(bbvi.gradient(log_joint, _gaussian(), seed=0).elbo)
    with pytest.raises(ValueError, match="log_joint must be differentiable by autograd in block 'z' "
                                         r"\(estimator='reparam' differentiates it\); on traced draws it raised "
                                         f"({cause}).*use estimator='score'"):
        bbvi.fit(log_joint, _gaussian(), estimator="reparam", n_iter=2, seed=0)


@pytest.mark.filterwarnings("ignore:Output seems independent of input")     # autograd's, before the error
def test_a_log_joint_whose_traced_value_does_not_depend_on_the_draws_is_named():
    constant = np.zeros(2)

    def log_joint(z):
        constant[:] = z._value if hasattr(z, "_value") else z     # copies the draw out of autograd's sight
        return -0.5 * np.sum(constant ** 2)

    with pytest.raises(ValueError, match="its value does not depend on the draws as autograd sees them"):
        bbvi.fit(log_joint, _gaussian(), estimator="reparam", n_iter=2, seed=0)


def test_a_vectorized_log_joint_of_the_wrong_shape_is_named():
    with pytest.raises(ValueError, match=r"vectorized=True must return one value per draw, shape \(10,\); got "
                                         r"shape \(\)"):
        bbvi.fit(lambda z: anp.sum(z), _gaussian(), n_iter=2, seed=0, vectorized=True)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")      # autograd's, on the way to the infinite gradient
def test_a_non_finite_gradient_is_named():
    with pytest.raises(ValueError, match="finite gradient in block 'z'"):
        bbvi.gradient(lambda z: anp.sum(anp.sqrt(anp.abs(z - z))), _gaussian(), estimator="reparam", seed=0)


def test_reparameterising_an_unsupported_family_is_named():
    with pytest.raises(ValueError, match="estimator='reparam' needs Gaussian or DiagonalGaussian blocks; "
                                         "block 'tau' is Gamma"):
        bbvi.fit(lambda z: 0.0 * anp.sum(z["mu"]) - z["tau"], {"mu": _gaussian(), "tau": Gamma(2.0, 1.0)},
                 estimator="reparam")


@pytest.mark.parametrize("options,message", [
    ({"estimator": "pathwise"}, "estimator must be one of 'score', 'reparam'; got 'pathwise'"),
    ({"control_variate": "baseline"}, "control_variate must be one of 'loo', 'optimal', 'none' or None; got"),
    ({"estimator": "reparam", "control_variate": "loo"}, "control_variate must be None with estimator='reparam'"),
    ({"step": "newton"}, "step must be one of 'natural', 'sgd', 'adam'; got 'newton'"),
    ({"n_samples": 1}, "n_samples must be an integer >= 2"),
    ({"n_samples": 2, "control_variate": "optimal"}, "n_samples must be an integer >= 3"),
    ({"n_iter": -1}, "n_iter must be an integer >= 1; got -1"),
    ({"n_iter": 0}, "n_iter must be an integer >= 1; got 0"),
    ({"n_iter": 2.5}, "n_iter must be an integer >= 1; got 2.5"),
    ({"tol": -1e-3}, "tol must be a finite float >= 0; got -0.001"),
    ({"tol": "small"}, "tol must be a finite float >= 0; got 'small'"),
    ({"window": 0}, "window must be an integer >= 1; got 0"),
    ({"warn": "no"}, "warn must be True or False; got 'no'"),
    ({"learning_rate": -0.1}, "learning_rate must be a finite float > 0 or a callable; got -0.1"),
    ({"learning_rate": lambda t: 0.0}, r"learning_rate\(0\) must return a finite float > 0; got 0.0"),
    ({"vectorized": "yes"}, "vectorized must be True or False; got 'yes'"),
    ({"seed": 1.5}, "seed must be an integer >= 0, a numpy.random.Generator or None; got 1.5"),
    ({"expected_log_joint": 3.0}, "expected_log_joint must be callable or None; got float"),
    ({"expected_log_joint": lambda q: np.nan}, "expected_log_joint.q. must return a finite scalar; got nan"),
    ({"expected_log_joint": lambda q: np.zeros(2)}, r"expected_log_joint.q. must return a finite scalar; got shape"),
])
def test_invalid_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        bbvi.fit(_fine, _gaussian(), **{"n_iter": 2, **options})


@pytest.mark.parametrize("init,log_joint,message", [
    ({}, _fine, "init must be an expfam distribution or a non-empty dict of them; got dict"),
    (np.zeros(2), _fine, "init must be an expfam distribution or a non-empty dict of them; got ndarray"),
    ({"a": np.zeros(2)}, _fine, "init must map block names .str. to expfam distributions; got 'a': ndarray"),
    ({"a": _gaussian()}, [("b", _fine)], r"log_joint\[0\] must name blocks of init \('a'\); got 'b'"),
    ({"a": _gaussian()}, [(("a",), 3)], r"log_joint\[0\] must be a pair \(blocks, log_density\)"),
    ({"a": _gaussian(), "b": _gaussian()}, [("a", lambda z: _fine(z["a"]))],
     "every block of init must appear in some term of log_joint; 'b' appear in none"),
    ({"a": _gaussian(), "b": _gaussian()}, [("a", lambda z: _fine(z["a"]) + _fine(z["b"])),
                                            ("b", lambda z: _fine(z["b"]))],
     "term 0 declares blocks .'a',. but read block 'b'"),
])
def test_bad_blocks_and_terms_are_named(init, log_joint, message):
    with pytest.raises(ValueError, match=message):
        bbvi.fit(log_joint, init, n_iter=2, seed=0)
