"""Numba options shared by every compiled kernel in efvi.

One place decides how kernels are compiled (house style: numba options live in
one config module).  ``cache=True`` writes compiled code next to the source so
that a second process does not recompile; ``fastmath`` stays off so that NaN
and inf keep their IEEE meaning (missing observations are NaN).
"""

NUMBA_OPTIONS = dict(nopython=True, cache=True, nogil=True, fastmath=False)
"""Keyword arguments for ``numba.jit`` used by every kernel."""
