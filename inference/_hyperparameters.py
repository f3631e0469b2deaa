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

The search is resumable: every completed evaluation is logged in the fit state
(:class:`efvi.inference._state.HyperState`).  A resumed fit restarts the
optimiser from the same starting point and answers its requests from the log
for as long as it asks for the logged points (it is deterministic, so it does),
then continues live from the saved sites -- the path of an uninterrupted fit,
bit for bit.

A block that learns provides ``hyperparameters()``, ``with_hyperparameters(theta)``
(a new block; the model's own is never changed) and
``log_normaliser(theta, message) -> (value, gradient)``.

**Minibatches.**  A minibatch fit cannot converge the sites at every trial
value: each iteration sees ``B`` of the ``N`` points.  Blocks that say
``learns_from_minibatches`` (the sparse GP) learn as in Hensman et al. (2013)
and GPflow's SVGP with natural gradients: every iteration takes the stochastic
CVI step on ``q`` and one Adam step (Kingma and Ba, 2015) on ``theta`` with
the block's ``learning_rate``, both from the same minibatch at the same point.
The Adam step follows ``(N / B) sum_{i in B} d E_q[log p(y_i | f_i)] / d theta``
minus the KL term's gradient, at fixed ``q`` in the block's chosen
coordinates (the sparse GP holds ``q(u)`` at the inducing inputs): an
unbiased estimate of the ELBO's gradient, whose per-point derivatives are read
off the CVI targets the step has just computed (:meth:`SparseGP.elbo_gradient`).
The block then carries the messages to the new hyperparameters so that ``q``
in those coordinates does not move (:meth:`SparseGP.carry_messages`).  A step that leaves the valid hyperparameters (a ``K_zz`` that
cannot be factorised) is halved until it does not; Adam's moments and its step
count are part of the fit state, saved in fit files, so a resumed fit takes
the uninterrupted path.
"""

import numpy as np

from ._adam import adam_update
from .lbfgs import minimise

ADAM_BETAS = (0.9, 0.999)
"""Adam's decay rates of its first and second moment estimates (Kingma and Ba's defaults)."""

ADAM_EPS = 1e-8
"""Adam's denominator offset."""

MAX_HALVINGS = 10
"""Times a minibatch step on the hyperparameters is halved before it is skipped (counted as a back-off)."""


class _BudgetSpent(Exception):
    """The iteration budget ran out (or the callback stopped the fit) inside an evaluation."""


class _Search:
    """The objective ``theta -> (-ELBO*, -gradient)`` of one call to ``fit``, with the evaluation log."""

    def __init__(self, loop, start):
        self.loop, self.engine = loop, loop.engine
        self.log = self.engine.state.hyper.evaluations
        self.names = self.engine.learners
        self.sizes = [len(self.engine.blocks[b].hyperparameters()) for b in self.names]
        self.start = start
        self.replayed = 0           # how many logged evaluations the optimiser has asked for again
        self.last = None            # the last evaluation handed to the optimiser

    def current(self):
        """The log hyperparameters the engine's sites are converging at (all learning blocks, concatenated)."""
        return np.concatenate([self.engine.state.hyper.theta[b] for b in self.names])

    def __call__(self, theta):
        if self.last is not None and np.array_equal(theta, self.last[0]):
            return self.last[1], self.last[2].copy()
        if self.replayed < len(self.log):
            logged = self.log[self.replayed]
            if np.array_equal(theta, logged[0]):
                self.replayed += 1
                self.last = logged
                return logged[1], logged[2].copy()
            del self.log[self.replayed:]       # the optimiser left the logged path: continue live from here
        return self._evaluate(theta)

    def _evaluate(self, theta):
        loop, engine = self.loop, self.engine
        if not np.array_equal(theta, self.current()):
            if loop.remaining <= 0 or loop.stopped:
                raise _BudgetSpent
            try:
                engine.set_hyperparameters(dict(zip(self.names, np.split(theta, np.cumsum(self.sizes)[:-1]))))
            except ValueError:          # InvalidPosterior, or a prior that cannot be built there
                return self._logged(theta, np.inf, np.zeros_like(theta))
            loop.record(engine.elbo(), 0.0)
        if not loop.converge_sites():
            raise _BudgetSpent
        gradient = np.concatenate([engine.hyperparameter_gradient(b) for b in self.names])
        return self._logged(theta, -engine.state.elbo_trace[-1], -gradient)

    def _logged(self, theta, value, gradient):
        """Log a completed evaluation (invalid points too: a replay must see every request) and return it."""
        self.last = (np.array(theta, dtype=float), float(value), np.array(gradient, dtype=float))
        self.log.append(self.last)
        self.replayed = len(self.log)
        return self.last[1], self.last[2].copy()


def learn(loop):
    """Maximise the ELBO over the hyperparameters of the engine's learning blocks; returns converged.

    A fresh search starts where the fit's hyperparameters are: the model's
    own, or those a minibatch fit learned when it resumes one (full-batch
    L-BFGS then polishes them).  A resumed search starts where it first
    started, its first logged evaluation, so that it replays the same path.
    """
    engine = loop.engine
    log = engine.state.hyper.evaluations
    start = np.array(log[0][0]) if log else np.concatenate([engine.state.hyper.theta[b] for b in engine.learners])
    search = _Search(loop, start)
    tol = engine.controller.tol
    max_iter = min(engine.blocks[b].hyper_max_iter for b in engine.learners)
    try:
        search(start)
        result, converged, message = minimise(search, start, tol, max_iter,
                                              lambda: [logged[1] for logged in search.log])
        search(result.x)                                # leave the engine at the optimum
    except _BudgetSpent:
        return False
    if not converged:
        loop.failure = message
    return converged


def check_minibatch_learning(engine):
    """Raise a named ValueError unless every learning block of a stochastic fit can learn from minibatches."""
    for b in engine.learners:
        block = engine.blocks[b]
        if not getattr(block, "learns_from_minibatches", False):
            raise ValueError(
                f"block {b!r} ({type(block).__name__}) learns its hyperparameters in full batch only (L-BFGS with "
                "the sites converged at every trial value): fit it without batch_size, or fix its "
                "hyperparameters; minibatch learning (Adam) is available for sparse GP blocks")
    if engine.minibatch == "sites":
        raise ValueError("minibatch hyperparameter learning needs minibatch='svi' (its q is held in the block's "
                         "own coordinates while the hyperparameters move); got minibatch='sites'")


def minibatch_step(engine, batches, step_targets):
    """One Adam step on every learning block's hyperparameters from this iteration's minibatch (module notes).

    Parameters
    ----------
    engine : efvi.inference._engine.Engine
    batches : list
        Per factor, the points of this iteration (None: all).
    step_targets : dict
        Block name -> (factor -> CVI targets of its points, the block's posterior they were taken at).

    Raises
    ------
    RuntimeError
        If the estimated gradient is not finite, naming the block and iteration.
    """
    hyper = engine.state.hyper
    hyper.adam_steps += 1
    for b in engine.learners:
        targets, q = step_targets[b]
        block = engine.blocks[b]
        gradient = block.elbo_gradient(q, [(targets[k], batches[k], 1.0 if batches[k] is None else
                                            engine.factors[k].n_data / len(batches[k])) for k in engine.touching[b]])
        if not np.all(np.isfinite(gradient)):
            raise RuntimeError(
                f"block {b!r}: the minibatch estimate of the ELBO's gradient in its hyperparameters is not finite "
                f"at iteration {engine.state.iteration} (hyperparameters {hyper.theta[b]}): lower its learning_rate, "
                "standardise the inputs, or start from other hyperparameters")
        zeros = np.zeros_like(gradient)
        first, second = hyper.moments.get(b, (zeros, zeros))
        theta = hyper.theta[b]
        proposed, first, second = adam_update(theta, -gradient, first, second, hyper.adam_steps,
                                              block.learning_rate, *ADAM_BETAS, ADAM_EPS)
        hyper.moments[b] = (first, second)
        for _ in range(MAX_HALVINGS + 1):
            try:
                engine.set_hyperparameters({b: proposed}, hold_posterior=True)
                break
            except ValueError:          # a K_zz that cannot be factorised, an invalid posterior there
                proposed = theta + 0.5 * (proposed - theta)
        else:
            engine.state.n_backoffs += 1
