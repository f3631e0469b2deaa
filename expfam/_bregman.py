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
which removes the large cancellation, and add only the excesses
:math:`D - a f = \\tfrac12 m(t) + D_R \\ge 0` (:func:`gammaln_bregman_excess`).

Evaluation, vectorised over any broadcast shape (no loop over entries).  The
families' KL divergences evaluate the same formulas entry by entry in one
compiled call (:mod:`efvi.expfam._bregman_kernels`, where a small batch costs
microseconds instead of some hundred numpy calls); the functions here are the
reference those kernels are tested against, and the entropies use
:func:`entropy_part`.

``f`` and ``m`` take both the ratio :math:`t` and :math:`\\delta = t - 1` (each
computed accurately by the caller).  For :math:`|\\delta| \\le 1/8` they use
:math:`s = \\delta / (2 + \\delta)` (:math:`|s| \\le 1/15`) and
:math:`\\log t = 2\\,\\mathrm{atanh}\\,s = 2(s + s^3 P(s^2))`,
:math:`P(y) = \\sum_{k \\ge 0} y^k / (2k + 3)`, summed to :math:`k = 6` (the rest
is below 1e-18 relative), in forms without cancellation:

.. math::

    f = \\frac{2 s^2 \\big(1 + (1 + s)\\,s P(s^2)\\big)}{1 - s}, \\qquad
    m = 2 s^2 \\Big(\\frac{1}{1 - s} - s P(s^2)\\Big);

elsewhere the definitions.

:math:`D_R` uses Stirling's series :math:`R(x) = \\sum_n S_n x^{1-2n}`,
:math:`S_n = \\frac{B_{2n}}{2n(2n-1)}`, when both arguments are at least
``ASYMPTOTIC_MIN``, with as many of its 10 terms as the smallest argument needs
for 1e-18 relative (all ten at 10, three from 1e3).  Term by term,
:math:`D_R = \\sum_n S_n a^{1-2n} \\varphi_{2n-1}` with
:math:`\\varphi_k = r^k - 1 + k\\delta`, :math:`r = a / c`.  Writing
:math:`e = h / c = 1 - r`, :math:`\\varphi_k = k\\delta e + g_k` where
:math:`g_1 = 0`, :math:`g_{k+1} = r g_k + k e^2` (all terms non-negative), so
that with :math:`q = 1/a`, :math:`w = 1/c` and :math:`\\varepsilon = h / (a c)`,

.. math::

    D_R(c, a) = \\delta\\,\\varepsilon \\sum_{n \\ge 1} (2n - 1) S_n q^{2n-2}
        + \\varepsilon^2 \\sum_{n \\ge 2} S_n \\sum_{j=0}^{2n-3} (j + 1)\\, q^j w^{2n-3-j}:

a leading term :math:`S_1 \\delta\\varepsilon = S_1 \\delta^2 / (a t)` computed
exactly, and a polynomial in :math:`q, w \\le 1/10` (one small matrix product)
whose terms decrease quickly; :math:`|\\varepsilon| \\le \\max(q, w)`, so nothing
overflows.

Below ``ASYMPTOTIC_MIN`` the careful route shifts both arguments up by
:math:`n = \\lceil 10 - \\min(a, c) \\rceil` with :math:`\\Gamma(x + 1) = x\\Gamma(x)`,
which gives :math:`D(c, a) = \\sum_{j < n} m\\big(\\frac{c + j}{a + j}\\big) + D(c + n, a + n)`
(every term non-negative; the ten possible steps are one masked sum), and
subtracts the :math:`f` and :math:`m` parts.  For :math:`a < 10` this loses at
most a factor :math:`6 a^2 \\le 600` relative on a part that is itself at most
about :math:`1/(3a)` of the divergence.  For :math:`c < 10 \\le a` it would
subtract :math:`a f(t) \\approx a` from an excess of order :math:`\\log(a / c)`
(7e-6 relative error at :math:`a = 10^{12}`, :math:`c = 5`), so there it only
takes :math:`c > a/2`, where :math:`a < 20` and the loss is below a factor 40.

The direct route takes the rest of that corner, :math:`c < 10 \\le a` with
:math:`t = c / a \\le 1/2` (a posterior's shape or concentration measured
against a vague prior's, the common case in a variational fit):
:math:`D_R = R(c) - R(a) - (c - a) R'(a)`, with :math:`R(a)`, :math:`R'(a)` from
Stirling's series and :math:`R(c)`, for :math:`1 < c < 10`, by the shifts
:math:`R(c) = R(c + n) + \\sum_{j < n} b(c + j)`,
:math:`b(x) = (x + \\tfrac12)\\log(1 + 1/x) - 1 = y^2 P(y^2)`,
:math:`y = 1 / (2x + 1) \\le 1/3` (18 terms of :math:`P`): positive terms, a
few :math:`\\epsilon` relative; for :math:`c \\le 1` by one more shift,
:math:`R(c) = b(c) + R(c + 1)`, with :math:`b(c)` as written (it grows like
:math:`\\tfrac12\\log(1/c)` and loses at most a factor 26, at :math:`c = 1`, where
:math:`b = 0.04` and :math:`R(c) \\ge R(1) = 0.081`): measured against mpmath
on 5000 points of :math:`[2^{-53}, 1]`, :math:`R(c)` to 3.6e-15 absolute (the
form :math:`\\log\\Gamma(c) - (c - \\tfrac12)\\log c + c - \\tfrac12\\log 2\\pi` with
``scipy.special.gammaln``, used before: 8.9e-15).  The subtraction loses at
most a factor 4 (with :math:`R(x) \\approx 1/(12x)`,
:math:`D_R / R(c) = (1 - t)^2`), and the excess
:math:`m(t)/2 + D_R` the families add is at least :math:`m(1/2)/2 = 0.097`.
Measured against mpmath (3000 pairs, :math:`c` from :math:`2^{-53}`, :math:`a` to
1e15): :math:`D_R` to 3.4e-15 relative, the excess to 4.4e-16.  Being far apart
in relative terms is not enough for a closed form in ``gammaln`` and ``digamma``
alone: for :math:`|c - a| > a/8`,
:math:`\\log\\Gamma(c) - \\log\\Gamma(a) - (c - a)\\psi(a)` still subtracts numbers of
size :math:`a \\log a`, and in the families' KL divergences its large part
:math:`a f(t)` is cancelled exactly by the rates (Gamma) or by the other
concentrations (Dirichlet) when all parameters change by a common factor,
leaving a KL of order :math:`m(t)`.  Measured against mpmath on Gamma pairs
with :math:`|c - a| > a/8`, such a route is up to 3e-5 off for shapes 1e6..1e8,
1e-10 for 10..1e3 and 2e-13 even below 1.

The entropies use the same Stirling pieces (:func:`entropy_part`).  Measured
against mpmath (``tests/expfam/test_bregman.py``), arguments 1e-8..1e12:
:math:`D` to 1e-13 relative (1.3e-14 seen), :math:`D_R` to 1e-14 relative where
Stirling's series applies and to 1e-14 of :math:`D` elsewhere, ``f`` and ``m``
to 2e-14, ``entropy_part`` to 4e-15.
"""

import bisect

import numpy as np
from scipy import special

ASYMPTOTIC_MIN = 10.0
"""Both arguments at least this: Stirling's series; below it the careful route shifts them up."""
DIRECT_RATIO = 0.5
"""The direct route takes ``c < ASYMPTOTIC_MIN <= a`` with ``c / a`` at most this."""
_SERIES_MAX = 0.125
_STIRLING = np.array([special.bernoulli(2 * n)[2 * n] / (2 * n * (2 * n - 1)) for n in range(1, 11)])
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)
_SHIFTS = np.arange(ASYMPTOTIC_MIN)
_POWERS = np.arange(2 * len(_STIRLING) - 1)


def _series_needs():
    """Below which argument each term ``n >= 1`` (from 0) of Stirling's series is summed, ascending.

    Term ``n`` is summed where it exceeds 1e-18 of the first,
    ``|S_n / S_0| x^(-2n) > 1e-18``: below 1.8e8 for ``n = 1``, 9.9e3, 439, ...,
    11.7 for ``n = 9`` (decreasing in ``n``), so ``_SERIES_NEEDS[-n]`` is term ``n``'s bound.
    """
    orders = 2.0 * np.arange(1, len(_STIRLING))
    return tuple(float(x) for x in ((np.abs(_STIRLING[1:] / _STIRLING[0]) / 1e-18) ** (1.0 / orders))[::-1])


_SERIES_NEEDS = _series_needs()
_SLOPE = (2.0 * np.arange(1, len(_STIRLING) + 1) - 1.0) * _STIRLING
"""``(2n - 1) S_n``: ``R'(x) = -x^-2 sum_n (2n - 1) S_n x^(2 - 2n)``."""
_ATANH_TAIL = 1.0 / (2.0 * np.arange(18) + 3.0)
"""``P(y) = sum_k y^k / (2k + 3)``: ``atanh(s) = s + s^3 P(s^2)``; 18 terms for ``y <= 1/9``, 7 for ``y <= 1/225``."""
_ATANH_POWERS = np.arange(len(_ATANH_TAIL))
_NEAR_TERMS = 7


def _binet_tail_coefficients():
    """``M[j, i] = (j + 1) S_n`` for ``j + i = 2n - 3``, ``n >= 2``: the second sum of ``D_R`` is ``q^j M w^i``."""
    size = 2 * len(_STIRLING) - 1
    out = np.zeros((size, size))
    for n in range(2, len(_STIRLING) + 1):
        for j in range(2 * n - 2):
            out[j, 2 * n - 3 - j] = (j + 1) * _STIRLING[n - 1]
    return out


_BINET_TAIL = _binet_tail_coefficients()


def _series_terms(*arguments):
    """How many terms of Stirling's series the smallest entry of ``arguments`` needs (1 to 10)."""
    smallest = min((x.min() for x in arguments if x.size), default=np.inf)
    return len(_SERIES_NEEDS) + 1 - bisect.bisect_right(_SERIES_NEEDS, smallest)


def _near_one(delta):
    """``(2 s^2, s, s P(s^2))`` for ``s = delta / (2 + delta)``, ``delta`` clipped to ``|delta| <= 1/8``."""
    clipped = np.minimum(np.maximum(delta, -_SERIES_MAX), _SERIES_MAX)
    s = clipped / (2.0 + clipped)
    square = s * s
    return 2.0 * square, s, s * ((square[..., None] ** _ATANH_POWERS[:_NEAR_TERMS]) @ _ATANH_TAIL[:_NEAR_TERMS])


def _gaps(t, delta, forms):
    """For each ``(near, far)`` of ``forms``: ``near(*_near_one(delta))`` where ``|delta| <= 1/8``,
    ``far(t, delta, log t)`` elsewhere (shapes broadcast); several functions of one ``t`` share the work."""
    t, delta = np.asarray(t, dtype=float), np.asarray(delta, dtype=float)
    if t.shape != delta.shape:
        t, delta = np.broadcast_arrays(t, delta)
    close = np.abs(delta) <= _SERIES_MAX
    if not close.any():
        log_t = np.log(t)
        return tuple(far(t, delta, log_t) for _, far in forms)
    pieces = _near_one(delta)
    values = tuple(near(*pieces) for near, _ in forms)
    if close.all():
        return values
    log_t = np.log(t)
    return tuple(np.where(close, value, far(t, delta, log_t)) for value, (_, far) in zip(values, forms))


def _xlogx_gap_near(twice_square, s, odd):
    return twice_square * (1.0 + (1.0 + s) * odd) / (1.0 - s)


def _log_gap_near(twice_square, s, odd):
    return twice_square * (1.0 / (1.0 - s) - odd)


_XLOGX_GAP = (_xlogx_gap_near, lambda t, delta, log_t: t * log_t - delta)
_LOG_GAP = (_log_gap_near, lambda t, delta, log_t: delta - log_t)


def xlogx_gap(t, delta):
    """``f(t) = t log t - t + 1 >= 0`` given ``t`` and ``delta = t - 1`` (any shapes that broadcast)."""
    return _gaps(t, delta, (_XLOGX_GAP,))[0]


def log_gap(t, delta):
    """``m(t) = t - 1 - log t >= 0`` given ``t`` and ``delta = t - 1`` (any shapes that broadcast)."""
    return _gaps(t, delta, (_LOG_GAP,))[0]


def ratio_gap(x, x_minus_one, y, y_minus_one):
    """``x / y - 1`` from positive ``x``, ``y`` and their differences to 1, each known accurately.

    ``x - y`` is formed as ``(x - 1) - (y - 1)`` where that rounds less,
    ``|x - 1| + |y - 1| <= x + y`` (equivalently ``x + y >= 1``), which keeps
    the digits of nearby distributions, and as ``x - y`` elsewhere, where the
    other form would lose them (``x, y`` near 0: ``x - 1 ~ y - 1 ~ -1``);
    either way its rounding is at most ``eps min(|x - 1| + |y - 1|, x + y)``.
    Any shapes that broadcast.
    """
    return np.where(x + y >= 1.0, x_minus_one - y_minus_one, x - y) / y


def _stirling(x):
    """Binet's function ``R(x)`` and its slope ``R'(x)`` by Stirling's series, for ``x >= ASYMPTOTIC_MIN``."""
    inverse = 1.0 / x
    inverse_square = inverse * inverse
    powers = inverse_square[..., None] ** _POWERS[:_series_terms(x)]
    return inverse * (powers @ _STIRLING[:powers.shape[-1]]), -inverse_square * (powers @ _SLOPE[:powers.shape[-1]])


def _binet_asymptotic(lower, upper, h):
    """``D_R(upper, lower)`` by Stirling's series (module docstring); both arguments >= ``ASYMPTOTIC_MIN``."""
    inverse_lower, inverse_upper = 1.0 / lower, 1.0 / upper
    delta = h * inverse_lower
    cross = delta * inverse_upper
    terms = _series_terms(lower, upper)
    exponents = _POWERS[:2 * terms - 1]
    q_powers = inverse_lower[..., None] ** exponents
    leading = delta * cross * (q_powers[..., ::2] @ _SLOPE[:terms])
    if terms == 1:
        return leading
    w_powers = inverse_upper[..., None] ** exponents
    tail = ((q_powers @ _BINET_TAIL[:exponents.size, :exponents.size]) * w_powers).sum(axis=-1)
    return leading + cross * cross * tail


def _binet_below(x):
    """Binet's function ``R(x)`` for ``0 < x < ASYMPTOTIC_MIN`` (module docstring)."""
    low = x <= 1.0
    above = np.where(low, x + 1.0, x)
    shifts = np.ceil(ASYMPTOTIC_MIN - above)
    y = 1.0 / (2.0 * (above[..., None] + _SHIFTS) + 1.0)
    square = y * y
    steps = square * ((square[..., None] ** _ATANH_POWERS) @ _ATANH_TAIL)
    shifted = np.where(_SHIFTS < shifts[..., None], steps, 0.0).sum(axis=-1) + _stirling(above + shifts)[0]
    if not low.any():
        return shifted
    below = np.where(low, x, 1.0)
    return np.where(low, (below + 0.5) * np.log1p(1.0 / below) - 1.0 + shifted, shifted)


def _by_size(x, asymptotic, below):
    """``asymptotic(x)`` where ``x >= ASYMPTOTIC_MIN`` and ``below(x)`` elsewhere, each evaluated only at
    valid points (the other entries are replaced by ``ASYMPTOTIC_MIN`` or 1); shape ``x``'s."""
    x = np.asarray(x, dtype=float)
    big = x >= ASYMPTOTIC_MIN
    if big.all():
        return asymptotic(x)
    small = below(np.where(big, 1.0, x))
    if not big.any():
        return small
    return np.where(big, asymptotic(np.where(big, x, ASYMPTOTIC_MIN)), small)


def binet(x):
    """Binet's function ``R(x) = log Gamma(x) - (x - 1/2) log x + x - log(2 pi) / 2`` for ``x > 0``.

    Stirling's series from ``ASYMPTOTIC_MIN`` on, the shifted recurrence of
    :func:`_binet_below` below it (module docstring): a few ``eps`` relative.

    Parameters
    ----------
    x : array_like, any shape, > 0

    Returns
    -------
    ndarray, same shape
    """
    return _by_size(x, lambda large: _stirling(large)[0], _binet_below)


def _binet_direct(c, a, h):
    """``D_R(c, a) = R(c) - R(a) - (c - a) R'(a)`` for ``c < ASYMPTOTIC_MIN <= a``, ``c <= a / 2``."""
    binet_a, slope_a = _stirling(a)
    return _binet_below(c) - binet_a - h * slope_a


def _shifts(c, a):
    """How far the careful route shifts both arguments up: ``ceil(10 - min(a, c))``, or 0 from 10 on."""
    return np.maximum(np.ceil(ASYMPTOTIC_MIN - np.minimum(a, c)), 0.0)


def _careful(c, a, h, shifts):
    """``D(c, a)`` by the shifted recurrence, and Binet's part ``D_R(c + n, a + n)`` of its last term."""
    lower, upper = a + shifts, c + shifts
    asymptotic = _binet_asymptotic(lower, upper, h)
    xlogx, log = _gaps(upper / lower, h / lower, (_XLOGX_GAP, _LOG_GAP))
    divergence = lower * xlogx + 0.5 * log + asymptotic
    if shifts.any():
        lowers = a[..., None] + _SHIFTS
        steps = log_gap((c[..., None] + _SHIFTS) / lowers, h[..., None] / lowers)
        divergence = np.where(_SHIFTS < shifts[..., None], steps, 0.0).sum(axis=-1) + divergence
    return divergence, asymptotic


def _binet_careful(c, a, h):
    shifts = _shifts(c, a)
    shifted = shifts > 0.0
    if not shifted.any():
        return _binet_asymptotic(a, c, h)
    divergence, asymptotic = _careful(c, a, h, shifts)
    xlogx, log = _gaps(c / a, h / a, (_XLOGX_GAP, _LOG_GAP))
    return np.where(shifted, divergence - a * xlogx - 0.5 * log, asymptotic)


def _excess_direct(c, a, h):
    return 0.5 * (h / a - np.log(c / a)) + _binet_direct(c, a, h)


def _excess_careful(c, a, h):
    shifts = _shifts(c, a)
    shifted = shifts > 0.0
    if not shifted.any():
        return 0.5 * log_gap(c / a, h / a) + _binet_asymptotic(a, c, h)
    divergence, asymptotic = _careful(c, a, h, shifts)
    if shifted.all():
        return divergence - a * xlogx_gap(c / a, h / a)
    xlogx, log = _gaps(c / a, h / a, (_XLOGX_GAP, _LOG_GAP))
    return np.where(shifted, divergence - a * xlogx, 0.5 * log + asymptotic)


def _arrays(c, a, h):
    c, a, h = np.asarray(c, dtype=float), np.asarray(a, dtype=float), np.asarray(h, dtype=float)
    return (c, a, h) if c.shape == a.shape == h.shape else np.broadcast_arrays(c, a, h)


def _by_route(c, a, h, direct, careful):
    """``direct(c, a, h)`` where ``c < ASYMPTOTIC_MIN <= a`` and ``c <= a / 2``, ``careful(c, a, h)`` elsewhere."""
    c, a, h = _arrays(c, a, h)
    chosen = (c < ASYMPTOTIC_MIN) & (a >= ASYMPTOTIC_MIN) & (c <= DIRECT_RATIO * a)
    if chosen.all():
        return direct(c, a, h)
    if not chosen.any():
        return careful(c, a, h)
    out = np.empty(a.shape)
    out[chosen] = direct(c[chosen], a[chosen], h[chosen])
    out[~chosen] = careful(c[~chosen], a[~chosen], h[~chosen])
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
    return _by_route(c, a, h, _binet_direct, _binet_careful)


def gammaln_bregman_excess(c, a, h):
    """``D(c, a) - a f(c / a) = m(c / a) / 2 + D_R(c, a) >= 0``: the divergence beyond its leading part.

    What the Gamma and Dirichlet KL divergences add to their combined ``a f``
    parts; to a few ``eps`` relative (module docstring).

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
    return _by_route(c, a, h, _excess_direct, _excess_careful)


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
    c, a, h = _arrays(c, a, h)
    return _careful(c, a, h, _shifts(c, a))[0]


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
    return _by_size(x, _entropy_asymptotic, _entropy_direct)


def _entropy_direct(x):
    """``E(x)`` by its definition, for ``x < ASYMPTOTIC_MIN``."""
    return special.gammaln(x) - (x - 1.0) * special.digamma(x) + x


def _entropy_asymptotic(x):
    binet, slope = _stirling(x)
    return 0.5 * np.log(x) + _HALF_LOG_2PI + 0.5 - 0.5 / x + binet - (x - 1.0) * slope
