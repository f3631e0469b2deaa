r"""What a fit's ELBO gains say about the gap to its optimum: the pure functions of the stopping rule.

The controller (:mod:`efvi.inference._controller`) decides; these functions read
the gains.  Near the optimum CVI converges linearly with a small rate: the gains of
successive ordinary steps shrink by a near-constant ratio (about 2e-3 for
logistic regression, 3e-2 for GP classification), or faster.  So when the last
three gains :math:`\Delta_{k-2}, \Delta_{k-1}, \Delta_k > 0` have ratios
:math:`r_k = \Delta_k / \Delta_{k-1} \le r_{k-1} < 1/2`, the geometric tail
:math:`\Delta_k r_k / (1 - r_k)` estimates the gain still to come: exactly for
a constant rate, from above for a shrinking one.  As the fast directions die
out the ratio often creeps up (breast-cancer logistic regression: 0.19, 0.21,
0.23, 0.24 over four iterations); a rising ratio is extrapolated at twice its
last rise, and not at all once it would reach 1/2.  That saves the step whose
only use would be to confirm convergence.
"""

import numpy as np

UNKNOWN_RATIO = 0.5
"""The ratio of gains assumed by the divergence test when no ordinary ratio is known."""

RISING_HORIZON = 20
"""Steps over which a rising ratio of gains is extrapolated by :func:`estimated_remaining_gain`."""

STOCHASTIC_WINDOW = 20
"""Iterations per window of the stochastic stopping rule."""


def estimated_remaining_gain(gains):
    """The ELBO still to gain, estimated from gains that shrink geometrically at a steady or slowly rising rate.

    Parameters
    ----------
    gains : list of float
        ELBO gain of each iteration so far, oldest first; NaN for an
        extrapolated (accelerated) step, which says nothing about the rate.

    Returns
    -------
    float
        With the last three gains positive, ``r_k = Delta_k / Delta_{k-1}`` and
        ``r_{k-1}`` both below 1/2: ``sum_j Delta_k r_{k+1} ... r_{k+j}``, the
        future ratios ``r_{k+j} = r_k + 2 j max(r_k - r_{k-1}, 0)`` rising
        twice as fast as the last two did (``Delta_k r_k / (1 - r_k)`` for a
        steady or falling ratio); ``inf`` when they would reach 1/2 within
        ``RISING_HORIZON`` steps or there is no evidence of a fast rate.
    """
    if len(gains) < 3:
        return np.inf
    first, second, last = gains[-3:]
    if not (first > 0 and second > 0 and last > 0):     # also False for NaN
        return np.inf
    ratio, ratio_before = last / second, second / first
    if not (ratio < 0.5 and ratio_before < 0.5):
        return np.inf
    return _rising_tail(last, ratio, 2.0 * max(ratio - ratio_before, 0.0))


def _rising_tail(last, rate, rise):
    """``sum_j last * r_1 ... r_j`` with ``r_j = rate + j * rise`` (``rate < 1/2``); inf once some ``r_j`` reaches 1/2.

    ``last * rate / (1 - rate)`` when ``rise`` is 0.  The sum stops once a term is below 1e-3 of it
    (what is left is then below that term, which is added) or after ``RISING_HORIZON`` terms (inf).
    """
    if rise == 0.0:
        return last * rate / (1.0 - rate)
    tail, term = 0.0, last
    for step in range(1, RISING_HORIZON + 1):
        rate_now = rate + step * rise
        if rate_now >= 0.5:
            return np.inf
        term *= rate_now
        tail += term
        if term <= 1e-3 * tail:
            return tail + term
    return np.inf


def tail_at_last_rate(gains):
    """The gain still to come if the slower of the last two ratios of gains held: ``Delta_k r / (1 - r)``.

    A small change is not enough on its own: at a linear rate ``r`` the fit is
    still ``r / (1 - r)`` times the last change from its optimum (3x at the rate
    0.75 of logistic regression from the prior).  ``inf`` when one of the last
    three steps was extrapolated: the first ordinary steps after an
    extrapolation are a transient (a mean-field logistic regression stopped 5x
    its tolerance from the optimum on the first ordinary step after one, and
    breast-cancer logistic regression at 1.3x on the second, whose ratio of
    gains was 0.34 where the rate was 0.65).  0 when the last two gains do not both
    increase the ELBO (rounding at convergence) or there is one gain only:
    the change test alone decides then.
    """
    if len(gains) < 2:
        return 0.0
    before, last = gains[-2], gains[-1]
    if np.isnan(before) or np.isnan(last):
        return np.inf
    if not (before > 0 and last > 0):
        return 0.0
    ratio = last / before
    if len(gains) >= 3 and np.isnan(gains[-3]):
        return np.inf       # one ratio since an extrapolation: a transient (0.34 where the rate was 0.65)
    if len(gains) >= 3 and gains[-3] > 0:      # the slower of the last two rates: a gain that rose is no rate
        ratio = max(ratio, before / gains[-3])
    return np.inf if ratio >= 1.0 else last * ratio / (1.0 - ratio)


def gap_after_checked_step(gain, divergence):
    """The gap left after a full step of Jeffreys divergence ``divergence`` that gained ``gain``.

    Near an optimum with curvature ``c`` times the Fisher information the step
    multiplies the error by ``rho = 1 - c``, gains ``(1 + rho) J / 2`` and leaves
    ``rho^2 gain / (1 - rho^2)`` (module notes); so ``rho = 2 gain / J - 1``.  A
    negative ``rho`` (a gain below ``J / 2``) is a step that overshoots: the fit
    zig-zags across its optimum, and ``|rho|`` is the rate.  ``inf`` when the step
    did not gain or ``|rho|`` reaches 1.
    """
    if not gain > 0.0:
        return np.inf
    if not divergence > 0.0:
        return 0.0
    rate = abs(2.0 * gain / divergence - 1.0)
    return np.inf if rate >= 1.0 else gain * rate ** 2 / (1.0 - rate ** 2)


def regular(gains, steps):
    """Whether the last ``GAIN_WINDOW`` gains (all of them, at least 3) are ordinary, positive and
    decreasing, and come from steps of one size (one iteration map: back-offs that cycle through
    1/4, 1/2 and 1 make ratios of gains that are no rate)."""
    if len(gains) < 3:
        return False
    values, sizes = np.asarray(gains, dtype=float), np.asarray(steps, dtype=float)
    return bool(np.all(values > 0) and np.all(values[1:] < values[:-1])       # False for NaN too
                and np.all(sizes == sizes[0]))


def largest_ratio(gains):
    """The largest ratio of consecutive ordinary gains among ``gains``: ``UNKNOWN_RATIO`` if none is known,
    1 if a gain is not positive after a positive one or rose (irregular gains: no rate below 1 is shown)."""
    ratios = [b / a for a, b in zip(gains[:-1], gains[1:]) if np.isfinite(a) and np.isfinite(b) and a > 0]
    if not ratios:
        return UNKNOWN_RATIO
    largest = max(ratios)
    if largest >= 1.0 or min(ratios) <= 0.0:
        return 1.0
    return largest


def after_extrapolation(gains):
    """Whether one of the two gains before the last is an extrapolated step's (two ratios of ordinary
    gains are not known yet)."""
    return bool(np.any(np.isnan(gains[-3:-1])))


def gain_ratio_at_least(trace, threshold):
    """Whether the last ELBO gain is at least ``threshold`` times the one before (or that one did not
    increase the ELBO); False before two gains are known."""
    if len(trace) < 3:
        return False
    last, before = trace[-1] - trace[-2], trace[-2] - trace[-3]
    return not before > 0.0 or last >= threshold * before


def windows_agree(trace, tol, length=STOCHASTIC_WINDOW):
    """Stochastic fits: the mean ELBO of the last two windows of ``length`` iterations agree within ``tol``."""
    if len(trace) < 2 * length:
        return False
    recent, before = np.mean(trace[-length:]), np.mean(trace[-2 * length:-length])
    return bool(abs(recent - before) <= tol * abs(recent))


def lowers_elbo(new, current):
    """Whether a proposal's ELBO ``new`` is not finite or below ``current`` by more than rounding
    (``1e-11`` relative, at least ``1e-11``): such a proposal is never taken."""
    return not np.isfinite(new) or new < current - 1e-11 * max(1.0, abs(current))
