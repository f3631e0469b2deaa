"""The CVI engine: one iteration (a sweep) of site updates, the ELBO and minibatches.

One iteration visits the blocks that factors touch; :mod:`efvi.inference._loop`
drives the sweeps.  For block ``b`` every factor ``k`` touching it is evaluated
at the current posterior ``q``, giving site targets ``g_kb``, and (Khan and
Nielsen, 2018, eqs. 14 and 21)

* full batch and ``minibatch="sites"``: ``s_kb[i] <- (1 - rho) s_kb[i] + rho g_kb[i]``
  for the chosen points, ``M_kb = sum_i s_kb[i]``;
* ``minibatch="svi"``: ``M_kb <- (1 - rho) M_kb + rho (N / |B|) sum_{i in B} g_kb[i]``;

then ``q_b`` is recomputed from ``eta_b + sum_k M_kb``.  Sweeping block by block
with ``rho = 1`` on conjugate factors is exactly variational message passing.
With the adaptive rule a proposal is accepted only if the exact ELBO does not
decrease; a proposal outside the natural parameter space is never accepted.

The engine holds the model's structure and caches; everything that lasts from
one iteration to the next lives in the :class:`~efvi.inference._state.FitState`
it works on, and every step-size decision is the
:class:`~efvi.inference._controller.Controller`'s.
"""

import warnings

import numpy as np

from ..expfam import tree_add, tree_lerp, tree_scale, tree_sub
from .blocks import InvalidPosterior
from ._hyperparameters import check_minibatch_learning, minibatch_step
from ._gains import lowers_elbo
from ._sweep_acceleration import flatten, joint_extrapolation, joint_sites, try_extrapolated
from .warnings import StepBackoffWarning

_MIN_BACKOFF_RHO = 1e-14


class Engine:
    """One fit's blocks, factors and current posterior; :meth:`start` attaches the state it works on.

    Parameters
    ----------
    model : efvi.inference.Model
    batch_size : int or None
        Data points per factor per iteration (None: all).
    minibatch : {"svi", "sites"}
    """

    def __init__(self, model, batch_size, minibatch):
        self.blocks = dict(model.blocks)      # a learning block is replaced, never changed, by new hyperparameters
        self.factors = model.factors
        self._factor_blocks = [f.block_names for f in self.factors]
        self.touching = {b: [k for k, names in enumerate(self._factor_blocks) if b in names] for b in self.blocks}
        self.order = [b for b in self.blocks if self.touching[b]]
        self.batch_size = batch_size
        if minibatch not in ("svi", "sites"):
            raise ValueError(f"minibatch must be 'svi' or 'sites'; got {minibatch!r}")
        self.minibatch = minibatch if batch_size is not None else None
        if self.minibatch == "svi":
            for f in self.factors:
                if f.local_blocks():
                    raise ValueError(
                        f"minibatch='svi' scales messages by N/|B|, which is wrong for local blocks; "
                        f"{f.describe()} has local blocks {list(f.local_blocks())}: use minibatch='sites'"
                    )
        self.stochastic = any(f.stochastic for f in self.factors) or batch_size is not None
        self.learners = [b for b in self.order if self.blocks[b].learns_hyperparameters]
        self._conjugate = {b: all(self.factors[k].conjugate for k in self.touching[b]) for b in self.blocks}
        # one block whose factors all give targets that do not depend on it: one full step is the optimum
        self.exact_in_one_step = (not self.stochastic and len(self.order) == 1 and self._conjugate[self.order[0]])
        if self.stochastic and self.learners:
            check_minibatch_learning(self)
        self.state = self.controller = self.q = None
        self._first_targets = {}
        self._step_targets = {}      # minibatch learning: block -> (its factors' targets, the q they were taken at)
        self._metrics = {}
        self._clear_caches()
        self._rebind(self.learners)   # a previous fit of this model may have bound them to its learned blocks

    def start(self, state, controller):
        """Work on ``state`` from now on (a fresh one, or a copy of a previous fit's)."""
        self.state, self.controller = state, controller
        for b, theta in state.hyper.theta.items():
            if not np.array_equal(theta, self.blocks[b].hyperparameters()):
                self.blocks[b] = self.blocks[b].with_hyperparameters(theta)
        self._rebind(state.hyper.theta)
        self._first_targets = self._first_step_targets() if state.iteration == 0 else {}
        self._clear_caches()
        self.refresh_posterior()

    def _first_step_targets(self):
        """Targets of the first step for factors that replace their CVI targets at the prior (else none)."""
        if self.batch_size is not None:
            return {}
        targets = {}
        for k, f in enumerate(self.factors):
            if all(not np.any(a) for parts in self.state.sites[k].values() for a in parts):
                first = f.first_step_targets({b: self.blocks[b] for b in f.block_names})
                if first is not None:
                    targets[k] = first
        return targets

    def refresh_posterior(self):
        """Recompute every block's posterior from the stored messages."""
        self.q = {b: self.blocks[b].posterior(self.total_message(b)) for b in self.blocks}

    def total_message(self, b, replace=None):
        """The sum of the messages of the factors touching block ``b`` (``replace``: factor -> message)."""
        total = None
        for k in self.touching[b]:
            msg = replace[k] if replace is not None and k in replace else self.state.messages[k][b]
            total = msg if total is None else tree_add(total, msg)
        return self.blocks[b].zero_message() if total is None else total

    def _clear_caches(self):
        self._cache = [None] * len(self.factors)
        self._kl_cache = {}
        self._target_messages = {}

    # ------------------------------------------------------------------ evaluation
    def _evaluate(self, k, q, index):
        factor = self.factors[k]
        key = tuple(q[b] for b in self._factor_blocks[k])
        cached = self._cache[k]
        if cached is not None and cached[1] is index and all(a is b for a, b in zip(cached[0], key)):
            return cached[2]
        if self.state.coarse and factor.has_coarse_rule:
            result = factor.evaluate(q, index=index, rng=self.state.rng, coarse=True)
        else:
            result = factor.evaluate(q, index=index, rng=self.state.rng)
        self._cache[k] = (key, index, result)
        return result

    def _kl(self, b, qb):
        cached = self._kl_cache.get(b)
        if cached is not None and cached[0] is qb:
            return cached[1]
        value = self.blocks[b].kl(qb)
        self._kl_cache[b] = (qb, value)
        return value

    def elbo(self, q=None, batches=None):
        """ELBO at ``q`` (default: the current posterior): exact in full batch, the N/|B|-scaled
        estimate with minibatches (``batches``: per factor, the evaluated points or None)."""
        q = self.q if q is None else q
        total = 0.0
        for k, factor in enumerate(self.factors):
            index = None if batches is None else batches[k]
            scale = 1.0 if index is None else factor.n_data / len(index)
            total += scale * self._evaluate(k, q, index).expected_log
        return total - sum(self._kl(b, q[b]) for b in self.blocks)

    # ------------------------------------------------------------------ minibatches
    def _next_batches(self):
        """The data points each factor sees this iteration (None: all of them)."""
        if self.batch_size is None:
            return [None] * len(self.factors)
        state = self.state
        batches = []
        for k, factor in enumerate(self.factors):
            n = factor.n_data
            if n <= self.batch_size:
                batches.append(None)
                continue
            # one shuffle per epoch; its last batch is the N mod |B| leftovers (scalings use len(batch))
            if state.orders[k] is None or state.positions[k] >= n:
                state.orders[k] = state.rng.permutation(n)
                state.positions[k] = 0
            start = state.positions[k]
            batches.append(np.sort(state.orders[k][start:start + self.batch_size]))
            state.positions[k] = start + len(batches[-1])
        return batches

    # ------------------------------------------------------------------ updates
    def _propose(self, b, k, target, index, rho):
        """New (sites, message) of factor ``k`` for block ``b`` after a step of size ``rho``."""
        factor = self.factors[k]
        sites, message = self.state.sites[k][b], self.state.messages[k][b]
        if index is None:
            # the message is linear in the sites: interpolate it instead of recomputing it (the targets'
            # message is kept with them: a convergence check's full step is the next sweep's first proposal)
            cached = self._target_messages.get((k, b))
            if cached is not None and cached[0] is target:
                target_message = cached[1]
            else:
                target_message = factor.message(b, target)
                self._target_messages[(k, b)] = (target, target_message)
            new_sites = tree_lerp(sites, target, rho)
            if _same_arrays(message, sites) and _same_arrays(target_message, target):
                return new_sites, new_sites   # the message is the sites themselves (e.g. Observe)
            return new_sites, tree_lerp(message, target_message, rho)
        old_rows = tuple(s[index] for s in sites)
        if self.minibatch == "svi":
            new_rows = target
            scaled = tree_scale(factor.message(b, target, index), factor.n_data / len(index))
            new_message = tree_lerp(message, scaled, rho)
        else:
            new_rows = tree_lerp(old_rows, target, rho)
            delta = tree_sub(factor.message(b, new_rows, index), factor.message(b, old_rows, index))
            new_message = tree_add(message, delta)
        new_sites = tuple(s.copy() for s in sites)
        for s, rows in zip(new_sites, new_rows):
            s[index] = rows
        return new_sites, new_message

    def _targets(self, b, batches):
        targets = {}
        for k in self.touching[b]:
            first = self._first_targets.get(k)
            targets[k] = first[b] if first is not None else self._evaluate(k, self.q, batches[k]).targets[b]
        return targets

    def _posterior_with(self, b, proposals):
        """Block ``b``'s posterior with the messages of ``proposals`` (factor -> (sites, message))."""
        return self.blocks[b].posterior(self.total_message(b, {k: p[1] for k, p in proposals.items()}))

    def anderson_metric(self, b):
        """The factors' weights of block ``b``'s flattened sites in Anderson's least squares (None: all 1)."""
        cached = self._metrics.get(b, False)
        if cached is not False:
            return cached
        parts = []
        for k in self.touching[b]:
            weights = self.factors[k].site_weights(b)
            parts.append(weights if weights is not None else tuple(np.ones(np.shape(a)) for a in self.state.sites[k][b]))
        metric = flatten(parts)
        self._metrics[b] = metric = None if np.all(metric == 1.0) else metric
        return metric

    def _commit(self, b, proposals, q_new):
        for k, (new_sites, new_message) in proposals.items():
            self.state.sites[k][b] = new_sites
            self.state.messages[k][b] = new_message
        self.q = q_new

    def _update_block(self, b, batches, current_elbo, accelerate, joint=False):
        """One damped site update of block ``b``; returns (rho used or 0.0, new ELBO or None, extrapolated).

        ``current_elbo`` is the ELBO before the update, or None when not yet computed.  ``joint``: the
        acceleration history is the whole sweep's (:func:`._sweep_acceleration.joint_extrapolation`), not this
        block's.
        """
        ks = self.touching[b]
        targets = self._targets(b, batches)
        if self.stochastic and b in self.learners:
            self._step_targets[b] = (targets, self.q[b])
        controller = self.controller
        record, restart = (False, False) if joint else controller.keeps_history(self.state.elbo_trace)
        if restart:
            controller.accelerator.reset()
        if record:
            controller.accelerator.record(flatten([self.state.sites[k][b] for k in ks]),
                                          flatten([targets[k] for k in ks]))
        proposal = controller.accelerator.propose(self.anderson_metric(b)) if accelerate else None
        if proposal is not None:     # None also without history: no evaluation spent, no failure
            new_elbo = try_extrapolated(self, proposal, [b], batches, current_elbo)
            controller.extrapolation_done(new_elbo is not None)
            if new_elbo is not None:
                self.state.n_accelerated += 1
                return 1.0, new_elbo, True
        rho = controller.first_rho(self.state.iteration)
        # a full step on factors whose targets do not depend on this block is the exact coordinate
        # update (VMP): it cannot lower the ELBO, so it needs no check
        checked = controller.rule.adaptive and not (rho == 1.0 and self._conjugate[b])
        warned = False
        while True:
            proposals = {k: self._propose(b, k, targets[k], batches[k], rho) for k in ks}
            try:
                qb = self._posterior_with(b, proposals)
            except InvalidPosterior as err:
                self.state.n_backoffs += 1
                rho *= 0.5
                if rho < _MIN_BACKOFF_RHO:
                    raise RuntimeError(
                        f"block {b!r}: no step size keeps the posterior valid ({err}). The site "
                        "targets at the current posterior are too extreme to add in floating point "
                        "-- typically an exponential link (Poisson, Gamma) evaluated under a very "
                        "diffuse prior, where E[exp(a)] = exp(m + v/2) overflows the curvature. "
                        "Use a tighter prior (or standardised inputs), or start from a previous fit "
                        "with init=..."
                    ) from err
                if not controller.rule.adaptive and not warned:
                    warnings.warn(
                        f"block {b!r}: step shortened because the full step left the valid "
                        f"parameter set ({err})", StepBackoffWarning, stacklevel=5,
                    )
                    warned = True
                continue
            q_new = dict(self.q)
            q_new[b] = qb
            new_elbo = None
            if checked:
                if current_elbo is None:
                    current_elbo = self.elbo(self.q, batches)
                new_elbo = self.elbo(q_new, batches)
                if lowers_elbo(new_elbo, current_elbo):
                    rho = controller.retry_rho(rho)
                    if rho is None:
                        return 0.0, current_elbo, False
                    continue
            self._commit(b, proposals, q_new)
            controller.accepted(rho)
            return rho, new_elbo, False

    def sweep(self):
        """One iteration over all blocks.

        Returns
        -------
        elbo : float
            ELBO after the sweep.
        rho : float
            Smallest step size used (0.0 if some block found no acceptable step).
        shortened : list of str
            Blocks whose accepted step was shorter than a full CVI step (or none at all).
        accelerated : bool
            Whether the sweep was an extrapolated step.
        """
        state = self.state
        batches = self._next_batches()
        if self.stochastic:
            self._cache = [None] * len(self.factors)
        accelerate = self.controller.accelerate_now(state.iteration, state.elbo_trace)
        # several blocks: the whole sweep is the fixed-point map that is accelerated
        joint = len(self.order) > 1 and self.controller.accelerator is not None
        record, restart = self.controller.keeps_history(state.elbo_trace) if joint else (False, False)
        before = flatten(joint_sites(self)) if record else None
        current = self.elbo(self.q, batches) if accelerate and not joint else None   # when a check needs it
        rhos, shortened, accelerated = [], [], False
        for b in self.order:
            rho, current, extrapolated = self._update_block(b, batches, current, accelerate and not joint, joint)
            accelerated |= extrapolated
            rhos.append(rho)
            if not extrapolated and self.controller.is_short(rho):
                shortened.append(b)
        elbo = current if current is not None else self.elbo(self.q, batches)
        if joint:
            elbo, accelerated = joint_extrapolation(self, before, restart, batches, elbo, accelerate,
                                                    full=not shortened)
        if self.stochastic and self.learners:
            minibatch_step(self, batches, self._step_targets)
            self._step_targets = {}
        state.iteration += 1
        self._first_targets = {}
        return elbo, min(rhos) if rhos else 0.0, shortened, accelerated

    def full_step_divergence(self, blocks):
        """Sum over ``blocks`` of the Jeffreys divergence between the current posterior and the one
        a full CVI step (``rho = 1``) would give, the other blocks held; ``inf`` if that step is invalid."""
        total = 0.0
        for b in blocks:
            targets = self._targets(b, [None] * len(self.factors))
            proposals = {k: self._propose(b, k, targets[k], None, 1.0) for k in self.touching[b]}
            try:
                q_full = self._posterior_with(b, proposals)
            except InvalidPosterior:
                return np.inf
            total += self.blocks[b].divergence(self.q[b], q_full)
        return float(total) if np.isfinite(total) else np.inf

    def refine(self):
        """Leave the coarse quadrature: every factor evaluates accurately from now on."""
        self.state.coarse = False
        self._cache = [None] * len(self.factors)
        if self.controller.accelerator is not None:
            self.controller.accelerator.reset()

    # ------------------------------------------------------------------ hyperparameters
    def set_hyperparameters(self, theta, hold_posterior=False):
        """Rebuild the blocks in ``theta`` (block name -> log hyperparameters) and refresh their posteriors.

        Parameters
        ----------
        theta : dict
            Block name -> array of log hyperparameters, for some or all learning blocks.
        hold_posterior : bool
            False (full-batch learning): a block whose messages depend on its
            hyperparameters re-derives them from the stored sites, and the
            stopping rule's and the accelerator's history is forgotten (the
            fixed-point map changed).  True (minibatch learning): each block's
            messages are kept, or carried by the block (``carry_messages``: a
            sparse GP keeps ``q(u)`` at the inducing inputs where it was).

        Raises
        ------
        ValueError
            If a prior cannot be built there or the sites make its posterior invalid
            (:class:`~efvi.inference.InvalidPosterior`); the engine is then unchanged.
        """
        old, old_messages = dict(self.blocks), [dict(m) for m in self.state.messages]
        try:
            for b, part in theta.items():
                previous = self.blocks[b]
                self.blocks[b] = new = previous.with_hyperparameters(part)
                if hold_posterior:
                    self._rebind([b])
                    if hasattr(new, "carry_messages"):
                        ks = self.touching[b]
                        for k, message in zip(ks, new.carry_messages(previous, [self.state.messages[k][b] for k in ks])):
                            self.state.messages[k][b] = message
                elif getattr(new, "messages_depend_on_hyperparameters", False):
                    self._rederive_messages(b)
            q = dict(self.q)
            q.update({b: self.blocks[b].posterior(self.total_message(b)) for b in theta})
        except ValueError:
            self.blocks = old
            self.state.messages = old_messages
            self._rebind(theta)
            raise
        self.q = q
        self.state.hyper.theta.update({b: np.array(part, dtype=float) for b, part in theta.items()})
        self._clear_caches()
        if not hold_posterior:
            self.controller.forget_history()

    def _rederive_messages(self, b):
        """Rebind the factors of block ``b`` to it and recompute their messages from the stored sites.

        For blocks whose messages are not the sites themselves but depend on the
        hyperparameters (a sparse GP's ``v``-space sums); full batch only, as is
        hyperparameter learning.
        """
        self._rebind([b])
        for k in self.touching[b]:
            self.state.messages[k][b] = self.factors[k].message(b, self.state.sites[k][b])

    def _rebind(self, names):
        """Bind the factors of the hyperparameter-dependent blocks among ``names`` to the engine's blocks."""
        for b in names:
            if getattr(self.blocks[b], "messages_depend_on_hyperparameters", False):
                for k in self.touching[b]:
                    self.factors[k].bind({n: self.blocks[n] for n in self._factor_blocks[k]})

    def hyperparameter_gradient(self, b):
        """Gradient of ``log Z(theta)`` of block ``b``'s prior times its fixed summed sites."""
        block = self.blocks[b]
        if hasattr(block, "elbo_gradient"):    # needs the per-point sites, not only their sum (a sparse GP)
            return block.elbo_gradient(self.q[b], [(self.state.sites[k][b], None, 1.0) for k in self.touching[b]])
        return block.log_normaliser(block.hyperparameters(), self.total_message(b))[1]


def _same_arrays(a, b):
    """Whether two parameter tuples hold the very same array objects."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))
