"""A GLM on dask arrays equals the in-memory GLM, on a cluster of worker processes and on threads.

The reference is the ordinary in-memory fit with the same step rule and no
Anderson acceleration (a Dask fit never extrapolates: it would gather the
sites).  Bad input gives named errors that say which block and row.
"""

import subprocess
import sys

import numpy as np
import pytest

from efvi import Gamma, Gaussian, Model, glm, likelihoods
from efvi.expfam import DiagonalGaussian
from efvi.inference import FitResult

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

TOL = 1e-10


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


@pytest.fixture
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def _logistic(n=1500, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, dim - 1))])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-X @ rng.normal(0.0, 1.0, dim)))).astype(float)
    return X, y, likelihoods.Bernoulli()


def _poisson(n=1500, dim=4, seed=1):
    """Counts with a per-point exposure and two missing responses."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, dim - 1))])
    exposure = rng.uniform(0.5, 2.0, n)
    y = rng.poisson(exposure * np.exp(X @ rng.normal(0.0, 0.4, dim))).astype(float)
    y[[3, n // 2]] = np.nan
    return X, y, likelihoods.Poisson(exposure=exposure)


def _prior(dim):
    return Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))


def _pair(X, y, lik, chunks=400, latents=None, **fit_options):
    """(in-memory fit, Dask fit, the Dask factor) of the same model."""
    latents = latents or {"w": _prior(X.shape[1])}
    reference = Model(latents, [glm.GLM(lik, X, y, on="w")]).fit(acceleration=False, **fit_options)
    factor = glm.GLM(lik, da.from_array(X, chunks=(chunks, X.shape[1])), da.from_array(y, chunks=chunks), on="w")
    return reference, Model(latents, [factor]).fit(**fit_options), factor


def _assert_same_fit(reference, fit, blocks=("w",)):
    assert fit.n_iter == reference.n_iter and fit.converged == reference.converged
    np.testing.assert_allclose(fit.elbo_trace, reference.elbo_trace, rtol=TOL, atol=0)
    for b in blocks:
        np.testing.assert_allclose(fit.posterior[b].mean, reference.posterior[b].mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(fit.posterior["w"].cov, reference.posterior["w"].cov, rtol=0, atol=TOL)
    for name in ("natural_mean", "precision"):
        np.testing.assert_allclose(getattr(fit.sites[0], name).compute(), getattr(reference.sites[0], name),
                                   rtol=0, atol=TOL)


# ---------------------------------------------------------------------- equal to the in-memory fit
@pytest.mark.parametrize("problem", [_logistic, _poisson], ids=["logistic", "poisson"])
def test_equals_the_in_memory_fit_on_a_cluster_of_processes(client, problem):
    reference, fit, factor = _pair(*problem())
    _assert_same_fit(reference, fit)
    assert reference.converged
    # validation, the informed start, the first ELBO, then one pass per iteration: no step was retried
    assert factor.n_passes == fit.n_iter + 3


def test_equals_the_in_memory_fit_with_the_threaded_scheduler(threads):
    reference, fit, _ = _pair(*_logistic(seed=2), chunks=350)
    _assert_same_fit(reference, fit)


def test_short_fixed_steps_update_the_sites_on_the_workers(threads):
    # rho = 0.5: every stored site is (1 - rho) s + rho g, computed block by block
    reference, fit, factor = _pair(*_poisson(seed=3), step=0.5, max_iter=6, warn=False)
    _assert_same_fit(reference, fit)
    assert factor.n_passes == fit.n_iter + 3


def test_a_gamma_noise_precision_is_updated_by_variational_message_passing(threads):
    X, _, _ = _logistic(n=800, seed=4)
    y = X @ np.array([0.5, -1.0, 2.0, 0.3]) + 0.4 * np.random.default_rng(4).standard_normal(800)
    latents = {"w": _prior(4), "tau": Gamma(1.0, 1.0)}
    reference, fit, _ = _pair(X, y, likelihoods.Gaussian(precision="tau"), chunks=300, latents=latents)
    _assert_same_fit(reference, fit, blocks=("w", "tau"))


def test_weighted_rows_equal_the_in_memory_weighted_fit(threads):
    X, y, lik = _poisson(n=900, seed=7)
    weights = np.random.default_rng(7).uniform(0.0, 3.0, 900)
    prior = {"w": _prior(4)}
    reference = Model(prior, [glm.GLM(lik, X, y, on="w", weights=weights)]).fit(acceleration=False)
    factor = glm.GLM(lik, _dask_X(X, 300), da.from_array(y, chunks=300), on="w",
                     weights=da.from_array(weights, chunks=300))
    _assert_same_fit(reference, Model(prior, [factor]).fit())


def test_a_numpy_y_is_split_like_the_rows_of_X(threads):
    X, y, lik = _logistic(n=600, seed=5)
    factor = glm.GLM(lik, da.from_array(X, chunks=(250, 4)), y, on="w")
    assert factor.y.chunks == ((250, 250, 100),)
    fit = Model({"w": _prior(4)}, [factor]).fit()
    reference = Model({"w": _prior(4)}, [glm.GLM(lik, X, y, on="w")]).fit(acceleration=False)
    np.testing.assert_allclose(fit.posterior["w"].mean, reference.posterior["w"].mean, rtol=0, atol=TOL)


def test_sites_stay_dask_arrays_chunked_like_the_rows(threads, tmp_path):
    X, y, lik = _logistic(n=600, seed=6)
    _, fit, factor = _pair(X, y, lik, chunks=200)
    view = fit.sites[0]
    assert isinstance(view.precision, da.Array) and view.precision.chunks == ((200, 200, 200),)
    assert view.pseudo_obs.chunks == ((200, 200, 200),)
    assert isinstance(factor, glm.GLM)
    stored = fit.state.sites[0]["w"][1]
    with pytest.raises(TypeError, match="stay in row blocks on the Dask workers: they do not become numpy arrays"):
        np.asarray(stored)
    np.testing.assert_array_equal(stored.gather(), view.precision.compute())
    assert stored.copy() is stored          # never changed in place: a copy of the state shares it


# ---------------------------------------------------------------------- saved and resumed
def _assert_same_path(resumed, uninterrupted):
    """A resumed fit took the uninterrupted fit's path: same iterations, ELBOs, posterior and sites."""
    assert resumed.n_iter == uninterrupted.n_iter and resumed.converged == uninterrupted.converged
    np.testing.assert_allclose(resumed.elbo_trace, uninterrupted.elbo_trace, rtol=TOL, atol=0)
    np.testing.assert_allclose(resumed.posterior["w"].mean, uninterrupted.posterior["w"].mean, rtol=0, atol=TOL)
    np.testing.assert_allclose(resumed.posterior["w"].cov, uninterrupted.posterior["w"].cov, rtol=0, atol=TOL)
    for name in ("natural_mean", "precision"):
        values = [np.asarray(v.compute() if hasattr(v, "compute") else v)
                  for v in (getattr(resumed.sites[0], name), getattr(uninterrupted.sites[0], name))]
        np.testing.assert_allclose(*values, rtol=0, atol=TOL)


def test_a_saved_fit_resumes_on_a_cluster_like_an_uninterrupted_fit(client, tmp_path):
    X, y, lik = _poisson(seed=11)
    reference, uninterrupted, _ = _pair(X, y, lik)
    factor = glm.GLM(lik, _dask_X(X, 400), da.from_array(y, chunks=400), on="w")
    model = Model({"w": _prior(4)}, [factor])
    first = model.fit(max_iter=2, warn=False)
    assert not first.converged
    first.save(tmp_path / "fit.npz")
    loaded = FitResult.load(tmp_path / "fit.npz")
    # the file holds the sites the workers held
    np.testing.assert_array_equal(loaded.sites[0].precision, first.sites[0].precision.compute())
    np.testing.assert_array_equal(loaded.sites[0].natural_mean, first.sites[0].natural_mean.compute())
    resumed = model.fit(init=loaded)
    assert isinstance(resumed.sites[0].precision, da.Array)
    _assert_same_path(resumed, uninterrupted)
    _assert_same_path(resumed, reference)


def test_fits_resume_across_in_memory_and_dask_factors(threads, tmp_path):
    X, y, lik = _logistic(seed=12)
    prior = {"w": _prior(4)}
    in_memory = Model(prior, [glm.GLM(lik, X, y, on="w")])
    on_dask = Model(prior, [glm.GLM(lik, _dask_X(X, 400), da.from_array(y, chunks=400), on="w")])
    reference = in_memory.fit(acceleration=False)
    # a Dask fit, as an object and from a file, continued by the in-memory GLM (its sites gathered)
    dask_part = on_dask.fit(max_iter=2, warn=False)
    dask_part.save(tmp_path / "dask.npz")
    for init in (dask_part, FitResult.load(tmp_path / "dask.npz")):
        _assert_same_path(in_memory.fit(init=init, acceleration=False), reference)
    # an in-memory fit continued on Dask (its sites sent to the workers), and a Dask fit on rows split
    # differently (its sites rechunked on the workers)
    memory_part = in_memory.fit(max_iter=2, warn=False, acceleration=False)
    resplit = Model(prior, [glm.GLM(lik, _dask_X(X, 300), da.from_array(y, chunks=300), on="w")])
    for model, init in ((on_dask, memory_part), (resplit, dask_part)):
        resumed = model.fit(init=init)
        assert resumed.state.sites[0]["w"][1].array.chunks == model.factors[0].X.chunks[:1]
        _assert_same_path(resumed, reference)
    # a Dask fit passed as init keeps its sites on the workers, and is itself unchanged by the resumed fit
    kept = on_dask.factors[0].restore_sites(dask_part.state.copy().sites[0])
    assert kept["w"][1] is dask_part.state.sites[0]["w"][1]
    assert dask_part.n_iter == 2 and len(dask_part.elbo_trace) == 3


def test_import_efvi_does_not_import_dask():
    code = "import sys, efvi, efvi.models.glm; print('dask' in sys.modules, 'distributed' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------- named errors
def _dask_X(X, rows=100):
    return da.from_array(X, chunks=(rows, X.shape[1]))


def test_rows_of_X_and_y_chunked_differently_are_named(threads):
    X, y, lik = _logistic(n=300)
    with pytest.raises(ValueError, match=r"y must be chunked like the rows of X.*\(100, 100, 100\).*"
                                         r"\(150, 150\).*rechunk"):
        glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=150), on="w")


def test_X_chunked_along_columns_says_what_is_required(threads):
    X, y, lik = _logistic(n=300)
    with pytest.raises(ValueError, match=r"X must be chunked along rows only .*all 4 columns.*\(2, 2\).*"
                                         r"rechunk\(\{1: -1\}\)"):
        glm.GLM(lik, da.from_array(X, chunks=(100, 2)), da.from_array(y, chunks=100), on="w")


def test_a_non_finite_entry_of_X_names_its_block_and_row(threads):
    X, y, lik = _logistic(n=300)
    X[217, 2] = np.inf
    with pytest.raises(ValueError, match=r"X must be finite.*inf at row 217, column 2 \(block 2 of 3: rows 200 "
                                         r"to 299\)"):
        glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")


def test_an_observation_outside_the_support_names_its_block(threads):
    X, y, lik = _logistic(n=300)
    y[105] = 2.0
    with pytest.raises(ValueError, match=r"y\[100:200\] must contain .* at index 5 .*\(block 1 of 3: rows 100 "
                                         r"to 199\)"):
        glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")


def test_bad_weights_are_named_with_their_block(threads):
    X, y, lik = _logistic(n=300)
    weights = np.ones(300)
    weights[150] = -1.0
    with pytest.raises(ValueError, match=r"weights\[100:200\] must be finite and >= 0; got -1.0 at index 50 "
                                         r"\(block 1 of 3"):
        glm.GLM(lik, _dask_X(X), y, on="w", weights=weights)
    with pytest.raises(ValueError, match=r"weights must be chunked like the rows of X"):
        glm.GLM(lik, _dask_X(X), y, on="w", weights=da.from_array(weights, chunks=150))
    with pytest.raises(ValueError, match=r"weights must have shape \(300,\), one per row of X; got shape \(299,\)"):
        glm.GLM(lik, _dask_X(X), y, on="w", weights=np.ones(299))


def test_an_infinite_observation_names_its_block(threads):
    X, y, lik = _poisson(n=300)
    y[0] = np.inf
    with pytest.raises(ValueError, match=r"y\[0:100\] must contain finite .* \(block 0 of 3"):
        glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")


@pytest.mark.parametrize("X_shape, y_shape, message", [
    ((300,), (300,), r"X must have shape \(N, D\); got \(300,\)"),
    ((300, 4, 1), (300,), r"X must have shape \(N, D\)"),
    ((300, 0), (300,), r"at least one column"),
    ((300, 4), (300, 1), r"y must be one-dimensional; got shape \(300, 1\)"),
    ((300, 4), (299,), r"y must have one entry per row of X \(300\); got 299"),
])
def test_wrong_dimensions_are_named(threads, X_shape, y_shape, message):
    X, y = da.zeros(X_shape, chunks=100), da.zeros(y_shape, chunks=100)
    with pytest.raises(ValueError, match=message):
        glm.GLM(likelihoods.Bernoulli(), X, y, on="w")


def test_weights_of_the_wrong_dimension_are_named(threads):
    X, y, lik = _logistic(n=300)
    with pytest.raises(ValueError, match=r"block 'w' must be a single Gaussian of dimension 4 \(columns of X\); "
                                         r"got batch \(\), dimension 3"):
        Model({"w": _prior(3)}, [glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")])


def test_unknown_chunk_sizes_and_a_mean_field_block_are_named(threads):
    X, y, lik = _logistic(n=300)
    ragged = _dask_X(X)[_dask_X(X)[:, 0] > 0]
    with pytest.raises(ValueError, match=r"X must have known chunk sizes .*compute_chunk_sizes"):
        glm.GLM(lik, ragged, y[:1], on="w")
    factor = glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")
    with pytest.raises(ValueError, match=r"must be a full Gaussian block .*got DiagonalGaussian"):
        Model({"w": DiagonalGaussian.from_mean_var(np.zeros(4), np.ones(4))}, [factor])


def test_minibatches_are_refused(threads):
    X, y, lik = _logistic(n=300)
    factor = glm.GLM(lik, _dask_X(X), da.from_array(y, chunks=100), on="w")
    with pytest.raises(ValueError, match=r"fits in full batch.*batch_size=None"):
        Model({"w": _prior(4)}, [factor]).fit(batch_size=50, max_iter=2)
