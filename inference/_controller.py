r"""The fit's controller: step sizes, acceleration and the stopping rule in one place.

Step sizes come from the fit's :class:`~efvi.inference.StepRule`; the
controller keeps the rule's state in the fit state and adds the decisions that
span iterations:

* **acceleration** -- extrapolate (:mod:`efvi.inference._acceleration`, from
  the sites and targets of every iteration) when full steps are being
  accepted, the last proposals were not rejected (failures back off
  exponentially), no ordinary step is needed to confirm convergence, and
  ordinary steps converge slowly enough to repay the risk (an iteration gains
  at least ``ACCELERATE_ABOVE`` of the gain of the one before);
* **stopping** -- a deterministic fit passes the ELBO test when the ELBO it
  has still to gain, estimated from gains that shrink geometrically at a
  steady or slowly rising rate (:func:`estimated_remaining_gain`), is at most
  ``tol`` (relative), or when the relative change of one iteration is at most
  ``tol`` and so is the gain still to come at the slower of the last two
  ratios of gains.  An extrapolated step never ends a fit, and a small change
  after one is confirmed by ordinary steps until two of them give a rate;
  a stochastic fit compares the mean ELBO of its last two windows of 20
  iterations;
* **honest convergence** -- a small ELBO change is evidence of convergence
  only when the step could have moved the fit and the next one would not
  swing back.  When the ELBO test passes after a step shorter than a full CVI
  step (``rho < 1``: a short fixed step, rejected proposals, back-offs, or no
  acceptable step at all), or in a fit that has been extrapolated (whose full
  step may be half of a zig-zag between two posteriors of nearly equal ELBO),
  the controller
  asks how far the full step from the current state would move the
  posterior, measured by the symmetrised KL (Jeffreys) divergence
  :math:`J = \langle \lambda_{full} - \lambda, \mu_{full} - \mu \rangle`.
  So it does too when the ratios of gains are not evidence of a rate: the
  last gain was larger than the tolerance (a fast transient that gives way to
  a slower rate: a Gaussian mixture stopped 9 tolerances short after ratios
  0.023 and 0.013, then 0.34 for ever), or the last ``GAIN_WINDOW`` gains
  are not positive and decreasing.  Near an optimum, if the ELBO's curvature
  in the natural parameters is ``c`` times the Fisher information (the sites
  then converge at the rate ``rho = 1 - c``, the gains at ``rho^2``), the gap
  to the optimum is :math:`J / (2 (1 - \rho))`.  Where the last gains are
  ordinary, positive and decreasing, ``rho^2`` is at most their largest ratio
  (``UNKNOWN_RATIO`` if none is known) and the fit is converged if that gap is
  at most the tolerance.  Elsewhere no observed ratio bounds the rate, so the
  full step is taken next and its gain ``(1 + rho) J / 2`` measures it: the
  fit is converged if the gap it leaves, ``rho^2 gain / (1 - rho^2)``, is
  within the tolerance.  This is a model of the ELBO near its optimum: a
  mean-field fit on strongly correlated features, whose slowest mode barely
  moves in one step, can stop up to about 1.5 tolerances short.  A fit that
  crawls with tiny steps far from its optimum has
  a large :math:`J` and is not converged.

Near the optimum CVI converges linearly with a small rate: the gains of
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

ACCELERATE_ABOVE = 0.2
"""Extrapolate only while an ordinary step gains at least this fraction of the ELBO gain of the step
before (a linear rate of the sites above about 0.45): faster convergence does not repay the cost of
extrapolations that fail (each costs an evaluation).  Chosen on 16 default fits (eight small GLM, GP
and Markov-GP problems, each from the informed start and from the prior), which took 270
evaluations in all at 0.2, 275 at 0.1 and 274 at 0.3 when it was chosen."""

HISTORY_ABOVE = 0.05
"""Record the acceleration history only while an ordinary step gains at least this fraction of the
gain of the step before: recording costs a few passes over the sites (1 ms at 2e5 entries, 1.3x the
iteration of a Markov GP with T = 1e5, which converges at ratios near 0.025), and fits that fast
never extrapolate.  Below ``ACCELERATE_ABOVE`` so that slow fits, whose ratios wander around it, keep
a history of consecutive iterates (the 16 fits: 298 evaluations, against 292 recording always)."""

GAIN_WINDOW = 5
"""Gains of ordinary steps kept for the stopping rule.  Their ratios are trusted as a rate only when
all of these gains are positive and each is below the one before: a small gain after a rising or
erratic stretch (a mean-field fit on correlated features, with back-offs: ratios 9.7, 0.41, 1.66,
0.79, 0.04) said nothing about what was left (the fit stopped 430 tolerances from its optimum)."""

AT_ROUNDING = 1e-3
"""A full step whose Jeffreys divergence is below this fraction of the tolerance does not move the fit:
converged whatever the gains, which are rounding there (their signs and ratios are noise)."""

UNKNOWN_RATIO = 0.5
"""The ratio of gains assumed by the divergence test when no ordinary ratio is known."""


RISING_HORIZON = 20
"""Steps over which a rising ratio of gains is extrapolated by :func:`estimated_remaining_gain`."""

STOCHASTIC_WINDOW = 20
"""Iterations per window of the stochastic stopping rule."""

CONTINUE, CONVERGED, CHECK = "continue", "converged", "check"


class Controller:
    """Step sizes, acceleration and stopping for one fit; its state lives in ``state`` (a ControllerState).

    Parameters
    ----------
    rule : efvi.inference.StepRule
    state : efvi.inference._state.ControllerState
    tol : float
        Relative ELBO tolerance.
    stochastic : bool
        Whether ELBOs are estimates (Monte Carlo factors or minibatches).
    """

    def __init__(self, rule, state, tol, stochastic):
        self.rule, self.state, self.tol, self.stochastic = rule, state, tol, stochastic

    # ------------------------------------------------------------------ step sizes
    def first_rho(self, iteration):
        """The step size to try first in this iteration."""
        return self.rule.rho(iteration, self.state.rule)

    def retry_rho(self, rho):
        """The next step size after ``rho`` was rejected (ELBO check), or None when the rule gives up."""
        rho = self.rule.rejected(rho, self.state.rule)
        return rho if rho >= self.rule.min_rho else None

    def accepted(self, rho):
        """Record that a step of size ``rho`` was accepted."""
        self.rule.accepted(rho, self.state.rule)

    def is_short(self, rho):
        """Whether an accepted ``rho`` is shorter than a full CVI step (stochastic fits: never checked)."""
        return not self.stochastic and rho < 1.0 - 1e-12

    # ------------------------------------------------------------------ acceleration
    @property
    def accelerator(self):
        """The Anderson accelerator of this fit, or None."""
        return self.state.accelerator

    def accelerate_now(self, iteration, elbo_trace):
        """Whether to try an extrapolated step in this iteration (see the module notes)."""
        state = self.state
        if state.accelerator is None or state.plain_next:
            return False
        if state.accelerator_rest > 0:
            state.accelerator_rest -= 1
            return False
        return self.first_rho(iteration) >= self.rule.max_rho and _converging_slowly(elbo_trace)

    def keeps_history(self, elbo_trace):
        """Whether to record this iteration's (sites, targets) pair, and whether to forget the history first.

        Returns
        -------
        record, restart : bool
            Recording stops while ordinary steps converge fast (a gain below
            ``HISTORY_ABOVE`` times the one before); when it starts again the old
            pairs are dropped, so that the history holds consecutive iterates only.
        """
        if self.state.accelerator is None:
            return False, False
        record = _history_wanted(elbo_trace)
        return record, record and not _history_wanted(elbo_trace[:-1])

    def extrapolation_done(self, accepted):
        """Record the outcome of an extrapolation; rejected ones back off exponentially."""
        state = self.state
        if accepted:
            state.accelerator_failures = 0
            return
        # rejected extrapolations become rare where they do not pay (often the pre-asymptotic
        # phase), yet the accelerator returns once the iteration settles into its linear regime
        state.accelerator_failures += 1
        state.accelerator_rest = 2 ** state.accelerator_failures - 1

    def forget_history(self):
        """Forget the gains and the acceleration history (the fixed-point map changed)."""
        self.state.gains, self.state.steps = [], []
        if self.state.accelerator is not None:
            self.state.accelerator.reset()

    # ------------------------------------------------------------------ stopping
    def divergence_verdict(self, divergence, elbo, measure=True):
        """CONVERGED or None from the Jeffreys divergence ``J`` of the full step at the current state.

        Where the last ``GAIN_WINDOW`` gains are ordinary, positive and decreasing their largest ratio
        bounds the rate, and ``J`` decides (:meth:`divergence_converged`).  Elsewhere (extrapolated
        steps, back-offs, rising gains) no observed ratio bounds it -- a mean-field fit on correlated
        features passed ``J <= 0.1 tol |ELBO|`` 67 tolerances from its optimum, at a rate of 0.9992
        -- so the full step is taken next, and its gain measures the rate
        (:func:`_gap_after_checked_step`) -- unless ``measure`` is False (a block updated as a Jacobi
        sweep, whose slowest mode one step cannot show: a mean-field Poisson GLM on correlated features
        measured 0.5 tol left with 252 to go); the fit then goes on until its gains are regular.
        """
        if _regular(self.state.gains, self.state.steps) and self.divergence_converged(divergence, elbo):
            return CONVERGED
        if divergence <= AT_ROUNDING * self.allowed(elbo):
            return CONVERGED                    # the full step would not move the fit: gains are rounding
        if measure and np.isfinite(divergence):
            self.state.divergence = float(divergence)
            self.state.plain_next = True        # that full step, not an extrapolation
        return None

    def elbo_test(self, elbo, previous, accelerated, elbo_trace, rho=1.0):
        """After an iteration: CONTINUE, CONVERGED, or CHECK (the ELBO test passed after a shortened step).

        Parameters
        ----------
        elbo, previous : float
            ELBO after and before the iteration (``previous`` unused for stochastic fits).
        accelerated : bool
            Whether the iteration was an extrapolated step.
        elbo_trace : list of float
            The whole trace, this iteration included (stochastic windows).
        rho : float
            The (smallest) step size of the iteration (1: a full CVI step).
        """
        if self.stochastic:
            return CONVERGED if _windows_agree(elbo_trace, self.tol) else CONTINUE
        state = self.state
        allowed = self.allowed(elbo)
        state.gains.append(np.nan if accelerated else elbo - previous)
        state.steps.append(np.nan if accelerated else float(rho))
        del state.gains[:-GAIN_WINDOW], state.steps[:-GAIN_WINDOW]
        small = abs(elbo - previous) <= allowed
        checked, state.divergence = state.divergence, None
        if checked is not None and rho == 1.0 and not accelerated:
            # the step just taken is the one whose divergence was too large: its gain measures the rate
            if _gap_after_checked_step(elbo - previous, checked) <= allowed:
                state.plain_next = False
                return CONVERGED
        passed = (estimated_remaining_gain(state.gains) <= allowed
                  or (small and _tail_at_last_rate(state.gains) <= allowed))
        # an extrapolated step that barely moves may be stagnation, not convergence, and the
        # ordinary step after it has no rate to judge its small change by (at a rate near 1 the
        # optimum is many such changes away): a small change is confirmed by ordinary steps only
        state.plain_next = small and (accelerated or _after_extrapolation(state.gains))
        # the ratios are evidence of a rate only for a small last gain in a regular stretch of gains
        self.needs_divergence = not (small and _regular(state.gains, state.steps))
        return CHECK if passed and not accelerated else CONTINUE

    def allowed(self, elbo):
        """The ELBO change that counts as converged at ``elbo``: ``tol * |elbo|``."""
        return self.tol * max(abs(elbo), 1e-300)

    needs_divergence = False
    """Whether the last passed ELBO test must be confirmed by the full step's divergence (set by :meth:`elbo_test`)."""

    def divergence_converged(self, divergence, elbo):
        """Whether a full step's Jeffreys divergence ``J`` puts the fit within ``tol`` of its optimum.

        The gap is about ``J / (2 (1 - rho))`` with ``rho`` the square root of the largest recent ratio
        of ordinary gains (module notes).
        """
        rate = np.sqrt(_largest_ratio(self.state.gains))
        return bool(divergence <= 2.0 * (1.0 - rate) * self.allowed(elbo))


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


def _tail_at_last_rate(gains):
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


def _gap_after_checked_step(gain, divergence):
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


def _regular(gains, steps):
    """Whether the last ``GAIN_WINDOW`` gains (all of them, at least 3) are ordinary, positive and
    decreasing, and come from steps of one size (one iteration map: back-offs that cycle through
    1/4, 1/2 and 1 make ratios of gains that are no rate)."""
    if len(gains) < 3:
        return False
    values, sizes = np.asarray(gains, dtype=float), np.asarray(steps, dtype=float)
    return bool(np.all(values > 0) and np.all(values[1:] < values[:-1])       # False for NaN too
                and np.all(sizes == sizes[0]))


def _largest_ratio(gains):
    """The largest ratio of consecutive ordinary gains among ``gains``: ``UNKNOWN_RATIO`` if none is known,
    1 if a gain is not positive after a positive one or rose (irregular gains: no rate below 1 is shown)."""
    ratios = [b / a for a, b in zip(gains[:-1], gains[1:]) if np.isfinite(a) and np.isfinite(b) and a > 0]
    if not ratios:
        return UNKNOWN_RATIO
    largest = max(ratios)
    if largest >= 1.0 or min(ratios) <= 0.0:
        return 1.0
    return largest


def _after_extrapolation(gains):
    """Whether one of the two gains before the last is an extrapolated step's (two ratios of ordinary
    gains are not known yet)."""
    return bool(np.any(np.isnan(gains[-3:-1])))


def _history_wanted(trace):
    return _gain_ratio_at_least(trace, HISTORY_ABOVE)


def _converging_slowly(trace):
    # no rate before two gains, and one difference of iterates is a poor secant: the extrapolated second
    # step of a 1e5-point logistic regression gained less than the ordinary one and cost two steps
    return _gain_ratio_at_least(trace, ACCELERATE_ABOVE)


def _gain_ratio_at_least(trace, threshold):
    """Whether the last ELBO gain is at least ``threshold`` times the one before (or that one did not
    increase the ELBO); False before two gains are known."""
    if len(trace) < 3:
        return False
    last, before = trace[-1] - trace[-2], trace[-2] - trace[-3]
    return not before > 0.0 or last >= threshold * before


def _windows_agree(trace, tol, length=STOCHASTIC_WINDOW):
    """Stochastic fits: the mean ELBO of the last two windows of ``length`` iterations agree within ``tol``."""
    if len(trace) < 2 * length:
        return False
    recent, before = np.mean(trace[-length:]), np.mean(trace[-2 * length:-length])
    return bool(abs(recent - before) <= tol * abs(recent))
