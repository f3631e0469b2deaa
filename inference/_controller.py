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

What the gains themselves say -- the geometric tail, the rate after a checked
step, whether a window of gains is regular -- is :mod:`efvi.inference._gains`.
"""

import numpy as np

from ._gains import (after_extrapolation, estimated_remaining_gain, gain_ratio_at_least, gap_after_checked_step,
                     largest_ratio, regular, tail_at_last_rate, windows_agree)

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
        (``_gains.gap_after_checked_step``) -- unless ``measure`` is False (a block updated as a Jacobi
        sweep, whose slowest mode one step cannot show: a mean-field Poisson GLM on correlated features
        measured 0.5 tol left with 252 to go); the fit then goes on until its gains are regular.
        """
        if regular(self.state.gains, self.state.steps) and self.divergence_converged(divergence, elbo):
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
            return CONVERGED if windows_agree(elbo_trace, self.tol) else CONTINUE
        state = self.state
        allowed = self.allowed(elbo)
        state.gains.append(np.nan if accelerated else elbo - previous)
        state.steps.append(np.nan if accelerated else float(rho))
        del state.gains[:-GAIN_WINDOW], state.steps[:-GAIN_WINDOW]
        small = abs(elbo - previous) <= allowed
        checked, state.divergence = state.divergence, None
        if checked is not None and rho == 1.0 and not accelerated:
            # the step just taken is the one whose divergence was too large: its gain measures the rate
            if gap_after_checked_step(elbo - previous, checked) <= allowed:
                state.plain_next = False
                return CONVERGED
        passed = (estimated_remaining_gain(state.gains) <= allowed
                  or (small and tail_at_last_rate(state.gains) <= allowed))
        # an extrapolated step that barely moves may be stagnation, not convergence, and the
        # ordinary step after it has no rate to judge its small change by (at a rate near 1 the
        # optimum is many such changes away): a small change is confirmed by ordinary steps only
        state.plain_next = small and (accelerated or after_extrapolation(state.gains))
        # the ratios are evidence of a rate only for a small last gain in a regular stretch of gains
        self.needs_divergence = not (small and regular(state.gains, state.steps))
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
        rate = np.sqrt(largest_ratio(self.state.gains))
        return bool(divergence <= 2.0 * (1.0 - rate) * self.allowed(elbo))


def _history_wanted(trace):
    return gain_ratio_at_least(trace, HISTORY_ABOVE)


def _converging_slowly(trace):
    # no rate before two gains, and one difference of iterates is a poor secant: the extrapolated second
    # step of a 1e5-point logistic regression gained less than the ordinary one and cost two steps
    return gain_ratio_at_least(trace, ACCELERATE_ABOVE)
