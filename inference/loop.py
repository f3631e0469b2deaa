r"""Driving a fit: iterate sweeps until convergence, record the trace, report progress.

``run`` sweeps the engine until the relative ELBO change of one iteration is at
most ``tol`` (stochastic fits compare 20-iteration averages) or the iteration
budget is spent.  A deterministic fit also stops once the ELBO it has still to
gain is estimated to be at most ``tol`` (relative).  Near the optimum CVI
converges linearly with a small rate: the gains of successive ordinary steps
shrink by a near-constant ratio (about 2e-3 for logistic regression, 3e-2 for
GP classification), or faster.  So when the last three gains
:math:`\Delta_{k-2}, \Delta_{k-1}, \Delta_k > 0` have ratios
:math:`r_k = \Delta_k / \Delta_{k-1} \le r_{k-1} < 1/2`, the geometric tail
:math:`\Delta_k r_k / (1 - r_k)` estimates the gain still to come: exactly for
a constant rate, from above for a shrinking one (the tests check it within 5%
along real fits).  That saves the step whose only use would be to confirm
convergence.  With hyperparameters to learn it hands over to
:func:`efvi.inference.hyperparameters.learn`, which calls :meth:`Loop.converge_sites`
once per trial value.
"""

import time
import warnings

import numpy as np

from .callbacks import IterationInfo
from .warnings import ConvergenceWarning


class Loop:
    """Iteration budget, trace, progress bar and callback of one call to ``fit``."""

    def __init__(self, engine, max_iter, tol, callback=None, progress=False):
        self.engine, self.tol, self.callback = engine, tol, callback
        self.remaining = max_iter
        self.stopped = False
        self.failure = None     # why a fit within its budget did not converge (None: the budget ran out)
        self.per_iteration = []
        self.bar = _progress_bar(max_iter, progress)
        if not engine.stochastic and not engine.elbo_trace:
            self.record(engine.elbo(engine.q, [None] * len(engine.factors)), 0.0)

    def record(self, elbo, rho):
        """Append to the ELBO and step-size traces."""
        self.engine.elbo_trace.append(float(elbo))
        self.engine.rho_trace.append(float(rho))

    def converge_sites(self):
        """Sweep until converged, the budget is spent or the callback stops; returns converged."""
        engine = self.engine
        previous = engine.elbo_trace[-1] if engine.elbo_trace else None
        window, gains = [], engine.gains
        while self.remaining > 0 and not self.stopped:
            self.remaining -= 1
            start = time.perf_counter()
            elbo, rho = engine.sweep()
            self.per_iteration.append(time.perf_counter() - start)
            if engine.coarse:
                # the first sweep ran on the cheap rule (the prior's variances are large and
                # the accurate rule would be expensive there); from now on every ELBO is accurate
                engine.refine()
                elbo = engine.elbo(engine.q, [None] * len(engine.factors))
            self.record(elbo, rho)
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(elbo=f"{elbo:.6g}", rho=f"{rho:.3g}")
            if engine.stochastic:
                window.append(elbo)
                converged = _stochastic_converged(window, self.tol)
            else:
                allowed = self.tol * max(abs(elbo), 1e-300)
                gains.append(elbo - previous if not engine.last_accelerated else np.nan)
                converged = abs(elbo - previous) <= allowed or estimated_remaining_gain(gains) <= allowed
                previous = elbo
                # an extrapolated step that barely moves may be stagnation, not convergence:
                # only an ordinary CVI step may confirm convergence
                engine.plain_next = converged and engine.last_accelerated
                converged = converged and not engine.last_accelerated
            if self.callback is not None:
                info = IterationInfo(engine.iteration, float(elbo), float(rho), dict(engine.q))
                self.stopped = bool(self.callback(info))
            if converged:
                return True
        return False

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run(engine, max_iter, tol, callback=None, progress=False, warn=True):
    """Fit until convergence or ``max_iter`` iterations (sweeps).

    Returns
    -------
    converged : bool
    timings : dict
        ``total`` seconds and ``per_iteration`` (list of seconds).
    """
    from .hyperparameters import learn

    learners = [b for b in engine.order if engine.blocks[b].learns_hyperparameters]
    if engine.stochastic and learners:
        raise ValueError("hyperparameter learning needs a deterministic fit (no minibatches)")
    start = time.perf_counter()
    loop = Loop(engine, max_iter, tol, callback, progress)
    try:
        converged = learn(loop, learners) if learners else loop.converge_sites()
    finally:
        loop.close()
    if not converged and warn and not loop.stopped:
        reason = loop.failure or (f"the fit stopped at max_iter={max_iter} before the relative ELBO "
                                  f"change fell below tol={tol}")
        warnings.warn(reason, ConvergenceWarning, stacklevel=3)
    return converged, {"total": time.perf_counter() - start, "per_iteration": loop.per_iteration}


def estimated_remaining_gain(gains):
    """The ELBO still to gain, estimated from gains that shrink at least geometrically.

    Parameters
    ----------
    gains : list of float
        ELBO gain of each iteration so far, oldest first; NaN for an
        extrapolated (accelerated) step, which says nothing about the rate.

    Returns
    -------
    float
        ``Delta_k r_k / (1 - r_k)`` with ``r_k = Delta_k / Delta_{k-1}`` when the
        last three gains are positive with ratios ``r_k <= r_{k-1} < 1/2``;
        ``inf`` otherwise (no evidence of a steady, fast rate).
    """
    if len(gains) < 3:
        return np.inf
    first, second, last = gains[-3:]
    if not (first > 0 and second > 0 and last > 0):     # also False for NaN
        return np.inf
    ratio, ratio_before = last / second, second / first
    if not ratio <= ratio_before < 0.5:
        return np.inf
    return last * ratio / (1.0 - ratio)


def _stochastic_converged(window, tol, length=20):
    """Stochastic fits: compare the mean ELBO of the last two windows of ``length`` iterations."""
    if len(window) < 2 * length:
        return False
    recent, before = np.mean(window[-length:]), np.mean(window[-2 * length:-length])
    return abs(recent - before) <= tol * abs(recent)


def _progress_bar(total, progress):
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="efvi fit", leave=False)
