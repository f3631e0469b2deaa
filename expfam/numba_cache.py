"""Where numba caches efvi's compiled kernels: decided before any kernel is compiled.

Public within efvi, so that each package's one numba-options module can use it
(``efvi.expfam._kernels`` and ``efvi.models._numba``); not part of the API for
users, except :class:`NumbaCacheWarning`.

With ``cache=True``, numba stores a kernel's machine code in the first writable
one of

1. ``NUMBA_CACHE_DIR`` (read into ``numba.config.CACHE_DIR`` when numba is
   imported),
2. efvi's own cache folder, :func:`efvi_cache_dir` (``~/.cache/efvi/numba``, or
   ``$XDG_CACHE_HOME/efvi/numba``): outside the installed package, so the
   kernels survive a reinstall (they are stamped by a hash of their source file),
3. ``__pycache__`` beside the kernel's source file,
4. a user-wide cache directory (``~/.cache/numba``, or ``$XDG_CACHE_HOME/numba``),

and decorating the kernel raises ``RuntimeError: cannot cache function ...: no
locator available`` when none is, which made ``import efvi`` fail wherever the
installation is read-only and the home directory is not writable (a container
running as an unprivileged user, a shared cluster installation).  The choice is
made once per kernel, when it is decorated, so :func:`cache_enabled` runs first:
if none of the four places will do, it points ``numba.config.CACHE_DIR`` at a
directory of this user's under the temporary directory, where later processes
find the kernels again, or, failing that too, turns caching off.  Either way it
warns once per process with :class:`NumbaCacheWarning`; setting
``NUMBA_CACHE_DIR`` to a writable directory removes the warning.

Compiling rather than loading from the cache is announced: every kernel efvi
compiles is logged at INFO on the ``efvi`` logger (with its time), and the
first time compiling takes more than :data:`COMPILE_NOTICE_SECONDS` in a
process, one line says so at WARNING level (Python prints it on stderr unless
logging is configured otherwise; ``logging.getLogger("efvi").setLevel("ERROR")``
silences it).  The first fit after installing efvi compiles for a few seconds;
later processes load the kernels from the cache.
"""

import functools
import hashlib
import logging
import os
import stat
import tempfile
import time
import warnings

import numba
import numba.core.caching
import numba.core.event
from numba.misc.appdirs import AppDirs

COMPILE_NOTICE_SECONDS = 1.0
"""Compile time (seconds, summed over this process) after which the one-time notice is logged."""

FIRST_FIT_COMPILE_SECONDS = (5, 20)
"""The range the notice gives for the compilation of a first fit: measured from an empty cache on a
two-core machine (``benchmarks/bench_compile.py``: a GLM about 6 s, a Markov GP 8-11 s, more on a busy
machine)."""

logger = logging.getLogger(__name__.split(".")[0])


class _CompileListener(numba.core.event.Listener):
    """Times numba's compilations (cache misses only: a kernel loaded from the cache is not compiled)."""

    def __init__(self, package):
        self.package = package
        self.depth = 0
        self.started = 0.0
        self.total = 0.0
        self.announced = False

    def on_start(self, event):
        if self.depth == 0:
            self.started = time.perf_counter()
        self.depth += 1

    def on_end(self, event):
        self.depth -= 1
        function = getattr(event.data.get("dispatcher"), "py_func", None)
        module = getattr(function, "__module__", "") or ""
        if self.depth or not (module == self.package or module.startswith(self.package + ".")):
            return
        seconds = time.perf_counter() - self.started
        self.total += seconds
        logger.info("compiled numba kernel %s.%s in %.2f s (not found in the cache)",
                    module, function.__qualname__, seconds)
        if self.total > COMPILE_NOTICE_SECONDS and not self.announced:
            self.announced = True
            logger.warning("efvi: compiling numba kernels on first use (%.1f s so far; the first fit of each kind "
                           "of model compiles for about %d-%d s, once: the kernels are cached on disk for later "
                           "runs and reinstalls)", self.total, *FIRST_FIT_COMPILE_SECONDS)


def readonly(array):
    """A read-only view of ``array`` (no copy), to pass a kernel's inputs as one type.

    numba compiles a kernel once per type of its arguments, and a read-only
    array (a family's frozen parameters) is another type than a writable one:
    passing every input of a kernel read-only compiles it once instead of
    once per mix (the refined solves took about a second each).

    Parameters
    ----------
    array : ndarray

    Returns
    -------
    ndarray
        A view of ``array`` with ``flags.writeable`` False.
    """
    view = array.view()
    view.flags.writeable = False
    return view


_compile_listener = _CompileListener(logger.name)
numba.core.event.register("numba:compile", _compile_listener)

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def efvi_cache_dir():
    """efvi's own folder for compiled kernels, outside the installed package: ``~/.cache/efvi/numba``.

    (``$XDG_CACHE_HOME/efvi/numba`` where that is set; the platform's user cache
    folder elsewhere.)  A reinstall of efvi replaces the package's folders, and
    with them any ``__pycache__`` inside; kernels cached here survive it and are
    loaded again as long as their source file is unchanged (a hash of its contents).
    """
    return os.path.join(AppDirs(appname="efvi", appauthor=False).user_cache_dir, "numba")


@functools.lru_cache(maxsize=None)
def _content_hash(path, st_mtime, st_size):
    with open(path, "rb") as source:
        return hashlib.sha256(source.read()).hexdigest()


class _EfviCacheLocator(numba.core.caching._CacheLocator):
    """numba's cache locator for efvi's own kernels: :func:`efvi_cache_dir`, stamped by content.

    numba asks its locators in turn for every function compiled with
    ``cache=True``; this one answers for source files of efvi only (after
    ``NUMBA_CACHE_DIR``'s, which stays first) and for nothing else, so other
    packages' caches are where numba puts them.  The source stamp is a hash of
    the file's contents rather than its modification time, so that a reinstall
    of the same files finds its kernels.
    """

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(efvi_cache_dir(), self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        info = os.stat(self._py_file)
        return _content_hash(self._py_file, info.st_mtime, info.st_size)

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not (os.path.isfile(py_file) and os.path.abspath(py_file).startswith(_PACKAGE_DIR + os.sep)):
            return None
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:
            return None
        return locator


def _register_locator():
    """Ask :class:`_EfviCacheLocator` right after numba's ``NUMBA_CACHE_DIR`` locator (once per process)."""
    impl = getattr(numba.core.caching, "CacheImpl", None) or getattr(numba.core.caching, "_CacheImpl", None)
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list) or _EfviCacheLocator in classes:
        return
    first = classes[0] if classes and "UserProvided" in classes[0].__name__ else None
    classes.insert(1 if first is not None else 0, _EfviCacheLocator)


_register_locator()


class NumbaCacheWarning(UserWarning):
    """numba has no writable cache directory: efvi's kernels are cached in a temporary one, or not at all."""


def cache_enabled(package_dir):
    """Whether the numba kernels under ``package_dir`` can be compiled with ``cache=True``.

    Checks numba's three cache locations (see the module docstring) for every
    source folder under ``package_dir``.  When none is writable, falls back
    (once per process, with a :class:`NumbaCacheWarning`) to a private
    directory under the temporary directory, which becomes
    ``numba.config.CACHE_DIR`` for the rest of the process, or to no caching.

    Parameters
    ----------
    package_dir : str
        The folder of the package whose kernels are to be compiled.

    Returns
    -------
    bool
        The value to pass as ``numba.jit(cache=...)``.
    """
    if _writable(numba.config.CACHE_DIR) or _writable(efvi_cache_dir()):
        return True
    if all(_writable(os.path.join(folder, "__pycache__")) for folder in _source_folders(package_dir)):
        return True
    if _writable(_user_wide_dir()):
        return True
    fallback = _fallback_dir()
    if fallback is None:
        return False
    numba.config.CACHE_DIR = fallback  # again at each call: numba resets its config when NUMBA_* variables change
    return True


@functools.cache
def _fallback_dir():
    """The private temporary cache directory, or None for no caching; warns (once per process) either way."""
    efvi_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    places = [efvi_cache_dir(), os.path.join(efvi_dir, "**", "__pycache__"), _user_wide_dir()]
    if numba.config.CACHE_DIR:
        places.insert(0, numba.config.CACHE_DIR)
    unset = "" if numba.config.CACHE_DIR else "NUMBA_CACHE_DIR is unset and "
    problem = (f"efvi: numba has no writable cache directory for compiled kernels: {unset}none of "
               f"{', '.join(places)} is writable.")
    fix = "Set NUMBA_CACHE_DIR to a writable directory to choose where they are cached."
    fallback = _private_temp_dir()
    if fallback is None:
        warnings.warn(f"{problem} Compiling without a cache, so every process compiles the kernels again "
                      f"(seconds at the first fit). {fix}", NumbaCacheWarning)
    else:
        warnings.warn(f"{problem} Caching them in {fallback} instead, as numba.config.CACHE_DIR, which applies "
                      f"to every numba function compiled later in this process. {fix}", NumbaCacheWarning)
    return fallback


def _writable(folder):
    """Whether numba can cache in ``folder``: its own test, create the folder and a temporary file in it."""
    if not folder:
        return False
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _user_wide_dir():
    """numba's user-wide cache directory (the one its ``UserWideCacheLocator`` uses)."""
    return AppDirs(appname="numba", appauthor=False).user_cache_dir


def _source_folders(package_dir):
    """``package_dir`` and its subfolders that hold Python files (numba caches beside each)."""
    return [folder for folder, subfolders, files in os.walk(package_dir)
            if os.path.basename(folder) != "__pycache__" and any(name.endswith(".py") for name in files)]


def _private_temp_dir():
    """A cache directory under the temporary directory that only this user can write, or None.

    The name is fixed so that later processes reuse the cache.  numba's cache
    files are pickles, so a directory that someone else owns, or may write to,
    is refused rather than loaded from.
    """
    suffix = f"-{os.getuid()}" if hasattr(os, "getuid") else ""  # Windows: the temporary directory is per user
    try:
        folder = os.path.join(tempfile.gettempdir(), f"efvi-numba-cache{suffix}")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return None
    return folder if _writable(folder) else None
