r"""The probit link: :math:`\mu = \Phi(a)`, the standard normal CDF.

.. math::

    \log\mu = \log\Phi(a), \quad (\log\mu)' = \lambda(a), \quad (\log\mu)'' = -\lambda(a)\,(a + \lambda(a)),

with :math:`\lambda = \phi / \Phi` the inverse Mills ratio, and
:math:`\log(1 - \mu) = \log\Phi(-a)` by symmetry; both from
:func:`._math.log_ndtr`, which stays accurate (no underflow, no cancellation)
far into the tails.  :math:`\log\Phi` is singular at the complex zeros of
:math:`\Phi`, :math:`|\mathrm{Im}\, a| > 2.7`.
"""

import numba
from scipy.special import ndtri

from .._numba import NUMBA_OPTIONS

from ._link import Link, register_link
from ._math import log_ndtr


@numba.jit(**NUMBA_OPTIONS)
def log_mean(a):
    log_cdf, mills, shifted = log_ndtr(a)
    return log_cdf, mills, -mills * shifted


@numba.jit(**NUMBA_OPTIONS)
def log_complement(a):
    log_cdf, mills, shifted = log_ndtr(-a)
    return log_cdf, -mills, -mills * shifted


PROBIT = register_link(Link(
    "probit", "probability", log_mean, link=ndtri, strip_half_width=2.0,
    log_concave=frozenset({"bernoulli", "binomial"}), log_complement=log_complement,
))
