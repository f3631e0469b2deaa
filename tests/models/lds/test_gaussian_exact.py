"""With Gaussian observations one full CVI step is the exact Kalman smoother and the ELBO is log p(y).

References: the compiled smoother run directly on the pseudo-observations
``y / sigma^2`` with precision ``1 / sigma^2``, the dense GP, and statsmodels'
exact Kalman filter and smoother (``statsmodels_reference``).
"""

import numpy as np
import pytest
import statsmodels.api as sm

from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods
from efvi.models.lds import kalman_smoother

from .statsmodels_reference import statsmodels_smoother

RTOL = 1e-8
NOISE_VAR = 0.3
K = gp.kernels


def _close(actual, expected, rtol=RTOL):
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(1.0, np.max(np.abs(expected))))


def _one_step(block, y, noise_var=NOISE_VAR):
    model = Model({"f": block}, [Observe(likelihoods.Gaussian(variance=noise_var), y, on="f")])
    return model.fit(step=1.0, max_iter=1, warn=False)


def _data(rng, T):
    t = np.sort(rng.uniform(0.0, 15.0, T))
    y = np.sin(t) + 0.5 * np.cos(2.3 * t) + np.sqrt(NOISE_VAR) * rng.normal(size=T)
    y[[3, 4, 5, T // 2, T - 1]] = np.nan
    return t, y


@pytest.mark.parametrize("kernel", [
    K.Matern12(lengthscale=0.8, variance=1.5),
    K.Matern32(lengthscale=1.2, variance=0.7),
    K.Matern52(lengthscale=2.0, variance=1.1),
    K.Matern32(lengthscale=3.0, variance=1.0) + K.Matern12(lengthscale=0.5, variance=0.2),
], ids=["matern12", "matern32", "matern52", "sum"])
def test_one_full_step_is_the_kalman_smoother_and_elbo_is_log_likelihood(kernel):
    t, y = _data(np.random.default_rng(0), 120)
    fit = _one_step(lds.MarkovGP(kernel, t), y)
    q = fit.posterior["f"]
    observed = ~np.isnan(y)

    # the sites are the Gaussian pseudo-observations, empty where y is missing
    np.testing.assert_array_equal(fit.sites[0].precision, np.where(observed, 1.0 / NOISE_VAR, 0.0))
    np.testing.assert_allclose(fit.sites[0].natural_mean, np.where(observed, y / NOISE_VAR, 0.0), rtol=1e-15)

    # the smoother run directly on them, from the kernel's own state-space form
    ss = kernel.state_space()
    A, Q = kernel.discretise(np.concatenate([[0.0], np.diff(t)]))
    direct = kalman_smoother(np.where(observed, y / NOISE_VAR, 0.0), np.where(observed, 1.0 / NOISE_VAR, 0.0),
                             ss.H, A, Q, np.zeros(ss.state_dim), ss.Pinf)
    _close(q.mean, direct.marginal_mean)
    _close(q.var, direct.marginal_var)
    _close(q.state_means, direct.means)
    _close(q.state_covs, direct.covs)

    # the dense GP's exact regression
    dense = _one_step(gp.GP(kernel, t), y)
    _close(q.mean, dense.posterior["f"].mean)
    _close(q.var, dense.posterior["f"].var)

    # statsmodels: exact log-likelihood and smoothed states of the same state-space model
    reference = statsmodels_smoother(y, NOISE_VAR, A, Q, ss.H, np.zeros(ss.state_dim), ss.Pinf)
    assert fit.elbo == pytest.approx(reference["log_likelihood"], rel=RTOL)
    assert dense.elbo == pytest.approx(reference["log_likelihood"], rel=RTOL)
    _close(q.state_means, reference["state_means"])
    _close(q.state_covs, reference["state_covs"])


def test_default_fit_stops_after_the_exact_step():
    t, y = _data(np.random.default_rng(1), 80)
    kernel = K.Matern32(lengthscale=1.0, variance=1.0)
    exact = _one_step(lds.MarkovGP(kernel, t), y)
    fit = Model({"f": lds.MarkovGP(kernel, t)}, [Observe(likelihoods.Gaussian(variance=NOISE_VAR), y, on="f")]).fit()
    assert fit.converged and fit.n_iter == 1 and fit.n_backoffs == 0     # no confirming step: it is exact
    np.testing.assert_array_equal(fit.rho_trace[1:], 1.0)
    assert fit.elbo == pytest.approx(exact.elbo, rel=1e-12)
    _close(fit.posterior["f"].mean, exact.posterior["f"].mean, rtol=1e-12)


def _rotation(angle, radius):
    c, s = np.cos(angle), np.sin(angle)
    return radius[..., None, None] * np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def test_time_varying_lds_matches_statsmodels():
    """A damped rotation with a time-varying angle and observation row, Gaussian noise, gaps."""
    rng = np.random.default_rng(2)
    T = 150
    A = _rotation(0.3 + 0.1 * np.sin(np.arange(T) / 10.0), np.full(T, 0.97))
    Q = np.array([[0.05, 0.01], [0.01, 0.03]])
    H = np.column_stack([np.ones(T), 0.5 * np.cos(np.arange(T) / 7.0)])
    m0, P0 = np.array([1.0, -0.5]), np.array([[0.5, 0.1], [0.1, 0.4]])
    x = np.empty((T, 2))
    x[0] = rng.multivariate_normal(m0, P0)
    for step in range(1, T):
        x[step] = A[step] @ x[step - 1] + rng.multivariate_normal(np.zeros(2), Q)
    y = np.einsum("ti,ti->t", H, x) + np.sqrt(NOISE_VAR) * rng.normal(size=T)
    y[40:55] = np.nan
    fit = _one_step(lds.LDS(A, Q, H, m0, P0), y)
    q = fit.posterior["f"]
    reference = statsmodels_smoother(y, NOISE_VAR, A, Q, H, m0, P0)
    assert fit.elbo == pytest.approx(reference["log_likelihood"], rel=RTOL)
    for name in ("mean", "var", "state_means", "state_covs"):
        _close(getattr(q, name), reference[name])


def test_local_level_matches_statsmodels_unobserved_components():
    """The Nile local-level model (A = 1) against statsmodels' own UnobservedComponents build."""
    nile = sm.datasets.nile.load_pandas().data["volume"].to_numpy(dtype=float)
    level_var, noise_var, init_mean, init_var = 1469.1, 15099.0, 1120.0, 1e5
    # known initial state: no observation is burned in the log-likelihood
    reference = sm.tsa.UnobservedComponents(nile, "llevel", loglikelihood_burn=0)
    reference.ssm.initialize_known(np.array([init_mean]), np.array([[init_var]]))
    result = reference.smooth([noise_var, level_var])
    block = lds.LDS(np.eye(1), np.array([[level_var]]), np.ones(1), np.array([init_mean]),
                    np.array([[init_var]]), n_steps=nile.shape[0])
    fit = _one_step(block, nile, noise_var)
    assert fit.elbo == pytest.approx(result.llf, rel=RTOL)
    _close(fit.posterior["f"].mean, result.smoothed_state[0])
    _close(fit.posterior["f"].var, result.smoothed_state_cov[0, 0])
    _close(fit.posterior["f"].state_means[:, 0], result.smoothed_state[0])
