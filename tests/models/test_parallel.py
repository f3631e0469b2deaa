"""Per-point kernels on several threads give what one call gives, bit for bit."""

import numpy as np
import pytest

from efvi.models import _parallel, likelihoods
from efvi.models.likelihoods import _kernels
from efvi.models.likelihoods._quadrature import PRICE_BELOW, ladder


@pytest.mark.parametrize("n", [0, 1, _parallel.MIN_POINTS_PER_THREAD * 2 - 1, 5 * _parallel.MIN_POINTS_PER_THREAD + 3])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_blocks_cover_the_range_in_order(n, threads):
    blocks = _parallel.row_blocks(n, threads)
    assert blocks[0].start == 0 and blocks[-1].stop == n
    assert all(a.stop == b.start for a, b in zip(blocks[:-1], blocks[1:]))
    assert len(blocks) == max(1, min(threads, n // _parallel.MIN_POINTS_PER_THREAD))
    if len(blocks) > 1:
        assert min(b.stop - b.start for b in blocks) >= _parallel.MIN_POINTS_PER_THREAD


def test_quadrature_on_threads_equals_one_call(monkeypatch):
    """Large N takes the threaded route; the result equals the single-call kernel exactly."""
    monkeypatch.setattr(_parallel, "NUM_THREADS", 2)
    rng = np.random.default_rng(0)
    n = 3 * _parallel.MIN_POINTS_PER_THREAD + 7
    mean, var = rng.normal(size=n) * 3, rng.uniform(0, 2, size=n) ** 2
    y = rng.integers(0, 6, size=n).astype(float)
    y[::97] = np.nan
    trials = np.full(n, 6.0)
    lik = likelihoods.BinomialLogit(trials)         # a per-point parameter: sliced with the points
    assert len(_parallel.row_blocks(n)) == 2
    threaded = lik._variational_expectations(mean, var, y)
    nodes, weights, counts, edges = ladder(lik.strip_half_width, lik.n_points)
    direct = _kernels._gh_expectations(lik._log_lik, lik._log_base, mean, var, y, lik._per_point(), lik._params(),
                                       nodes, weights, counts, edges, PRICE_BELOW * lik.strip_half_width)
    for got, want in zip(threaded, direct):
        np.testing.assert_array_equal(got, want)


def test_thread_count_from_the_environment(monkeypatch):
    monkeypatch.setenv("EFVI_NUM_THREADS", "3")
    assert _parallel._default_threads() == 3
    for bad in ("0", "two"):
        monkeypatch.setenv("EFVI_NUM_THREADS", bad)
        with pytest.raises(ValueError, match="EFVI_NUM_THREADS"):
            _parallel._default_threads()


def _large_quadrature(_):
    n = 2 * _parallel.MIN_POINTS_PER_THREAD
    return float(np.sum(likelihoods.BernoulliLogit()._variational_expectations(
        np.zeros(n), np.full(n, 0.5), np.ones(n))[0]))


def test_a_forked_child_gets_a_working_pool(monkeypatch):
    """The parent's pool threads do not exist after fork: the child must not wait on them forever."""
    import multiprocessing

    monkeypatch.setattr(_parallel, "NUM_THREADS", 2)
    expected = _large_quadrature(None)                  # the parent's pool now exists
    assert _parallel._pool is not None
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.map_async(_large_quadrature, [None]).get(timeout=60)
    assert result == [expected]


def test_overlapped_chunks_join_to_what_one_call_gives(monkeypatch):
    monkeypatch.setattr(_parallel, "NUM_THREADS", 2)
    x = np.arange(1003, dtype=float)
    calls = []

    def produce(rows):
        calls.append((rows.start, rows.stop))
        return x[rows] ** 2, x[rows] + 1.0

    def consume(rows, squares, shifted):
        return squares - shifted, np.sqrt(squares) * 2.0

    produced, consumed = _parallel.overlap_points(produce, consume, x.size, chunk=100)
    assert calls == [(s, min(s + 100, 1003)) for s in range(0, 1003, 100)]
    np.testing.assert_array_equal(produced[0], x ** 2)
    np.testing.assert_array_equal(produced[1], x + 1.0)
    np.testing.assert_array_equal(consumed[0], x ** 2 - x - 1.0)
    np.testing.assert_array_equal(consumed[1], 2.0 * x)
    calls.clear()
    _parallel.overlap_points(produce, consume, 150, chunk=100)       # short: one call on this thread
    assert calls == [(0, 150)]


@pytest.mark.parametrize("likelihood", [likelihoods.BernoulliLogit(), likelihoods.Poisson(),
                                        likelihoods.Binomial(np.arange(1, 2 * 8192 + 101) % 5 + 1.0)],
                         ids=["bernoulli", "poisson", "binomial-per-point"])
def test_a_glm_fit_with_overlapped_quadrature_equals_the_plain_one(likelihood, monkeypatch):
    """N above two chunks takes the overlapped route (marginals of later rows while the quadrature of
    earlier ones runs); with one thread it takes the plain route: the fits agree bit for bit."""
    from efvi import Gaussian, Model, glm

    rng = np.random.default_rng(2)
    n = 2 * 8192 + 100
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 3))])
    a = X @ np.array([0.2, 0.5, -0.4, 0.3])
    if isinstance(likelihood, likelihoods.Poisson):
        y = rng.poisson(np.exp(a)).astype(float)
    elif likelihood.per_point_name is not None and np.ndim(getattr(likelihood, likelihood.per_point_name)):
        y = rng.binomial(getattr(likelihood, likelihood.per_point_name).astype(int), 1 / (1 + np.exp(-a))).astype(float)
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-a))).astype(float)
    y[::101] = np.nan

    def fit(threads):
        monkeypatch.setattr(_parallel, "NUM_THREADS", threads)
        return Model({"w": Gaussian.from_mean_cov(np.zeros(4), np.eye(4))},
                     [glm.GLM(likelihood, X, y, on="w")]).fit(max_iter=4, warn=False)

    overlapped, plain = fit(2), fit(1)
    np.testing.assert_array_equal(overlapped.elbo_trace, plain.elbo_trace)
    np.testing.assert_array_equal(overlapped.posterior["w"].mean, plain.posterior["w"].mean)
    np.testing.assert_array_equal(overlapped.sites[0].precision, plain.sites[0].precision)
