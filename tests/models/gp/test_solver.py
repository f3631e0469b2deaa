"""The GP conjugate computation against a dense reference: inv(inv(K) + diag(pi)) by explicit inverses."""

import numpy as np
import pytest

from efvi.inference import InvalidPosterior
from efvi.models.gp import kernels
from efvi.models.gp import solver
from efvi.models.gp.solver import site_posterior

from .reference import dense_site_posterior

RTOL = 1e-10
N = 30


def _kernel_matrix(rng, n=N):
    """A Matern-3/2 kernel matrix on spread-out 2-D inputs (condition number ~1e2): the dense
    reference's explicit inverses are then accurate to ~1e-13."""
    X = rng.uniform(0.0, 4.0, size=(n, 2))
    kernel = kernels.Matern32(lengthscale=0.7, variance=1.3)
    return X, kernel, kernel(X)


def _sites(rng, n=N):
    precision = rng.gamma(2.0, 1.0, size=n)
    return rng.normal(size=n) * precision + rng.normal(size=n), precision


def _cases():
    """name -> function(rng, K) returning (gamma, pi)."""

    def positive(rng, K):
        return _sites(rng)

    def some_zero(rng, K):
        gamma, pi = _sites(rng)
        missing = rng.choice(N, size=8, replace=False)
        gamma[missing], pi[missing] = 0.0, 0.0
        return gamma, pi

    def all_zero(rng, K):
        return np.zeros(N), np.zeros(N)

    def tiny(rng, K):
        gamma, pi = _sites(rng)
        small = rng.choice(N, size=8, replace=False)
        pi[small] = 1e-12
        gamma[small] = 1e-12 * rng.normal(size=8)
        return gamma, pi

    def negative(rng, K):
        gamma, pi = _sites(rng)
        neg = rng.choice(N, size=5, replace=False)
        pi[neg] = -0.3 / np.diag(K)[neg]
        return gamma, pi

    def negative_and_zero(rng, K):
        gamma, pi = negative(rng, K)
        zero = np.flatnonzero(pi > 0)[:6]
        gamma[zero], pi[zero] = 0.0, 0.0
        return gamma, pi

    return {f.__name__: f for f in (positive, some_zero, all_zero, tiny, negative, negative_and_zero)}


CASES = _cases()


def _problem(name, seed=0):
    rng = np.random.default_rng(seed)
    X, kernel, K = _kernel_matrix(rng)
    gamma, pi = CASES[name](rng, K)
    assert np.linalg.eigvalsh(np.linalg.inv(K) + np.diag(pi)).min() > 0  # a valid posterior
    return rng, X, kernel, K, gamma, pi


def _assert_rel(actual, expected, scale=None):
    """Agreement to RTOL relative to the largest entry (or to ``scale``, for quantities that may vanish)."""
    scale = np.max(np.abs(expected)) if scale is None else scale
    np.testing.assert_allclose(actual, expected, rtol=0, atol=RTOL * scale)


@pytest.mark.parametrize("name", sorted(CASES))
def test_marginals_and_log_normaliser_match_dense(name):
    _, _, _, K, gamma, pi = _problem(name)
    mean, cov, log_z = dense_site_posterior(K, gamma, pi)
    solved = site_posterior(K, gamma, pi)
    _assert_rel(solved.mean, mean)
    np.testing.assert_allclose(solved.var, np.diag(cov), rtol=RTOL, atol=0)
    assert solved.log_normaliser == pytest.approx(log_z, rel=RTOL, abs=RTOL)
    _assert_rel(solved.alpha, np.linalg.solve(K, mean))


@pytest.mark.parametrize("name", sorted(CASES))
def test_predictions_at_new_inputs_match_dense(name):
    rng, X, kernel, K, gamma, pi = _problem(name)
    X_new = rng.uniform(-1.0, 5.0, size=(12, 2))
    cross = kernel(X, X_new)
    mean, cov, _ = dense_site_posterior(K, gamma, pi)
    K_inv = np.linalg.inv(K)
    W = K_inv - K_inv @ cov @ K_inv
    solved = site_posterior(K, gamma, pi)
    # predictive mean k_*^T K^{-1} m and variance k_** - k_*^T W k_*
    _assert_rel(cross.T @ solved.alpha, cross.T @ K_inv @ mean)
    reduction = np.einsum("nm,nk,km->m", cross, W, cross)
    _assert_rel(solved.predictive_var_reduction(cross), reduction, scale=kernel.variance)
    predictive_var = kernel.diag(X_new) - reduction
    np.testing.assert_allclose(kernel.diag(X_new) - solved.predictive_var_reduction(cross),
                               predictive_var, rtol=RTOL, atol=0)
    _assert_rel(solved.predictive_cov_reduction(cross), cross.T @ W @ cross, scale=kernel.variance)
    _assert_rel(solved.w_matrix(), W, scale=np.abs(K_inv).max())


def test_predictions_at_training_inputs_equal_the_marginals():
    _, _, _, K, gamma, pi = _problem("negative_and_zero")
    for sites in ((gamma, pi), (gamma, np.abs(pi))):
        solved = site_posterior(K, *sites)
        np.testing.assert_allclose(K @ solved.alpha, solved.mean, rtol=0, atol=RTOL * np.abs(solved.mean).max())
        np.testing.assert_allclose(np.diag(K) - solved.predictive_var_reduction(K), solved.var, rtol=1e-9)


@pytest.mark.parametrize("name", ["some_zero", "negative"])
def test_inputs_are_not_modified(name):
    _, _, _, K, gamma, pi = _problem(name)
    copies = [a.copy() for a in (K, gamma, pi)]
    site_posterior(K, gamma, pi).w_matrix()
    for before, after in zip(copies, (K, gamma, pi)):
        np.testing.assert_array_equal(after, before)


def test_all_zero_sites_give_the_prior():
    _, _, _, K, _, _ = _problem("positive")
    solved = site_posterior(K, np.zeros(N), np.zeros(N))
    np.testing.assert_array_equal(solved.mean, 0.0)
    np.testing.assert_allclose(solved.var, np.diag(K), rtol=1e-14)
    assert solved.log_normaliser == 0.0


def test_the_two_routes_agree_where_both_apply(monkeypatch):
    """A tiny negative precision sends the problem down the second route; the answer is continuous."""
    _, _, _, K, gamma, pi = _problem("some_zero")
    first = site_posterior(K, gamma, pi)
    nudged = pi.copy()
    nudged[pi == 0] = -1e-300
    routes = []
    indefinite = solver._indefinite_route
    monkeypatch.setattr(solver, "_indefinite_route", lambda *a: routes.append(1) or indefinite(*a))
    second = site_posterior(K, gamma, nudged)
    assert routes == [1]
    _assert_rel(second.mean, first.mean)
    np.testing.assert_allclose(second.var, first.var, rtol=RTOL)
    assert second.log_normaliser == pytest.approx(first.log_normaliser, rel=RTOL)


def test_invalid_negative_sites_raise():
    _, _, _, K, gamma, pi = _problem("negative")
    bad = pi.copy()
    bad[0] = -2.0 * np.linalg.inv(K)[0, 0]  # the posterior precision's (0, 0) entry becomes negative
    assert np.linalg.eigvalsh(np.linalg.inv(K) + np.diag(bad)).min() < 0
    with pytest.raises(InvalidPosterior, match="non-positive-definite"):
        site_posterior(K, gamma, bad)


def test_just_invalid_negative_sites_raise():
    """The boundary is found exactly: scale one negative site to just past where the
    smallest eigenvalue of inv(K) + diag(pi) crosses zero."""
    _, _, _, K, gamma, pi = _problem("negative")
    K_inv = np.linalg.inv(K)
    e0 = np.zeros(N)
    e0[0] = 1.0
    # smallest t with inv(K) + diag(pi) + t e0 e0^T singular: t = -1 / (e0^T (inv(K) + diag(pi))^{-1} e0)
    threshold = -1.0 / np.linalg.inv(K_inv + np.diag(pi))[0, 0]
    for factor, valid in ((0.99, True), (1.01, False)):
        shifted = pi.copy()
        shifted[0] += factor * threshold
        if valid:
            site_posterior(K, gamma, shifted)
        else:
            with pytest.raises(InvalidPosterior):
                site_posterior(K, gamma, shifted)


def test_compiled_passes_match_numpy():
    from scipy.linalg import solve_triangular

    from efvi.models.gp._solver_kernels import forward_pass, scaled_plus_identity_lower, transposed_pass
    rng = np.random.default_rng(3)
    K = rng.normal(size=(7, 7))
    s = rng.uniform(0.0, 2.0, 7)
    expected = np.eye(7) + s[:, None] * K * s[None, :]
    rows, cols = np.tril_indices(7)   # only the lower triangle is written
    np.testing.assert_allclose(scaled_plus_identity_lower(K, s)[rows, cols], expected[rows, cols], rtol=1e-15)

    L = np.tril(rng.normal(size=(7, 7))) + 3.0 * np.eye(7)
    garbage = L + np.triu(np.full((7, 7), np.nan), 1)   # the strict upper triangle is never read
    b = rng.normal(size=7)
    strict = np.tril(L, -1)
    row_sums, z = forward_pass(garbage, b)
    np.testing.assert_allclose(row_sums, (strict ** 2).sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(z, solve_triangular(L, b, lower=True), rtol=1e-13)
    col_sums, x = transposed_pass(garbage, b)
    np.testing.assert_allclose(col_sums, (strict ** 2).sum(axis=0), rtol=1e-14)
    np.testing.assert_allclose(x, L.T @ b, rtol=1e-13)


def _small_noise_problem(kernel, noise, n=40):
    """Smooth data on [-3, 3] and the noise form of exact GP regression (one Cholesky of
    ``K + noise I``, as in scikit-learn): alpha, m = y - noise alpha,
    v = noise (1 - noise diag((K + noise I)^{-1})), KL(q || p), the log marginal likelihood and
    ``kappa eps``, the relative accuracy both routes can reach (kappa = cond(K + noise I))."""
    from scipy.linalg import cho_factor, cho_solve

    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(-3.0, 3.0, n))
    y = np.sin(X) + 0.5 + 0.03 * rng.normal(size=n)
    K = kernel(X)
    noisy = cho_factor(K + noise * np.eye(n), lower=True)
    alpha = cho_solve(noisy, y)
    mean = y - noise * alpha
    var = noise * (1.0 - noise * np.diag(cho_solve(noisy, np.eye(n))))
    log_det_noisy = 2.0 * np.sum(np.log(np.diag(noisy[0])))
    kl = 0.5 * (mean @ alpha - np.sum(var) / noise + log_det_noisy - n * np.log(noise))
    lml = -0.5 * (y @ alpha + log_det_noisy + n * np.log(2.0 * np.pi))
    accuracy = np.linalg.cond(K + noise * np.eye(n)) * np.finfo(float).eps
    return X, y, K, dict(alpha=alpha, mean=mean, var=var, kl=kl, lml=lml, accuracy=accuracy)


SMALL_NOISE_CASES = [(kernels.RBF(lengthscale=1.0), 1e-6), (kernels.RBF(lengthscale=1.0), 1e-8),
                     (kernels.RBF(lengthscale=1.0), 1e-10), (kernels.Matern32(lengthscale=0.9), 1e-6),
                     (kernels.Matern32(lengthscale=0.9), 1e-10)]


@pytest.mark.parametrize("kernel, noise", SMALL_NOISE_CASES)
def test_small_noise_sites_match_the_noise_form(kernel, noise):
    """Sites of a Gaussian likelihood with tiny noise (pi = 1e6..1e10): gamma and pi m are both
    ~y / noise, and forming alpha, m or the KL as their difference lost up to 10 digits (m off by
    0.8 at noise 1e-10).  Against 60-digit arithmetic both this solver and the noise form reach
    about kappa eps in alpha (relative to its largest entry) and in v, and 1e-2 kappa eps |y| in
    m (measured); the tolerances allow
    for both errors."""
    X, y, K, ref = _small_noise_problem(kernel, noise)
    got = site_posterior(K, y / noise, np.full(y.shape, 1.0 / noise))
    accuracy = ref["accuracy"]
    np.testing.assert_allclose(got.alpha, ref["alpha"], rtol=0, atol=3 * accuracy * np.max(np.abs(ref["alpha"])))
    np.testing.assert_allclose(got.mean, ref["mean"], rtol=0, atol=accuracy * np.max(np.abs(y)))
    np.testing.assert_allclose(got.var, ref["var"], rtol=2 * accuracy, atol=0)
    assert got.kl == pytest.approx(ref["kl"], rel=30 * accuracy)


@pytest.mark.parametrize("kernel, noise", SMALL_NOISE_CASES[:2] + SMALL_NOISE_CASES[3:4])
def test_small_noise_regression_elbo_is_the_evidence(kernel, noise):
    """Through the engine: the exact posterior's ELBO equals the log marginal likelihood (it was
    off by 4e4 nats at noise 1e-8, and above the evidence)."""
    from efvi.inference import Model
    from efvi.models import Observe, gp, likelihoods

    X, y, K, ref = _small_noise_problem(kernel, noise)
    fit = Model({"f": gp.GP(kernel, X)}, [Observe(likelihoods.Gaussian(variance=noise), y, on="f")]).fit()
    assert fit.elbo == pytest.approx(ref["lml"], rel=30 * ref["accuracy"], abs=1e-9)
    np.testing.assert_allclose(fit.posterior["f"].mean, ref["mean"], rtol=0,
                               atol=ref["accuracy"] * np.max(np.abs(y)))


def test_no_sites_give_the_prior_without_a_factorisation():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 2))
    K = np.exp(-0.5 * np.sum((X[:, None] - X[None]) ** 2, axis=-1)) + 1e-8 * np.eye(30)
    zeros = np.zeros(30)
    shortcut = solver.site_posterior(K, zeros, zeros)
    general = solver._nonnegative_route(K, zeros, zeros)       # the same numbers through B = I
    for name in ("mean", "var", "alpha"):
        np.testing.assert_allclose(getattr(shortcut, name), getattr(general, name), atol=1e-15)
    assert shortcut.log_normaliser == pytest.approx(general.log_normaliser, abs=1e-12) == 0.0
    assert shortcut.kl == pytest.approx(general.kl, abs=1e-12) == 0.0
    cross = rng.normal(size=(30, 4))
    np.testing.assert_allclose(shortcut.predictive_var_reduction(cross), general.predictive_var_reduction(cross),
                               atol=1e-12)
    np.testing.assert_allclose(shortcut.w_matrix(), general.w_matrix(), atol=1e-12)
