r"""The compiled functions of one (distribution, link) pair, built from the two without copying maths.

A distribution with links (:mod:`._linked`) writes its log density and
conditional moments once, as inlined numba functions that take the link's
compiled functions as their first two arguments:

``log_lik(log_mean, log_complement, y, a, c, params) -> (ell, ell', ell'')``
    the :math:`a`-dependent part of :math:`\log p(y \mid a)` (see :mod:`._kernels`);
``moments(log_mean, log_complement, a, c, params) -> (E[y | a], Var[y | a])``,

and a link (:mod:`._link`) supplies ``log_mean`` and ``log_complement``.
:func:`pair_functions` binds the two into what every likelihood hands the
kernels: ``log_lik(y, a, c, params)`` and ``moments(a, c, params)`` (compiled
first-class functions for the shared kernels) and the pair's own expectations
kernel, with the functions inlined into the node loop (:mod:`._kernels`).

**Caching.**  Each of the three is a copy of a template below whose global
names (``family_log_lik``, ``log_mean``, ...) are bound to the pair's
functions, so that numba sees them as compile-time constants; a closure over
them would miss numba's on-disk cache in every new process (numba keys a
closure's cache entry on its pickled cells, and a compiled function pickles
with a per-process identity).  numba files a cache entry under the function's
qualified name and checks only the time stamp of the template's source file
(this one), so the name of each copy carries the pair and a fingerprint of the
bytecode of the distribution's and the link's functions: editing either
compiles the pair afresh (under a new name), and a second process loads it
from the cache.  As for every kernel, an edit of a shared helper
(:mod:`._math`, :mod:`._kernels`) needs the numba cache files of this folder
removed.
"""

import functools
import hashlib
import marshal
import sys
import types

import numba

from .._numba import NUMBA_OPTIONS

from ._kernels import expectations, uncached_copies

# the global names of the templates, bound per pair by _bind (None here: the templates are never called)
family_log_lik = family_moments = log_mean = log_complement = None
log_lik_copy = log_base_copy = wide_rule = None


def _log_lik_template(y, a, c, params):
    return family_log_lik(log_mean, log_complement, y, a, c, params)


def _moments_template(a, c, params):
    return family_moments(log_mean, log_complement, a, c, params)


def _expectations_template(mean, var, y, per_point, params, rule):
    return expectations(log_lik_copy, log_base_copy, wide_rule, mean, var, y, per_point, params, rule)


def _fingerprint(*functions):
    """A short hash of the bytecode of compiled functions (their Python functions' code objects)."""
    digest = hashlib.sha256()
    for function in functions:
        digest.update(marshal.dumps(function.py_func.__code__))
    return digest.hexdigest()[:12]


def _bind(template, name, **functions):
    """A copy of ``template`` named ``name`` whose globals ``functions`` are bound to the given values."""
    bound = types.FunctionType(template.__code__, dict(template.__globals__, **functions), name)
    bound.__qualname__ = name
    return bound


@functools.lru_cache(maxsize=None)
def pair_functions(family, link, wide_rule):
    """``(log_lik, moments, expectations_kernel)`` of a distribution with a link, compiled on first use.

    Parameters
    ----------
    family : tuple
        ``(name, log_lik, log_base, moments)`` of the distribution: its family name and its
        compiled functions (``log_lik`` and ``moments`` take the link's functions first).
    link : efvi.models.likelihoods._link.Link
    wide_rule : numba function
        The expectations kernel's rule for wide Gaussians (``_kernels.no_wide_rule`` if none).

    Returns
    -------
    log_lik : numba function ``(y, a, c, params) -> (ell, ell', ell'')``
    moments : numba function ``(a, c, params) -> (E[y | a], Var[y | a])``
    expectations_kernel : numba function ``(mean, var, y, per_point, params, rule) -> (E, dE/dm, dE/dv)``
    """
    name, family_log, family_base, family_mean_var = family
    stem = (f"{name}_{link.name}_"
            f"{_fingerprint(family_log, family_base, family_mean_var, link.log_mean, link.log_complement, wide_rule)}")
    link_functions = dict(log_mean=link.log_mean, log_complement=link.log_complement)
    log_lik = _bind(_log_lik_template, f"log_lik_{stem}", family_log_lik=family_log, **link_functions)
    moments = _bind(_moments_template, f"moments_{stem}", family_moments=family_mean_var, **link_functions)
    # a pair built from functions outside importable modules (a link written in a script or a notebook)
    # is not cached: its cache entry would refer to a module that a later process cannot import
    options = NUMBA_OPTIONS if all(_cached(f) for f in (family_log, family_base, family_mean_var, link.log_mean,
                                                          link.log_complement, wide_rule)) \
        else dict(NUMBA_OPTIONS, cache=False)
    log_lik = numba.jit(**options)(log_lik)
    copies = uncached_copies(log_lik, family_base)
    kernel = _bind(_expectations_template, f"expectations_{stem}", log_lik_copy=copies[0], log_base_copy=copies[1],
                   wide_rule=wide_rule)
    return log_lik, numba.jit(**options)(moments), numba.jit(**options)(kernel)


def _cached(function):
    """Whether a pair that calls this compiled function can be cached: it lives in an importable module file.

    A function defined in a script, a notebook or ``exec``'d code cannot be found
    again by a later process that loads the pair from the cache.
    """
    module = sys.modules.get(getattr(function.py_func, "__module__", None))
    return module is not None and module.__name__ != "__main__" and getattr(module, "__file__", None) is not None
