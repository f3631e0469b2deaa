r"""The log link: :math:`\mu = e^{a}`, the canonical link of the Poisson.

:math:`\log\mu = a`, with derivatives 1 and 0: a distribution's log density in
:math:`\log\mu` is its log density in :math:`a` (the compiler drops the chain
rule).  Entire; the log density grows like :math:`e^{a}` (``exponential``),
and Poisson, negative-binomial, Gamma and exponential log densities are
concave in :math:`a`.
"""

import numba
import numpy as np

from .._numba import NUMBA_OPTIONS

from ._link import Link, register_link


@numba.jit(**NUMBA_OPTIONS)
def log_mean(a):
    return a, 1.0, 0.0


LOG = register_link(Link(
    "log", "positive", log_mean, link=np.log, strip_half_width=np.inf, exponential=True,
    log_concave=frozenset({"poisson", "negative_binomial", "gamma"}),
))
