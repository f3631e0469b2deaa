"""``lds.MarkovGP`` and ``lds.LDS`` as latent blocks: the Markov GP is the dense GP, computed in O(T).

The dense ``gp.GP`` with the same kernel on the same times is an independent
route (GP regression with per-point noise, Cholesky of the N x N kernel
matrix): every fit must follow the same trajectory and give the same
marginals and ELBO.
"""

import warnings

import numpy as np
import pytest

from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods

RTOL = 1e-8
K = gp.kernels

KERNELS = {
    "matern12": K.Matern12(lengthscale=0.7, variance=1.3),
    "matern32": K.Matern32(lengthscale=1.5, variance=0.8),
    "matern52": K.Matern52(lengthscale=2.0, variance=1.1),
    "sum": K.Matern52(lengthscale=4.0, variance=1.0) + K.Matern12(lengthscale=0.3, variance=0.1),
}

LIKELIHOODS = ["gaussian", "bernoulli", "poisson"]


def _close(actual, expected, rtol=RTOL):
    expected = np.asarray(expected)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * max(1.0, np.max(np.abs(expected))))


def _times(rng, T):
    """Irregular sorted times with two tied pairs."""
    t = np.sort(rng.uniform(0.0, 30.0, T))
    t[[10, 101]] = t[[9, 100]]
    return t


def _observations(rng, likelihood_name, f):
    if likelihood_name == "gaussian":
        return likelihoods.Gaussian(variance=0.2), f + np.sqrt(0.2) * rng.normal(size=f.shape)
    if likelihood_name == "bernoulli":
        return likelihoods.BernoulliLogit(), (rng.uniform(size=f.shape) < 1 / (1 + np.exp(-2 * f))).astype(float)
    return likelihoods.Poisson(), rng.poisson(np.exp(f)).astype(float)


def _fit(block, likelihood, y, **options):
    return Model({"f": block}, [Observe(likelihood, y, on="f")]).fit(**options)


@pytest.mark.parametrize("kernel_name", list(KERNELS))
@pytest.mark.parametrize("likelihood_name", LIKELIHOODS)
def test_markov_gp_equals_dense_gp(likelihood_name, kernel_name):
    rng = np.random.default_rng([LIKELIHOODS.index(likelihood_name), list(KERNELS).index(kernel_name)])
    t = _times(rng, 200)
    likelihood, y = _observations(rng, likelihood_name, np.sin(t / 2.0) + 0.5 * np.cos(1.7 * t))
    kernel = KERNELS[kernel_name]
    markov = _fit(lds.MarkovGP(kernel, t), likelihood, y, tol=1e-12)
    dense = _fit(gp.GP(kernel, t), likelihood, y, tol=1e-12)
    assert markov.converged and dense.converged
    assert markov.n_iter == dense.n_iter
    np.testing.assert_array_equal(markov.rho_trace, dense.rho_trace)
    _close(markov.posterior["f"].mean, dense.posterior["f"].mean)
    _close(markov.posterior["f"].var, dense.posterior["f"].var)
    _close(markov.elbo_trace, dense.elbo_trace)
    assert markov.elbo == pytest.approx(dense.elbo, rel=RTOL)
    _close(markov.sites[0].precision, dense.sites[0].precision)
    _close(markov.sites[0].natural_mean, dense.sites[0].natural_mean)


def test_missing_observations_interpolate_and_forecast_like_the_dense_gp():
    """NaN steps keep zero sites; the Markov GP's marginals there equal the dense GP's predictions."""
    rng = np.random.default_rng(7)
    t_obs = np.sort(rng.uniform(0.0, 20.0, 150))
    y_obs = rng.poisson(np.exp(np.sin(t_obs / 1.5))).astype(float)
    gap = (t_obs > 8.0) & (t_obs < 11.0)                    # interpolation
    t_future = t_obs[-1] + np.array([0.1, 0.5, 1.0, 3.0])  # forecast past the last time
    t = np.concatenate([t_obs, t_future])
    y = np.concatenate([np.where(gap, np.nan, y_obs), np.full(4, np.nan)])
    missing = np.isnan(y)
    kernel = K.Matern32(lengthscale=1.5, variance=1.0)

    markov = _fit(lds.MarkovGP(kernel, t), likelihoods.Poisson(), y, tol=1e-12)
    np.testing.assert_array_equal(markov.sites[0].precision[missing], 0.0)
    np.testing.assert_array_equal(markov.sites[0].natural_mean[missing], 0.0)
    assert np.all(markov.sites[0].precision[~missing] > 0)

    dense = _fit(gp.GP(kernel, t[~missing]), likelihoods.Poisson(), y[~missing], tol=1e-12)
    q = markov.posterior["f"]
    _close(q.mean[~missing], dense.posterior["f"].mean)
    _close(q.var[~missing], dense.posterior["f"].var)
    mean, var = dense.posterior["f"].predict(t[missing])
    _close(q.mean[missing], mean)
    _close(q.var[missing], var)
    assert markov.elbo == pytest.approx(dense.elbo, rel=RTOL)
    # far in the future the forecast reverts to the prior
    assert abs(q.mean[-1]) < abs(q.mean[-4]) and q.var[-1] > q.var[-4]


def test_posterior_exposes_state_moments():
    """State 0 of a Matern state is f itself; the states are the smoother's, cross-covariances included."""
    rng = np.random.default_rng(8)
    t = np.sort(rng.uniform(0.0, 10.0, 60))
    block = lds.MarkovGP(K.Matern52(lengthscale=1.0, variance=1.0), t)
    fit = _fit(block, likelihoods.BernoulliLogit(), (np.sin(t) > 0).astype(float))
    q = fit.posterior["f"]
    assert q.state_means.shape == (60, 3) and q.state_covs.shape == (60, 3, 3)
    _close(q.state_means[:, 0], q.mean, rtol=1e-12)
    _close(q.state_covs[:, 0, 0], q.var, rtol=1e-12)
    full = block.smoother(fit.sites[0].natural_mean, fit.sites[0].precision)
    np.testing.assert_array_equal(full.means, q.state_means)
    assert np.all(np.linalg.eigvalsh(q.state_covs) > 0)


def test_constant_lds_block_is_the_time_varying_one():
    """Constant matrices (given once, with n_steps) and the same matrices stacked over time agree."""
    rng = np.random.default_rng(9)
    T = 80
    A = np.array([[0.9, -0.3], [0.3, 0.9]])
    Q, H, m0, P0 = 0.1 * np.eye(2), np.array([1.0, 0.0]), np.zeros(2), np.eye(2)
    y = rng.poisson(2.0, size=T).astype(float)
    constant = _fit(lds.LDS(A, Q, H, m0, P0, n_steps=T), likelihoods.Poisson(), y)
    stacked = _fit(lds.LDS(np.tile(A, (T, 1, 1)), np.tile(Q, (T, 1, 1)), np.tile(H, (T, 1)), m0, P0),
                   likelihoods.Poisson(), y)
    _close(constant.posterior["f"].mean, stacked.posterior["f"].mean, rtol=1e-12)
    _close(constant.posterior["f"].state_covs, stacked.posterior["f"].state_covs, rtol=1e-12)
    assert constant.elbo == pytest.approx(stacked.elbo, rel=1e-12)


@pytest.mark.parametrize("make, error, match", [
    (lambda: lds.MarkovGP(K.Matern32(), np.array([0.0, 2.0, 1.0])), ValueError,
     r"t must be sorted \(non-decreasing\); got t\[2\] = 1.0 < t\[1\] = 2.0"),
    (lambda: lds.MarkovGP(K.Matern32(), np.zeros((3, 2))), ValueError, r"t must be a 1-D array.*\(3, 2\)"),
    (lambda: lds.MarkovGP(K.Matern32(), np.array([])), ValueError, r"t must be a 1-D array.*\(0,\)"),
    (lambda: lds.MarkovGP(K.Matern32(), np.array([0.0, np.nan])), ValueError, "t must be finite"),
    (lambda: lds.MarkovGP("matern32", np.arange(3.0)), ValueError, "kernel must be a efvi.models.gp.kernels.Kernel"),
    (lambda: lds.MarkovGP(K.RBF(), np.arange(3.0)), NotImplementedError,
     "RBF has no finite-dimensional state-space form"),
    (lambda: lds.MarkovGP(K.Matern32(lengthscale=[1.0, 2.0]), np.arange(3.0)), ValueError,
     "a state-space form needs a scalar input"),
    (lambda: Model({"f": lds.MarkovGP(K.Matern32(), np.arange(5.0))}, [Observe(likelihoods.Poisson(), np.ones(4), on="f")]),
     ValueError, "y has 4 entries but block 'f' has 5 points"),
    (lambda: lds.LDS(np.eye(2), np.eye(2), np.ones(2), np.zeros(2), np.eye(2)), ValueError, "n_steps must be given"),
    (lambda: lds.LDS(np.ones((5, 2, 2)), np.eye(2), np.ones(2), np.zeros(2), np.eye(2), n_steps=4), ValueError,
     r"must agree with the time axis.*\[4, 5\]"),
    (lambda: lds.LDS(np.eye(2), -np.eye(2), np.ones(2), np.zeros(2), np.eye(2), n_steps=4), ValueError,
     "process_cov must be symmetric positive semi-definite"),
    (lambda: lds.LDS(np.eye(2), np.eye(2), np.ones(3), np.zeros(2), np.eye(2), n_steps=4), ValueError,
     r"obs_row must have trailing shape \(2,\)"),
    (lambda: lds.LDS(np.eye(2), np.eye(2), np.ones(2), np.zeros(2), -np.eye(2), n_steps=4), ValueError,
     "init_cov must be positive definite"),
])
def test_invalid_input_raises_a_clear_error(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_smoother_rejects_sites_of_the_wrong_length():
    block = lds.MarkovGP(K.Matern12(), np.arange(5.0))
    with pytest.raises(ValueError, match=r"must have shape \(5,\); got \(4,\)"):
        block.smoother(np.zeros(4), np.zeros(4))


@pytest.mark.parametrize("kernel", [
    K.Periodic(period=6.0, lengthscale=1.0, variance=1.0),
    K.Matern52(lengthscale=1000.0, variance=1.0),
], ids=["periodic", "matern52_long_lengthscale"])
def test_markov_gp_builds_for_kernels_with_near_zero_process_noise(kernel):
    # Q = Pinf - A Pinf A^T is pure rounding noise here; the block still equals the dense GP
    rng = np.random.default_rng(10)
    t = np.sort(rng.uniform(0.0, 20.0, 100))
    y = np.sin(t) + 0.1 * rng.normal(size=t.size)
    from efvi.inference import Model
    from efvi.models import Observe, gp, likelihoods
    fits = [Model({"f": prior}, [Observe(likelihoods.Gaussian(variance=0.01), y, on="f")]).fit(step=1.0, max_iter=1,
                                                                                                 warn=False)
            for prior in (lds.MarkovGP(kernel, t), gp.GP(kernel, t))]
    tolerance = 1e-6 if not hasattr(kernel, "truncation_error") else 10 * kernel.truncation_error() + 1e-6
    np.testing.assert_allclose(fits[0].posterior["f"].mean, fits[1].posterior["f"].mean, atol=tolerance)


def test_posteriors_do_not_share_the_blocks_scratch_arrays():
    """The block reuses its scratch arrays between passes; earlier posteriors must not change."""
    rng = np.random.default_rng(12)
    t = np.sort(rng.uniform(0.0, 10.0, 40))
    block = lds.MarkovGP(K.Matern32(lengthscale=1.0, variance=1.0), t)
    first_sites = (rng.normal(size=40), rng.uniform(0.1, 2.0, 40))
    first = block.posterior(first_sites)
    kept = (first.mean.copy(), first.var.copy(), first.log_normaliser)
    block.posterior((rng.normal(size=40), rng.uniform(0.1, 2.0, 40)))
    np.testing.assert_array_equal(first.mean, kept[0])
    np.testing.assert_array_equal(first.var, kept[1])
    again = block.posterior(first_sites)
    np.testing.assert_array_equal(again.mean, kept[0])
    assert again.log_normaliser == kept[2]


@pytest.mark.parametrize("make, match", [
    (lambda: lds.MarkovGP(K.Matern32(), np.arange(3.0), hyper_max_iter="a"),
     r"hyper_max_iter must be an integer >= 1; got 'a'"),
    (lambda: lds.MarkovGP(K.Matern32(), np.arange(3.0), hyper_max_iter=-1),
     r"hyper_max_iter must be an integer >= 1; got -1"),
    (lambda: lds.MarkovGP(K.Matern32(), np.arange(3.0), hyper_max_iter=2.5),
     r"hyper_max_iter must be an integer >= 1; got 2.5"),
    (lambda: lds.MarkovGP(K.Matern32(), np.arange(3.0) + 0j),
     r"t must be an array of real numbers or datetimes; got dtype complex128"),
    (lambda: lds.MarkovGP(K.Matern32(), np.arange(3).astype("timedelta64[D]")),
     r"t must be an array of real numbers or datetimes; got dtype timedelta64\[D\]"),
    (lambda: lds.LDS(np.eye(2), np.eye(2), np.ones(2), np.zeros(2), np.eye(2), n_steps="a"),
     r"n_steps must be an integer >= 1; got 'a'"),
])
def test_non_numeric_arguments_raise_named_errors(make, match):
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an error, not a ComplexWarning
        with pytest.raises(ValueError, match=match):
            make()


def test_reprs_name_the_kernel_times_and_state():
    markov = lds.MarkovGP(K.Matern32(lengthscale=2.0), np.linspace(0.0, 10.0, 50), learn_hyperparameters=True)
    assert repr(markov) == ("MarkovGP(kernel=Matern32(lengthscale=2.0, variance=1.0), t=<50 times from 0.0 to 10.0>, "
                            "state_dim=2, learn_hyperparameters=True)")
    dated = lds.MarkovGP(K.Matern12(), np.arange("2020-01-01", "2020-01-11", dtype="datetime64[D]"))
    assert repr(dated) == ("MarkovGP(kernel=Matern12(lengthscale=1.0, variance=1.0), "
                           "t=<10 times from 0.0 to 9.0 days after 2020-01-01>, state_dim=1)")
    chain = lds.LDS(np.eye(2), 0.1 * np.eye(2), np.array([1.0, 0.0]), np.zeros(2), np.eye(2), n_steps=100)
    assert repr(chain) == "LDS(n_steps=100, state_dim=2)"
