"""The full-covariance GLM's start: data-informed sites refined by Newton steps on the log joint.

Zero-variance CVI targets are the pseudo-observations of a Newton step, so
Newton steps run to convergence must reach the MAP that ``glm.laplace`` (an
independent Newton implementation on the log joint) finds; each accepted step
raises the log joint; a step that would lower it, or a precision that is not
positive definite, ends them.
"""

import numpy as np
import pytest
from scipy import stats

from efvi import Gaussian, Model, glm, likelihoods
from efvi.models.glm import _informed
from efvi.models.glm._linalg import gram_and_projection


def _logistic(n=300, dim=4, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, dim - 1))])
    y = (rng.random(n) < 1 / (1 + np.exp(-scale * X @ rng.normal(size=dim)))).astype(float)
    return X, y


def _start(likelihood, X, y, prior_cov):
    """The factor's informed sites and the posterior mean they give."""
    dim = X.shape[1]
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(dim), prior_cov)}, [glm.GLM(likelihood, X, y, on="w")])
    factor = model.factors[0]
    sites = factor.informed_sites({"w": model.blocks["w"]})["w"]
    projection, gram = gram_and_projection(X, sites[1], sites[0])
    return model, sites, np.linalg.solve(np.linalg.inv(prior_cov) + gram, projection)


def _log_joint(likelihood, X, y, w, prior_cov):
    return (np.sum(likelihood.log_density(X @ w, y))
            + stats.multivariate_normal(np.zeros(X.shape[1]), prior_cov).logpdf(w))


def test_newton_steps_to_convergence_reach_the_map(monkeypatch):
    X, y = _logistic(scale=3.0)          # nearly separable: the guess is poor
    likelihood, prior_cov = likelihoods.BernoulliLogit(), 4.0 * np.eye(X.shape[1])
    monkeypatch.setattr(_informed, "NEWTON_GAIN", 0.0)
    monkeypatch.setattr(_informed, "NEWTON_STEPS", 60)
    _, _, w = _start(likelihood, X, y, prior_cov)
    w_map = glm.laplace(likelihood, X, y, np.zeros(X.shape[1]), prior_cov)[0].mean
    np.testing.assert_allclose(w, w_map, rtol=0, atol=1e-8)


def test_the_default_start_raises_the_log_joint_and_the_fit_is_unchanged(monkeypatch):
    X, y = _logistic(scale=3.0)
    likelihood, prior_cov = likelihoods.BernoulliLogit(), 4.0 * np.eye(X.shape[1])
    model, _, w_newton = _start(likelihood, X, y, prior_cov)
    monkeypatch.setattr(_informed, "NEWTON_STEPS", 0)
    plain_model, _, w_guess = _start(likelihood, X, y, prior_cov)
    assert _log_joint(likelihood, X, y, w_newton, prior_cov) > _log_joint(likelihood, X, y, w_guess, prior_cov) + 1.0
    monkeypatch.undo()
    # the start changes the path, not the answer
    fit, plain = model.fit(tol=1e-14, max_iter=500), plain_model.fit(tol=1e-14, max_iter=500)
    assert fit.converged and plain.converged
    assert fit.elbo == pytest.approx(plain.elbo, rel=1e-12)
    np.testing.assert_allclose(fit.posterior["w"].mean, plain.posterior["w"].mean, rtol=0, atol=1e-6)


def test_the_start_message_is_that_of_the_returned_sites():
    X, y = _logistic(scale=3.0)
    model, sites, _ = _start(likelihoods.BernoulliLogit(), X, y, np.eye(X.shape[1]))
    factor = model.factors[0]
    message = factor.message("w", sites)                 # served from the Newton steps
    projection, gram = gram_and_projection(X, sites[1], sites[0])
    np.testing.assert_array_equal(message[0], projection)
    np.testing.assert_array_equal(message[1], -0.5 * gram)
    again = factor.message("w", sites)                   # formed afresh: the same numbers
    np.testing.assert_allclose(again[1], message[1], rtol=1e-14, atol=1e-14)


def test_a_step_that_lowers_the_log_joint_ends_the_steps_at_the_best_point(monkeypatch):
    """A third Newton step made to lower the log joint (as an overshoot would): the sites returned are
    those whose posterior mean is the second point, i.e. the targets formed at the first."""
    X, y = _logistic(scale=3.0)
    model, _, _ = _start(likelihoods.BernoulliLogit(), X, y, np.eye(X.shape[1]))
    factor = model.factors[0]
    guess = factor._point_targets(np.where(y > 0, 1.1, -1.1))
    calls = []

    def point_targets(a):
        result = factor._point_targets(a)
        calls.append(result)
        return result if len(calls) != 3 else (*result[:3], result[3] - 1e6)

    monkeypatch.setattr(_informed, "NEWTON_GAIN", 0.0)
    sites, message = _informed.newton_sites(X, np.zeros(X.shape[1]), np.eye(X.shape[1]), guess[0], guess[1],
                                            point_targets)
    assert len(calls) == 3 and calls[1][3] > calls[0][3]       # the second point was better than the first
    assert sites[0] is calls[0][0] and sites[1] is calls[0][1]
    projection, gram = gram_and_projection(X, sites[1], sites[0])
    np.testing.assert_array_equal(message[1], -0.5 * gram)


def test_a_start_far_below_an_exponential_link_stays_finite_and_quiet():
    """Poisson sites formed 6 below log(y): the first step lands where exp overflows; the steps stop
    there without a floating-point warning and return finite sites."""
    import warnings

    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(200), rng.normal(size=200)])
    y = rng.poisson(np.exp(1.0 + 2.5 * X[:, 1])).astype(float)
    model, _, _ = _start(likelihoods.Poisson(), X, y, 1e4 * np.eye(2))
    factor = model.factors[0]
    gamma, pi, _, _ = factor._point_targets(np.log(y + 0.5) - 6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sites, _ = _informed.newton_sites(X, np.zeros(2), 1e-4 * np.eye(2), gamma, pi, factor._point_targets)
    assert all(np.all(np.isfinite(part)) for part in sites) and np.all(sites[1] >= 0)


def test_a_non_log_concave_likelihood_keeps_a_valid_start():
    """Student-t outliers give negative site precisions; the start stays positive definite."""
    rng = np.random.default_rng(1)
    X = np.column_stack([np.ones(40), rng.normal(size=40)])
    y = X @ [0.0, 1.0] + 0.1 * rng.normal(size=40)
    y[:8] += 30.0
    import autograd.numpy as anp

    def log_prob(y, f):                     # Student-t, df 1.5, scale 0.1, up to a constant
        return -1.25 * anp.log1p(((y - f) / 0.1) ** 2 / 1.5)

    likelihood = likelihoods.Custom(log_prob, initial_latent=lambda y: y)
    prior_cov = 1e4 * np.eye(2)
    model, sites, w = _start(likelihood, X, y, prior_cov)
    # the least-squares fit through the outliers puts points where the curvature is negative
    assert np.any(model.factors[0]._point_targets(X @ w)[1] < 0)
    precision = np.linalg.inv(prior_cov) + X.T @ (sites[1][:, None] * X)
    assert np.all(np.linalg.eigvalsh(precision) > 0)
