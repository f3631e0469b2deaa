"""Driving a fit: iterate sweeps until the controller says converged, record the trace, report progress.

:func:`run` sweeps the engine until the controller's stopping rule
(:mod:`efvi.inference._controller`) is met or the iteration budget is spent.
With hyperparameters to learn it hands over to
:func:`efvi.inference._hyperparameters.learn`, which calls
:meth:`Loop.converge_sites` once per trial value.
"""

import time
import warnings

from .callbacks import IterationInfo
from ._controller import CHECK, CONVERGED
from .progress import close_progress_bar, progress_bar
from .warnings import ConvergenceWarning


class Loop:
    """Iteration budget, trace, progress bar and callback of one call to ``fit``.

    Attributes
    ----------
    remaining : int
        Iterations left in this call's budget.
    stopped : bool
        Whether the callback asked to stop.
    failure : str or None
        Why the fit stopped without converging within its budget (None: the budget ran out).
    """

    def __init__(self, engine, max_iter, callback=None, progress=False):
        self.engine, self.callback = engine, callback
        self.remaining = max_iter
        self.stopped = False
        self.failure = None
        self.per_iteration = []
        self.bar = progress_bar(progress, max_iter, "efvi fit")
        if not engine.stochastic and not engine.state.elbo_trace:
            self.record(engine.elbo(), 0.0)

    def record(self, elbo, rho):
        """Append to the ELBO and step-size traces."""
        self.engine.state.elbo_trace.append(float(elbo))
        self.engine.state.rho_trace.append(float(rho))

    def converge_sites(self):
        """Sweep until converged, the budget is spent, the fit stalls or the callback stops; returns converged."""
        engine, controller, state = self.engine, self.engine.controller, self.engine.state
        while self.remaining > 0 and not self.stopped:
            self.remaining -= 1
            previous = state.elbo_trace[-1] if state.elbo_trace else None
            start = time.perf_counter()
            elbo, rho, shortened, accelerated = engine.sweep()
            if state.coarse:
                # the first sweep ran on the cheap rule (the prior's variances are large and
                # the accurate rule would be expensive there); from now on every ELBO is accurate
                engine.refine()
                elbo = engine.elbo()
            self.per_iteration.append(time.perf_counter() - start)
            self.record(elbo, rho)
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix(elbo=f"{elbo:.6g}", rho=f"{rho:.3g}")
            verdict = controller.elbo_test(elbo, previous, accelerated, state.elbo_trace, rho)
            if engine.exact_in_one_step and rho == 1.0:
                verdict = CONVERGED     # the targets do not depend on the block: the full step reached the optimum
            stalled = rho == 0.0 and len(shortened) == len(engine.order)
            if verdict == CHECK and (shortened or state.n_accelerated or controller.needs_divergence):
                # a small change proves nothing after a shortened step, nor, once extrapolated steps
                # have placed the iterate, after a full one that swings between two posteriors of
                # nearly equal ELBO (1e-4 nats from the optimum on breast-cancer probit regression),
                # nor where the gains are no evidence of a rate (a large last gain, irregular gains):
                # ask how far the next full step would move the posterior.
                verdict = controller.divergence_verdict(
                    engine.full_step_divergence(shortened or list(engine.order)), elbo,
                    measure=not any(f.parallel_coordinates for f in engine.factors))
            if self.callback is not None:
                info = IterationInfo(state.iteration, float(elbo), float(rho), dict(engine.q))
                self.stopped = bool(self.callback(info))
            if verdict in (CONVERGED, CHECK):
                return True
            if stalled:
                self.failure = (f"no step size down to min_rho={controller.rule.min_rho:g} increased the ELBO at "
                                f"iteration {state.iteration} although a full step would still move the "
                                "posterior: the fit stalled before its optimum (try another step rule or "
                                "start, a tighter prior, or standardised inputs)")
                return False
        return False

    def close(self, outcome):
        """Close the progress bar at the iterations run, saying how the fit ended (``outcome``)."""
        close_progress_bar(self.bar, outcome)


def run(engine, max_iter, callback=None, progress=False, warn=True):
    """Fit until convergence or ``max_iter`` iterations (sweeps).

    Returns
    -------
    converged : bool
    message : str
        Why the fit did not converge ("" when it did).
    timings : dict
        ``total`` seconds and ``per_iteration`` (list of seconds).
    """
    from ._hyperparameters import learn

    start = time.perf_counter()
    loop = Loop(engine, max_iter, callback, progress)
    outcome = "failed"
    try:
        # minibatch fits learn by Adam steps inside their sweeps (see efvi.inference._hyperparameters)
        converged = learn(loop) if engine.learners and not engine.stochastic else loop.converge_sites()
        outcome = "converged" if converged else ("stopped by the callback" if loop.stopped else
                                                 "not converged" if loop.failure else
                                                 f"stopped at max_iter={max_iter}, not converged")
    finally:
        loop.close(outcome)
    message = ""
    if not converged:
        if loop.stopped:
            message = "the callback stopped the fit"
        else:
            message = loop.failure or (f"the fit stopped at max_iter={max_iter} before the relative ELBO "
                                       f"change fell below tol={engine.controller.tol}")
            if warn:
                warnings.warn(message, ConvergenceWarning, stacklevel=3)
    return converged, message, {"total": time.perf_counter() - start, "per_iteration": loop.per_iteration}
