"""Saving and loading an estimator without pickle: its parameters and fitted state in an efvi file.

``estimator.save(path)`` writes one ``.npz`` file in the form of a fit file
(:meth:`efvi.inference.FitResult.save`: arrays plus JSON metadata, written to a
temporary file and renamed over ``path`` when complete, no pickle), holding

* the estimator's class (module and name) and its constructor parameters:
  numbers, strings, None, lists, tuples and dicts of them as JSON, numeric
  arrays as arrays, and two kinds of efvi object described by names and
  numbers: a kernel built from :mod:`efvi.models.gp.kernels` (its kinds and
  options as JSON, its hyperparameters as arrays) and a likelihood of
  :mod:`efvi.models.likelihoods` (:meth:`~efvi.models.likelihoods.Likelihood.spec`);
* its fitted attributes (the names ending in ``_``) the same way, plus label
  arrays (``classes_``, ``feature_names_in_``) as JSON lists, random
  generators by their state, the fit itself (``fit_result_``, stored whole as
  :meth:`~efvi.inference.FitResult.save` stores it, so that a GP's or Markov
  GP's posterior is rebuilt from its inputs, kernel and sites) and the
  posterior as a reference to its block in that fit.

``Class.load(path)`` checks that the file holds a ``Class``, that its
parameters are exactly the class's, that every entry has its expected form
(arrays finite and of the listed dtype and shape, the fit as a fit file is
checked), builds the estimator by calling its constructor with the saved
parameters, restores the fitted attributes and checks that they fit together
(shapes against ``n_features_in_`` and the number of classes or components);
every problem is an :class:`efvi.inference.FitFileError` naming the file and
the entry.  Nothing in a file is executed: classes, kernels and likelihoods are
looked up by name among efvi's own.  The loaded estimator predicts bit for bit
as the saved one.

What a file cannot hold raises a ``ValueError`` naming the parameter or
attribute when saving: a kernel or likelihood of your own (a ``Custom``
likelihood, a kernel subclass: code, not numbers), or any other object.
"""

import numpy as np

from ..inference import FitFileError, FitResult
from ..inference.result import open_archive, save_archive

FORMAT = "efvi-estimator-1"
"""The format name of estimator files."""

_CONTENT_KEYS = {"estimator", "params", "fitted"}


def class_name(cls):
    """``module.name`` of an estimator class, as stored in its files."""
    return f"{cls.__module__}.{cls.__qualname__}"


# ---------------------------------------------------------------------- saving
def save_estimator(estimator, path):
    """Write ``estimator`` to ``path`` (see the module notes); raises ValueError for what cannot be saved."""
    state = estimator._fitted_state()
    encoder = _Encoder({name: value for name, value in state.items() if isinstance(value, FitResult)})
    content = {
        "estimator": class_name(type(estimator)),
        "params": {name: encoder.encode(value, f"params/{name}", f"parameter {name!r}")
                   for name, value in estimator.get_params(deep=False).items()},
        "fitted": {name: encoder.encode(value, f"fitted/{name}", f"fitted attribute {name!r}")
                   for name, value in state.items()},
    }
    save_archive(path, FORMAT, encoder.arrays, content, encoder.fits)


class _Encoder:
    """Turns values into JSON, adding arrays to ``arrays``; ``fits`` are stored whole and referred to by name."""

    def __init__(self, fits):
        self.fits, self.arrays = fits, {}

    def encode(self, value, key, what):
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            value = value.item()
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float):
            return value if np.isfinite(value) else {"kind": "float", "value": repr(value)}
        if isinstance(value, (list, tuple)):
            return {"kind": type(value).__name__,
                    "items": [self.encode(v, f"{key}/{i}", f"{what}[{i}]") for i, v in enumerate(value)]}
        if isinstance(value, dict):
            if not all(isinstance(k, str) and "/" not in k for k in value):
                raise ValueError(f"{what} cannot be saved: a dict saves only with string keys (without '/'); "
                                 f"got keys {list(value)!r}"[:300])
            return {"kind": "dict", "items": {k: self.encode(v, f"{key}/{k}", f"{what}[{k!r}]") for k, v in value.items()}}
        if isinstance(value, np.ndarray):
            return self._array(value, key, what)
        if isinstance(value, FitResult):
            return {"kind": "fit", "name": next(name for name, fit in self.fits.items() if fit is value)}
        for name, fit in self.fits.items():
            for block, q in fit.posterior.items():
                if value is q:
                    return {"kind": "posterior", "fit": name, "block": block}
        if isinstance(value, np.random.Generator):
            return {"kind": "rng", "state": value.bit_generator.state}
        return self._efvi_object(value, key, what)

    def _array(self, value, key, what):
        if value.dtype.kind in "biuf":
            self.arrays[key] = value.astype(np.float64 if value.dtype.kind == "f" else np.int64)
            return {"kind": "array", "key": key, "dtype": value.dtype.str}
        labels = value.tolist() if value.ndim == 1 else None
        if labels is None or not all(isinstance(v, (str, int, float, bool)) for v in labels) \
                or value.dtype.kind not in "UO":
            raise ValueError(f"{what} cannot be saved: an array of dtype {value.dtype} and shape {value.shape} is "
                             "neither numbers nor a 1-D array of labels (strings, numbers)")
        return {"kind": "labels", "values": labels, "dtype": "object" if value.dtype.kind == "O" else value.dtype.str}

    def _efvi_object(self, value, key, what):
        from .gp.kernels import Kernel
        from .gp.prior import kernel_layout
        from .likelihoods import Likelihood

        if isinstance(value, Kernel):
            layout = kernel_layout(value, f"{key}/", self.arrays)
            if layout is None:
                raise ValueError(f"{what} cannot be saved: {value!r} is not built from efvi's kernels "
                                 "(efvi.models.gp.kernels), and a file holds numbers and names, never code; "
                                 "pass the kernel again after loading, or build it from efvi's kernels")
            return {"kind": "kernel", "layout": layout, "repr": repr(value), "key": key}
        if isinstance(value, Likelihood):
            try:
                return {"kind": "likelihood", "spec": value.spec()}
            except ValueError as err:
                raise ValueError(f"{what} cannot be saved: {err}") from None
        raise ValueError(f"{what} cannot be saved: a {type(value).__name__} is not something an efvi file holds "
                         "(numbers, strings, lists, tuples, dicts, numeric or label arrays, efvi kernels and "
                         "likelihoods)")


# ---------------------------------------------------------------------- loading
def load_estimator(cls, path):
    """The estimator of class ``cls`` saved at ``path``, checked (see the module notes)."""
    with open_archive(path, FORMAT, "estimator") as archive:
        content = archive.content
        archive.check(isinstance(content, dict) and set(content) == _CONTENT_KEYS, "__meta__.content",
                      f"must be an object with {sorted(_CONTENT_KEYS)}")
        saved, expected = content["estimator"], class_name(cls)
        if saved != expected:
            archive.fail("__meta__.content.estimator", f"says the file holds a {saved!r}, not a {expected!r}: "
                                                       "load it with that class's load")
        decoder = _Decoder(archive)
        params, fitted = content["params"], content["fitted"]
        archive.check(isinstance(params, dict) and isinstance(fitted, dict), "__meta__.content",
                      "must hold 'params' and 'fitted' as objects")
        names = set(cls._get_param_names())
        if set(params) != names:
            archive.fail("__meta__.content.params", f"must give exactly the parameters of {cls.__name__} "
                                                    f"{sorted(names)}; missing {sorted(names - set(params))}, "
                                                    f"unknown {sorted(set(params) - names)}")
        estimator = cls(**{name: decoder.decode(value, f"__meta__.content.params.{name}")
                           for name, value in params.items()})
        state = {name: decoder.decode(value, f"__meta__.content.fitted.{name}") for name, value in fitted.items()}
        archive.finish()
        if state:
            try:
                estimator._restore_fitted(state)
                estimator._check_fitted_state()
            except (ValueError, TypeError, KeyError, AttributeError, IndexError) as err:
                archive.fail("__meta__.content.fitted", f"does not describe a fitted {cls.__name__} "
                                                        f"({type(err).__name__}: {err})"[:600])
    return estimator


class _Decoder:
    """The inverse of :class:`_Encoder`, failing with a FitFileError for anything it did not write."""

    _SCALARS = (type(None), bool, int, float, str)

    def __init__(self, archive):
        self.archive, self.fits = archive, {}

    def decode(self, value, entry):
        if isinstance(value, self._SCALARS):
            return value
        kind = value.get("kind") if isinstance(value, dict) else None
        method = getattr(self, f"_{kind}", None) if kind in _KINDS else None
        if method is None:
            self.archive.fail(entry, f"must be a number, a string, null or an object with a known 'kind' "
                                     f"({', '.join(sorted(_KINDS))}); got {value!r}"[:300])
        fields = _KINDS[kind]
        if set(value) != fields | {"kind"}:
            self.archive.fail(entry, f"must be a {kind!r} object with {sorted(fields)}; got {sorted(value)}")
        return method(value, entry)

    def _float(self, value, entry):
        self.archive.check(value["value"] in ("inf", "-inf", "nan"), entry, "must hold 'inf', '-inf' or 'nan'")
        return float(value["value"])

    def _items(self, value, entry, kind):
        items = value["items"]
        self.archive.check(isinstance(items, kind), entry, f"must hold its items as a JSON {kind.__name__}")
        return items

    def _list(self, value, entry):
        return [self.decode(v, f"{entry}[{i}]") for i, v in enumerate(self._items(value, entry, list))]

    def _tuple(self, value, entry):
        return tuple(self._list(value, entry))

    def _dict(self, value, entry):
        return {k: self.decode(v, f"{entry}.{k}") for k, v in self._items(value, entry, dict).items()}

    def _array(self, value, entry):
        array = self.archive.array(value["key"]) if isinstance(value["key"], str) else None
        self.archive.check(array is not None, entry, "must name an array")
        dtype = _dtype(value["dtype"], "biuf")
        self.archive.check(dtype is not None, entry, f"must give a numeric dtype; got {value['dtype']!r}"[:300])
        converted = array.astype(dtype)
        self.archive.check(np.array_equal(converted, array), value["key"], f"must hold values of dtype {dtype}")
        return converted

    def _labels(self, value, entry):
        labels, dtype = value["values"], value["dtype"]
        self.archive.check(isinstance(labels, list) and all(isinstance(v, (str, int, float, bool)) for v in labels),
                           entry, "must hold a list of labels (strings or numbers)")
        dtype = object if dtype == "object" else _dtype(dtype, "U")
        self.archive.check(dtype is not None, entry, f"must give a string or object dtype; got {value['dtype']!r}"[:300])
        array = np.empty(len(labels), dtype=object) if dtype is object else np.array(labels, dtype=dtype)
        if dtype is object:
            array[:] = labels
        self.archive.check(array.tolist() == labels, entry, f"must hold labels that fit dtype {value['dtype']!r}")
        return array

    def _rng(self, value, entry):
        rng = np.random.default_rng()
        try:
            if not isinstance(value["state"], dict) or value["state"].get("bit_generator") != "PCG64":
                raise ValueError("not a PCG64 state")
            rng.bit_generator.state = value["state"]
        except (TypeError, ValueError, KeyError) as err:
            self.archive.fail(entry, f"must hold a PCG64 random state ({err})")
        return rng

    def _kernel(self, value, entry):
        from .gp.prior import kernel_from_layout

        self.archive.check(isinstance(value["key"], str), entry, "must give the name of its arrays")
        try:
            kernel = kernel_from_layout(value["layout"], self.archive.array, f"{value['key']}/")
        except FitFileError:
            raise
        except (ValueError, TypeError, KeyError) as err:
            self.archive.fail(entry, f"does not describe a kernel of efvi.models.gp.kernels ({err})"[:600])
        self.archive.check(repr(kernel) == value["repr"], entry, f"rebuilds the kernel {kernel!r}, not the saved "
                                                                 f"{value['repr']!r}"[:300])
        return kernel

    def _likelihood(self, value, entry):
        from .likelihoods import from_spec

        try:
            return from_spec(value["spec"])
        except ValueError as err:
            self.archive.fail(entry, f"does not describe a likelihood of efvi.models.likelihoods ({err})"[:600])

    def _fit(self, value, entry):
        name = value["name"]
        self.archive.check(isinstance(name, str), entry, "must name a fit")
        if name not in self.fits:
            self.fits[name] = self.archive.fit(name)
        return self.fits[name]

    def _posterior(self, value, entry):
        fit = self._fit({"name": value["fit"]}, entry)
        self.archive.check(value["block"] in fit.posterior, entry, f"names block {value['block']!r}, which the "
                                                                   f"fit does not have ({sorted(fit.posterior)})")
        return fit.posterior[value["block"]]


_KINDS = {"float": {"value"}, "list": {"items"}, "tuple": {"items"}, "dict": {"items"}, "array": {"key", "dtype"},
          "labels": {"values", "dtype"}, "rng": {"state"}, "kernel": {"layout", "repr", "key"}, "likelihood": {"spec"},
          "fit": {"name"}, "posterior": {"fit", "block"}}
"""Each encoded object's kind and its fields."""


def _dtype(name, kinds):
    """The numpy dtype named ``name`` if it is of one of ``kinds``, else None (a name is parsed, never run)."""
    try:
        dtype = np.dtype(name) if isinstance(name, str) else None
    except (TypeError, ValueError):
        return None
    return dtype if dtype is not None and dtype.kind in kinds else None


# ---------------------------------------------------------------------- checks of the restored state
def expect_array(estimator, name, shape, kind="f"):
    """Raise a ValueError unless ``estimator.<name>`` is an ndarray of that kind and shape (None: any length)."""
    value = getattr(estimator, name)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in kind or value.ndim != len(shape) or any(
            s is not None and s != n for s, n in zip(shape, value.shape)):
        got = f"an array of dtype {value.dtype} and shape {value.shape}" if isinstance(value, np.ndarray) \
            else f"a {type(value).__name__}"
        raise ValueError(f"{name} must be an array of shape {tuple(shape)}; got {got}")
    return value


def expect_number(estimator, name, positive=False):
    """Raise a ValueError unless ``estimator.<name>`` is a finite float (or int), positive if asked."""
    value = getattr(estimator, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) \
            or (positive and not value > 0):
        raise ValueError(f"{name} must be a finite{' positive' if positive else ''} number; got {value!r}")
    return value
