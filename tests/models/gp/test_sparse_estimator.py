"""GPClassifier and GPRegressor with inducing inputs (a sparse GP) against the dense estimators and Titsias's bound.

References: the dense estimators (inducing inputs at every training input give
the same posterior; fewer approach it); Titsias's (2009) collapsed bound
written out in numpy for an RBF kernel (not with efvi's kernels), maximised
over the kernel's hyperparameters and the noise by scipy's L-BFGS with its
autograd gradient, for the regressor that learns the noise; central finite
differences of that bound for the gradient the regressor climbs.
"""

import time

import autograd.numpy as anp
import numpy as np
import pytest
from autograd import grad
from scipy.optimize import minimize
from scipy.special import expit

from efvi.inference import ConvergenceWarning
from efvi.models import gp
from efvi.models.gp import _sparse_regression
from efvi.models.gp.estimator import choose_inducing

JITTER = 1e-8           # the sparse GP's default, relative to the mean prior variance at the inducing inputs


def _classification(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    return X, (rng.uniform(size=n) < expit(2.0 * (np.sin(1.5 * X[:, 0]) + X[:, 1]))).astype(float)


def _regression(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 6.0, size=(n, 1))
    return X, np.sin(X[:, 0]) + 0.3 * rng.normal(size=n)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_inducing_inputs_at_every_training_input_give_the_dense_classifier(link):
    X, y = _classification(40)
    X_new = np.random.default_rng(1).uniform(-3.0, 3.0, size=(15, 2))
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    dense = gp.GPClassifier(kernel, link=link, learn_hyperparameters=False).fit(X, y)
    for sparse in (gp.GPClassifier(kernel, link=link, learn_hyperparameters=False, n_inducing=40),
                   gp.GPClassifier(kernel, link=link, learn_hyperparameters=False, n_inducing=1000),
                   gp.GPClassifier(kernel, link=link, learn_hyperparameters=False, inducing=X)):
        sparse.fit(X, y)
        assert isinstance(sparse.posterior_, gp.SparseGPPosterior)
        np.testing.assert_array_equal(sparse.inducing_, X)
        np.testing.assert_allclose(sparse.predict_proba(X_new), dense.predict_proba(X_new), rtol=0, atol=1e-8)
        np.testing.assert_array_equal(sparse.predict(X), dense.predict(X))
        assert sparse.score(X, y) == dense.score(X, y)
        assert sparse.elbo_ == pytest.approx(dense.elbo_, rel=1e-8)
    assert not hasattr(dense, "inducing_")


def test_inducing_inputs_at_every_training_input_give_the_dense_regressor():
    X, y = _regression(30)
    X_new = np.linspace(-1.0, 7.0, 9)[:, None]
    kernel = gp.kernels.Matern52(lengthscale=0.8, variance=1.5)
    fixed = dict(noise_variance=0.09, learn_hyperparameters=False)
    dense, sparse = gp.GPRegressor(kernel, **fixed).fit(X, y), gp.GPRegressor(kernel, n_inducing=30, **fixed).fit(X, y)
    # the sparse GP adds a jitter of 1e-8 (relative) to K_zz; with cond(K) = 2e8 here and sites of precision
    # 1 / 0.09 that moves the predictive mean by 8e-7, in proportion to the jitter (the block's own tests take
    # it to 1e-13 for 1e-9)
    for a, b in zip(sparse.predict(X_new, return_std=True), dense.predict(X_new, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6)
    assert sparse.score(X, y) == pytest.approx(dense.score(X, y), abs=1e-7)
    # learned noise: the dense GP's White term and the sparse GP's likelihood variance reach the same optimum
    dense, sparse = gp.GPRegressor(kernel).fit(X, y), gp.GPRegressor(kernel, n_inducing=30).fit(X, y)
    assert dense.converged_ and sparse.converged_
    assert sparse.noise_variance_ == pytest.approx(dense.noise_variance_, rel=1e-5)
    np.testing.assert_allclose(sparse.kernel_.log_params, dense.kernel_.log_params, rtol=0, atol=1e-5)
    assert sparse.elbo_ == pytest.approx(dense.elbo_, rel=1e-6)
    for a, b in zip(sparse.predict(X_new, return_std=True), dense.predict(X_new, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def _rbf(A, B, lengthscale, variance):
    sq = anp.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=2)
    return variance * anp.exp(-0.5 * sq / lengthscale ** 2)


def _titsias_bound(log_params, X, y, Z):
    """log N(y; 0, Q + s2 I) - tr(K - Q) / (2 s2) for an RBF kernel, Q = K_xz K_zz^-1 K_zx (autograd numpy)."""
    lengthscale, variance, noise = anp.exp(log_params[0]), anp.exp(log_params[1]), anp.exp(log_params[2])
    n, m = X.shape[0], Z.shape[0]
    K_zz = _rbf(Z, Z, lengthscale, variance) + JITTER * variance * anp.eye(m)
    K_xz = _rbf(X, Z, lengthscale, variance)
    L = anp.linalg.cholesky(K_zz)
    A = anp.linalg.solve(L, anp.transpose(K_xz))                       # (M, N): Q = A^T A
    # Woodbury: (Q + s2 I)^-1 and its determinant through B = I + A A^T / s2
    B = anp.eye(m) + anp.dot(A, anp.transpose(A)) / noise
    L_B = anp.linalg.cholesky(B)
    c = anp.linalg.solve(L_B, anp.dot(A, y)) / noise
    quad = anp.dot(y, y) / noise - anp.dot(c, c)
    log_det = n * anp.log(noise) + 2.0 * anp.sum(anp.log(anp.diag(L_B)))
    trace = n * variance - anp.sum(A * A)
    return -0.5 * (n * anp.log(2.0 * np.pi) + log_det + quad) - 0.5 * trace / noise


def test_the_regressor_with_inducing_inputs_learns_the_noise_at_the_maximum_of_titsias_bound():
    X, y = _regression(100, seed=2)
    Z = np.linspace(0.0, 6.0, 8)[:, None]
    model = gp.GPRegressor(gp.kernels.RBF(lengthscale=1.0, variance=1.0), noise_variance=1.0, inducing=Z).fit(X, y)
    assert model.converged_ and model.n_iter_ == len(model.lower_bounds_) > 3
    objective = lambda theta: -_titsias_bound(theta, X, y, Z)                        # noqa: E731
    reference = minimize(objective, np.zeros(3), jac=grad(objective), method="L-BFGS-B",
                         options={"ftol": 1e-15, "gtol": 1e-10, "maxiter": 500})
    learned = np.append(model.kernel_.log_params, np.log(model.noise_variance_))
    np.testing.assert_allclose(learned, reference.x, rtol=0, atol=1e-4)
    assert model.elbo_ == pytest.approx(-reference.fun, rel=1e-10)
    assert model.elbo_ == pytest.approx(_titsias_bound(learned, X, y, Z), rel=1e-11)
    assert model.lower_bounds_[-1] == model.elbo_ == model.fit_result_.elbo
    assert model.noise_variance_ == pytest.approx(0.09, rel=0.3)


def test_a_spent_budget_keeps_the_best_bound_and_says_so(capsys):
    X, y = _regression(60, seed=2)
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=4 evaluations of the collapsed bound"):
        model = gp.GPRegressor(gp.kernels.RBF(), n_inducing=6, max_iter=4, progress=True).fit(X, y)
    assert not model.converged_ and model.n_iter_ in (4, 5)
    bar = capsys.readouterr().err.rstrip("\n").split("\r")[-1]      # the bar stays, saying why it stopped
    assert bar.startswith("efvi sparse GP regression, stopped at max_iter=4, not converged: 100%") and " 4/4 " in bar
    assert model.elbo_ == max(model.lower_bounds_) == model.fit_result_.elbo
    assert model.elbo_ > model.lower_bounds_[0]


@pytest.mark.parametrize("learn_inducing", [False, True], ids=["kernel_and_noise", "with_inducing"])
def test_the_collapsed_bound_and_its_gradient_equal_titsias_bound_and_its_finite_differences(learn_inducing):
    X, y = _regression(40, seed=3)
    Z = np.linspace(0.5, 5.5, 5)[:, None]
    floor = 1e-4
    bound = _sparse_regression.CollapsedBound(gp.kernels.RBF(lengthscale=0.7, variance=1.3), X, y, Z,
                                              learn_inducing, floor, {"max_iter": 50, "tol": 1e-12})
    theta = bound.start(0.2)
    value, gradient = bound(theta)

    def reference(theta):
        Z_theta = theta[2:-1].reshape(Z.shape) if learn_inducing else Z
        log_params = np.append(theta[:2], np.log(floor + np.exp(theta[-1])))
        return _titsias_bound(log_params, X, y, Z_theta)

    assert -value == pytest.approx(reference(theta), rel=1e-11)
    steps = 1e-5 * np.eye(theta.size)
    central = np.array([(reference(theta + h) - reference(theta - h)) / 2e-5 for h in steps])
    np.testing.assert_allclose(-gradient, central, rtol=1e-6, atol=1e-6)


def test_fewer_inducing_inputs_than_points_come_close_to_the_dense_predictions():
    X, y = _classification(2000, seed=4)
    X_new = np.random.default_rng(5).uniform(-2.0, 2.0, size=(200, 2))
    kernel = gp.kernels.RBF(lengthscale=1.0, variance=2.0)
    started = time.perf_counter()
    dense = gp.GPClassifier(kernel, learn_hyperparameters=False).fit(X, y)
    dense_seconds = time.perf_counter() - started
    started = time.perf_counter()
    sparse = gp.GPClassifier(kernel, learn_hyperparameters=False, n_inducing=100).fit(X, y)
    sparse_seconds = time.perf_counter() - started
    print(f"N = 2000 classification: dense {dense_seconds:.2f} s, M = 100 sparse {sparse_seconds:.2f} s")
    assert sparse.inducing_.shape == (100, 2)
    np.testing.assert_allclose(sparse.predict_proba(X_new), dense.predict_proba(X_new), rtol=0, atol=1e-4)
    # the sparse ELBO is a lower bound on the dense one, and close to it
    assert dense.elbo_ - 1e-2 < sparse.elbo_ <= dense.elbo_ + 1e-8
    X, y = _regression(2000, seed=6)
    X_new = np.linspace(0.0, 6.0, 50)[:, None]
    fixed = dict(noise_variance=0.09, learn_hyperparameters=False)
    dense = gp.GPRegressor(kernel, **fixed).fit(X, y)
    sparse = gp.GPRegressor(kernel, n_inducing=20, **fixed).fit(X, y)
    for a, b in zip(sparse.predict(X_new, return_std=True), dense.predict(X_new, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-4)


@pytest.mark.filterwarnings("ignore::efvi.inference.ConvergenceWarning")       # an optimum met to 1e-11 relative
def test_learned_inducing_inputs_raise_the_elbo():
    X, y = _classification(150, seed=7)
    kernel = gp.kernels.RBF(lengthscale=1.0, variance=2.0)
    fixed = gp.GPClassifier(kernel, learn_hyperparameters=False, n_inducing=6).fit(X, y)
    learned = gp.GPClassifier(kernel, learn_hyperparameters=False, n_inducing=6, learn_inducing=True,
                              max_iter=400).fit(X, y)
    assert learned.elbo_ > fixed.elbo_ + 1.0
    assert learned.inducing_.shape == (6, 2) and not np.allclose(learned.inducing_, fixed.inducing_)
    assert repr(learned.kernel_) == repr(kernel)
    X, y = _regression(150, seed=8)
    start = np.linspace(0.0, 1.0, 4)[:, None]
    fixed = gp.GPRegressor(kernel, inducing=start).fit(X, y)
    learned = gp.GPRegressor(kernel, inducing=start, learn_inducing=True, max_iter=400).fit(X, y)
    assert learned.elbo_ > fixed.elbo_ + 1.0 and np.ptp(learned.inducing_) > 2.0


def test_k_means_inducing_inputs_are_deterministic_and_distinct():
    X = np.random.default_rng(9).normal(size=(3000, 2))
    Z = choose_inducing(X, 40)
    assert Z.shape == (40, 2) and Z.flags.c_contiguous
    np.testing.assert_array_equal(Z, choose_inducing(X.copy(), 40))
    assert len(np.unique(Z, axis=0)) == 40
    # the centres cover the inputs better than any of five random subsets of them (k-means' objective)
    def spread(Z):
        return np.mean(np.min(np.sum((X[:, None, :] - Z[None]) ** 2, axis=2), axis=1))

    rng = np.random.default_rng(10)
    assert spread(Z) < min(spread(X[rng.choice(len(X), 40, replace=False)]) for _ in range(5))
    # more distinct rows than k-means is given (KMEANS_POINTS_PER_CENTRE per centre): a seeded subset of them
    assert choose_inducing(X, 20).shape == (20, 2)
    np.testing.assert_array_equal(choose_inducing(X, 20), choose_inducing(X, 20))
    # fewer distinct inputs than asked for: those inputs, in their order in X
    repeated = np.repeat([[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]], 5, axis=0)
    np.testing.assert_array_equal(choose_inducing(repeated, 3), [[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
    np.testing.assert_array_equal(choose_inducing(repeated, 7), [[2.0, 0.0], [1.0, 1.0], [0.0, 3.0]])
    # duplicated rows weigh as often as they occur, and never give two equal centres
    Z = choose_inducing(np.vstack([repeated, X[:2]]), 4)
    assert len(np.unique(Z, axis=0)) == 4


@pytest.mark.filterwarnings("ignore::efvi.inference.ConvergenceWarning")       # small budgets keep this quick
@pytest.mark.parametrize("estimator, targets", [
    (gp.GPClassifier(n_inducing=8, learn_inducing=True, max_iter=60), "labels"),
    (gp.GPRegressor(n_inducing=8, max_iter=60), "values"),
    (gp.GPRegressor(inducing=np.linspace(-2.0, 2.0, 10).reshape(5, 2), noise_variance=0.1, learn_noise=False,
                    max_iter=60), "values"),
], ids=["classifier", "regressor_learned_noise", "regressor_given_inducing"])
def test_a_saved_sparse_estimator_loads_and_predicts_bit_for_bit(estimator, targets, tmp_path):
    X, labels = _classification(50, seed=10)
    y = np.where(labels == 1, "yes", "no") if targets == "labels" else np.sin(X[:, 0]) + 0.2 * X[:, 1]
    estimator.fit(X, y)
    estimator.save(tmp_path / "sparse.npz")
    loaded = type(estimator).load(tmp_path / "sparse.npz")
    assert isinstance(loaded.posterior_, gp.SparseGPPosterior)
    np.testing.assert_array_equal(loaded.inducing_, estimator.inducing_)
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    if targets == "labels":
        np.testing.assert_array_equal(loaded.predict_proba(X), estimator.predict_proba(X))
    else:
        for a, b in zip(loaded.predict(X, return_std=True), estimator.predict(X, return_std=True)):
            np.testing.assert_array_equal(a, b)
    assert loaded.score(X, y) == estimator.score(X, y)
    assert loaded.get_params().keys() == estimator.get_params().keys()
    assert (loaded.n_inducing, loaded.learn_inducing) == (estimator.n_inducing, estimator.learn_inducing)


def test_bad_inducing_arguments_are_named():
    X, y = _classification(30)
    kernel = gp.kernels.RBF()
    cases = [
        (dict(n_inducing=0), r"n_inducing must be an integer >= 1 or None; got 0"),
        (dict(n_inducing=2.5), r"n_inducing must be an integer >= 1 or None; got 2.5"),
        (dict(n_inducing=True), r"n_inducing must be an integer >= 1 or None; got True"),
        (dict(inducing=np.zeros((4, 3))), r"inducing must have 2 feature column\(s\); got shape \(4, 3\)"),
        (dict(inducing=np.zeros((0, 2))), r"inducing must hold at least one inducing input; got shape \(0, 2\)"),
        (dict(inducing=np.array([[0.0, 1.0], [np.nan, 0.0]])), r"inducing must be finite \(no NaN or inf\); "
                                                                r"got a non-finite value at index \(1, 0\)"),
        (dict(inducing="corners"), r"inducing must be a numeric array; got 'corners'"),
        (dict(n_inducing=5, inducing=X[:5]), r"give n_inducing or inducing, not both; got n_inducing=5 and "
                                             r"inducing of shape \(5, 2\)"),
        (dict(learn_inducing=True), r"learn_inducing=True needs inducing inputs: set n_inducing"),
    ]
    for estimator in (gp.GPClassifier, gp.GPRegressor):
        for arguments, message in cases:
            with pytest.raises(ValueError, match=message):
                estimator(kernel, learn_hyperparameters=False, **arguments).fit(X, y)
    with pytest.raises(ValueError, match="inducing must have 2 feature column"):
        gp.GPRegressor(kernel, inducing=np.zeros((4, 3))).fit(X, y)            # the learned-noise route
    fitted = gp.GPClassifier(kernel, learn_hyperparameters=False, n_inducing=5).fit(X, y)
    with pytest.raises(ValueError, match=r"X has 3 features, but GPClassifier is expecting 2 features"):
        fitted.predict_proba(np.zeros((4, 3)))
