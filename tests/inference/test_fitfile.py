"""Fit files: atomic saves, and a load that checks every entry and names what is wrong."""

import errno
import json
import os
import time
import weakref

import numpy as np
import pytest

import efvi.inference._archive as archive
from efvi.expfam import Gamma, Gaussian
from efvi.inference import Fixed, FitFileError, FitResult, Model
from efvi.models import Observe, glm, gp, lds, likelihoods


def _markov_gp_mid_search():
    """A learning Markov GP stopped inside its hyperparameter search: every kind of entry is present."""
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 60, size=120))
    y = rng.poisson(np.exp(np.sin(t / 5))).astype(float)
    prior = lds.MarkovGP(gp.kernels.Matern32(lengthscale=1.0, variance=0.5), t, learn_hyperparameters=True)
    model = Model({"f": prior}, [Observe(likelihoods.Poisson(), y, on="f")])
    fit = model.fit(max_iter=14, warn=False)
    assert fit.state.hyper.evaluations and fit.state.controller.accelerator.size
    return model, fit


def _minibatch_vmp():
    """Two blocks (Gaussian weights, Gamma noise), minibatch orders, a Fixed step rule."""
    rng = np.random.default_rng(5)
    X = np.column_stack([np.ones(50), rng.normal(size=(50, 2))])
    y = X @ [1.0, -0.5, 0.25] + 0.3 * rng.normal(size=50)
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(3), 10 * np.eye(3)), "tau": Gamma(1.0, 1.0)},
                  [glm.GLM(likelihoods.Gaussian(precision="tau"), X, y, on="w")])
    fit = model.fit(step=Fixed(0.5), batch_size=20, minibatch="sites", max_iter=4, warn=False)
    assert fit.state.orders[0] is not None
    return model, fit


def _gp_sum_kernel():
    """A GP with a sum of kernels (one with an option) and a constant LDS: what prediction needs is saved."""
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 5, size=(25, 1))
    kernel = gp.kernels.RBF(lengthscale=1.0) + gp.kernels.Periodic(period=2.0, n_harmonics=3)
    block = lds.LDS(0.9 * np.eye(2), 0.1 * np.eye(2), np.array([1.0, 0.0]), np.zeros(2), np.eye(2), n_steps=25)
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=25)
    model = Model({"f": gp.GP(kernel, X, mean=0.5), "x": block},
                  [Observe(likelihoods.Gaussian(variance=0.1), y, on="f"),
                   Observe(likelihoods.Gaussian(variance=0.5), y, on="x")])
    fit = model.fit(max_iter=5, warn=False)
    return model, fit


def _sparse_minibatch_learning():
    """A sparse GP learning its kernel and inducing inputs from minibatches: Adam's moments are present."""
    rng = np.random.default_rng(7)
    X = rng.uniform(-3, 3, size=(100, 1))
    y = (rng.random(100) < 1 / (1 + np.exp(-2 * np.sin(2 * X[:, 0])))).astype(float)
    block = gp.SparseGP(gp.kernels.RBF(lengthscale=0.5), X, np.linspace(-2, 2, 4)[:, None],
                        learn_hyperparameters=True, learn_inducing=True, learning_rate=0.05)
    model = Model({"f": block}, [Observe(likelihoods.Bernoulli(), y, on="f")])
    fit = model.fit(batch_size=25, max_iter=6, warn=False)
    assert fit.state.hyper.moments and fit.state.hyper.adam_steps == 6
    return model, fit


FITS = {"markov_gp": _markov_gp_mid_search, "minibatch_vmp": _minibatch_vmp, "gp_sum_kernel": _gp_sum_kernel,
        "sparse_minibatch_learning": _sparse_minibatch_learning}


def _resume_options(fit):
    """The fit options a saved fit was made with (resumed fits must use them to take the same path)."""
    if "tau" in fit.posterior:
        return {"step": Fixed(0.5), "batch_size": 20, "minibatch": "sites"}
    return {"batch_size": 25} if fit.state.hyper.moments else {}


@pytest.fixture(scope="module", params=sorted(FITS))
def saved(request, tmp_path_factory):
    model, fit = FITS[request.param]()
    path = tmp_path_factory.mktemp(request.param) / "fit.npz"
    fit.save(path)
    with np.load(path, allow_pickle=False) as data:
        entries = {key: data[key] for key in data.files}
    return model, fit, path, entries


def _write(path, entries, meta=None):
    entries = dict(entries)
    if meta is not None:
        entries["__meta__"] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:
        np.savez(fh, **entries)


def _saved_entries(fit, directory):
    """Save ``fit`` in ``directory``; the path and the file's entries."""
    path = directory / "fit.npz"
    fit.save(path)
    with np.load(path, allow_pickle=False) as data:
        return path, {key: data[key] for key in data.files}


def _meta(entries):
    return json.loads(str(entries["__meta__"]))


def _assert_rejected(path, match=None):
    start = time.perf_counter()
    with pytest.raises(FitFileError, match=match) as info:
        FitResult.load(path)
    assert time.perf_counter() - start < 5.0
    assert str(path) in str(info.value)
    return info.value


# ---------------------------------------------------------------------- round trip and resume
def test_a_loaded_fit_equals_the_saved_one_and_resumes_exactly(saved, tmp_path):
    model, fit, path, _ = saved
    loaded = FitResult.load(path)
    np.testing.assert_array_equal(loaded.elbo_trace, fit.elbo_trace)
    for name in fit.posterior:
        np.testing.assert_array_equal(loaded.posterior[name].mean, fit.posterior[name].mean)
    assert loaded.hyperparameters == fit.hyperparameters and loaded.factor_names == fit.factor_names
    assert loaded.message == fit.message and loaded.converged == fit.converged
    for name, q in fit.posterior.items():
        if hasattr(q, "predict"):            # structured blocks come back able to predict, exactly
            inputs = {"x": np.array([0, 3, 30]), "f": np.array([[0.5], [7.0]])}[name] \
                if "tau" not in fit.posterior and fit.posterior.keys() >= {"f", "x"} else np.array([-1.0, 70.0])
            np.testing.assert_array_equal(loaded.posterior[name].predict(inputs)[1], q.predict(inputs)[1])
    kwargs = _resume_options(fit)
    from_file = model.fit(init=loaded, max_iter=6, warn=False, **kwargs)
    from_memory = model.fit(init=fit, max_iter=6, warn=False, **kwargs)
    np.testing.assert_array_equal(from_file.elbo_trace, from_memory.elbo_trace)


class _RemoteArray:
    """A site array kept outside this process (as a Dask GLM's row blocks are): ``gather()`` brings it here.

    Records, at each gather, how many earlier gathered copies are still alive.
    """

    alive = []
    live_at_gather = []

    def __init__(self, values):
        self.values = np.asarray(values, dtype=float)
        self.shape = self.values.shape

    def gather(self):
        _RemoteArray.alive = [ref for ref in _RemoteArray.alive if ref() is not None]
        _RemoteArray.live_at_gather.append(len(_RemoteArray.alive))
        copy = _Buffer(self.values.copy())
        _RemoteArray.alive.append(weakref.ref(copy))
        return copy

    def copy(self):
        return self


class _Buffer(np.ndarray):
    """An ndarray subclass, so that a weak reference can watch it being freed."""

    def __new__(cls, values):
        return np.asarray(values).view(cls)


def test_site_arrays_kept_elsewhere_are_gathered_one_at_a_time_when_saved(tmp_path):
    model, fit = _minibatch_vmp()
    state = fit.state.copy()
    local = {b: tuple(np.array(a) for a in parts) for b, parts in state.sites[0].items()}
    state.sites[0] = {b: tuple(_RemoteArray(a) for a in parts) for b, parts in local.items()}
    remote = FitResult(fit.posterior, fit.sites, state, fit.converged, fit.timings, message=fit.message,
                       factor_names=fit.factor_names, likelihoods=fit.likelihoods)
    _RemoteArray.alive, _RemoteArray.live_at_gather = [], []
    remote.save(tmp_path / "fit.npz")
    n_parts = sum(len(parts) for parts in local.values())
    assert len(_RemoteArray.live_at_gather) == n_parts and max(_RemoteArray.live_at_gather) == 0
    loaded = FitResult.load(tmp_path / "fit.npz")
    for b, parts in local.items():
        for saved_part, part in zip(loaded.state.sites[0][b], parts):
            np.testing.assert_array_equal(saved_part, part)
    # resuming gathers them too (a factor that keeps its sites here): the same path as the local fit
    kwargs = {"step": Fixed(0.5), "batch_size": 20, "minibatch": "sites", "max_iter": 3, "warn": False}
    np.testing.assert_array_equal(model.fit(init=remote, **kwargs).elbo_trace, model.fit(init=fit, **kwargs).elbo_trace)


# ---------------------------------------------------------------------- atomic saves
def test_a_failed_save_leaves_the_previous_file_loadable(saved, tmp_path, monkeypatch):
    _, fit, _, _ = saved
    path = tmp_path / "checkpoint.npz"
    fit.save(path)
    before = path.read_bytes()

    def disk_full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(archive.os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space"):
        fit.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]     # no temporary file left
    np.testing.assert_array_equal(FitResult.load(path).elbo_trace, fit.elbo_trace)


def test_a_save_interrupted_while_writing_leaves_the_previous_file(saved, tmp_path, monkeypatch):
    _, fit, _, _ = saved
    path = tmp_path / "checkpoint.npz"
    fit.save(path)
    before = path.read_bytes()

    def half_written(fh, **arrays):
        fh.write(b"PK\x03\x04 half of an archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(archive.np, "savez_compressed", half_written)
    with pytest.raises(KeyboardInterrupt):
        fit.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]


def test_a_new_file_gets_the_usual_permissions(saved, tmp_path):
    _, fit, _, _ = saved
    mask = os.umask(0o022)
    try:
        fit.save(tmp_path / "new.npz")
    finally:
        os.umask(mask)
    assert (tmp_path / "new.npz").stat().st_mode & 0o777 == 0o644


# ---------------------------------------------------------------------- corrupted arrays
def _array_variants(key, a):
    yield "missing", None
    yield "complex", a.astype(complex) + 1j
    yield "string", np.full(a.shape, "x")
    yield "object", np.array([object()] * max(a.size, 1), dtype=object)
    yield "one more element", np.append(a.ravel(), a.ravel()[:1] if a.size else [0]).astype(a.dtype)
    yield "another dtype", a.astype(np.float32 if a.dtype.kind == "i" else np.int64)
    if a.dtype.kind == "f" and a.size and key not in ("controller/gains", "controller/steps", "controller/divergence"):
        bad = a.copy()
        bad.flat[0] = np.nan
        yield "NaN", bad
        if key != "hyper/evaluations/value":
            bad = a.copy()
            bad.flat[-1] = np.inf
            yield "inf", bad


def test_every_corrupted_array_is_rejected_by_name(saved, tmp_path):
    _, _, _, entries = saved
    path = tmp_path / "bad.npz"
    checked = 0
    for key, a in entries.items():
        if key == "__meta__":
            continue
        for what, value in _array_variants(key, a):
            changed = dict(entries)
            if value is None:
                del changed[key]
            else:
                changed[key] = value
            _write(path, changed)
            error = _assert_rejected(path)
            assert repr(key) in str(error), (key, what, str(error))
            checked += 1
    assert checked > 60


def test_arrays_reshaped_with_their_listing_are_still_rejected(saved, tmp_path):
    """An array changed together with its entry in the metadata still contradicts the rest of the file."""
    _, _, _, entries = saved
    path = tmp_path / "bad.npz"
    for key in ("elbo_trace", "sites/0/0/0", "messages/0/0/0", "posterior/0/0"):
        changed, meta = dict(entries), _meta(entries)
        changed[key] = np.append(entries[key].ravel(), 0.5)
        meta["arrays"][key]["shape"] = list(changed[key].shape)
        _write(path, changed, meta)
        _assert_rejected(path)


def test_entries_that_do_not_belong_are_rejected(saved, tmp_path):
    _, _, _, entries = saved
    path = tmp_path / "bad.npz"
    _write(path, dict(entries, stray=np.zeros(2)))
    _assert_rejected(path, "stray")
    meta = _meta(entries)
    meta["arrays"]["stray"] = {"dtype": "float64", "shape": [2]}
    _write(path, dict(entries, stray=np.zeros(2)), meta)
    _assert_rejected(path, "stray")


# ---------------------------------------------------------------------- corrupted metadata
def _paths(value, path=()):
    """Every key path of a JSON value (objects and lists), leaves included."""
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, path + (key,))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _paths(inner, path + (i,))


def _wrong_values(value, path):
    """Values that are wrong for this entry whatever it holds (type changes, out-of-range numbers)."""
    if isinstance(value, bool):
        return ["yes", 1]
    if isinstance(value, str):
        return [5, None]
    if isinstance(value, (int, float)):
        wrong = ["x", None]
        if "rng" not in path:
            wrong += [-1, float("nan"), float("inf")]
        return wrong
    return ["x", None]


def _set(meta, path, value, delete=False):
    target = meta
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value


def test_every_corrupted_metadata_entry_is_rejected(saved, tmp_path):
    _, _, _, entries = saved
    path = tmp_path / "bad.npz"
    meta = _meta(entries)
    checked, accepted = 0, []
    for key_path in _paths(meta):
        if not key_path or key_path[0] in ("message",) or key_path[:2] == ("controller", "rule_kind"):
            continue    # any string is a valid message; a rule of another name is simply not rebuilt
        value = meta
        for key in key_path:
            value = value[key]
        for wrong in _wrong_values(value, key_path):
            changed = _meta(entries)
            _set(changed, key_path, wrong)
            accepted += _unless_rejected(path, entries, changed, (key_path, wrong))
            checked += 1
        if isinstance(key_path[-1], str):
            changed = _meta(entries)
            _set(changed, key_path, None, delete=True)
            accepted += _unless_rejected(path, entries, changed, (key_path, "deleted"))
            checked += 1
    assert not accepted, f"corruptions that loaded: {accepted}"
    assert checked > 100


def _unless_rejected(path, entries, meta, what):
    """``[what]`` if the file with this metadata loads, else ``[]`` (checking the error's speed and path)."""
    _write(path, entries, meta)
    try:
        _assert_rejected(path)
    except pytest.fail.Exception:
        return [what]
    return []


@pytest.mark.parametrize("current", [5.0, 1e-300, float("nan"), -0.5, True])
def test_an_impossible_step_state_is_rejected_at_load(current, tmp_path):
    model, fit = _markov_gp_mid_search()
    path, entries = _saved_entries(fit, tmp_path)
    meta = _meta(entries)
    assert meta["controller"]["rule_kind"] == "Adaptive"
    meta["controller"]["rule_state"]["current"] = current
    _write(path, entries, meta)
    _assert_rejected(path, "step state")


@pytest.mark.parametrize("key, change, match", [
    ("rho_trace", lambda a: a + 1.5, "step sizes"),
    ("posterior/0/1", lambda a: -a, "positive variances"),
    ("accelerator/counters", lambda a: a + 100, "counters"),
])
def test_values_out_of_range_are_rejected(key, change, match, tmp_path):
    _, fit = _markov_gp_mid_search()
    path, entries = _saved_entries(fit, tmp_path)
    entries[key] = change(entries[key])
    _write(path, entries)
    _assert_rejected(path, match)


def test_orders_positions_and_natural_parameters_are_checked(tmp_path):
    _, fit = _minibatch_vmp()
    path, entries = _saved_entries(fit, tmp_path)
    order = entries["orders/0"].copy()
    order[0] = order[1]
    _write(path, dict(entries, **{"orders/0": order}))
    _assert_rejected(path, "permutation")
    meta = _meta(entries)
    meta["positions"][0] = 51
    _write(path, entries, meta)
    _assert_rejected(path, "positions")
    names = list(_meta(entries)["posterior"])
    gamma = names.index("tau")
    _write(path, dict(entries, **{f"posterior/{gamma}/0": np.array(-3.0)}))
    _assert_rejected(path, "valid Gamma")


def test_saved_predictors_are_checked_against_the_marginals(tmp_path):
    _, fit = _gp_sum_kernel()
    path, entries = _saved_entries(fit, tmp_path)
    meta = _meta(entries)
    assert meta["posterior"]["f"]["predictor"] == "gp" and meta["posterior"]["x"]["predictor"] == "lds"
    key = "posterior/0/predict/natural_mean"
    _write(path, dict(entries, **{key: entries[key] * 1.01}))
    _assert_rejected(path, "differs from the posterior rebuilt")
    _write(path, dict(entries, **{"posterior/0/predict/kernel/1/period": np.array(3.0)}))
    _assert_rejected(path, "not the saved")
    meta["posterior"]["f"]["predictor"] = "markov_gp"
    _write(path, entries, meta)
    _assert_rejected(path, "predict/t.* is missing")
    meta = _meta(entries)
    meta["posterior"]["f"]["spec"]["kernel"]["kind"] = "Product"
    _write(path, entries, meta)
    _assert_rejected(path, "not the saved")


# ---------------------------------------------------------------------- files that are not fits
@pytest.mark.parametrize("content", [b"", b"not an archive at all", b"PK\x03\x04 truncated"])
def test_files_that_are_not_archives_are_rejected(content, tmp_path):
    path = tmp_path / "fit.npz"
    path.write_bytes(content)
    _assert_rejected(path, "cannot be read")


def test_truncated_archives_and_other_files_are_rejected(saved, tmp_path):
    _, _, source, entries = saved
    data = source.read_bytes()
    path = tmp_path / "fit.npz"
    for cut in (len(data) // 3, len(data) - 10):
        path.write_bytes(data[:cut])
        _assert_rejected(path)
    np.save(path.with_suffix(".npy"), np.zeros(3))
    _assert_rejected(path.with_suffix(".npy"), "single .npy array")
    _write(path, {k: v for k, v in entries.items() if k != "__meta__"})
    _assert_rejected(path, "no '__meta__'")
    for meta in ("{not json", "[1, 2]"):
        _write(path, dict(entries, __meta__=np.array(meta)))
        _assert_rejected(path, "__meta__")
    _write(path, dict(entries, __meta__=np.zeros(3)))
    _assert_rejected(path, "__meta__")
    old = _meta(entries)
    old["format"] = "efvi-fit-1"
    _write(path, entries, old)
    _assert_rejected(path, "older formats")
    _assert_rejected(tmp_path / "missing.npz", "cannot be read")


# ---------------------------------------------------------------------- counters and symmetry
def test_an_adam_step_count_beyond_the_iterations_is_refused(tmp_path):
    _, fit = _sparse_minibatch_learning()
    path, entries = _saved_entries(fit, tmp_path)
    assert int(entries["hyper/adam_steps"][0]) == _meta(entries)["iteration"] == 6
    for steps in (2 ** 62, 7, 0):
        _write(path, dict(entries, **{"hyper/adam_steps": np.array([steps], dtype=np.int64)}))
        _assert_rejected(path, r"entry 'hyper/adam_steps' must be one count in \[1, 6\]")


def test_more_accelerated_steps_than_block_updates_are_refused(tmp_path):
    _, fit = _markov_gp_mid_search()
    path, entries = _saved_entries(fit, tmp_path)
    meta = _meta(entries)
    meta["n_accelerated"] = meta["iteration"] + 1          # one block: at most one per iteration
    _write(path, entries, meta)
    _assert_rejected(path, r"n_accelerated.* must be an integer in \[0, 14\]")


def _asymmetric(a, size=5e-7):
    damaged = a.copy()
    damaged[..., 0, 1] += size
    return damaged


@pytest.mark.parametrize("make, key", [
    (_sparse_minibatch_learning, "messages/0/0/1"),                # a sparse GP's J = Phi^T diag(pi) Phi
    (_minibatch_vmp, "messages/0/0/1"),                            # a Gaussian block's -precision / 2
])
def test_a_non_symmetric_precision_message_is_refused(make, key, tmp_path):
    _, fit = make()
    path, entries = _saved_entries(fit, tmp_path)
    np.testing.assert_array_equal(entries[key], entries[key].T)   # what a fit saves is exactly symmetric
    _write(path, dict(entries, **{key: _asymmetric(entries[key])}))
    _assert_rejected(path, rf"entry '{key}' must be a symmetric matrix \(to 1e-10 of its largest entry, .*\); "
                           r"it is off by 5e-07")


def test_a_non_symmetric_saved_sparse_gp_predictor_is_refused(tmp_path):
    _, fit = _sparse_minibatch_learning()
    path, entries = _saved_entries(fit, tmp_path)
    key = "posterior/0/predict/message/1"
    _write(path, dict(entries, **{key: _asymmetric(entries[key])}))
    _assert_rejected(path, r"message/1 \(Phi\^T diag\(pi\) Phi\) must be symmetric to 1e-10 of its largest entry; "
                           "it is off by 5e-07")


@pytest.mark.parametrize("make, key", [(_sparse_minibatch_learning, "messages/0/0/1"),
                                       (_markov_gp_mid_search, "messages/0/0/0"),
                                       (_gp_sum_kernel, "messages/1/0/1")])
def test_messages_must_sum_to_the_saved_posteriors_sites(make, key, tmp_path):
    _, fit = make()
    path, entries = _saved_entries(fit, tmp_path)
    _write(path, dict(entries, **{key: -entries[key]}))
    _assert_rejected(path, rf"entry '{key}' and the other messages of block .* must sum to the summed sites of its "
                           r"saved posterior")
