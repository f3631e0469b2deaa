"""efvi's files: one ``.npz`` of plain arrays plus one JSON entry ``__meta__``, written atomically and read back
with checks.

:func:`write` writes to a temporary file beside the target and renames it over
the target only when the write is complete, so a failed write (a full disk)
leaves the previous file intact.  :class:`CheckedReader` opens such a file
without unpickling anything, checks the format its metadata names and that the
metadata lists exactly the arrays in the file (dtype and shape), and reads each
array checked against that list; every failure is a :class:`FitFileError`
naming the file, the entry and the problem.  The fit reader
(:mod:`efvi.inference._fit_reader`) and the reader of files that embed fits
(:class:`efvi.inference._fitfile.ArchiveReader`) build on it.
"""

import contextlib
import json
import os
import tempfile

import numpy as np

from ..expfam.checks import SYMMETRY_RTOL, is_symmetric


class FitFileError(ValueError):
    """A fit file that cannot be read back: the message names the file, the entry and what is wrong."""


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


class CheckedReader:
    """Reads a file of :func:`write` entry by entry, checking each; each failure is a FitFileError naming the entry.

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

    def meta(self, fmt, keys, what, hint):
        """The checked metadata of a file of format ``fmt`` with exactly the entries ``keys``."""
        meta = self.given_meta if self.given_meta is not None else self._json_meta(what)
        if meta.get("format") != fmt:
            raise FitFileError(f"{self.path}: not an efvi {what} file of format {fmt!r} "
                               f"(format {meta.get('format')!r}; {hint})")
        exactly(self, meta, keys, "__meta__")
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
                   and all(is_int(n) and n >= 0 for n in spec["shape"]),
                   f"__meta__.arrays[{key!r}]", f"must give a dtype float64 or int64 and a shape; got {spec!r}")
        a = self._raw(key)
        self.check(str(a.dtype) == spec["dtype"], key, f"must have dtype {spec['dtype']}; got {a.dtype}")
        self.check(list(a.shape) == spec["shape"], key, f"must have shape {tuple(spec['shape'])}; got {a.shape}")
        if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            self.fail(key, "must hold finite numbers; it holds NaN or inf")
        return a

    def check_symmetric(self, a, entry):
        """Fail unless the matrix ``a`` is symmetric to ``SYMMETRY_RTOL`` of its largest entry (rounding only)."""
        if not np.all(is_symmetric(a)):
            off = float(np.max(np.abs(a - np.swapaxes(a, -1, -2))))
            self.fail(entry, f"must be a symmetric matrix (to {SYMMETRY_RTOL:g} of its largest entry, "
                             f"{float(np.max(np.abs(a))):.6g}); it is off by {off:.3g}")


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def exactly(reader, spec, keys, entry):
    """``spec`` must be an object with exactly ``keys``."""
    reader.check(isinstance(spec, dict), entry, "must be an object")
    for key in sorted(keys - set(spec)):
        reader.fail(f"{entry}.{key}", "is missing")
    for key in sorted(set(spec) - keys):
        reader.fail(f"{entry}.{key}", "is not a known entry")

