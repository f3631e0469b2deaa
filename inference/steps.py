"""Step-size rules for the CVI site update ``s <- (1 - rho) s + rho g``.

Three rules, chosen by ``Model.fit(step=...)``:

* :class:`Adaptive` (the default for deterministic fits): try ``rho``; accept if
  the ELBO does not decrease, otherwise shrink ``rho`` (x 1/4) and retry from the same
  state; after an accepted step ``rho`` grows back (x 4, or x 2 after a retry) towards ``max_rho``.  With
  conjugate factors every step with ``rho = 1`` is accepted (VMP).
* :class:`Fixed`: a constant ``rho``.
* :class:`Decaying`: Robbins-Monro ``rho_t = rho0 (1 + t / delay)^{-power}``,
  the default when a factor is stochastic (Monte Carlo) or with minibatches.

Whatever the rule, a step that leaves the natural parameter space (e.g. a
precision that is not positive definite) is never accepted: the engine halves
``rho`` until the posterior is valid and counts the back-offs.
"""

import numbers

import numpy as np


class StepRule:
    """Base class of step-size rules.

    A rule is a fixed configuration; what changes during a fit (e.g. the
    adaptive rule's current step size) lives in a small JSON-serialisable
    ``state`` dict that the fit owns, so that a rule object can serve any
    number of fits and a saved fit resumes exactly.
    """

    adaptive = False

    def params(self):
        """The constructor arguments (JSON numbers), so that a saved fit can rebuild and check its rule."""
        return {}

    def initial_state(self):
        """The state at the start of a fit (a dict of JSON numbers and booleans)."""
        return {}

    def check_state(self, state):
        """``state`` as this rule's state after checking it (e.g. one read from a file).

        Raises
        ------
        ValueError
            Naming the entry that is missing or out of range.
        """
        if state:
            raise ValueError(f"{type(self).__name__} keeps no state; got {state!r}")
        return {}

    def rho(self, iteration, state=None):
        """The step size to try first at ``iteration`` (0-based)."""
        raise NotImplementedError

    def accepted(self, rho, state=None):
        """Called after a step of size ``rho`` was accepted (updates ``state`` in place)."""

    def rejected(self, rho, state=None):
        """Called after a step of size ``rho`` was rejected; returns the next ``rho`` to try."""
        return 0.5 * rho


class Fixed(StepRule):
    """A constant step size ``rho`` in (0, 1]."""

    def __init__(self, rho=1.0):
        self._rho = _check_rho(rho, "rho")

    def params(self):
        return {"rho": self._rho}

    def rho(self, iteration, state=None):
        return self._rho

    def __repr__(self):
        return f"Fixed(rho={self._rho})"


class Decaying(StepRule):
    """Robbins-Monro schedule ``rho_t = rho0 * (1 + t / delay) ** (-power)``.

    Parameters
    ----------
    rho0 : float in (0, 1]
    delay : float > 0
        Iterations before the decay takes hold.
    power : float in (0.5, 1]
        Robbins-Monro exponent (sum of rho diverges, sum of rho^2 converges).
    """

    def __init__(self, rho0=1.0, delay=10.0, power=0.7):
        self.rho0 = _check_rho(rho0, "rho0")
        self.delay = _check_number(delay, "delay", lambda x: x > 0, "a finite number > 0")
        self.power = _check_number(power, "power", lambda x: 0.5 < x <= 1.0, "a number in (0.5, 1]")

    def params(self):
        return {"rho0": self.rho0, "delay": self.delay, "power": self.power}

    def rho(self, iteration, state=None):
        return self.rho0 * (1.0 + iteration / self.delay) ** (-self.power)

    def __repr__(self):
        return f"Decaying(rho0={self.rho0}, delay={self.delay}, power={self.power})"


class Adaptive(StepRule):
    """Accept a step if the ELBO does not decrease; otherwise shrink ``rho``.

    Parameters
    ----------
    rho0 : float in (0, 1]
        First step size tried.
    grow : float >= 1
        Factor applied to ``rho`` after an accepted step (capped at ``max_rho``);
        ``sqrt(grow)`` when that step was itself a shortened retry.
    shrink : float in (0, 1)
        Factor applied after a rejected step.
    max_rho : float in (0, 1]
    min_rho : float > 0
        Below this the fit stops with a warning: no step improves the ELBO.
    """

    adaptive = True

    def __init__(self, rho0=1.0, grow=4.0, shrink=0.25, max_rho=1.0, min_rho=1e-10):
        self.max_rho = _check_rho(max_rho, "max_rho")
        self.rho0 = min(_check_rho(rho0, "rho0"), self.max_rho)
        self.grow = _check_number(grow, "grow", lambda x: x >= 1.0, "a finite number >= 1")
        self.shrink = _check_number(shrink, "shrink", lambda x: 0.0 < x < 1.0, "a number in (0, 1)")
        self.min_rho = _check_number(min_rho, "min_rho", lambda x: 0.0 < x < self.rho0,
                                     f"a number in (0, rho0) = (0, {self.rho0})")

    def params(self):
        return {"rho0": self.rho0, "grow": self.grow, "shrink": self.shrink, "max_rho": self.max_rho,
                "min_rho": self.min_rho}

    def initial_state(self):
        return {"current": self.rho0, "rejected": False}

    def check_state(self, state):
        if not isinstance(state, dict) or set(state) != {"current", "rejected"}:
            raise ValueError(f"an Adaptive step state must be a dict with keys 'current' and 'rejected'; "
                             f"got {state!r}")
        current = state["current"]
        if isinstance(current, bool) or not isinstance(current, (int, float)) or not (
                np.isfinite(current) and self.min_rho <= current <= self.max_rho):
            raise ValueError(f"the step state's 'current' must be a number in [min_rho, max_rho] = "
                             f"[{self.min_rho}, {self.max_rho}]; got {current!r}")
        if not isinstance(state["rejected"], bool):
            raise ValueError(f"the step state's 'rejected' must be true or false; got {state['rejected']!r}")
        return {"current": float(current), "rejected": state["rejected"]}

    def rho(self, iteration, state=None):
        return self.rho0 if state is None else state["current"]

    def accepted(self, rho, state=None):
        # grow more cautiously (sqrt(grow)) right after a rejection: that step size was just too long
        factor = np.sqrt(self.grow) if state["rejected"] else self.grow
        state["current"] = min(self.max_rho, rho * factor)
        state["rejected"] = False

    def rejected(self, rho, state=None):
        state["rejected"] = True
        return rho * self.shrink

    def __repr__(self):
        return f"Adaptive(rho0={self.rho0}, grow={self.grow}, shrink={self.shrink})"


RULES = {"Adaptive": Adaptive, "Decaying": Decaying, "Fixed": Fixed}
"""The built-in rules by class name (a saved fit names its rule)."""


def resolve_step(step, stochastic):
    """Turn the ``step`` argument of ``fit`` into a :class:`StepRule`.

    Parameters
    ----------
    step : "adaptive", "decaying", float, StepRule or None
        ``None`` picks :class:`Adaptive` for deterministic fits and
        :class:`Decaying` for stochastic ones.
    stochastic : bool
        Whether any factor is Monte Carlo or the fit uses minibatches.
    """
    if step is None:
        return Decaying() if stochastic else Adaptive()
    if isinstance(step, StepRule):
        return step
    if isinstance(step, str):
        if step == "adaptive":
            if stochastic:
                raise ValueError(
                    "step='adaptive' needs an exact ELBO; this fit is stochastic (Monte Carlo "
                    "factors or minibatches): use step='decaying', a float, or a StepRule"
                )
            return Adaptive()
        if step == "decaying":
            return Decaying()
        raise ValueError(f"step must be 'adaptive', 'decaying', a float or a StepRule; got {step!r}")
    if isinstance(step, (int, float, np.floating)) and not isinstance(step, bool):
        return Fixed(float(step))
    raise ValueError(f"step must be 'adaptive', 'decaying', a float or a StepRule; got {step!r}")


def _check_rho(rho, name):
    return _check_number(rho, name, lambda x: 0.0 < x <= 1.0, "a number in (0, 1]")


def _check_number(value, name, valid, expected):
    """``value`` as a float after checking it is a finite real scalar (not a bool or string) with
    ``valid(value)``; otherwise a ValueError naming ``name``, ``expected`` and ``value``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be {expected}; got {value!r} of type {type(value).__name__}")
    value = float(value)
    if not (np.isfinite(value) and valid(value)):
        raise ValueError(f"{name} must be {expected}; got {value!r}")
    return value
