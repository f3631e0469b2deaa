"""One divergence rule for every stochastic optimiser of efvi.

A run diverges when the quantity it drives (a loss) or the one it moves (the
parameters' norm) grows by orders of magnitude within a short window of
steps.  :class:`DivergenceRule` watches both and raises
:class:`DivergenceError` naming the step and what diverged, before the step
that diverged is committed: the optimiser keeps its last state.  The rule is
plain Python arithmetic on floats, so the numpy optimisers of
:mod:`efvi.inference.ngvi` and their PyTorch front end use the same object.

The rule, with ``w`` the window and ``F`` the factor (defaults 100 steps and
``1e4``):

- loss: diverged when ``loss - min_w(loss) > F * max(|min_w(loss)|, |loss_1|, tiny)``,
  i.e. it rose above the best loss of the last ``w`` steps by ``F`` times the
  loss's own scale (the first loss seen, or the best one);
- parameter norm: diverged when ``norm > F * max(min_w(norm), 1)``, the window's
  minimum taken over the norms after each step (so that a first step from
  zero to the solution's scale is not a divergence), floored at 1 so that
  parameters that start near zero may grow to ordinary sizes.

Minibatch noise moves a loss by a few times its scale, not ``1e4`` times; a
run that needs parameters ``1e4`` times larger than a hundred steps earlier
is, in practice, a step size too large for the problem.  Non-finite values are
refused by the optimisers themselves (:class:`efvi.inference.ngvi.NonFiniteGradientError`).
"""

import math
from collections import deque

__all__ = ["DivergenceRule"]   # DivergenceError is documented in efvi.inference


class DivergenceError(FloatingPointError):
    """A stochastic optimiser's loss or parameters grew by orders of magnitude: the run diverged.

    Attributes
    ----------
    step : int
        The step (counting from 1) at which the rule fired; the optimiser's state is
        that of the step before (the diverging step was not committed).
    what : str
        ``"loss"`` or ``"parameter norm"``.
    value, reference : float
        The diverged value and the window's reference it was compared with.
    """

    def __init__(self, message, step, what, value, reference):
        super().__init__(message)
        self.step, self.what, self.value, self.reference = step, what, value, reference


class _WindowMin:
    """The minimum of the values of the last ``window`` steps (a monotone queue: O(1) amortised per step)."""

    def __init__(self, window):
        self.window = window
        self.queue = deque()

    def push(self, step, value):
        while self.queue and self.queue[-1][1] >= value:
            self.queue.pop()
        self.queue.append((step, value))
        while self.queue[0][0] <= step - self.window:
            self.queue.popleft()

    def minimum(self, step):
        """The minimum over the steps ``step - window + 1 ... step`` recorded so far (inf if none)."""
        for recorded, value in self.queue:   # increasing in step and in value: the first one in the window
            if recorded > step - self.window:
                return value
        return math.inf


class DivergenceRule:
    """Watches a run's loss and parameter norm and raises :class:`DivergenceError` when either explodes.

    Parameters
    ----------
    factor : float
        How many times its reference a value may grow within the window (> 1; default
        ``1e4``, four orders of magnitude).
    window : int
        Steps over which the references (window minima) are taken (>= 1).
    name : str
        The optimiser's name, for the message.

    Notes
    -----
    Call :meth:`check` with a step's loss and proposed parameter norm before the
    step is committed, and :meth:`accept` once it is: a refused step leaves the
    rule's history as it was too.  :meth:`state_dict` and :meth:`load_state_dict`
    carry the history across a save, so a resumed run applies the same rule.
    """

    def __init__(self, factor=1e4, window=100, name="the optimiser"):
        if not (isinstance(factor, (int, float)) and not isinstance(factor, bool) and math.isfinite(factor)
                and factor > 1):
            raise ValueError(f"divergence factor must be a finite float > 1; got {factor!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"divergence window must be a positive integer; got {window!r}")
        self.factor, self.window, self.name = float(factor), window, name
        self._losses, self._norms = _WindowMin(window), _WindowMin(window)
        self._first_loss = None

    def check(self, step, loss=None, norm=None):
        """Raise :class:`DivergenceError` if ``loss`` or ``norm`` at ``step`` diverged; change nothing.

        Parameters
        ----------
        step : int
        loss : float, optional
            The step's loss (an average negative log-likelihood or negative ELBO).
        norm : float, optional
            The Euclidean norm of the proposed parameters (the posterior mean).
        """
        if loss is not None:
            best = self._losses.minimum(step)
            if best != math.inf:
                scale = max(abs(best), abs(self._first_loss), 1e-12)
                if loss - best > self.factor * scale:
                    self._raise(step, "loss", loss, best,
                                f"rose to {loss:.4g}, {(loss - best) / scale:.3g} times its scale {scale:.3g} "
                                f"above the best loss {best:.4g} of the last {self.window} steps")
        if norm is not None:
            smallest = self._norms.minimum(step)
            if smallest != math.inf and norm > self.factor * max(smallest, 1.0):
                self._raise(step, "parameter norm", norm, smallest,
                            f"grew to {norm:.4g} from {smallest:.4g} within {self.window} steps "
                            f"(more than {self.factor:.3g} times)")

    def accept(self, step, loss=None, norm=None):
        """Add a committed step's loss and parameter norm to the history."""
        if loss is not None:
            if self._first_loss is None:
                self._first_loss = float(loss)
            self._losses.push(step, float(loss))
        if norm is not None:
            self._norms.push(step, float(norm))

    def __call__(self, step, loss=None, norm=None):
        """:meth:`check`, then :meth:`accept`."""
        self.check(step, loss, norm)
        self.accept(step, loss, norm)

    def _raise(self, step, what, value, reference, detail):
        raise DivergenceError(
            f"step {step}: {self.name} diverged: the {what} {detail}; the step was not applied. "
            f"Lower the learning rate (or raise the prior precision)", step, what, value, reference)

    def state_dict(self):
        """The history as a dict of plain Python values."""
        return {"factor": self.factor, "window": self.window, "first_loss": self._first_loss,
                "losses": [list(item) for item in self._losses.queue],
                "norms": [list(item) for item in self._norms.queue]}

    def load_state_dict(self, state):
        """Restore a history saved by :meth:`state_dict` (validated)."""
        try:
            factor, window = state["factor"], state["window"]
            first, losses, norms = state["first_loss"], state["losses"], state["norms"]
            restored = DivergenceRule(factor, window, self.name)
            for target, items in ((restored._losses, losses), (restored._norms, norms)):
                previous = None
                for step, value in items:
                    if (not isinstance(step, int) or isinstance(step, bool) or not math.isfinite(value)
                            or (previous is not None and (step <= previous[0] or value < previous[1]))):
                        raise ValueError
                    target.queue.append((step, float(value)))
                    previous = (step, value)
            if first is not None and not math.isfinite(first):
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise ValueError("divergence state must be a dict from DivergenceRule.state_dict() with factor, "
                             "window, first_loss and (step, finite value) pairs increasing in both; "
                             f"got {state!r:.200}") from None
        self.factor, self.window = restored.factor, restored.window
        self._losses, self._norms = restored._losses, restored._norms
        self._first_loss = None if first is None else float(first)
