"""Saved fits: one ``.npz`` file of arrays plus JSON metadata, written atomically and read back with checks.

The file holds everything a :class:`~efvi.inference._state.FitState` carries,
the posteriors and the site views, as plain arrays (never pickled objects) and
one JSON entry ``__meta__``.  The metadata lists every array with its dtype
and shape, so a reader knows exactly what to expect; :func:`load` checks each
array against that list and then against what it means (finite values, step
sizes in ``(0, 1]``, permutations, valid natural parameters, a step state that
suits its rule, and so on) and raises :class:`FitFileError` naming the file,
the entry and the problem.  Nothing in a file is executed.

:func:`save` writes to a temporary file beside the target and renames it over
the target only when the write is complete, so a failed save (a full disk)
leaves the previous file intact.

Other efvi objects that save themselves (the scikit-learn estimators) use the
same writer and checks: :func:`write_archive` stores their arrays, a JSON
``content`` entry and whole fits (each fit's arrays under ``fits/<name>/``
and its metadata under ``__meta__.fits``), and :class:`ArchiveReader` reads
them back, each embedded fit through the fit reader itself.
"""

import contextlib
import json
import os
import tempfile

import numpy as np

from .. import expfam
from ..expfam import ExponentialFamily
from ..expfam.checks import SYMMETRY_RTOL, is_symmetric
from ._acceleration import AndersonAccelerator
from ._controller import GAIN_WINDOW
from .factor import GaussianSiteView, SiteView, is_remote
from .result import _LIKELIHOOD_LOADERS, _REBUILDERS, FitResult, Marginals
from ._state import ControllerState, FitState, HyperState
from .steps import RULES

FORMAT = "efvi-fit-4"

_META_KEYS = {"format", "arrays", "converged", "message", "timings", "iteration", "n_backoffs", "n_accelerated",
              "coarse", "posterior", "sites", "messages", "site_views", "factor_names", "orders", "positions",
              "rng", "controller", "hyper", "likelihoods"}
_CONTROLLER_KEYS = {"rule_kind", "rule_params", "rule_state", "plain_next", "accelerator", "accelerator_depth",
                    "accelerator_rest", "accelerator_failures"}
SUMMED_RTOL = 1e-9
"""How far a structured block's messages may sum from its posterior's summed sites, relative (rounding only)."""
_ACCELERATOR_PARTS = ("delta_f", "delta_g", "last_f", "last_g", "counters")


class FitFileError(ValueError):
    """A fit file that cannot be read back: the message names the file, the entry and what is wrong."""


# ---------------------------------------------------------------------- writing
def save(result, path):
    """Write ``result`` to ``path`` atomically (see the module notes)."""
    write(path, *_layout(result))


def write_archive(path, fmt, arrays, content, fits):
    """Write an efvi file of format ``fmt``: ``arrays`` (float64 or int64), JSON ``content`` and whole fits.

    Parameters
    ----------
    path : str or os.PathLike
    fmt : str
        The format name the reader will ask for (e.g. ``"efvi-estimator-1"``).
    arrays : dict
        Name -> ndarray of float64 or int64; no name may start with ``fits/``.
    content : JSON-able object
    fits : dict
        Name -> :class:`FitResult`, each stored whole (as :func:`save` would).
    """
    arrays = dict(arrays)
    for key, a in arrays.items():
        if key.startswith("fits/") or key == "__meta__" or a.dtype not in (np.float64, np.int64):
            raise ValueError(f"arrays[{key!r}] must be float64 or int64 under a name not starting with 'fits/'; "
                             f"got {a.dtype}")
    fit_meta = {}
    for name, result in fits.items():
        fit_arrays, fit_meta[name] = _layout(result)
        arrays.update({f"fits/{name}/{key}": a for key, a in fit_arrays.items()})
    write(path, arrays, {"format": fmt, "content": content, "fits": fit_meta})


def write(path, arrays, meta):
    """Write ``arrays`` and the JSON ``meta`` (to which the list of arrays is added) to ``path`` atomically."""
    meta = dict(meta, arrays={key: {"dtype": str(a.dtype), "shape": list(a.shape)} for key, a in arrays.items()})
    arrays = dict(arrays, __meta__=np.array(json.dumps(meta, allow_nan=False)))
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as fh:
            np.savez_compressed(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _file_mode(path):
    """The mode a new file gets (the previous file's, else 0o666 less the umask)."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _layout(result):
    """The arrays and metadata of ``result``: this function and :func:`load` are the file format."""
    state = result.state
    arrays = {"elbo_trace": np.asarray(state.elbo_trace, dtype=float),
              "rho_trace": np.asarray(state.rho_trace, dtype=float)}
    for name, per_factor in (("sites", state.sites), ("messages", state.messages)):
        for k, by_block in enumerate(per_factor):
            for i, parts in enumerate(by_block.values()):
                for j, a in enumerate(parts):
                    arrays[f"{name}/{k}/{i}/{j}"] = _Gathered(a) if is_remote(a) else np.asarray(a, dtype=float)
    for k, order in enumerate(state.orders):
        if order is not None:
            arrays[f"orders/{k}"] = np.asarray(order, dtype=np.int64)
    posterior = {}
    for i, (name, q) in enumerate(result.posterior.items()):
        if isinstance(q, ExponentialFamily):
            posterior[name] = {"kind": "expfam", "family": type(q).name}
            parts = q.natural
        else:
            # a structured block's messages are per-point sites: say how many points it has
            sizes = [np.shape(m[name][0])[0] for m in state.messages if name in m]
            posterior[name] = {"kind": "marginals", "family": type(q).__name__,
                               "points": int(sizes[0]) if sizes else int(np.shape(q.mean)[0])}
            parts = (q.mean, q.var)
            saved = q.predictive_state() if callable(getattr(q, "predictive_state", None)) else None
            if saved is not None:           # what prediction needs: the prior's parts and the summed sites
                predictor, spec, needed = saved
                posterior[name].update(kind="predictive", predictor=predictor, spec=spec)
                for key, a in needed.items():
                    arrays[f"posterior/{i}/predict/{key}"] = np.asarray(a, dtype=float)
        for j, a in enumerate(parts):
            arrays[f"posterior/{i}/{j}"] = np.asarray(a, dtype=float)
    controller = state.controller
    arrays["controller/gains"] = np.asarray(controller.gains, dtype=float)
    arrays["controller/steps"] = np.asarray(controller.steps, dtype=float)
    arrays["controller/divergence"] = np.asarray([np.nan if controller.divergence is None else controller.divergence],
                                                 dtype=float)
    accelerator = "off"
    if controller.accelerator is not None:
        history = controller.accelerator.state()
        accelerator = "history" if history else "empty"
        for key, a in history.items():
            arrays[f"accelerator/{key}"] = np.asarray(a, dtype=np.int64 if key == "counters" else float)
    for i, theta in enumerate(state.hyper.theta.values()):
        arrays[f"hyper/theta/{i}"] = np.asarray(theta, dtype=float)
    for i, b in enumerate(state.hyper.theta):
        if b in state.hyper.moments:
            arrays[f"hyper/moments/{i}"] = np.array(state.hyper.moments[b], dtype=float)
    if state.hyper.moments:
        arrays["hyper/adam_steps"] = np.array([state.hyper.adam_steps], dtype=np.int64)
    evaluations = state.hyper.evaluations
    if evaluations:
        arrays["hyper/evaluations/theta"] = np.array([e[0] for e in evaluations], dtype=float)
        arrays["hyper/evaluations/value"] = np.array([e[1] for e in evaluations], dtype=float)
        arrays["hyper/evaluations/gradient"] = np.array([e[2] for e in evaluations], dtype=float)
    meta = {
        "format": FORMAT,
        "converged": result.converged,
        "message": result.message,
        "timings": {"total": float(result.timings.get("total", 0.0)),
                    "per_iteration": [float(t) for t in result.timings.get("per_iteration", [])]},
        "iteration": int(state.iteration),
        "n_backoffs": int(state.n_backoffs),
        "n_accelerated": int(state.n_accelerated),
        "coarse": bool(state.coarse),
        "posterior": posterior,
        "sites": [[[b, len(parts)] for b, parts in by_block.items()] for by_block in state.sites],
        "messages": [[[b, len(parts)] for b, parts in by_block.items()] for by_block in state.messages],
        "site_views": [[getattr(v, "kind", "raw"), getattr(v, "block", None)] for v in result.sites],
        "factor_names": list(result.factor_names),
        "orders": [order is not None for order in state.orders],
        "positions": [int(p) for p in state.positions],
        "rng": state.rng.bit_generator.state,
        "controller": {
            "rule_kind": controller.rule_kind, "rule_params": controller.rule_params,
            "rule_state": controller.rule, "plain_next": bool(controller.plain_next),
            "accelerator": accelerator,
            "accelerator_depth": controller.accelerator.depth if controller.accelerator is not None else 0,
            "accelerator_rest": int(controller.accelerator_rest),
            "accelerator_failures": int(controller.accelerator_failures),
        },
        "hyper": {"names": {b: list(result.hyperparameter_names.get(b, ())) for b in state.hyper.theta},
                  "log_scale": {b: [bool(x) for x in result.hyperparameter_log_scale.get(b, ())]
                                for b in state.hyper.theta}},
        "likelihoods": [_likelihood_entry(result, k) for k in range(len(result.likelihoods))],
    }
    return arrays, meta


class _Gathered:
    """A site array kept elsewhere, gathered only when the writer reaches it (one such array in memory at a time).

    ``numpy.savez_compressed`` converts each entry with ``np.asanyarray`` just
    before writing it and drops it after, so a fit whose sites live on Dask
    workers is saved with at most one of its (N,) arrays in this process.
    """

    dtype = np.dtype(float)

    def __init__(self, part):
        self.part = part
        self.shape = tuple(int(n) for n in part.shape)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.part.gather(), dtype=dtype or float)


def _likelihood_entry(result, k):
    """Factor ``k``'s likelihood as JSON: ``{"kind": "none"}``, ``{"kind": "spec", "spec": likelihood.spec()}``,
    or ``{"kind": "unsaved", "class": name}`` for one that is code, not numbers (a Custom likelihood)."""
    likelihood = result.likelihoods[k]
    if likelihood is None:
        unsaved = result._unsaved_likelihoods.get(k)
        return {"kind": "none"} if unsaved is None else {"kind": "unsaved", "class": unsaved}
    try:
        return {"kind": "spec", "spec": likelihood.spec()}
    except (AttributeError, ValueError):
        return {"kind": "unsaved", "class": type(likelihood).__name__}


# ---------------------------------------------------------------------- reading
def load(path):
    """Read a fit written by :func:`save`; raises :class:`FitFileError` for anything malformed."""
    with _Reader(path) as reader:
        return reader.result()


class _Reader:
    """Reads one fit file entry by entry, checking each; every failure is a FitFileError naming the entry.

    ``data`` and ``meta`` give a fit stored inside another file (:meth:`ArchiveReader.fit`): its
    entries, by their names within the fit, and its metadata with the list of its arrays.
    """

    def __init__(self, path, data=None, meta=None):
        self.given_meta = meta
        if data is not None:
            self.path, self.data = path, data
            return
        self.path = os.fspath(path)
        try:
            self.data = np.load(self.path, allow_pickle=False)
        except Exception as err:     # OSError, BadZipFile, pickled content, ...: all mean "not our file"
            raise FitFileError(f"{self.path}: cannot be read as an .npz archive ({type(err).__name__}: {err})") from None
        if not isinstance(self.data, np.lib.npyio.NpzFile):
            raise FitFileError(f"{self.path}: is a single .npy array, not an efvi fit file")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.data.close()

    def fail(self, entry, problem):
        raise FitFileError(f"{self.path}: entry {entry!r} {problem}")

    # ------------------------------------------------------------------ raw access
    def _raw(self, key):
        try:
            return self.data[key]
        except Exception as err:     # a damaged member: CRC, zlib, truncated, or pickled data
            self.fail(key, f"cannot be read ({type(err).__name__}: {err})")

    def meta(self, fmt=FORMAT, keys=_META_KEYS, what="fit", hint="files of older formats cannot be resumed: refit"):
        """The checked metadata of a file of format ``fmt`` with exactly the entries ``keys``."""
        meta = self.given_meta if self.given_meta is not None else self._json_meta(what)
        if meta.get("format") != fmt:
            raise FitFileError(f"{self.path}: not an efvi {what} file of format {fmt!r} "
                               f"(format {meta.get('format')!r}; {hint})")
        _exactly(self, meta, keys, "__meta__")
        manifest = meta["arrays"]
        self.check(isinstance(manifest, dict), "__meta__.arrays", "must be an object")
        present = set(self.data.files) - {"__meta__"}
        for key in sorted(set(manifest) ^ present):
            self.fail(key, "is listed in the metadata but missing from the file" if key in manifest
                      else "is in the file but not listed in the metadata")
        self.manifest = manifest
        self.read = set()
        return meta

    def _json_meta(self, what):
        if "__meta__" not in self.data.files:
            raise FitFileError(f"{self.path}: not an efvi {what} file (no '__meta__' entry)")
        raw = self._raw("__meta__")
        if raw.dtype.kind != "U" or raw.shape != ():
            self.fail("__meta__", f"must be one JSON string; got a {raw.dtype} array of shape {raw.shape}")
        try:
            meta = json.loads(str(raw))
        except ValueError as err:
            self.fail("__meta__", f"is not valid JSON ({err})")
        self.check(isinstance(meta, dict), "__meta__", f"must be a JSON object; got {type(meta).__name__}")
        return meta

    def check(self, condition, entry, problem):
        if not condition:
            self.fail(entry, problem)

    def array(self, key, finite=True):
        """The array ``key`` after checking it against the manifest (dtype, shape) and, for floats, finiteness."""
        if key not in self.manifest:
            self.fail(key, "is missing")
        spec = self.manifest[key]
        self.read.add(key)
        self.check(isinstance(spec, dict) and set(spec) == {"dtype", "shape"} and spec["dtype"] in
                   ("float64", "int64") and isinstance(spec["shape"], list)
                   and all(_is_int(n) and n >= 0 for n in spec["shape"]),
                   f"__meta__.arrays[{key!r}]", f"must give a dtype float64 or int64 and a shape; got {spec!r}")
        a = self._raw(key)
        self.check(str(a.dtype) == spec["dtype"], key, f"must have dtype {spec['dtype']}; got {a.dtype}")
        self.check(list(a.shape) == spec["shape"], key, f"must have shape {tuple(spec['shape'])}; got {a.shape}")
        if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            self.fail(key, "must hold finite numbers; it holds NaN or inf")
        return a

    # ------------------------------------------------------------------ the fit
    def result(self):
        meta = self.meta()
        get = _MetaGetter(self, meta)
        elbo = self.array("elbo_trace")
        rho = self.array("rho_trace")
        self.check(elbo.ndim == 1 and elbo.shape[0] >= 1, "elbo_trace", "must be a 1-D array with at least one entry")
        self.check(rho.shape == elbo.shape, "rho_trace", f"must have the shape of elbo_trace {elbo.shape}")
        self.check(np.all((rho >= 0) & (rho <= 1)), "rho_trace", "must hold step sizes in [0, 1]")
        posterior, shapes, symmetric = self._posterior(get.dict("posterior"))
        sites, n_data = self._sites(get.list("sites"))
        messages = self._messages(get.list("messages"), len(sites), shapes, symmetric)
        self._check_summed_messages(posterior, messages)
        iteration = get.int("iteration")
        hyper, log_scale = self._hyper(get.dict("hyper"), iteration)
        state = FitState(sites, messages, self._rng(meta["rng"]), self._controller(get.dict("controller")), hyper)
        state.orders, state.positions = self._orders(get, n_data)
        state.iteration = iteration
        # an accelerated step replaces one block's update (or one whole sweep's): at most one per block per sweep
        state.n_backoffs = get.int("n_backoffs")
        state.n_accelerated = get.int("n_accelerated", maximum=iteration * len(posterior))
        state.coarse = get.bool("coarse")
        state.elbo_trace, state.rho_trace = elbo.tolist(), rho.tolist()
        views = self._views(get.list("site_views"), sites)
        factor_names = get.list("factor_names")
        self.check(len(factor_names) == len(sites) and all(isinstance(n, str) for n in factor_names),
                   "__meta__.factor_names", f"must be {len(sites)} strings")
        likelihoods, unsaved = self._likelihoods(get.list("likelihoods"), len(sites))
        for key in sorted(set(self.manifest) - self.read):
            self.fail(key, "is not part of a fit of this layout")
        return FitResult(posterior, views, state, get.bool("converged"), self._timings(get.dict("timings")),
                         message=get.str("message"), factor_names=factor_names,
                         hyperparameter_names={b: tuple(n) for b, n in meta["hyper"]["names"].items()},
                         hyperparameter_log_scale=log_scale,
                         likelihoods=likelihoods, unsaved_likelihoods=unsaved)

    def _likelihoods(self, entries, n_factors):
        """Each factor's likelihood rebuilt from its spec (None where there is none or it was not saved) and,
        by factor, the class of each likelihood that was not saved."""
        self.check(len(entries) == n_factors, "__meta__.likelihoods", f"must have one entry per factor ({n_factors})")
        likelihoods, unsaved = [None] * n_factors, {}
        for k, entry in enumerate(entries):
            where = f"__meta__.likelihoods[{k}]"
            kind = entry.get("kind") if isinstance(entry, dict) else None
            fields = {"none": {"kind"}, "unsaved": {"kind", "class"}, "spec": {"kind", "spec"}}.get(kind)
            self.check(fields is not None and set(entry) == fields, where,
                       "must be {'kind': 'none'}, {'kind': 'unsaved', 'class': name} or {'kind': 'spec', 'spec': ...}; "
                       f"got {entry!r}"[:300])
            if kind == "unsaved":
                self.check(isinstance(entry["class"], str), where, "must name the class of the unsaved likelihood")
                unsaved[k] = entry["class"]
            elif kind == "spec" and not _LIKELIHOOD_LOADERS:
                unsaved[k] = f"{str(entry['spec'].get('class')) if isinstance(entry['spec'], dict) else '?'} " \
                             "(efvi.models, which rebuilds it, is not imported)"
            elif kind == "spec":
                try:
                    likelihoods[k] = _LIKELIHOOD_LOADERS[0](entry["spec"])
                    if likelihoods[k].spec() != entry["spec"]:
                        raise ValueError(f"it rebuilds {likelihoods[k]!r}, whose spec is {likelihoods[k].spec()!r}")
                except ValueError as err:
                    self.fail(where, f"does not describe a likelihood exactly ({err})"[:600])
        return likelihoods, unsaved

    def _posterior(self, spec):
        """Block name -> posterior, -> the shapes of its messages, and -> which of their parts are symmetric
        matrices (a precision)."""
        posterior, shapes, symmetric = {}, {}, {}
        for i, (name, kind) in enumerate(spec.items()):
            entry = f"__meta__.posterior[{name!r}]"
            keys = {"expfam": {"kind", "family"}, "marginals": {"kind", "family", "points"},
                    "predictive": {"kind", "family", "points", "predictor", "spec"}}.get(
                kind.get("kind") if isinstance(kind, dict) else None, {"kind", "family"})
            self.check(isinstance(kind, dict) and set(kind) == keys and isinstance(kind["family"], str), entry,
                       f"must be an object with {sorted(keys)} (the family a name); got {kind!r}")
            if kind["kind"] == "expfam":
                try:
                    family = expfam.get(kind["family"])
                except (KeyError, ValueError, TypeError) as err:
                    self.fail(entry, f"names no registered family ({err})")
                parts = tuple(self.array(f"posterior/{i}/{j}") for j in range(len(family.param_names)))
                try:
                    posterior[name] = family.from_natural(parts)
                except ValueError as err:
                    self.fail(f"posterior/{i}", f"is not a valid {family.__name__} natural parameter ({err})")
                shapes[name] = [p.shape for p in parts]
                symmetric[name] = [event_ndim == 2 for event_ndim in family.event_ndims]
            elif kind["kind"] in ("marginals", "predictive"):
                mean, var = self.array(f"posterior/{i}/0"), self.array(f"posterior/{i}/1")
                self.check(mean.ndim == 1 and var.shape == mean.shape, f"posterior/{i}",
                           f"must be a mean and a variance of one shape (N,); got {mean.shape} and {var.shape}")
                self.check(np.all(var > 0), f"posterior/{i}/1", "must hold positive variances")
                points = kind["points"]
                self.check(_is_int(points) and points >= 1, f"{entry}.points", f"must be a positive integer; got "
                                                                              f"{points!r}")
                posterior[name] = Marginals(mean, var)
                if kind["kind"] == "predictive":
                    posterior[name] = self._predictive(i, name, kind, mean, var)
                # the per-point sites of its factors, or the rebuilt posterior's own message (a sparse GP's)
                message = getattr(posterior[name], "message", None)
                shapes[name] = [np.shape(p) for p in message] if message is not None else [(points,), (points,)]
                symmetric[name] = [np.ndim(p) == 2 for p in message] if message is not None else [False, False]
            else:
                self.fail(entry, f"has kind {kind['kind']!r}; expected 'expfam', 'marginals' or 'predictive'")
        return posterior, shapes, symmetric

    def _predictive(self, i, name, kind, mean, var):
        """A structured posterior rebuilt by its model's hook from the saved prior and sites, checked
        against the saved marginals."""
        entry = f"__meta__.posterior[{name!r}]"
        predictor = kind["predictor"]
        rebuild = _REBUILDERS.get(predictor) if isinstance(predictor, str) else None
        self.check(rebuild is not None, f"{entry}.predictor",
                   f"must name a known predictor ({', '.join(map(repr, sorted(_REBUILDERS)))}); got {predictor!r}")
        prefix = f"posterior/{i}/predict/"
        keys = ", ".join(repr(k) for k in sorted(self.manifest) if k.startswith(prefix))
        try:
            rebuilt = rebuild(kind["spec"], lambda key: self.array(prefix + key), name)
        except (ValueError, TypeError, KeyError, ArithmeticError, np.linalg.LinAlgError) as err:
            if isinstance(err, FitFileError):
                raise
            self.fail(f"{entry}.spec", f"and the arrays {keys} do not describe a {kind['family']} prior and its "
                                       f"sites ({type(err).__name__}: {err})"[:600])
        same = np.shape(rebuilt.mean) == mean.shape and np.allclose(rebuilt.mean, mean, rtol=1e-9, atol=1e-12) \
            and np.allclose(rebuilt.var, var, rtol=1e-9, atol=1e-12)
        self.check(same, f"posterior/{i}", f"(the saved marginals) differs from the posterior rebuilt from "
                                           f"{entry}.spec and the arrays {keys}")
        return rebuilt

    def _layout(self, layout, name):
        entry = f"__meta__.{name}"
        self.check(all(isinstance(f, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                                   and _is_int(p[1]) and 1 <= p[1] <= 8 for p in f)
                       for f in layout), entry, "must list, per factor, [block name, number of parts] pairs")
        return layout

    def _sites(self, layout):
        sites, n_data = [], []
        for k, blocks in enumerate(self._layout(layout, "sites")):
            by_block, leading = {}, set()
            for i, (b, n_parts) in enumerate(blocks):
                parts = tuple(self.array(f"sites/{k}/{i}/{j}") for j in range(n_parts))
                leading |= {p.shape[0] if p.ndim else None for p in parts}
                by_block[b] = parts
            self.check(len(leading) == 1 and None not in leading, f"sites/{k}",
                       f"must all have the data index first, of one length; got leading sizes {sorted(leading, key=str)}")
            sites.append(by_block)
            n_data.append(leading.pop())
        return sites, n_data

    def check_symmetric(self, a, entry):
        """Fail unless the matrix ``a`` is symmetric to ``SYMMETRY_RTOL`` of its largest entry (rounding only)."""
        if not np.all(is_symmetric(a)):
            off = float(np.max(np.abs(a - np.swapaxes(a, -1, -2))))
            self.fail(entry, f"must be a symmetric matrix (to {SYMMETRY_RTOL:g} of its largest entry, "
                             f"{float(np.max(np.abs(a))):.6g}); it is off by {off:.3g}")

    def _messages(self, layout, n_factors, shapes, symmetric):
        layout = self._layout(layout, "messages")
        self.check(len(layout) == n_factors, "__meta__.messages", f"must have one entry per factor ({n_factors})")
        messages = []
        for k, blocks in enumerate(layout):
            by_block = {}
            for i, (b, n_parts) in enumerate(blocks):
                self.check(b in shapes, f"__meta__.messages[{k}]", f"names block {b!r}, which has no posterior")
                parts = tuple(self.array(f"messages/{k}/{i}/{j}") for j in range(n_parts))
                got = [p.shape for p in parts]
                self.check(got == shapes[b], f"messages/{k}/{i}",
                           f"must have the shapes of block {b!r}'s messages {shapes[b]}; got {got}")
                for j, part in enumerate(parts):
                    if symmetric[b][j]:
                        self.check_symmetric(part, f"messages/{k}/{i}/{j}")
                by_block[b] = parts
            messages.append(by_block)
        return messages

    def _check_summed_messages(self, posterior, messages):
        """Fail unless a rebuilt structured posterior's summed sites are the sum of its block's messages.

        The engine builds every block's posterior from the sum of the factors'
        messages, and a structured posterior keeps that sum (a GP's or a
        state-space block's ``(natural_mean, precision)``, a sparse GP's
        ``message``), so a file whose messages disagree with it would resume
        from another posterior than the one it holds.
        """
        for i, (name, q) in enumerate(posterior.items()):
            if isinstance(q, (ExponentialFamily, Marginals)):
                continue
            own = getattr(q, "message", None)
            if own is None and hasattr(q, "natural_mean"):
                own = (q.natural_mean, q.precision)
            keys = [f"messages/{k}/{list(m).index(name)}" for k, m in enumerate(messages) if name in m]
            if own is None or not keys:
                continue
            for j, part in enumerate(own):
                total = sum(m[name][j] for m in messages if name in m)
                scale = max(float(np.max(np.abs(part), initial=0.0)), 1e-300)
                self.check(np.shape(total) == np.shape(part) and np.max(np.abs(total - part), initial=0.0)
                           <= SUMMED_RTOL * scale, f"{keys[0]}/{j}",
                           f"and the other messages of block {name!r} ({', '.join(keys)}) must sum to the summed "
                           f"sites of its saved posterior (posterior/{i}/predict), to {SUMMED_RTOL:g} of their "
                           "largest entry")

    def _orders(self, get, n_data):
        flags, positions = get.list("orders"), get.list("positions")
        self.check(len(flags) == len(n_data) and all(isinstance(f, bool) for f in flags), "__meta__.orders",
                   f"must be {len(n_data)} booleans")
        self.check(len(positions) == len(n_data) and all(_is_int(p) and 0 <= p <= n for p, n in zip(positions, n_data)),
                   "__meta__.positions", f"must be {len(n_data)} integers, each within its factor's data size")
        orders = []
        for k, (flag, n) in enumerate(zip(flags, n_data)):
            if not flag:
                orders.append(None)
                continue
            order = self.array(f"orders/{k}")
            self.check(order.shape == (n,) and np.array_equal(np.sort(order), np.arange(n)), f"orders/{k}",
                       f"must be a permutation of range({n})")
            orders.append(order)
        return orders, positions

    def _rng(self, value):
        rng = np.random.default_rng()
        self.check(isinstance(value, dict) and value.get("bit_generator") == type(rng.bit_generator).__name__,
                   "__meta__.rng", f"must be a {type(rng.bit_generator).__name__} state; got {value!r}"[:300])
        try:
            rng.bit_generator.state = value
        except Exception as err:
            self.fail("__meta__.rng", f"is not a valid random state ({type(err).__name__}: {err})")
        return rng

    def _controller(self, spec):
        entry = "__meta__.controller"
        _exactly(self, spec, _CONTROLLER_KEYS, entry)
        get = _MetaGetter(self, spec, entry)
        kind, params, rule_state = get.str("rule_kind"), get.dict("rule_params"), get.dict("rule_state")
        if kind in RULES:
            try:
                rule = RULES[kind](**params)
                if set(rule.params()) != set(params):
                    raise ValueError(f"its parameters must be {sorted(rule.params())}")
                rule_state = rule.check_state(rule_state)
            except (TypeError, ValueError) as err:
                self.fail(entry, f"holds a step state that does not suit its rule {kind}({params}): {err}")
        gains = self.array("controller/gains", finite=False)
        self.check(gains.ndim == 1 and gains.shape[0] <= GAIN_WINDOW and not np.any(np.isinf(gains)),
                   "controller/gains", f"must hold at most {GAIN_WINDOW} finite gains (NaN for extrapolated steps)")
        mode = get.str("accelerator")
        depth = get.int("accelerator_depth", maximum=64)
        failures = get.int("accelerator_failures", maximum=62)
        rest = get.int("accelerator_rest", maximum=2 ** failures - 1 if failures else 0)
        accelerator = None
        if mode in ("empty", "history"):
            self.check(depth >= 1, f"{entry}.accelerator_depth", "must be at least 1 when acceleration is on")
            accelerator = AndersonAccelerator(depth)
            if mode == "history":
                accelerator.set_state(self._accelerator_history(depth))
        else:
            self.check(mode == "off", f"{entry}.accelerator", f"must be 'off', 'empty' or 'history'; got {mode!r}")
        steps = self.array("controller/steps", finite=False)
        self.check(steps.shape == gains.shape and not np.any((steps < 0) | (steps > 1)), "controller/steps",
                   f"must hold one step size in [0, 1] (NaN: extrapolated) per gain, shape {gains.shape}")
        divergence = self.array("controller/divergence", finite=False)
        self.check(divergence.shape == (1,) and not np.isinf(divergence[0]) and not divergence[0] < 0.0,
                   "controller/divergence", "must hold one divergence >= 0 (NaN: none pending)")
        divergence = None if np.isnan(divergence[0]) else float(divergence[0])
        return ControllerState(rule_state, kind, params, gains.tolist(), get.bool("plain_next"), accelerator,
                               rest, failures, divergence, steps.tolist())

    def _accelerator_history(self, depth):
        history = {key: self.array(f"accelerator/{key}") for key in _ACCELERATOR_PARTS}
        size = history["last_f"].shape[0] if history["last_f"].ndim == 1 else -1
        for key in ("last_f", "last_g"):
            self.check(history[key].shape == (size,), f"accelerator/{key}", f"must have shape ({size},)")
        for key in ("delta_f", "delta_g"):
            self.check(history[key].shape == (depth, size), f"accelerator/{key}", f"must have shape ({depth}, {size})")
        counters = history["counters"]
        self.check(counters.shape == (2,) and 0 <= counters[0] <= depth and 0 <= counters[1] < depth,
                   "accelerator/counters", f"must be two counters in [0, {depth}] and [0, {depth})")
        return history

    def _hyper(self, spec, iteration):
        """The search state, and by block which hyperparameters are logs (``iteration``: the fit's count)."""
        _exactly(self, spec, {"names", "log_scale"}, "__meta__.hyper")
        names = spec["names"]
        self.check(isinstance(names, dict) and all(isinstance(n, list) and n and all(isinstance(x, str) for x in n)
                                                   for n in names.values()),
                   "__meta__.hyper.names", "must map each learning block to its parameter names")
        log_scale = spec["log_scale"]
        self.check(isinstance(log_scale, dict) and set(log_scale) == set(names)
                   and all(isinstance(flags, list) and len(flags) == len(names[b])
                           and all(isinstance(x, bool) for x in flags) for b, flags in log_scale.items()),
                   "__meta__.hyper.log_scale", "must map each learning block to one true/false per parameter name")
        log_scale = {b: tuple(flags) for b, flags in log_scale.items()}
        theta = {}
        for i, (b, n) in enumerate(names.items()):
            theta[b] = self.array(f"hyper/theta/{i}")
            self.check(theta[b].shape == (len(n),), f"hyper/theta/{i}", f"must have shape ({len(n)},)")
        evaluations = []
        if "hyper/evaluations/theta" in self.manifest or "hyper/evaluations/value" in self.manifest:
            size = sum(len(n) for n in names.values())
            points, gradients = self.array("hyper/evaluations/theta"), self.array("hyper/evaluations/gradient")
            values = self.array("hyper/evaluations/value", finite=False)
            count = values.shape[0] if values.ndim == 1 else -1
            self.check(count >= 1 and not np.any(np.isnan(values) | (values == -np.inf)), "hyper/evaluations/value",
                       "must be a 1-D array of objective values (finite, or +inf at invalid points)")
            for key, a in (("theta", points), ("gradient", gradients)):
                self.check(a.shape == (count, size), f"hyper/evaluations/{key}", f"must have shape ({count}, {size})")
            evaluations = [(points[j], float(values[j]), gradients[j]) for j in range(count)]
        moments = {}
        for i, (b, n) in enumerate(names.items()):
            key = f"hyper/moments/{i}"
            if key in self.manifest:
                moments[b] = self.array(key)
                self.check(moments[b].shape == (2, len(n)) and np.all(moments[b][1] >= 0.0), key,
                           f"must hold Adam's two moment estimates, shape (2, {len(n)}), the second >= 0")
                moments[b] = (moments[b][0], moments[b][1])
        steps = 0
        if moments or "hyper/adam_steps" in self.manifest:
            steps = self.array("hyper/adam_steps")
            # one Adam step per minibatch sweep at most, so never more steps than iterations
            self.check(steps.shape == (1,) and 1 <= steps[0] <= iteration and bool(moments), "hyper/adam_steps",
                       f"must be one count in [1, {iteration}] (at most one Adam step per iteration, and the fit "
                       "has run __meta__.iteration iterations), saved with Adam's moments")
            steps = int(steps[0])
        return HyperState(theta, evaluations, moments, steps), log_scale

    def _views(self, spec, sites):
        self.check(len(spec) == len(sites), "__meta__.site_views", f"must have one entry per factor ({len(sites)})")
        views = []
        for k, (view, by_block) in enumerate(zip(spec, sites)):
            entry = f"__meta__.site_views[{k}]"
            self.check(isinstance(view, list) and len(view) == 2, entry, "must be [kind, block]")
            kind, block = view
            if kind == "gaussian":
                self.check(block in by_block and len(by_block[block]) >= 2, entry,
                           f"names block {block!r}, which has no Gaussian sites in factor {k}")
                views.append(GaussianSiteView(by_block, block))
            else:
                self.check(kind == "raw" and block is None, entry, f"must be ['gaussian', block] or ['raw', null]; "
                                                                   f"got {view!r}")
                views.append(SiteView(by_block))
        return views

    def _timings(self, spec):
        _exactly(self, spec, {"total", "per_iteration"}, "__meta__.timings")
        total, per = spec["total"], spec["per_iteration"]
        self.check(_is_number(total) and total >= 0 and isinstance(per, list)
                   and all(_is_number(t) and t >= 0 for t in per), "__meta__.timings",
                   "must hold non-negative seconds")
        return {"total": float(total), "per_iteration": [float(t) for t in per]}


class ArchiveReader(_Reader):
    """Reads a file of :func:`write_archive` (a context manager): its content, checked arrays and fits.

    Parameters
    ----------
    path : str or os.PathLike
    fmt : str
        The format the file must have.
    what : str
        What the file holds, for messages (e.g. ``"estimator"``).

    Attributes
    ----------
    content : JSON value
        The ``content`` entry as written.
    """

    def __init__(self, path, fmt, what):
        super().__init__(path)
        try:
            meta = self.meta(fmt, {"format", "arrays", "content", "fits"}, what,
                             hint=f"a fit file or another efvi file cannot be read as an {what} file")
            self.check(isinstance(meta["fits"], dict) and all(isinstance(m, dict) for m in meta["fits"].values()),
                       "__meta__.fits", "must map each fit's name to its metadata")
        except BaseException:
            self.data.close()
            raise
        self.content, self.fits = meta["content"], meta["fits"]

    def fit(self, name):
        """The fit stored as ``name``, read and checked by the fit reader (a :class:`FitResult`)."""
        self.check(name in self.fits, "__meta__.fits", f"must hold a fit named {name!r}; it holds "
                                                       f"{sorted(self.fits)}")
        prefix = f"fits/{name}/"
        manifest = {key[len(prefix):]: spec for key, spec in self.manifest.items() if key.startswith(prefix)}
        self.read |= {prefix + key for key in manifest}
        meta = dict(self.fits[name], arrays=manifest)
        return _Reader(f"{self.path} (its fit {name!r})", _Prefixed(self.data, prefix), meta).result()

    def finish(self):
        """Raise a FitFileError for any array that was not read (not part of the content)."""
        for key in sorted(set(self.manifest) - self.read):
            self.fail(key, "is not part of this file's content")


class _Prefixed:
    """The members of an open ``.npz`` archive under ``prefix``, by their names without it."""

    def __init__(self, data, prefix):
        self.data, self.prefix = data, prefix
        self.files = [key[len(prefix):] for key in data.files if key.startswith(prefix)]

    def __getitem__(self, key):
        return self.data[self.prefix + key]


class _MetaGetter:
    """Typed access to a metadata object; a missing key or a wrong type is a FitFileError."""

    def __init__(self, reader, spec, where="__meta__"):
        self.reader, self.spec, self.where = reader, spec, where

    def _get(self, key, ok, expected):
        if key not in self.spec:
            self.reader.fail(f"{self.where}.{key}", "is missing")
        value = self.spec[key]
        if not ok(value):
            self.reader.fail(f"{self.where}.{key}", f"must be {expected}; got {value!r}"[:300])
        return value

    def int(self, key, maximum=2 ** 62):
        return self._get(key, lambda v: _is_int(v) and 0 <= v <= maximum, f"an integer in [0, {maximum}]")

    def bool(self, key):
        return self._get(key, lambda v: isinstance(v, bool), "true or false")

    def str(self, key):
        return self._get(key, lambda v: isinstance(v, str), "a string")

    def list(self, key):
        return self._get(key, lambda v: isinstance(v, list), "a list")

    def dict(self, key):
        return self._get(key, lambda v: isinstance(v, dict), "an object")


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)


def _exactly(reader, spec, keys, entry):
    """``spec`` must be an object with exactly ``keys``."""
    reader.check(isinstance(spec, dict), entry, "must be an object")
    for key in sorted(keys - set(spec)):
        reader.fail(f"{entry}.{key}", "is missing")
    for key in sorted(set(spec) - keys):
        reader.fail(f"{entry}.{key}", "is not a known entry")

