"""Sparse-GP hyperparameters learned from minibatches (Adam on the ELBO at fixed q(u), beside stochastic CVI).

References: an independent numpy evaluation of the SVGP bound in the
unwhitened ``q(u) = N(m_u, S_u)`` (differentiated by central finite
differences in the hyperparameters, ``q(u)`` held); the exact identity that
the ``N / B``-weighted minibatch estimates of one partition of the points
average to the full gradient; the full-batch L-BFGS optimum of the same model.
"""

import numpy as np
import pytest

from efvi.inference import FitResult, Model
from efvi.models import Observe, gp, likelihoods

from .test_sparse import KERNEL, _classification, _svgp_bound


def _unconverged(X, y, Z, mean, **block_options):
    """A learning block and a posterior three CVI steps from the prior (its targets are not its sites)."""
    block = gp.SparseGP(KERNEL, X, Z, mean=mean, learn_hyperparameters=True, **block_options)
    block.name = "f"
    fit = Model({"f": gp.SparseGP(KERNEL, X, Z, mean=mean)},
                [Observe(likelihoods.BernoulliLogit(), y, on="f")]).fit(max_iter=3, warn=False)
    factor = Observe(likelihoods.BernoulliLogit(), y, on="f")
    factor.bind({"f": block})
    return block, factor, fit.posterior["f"]


@pytest.mark.parametrize("learn_inducing", [False, True], ids=["kernel", "kernel+inducing"])
def test_the_gradient_is_that_of_an_independent_svgp_bound_at_fixed_q_u(learn_inducing):
    X, y = _classification(n=60, seed=7)
    Z = np.linspace(-2.5, 2.5, 5)[:, None]
    block, factor, q = _unconverged(X, y, Z, -0.2, learn_inducing=learn_inducing)
    m_u, S_u = q.inducing.mean, q.inducing.cov
    targets = factor.evaluate({"f": q}).targets["f"]
    analytic = block.elbo_gradient(q, [(targets, None, 1.0)])
    theta = block.hyperparameters()

    def bound(values):
        moved = block.with_hyperparameters(values)
        return _svgp_bound(m_u, S_u, moved.kernel, X, moved.Z, y, block.jitter, -0.2)

    step = 1e-5
    numeric = np.array([(bound(theta + step * e) - bound(theta - step * e)) / (2 * step)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


def test_minibatch_estimates_of_one_partition_average_to_the_full_gradient():
    X, y = _classification(n=60, seed=8)
    block, factor, q = _unconverged(X, y, np.linspace(-2.5, 2.5, 5)[:, None], 0.0, learn_inducing=True)
    full = block.elbo_gradient(q, [(factor.evaluate({"f": q}).targets["f"], None, 1.0)])
    batches = np.array_split(np.random.default_rng(0).permutation(60), 4)        # 15 points each
    estimates = [block.elbo_gradient(q, [(factor.evaluate({"f": q}, index=np.sort(b)).targets["f"], np.sort(b), 4.0)])
                 for b in batches]
    np.testing.assert_allclose(np.mean(estimates, axis=0), full, rtol=1e-12, atol=1e-12)
    assert np.ptp(np.array(estimates), axis=0).max() > 1e-3 * np.abs(full).max()    # each is only an estimate


def test_the_gradient_is_the_same_in_blocks_of_rows(monkeypatch):
    from efvi.models.gp import _sparse_gradient

    X, y = _classification(n=60, seed=10)
    block, factor, q = _unconverged(X, y, np.linspace(-2.5, 2.5, 5)[:, None], 0.1, learn_inducing=True)
    observations = [(factor.evaluate({"f": q}).targets["f"], None, 1.0)]
    whole = block.elbo_gradient(q, observations)
    monkeypatch.setattr(_sparse_gradient, "ROWS", 7)           # 9 blocks, the last of 4 rows
    np.testing.assert_allclose(block.elbo_gradient(q, observations), whole, rtol=1e-12, atol=1e-12)


def test_carried_messages_keep_q_u_where_it_was():
    X, y = _classification(n=60, seed=9)
    block, _, q = _unconverged(X, y, np.linspace(-2.5, 2.5, 5)[:, None], 0.3, learn_inducing=True)
    theta = block.hyperparameters()
    moved = block.with_hyperparameters(theta + np.random.default_rng(1).normal(0.0, 0.1, theta.size))
    half = 0.5 * q.message[1]
    carried = moved.carry_messages(block, [(q.message[0], half), (np.zeros(5), half)])
    total = (carried[0][0] + carried[1][0], carried[0][1] + carried[1][1])
    q_moved = moved.posterior(total)
    np.testing.assert_allclose(q_moved.inducing.mean, q.inducing.mean, rtol=0, atol=1e-10)
    np.testing.assert_allclose(q_moved.inducing.cov, q.inducing.cov, rtol=0, atol=1e-10)


def _regression(n=1000, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, 1))
    return X, np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=n)


def _regression_model(X, y, lengthscale=0.3, variance=0.5, learn=True, **options):
    kernel = gp.kernels.RBF(lengthscale=lengthscale, variance=variance)
    block = gp.SparseGP(kernel, X, np.linspace(-3.0, 3.0, 10)[:, None], learn_hyperparameters=learn, **options)
    return Model({"f": block}, [Observe(likelihoods.Gaussian(variance=0.09), y, on="f")])


def test_minibatch_learning_approaches_the_full_batch_optimum():
    X, y = _regression()
    optimum = _regression_model(X, y).fit()
    assert optimum.converged

    def gap(lengthscale, variance):     # how far the full-batch ELBO at these values is from the optimum
        return optimum.elbo - _regression_model(X, y, lengthscale, variance, learn=False).fit().elbo

    assert gap(0.3, 0.5) > 600.0
    # 50 epochs of minibatches of 100: stochastic CVI steps and Adam steps (learning rate 0.05)
    learned = _regression_model(X, y, learning_rate=0.05).fit(batch_size=100, max_iter=500, warn=False)
    values = learned.hyperparameters["f"]
    assert gap(values["lengthscale"], values["variance"]) < 1.0
    assert values["lengthscale"] == pytest.approx(optimum.hyperparameters["f"]["lengthscale"], rel=0.15)
    assert np.all(np.isfinite(learned.posterior["f"].mean)) and learned.state.hyper.adam_steps == 500


def test_a_resumed_minibatch_learning_fit_takes_the_uninterrupted_path(tmp_path):
    X, y = _regression(n=400, seed=4)
    model = _regression_model(X, y, learning_rate=0.05, learn_inducing=True)
    options = {"batch_size": 50, "warn": False}
    whole = model.fit(max_iter=30, **options)
    first = model.fit(max_iter=12, **options)
    first.save(tmp_path / "fit.npz")
    for init in (first, FitResult.load(tmp_path / "fit.npz")):
        resumed = model.fit(init=init, max_iter=18, **options)
        np.testing.assert_array_equal(resumed.elbo_trace, whole.elbo_trace)
        np.testing.assert_array_equal(resumed.state.hyper.theta["f"], whole.state.hyper.theta["f"])
        for a, b in zip(resumed.state.hyper.moments["f"], whole.state.hyper.moments["f"]):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(resumed.posterior["f"].mean, whole.posterior["f"].mean)


def test_blocks_that_learn_only_in_full_batch_and_sites_minibatches_are_named():
    X, y = _classification(n=60)
    dense = Model({"f": gp.GP(KERNEL, X, learn_hyperparameters=True)}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    with pytest.raises(ValueError, match=r"block 'f' \(GP\) learns its hyperparameters in full batch only"):
        dense.fit(batch_size=20)
    sparse = Model({"f": gp.SparseGP(KERNEL, X, X[::6], learn_hyperparameters=True)},
                   [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    with pytest.raises(ValueError, match=r"needs minibatch='svi'.*got minibatch='sites'"):
        sparse.fit(batch_size=20, minibatch="sites")


@pytest.mark.parametrize("rate", [0.0, -0.1, np.inf, np.nan, "fast"])
def test_an_invalid_learning_rate_is_named(rate):
    X, _ = _classification(n=20)
    with pytest.raises(ValueError, match="learning_rate"):
        gp.SparseGP(KERNEL, X, X[::4], learning_rate=rate)


def test_a_full_batch_fit_resumed_from_minibatch_learning_starts_there_and_reaches_the_optimum():
    X, y = _regression(n=600, seed=5)
    model = _regression_model(X, y, learning_rate=0.05)
    rough = model.fit(batch_size=100, max_iter=60, warn=False)
    polished = model.fit(init=rough)
    fresh = model.fit()
    assert polished.converged and fresh.converged
    np.testing.assert_array_equal(polished.state.hyper.evaluations[0][0], rough.state.hyper.theta["f"])
    assert polished.elbo == pytest.approx(fresh.elbo, abs=1e-6 * abs(fresh.elbo))
    for name, value in fresh.hyperparameters["f"].items():
        assert polished.hyperparameters["f"][name] == pytest.approx(value, rel=1e-3)


def test_a_non_finite_minibatch_gradient_is_named_and_an_invalid_step_is_halved_or_skipped(monkeypatch):
    X, y = _regression(n=300, seed=6)
    model = _regression_model(X, y, learning_rate=0.05)
    original = gp.SparseGP.elbo_gradient
    monkeypatch.setattr(gp.SparseGP, "elbo_gradient", lambda self, q, obs: np.full(2, np.nan))
    with pytest.raises(RuntimeError, match=r"block 'f': the minibatch estimate of the ELBO's gradient .* not finite"):
        model.fit(batch_size=50, max_iter=3, warn=False)
    monkeypatch.setattr(gp.SparseGP, "elbo_gradient", original)
    # a block that cannot be built at any step along the proposal: the step is skipped and counted, never taken
    plain = model.fit(batch_size=50, max_iter=3, warn=False)
    monkeypatch.setattr(gp.SparseGP, "with_hyperparameters",
                        lambda self, theta: (_ for _ in ()).throw(ValueError("K_zz is not positive definite")))
    stuck = model.fit(batch_size=50, max_iter=3, warn=False)
    assert stuck.n_backoffs == 3 and stuck.state.hyper.adam_steps == 3
    np.testing.assert_array_equal(stuck.state.hyper.theta["f"], model.blocks["f"].hyperparameters())
    assert not np.array_equal(plain.state.hyper.theta["f"], stuck.state.hyper.theta["f"])
