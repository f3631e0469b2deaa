"""Per-parameter Gaussian priors: ``prior_mean`` and vector ``prior_precision`` (variational continual learning).

With ``delta = prior_precision / ess`` elementwise, the KL term's gradient is
``delta * (m - prior_mean)``.  The natural-gradient step with such a prior is
still the engine's CVI step with the same Gaussian / DiagonalGaussian prior
(1e-12 linear, 1e-10 logistic, as in test_cvi_link.py); a constant vector is
the scalar; shifting the prior mean and the data together shifts every
optimiser's trajectory; and bad shapes are named errors.
"""

import numpy as np
import pytest

import efvi
from efvi.inference import ngvi

from .models import ExpectedLogistic, LinearRegression
from .test_cvi_link import NOISE_VAR, classification, regression  # noqa: F401 (fixtures)

PRIOR_MEAN = np.array([0.5, -1.0, 0.25])
PRIOR_PRECISION = np.array([1.0, 4.0, 0.5])
LOGISTIC_PRIOR_MEAN = np.array([0.2, 0.5, -0.3, 0.1])
# tight enough that the engine's quadrature is accurate to ~1e-11 (see test_cvi_link.py)
LOGISTIC_PRIOR_PRECISION = np.array([25.0, 30.0, 40.0, 25.0])

ALL = [
    lambda m, n, **k: ngvi.IVON(m, n, lr=0.2, mc_samples=2, **k),
    lambda m, n, **k: ngvi.IVON(m, n, lr=0.2, rescale_lr=False, **k),
    lambda m, n, **k: ngvi.VOGN(m, n, lr=0.3, betas=(0.5, 0.9), **k),
    lambda m, n, **k: ngvi.VOGN(m, n, lr=0.3, curvature="hessian", **k),
    lambda m, n, **k: ngvi.Vadam(m, n, lr=0.05, **k),
    lambda m, n, **k: ngvi.Vprop(m, n, lr=0.05, **k),
    lambda m, n, **k: ngvi.VAN(m, n, lr=0.3, **k),
    lambda m, n, **k: ngvi.BayesByBackprop(m, n, lr=0.05, **k),
    lambda m, n, **k: ngvi.Adam(m, n, lr=0.05, **k),
    lambda m, n, **k: ngvi.RMSprop(m, n, lr=0.05, **k),
]
IDS = ["IVON", "IVON-unscaled", "VOGN", "VOGN-hessian", "Vadam", "Vprop", "VAN", "BBB", "Adam", "RMSprop"]


def _location(optimizer):
    return optimizer.params if isinstance(optimizer, (ngvi.Adam, ngvi.RMSprop)) else optimizer.mean


def _engine_posterior(X, y, likelihood, diagonal, rho, n_steps, prior_mean, prior_precision):
    prior = (efvi.DiagonalGaussian.from_mean_var(prior_mean, 1.0 / prior_precision) if diagonal
             else efvi.Gaussian.from_mean_cov(prior_mean, np.diag(1.0 / prior_precision)))
    model = efvi.Model({"w": prior}, [efvi.glm.GLM(likelihood, X, y, on="w")])
    return model.fit(step=rho, max_iter=n_steps, init="prior", warn=False).posterior["w"]


# ---------------------------------------------------------------- the CVI link with a per-parameter prior
@pytest.mark.parametrize("optimizer, rho, diagonal", [
    ("VAN", 0.5, False), ("VAN", 1.0, False), ("hessian", 0.5, True), ("gauss_newton", 0.5, True),
])
@pytest.mark.parametrize("n_steps", [1, 3])
def test_linear_step_with_a_prior_vector_is_the_cvi_step(regression, optimizer, rho, diagonal, n_steps):
    X, y = regression
    kwargs = dict(prior_mean=PRIOR_MEAN, prior_precision=PRIOR_PRECISION, lr=rho, betas=(0.0, 1.0 - rho),
                  mc_samples=2, antithetic=True)
    model = LinearRegression(3, NOISE_VAR)
    run = (ngvi.VAN(model, len(y), **kwargs) if optimizer == "VAN"
           else ngvi.VOGN(model, len(y), hess_init=0.0, curvature=optimizer, **kwargs))
    for _ in range(n_steps):
        run.step(X, y)
    cvi = _engine_posterior(X, y, efvi.likelihoods.Gaussian(variance=NOISE_VAR), diagonal, rho, n_steps,
                            PRIOR_MEAN, PRIOR_PRECISION)
    np.testing.assert_allclose(run.mean, cvi.mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(run.precision, 1 / cvi.var if diagonal else cvi.precision, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("diagonal", [False, True])
def test_logistic_step_with_a_prior_vector_is_the_cvi_step(classification, diagonal):
    X, y = classification
    rho, n_steps = 0.5, 3
    model = ExpectedLogistic(X.shape[1])
    kwargs = dict(prior_mean=LOGISTIC_PRIOR_MEAN, prior_precision=LOGISTIC_PRIOR_PRECISION, lr=rho,
                  betas=(0.0, 1.0 - rho))
    optimizer = (ngvi.VOGN(model, len(y), hess_init=0.0, curvature="gauss_newton", **kwargs) if diagonal
                 else ngvi.VAN(model, len(y), **kwargs))
    for _ in range(n_steps):
        model.q_mean = optimizer.mean
        model.q_cov = np.diag(1 / optimizer.precision) if diagonal else optimizer.posterior.cov
        optimizer.step(X, y)
    cvi = _engine_posterior(X, y, efvi.likelihoods.Bernoulli(), diagonal, rho, n_steps,
                            LOGISTIC_PRIOR_MEAN, LOGISTIC_PRIOR_PRECISION)
    np.testing.assert_allclose(optimizer.mean, cvi.mean, rtol=0, atol=1e-10)
    expected = 1 / cvi.var if diagonal else cvi.precision
    np.testing.assert_allclose(optimizer.precision, expected, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- every optimiser
@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_a_constant_precision_vector_is_the_scalar(regression, make):
    X, y = regression
    runs = []
    for precision in (2.0, np.full(3, 2.0)):
        optimizer = make(LinearRegression(3, NOISE_VAR), len(y), prior_precision=precision, seed=3)
        for start in range(0, 40, 10):
            optimizer.step(X[start:start + 10], y[start:start + 10])
        runs.append(optimizer)
    np.testing.assert_allclose(_location(runs[0]), _location(runs[1]), rtol=0, atol=1e-14)


@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_shifting_the_prior_mean_and_the_data_shifts_the_trajectory(regression, make):
    # w -> w + c with y -> y + X c leaves every residual, gradient and curvature of linear regression unchanged
    X, y = regression
    shift = np.array([3.0, -1.0, 2.0])
    runs = []
    for prior_mean, targets in ((PRIOR_MEAN, y), (PRIOR_MEAN + shift, y + X @ shift)):
        optimizer = make(LinearRegression(3, NOISE_VAR), len(y), prior_mean=prior_mean,
                         prior_precision=PRIOR_PRECISION, seed=3)
        np.testing.assert_array_equal(_location(optimizer), prior_mean)      # a vector mean is the start
        for start in range(0, 40, 10):
            optimizer.step(X[start:start + 10], targets[start:start + 10])
        runs.append(optimizer)
    np.testing.assert_allclose(_location(runs[1]) - _location(runs[0]), shift, rtol=0, atol=1e-10)
    if hasattr(runs[0], "precision"):
        np.testing.assert_allclose(runs[1].precision, runs[0].precision, rtol=1e-10)


def test_the_prior_pulls_towards_the_prior_mean(regression):
    X, y = regression
    posterior_means = []
    for precision in (1e-3, 1e6):
        optimizer = ngvi.VAN(LinearRegression(3, NOISE_VAR), len(y), prior_mean=PRIOR_MEAN,
                             prior_precision=np.full(3, precision), lr=1.0, betas=(0.0, 0.0), mc_samples=2,
                             antithetic=True)
        optimizer.step(X, y)
        posterior_means.append(optimizer.mean)
    np.testing.assert_allclose(posterior_means[1], PRIOR_MEAN, atol=1e-4)
    np.testing.assert_allclose(posterior_means[0], np.linalg.lstsq(X, y, rcond=None)[0], atol=1e-3)


# ---------------------------------------------------------------- the posterior as the next prior
def test_as_prior_gives_the_next_optimizer_the_posterior(regression):
    X, y = regression
    first = ngvi.VOGN(LinearRegression(3, NOISE_VAR), 20, prior_precision=PRIOR_PRECISION, lr=0.5)
    for _ in range(30):
        first.step(X[:20], y[:20])
    prior = first.as_prior()
    assert set(prior) == {"prior_mean", "prior_precision"}
    np.testing.assert_array_equal(prior["prior_mean"], first.mean)
    np.testing.assert_array_equal(prior["prior_precision"], first.precision)
    prior["prior_mean"][0] += 1.0                                   # copies: the optimiser is not touched
    assert first.mean[0] != prior["prior_mean"][0]
    prior = first.as_prior()
    second = ngvi.VOGN(LinearRegression(3, NOISE_VAR), 20, hess_init=0.0, lr=0.5, **prior)
    assert second.posterior.kl(first.posterior) == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_array_equal(second.prior_precision, first.precision)


@pytest.mark.parametrize("make, kind", [
    (lambda m: ngvi.VAN(m, 10), "a full-covariance"), (lambda m: ngvi.Adam(m, 10), "no"),
    (lambda m: ngvi.RMSprop(m, 10), "no"),
])
def test_as_prior_without_a_mean_field_posterior_is_a_named_error(make, kind):
    optimizer = make(LinearRegression(3, NOISE_VAR))
    with pytest.raises(ValueError, match=f"as_prior needs a mean-field Gaussian posterior.*has {kind} posterior"):
        optimizer.as_prior()


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("name, value, message", [
    ("prior_precision", np.ones(4), r"prior_precision must be a positive finite float or an array of shape "
                                    r"\(P,\) of them, P = 3 \(the model's n_params\); got an array of shape \(4,\)"),
    ("prior_precision", np.eye(3), r"P = 3 .*got an array of shape \(3, 3\)"),
    ("prior_precision", np.array([1.0, 0.0, 1.0]), r"prior_precision must be .*; entry 1 is 0\.0"),
    ("prior_precision", np.array([1.0, 1.0, np.inf]), r"prior_precision must be .*; entry 2 is inf"),
    ("prior_precision", -1.0, r"prior_precision must be a positive finite float .*; got -1\.0"),
    ("prior_precision", "big", r"prior_precision must be .*; got 'big'"),
    ("prior_mean", np.zeros(2), r"prior_mean must be a finite float or an array of shape \(P,\) of them, P = 3 "),
    ("prior_mean", np.array([0.0, np.nan, 0.0]), r"prior_mean must be .*; entry 1 is nan"),
    ("prior_mean", [[0.0, 1.0, 2.0]], r"prior_mean must be .*got an array of shape \(1, 3\)"),
    ("prior_mean", True, r"prior_mean must be a finite float .*; got True"),
])
@pytest.mark.parametrize("cls", [ngvi.IVON, ngvi.VAN, ngvi.Adam])
def test_bad_prior_vectors_are_named_errors(cls, name, value, message):
    with pytest.raises(ValueError, match=message):
        cls(LinearRegression(3, NOISE_VAR), 10, **{name: value})


def test_prior_vectors_are_read_only_copies():
    precision = np.array([1.0, 2.0, 3.0])
    optimizer = ngvi.IVON(LinearRegression(3, NOISE_VAR), 10, prior_precision=precision)
    precision[0] = 100.0
    assert optimizer.prior_precision[0] == 1.0
    with pytest.raises(ValueError):
        optimizer.prior_precision[0] = 5.0
