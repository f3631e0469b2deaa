"""A fit whose BLAS calls are all small runs BLAS on one thread; a large one keeps BLAS's threads."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from efvi import Gaussian, Model, Observe, glm, gp, likelihoods
from efvi.inference.blas_threads import SMALL_BLAS_FLOPS
from efvi.models.gp.kernels import RBF


def _blas_threads():
    return sorted({info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"})


def _threads_inside(model):
    seen = []

    def callback(info):
        seen.append(_blas_threads())

    model.fit(callback=callback, max_iter=3, warn=False)
    return seen


def _glm(n, d):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(float)
    return Model({"w": Gaussian.from_mean_cov(np.zeros(d), np.eye(d))},
                 [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


@pytest.fixture
def two_blas_threads():
    if not threadpool_info():
        pytest.skip("no BLAS library that threadpoolctl can control")
    with threadpool_limits(limits=2, user_api="blas"):
        if _blas_threads() != [2]:
            pytest.skip("this BLAS cannot run two threads")
        yield


def test_a_small_fit_runs_blas_on_one_thread_and_restores_it(two_blas_threads):
    model = _glm(200, 3)
    assert max(f.blas_flops() for f in model.factors) < SMALL_BLAS_FLOPS
    assert _threads_inside(model) == [[1]] * 3
    assert _blas_threads() == [2]


def test_a_small_gp_runs_blas_on_one_thread(two_blas_threads):
    X = np.linspace(0, 5, 60)[:, None]
    model = Model({"f": gp.GP(RBF(), X)}, [Observe(likelihoods.Gaussian(variance=0.1), np.sin(X[:, 0]), on="f")])
    seen = _threads_inside(model)                      # conjugate: one iteration
    assert seen and all(threads == [1] for threads in seen)


def test_a_large_fit_keeps_blas_threads(two_blas_threads):
    # N D^2 = 40000 * 30^2 = 3.6e7 operations for the weights' precision: threads pay off
    model = _glm(40000, 30)
    assert model.factors[0].blas_flops() == 40000 * 30 ** 2 >= SMALL_BLAS_FLOPS
    assert _threads_inside(model) == [[2]] * 3


def test_structured_blocks_report_their_largest_call():
    X = np.linspace(0, 1, 50)[:, None]
    assert gp.GP(RBF(), X).blas_flops() == 50.0 ** 3
    assert gp.SparseGP(RBF(), X, X[:10]).blas_flops() == 50 * 10.0 ** 2 + 10.0 ** 3
