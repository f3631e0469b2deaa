"""The black-box VI loop: estimate, record, check the stopping rule, step; the state a saved fit resumes from.

A run is fully described by its :class:`RunState`: the current ``q``, the
random generator, the steps taken, Adam's moments and the back-off counts,
the divergence rule's history and the traces.  A fit of ``2n`` iterations and
a fit of ``n`` that is saved, loaded and resumed for ``n`` more take the same
draws and the same steps, so their results are equal to the last bit.  That
is why the ELBO at the final ``q`` is estimated from a copy of the generator:
the uninterrupted run draws the same values at that ``q`` for its next step.
"""

import copy
import time
import warnings

import numpy as np

from ..divergence import DivergenceRule
from ..warnings import ConvergenceWarning
from . import _stopping
from ._gradient import estimate
from ._joint import SINGLE_BLOCK
from ._steps import Stepper

HALVINGS_DOMINATE = 0.5
"""Above this fraction of steps halved at least once, halvings dominate: the fit is not called converged."""


class RunState:
    """Everything a black-box VI run carries from one iteration to the next (only :func:`run` mutates it).

    Attributes
    ----------
    posterior : dict
        Block name -> current ``q``.
    rng : numpy.random.Generator
    iteration : int
        Steps taken.
    stepper : Stepper
        Adam's moments, ``n_backoffs`` and ``n_halved_steps``.
    divergence : DivergenceRule
    elbo, elbo_se : list of float
        The Monte Carlo ELBO and its standard error at ``q_0 ... q_iteration``
        (the stopping rule uses :attr:`exact` instead, when there is one).
    exact : list of float or None
        The exact ELBO at the same points, when ``expected_log_joint`` is given.
    variance : dict
        Block name -> list (one per step) of the trace of the stepped gradient's covariance.
    elapsed : float
        Seconds spent in :func:`run`, over every resumption.
    """

    def __init__(self, posterior, rng, step, exact):
        self.posterior = dict(posterior)
        self.rng = rng
        self.iteration = 0
        self.stepper = Stepper(step)
        self.divergence = DivergenceRule(name="bbvi.fit")
        self.elbo, self.elbo_se = [], []
        self.exact = [] if exact else None
        self.variance = {name: [] for name in posterior}
        self.elapsed = 0.0


def run(joint, state, options, schedule, expected_log_joint, n_iter, warn):
    """Take up to ``n_iter`` more steps from ``state``, stopping when the rule of :mod:`._stopping` holds.

    The traces of ``state`` end at the current ``q`` (or are empty): that last
    entry is estimated again here, from the same draws, and replaced.

    Returns
    -------
    converged : bool
    message : str
        Why the run stopped, in a sentence (empty never).

    Raises
    ------
    efvi.inference.DivergenceError
        From the divergence rule; ``state`` is then that of the step before.
    """
    start = time.perf_counter()
    for trace in (state.elbo, state.elbo_se) + (() if state.exact is None else (state.exact,)):
        del trace[state.iteration:]
    end = state.iteration + n_iter
    kind = "natural" if options["step"] == "natural" else "euclidean"
    exact = state.exact is not None
    converged, reason = False, ""
    while True:
        last = state.iteration == end
        current = estimate(joint, state.posterior, options, copy.deepcopy(state.rng) if last else state.rng, (kind,))
        state.elbo.append(current.elbo)
        state.elbo_se.append(current.elbo_standard_error)
        if exact:
            state.exact.append(exact_elbo(expected_log_joint, state.posterior, joint.single))
        if _stopping.due(len(state.elbo), options["window"]):
            trace, errors = (state.exact, np.zeros(len(state.exact))) if exact else (state.elbo, state.elbo_se)
            converged, reason = _stopping.converged(trace, errors, options["window"], options["tol"])
        if converged or last:
            break
        rho = schedule(state.iteration)
        backoffs = state.stepper.n_backoffs
        proposed = {name: state.stepper.step(name, q, current, rho, state.iteration)
                    for name, q in state.posterior.items()}
        state.divergence(state.iteration + 1, loss=-current.elbo, norm=_mean_norm(proposed))
        state.stepper.n_halved_steps += state.stepper.n_backoffs > backoffs
        variances = current.natural_variance if kind == "natural" else current.variance
        for name in state.posterior:
            state.variance[name].append(variances[name])
        state.posterior = proposed
        state.iteration += 1
    state.elapsed += time.perf_counter() - start
    converged, message = _outcome(state, options, converged, reason)
    if warn and not converged:
        warnings.warn(message, ConvergenceWarning, stacklevel=3)
    return converged, message


def _outcome(state, options, converged, reason):
    steps, halved = state.iteration, state.stepper.n_halved_steps
    if steps and halved > HALVINGS_DOMINATE * steps:
        return False, (f"step halvings dominate: {halved} of {steps} steps were halved "
                       f"({state.stepper.n_backoffs} halvings) to keep q valid, so the learning rate is too large "
                       f"for this problem and the result is not converged; lower learning_rate")
    if converged:
        return True, f"converged after {steps} iterations: {reason}"
    window = options["window"]
    if not reason:
        reason = (f"the rule compares the mean ELBO of two windows of {window} iterations, so it needs at least "
                  f"{2 * window - 1} iterations")
    return False, (f"bbvi.fit stopped at {steps} iterations before the stopping rule held: {reason}; raise "
                   f"n_iter, or lower learning_rate or raise n_samples so that the ELBO settles")


def _mean_norm(posterior):
    """Euclidean norm of every block's mean parameters (what the divergence rule watches)."""
    parts = [q.mean_params for q in posterior.values()]
    parts = [part for group in parts for part in (group if isinstance(group, (tuple, list)) else (group,))]
    return float(np.sqrt(sum(np.sum(np.square(np.asarray(part, dtype=float))) for part in parts)))


def exact_elbo(expected_log_joint, posterior, single):
    """``expected_log_joint(q) + H[q]``, after checking the user's function returned a finite scalar."""
    value = expected_log_joint(posterior[SINGLE_BLOCK] if single else dict(posterior))
    value = np.asarray(value, dtype=float)
    if value.shape != () or not np.isfinite(value):
        raise ValueError(f"expected_log_joint(q) must return a finite scalar; got "
                         f"{'shape ' + str(value.shape) if value.shape != () else value}")
    return float(value) + float(sum(np.sum(q.entropy()) for q in posterior.values()))
