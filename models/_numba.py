"""Numba options shared by every compiled kernel in efvi.

One place decides how kernels are compiled (house style: numba options live in
one config module).  ``cache=True`` stores compiled code on disk (beside the
source, or wherever :mod:`efvi.expfam.numba_cache` finds a writable place) so
that a second process does not recompile; ``fastmath`` stays off so that NaN
and inf keep their IEEE meaning (missing observations are NaN).
"""

import os

from ..expfam.numba_cache import cache_enabled

NUMBA_OPTIONS = dict(nopython=True, cache=cache_enabled(os.path.dirname(__file__)), nogil=True, fastmath=False)
"""Keyword arguments for ``numba.jit`` used by every kernel."""
