"""Bregman divergences of the log-gamma function, evaluated without cancellation.

The KL divergences and entropies of the Gamma, Beta and Dirichlet families are
built from

.. math::

    D(c, a) = \\log\\Gamma(c) - \\log\\Gamma(a) - (c - a)\\,\\psi(a) \\;\\ge\\; 0,

the Bregman divergence of :math:`\\log\\Gamma`.  For a concentrated
distribution (large :math:`a`) and a nearby one (:math:`c \\approx a`), the three
terms are of size :math:`a \\log a` while :math:`D` is about
:math:`(c - a)^2 / (2a)`: evaluated as written, or even to full relative
accuracy one :math:`D` at a time, the KL of a concentrated Dirichlet
(:math:`\\sum_k D(\\beta_k, \\alpha_k) - D(\\beta_0, \\alpha_0)`) still subtracts numbers
of size :math:`\\alpha_0 \\epsilon^2` to get one of size :math:`\\epsilon^2`.  So
:math:`D` is split with Stirling's formula
:math:`\\log\\Gamma(x) = (x - \\tfrac12)\\log x - x + \\tfrac12\\log 2\\pi + R(x)`
(:math:`R` is Binet's function, convex, :math:`R(x) \\approx 1/(12x)`) into three
non-negative parts; with :math:`t = c / a`,

.. math::

    D(c, a) = a\\,f(t) + \\tfrac12\\,m(t) + D_R(c, a), \\qquad
    f(t) = t \\log t - t + 1, \\quad m(t) = t - 1 - \\log t,

and :math:`D_R` the Bregman divergence of :math:`R`.  The families combine the
:math:`f` parts of several :math:`D` exactly (``gamma.py``, ``dirichlet.py``),
which removes the large cancellation, and only small, non-negative pieces are
added.

Evaluation.  ``f`` and ``m`` take both the ratio :math:`t` and
:math:`\\delta = t - 1` (each computed accurately by the caller) and use their
Taylor series in :math:`\\delta` for :math:`|\\delta| \\le 1/8`.  :math:`D_R` uses
Stirling's series :math:`R(x) = \\sum_n \\frac{B_{2n}}{2n(2n-1)} x^{1-2n}` when both
arguments are at least ``ASYMPTOTIC_MIN`` (10 terms, relative error below
1e-16 there), in the form
:math:`D_R = \\sum_n \\frac{B_{2n}}{2n(2n-1)} a^{1-2n}\\,\\varphi_{2n-1}(\\delta)`,
:math:`\\varphi_k(\\delta) = (1 + \\delta)^{-k} - 1 + k\\delta`, whose leading
:math:`\\varphi_1 = \\delta^2 / (1 + \\delta)` is exact.  Below that it shifts both
arguments up with :math:`\\Gamma(x + 1) = x\\Gamma(x)`, which gives the recurrence
:math:`D(c, a) = m(c / a) + D(c + 1, a + 1)` (every term non-negative), and
subtracts the :math:`f` and :math:`m` parts, losing at most a factor
:math:`6 a^2 \\le 600` relative on a part that is itself at most about
:math:`1/(3a)` of the divergence.  The entropies use the same Stirling pieces
(:func:`entropy_part`).  Measured against mpmath (``tests/expfam/test_bregman.py``),
arguments 1e-8..1e12: :math:`D` to 1e-13 relative (1.3e-14 seen), :math:`D_R` to
1e-14 relative where Stirling's series applies and to 1e-14 of :math:`D`
elsewhere, ``f`` and ``m`` to 2e-14, ``entropy_part`` to 4e-15.
"""

import numpy as np
from scipy import special

ASYMPTOTIC_MIN = 10.0
_SERIES_MAX = 0.125
_EPS = np.finfo(float).eps
_STIRLING = np.array([special.bernoulli(2 * n)[2 * n] / (2 * n * (2 * n - 1)) for n in range(1, 11)])
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def _phi_coefficients(k):
    """Coefficients of ``P_k`` in ``phi_k(d) = d^2 P_k(d) / (1 + d)^k``, lowest power first."""
    return np.array([k * special.comb(k, j - 1, exact=True) - special.comb(k, j, exact=True)
                     for j in range(2, k + 2)], dtype=float)


_PHI = [_phi_coefficients(2 * n - 1) for n in range(1, len(_STIRLING) + 1)]


def _series_terms(delta):
    """How many Taylor terms ``|delta|^n`` (n >= 2) reach double precision for every entry."""
    largest = np.max(np.abs(delta), initial=0.0)
    if largest == 0.0:
        return 0
    return int(min(40, np.ceil(np.log(_EPS / 16.0) / np.log(largest)))) + 1


def _taylor(delta, coefficient):
    """``sum_{n >= 2} coefficient(n) delta^n`` by Horner, with enough terms for double precision."""
    terms = _series_terms(delta)
    total = np.zeros_like(delta)
    for n in range(terms + 1, 1, -1):
        total = total * delta + coefficient(n)
    return total * delta * delta


def _split(t, delta, near, far):
    """``near(delta)`` where ``|delta| <= 1/8``, ``far(t, delta)`` elsewhere; shapes broadcast."""
    t, delta = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(delta, dtype=float))
    out = np.empty(t.shape)
    small = np.abs(delta) <= _SERIES_MAX
    out[small] = near(delta[small])
    out[~small] = far(t[~small], delta[~small])
    return out


def xlogx_gap(t, delta):
    """``f(t) = t log t - t + 1 >= 0`` given ``t`` and ``delta = t - 1`` (any shapes that broadcast)."""
    return _split(t, delta, lambda d: _taylor(d, lambda n: (-1.0) ** n / (n * (n - 1))),
                  lambda r, d: r * np.log(r) - d)


def log_gap(t, delta):
    """``m(t) = t - 1 - log t >= 0`` given ``t`` and ``delta = t - 1`` (any shapes that broadcast)."""
    return _split(t, delta, lambda d: _taylor(d, lambda n: (-1.0) ** n / n),
                  lambda r, d: d - np.log(r))


def _scaled_phi(k_index, a, t, delta):
    """``a^-k phi_k(delta) = (a t)^-k - a^-k + k delta a^-k`` for ``k = 2 k_index + 1``, ``t = 1 + delta``.

    Near ``t = 1`` as ``a^-k delta^2 P_k(delta) / t^k`` (no cancellation); the
    scaling keeps every factor finite for any ``a, a t >= ASYMPTOTIC_MIN``.
    """
    k = 2 * k_index + 1
    if k == 1:
        return delta * (delta / t) / a
    near = np.abs(delta) <= 0.5
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        poly = np.polynomial.polynomial.polyval(delta, _PHI[k_index])
        scale = a ** -float(k)
        return np.where(near, scale * delta * delta * poly / t ** k, (a * t) ** -float(k) - scale + k * delta * scale)


def _binet_asymptotic(a, t, delta):
    """``D_R(a t, a)`` by Stirling's series; ``a`` and ``a t`` must be >= ``ASYMPTOTIC_MIN``.

    Only the terms that matter at the smallest ``a`` (relative 1e-18 of the
    first) are summed: all ten at ``a = 10``, three from ``a = 1e3``.
    """
    total = np.zeros(np.shape(a))
    smallest = np.min(np.minimum(a, a * t), initial=np.inf)
    relative = np.abs(_STIRLING / _STIRLING[0]) * smallest ** (-2.0 * np.arange(len(_STIRLING)))
    for n in range(int(np.count_nonzero(relative > 1e-18)) - 1, -1, -1):
        total = total + _STIRLING[n] * _scaled_phi(n, a, t, delta)
    return total


def _gammaln_bregman_large(a, t, delta):
    """``D(a t, a)`` for ``a, a t >= ASYMPTOTIC_MIN``: the three parts, all non-negative."""
    return a * xlogx_gap(t, delta) + 0.5 * log_gap(t, delta) + _binet_asymptotic(a, t, delta)


def _gammaln_bregman_shifted(c, a, h):
    """``D(c, a) = sum_{j < n} m((c + j) / (a + j)) + D(c + n, a + n)`` with ``min(c, a) + n >= ASYMPTOTIC_MIN``."""
    shifts = np.ceil(ASYMPTOTIC_MIN - np.minimum(a, c))
    total = log_gap(c / a, h / a)
    for j in range(1, int(np.max(shifts, initial=0.0))):
        lower, upper = a + j, c + j
        total = total + np.where(j < shifts, log_gap(upper / lower, h / lower), 0.0)
    lower, upper = a + shifts, c + shifts
    return total + _gammaln_bregman_large(lower, upper / lower, h / lower)


def _by_size(c, a, h, large, small):
    """``large(c, a, h)`` where ``min(a, c) >= ASYMPTOTIC_MIN``, ``small(c, a, h)`` elsewhere (flat arrays)."""
    c, a, h = (np.asarray(x, dtype=float) for x in np.broadcast_arrays(c, a, h))
    out = np.empty(a.shape)
    big = np.minimum(a, c) >= ASYMPTOTIC_MIN
    out[big] = large(c[big], a[big], h[big])
    out[~big] = small(c[~big], a[~big], h[~big])
    return out


def binet_bregman(c, a, h):
    """``D_R(c, a) = R(c) - R(a) - (c - a) R'(a) >= 0``, Binet's function's Bregman divergence.

    Parameters
    ----------
    c, a : array_like, broadcasting shapes
        Positive arguments.
    h : array_like
        ``c - a``, computed by the caller as accurately as it can (e.g. as a
        difference of natural parameters).

    Returns
    -------
    ndarray, the broadcast shape
    """
    def small(c, a, h):
        t, delta = c / a, h / a
        return _gammaln_bregman_shifted(c, a, h) - a * xlogx_gap(t, delta) - 0.5 * log_gap(t, delta)

    return _by_size(c, a, h, lambda c, a, h: _binet_asymptotic(a, c / a, h / a), small)


def gammaln_bregman(c, a, h):
    """``D(c, a) = log Gamma(c) - log Gamma(a) - (c - a) psi(a) >= 0``, to about 1e-14 relative.

    Parameters
    ----------
    c, a : array_like, broadcasting shapes
        Positive arguments.
    h : array_like
        ``c - a``, computed by the caller as accurately as it can.

    Returns
    -------
    ndarray, the broadcast shape
    """
    return _by_size(c, a, h, lambda c, a, h: _gammaln_bregman_large(a, c / a, h / a), _gammaln_bregman_shifted)


def entropy_part(x):
    """``E(x) = log Gamma(x) - (x - 1) psi(x) + x``, the per-shape piece of the Gamma and Dirichlet entropies.

    For ``x >= ASYMPTOTIC_MIN`` it is
    ``log(2 pi x) / 2 + 1/2 - 1/(2x) + R(x) - (x - 1) R'(x)`` with Stirling's
    series, free of the cancellation between ``log Gamma(x)`` and
    ``(x - 1) psi(x)`` (both about ``x log x``); below, the definition.

    Parameters
    ----------
    x : array_like, any shape, > 0

    Returns
    -------
    ndarray, same shape
    """
    x = np.asarray(x, dtype=float)
    big = x >= ASYMPTOTIC_MIN
    safe = np.where(big, x, ASYMPTOTIC_MIN)
    powers = np.arange(1, len(_STIRLING) + 1)
    inverse = 1.0 / safe[..., None]
    binet = np.sum(_STIRLING * inverse ** (2 * powers - 1), axis=-1)
    binet_slope = np.sum(_STIRLING * (1 - 2 * powers) * inverse ** (2 * powers), axis=-1)
    asymptotic = (0.5 * np.log(safe) + _HALF_LOG_2PI + 0.5 - 0.5 / safe + binet - (safe - 1.0) * binet_slope)
    tiny = np.where(big, 1.0, x)
    direct = special.gammaln(tiny) - (tiny - 1.0) * special.digamma(tiny) + tiny
    return np.where(big, asymptotic, direct)
