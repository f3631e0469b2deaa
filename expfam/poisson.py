"""The Poisson family on counts :math:`z \\in \\{0, 1, 2, \\dots\\}`.

With rate :math:`r > 0`,

.. math::

    q(z) = \\frac{r^z e^{-r}}{z!}
         = h(z) \\exp\\big(\\lambda z - A(\\lambda)\\big),
    \\qquad \\phi(z) = z, \\qquad \\lambda = \\log r, \\qquad
    A(\\lambda) = e^\\lambda, \\qquad h(z) = \\frac{1}{z!},

so :math:`\\mu = r` and :math:`F = r`.  ``natural_to_mean``, ``mean_to_natural``
and ``fisher`` are the derived maps of :class:`~efvi.expfam.ExponentialFamily`
(autograd of :math:`A`, and Newton's method, which from :math:`\\lambda = 0`
reaches :math:`\\log r` to about 1e-16 absolute).  ``logpdf`` is ``-inf`` at any
point that is not a non-negative integer.

Entropy.  The base measure is not constant, and :math:`E_q[\\log h] = -E \\log z!`
has no closed form: it and the entropy are sums over the counts within
``WINDOW_SDS`` standard deviations (plus ``WINDOW_PAD``) of the rate, where the
terms left out are below 1e-30 of the sum, for rates below ``SERIES_FROM``, and
the asymptotic series

.. math::

    H(r) = \\tfrac12 \\log(2\\pi e r) - \\frac{1}{12 r} - \\frac{1}{24 r^2}
           - \\frac{19}{360 r^3} - \\frac{9}{80 r^4} + O(r^{-5})

above (the next term, about :math:`-0.34 r^{-5}`, is below 4e-16 there);
:math:`E \\log z! = H - r + r \\log r`.  The generic entropy
:math:`A - \\lambda\\mu - E\\log h = r - r \\log r + E \\log z!` would subtract
numbers of size :math:`r \\log r` (losing :math:`\\epsilon\\, r \\log r`: 3e-9 at
:math:`r = 10^6`), so the entropy sums :math:`-\\sum_k p_k \\log p_k` with

.. math::

    -\\log p_k = r f(k / r) + S(k), \\qquad f(t) = t \\log t - t + 1, \\qquad
    S(k) = \\log k! - k \\log k + k = \\tfrac12 \\log(2\\pi k) + R(k)

(:math:`S(0) = 0`, :math:`R` Binet's function), both terms non-negative and free
of cancellation (:mod:`efvi.expfam._bregman`): a few :math:`\\epsilon` relative.
The generic route is its test.

KL.  The Bregman divergence is
:math:`KL(q \\| p) = r_q\\,(e^d - 1 - d)`, :math:`d = \\lambda_p - \\lambda_q`,
evaluated as :math:`r_q\\, m(e^d)` (:func:`~efvi.expfam._bregman.log_gap`, which
keeps its digits for nearby rates, where the difference of the generic route
cancels).
"""

import functools

import autograd.numpy as anp
import numpy as np
from scipy import special

from ._base import ExponentialFamily
from ._bregman import binet, log_gap, xlogx_gap
from ._registry import register
from .checks import check_positive

SERIES_FROM = 1e3
"""Rates from which the entropy is the asymptotic series; below it, a sum over counts."""
WINDOW_SDS = 10.0
"""The sums run over counts within this many standard deviations of the rate (plus ``WINDOW_PAD``)."""
WINDOW_PAD = 30
_SERIES = np.array([-1.0 / 12.0, -1.0 / 24.0, -19.0 / 360.0, -9.0 / 80.0])
"""Coefficients of ``r^-1 .. r^-4`` in the entropy's asymptotic series."""
_CHUNK = 1 << 20
"""Entries of the ``(rates, counts)`` table summed at a time."""


@register
class Poisson(ExponentialFamily):
    """A batch of Poisson distributions with rates ``rate`` (pmf ``rate^z exp(-rate) / z!``).

    Parameters
    ----------
    rate : array_like, shape ``batch``
        Rates ``r > 0`` (the mean and the variance).

    Raises
    ------
    ValueError
        Naming ``rate`` if it is not finite and positive.

    Notes
    -----
    Natural parameters ``(log rate,)`` of shape ``batch``; samples are
    non-negative integer counts (as floats) of shape ``batch``.  See the module
    docstring for the maths.
    """

    name = "poisson"
    param_names = ("log rate",)
    event_ndims = (0,)
    sample_ndim = 0

    def __init__(self, rate):
        self._natural = Poisson.from_natural((np.log(check_positive(rate, "rate")),), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ the minimal contract
    @classmethod
    def sufficient_stats(cls, z):
        """``(z,)`` for counts ``z`` of any shape."""
        return (np.asarray(z, dtype=float),)

    @classmethod
    def log_base_measure(cls, z):
        """``-log z!``, shape ``z.shape``."""
        return -special.gammaln(np.asarray(z, dtype=float) + 1.0)

    @classmethod
    def log_partition(cls, natural):
        """``exp(lambda)``, the rate; autograd-differentiable, shape ``batch``."""
        return anp.exp(natural[0])

    @classmethod
    def is_valid_natural(cls, natural):
        """The rate ``exp(natural[0])`` is positive and finite in float64; shape ``batch``."""
        with np.errstate(over="ignore"):
            rate = np.exp(np.asarray(natural[0], dtype=float))
        return (rate > 0.0) & (rate < np.inf)

    @classmethod
    def is_valid_mean(cls, mean):
        """``mean[0]`` (the rate) is > 0; shape ``batch``."""
        return np.asarray(mean[0]) > 0.0

    @classmethod
    def in_support(cls, z):
        """``z`` is a non-negative integer; shape ``z.shape``."""
        z = np.asarray(z, dtype=float)
        return (z >= 0.0) & (z == np.floor(z)) & (z < np.inf)

    @classmethod
    def _sample(cls, natural, rng, n):
        rate = np.exp(natural[0])
        return rng.poisson(rate, size=(n,) + np.shape(rate)).astype(float)

    @classmethod
    def _domain_description(cls):
        return "exp(natural[0]) (the rate) must be positive and finite in float64"

    @classmethod
    def _mean_domain_description(cls):
        return "mean[0] (the rate) must be > 0"

    # ------------------------------------------------------------------ what h = 1 / z! needs
    @classmethod
    def expected_log_base_measure(cls, natural):
        """``-E log z!`` (module docstring), shape ``batch``."""
        log_rate = np.asarray(natural[0], dtype=float)
        rate = np.exp(log_rate)
        return -entropy_and_expected_log_factorial(rate)[1]

    # ------------------------------------------------------------------ closed forms
    def entropy(self):
        """``-sum_k p_k log p_k`` without cancellation (module docstring); shape ``batch_shape``."""
        return entropy_and_expected_log_factorial(self.rate)[0]

    def _kl(self, other):
        """``r_q m(exp(d))``, ``d = lambda_p - lambda_q`` (module docstring)."""
        difference = other.natural[0] - self._natural[0]
        with np.errstate(over="ignore"):
            return self.rate * log_gap(np.exp(difference), np.expm1(difference))

    # ------------------------------------------------------------------ readable properties
    @property
    def rate(self):
        """Rates ``r``, shape ``batch_shape``."""
        return np.exp(self._natural[0])

    @property
    def mean(self):
        """``E z = r``, shape ``batch_shape``."""
        return self.rate

    @property
    def var(self):
        """``Var z = r``, shape ``batch_shape``."""
        return self.rate


def entropy_and_expected_log_factorial(rate):
    """Poisson entropy and ``E log z!`` for rates of any shape (module docstring).

    Returns
    -------
    entropy, expected_log_factorial : arrays shaped like ``rate``
    """
    rate = np.asarray(rate, dtype=float)
    flat = rate.reshape(-1)
    entropy, expected = np.empty_like(flat), np.empty_like(flat)
    big = flat >= SERIES_FROM
    if np.any(big):
        large = flat[big]
        inverse = 1.0 / large
        entropy[big] = 0.5 * np.log(2.0 * np.pi * np.e * large) + inverse * (
            (inverse[:, None] ** np.arange(4)) @ _SERIES)
        expected[big] = entropy[big] + large * (np.log(large) - 1.0)
    if not np.all(big):
        entropy[~big], expected[~big] = _window_sums(flat[~big])
    return entropy.reshape(rate.shape), expected.reshape(rate.shape)


def _window_sums(rate):
    """Entropy and ``E log z!`` of 1-D rates below ``SERIES_FROM`` by sums over counts (module docstring).

    Rates are grouped by the power of two that holds their window's half-width,
    so that a batch of small rates does not pay for one large one.
    """
    half = np.ceil(WINDOW_SDS * np.sqrt(rate) + WINDOW_PAD)
    widths = 2.0 ** np.ceil(np.log2(half))
    stirling_table, log_factorial_table = _count_tables()
    entropy, expected = np.empty_like(rate), np.empty_like(rate)
    for width in np.unique(widths):
        chosen = np.flatnonzero(widths == width)
        offsets = np.arange(2 * int(width) + 1)
        for start in range(0, chosen.size, max(1, _CHUNK // offsets.size)):
            index = chosen[start:start + _CHUNK // offsets.size or 1]
            r = rate[index, None]
            k = (np.maximum(np.floor(r) - width, 0.0) + offsets).astype(int)
            spread = _spread(k.astype(float), r)
            stirling = stirling_table[k]
            pmf = np.exp(-spread - stirling)
            entropy[index] = np.sum(pmf * (spread + stirling), axis=-1)
            expected[index] = np.sum(pmf * log_factorial_table[k], axis=-1)
    return entropy, expected


def _spread(k, rate):
    """``r f(k / r) = k log(k / r) - k + r`` for counts ``k`` and rates ``r`` that broadcast.

    From :func:`~efvi.expfam._bregman.xlogx_gap` where ``|k - r| <= r / 8``,
    where the expression would cancel, as written elsewhere (``r`` at ``k = 0``).
    """
    delta = (k - rate) / rate
    near = np.abs(delta) <= 0.125
    far = np.where(k > 0.0, k * (np.log(np.where(k > 0.0, k, 1.0)) - np.log(rate)) - (k - rate), rate)
    return np.where(near, rate * xlogx_gap(k / rate, np.where(near, delta, 0.0)), far)


@functools.lru_cache(maxsize=None)
def _count_tables():
    """``S(k) = log k! - k log k + k`` (module docstring) and ``log k!`` for every count a window can hold."""
    k = np.arange(int(SERIES_FROM + 2.0 ** np.ceil(np.log2(WINDOW_SDS * np.sqrt(SERIES_FROM) + WINDOW_PAD))) + 2,
                  dtype=float)
    positive = np.maximum(k, 1.0)
    stirling = np.where(k > 0.0, 0.5 * np.log(2.0 * np.pi * positive) + binet(positive), 0.0)
    return stirling, special.gammaln(k + 1.0)
