r"""Links: how a distribution's mean depends on the latent :math:`a`.

A likelihood is a distribution times a link: ``Bernoulli(link="probit")`` has
:math:`P(y = 1 \mid a) = \Phi(a)`, ``Poisson(link="softplus")`` has rate
:math:`\log(1 + e^a)`.  A link is one small piece, written once: its inverse
:math:`\mu = h(a)` (the mean as a function of the latent) in the form the
compiled log densities need,

.. math::

    \ell_\mu(a) = \log h(a), \qquad \ell_{1-\mu}(a) = \log(1 - h(a)),

each with its first two derivatives in :math:`a` (``log_mean`` and, for links
onto probabilities, ``log_complement``), compiled numba scalar functions
``a -> (value, d/da, d2/da2)``.  Logarithms, because every log density here is
a sum of their multiples (the Bernoulli's :math:`y \ell_\mu + (1 - y) \ell_{1-\mu}`,
the Poisson's :math:`y \ell_\mu - e^{\ell_\mu}`), and because they stay
accurate where :math:`\mu` or :math:`1 - \mu` underflow.  A distribution's
compiled log density takes the link's functions as arguments and applies the
chain rule itself (:func:`._math.chain`), so each (distribution, link) pair is
compiled from the two without copying maths (:mod:`._pairs`).

Besides the two functions a link declares

* ``domain``: ``"probability"`` (onto (0, 1), for Bernoulli and binomial) or
  ``"positive"`` (onto (0, inf), for Poisson, negative binomial, Gamma and
  exponential);
* ``link``: the link function :math:`g = h^{-1}` itself, vectorised numpy,
  for the IRLS start (``initial_latent`` is :math:`g` of a smoothed mean);
* ``strip_half_width``: :math:`\ell_\mu` and :math:`\ell_{1-\mu}` are analytic
  for :math:`|\mathrm{Im}\, a|` below it (it scales the quadrature ladder);
* ``exponential``: whether a log density grows like :math:`e^{a}` (the log and
  complementary log-log links): the engine then aims its first step from the
  prior at the data-informed sites (``Likelihood.exponential_link``);
* ``log_concave``: the distributions (by ``family`` name) whose log density
  stays concave in :math:`a` with this link.

Adding a link is one file: the two compiled functions (one for a positive
link) and a :func:`register_link` call beside them, imported in
``__init__.py``.  The registry is a plain dict (``LINKS``); a likelihood looks
its link up by name, and the contract tests pick up every registered link.
"""

from dataclasses import dataclass, field
from typing import Callable

import numba

from .._numba import NUMBA_OPTIONS

DOMAINS = ("probability", "positive")
"""The values a link maps the latent onto."""


@numba.jit(**NUMBA_OPTIONS)
def no_log_complement(a):
    """The ``log_complement`` of a positive link: there is no complement (NaN; never called)."""
    return float("nan"), float("nan"), float("nan")


@dataclass(frozen=True)
class Link:
    """A link: the inverse mean function in the form the compiled log densities need.

    Attributes
    ----------
    name : str
        The ``link=`` argument of the likelihoods that accept it.
    domain : {"probability", "positive"}
        What the mean ``h(a)`` may be.
    log_mean : numba function ``a -> (log h(a), d/da, d2/da2)``
    log_complement : numba function ``a -> (log(1 - h(a)), d/da, d2/da2)``
        For probability links; ``no_log_complement`` for positive ones.
    link : callable
        ``g = h^{-1}``, vectorised numpy: means to latents (the IRLS start).
    strip_half_width : float
        The log-mean functions are analytic for ``|Im a|`` below it.
    exponential : bool
        Whether a log density grows like ``exp(a)`` with this link.
    log_concave : frozenset of str
        Family names of the distributions whose log density stays concave in ``a``.
    """

    name: str
    domain: str
    log_mean: object
    link: Callable
    strip_half_width: float
    exponential: bool = False
    log_concave: frozenset = frozenset()
    log_complement: object = field(default=no_log_complement)

    def __repr__(self):
        return f"Link({self.name!r}, {self.domain})"

    def __reduce_ex__(self, protocol):
        # a registered link pickles by name: a likelihood unpickled in another process (a Dask worker,
        # multiprocessing) then holds the registered object its closed forms test for by identity
        if LINKS.get(self.name) is self:
            return (registered_link, (self.name,))
        return super().__reduce_ex__(protocol)


LINKS = {}
"""Every registered link by name, filled by :func:`register_link` in each link's module."""


def register_link(link):
    """Add ``link`` to ``LINKS`` and return it.

    Raises
    ------
    ValueError
        If the domain is unknown, a probability link has no ``log_complement``,
        or the name is taken.
    """
    if link.domain not in DOMAINS:
        raise ValueError(f"link domain must be one of {DOMAINS}; got {link.domain!r}")
    if link.domain == "probability" and link.log_complement is no_log_complement:
        raise ValueError(f"probability link {link.name!r} needs a log_complement")
    if link.name in LINKS:
        raise ValueError(f"a link named {link.name!r} is already registered")
    LINKS[link.name] = link
    return link


def registered_link(name):
    """The link registered as ``name`` (what a registered link unpickles to)."""
    return LINKS[name]


def links_onto(domain):
    """Names of the registered links onto ``domain``, in registration order."""
    return tuple(name for name, link in LINKS.items() if link.domain == domain)


def get_link(name, domain, owner):
    """The registered link ``name`` onto ``domain``, for the likelihood class named ``owner``.

    Raises
    ------
    ValueError
        Naming ``link``, the links ``owner`` accepts and what was received.
    """
    link = LINKS.get(name) if isinstance(name, str) else None
    if link is None or link.domain != domain:
        accepted = ", ".join(repr(n) for n in links_onto(domain))
        raise ValueError(f"link must be one of {accepted} for {owner}; got {name!r}")
    return link
