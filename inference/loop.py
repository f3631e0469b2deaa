"""Driving a fit: iterate sweeps until convergence, record the trace, report progress.

``run`` sweeps the engine until the relative ELBO change of one iteration is at
most ``tol`` (stochastic fits compare 20-iteration averages) or the iteration
budget is spent.  With hyperparameters to learn it hands over to
:func:`inference.hyperparameters.learn`, which calls :meth:`Loop.converge_sites`
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
        window = []
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
                converged = abs(elbo - previous) <= self.tol * max(abs(elbo), 1e-300)
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
        warnings.warn(
            f"the fit stopped at max_iter={max_iter} before the relative ELBO change fell "
            f"below tol={tol}", ConvergenceWarning, stacklevel=3,
        )
    return converged, {"total": time.perf_counter() - start, "per_iteration": loop.per_iteration}


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
