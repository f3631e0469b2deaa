"""The sparse (inducing-point) GP block against independent references.

References: the dense GP block with the inducing points at the data (the same
posterior and ELBO); Titsias's (2009) collapsed bound in closed form for a
Gaussian likelihood; an independent numpy evaluation of the SVGP bound
(Hensman et al., 2015) in the unwhitened parameters, with 200-point
Gauss-Hermite expectations and a dense KL, whose gradient in ``(m_u, S_u)``
(by autograd) vanishes at the CVI fixed point; central finite differences of
the converged ELBO for the hyperparameter gradient.
"""

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad
from scipy.stats import multivariate_normal

from efvi.inference import Decaying, InvalidPosterior, Model
from efvi.models import Observe, gp, likelihoods

NOISE = 0.09


def _classification(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(-3.0, 3.0, size=(n, 1)), axis=0)
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-2.0 * np.sin(2.0 * X[:, 0])))).astype(float)
    return X, y


def _fit(block, likelihood, y, **options):
    options.setdefault("tol", 1e-12)
    return Model({"f": block}, [Observe(likelihood, y, on="f")]).fit(**options)


KERNEL = gp.kernels.RBF(lengthscale=0.8, variance=1.5)


@pytest.mark.parametrize("likelihood, target", [
    (likelihoods.BernoulliLogit(), "binary"), (likelihoods.Poisson(), "counts"),
    (likelihoods.Gaussian(variance=NOISE), "real")])
def test_inducing_points_at_the_data_give_the_dense_gp(likelihood, target):
    X, labels = _classification()
    y = {"binary": labels, "counts": np.round(2.0 * labels + X[:, 0] ** 2 / 3.0),
         "real": np.sin(X[:, 0]) + 0.3 * labels}[target]
    dense = _fit(gp.GP(KERNEL, X, mean=0.2), likelihood, y)
    sparse = _fit(gp.SparseGP(KERNEL, X, X, mean=0.2, jitter=1e-13), likelihood, y)
    assert dense.converged and sparse.converged
    q_dense, q_sparse = dense.posterior["f"], sparse.posterior["f"]
    np.testing.assert_allclose(q_sparse.mean, q_dense.mean, rtol=0, atol=1e-9)
    np.testing.assert_allclose(q_sparse.var, q_dense.var, rtol=0, atol=1e-9)
    assert abs(sparse.elbo - dense.elbo) < 1e-8 * abs(dense.elbo)
    X_new = np.linspace(-4.0, 4.0, 9)
    for full_cov in (False, True):
        for a, b in zip(q_sparse.predict(X_new, full_cov=full_cov), q_dense.predict(X_new, full_cov=full_cov)):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-7)


def _titsias_bound(kernel, X, Z, y, noise, jitter):
    K_zz = kernel(Z) + jitter * np.mean(np.diag(kernel(Z))) * np.eye(len(Z))
    K_xz = kernel(X, Z)
    Q = K_xz @ np.linalg.solve(K_zz, K_xz.T)
    trace = np.sum(kernel.diag(X)) - np.trace(Q)
    return multivariate_normal(np.zeros(len(y)), Q + noise * np.eye(len(y))).logpdf(y) - 0.5 * trace / noise


def test_gaussian_likelihood_gives_the_collapsed_bound_in_one_step():
    X, labels = _classification(n=60, seed=3)
    y = np.sin(2.0 * X[:, 0]) + 0.3 * labels
    Z = np.linspace(-3.0, 3.0, 7)[:, None]
    fit = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.Gaussian(variance=NOISE), y, step=1.0, max_iter=1,
               warn=False)
    assert abs(fit.elbo - _titsias_bound(KERNEL, X, Z, y, NOISE, 1e-8)) < 1e-9 * abs(fit.elbo)
    sites = fit.sites[0]
    np.testing.assert_allclose(sites.pseudo_obs, y, rtol=1e-12)
    np.testing.assert_allclose(sites.pseudo_noise_var, NOISE, rtol=1e-12)


GH_X, GH_W = np.polynomial.hermite_e.hermegauss(200)
GH_W = GH_W / np.sqrt(2.0 * np.pi)


def _svgp_bound(m_u, S_u, kernel, X, Z, y, jitter, mean):
    """SVGP bound in the unwhitened q(u) = N(m_u, S_u): 200-point Gauss-Hermite and a dense KL (autograd)."""
    K_zz = kernel(Z) + jitter * np.mean(np.diag(kernel(Z))) * np.eye(len(Z))
    A = np.linalg.solve(K_zz, kernel(Z, X)).T                       # K_xz K_zz^{-1}
    mu = mean + anp.dot(A, m_u - mean)
    var = kernel.diag(X) - np.einsum("nm,nm->n", A, kernel(X, Z)) + anp.sum(anp.dot(A, S_u) * A, axis=1)
    f = mu[:, None] + anp.sqrt(var)[:, None] * GH_X[None, :]
    log_lik = y[:, None] * f - anp.logaddexp(0.0, f)
    expected = anp.sum(anp.dot(log_lik, GH_W))
    solved = np.linalg.inv(K_zz)
    diff = m_u - mean
    kl = 0.5 * (anp.trace(anp.dot(solved, S_u)) + anp.dot(diff, anp.dot(solved, diff)) - len(Z)
                + np.linalg.slogdet(K_zz)[1] - anp.linalg.slogdet(S_u)[1])
    return expected - kl


def test_elbo_equals_an_independent_svgp_bound_at_its_optimum():
    X, y = _classification(n=50, seed=1)
    Z = np.linspace(-2.5, 2.5, 6)[:, None]
    # iterated past the default stopping rule, to the fixed point in floating point
    fit = _fit(gp.SparseGP(KERNEL, X, Z, mean=-0.1), likelihoods.BernoulliLogit(), y, tol=0.0, max_iter=30,
               warn=False)
    q_u = fit.posterior["f"].inducing
    m_u, S_u = q_u.mean, q_u.cov
    reference = _svgp_bound(m_u, S_u, KERNEL, X, Z, y, 1e-8, -0.1)
    assert abs(fit.elbo - reference) < 1e-9 * abs(reference)
    # the CVI fixed point is the bound's optimum: its gradient in (m_u, S_u) vanishes
    g_mean = grad(_svgp_bound, 0)(m_u, S_u, KERNEL, X, Z, y, 1e-8, -0.1)
    g_cov = grad(_svgp_bound, 1)(m_u, S_u, KERNEL, X, Z, y, 1e-8, -0.1)
    assert np.abs(g_mean).max() < 1e-8 and np.abs(g_cov).max() < 1e-8
    # and the marginals at the data are those of q(u) through p(f | u)
    K_zz = KERNEL(Z) + 1e-8 * np.mean(np.diag(KERNEL(Z))) * np.eye(len(Z))
    A = np.linalg.solve(K_zz, KERNEL(Z, X)).T
    var = KERNEL.diag(X) - np.einsum("nm,nm->n", A, KERNEL(X, Z)) + np.einsum("nm,mk,nk->n", A, S_u, A)
    np.testing.assert_allclose(fit.posterior["f"].mean, -0.1 + A @ (m_u + 0.1), rtol=0, atol=1e-10)
    np.testing.assert_allclose(fit.posterior["f"].var, var, rtol=0, atol=1e-10)


def test_minibatch_fits_converge_to_the_full_batch_answer():
    X, y = _classification(n=120, seed=2)
    Z = np.linspace(-3.0, 3.0, 8)[:, None]
    # an ELBO within tol of its optimum pins the means only to about sqrt(tol): 1e-14 for 1e-6 here
    full = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y, tol=1e-14)
    sites = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y, batch_size=30, minibatch="sites",
                 max_iter=400, tol=1e-13, warn=False)
    np.testing.assert_allclose(sites.posterior["f"].mean, full.posterior["f"].mean, rtol=0, atol=1e-6)
    svi = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y, batch_size=30,
               step=Decaying(rho0=1.0, delay=4.0, power=0.8), max_iter=2000, tol=0.0, warn=False, seed=0)
    q_svi, q_full = svi.posterior["f"], full.posterior["f"]
    assert np.abs(q_svi.mean - q_full.mean).max() < 0.03
    assert np.abs(q_svi.var - q_full.var).max() < 0.03


def _converged_elbo(theta, Z_shape, X, y, learn_inducing):
    n_kernel = KERNEL.n_params
    kernel = KERNEL.with_log_params(theta[:n_kernel])
    Z = theta[n_kernel:].reshape(Z_shape) if learn_inducing else np.linspace(-2.5, 2.5, 5)[:, None]
    # central differences at step 1e-5 need ELBOs accurate well below 1e-11 nats (tol=1e-12 allows 2e-11)
    return _fit(gp.SparseGP(kernel, X, Z), likelihoods.BernoulliLogit(), y, tol=1e-15, max_iter=500).elbo


@pytest.mark.parametrize("learn_inducing", [False, True], ids=["kernel", "kernel_and_inducing"])
def test_hyperparameter_gradient_matches_finite_differences_of_the_converged_elbo(learn_inducing):
    X, y = _classification(n=30, seed=4)
    Z = np.linspace(-2.5, 2.5, 5)[:, None]
    block = gp.SparseGP(KERNEL, X, Z, learn_hyperparameters=True, learn_inducing=learn_inducing)
    block.name = "f"
    fit = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y, tol=1e-15, max_iter=500)
    analytic = block.elbo_gradient(fit.posterior["f"], [((fit.sites[0].natural_mean, fit.sites[0].precision), None, 1.0)])
    theta = block.hyperparameters()
    step = 1e-5
    numeric = np.array([(_converged_elbo(theta + step * e, Z.shape, X, y, learn_inducing)
                         - _converged_elbo(theta - step * e, Z.shape, X, y, learn_inducing)) / (2 * step)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


def test_learned_hyperparameters_with_inducing_points_at_the_data_match_the_dense_gp():
    X, y = _classification(n=40)
    dense = _fit(gp.GP(KERNEL, X, learn_hyperparameters=True), likelihoods.BernoulliLogit(), y, tol=1e-10)
    sparse = _fit(gp.SparseGP(KERNEL, X, X, jitter=1e-13, learn_hyperparameters=True),
                  likelihoods.BernoulliLogit(), y, tol=1e-10)
    assert dense.converged and sparse.converged
    assert abs(sparse.elbo - dense.elbo) < 1e-7 * abs(dense.elbo)
    for name, value in dense.hyperparameters["f"].items():
        assert sparse.hyperparameters["f"][name] == pytest.approx(value, rel=1e-3)


def test_learned_inducing_inputs_raise_the_elbo_and_are_reported_as_they_are():
    X, y = _classification(n=60, seed=5)
    Z = np.linspace(-1.0, 1.0, 4)[:, None]          # badly placed on purpose
    fixed = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y)
    learned = _fit(gp.SparseGP(KERNEL, X, Z, learn_inducing=True), likelihoods.BernoulliLogit(), y, tol=1e-9)
    assert learned.converged and learned.elbo > fixed.elbo + 0.1
    values = learned.hyperparameters["f"]
    assert set(values) == {f"inducing[{i},0]" for i in range(4)}
    np.testing.assert_array_equal(np.array(list(values.values())), learned.state.hyper.theta["f"])
    # the same model fitted twice gives the same answer (the model's block is never changed)
    model = Model({"f": gp.SparseGP(KERNEL, X, Z, learn_inducing=True)},
                  [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    first, second = model.fit(tol=1e-9), model.fit(tol=1e-9)
    assert first.elbo == second.elbo


def test_a_loaded_fit_predicts_bit_for_bit(tmp_path):
    X, y = _classification(n=30, seed=6)
    fit = _fit(gp.SparseGP(gp.kernels.Matern32(lengthscale=0.7) + gp.kernels.White(variance=0.01), X,
                           np.linspace(-3, 3, 5)), likelihoods.BernoulliLogit(), y)
    fit.save(tmp_path / "sparse.npz")
    loaded = type(fit).load(tmp_path / "sparse.npz")
    X_new = np.linspace(-4.0, 4.0, 11)
    for a, b in zip(loaded.predict_latent(X_new).mean, fit.predict_latent(X_new).mean):
        assert a == b
    np.testing.assert_array_equal(loaded.posterior["f"].var, fit.posterior["f"].var)
    np.testing.assert_array_equal(loaded.predict(X_new, likelihoods.BernoulliLogit()).mean,
                                  fit.predict(X_new, likelihoods.BernoulliLogit()).mean)


def test_bad_input_is_named():
    X, y = _classification(n=20)
    with pytest.raises(ValueError, match="inducing must have 1 feature"):
        gp.SparseGP(KERNEL, X, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="inducing"):
        gp.SparseGP(KERNEL, X, np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="inducing must hold at least one"):
        gp.SparseGP(KERNEL, X, np.zeros((0, 1)))
    with pytest.raises(ValueError, match="jitter"):
        gp.SparseGP(KERNEL, X, X[:3], jitter=-1.0)
    with pytest.raises(ValueError, match="kernel must be"):
        gp.SparseGP("rbf", X, X[:3])
    with pytest.raises(InvalidPosterior, match="duplicate or very close inducing"):
        gp.SparseGP(KERNEL, X, np.zeros((3, 1)), jitter=0.0)
    with pytest.raises(ValueError, match="y has 19 entries but block 'f' has 20 points"):
        Model({"f": gp.SparseGP(KERNEL, X, X[:3])}, [Observe(likelihoods.BernoulliLogit(), y[:19], on="f")])


def test_features_rebuilt_on_use_give_the_same_fit(monkeypatch):
    from efvi.models.gp import sparse

    monkeypatch.setattr(sparse, "STREAM_ROWS", 17)       # several blocks, a short last one
    X, y = _classification(n=60, seed=7)
    Z = np.linspace(-2.5, 2.5, 5)[:, None]
    kept = _fit(gp.SparseGP(KERNEL, X, Z, mean=0.3), likelihoods.BernoulliLogit(), y)
    rebuilt = _fit(gp.SparseGP(KERNEL, X, Z, mean=0.3, max_feature_bytes=0), likelihoods.BernoulliLogit(), y)
    assert rebuilt.n_iter == kept.n_iter
    np.testing.assert_allclose(rebuilt.posterior["f"].mean, kept.posterior["f"].mean, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rebuilt.posterior["f"].var, kept.posterior["f"].var, rtol=0, atol=1e-12)
    options = dict(batch_size=25, minibatch="sites", max_iter=60, tol=0.0, warn=False, seed=1)
    kept = _fit(gp.SparseGP(KERNEL, X, Z), likelihoods.BernoulliLogit(), y, **options)
    rebuilt = _fit(gp.SparseGP(KERNEL, X, Z, max_feature_bytes=0), likelihoods.BernoulliLogit(), y, **options)
    np.testing.assert_allclose(rebuilt.posterior["f"].mean, kept.posterior["f"].mean, rtol=0, atol=1e-10)


def test_predictions_through_the_fit_intervals_and_joint_samples():
    X, y = _classification(n=60, seed=8)
    fit = _fit(gp.SparseGP(KERNEL, X, np.linspace(-3, 3, 6)), likelihoods.BernoulliLogit(), y)
    X_new = np.linspace(-3.5, 3.5, 4)
    latent = fit.predict_latent(X_new)
    mean, cov = fit.posterior["f"].predict(X_new, full_cov=True)
    np.testing.assert_array_equal(latent.mean, mean)
    np.testing.assert_allclose(latent.var, np.diag(cov), rtol=1e-12)
    lower, upper = latent.interval(0.9)
    np.testing.assert_allclose(upper - mean, 1.6448536269514722 * np.sqrt(np.diag(cov)), rtol=1e-10)
    draws = latent.sample(40000, seed=0)
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=5 * np.sqrt(2.0 / 40000) * np.diag(cov).max())
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=5 * np.sqrt(np.diag(cov).max() / 40000))


def test_features_match_dense_nystrom():
    """``Phi Phi^T`` is the Nystrom matrix ``K_xz K_zz^{-1} K_zx`` and ``d`` its diagonal's complement, over
    several blocks of rows (dense numpy solve as the reference)."""
    from efvi.models.gp._sparse_features import FEATURE_ROWS, features, inducing_cholesky
    rng = np.random.default_rng(3)
    X = rng.uniform(-3.0, 3.0, size=(2 * FEATURE_ROWS + 37, 2))
    Z = rng.uniform(-3.0, 3.0, size=(23, 2))
    kernel = gp.kernels.Matern32(lengthscale=0.7, variance=1.3)
    chol = inducing_cholesky(kernel, Z, 1e-8)
    phi, d = features(kernel, X, Z, chol)
    Kzz = chol @ chol.T
    Kxz = kernel(X, Z)
    nystrom = Kxz @ np.linalg.solve(Kzz, Kxz.T)
    np.testing.assert_allclose(phi @ phi.T, nystrom, rtol=0, atol=1e-11)
    np.testing.assert_allclose(phi, np.linalg.solve(chol, Kxz.T).T, rtol=0, atol=1e-11)
    np.testing.assert_allclose(d, np.maximum(kernel.diag(X) - np.diag(nystrom), 0.0), rtol=0, atol=1e-11)


def test_kernel_and_inducing_values_are_reported_by_their_scale_after_a_save(tmp_path):
    """Kernel hyperparameters are learned as logs and reported as exp(theta); inducing inputs as they are.
    The block says which is which (``hyperparameter_log_scale``), and a fit file keeps it."""
    import json

    from efvi.inference import FitFileError, FitResult

    X, y = _classification(n=40, seed=7)
    Z = np.linspace(-2.0, 2.0, 3)[:, None]
    block = gp.SparseGP(gp.kernels.RBF(lengthscale=0.9, variance=1.2), X, Z, learn_hyperparameters=True,
                        learn_inducing=True, hyper_max_iter=5)
    np.testing.assert_array_equal(block.hyperparameter_log_scale(), [True, True, False, False, False])
    fit = _fit(block, likelihoods.BernoulliLogit(), y, tol=1e-6, warn=False)
    theta = fit.state.hyper.theta["f"]
    names = fit.hyperparameter_names["f"]
    expected = {name: (float(np.exp(t)) if i < 2 else float(t)) for i, (name, t) in enumerate(zip(names, theta))}
    assert fit.hyperparameters["f"] == expected
    path = tmp_path / "fit.npz"
    fit.save(path)
    assert FitResult.load(path).hyperparameters == fit.hyperparameters
    with np.load(path, allow_pickle=False) as data:
        entries = {key: data[key] for key in data.files}
    meta = json.loads(str(entries["__meta__"]))
    # flags that do not match the names are refused, by name
    bad = dict(meta, hyper=dict(meta["hyper"], log_scale={"f": [True, False]}))
    np.savez(tmp_path / "bad.npz", **dict(entries, __meta__=np.array(json.dumps(bad))))
    with pytest.raises(FitFileError, match="log_scale"):
        FitResult.load(tmp_path / "bad.npz")
