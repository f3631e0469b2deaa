"""Learning prior hyperparameters: L-BFGS on the ELBO with the sites converged at every trial value.

For hyperparameters ``theta`` of a structured prior (kernel parameters of a GP
or a Markov GP), let ``ELBO*(theta) = max_q ELBO(q, theta)``.  At the optimal
``q`` -- the fixed point of the sites -- the envelope theorem gives

.. math:: \\nabla_\\theta ELBO^*(\\theta) = \\partial_\\theta ELBO(q^*, \\theta)
          = E_{q^*}[\\nabla_\\theta \\log p_\\theta(f)] = \\nabla_\\theta \\log Z(\\theta; \\text{sites}^*),

the gradient of the log normaliser of the prior times the *fixed* sites, which
each block computes (GP: one reverse pass through the kernel matrix; Markov GP:
Fisher's identity).  So ``ELBO*`` is maximised by L-BFGS in the log
hyperparameters; each evaluation sets ``theta``, re-converges the sites from
where they were (a few sweeps), and returns the ELBO and that gradient.  This
converges superlinearly, where alternating "converge the sites, maximise
``log Z`` with the sites fixed" converges only linearly (hundreds of rounds on
two-moons classification).

A block that learns provides ``hyperparameters()``, ``set_hyperparameters(theta)``
and ``log_normaliser(theta, message) -> (value, gradient)``.
"""

import numpy as np
from scipy.optimize import minimize



class _BudgetSpent(Exception):
    """The iteration budget ran out (or the callback stopped the fit) inside an evaluation."""


def learn(loop, learners):
    """Maximise the ELBO over the hyperparameters of the blocks ``learners``; returns converged."""
    engine = loop.engine
    blocks = [engine.blocks[b] for b in learners]
    sizes = [len(block.hyperparameters()) for block in blocks]
    start = np.concatenate([block.hyperparameters() for block in blocks])
    state = {"theta": start.copy(), "converged": loop.converge_sites()}

    def gradient():
        return np.concatenate([block.log_normaliser(block.hyperparameters(), engine._total_message(name))[1]
                               for block, name in zip(blocks, learners)])

    def objective(theta):
        if not np.array_equal(theta, state["theta"]):   # else: the sites are converged there already
            if loop.remaining <= 0 or loop.stopped:
                raise _BudgetSpent
            try:
                for block, part in zip(blocks, np.split(theta, np.cumsum(sizes)[:-1])):
                    block.set_hyperparameters(part)
                engine.reset_structure()
            except ValueError:          # InvalidPosterior, or a prior that cannot be built there
                return np.inf, np.zeros_like(theta)
            state["theta"] = theta.copy()
            loop.record(engine.elbo(engine.q, [None] * len(engine.factors)), 0.0)
            state["converged"] = loop.converge_sites()
        if not state["converged"]:
            raise _BudgetSpent
        return -engine.elbo_trace[-1], -gradient()

    if not state["converged"]:
        return False
    try:
        result = minimize(objective, start, jac=True, method="L-BFGS-B",
                          options={"maxiter": min(block.hyper_max_iter for block in blocks),
                                   "ftol": 1e-3 * loop.tol, "gtol": 1e-6})
        objective(result.x)                                # leave the engine at the optimum
    except _BudgetSpent:
        return False
    if not result.success:
        loop.failure = (f"the hyperparameter optimiser (L-BFGS-B, ftol={1e-3 * loop.tol:.0e}) stopped "
                        f"without converging: {result.message}")
    return bool(result.success)
