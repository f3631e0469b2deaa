"""The compiled Kalman filter / RTS smoother against a dense reference, statsmodels and its own contracts."""

import numpy as np
import pytest

from efvi.models.lds import (
    STATUS_INVALID_SITE, STATUS_OK, STATUS_SINGULAR_PREDICTION, kalman_filter, kalman_smoother, smoothed_marginals,
)

from .dense_reference import dense_posterior, dense_prior, prior_state_covs, random_problem

RTOL = 1e-8


def _call(function, problem, **kwargs):
    p = problem
    return function(p["gamma"], p["pi"], p["H"], p["A"], p["Q"], p["m0"], p["P0"], **kwargs)


def _assert_close(actual, expected):
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * max(1.0, np.max(np.abs(expected))))


@pytest.mark.parametrize("d, seed", [(1, 0), (2, 1), (2, 2), (3, 3), (4, 6), (5, 7)])  # tuple and array work variables
def test_smoother_matches_dense_reference(d, seed):
    problem = random_problem(np.random.default_rng(seed), T=25, d=d)
    assert np.any(problem["pi"] < 0) and np.any(problem["pi"] == 0)
    result = _call(kalman_smoother, problem)
    expected = dense_posterior(**problem)
    assert result.status == STATUS_OK and result.failed_step == -1
    for name in ("means", "covs", "cross_covs", "marginal_mean", "marginal_var", "log_normaliser"):
        _assert_close(getattr(result, name), expected[name])
    np.testing.assert_array_equal(result.covs, np.swapaxes(result.covs, -1, -2))


def test_filter_matches_dense_reference_on_truncated_sites():
    """Filtered moments at t are the posterior given sites 0..t; predictive ones given sites 0..t-1."""
    problem = random_problem(np.random.default_rng(4), T=20, d=2)
    result = _call(kalman_filter, problem)
    for t in (0, 7, 19):
        seen = dict(problem, gamma=np.where(np.arange(20) <= t, problem["gamma"], 0.0),
                    pi=np.where(np.arange(20) <= t, problem["pi"], 0.0))
        before = dict(seen, gamma=np.where(np.arange(20) < t, problem["gamma"], 0.0),
                      pi=np.where(np.arange(20) < t, problem["pi"], 0.0))
        filtered, predicted = dense_posterior(**seen), dense_posterior(**before)
        _assert_close(result.means[t], filtered["means"][t])
        _assert_close(result.covs[t], filtered["covs"][t])
        _assert_close(result.pred_means[t], predicted["means"][t])
        _assert_close(result.pred_covs[t], predicted["covs"][t])
        _assert_close(result.pred_marginal_mean[t], predicted["marginal_mean"][t])
        _assert_close(result.pred_marginal_var[t], predicted["marginal_var"][t])
    _assert_close(result.log_normaliser, dense_posterior(**problem)["log_normaliser"])


def test_constant_matrices_equal_time_varying_and_lean_pass_equals_full():
    rng = np.random.default_rng(5)
    problem = random_problem(rng, T=30, d=2)
    constant = dict(problem, A=problem["A"][1], Q=problem["Q"][1], H=problem["H"][1])
    tiled = {k: (np.broadcast_to(v, (30,) + v.shape).copy() if k in "AQH" else v) for k, v in constant.items()}
    result = _call(kalman_smoother, constant)
    expected = dense_posterior(**tiled)
    for name in ("means", "covs", "cross_covs", "marginal_mean", "marginal_var", "log_normaliser"):
        _assert_close(getattr(result, name), expected[name])
    np.testing.assert_array_equal(result.means, _call(kalman_smoother, tiled).means)
    lean = _call(smoothed_marginals, constant)
    np.testing.assert_array_equal(lean.marginal_mean, result.marginal_mean)
    np.testing.assert_array_equal(lean.marginal_var, result.marginal_var)
    assert lean.log_normaliser == result.log_normaliser


def test_missing_steps_interpolate_and_forecast():
    """A gap in the middle and no sites after step 14 (forecast) agree with the dense posterior."""
    problem = random_problem(np.random.default_rng(6), T=24, d=2, missing=0.0, negative=0.0)
    gap = np.zeros(24, bool)
    gap[5:10] = gap[15:] = True
    problem["gamma"][gap] = problem["pi"][gap] = 0.0
    result = _call(kalman_smoother, problem)
    expected = dense_posterior(**problem)
    for name in ("means", "covs", "cross_covs", "marginal_mean", "marginal_var", "log_normaliser"):
        _assert_close(getattr(result, name), expected[name])
    # beyond the last site the smoothed state follows the prior dynamics from step 14
    for t in range(15, 24):
        _assert_close(result.means[t], problem["A"][t] @ result.means[t - 1])


def test_no_sites_give_the_prior_and_zero_log_normaliser():
    problem = random_problem(np.random.default_rng(7), T=15, d=3)
    problem["gamma"][:] = problem["pi"][:] = 0.0
    result = _call(kalman_smoother, problem)
    mean, cov = dense_prior(problem["A"], problem["Q"], problem["m0"], problem["P0"])
    assert result.log_normaliser == 0.0
    _assert_close(result.means.ravel(), mean)
    _assert_close(result.covs, [cov[3 * t:3 * t + 3, 3 * t:3 * t + 3] for t in range(15)])


def test_gaussian_log_likelihood_matches_statsmodels():
    """Sites gamma = y / s2, pi = 1 / s2 turn log Z into the exact Kalman log-likelihood."""
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(8)
    T, d = 60, 2
    p = random_problem(rng, T=T, d=d, missing=0.0, negative=0.0)
    noise_var = rng.uniform(0.2, 2.0, size=T)
    y = 2.0 * rng.normal(size=T)
    y[[0, 4, 20, 21, 22, T - 1]] = np.nan
    observed = ~np.isnan(y)
    y0 = np.where(observed, y, 0.0)
    model = sm.tsa.statespace.MLEModel(y, k_states=d, k_posdef=d, initialization="known",
                                       initial_state=p["m0"], initial_state_cov=p["P0"])
    # statsmodels' transition at t maps x_t to x_{t+1}: our A[t + 1]
    model["design"] = p["H"].T[None]
    model["obs_cov"] = noise_var[None, None]
    model["transition"] = np.moveaxis(np.concatenate([p["A"][1:], np.eye(d)[None]]), 0, -1)
    model["selection"] = np.eye(d)
    model["state_cov"] = np.moveaxis(np.concatenate([p["Q"][1:], np.eye(d)[None]]), 0, -1)
    expected = model.ssm.loglike()
    result = kalman_smoother(np.where(observed, y0 / noise_var, 0.0), np.where(observed, 1.0 / noise_var, 0.0),
                             p["H"], p["A"], p["Q"], p["m0"], p["P0"])
    log_lik = result.log_normaliser + np.sum(
        np.where(observed, -y0**2 / (2 * noise_var) - 0.5 * np.log(2 * np.pi * noise_var), 0.0))
    assert log_lik == pytest.approx(expected, rel=1e-10, abs=1e-8)
    _assert_close(result.means, model.ssm.smooth().smoothed_state.T)


def _random_walk(T=12):
    """d = 1 random walk with unit sites everywhere: predictive variances from the filter."""
    return dict(gamma=np.full(T, 0.5), pi=np.ones(T), H=np.ones(1), A=np.ones((1, 1)), Q=np.full((1, 1), 0.5),
                m0=np.zeros(1), P0=np.ones((1, 1)))


def _tiled(problem):
    """The problem with time-varying ``A``, ``Q``, ``H`` stacks, as the dense reference takes them."""
    T = problem["gamma"].shape[0]
    event_ndim = {"A": 2, "Q": 2, "H": 1}
    return {k: (np.broadcast_to(v, (T,) + v.shape).copy() if v.ndim == event_ndim.get(k) else v)
            for k, v in problem.items()}


def _leading_min_eigenvalues(problem):
    """Smallest eigenvalue of each leading block ``x_{0..t}`` of the dense posterior precision, shape (T,).

    That block involves only the prior and the sites ``0..t`` (later sites touch later states), so the
    first negative one is the first step whose sites make the posterior invalid whatever the later sites.
    """
    precision = dense_posterior(**_tiled(problem))["precision"]
    d = problem["m0"].shape[0]
    return np.array([np.linalg.eigvalsh(precision[:(t + 1) * d, :(t + 1) * d]).min()
                     for t in range(problem["gamma"].shape[0])])


@pytest.mark.parametrize("function", [kalman_filter, kalman_smoother, smoothed_marginals])
def test_invalid_site_reports_the_first_failing_step(function):
    """d = 1 random walk (A = 1, Q = 0.5, S_t = 1 exactly): with ``P_6`` the filtered variance,
    ``C_6^{-1} = 1 / P_6 + 1 / Q``.

    A factor ``1 + pi S = -3`` at step 6 gives ``-Q < P_6 = -S / 3 < 0``: invalid whatever the later
    sites (even a huge positive one at step 7); ``-0.5`` gives ``P_6 = -2 S < -Q``, which the unit
    site at step 7 outweighs; ``0`` cannot be passed; a negative factor at the last step is invalid.
    The dense posterior precision agrees each time."""
    problem = _random_walk()
    S = _call(kalman_filter, problem).pred_marginal_var
    np.testing.assert_array_equal(S, 1.0)
    problem["pi"][6] = -4.0 / S[6]
    problem["pi"][7] = 1e6
    assert np.flatnonzero(_leading_min_eigenvalues(problem) < 0)[0] == 6
    with pytest.raises(ValueError, match=r"time step 6\b"):
        _call(function, problem)
    result = _call(function, problem, return_status=True)
    assert (result.status, result.failed_step) == (STATUS_INVALID_SITE, 6)
    assert np.isnan(result.log_normaliser)
    problem["pi"][[6, 7]] = -1.5 / S[6], 1.0
    assert np.min(_leading_min_eigenvalues(problem)) > 0
    result = _call(function, problem)
    assert result.status == STATUS_OK
    _assert_close(result.log_normaliser, dense_posterior(**_tiled(problem))["log_normaliser"])
    problem["pi"][6] = -1.0 / S[6]
    result = _call(function, problem, return_status=True)
    assert (result.status, result.failed_step) == (STATUS_INVALID_SITE, 6)
    problem["pi"][6] = 1.0
    problem["pi"][-1] = -1.5 / S[-1]
    assert np.flatnonzero(_leading_min_eigenvalues(problem) < 0)[0] == 11
    result = _call(function, problem, return_status=True)
    assert (result.status, result.failed_step) == (STATUS_INVALID_SITE, 11)


def test_validity_is_exact_against_the_dense_posterior_precision():
    """Random problems with many strongly negative sites: the filter accepts exactly when the dense posterior
    precision is positive definite, reports the first step whose leading block is not, and where it accepts
    matches the dense moments and log Z, including when some factor 1 + pi_t S_t < 0 (filtered
    covariances indefinite on the way)."""
    rng = np.random.default_rng(11)
    counts = {"invalid": 0, "valid, a negative factor": 0, "valid, positive factors": 0}
    for _ in range(300):
        T, d = rng.integers(1, 8), rng.integers(1, 4)
        problem = random_problem(rng, T=T, d=d, missing=0.0, negative=0.0)
        prior_var = np.einsum("ti,tij,tj->t", problem["H"], prior_state_covs(problem["A"], problem["Q"],
                                                                             problem["P0"]), problem["H"])
        negative = rng.uniform(size=T) < 0.4
        problem["pi"] = np.where(negative, -rng.uniform(0.5, 3.0, T), rng.exponential(3.0, T)) / prior_var
        leading = _leading_min_eigenvalues(problem)
        # within rounding of the boundary the question has no finite-precision answer
        assert np.min(np.abs(leading)) > 1e-6
        result = _call(kalman_smoother, problem, return_status=True)
        if leading[-1] < 0:
            counts["invalid"] += 1
            assert (result.status, result.failed_step) == (STATUS_INVALID_SITE, np.flatnonzero(leading < 0)[0])
            continue
        assert result.status == STATUS_OK
        factors = 1.0 + problem["pi"] * _call(kalman_filter, problem).pred_marginal_var
        counts["valid, a negative factor" if np.any(factors < 0) else "valid, positive factors"] += 1
        expected = dense_posterior(**problem)
        for name in ("means", "covs", "cross_covs", "marginal_mean", "marginal_var", "log_normaliser"):
            _assert_close(getattr(result, name), expected[name])
    assert min(counts.values()) >= 10, counts


def test_singular_predicted_covariance_is_reported():
    """With A = 0 and Q = 0 the state after step 0 is deterministic: the RTS gain is undefined from step 1 on,
    and the first such step is reported."""
    problem = dict(_random_walk(5), A=np.zeros((1, 1)), Q=np.zeros((1, 1)))
    with pytest.raises(ValueError, match=r"time step 1\b"):
        _call(kalman_smoother, problem)
    result = _call(smoothed_marginals, problem, return_status=True)
    assert (result.status, result.failed_step) == (STATUS_SINGULAR_PREDICTION, 1)
    assert _call(kalman_filter, problem).status == STATUS_OK


@pytest.mark.parametrize("change, match", [
    (dict(gamma=np.zeros(11)), "site_precision must have shape"),
    (dict(pi=np.r_[np.ones(11), np.nan]), "site_precision must be finite"),
    (dict(gamma=np.ones((12, 1))), r"site_natural_mean must have shape \(T,\)"),
    (dict(H=np.ones((5, 1))), "obs_row must have 1 dimension"),
    (dict(H=np.ones(2)), r"obs_row must have trailing shape \(1,\)"),
    (dict(A=np.ones((12, 1, 2))), "transition must have trailing shape"),
    (dict(A=np.full((1, 1), np.inf)), "transition must be finite"),
    (dict(Q=np.r_[np.ones((4, 1, 1)), -np.ones((1, 1, 1)), np.ones((7, 1, 1))]),
     "process_cov must be symmetric positive semi-definite.*index 4"),
    (dict(Q=np.array([[1.0, 0.5], [0.4, 1.0]]), A=np.eye(2), H=np.ones(2), m0=np.zeros(2), P0=np.eye(2)),
     "process_cov must be symmetric positive semi-definite"),
    (dict(P0=np.zeros((1, 1))), "init_cov must be positive definite"),
    (dict(P0=np.eye(2)), r"init_cov must have shape \(1, 1\)"),
    (dict(m0=np.zeros(())), "init_mean must have shape"),
])
def test_invalid_input_names_the_argument(change, match):
    with pytest.raises(ValueError, match=match):
        _call(kalman_smoother, dict(_random_walk(), **change))


def test_zero_process_noise_is_allowed():
    """Q = 0 (e.g. repeated time points of a Markov GP) is semi-definite and fine with invertible A."""
    problem = dict(_random_walk(6), Q=np.zeros((1, 1)))
    result = _call(kalman_smoother, problem)
    np.testing.assert_allclose(result.means, result.means[0, 0], rtol=1e-14)
    # a constant state seen six times with unit precision: posterior precision 1 + 6
    np.testing.assert_allclose(result.marginal_var, 1.0 / 7.0, rtol=1e-14)
