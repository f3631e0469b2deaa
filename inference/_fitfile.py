"""Saved fits: one ``.npz`` file of arrays plus JSON metadata, written atomically and read back with checks.

The file holds everything a :class:`~efvi.inference._state.FitState` carries,
the posteriors and the site views, as plain arrays (never pickled objects) and
one JSON entry ``__meta__``.  The metadata lists every array with its dtype
and shape, so a reader knows exactly what to expect; :func:`load` checks each
array against that list and then against what it means (finite values, step
sizes in ``(0, 1]``, permutations, valid natural parameters, a step state that
suits its rule, and so on) and raises :class:`FitFileError` naming the file,
the entry and the problem.  Nothing in a file is executed.  The container (the
atomic writer and the checked reading of its arrays) is
:mod:`efvi.inference._archive`; the checks of a fit's entries are
:mod:`efvi.inference._fit_reader`; this module lays a fit out and is the
entry point of both directions.

:func:`save` writes to a temporary file beside the target and renames it over
the target only when the write is complete, so a failed save (a full disk)
leaves the previous file intact.

Other efvi objects that save themselves (the scikit-learn estimators) use the
same writer and checks: :func:`write_archive` stores their arrays, a JSON
``content`` entry and whole fits (each fit's arrays under ``fits/<name>/``
and its metadata under ``__meta__.fits``), and :class:`ArchiveReader` reads
them back, each embedded fit through the fit reader itself.
"""

import numpy as np

from ..expfam import ExponentialFamily
from ._archive import CheckedReader, write
from ._archive import FitFileError  # noqa: F401  (efvi.inference exports it from here)
from ._fit_reader import FORMAT, FitReader
from .factor import is_remote


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
def load(path, result_class):
    """Read a fit written by :func:`save` as a ``result_class``; raises :class:`FitFileError` for anything malformed."""
    with FitReader(path) as reader:
        return reader.result(result_class)


class ArchiveReader(CheckedReader):
    """Reads a file of :func:`write_archive` (a context manager): its content, checked arrays and fits.

    Parameters
    ----------
    path : str or os.PathLike
    fmt : str
        The format the file must have.
    what : str
        What the file holds, for messages (e.g. ``"estimator"``).
    result_class : type
        What :meth:`fit` returns (:class:`~efvi.inference.FitResult`).

    Attributes
    ----------
    content : JSON value
        The ``content`` entry as written.
    """

    def __init__(self, path, fmt, what, result_class):
        super().__init__(path)
        try:
            meta = self.meta(fmt, {"format", "arrays", "content", "fits"}, what,
                             hint=f"a fit file or another efvi file cannot be read as an {what} file")
            self.check(isinstance(meta["fits"], dict) and all(isinstance(m, dict) for m in meta["fits"].values()),
                       "__meta__.fits", "must map each fit's name to its metadata")
        except BaseException:
            self.data.close()
            raise
        self.content, self.fits, self.result_class = meta["content"], meta["fits"], result_class

    def fit(self, name):
        """The fit stored as ``name``, read and checked by the fit reader (a :class:`FitResult`)."""
        self.check(name in self.fits, "__meta__.fits", f"must hold a fit named {name!r}; it holds "
                                                       f"{sorted(self.fits)}")
        prefix = f"fits/{name}/"
        manifest = {key[len(prefix):]: spec for key, spec in self.manifest.items() if key.startswith(prefix)}
        self.read |= {prefix + key for key in manifest}
        meta = dict(self.fits[name], arrays=manifest)
        return FitReader(f"{self.path} (its fit {name!r})", _Prefixed(self.data, prefix), meta).result(
            self.result_class)

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
