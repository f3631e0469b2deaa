"""The gradient estimators against the exact ELBO gradient of conjugate models (seeded Monte Carlo).

Every estimator is unbiased, so the mean of R independent estimates must lie
within 4 standard errors (estimated from the R estimates) of the exact
gradient in every coordinate, both the Euclidean gradient in the natural
parameters and the natural gradient.  The control variates and
Rao-Blackwellisation must not increase the variance over R replicates.
"""

import autograd
import numpy as np
import pytest

from efvi.expfam import DiagonalGaussian, Gaussian, flatten
from efvi.inference import bbvi

from .models import GaussianMean, NormalGamma, PoissonGamma

REPLICATES = 400


def _exact(model, init):
    """Exact (Euclidean gradient, natural gradient) of the ELBO per block, flattened."""
    natural = {name: q.natural for name, q in init.items()}
    grads = autograd.grad(model.exact_elbo)(natural)
    euclidean, nat = {}, {}
    for name, q in init.items():
        family = type(q)
        euclidean[name] = flatten(tuple(np.asarray(g) for g in grads[name]), family.event_ndims)
        nat[name] = np.linalg.pinv(family.fisher(q.natural), hermitian=True) @ euclidean[name]
    return euclidean, nat


def _replicates(log_joint, init, n_samples=10, replicates=REPLICATES, **options):
    single = not isinstance(init, dict)
    estimates = [bbvi.gradient(log_joint, init, n_samples=n_samples, seed=r, **options) for r in range(replicates)]
    names = ["z"] if single else list(init)
    stack = {kind: {name: np.array([getattr(e, kind)[name] for e in estimates]) for name in names}
             for kind in ("euclidean", "natural")}
    stack["variance"] = {name: np.array([e.variance[name] for e in estimates]) for name in names}
    return stack


def _assert_unbiased(stack, exact, kind):
    for name, values in stack[kind].items():
        mean = values.mean(axis=0)
        stderr = values.std(axis=0, ddof=1) / np.sqrt(len(values))
        assert np.all(np.abs(mean - exact[name]) <= 4 * stderr + 1e-10 * np.abs(exact[name]).max()), (
            f"{kind} gradient of {name}: mean {mean} exact {exact[name]} stderr {stderr}")


def _total_variance(stack, kind="euclidean"):
    return sum(np.sum(np.var(v, axis=0, ddof=1)) for v in stack[kind].values())


SCORE = [("score", "none"), ("score", "loo"), ("score", "optimal")]


@pytest.mark.parametrize("estimator,control_variate", SCORE + [("reparam", None)])
@pytest.mark.parametrize("family", [DiagonalGaussian, Gaussian])
def test_gaussian_mean_estimators_are_unbiased(family, estimator, control_variate):
    model = GaussianMean(family)
    stack = _replicates(model.log_joint, model.init, estimator=estimator, control_variate=control_variate)
    euclidean, natural = _exact(model, {"z": model.init})
    _assert_unbiased(stack, euclidean, "euclidean")
    _assert_unbiased(stack, natural, "natural")


@pytest.mark.parametrize("family", [DiagonalGaussian, Gaussian])
def test_exact_natural_gradient_of_a_conjugate_model_is_the_posterior_minus_q(family):
    """The reference itself: for a conjugate model grad_mu ELBO = lambda_posterior - lambda (Khan and Nielsen, 2018)."""
    model = GaussianMean(family)
    _, natural = _exact(model, {"z": model.init})
    expected = flatten(model.posterior_natural(), family.event_ndims) - flatten(model.init.natural, family.event_ndims)
    np.testing.assert_allclose(natural["z"], expected, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("estimator,control_variate", SCORE)
def test_poisson_gamma_score_function_is_unbiased(estimator, control_variate):
    model = PoissonGamma()
    stack = _replicates(model.log_joint, model.init, estimator=estimator, control_variate=control_variate)
    euclidean, natural = _exact(model, {"z": model.init})
    np.testing.assert_allclose(natural["z"], np.subtract(model.posterior_natural(), model.init.natural), rtol=1e-8)
    _assert_unbiased(stack, euclidean, "euclidean")
    _assert_unbiased(stack, natural, "natural")


@pytest.mark.parametrize("form", ["callable", "terms"])
@pytest.mark.parametrize("control_variate", ["none", "loo", "optimal"])
def test_two_block_score_function_is_unbiased_with_and_without_rao_blackwellisation(form, control_variate):
    model = NormalGamma()
    log_joint = model.log_joint if form == "callable" else model.terms
    stack = _replicates(log_joint, model.init, control_variate=control_variate)
    euclidean, natural = _exact(model, model.init)
    _assert_unbiased(stack, euclidean, "euclidean")
    _assert_unbiased(stack, natural, "natural")


def _model_cases():
    yield "gaussian-mean diagonal", GaussianMean(DiagonalGaussian)
    yield "gaussian-mean full", GaussianMean(Gaussian)
    yield "poisson-gamma", PoissonGamma()
    yield "normal-gamma", NormalGamma()


@pytest.mark.parametrize("label,model", list(_model_cases()), ids=[c[0] for c in _model_cases()])
def test_control_variates_never_increase_the_variance(label, model):
    init = model.init
    variances = {}
    for control_variate in ("none", "loo", "optimal"):
        stack = _replicates(model.log_joint, init, control_variate=control_variate, replicates=300)
        variances[control_variate] = (_total_variance(stack), _total_variance(stack, "natural"))
    for kind in (0, 1):
        assert variances["loo"][kind] <= variances["none"][kind], variances
        assert variances["optimal"][kind] <= variances["none"][kind], variances
    if isinstance(init, dict):
        stack = _replicates(model.terms, init, control_variate="none", replicates=300)
        blackwellised = (_total_variance(stack), _total_variance(stack, "natural"))
        assert blackwellised[0] <= variances["none"][0] and blackwellised[1] <= variances["none"][1]


@pytest.mark.parametrize("estimator,control_variate", [("score", "none"), ("reparam", None)])
def test_the_variance_diagnostic_estimates_the_variance_of_the_estimate(estimator, control_variate):
    """With independent per-draw terms, sum_d Var_s(c_sd) / S is unbiased for the trace of the covariance."""
    model = GaussianMean(DiagonalGaussian)
    stack = _replicates(model.log_joint, model.init, estimator=estimator, control_variate=control_variate)
    empirical = _total_variance(stack)
    assert stack["variance"]["z"].mean() == pytest.approx(empirical, rel=0.15)


def test_the_score_function_has_no_variance_at_the_exact_posterior():
    """log p - log q is constant when q is the posterior, so the baseline leaves nothing to vary."""
    model = GaussianMean(DiagonalGaussian)
    q = DiagonalGaussian.from_natural(model.posterior_natural())
    estimate = bbvi.gradient(model.log_joint, q, seed=0)
    assert estimate.variance["z"] < 1e-18
    np.testing.assert_allclose(estimate.natural["z"], 0.0, atol=1e-9)
