"""Markov GP hyperparameters: Fisher-identity gradients and learning, against finite differences and the dense GP."""

import numpy as np
import pytest

from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods

K = gp.kernels

KERNELS = {
    "matern12": K.Matern12(lengthscale=0.7, variance=1.3),
    "matern32": K.Matern32(lengthscale=1.5, variance=0.8),
    "matern52": K.Matern52(lengthscale=2.0, variance=1.1),
    "sum": K.Matern32(lengthscale=4.0, variance=1.0) + K.Matern12(lengthscale=0.3, variance=0.1),
    "with_constant": K.Matern32(lengthscale=2.0, variance=1.0) + K.Constant(variance=0.5),  # Q_t singular
}


def _irregular_times(rng, T, ties):
    """Sorted times with gaps in [0.05, 0.25], and with ``ties`` some gaps of exactly zero."""
    gaps = rng.uniform(0.05, 0.25, T)
    if ties:
        gaps[rng.choice(np.arange(1, T), T // 10, replace=False)] = 0.0
    return np.cumsum(gaps)


def _fitted_sites(kernel, t, likelihood, y):
    fit = Model({"f": lds.MarkovGP(kernel, t)}, [Observe(likelihood, y, on="f")]).fit()
    return fit.sites[0].natural_mean, fit.sites[0].precision


def _central_difference(function, x, h=1e-5):
    grad = np.empty_like(x)
    for i in range(x.shape[0]):
        step = np.zeros_like(x)
        step[i] = h
        grad[i] = (function(x + step) - function(x - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("kernel_name", list(KERNELS))
@pytest.mark.parametrize("likelihood_name", ["poisson", "student_t"])
def test_log_normaliser_gradient_matches_finite_differences_and_the_dense_gp(kernel_name, likelihood_name):
    """Poisson sites on times with ties; Student-t sites (some negative) on distinct times, where the
    dense GP's negative-precision route factorises K without jitter and is exact too."""
    rng = np.random.default_rng(list(KERNELS).index(kernel_name))
    t = _irregular_times(rng, 120, ties=likelihood_name == "poisson")
    if likelihood_name == "poisson":
        likelihood, y = likelihoods.Poisson(), rng.poisson(np.exp(np.sin(t))).astype(float)
    else:
        likelihood, y = likelihoods.StudentT(df=3.0, scale=0.2), np.sin(t) + 0.2 * rng.standard_t(3.0, size=t.shape)
        y[::17] += 4.0
    kernel = KERNELS[kernel_name]
    message = _fitted_sites(kernel, t, likelihood, y)
    if likelihood_name == "student_t":
        assert np.any(message[1] < 0)
    block = lds.MarkovGP(kernel, t)
    theta = kernel.log_params + 0.1 * rng.normal(size=kernel.n_params)  # away from any optimum
    value, grad = block.log_normaliser(theta, message)
    numeric = _central_difference(lambda x: block.log_normaliser(x, message)[0], theta)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * np.max(np.abs(numeric)))
    dense_value, dense_grad = gp.GP(kernel, t).log_normaliser(theta, message)
    assert value == pytest.approx(dense_value, rel=1e-9)
    np.testing.assert_allclose(grad, dense_grad, rtol=1e-7, atol=1e-7 * np.max(np.abs(dense_grad)))


def test_log_normaliser_gradient_through_a_deterministic_periodic_part():
    """A periodic part moves its state by rotations (``Q_t = 0``), so its period acts only through ``A_t``.
    The state space truncates the dense periodic kernel, so the check is against finite differences."""
    rng = np.random.default_rng(4)
    t = _irregular_times(rng, 80, ties=True)
    kernel = K.Matern12(lengthscale=2.0, variance=0.5) + K.Periodic(period=1.3, lengthscale=3.0, variance=0.8,
                                                                    n_harmonics=1)
    message = _fitted_sites(kernel, t, likelihoods.Poisson(), rng.poisson(np.exp(np.sin(5 * t))).astype(float))
    block = lds.MarkovGP(kernel, t)
    _, grad = block.log_normaliser(kernel.log_params, message)
    numeric = _central_difference(lambda x: block.log_normaliser(x, message)[0], kernel.log_params)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * np.max(np.abs(numeric)))
    assert np.abs(grad[2]) > 1.0                          # the period's derivative is not vacuous


def _simulate_matern32(rng, t, lengthscale, variance):
    cov = K.Matern32(lengthscale=lengthscale, variance=variance)(t)
    return np.linalg.cholesky(cov + 1e-10 * np.eye(t.shape[0])) @ rng.normal(size=t.shape[0])


def test_learning_recovers_the_lengthscale_and_raises_the_elbo():
    rng = np.random.default_rng(0)
    t = _irregular_times(rng, 1000, ties=False)
    y = rng.poisson(np.exp(_simulate_matern32(rng, t, lengthscale=2.0, variance=1.0))).astype(float)
    start = K.Matern32(lengthscale=0.2, variance=0.3)
    block = lds.MarkovGP(start, t, learn_hyperparameters=True)
    learned = Model({"f": block}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()
    fixed = Model({"f": lds.MarkovGP(start, t)}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()
    assert learned.converged and fixed.converged
    block = learned.priors["f"]
    lengthscale, variance = np.exp(block.kernel.log_params)
    assert 1.0 < lengthscale < 4.0
    assert 0.3 < variance < 3.0
    assert learned.elbo > fixed.elbo + 10.0
    # at convergence the learned hyperparameters are a stationary point of log Z with the sites fixed
    message = (learned.sites[0].natural_mean, learned.sites[0].precision)
    numeric = _central_difference(lambda x: block.log_normaliser(x, message)[0], block.kernel.log_params)
    assert np.max(np.abs(numeric)) < 1e-3


def test_markov_and_dense_gp_learn_the_same_hyperparameters():
    rng = np.random.default_rng(1)
    t = _irregular_times(rng, 100, ties=True) * 3.0
    y = rng.poisson(np.exp(_simulate_matern32(rng, t, lengthscale=3.0, variance=1.0))).astype(float)
    start = K.Matern32(lengthscale=0.5, variance=0.3)
    blocks = {"markov": lds.MarkovGP(start, t, learn_hyperparameters=True),
              "dense": gp.GP(start, t, learn_hyperparameters=True)}
    fits = {name: Model({"f": block}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()
            for name, block in blocks.items()}
    assert fits["markov"].converged and fits["dense"].converged
    learned = {name: np.exp(fit.priors["f"].kernel.log_params) for name, fit in fits.items()}
    assert not np.allclose(learned["markov"], [0.5, 0.3], rtol=0.1)       # it moved
    np.testing.assert_allclose(learned["markov"], learned["dense"], rtol=1e-4)
    assert fits["markov"].elbo == pytest.approx(fits["dense"].elbo, rel=1e-8)


def test_log_normaliser_gradient_with_close_times():
    """120 uniform random times (smallest gap 0.003) under a Matern-5/2 of lengthscale 2: ``Q_t`` of the
    short gaps is nearly singular, which the gradient never inverts."""
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0.0, 15.0, 120))
    assert np.min(np.diff(t)) < 0.005
    kernel = KERNELS["matern52"]
    message = _fitted_sites(kernel, t, likelihoods.Poisson(), rng.poisson(np.exp(np.sin(t))).astype(float))
    _, grad = lds.MarkovGP(kernel, t).log_normaliser(kernel.log_params, message)
    _, dense_grad = gp.GP(kernel, t).log_normaliser(kernel.log_params, message)
    np.testing.assert_allclose(grad, dense_grad, rtol=1e-9)


@pytest.mark.parametrize("kernel_class", [K.Matern12, K.Matern32, K.Matern52])
@pytest.mark.parametrize("gap", [1e-3, 1e-5, 1e-7])
def test_log_normaliser_gradient_with_one_very_short_gap(kernel_class, gap):
    """One gap of ``gap`` among gaps of 0.5 (lengthscale 1): ``Q_t`` of that step is of size ``gap^(2 nu)``
    relative to ``Pinf``, down to 1e-35, and computed from ``Pinf - A Pinf A^T`` with absolute rounding
    error 1e-16, so it is mostly noise; the gradient does not depend on it."""
    rng = np.random.default_rng(12)
    t = np.cumsum(np.full(40, 0.5))
    t[20] = t[19] + gap
    message = (rng.normal(size=40), rng.uniform(0.2, 2.0, 40))
    kernel = kernel_class(lengthscale=1.0, variance=1.0)
    block = lds.MarkovGP(kernel, t)
    _, grad = block.log_normaliser(kernel.log_params, message)
    numeric = _central_difference(lambda x: block.log_normaliser(x, message)[0], kernel.log_params)
    # central differences: truncation O(h^2) and rounding 1e-16 |log Z| / h, each about 1e-10 here
    np.testing.assert_allclose(grad, numeric, rtol=1e-8)
    if kernel_class is not K.Matern12:  # the dense GP's own gradient loses digits to the nearly repeated
        _, dense_grad = gp.GP(kernel, t).log_normaliser(kernel.log_params, message)  # inputs of Matern-1/2
        np.testing.assert_allclose(grad, dense_grad, rtol=1e-10)


def test_gradient_is_that_of_the_converged_elbo():
    """At converged sites the envelope theorem makes ``d log Z / d theta`` (sites fixed) the derivative of
    the converged ELBO; central differences of fits converged to ``tol = 1e-14`` check it, with
    truncation ``O(h^2)`` and convergence error ``1e-14 |ELBO| / h``, both below 1e-6 here."""
    rng = np.random.default_rng(6)
    t = np.sort(rng.uniform(0.0, 15.0, 60))
    y = rng.poisson(np.exp(np.sin(t / 2))).astype(float)
    kernel = K.Matern52(lengthscale=2.0, variance=1.0)

    def converged(log_params):
        block = lds.MarkovGP(kernel.with_log_params(log_params), t)
        fit = Model({"f": block}, [Observe(likelihoods.Poisson(), y, on="f")]).fit(tol=1e-14)
        assert fit.converged
        return fit

    fit = converged(kernel.log_params)
    message = (fit.sites[0].natural_mean, fit.sites[0].precision)
    _, grad = lds.MarkovGP(kernel, t).log_normaliser(kernel.log_params, message)
    numeric = _central_difference(lambda x: converged(x).elbo, kernel.log_params, h=1e-4)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)
    assert np.all(np.abs(grad) > 1.0)


@pytest.mark.parametrize("kernel_name", ["matern52", "with_constant"])
def test_learning_with_close_times_and_singular_process_noise_matches_the_dense_gp(kernel_name):
    """Uniform random times (smallest gap 1e-3) with Poisson counts: learning runs (it used to stop with a
    failed Cholesky of ``Q_t``) and finds the dense GP's ELBO."""
    rng = np.random.default_rng(6)
    t = np.sort(rng.uniform(0.0, 15.0, 60))
    y = rng.poisson(np.exp(np.sin(t / 2))).astype(float)
    kernel = KERNELS[kernel_name]
    fits = {name: Model({"f": block(kernel, t, learn_hyperparameters=True)},
                        [Observe(likelihoods.Poisson(), y, on="f")]).fit()
            for name, block in (("markov", lds.MarkovGP), ("dense", gp.GP))}
    assert fits["markov"].converged and fits["dense"].converged
    assert fits["markov"].elbo == pytest.approx(fits["dense"].elbo, rel=1e-9)
