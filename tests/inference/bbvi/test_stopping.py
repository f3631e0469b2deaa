"""bbvi's stopping rule: it stops a conjugate fit at the exact posterior, uses the exact ELBO when given one,
and does not call a fit that is still climbing (or whose steps are mostly halved) converged."""

import numpy as np
import pytest

from efvi.expfam import Gaussian, flatten
from efvi.inference import ConvergenceWarning, bbvi
from efvi.inference.bbvi import _stopping

from .models import GaussianMean


def _log_evidence(model, posterior):
    """``log int exp(log_joint(z)) dz`` of a GaussianMean model: the ELBO of its exact posterior."""
    dim = posterior.mean.shape[0]
    return (model.log_joint(posterior.mean) + 0.5 * dim * np.log(2 * np.pi)
            + 0.5 * np.linalg.slogdet(posterior.cov)[1])


def _window_error(fit, window):
    return np.sqrt(np.sum(fit.elbo_standard_error_trace[-window:] ** 2)) / window


def test_the_rule_compares_two_windows_within_tolerance_plus_two_standard_errors():
    window, trace = 4, np.r_[np.full(4, -10.0), np.full(4, -9.9)]          # a change of 0.1 nats
    errors = np.full(8, 0.1)                                              # s_d = sqrt(8 * 0.01) / 4
    change, error, level = _stopping.window_change(trace, errors, window)
    assert (change, error, level) == pytest.approx((0.1, np.sqrt(0.08) / 4, -9.9))
    assert _stopping.converged(trace, errors, window, tol=0.0)[0]               # 0.1 <= 2 * 0.0707
    assert not _stopping.converged(trace, errors / 2, window, tol=0.0)[0]       # 0.1 > 2 * 0.0354
    assert _stopping.converged(trace, errors / 2, window, tol=0.03 / 9.9)[0]    # 0.1 <= 0.03 + 0.0707
    assert [_stopping.due(n, window) for n in (4, 7, 8, 10, 12)] == [False, False, True, False, True]


def test_the_rule_stops_a_conjugate_score_function_fit_at_the_exact_posterior():
    """At the exact posterior of a conjugate model log p - log q is the same at every draw: the Monte Carlo
    error of the ELBO and of the leave-one-out gradient vanish there, and the fit stops on it."""
    model = GaussianMean(Gaussian, dim=2)
    exact = Gaussian.from_natural(model.posterior_natural())
    fit = bbvi.fit(model.log_joint, model.init, learning_rate=0.2, n_iter=3000, seed=0)
    assert fit.converged and fit.n_iter < 3000 and fit.message.startswith(f"converged after {fit.n_iter} iterations")
    error = np.linalg.norm(flatten(fit.posterior["z"].natural, (1, 2)) - flatten(exact.natural, (1, 2)))
    assert error < 1e-6
    assert fit.elbo_standard_error_trace[-1] < 1e-6
    assert fit.elbo_trace[-1] == pytest.approx(_log_evidence(model, exact), abs=3 * fit.elbo_standard_error_trace[-1]
                                               + 1e-9)


def test_the_rule_stops_a_reparameterisation_fit_within_its_monte_carlo_spread():
    """Reparameterisation gradients stay noisy at the optimum: the fit stops with q within the stationary
    spread of its natural steps, sqrt(rho v / 2), and the mean ELBO of its last window within its standard
    error of the log evidence, from below."""
    model = GaussianMean(Gaussian, dim=2)
    exact = Gaussian.from_natural(model.posterior_natural())

    def schedule(t):
        return 0.2 / (1 + t / 20) ** 0.7

    fit = bbvi.fit(model.log_joint, model.init, estimator="reparam", learning_rate=schedule, n_iter=3000, seed=0)
    assert fit.converged and fit.n_iter < 3000
    window = fit.options["window"]
    error = np.linalg.norm(flatten(fit.posterior["z"].natural, (1, 2)) - flatten(exact.natural, (1, 2)))
    spread = np.sqrt(schedule(fit.n_iter - 1) * fit.grad_variance["z"][-window:].mean() / 2)
    assert error < 4 * spread
    gap = _log_evidence(model, exact) - fit.elbo_trace[-window:].mean()
    assert -3 * _window_error(fit, window) < gap < 0.05


def test_the_rule_uses_the_exact_elbo_when_it_is_given():
    """Then the windows' exact means must agree within the tolerance itself (no Monte Carlo allowance)."""
    model = GaussianMean(Gaussian, dim=2)
    exact = Gaussian.from_natural(model.posterior_natural())

    def expected_log_joint(q):
        return model.exact_elbo({"z": q.natural}) - float(np.sum(q.entropy()))

    def schedule(t):
        return 0.2 / (1 + t / 20) ** 0.7

    fit = bbvi.fit(model.log_joint, model.init, estimator="reparam", learning_rate=schedule, n_iter=3000, seed=0,
                   expected_log_joint=expected_log_joint, tol=1e-5)
    assert fit.converged
    window = fit.options["window"]
    change, _, level = _stopping.window_change(fit.exact_elbo_trace, np.zeros(fit.n_iter + 1), window)
    assert abs(change) <= 1e-5 * max(1.0, abs(level))
    monte_carlo, error, _ = _stopping.window_change(fit.elbo_trace, fit.elbo_standard_error_trace, window)
    assert abs(monte_carlo) > 1e-5 * max(1.0, abs(level))          # the Monte Carlo trace alone would not say so
    assert model.exact_elbo({"z": exact.natural}) >= fit.exact_elbo_trace[-1]
    spread = np.sqrt(schedule(fit.n_iter - 1) * fit.grad_variance["z"][-window:].mean() / 2)
    assert np.linalg.norm(flatten(fit.posterior["z"].natural, (1, 2)) - flatten(exact.natural, (1, 2))) < 4 * spread


def test_a_fit_that_is_still_climbing_is_not_converged_and_warns():
    """Natural steps of 0.003: after 400 iterations the ELBO still rises faster than its Monte Carlo error."""
    model = GaussianMean(Gaussian, dim=2)
    with pytest.warns(ConvergenceWarning, match="bbvi.fit stopped at 400 iterations before the stopping rule held: "
                                                "the mean ELBO .* above the tolerance"):
        fit = bbvi.fit(model.log_joint, model.init, learning_rate=0.003, n_iter=400, seed=0)
    assert not fit.converged and fit.n_iter == 400
    change, error, _ = _stopping.window_change(fit.elbo_trace, fit.elbo_standard_error_trace, 100)
    assert change > 2 * error
