"""The CVI engine's state and one iteration: site updates, step-size control, ELBO, minibatches.

One iteration (a sweep) visits the blocks that factors touch; :mod:`efvi.inference.loop` drives
the sweeps.  For block ``b`` every
factor ``k`` touching it is evaluated at the current posterior ``q``, giving
site targets ``g_kb``, and (seed 000, eqs. 14 and 21)

* full batch and ``minibatch="sites"``: ``s_kb[i] <- (1 - rho) s_kb[i] + rho g_kb[i]``
  for the chosen points, ``M_kb = sum_i s_kb[i]``;
* ``minibatch="svi"``: ``M_kb <- (1 - rho) M_kb + rho (N / |B|) sum_{i in B} g_kb[i]``;

then ``q_b`` is recomputed from ``eta_b + sum_k M_kb``.  Sweeping block by block
with ``rho = 1`` on conjugate factors is exactly variational message passing.
With the adaptive rule a proposal is accepted only if the exact ELBO does not
decrease; a proposal outside the natural parameter space is never accepted.
"""

import warnings

import numpy as np

from ..expfam import tree_add, tree_lerp, tree_scale, tree_sub
from ..expfam._validation import check_integer

from .acceleration import AndersonAccelerator
from .blocks import InvalidPosterior
from .steps import resolve_step
from .warnings import StepBackoffWarning

_MIN_BACKOFF_RHO = 1e-14
_ACCELERATE_ABOVE = 0.1
"""Extrapolate only while an ordinary step gains at least this fraction of the ELBO gain of the step
before (a linear rate above about 0.3): faster convergence does not repay the extrapolation's cost."""


class Engine:
    """Mutable state of one fit.  Built and driven by :meth:`efvi.inference.Model.fit`."""

    def __init__(self, model, step=None, batch_size=None, minibatch="svi", seed=0, acceleration=True,
                 from_prior=False):
        self.model = model
        self.blocks = model.blocks
        self.factors = model.factors
        self.touching = {
            b: [k for k, f in enumerate(self.factors) if b in f.block_names] for b in self.blocks
        }
        self.order = [b for b in self.blocks if self.touching[b]]
        self.batch_size = _check_batch_size(batch_size)
        if minibatch not in ("svi", "sites"):
            raise ValueError(f"minibatch must be 'svi' or 'sites'; got {minibatch!r}")
        self.minibatch = minibatch if self.batch_size is not None else None
        if self.minibatch == "svi":
            for f in self.factors:
                if f.local_blocks():
                    raise ValueError(
                        f"minibatch='svi' scales messages by N/|B|, which is wrong for local blocks; "
                        f"{f.describe()} has local blocks {list(f.local_blocks())}: use minibatch='sites'"
                    )
        self.stochastic = any(f.stochastic for f in self.factors) or self.batch_size is not None
        self.rule = resolve_step(step, self.stochastic)
        self.rng = np.random.default_rng(seed)
        bound = [{b: self.blocks[b] for b in f.block_names} for f in self.factors]
        informed_sites = [None if from_prior else f.informed_sites(blocks) for f, blocks in zip(self.factors, bound)]
        informed = [sites is not None for sites in informed_sites]
        self.sites = [f.init_sites(blocks) if sites is None else sites
                      for f, blocks, sites in zip(self.factors, bound, informed_sites)]
        self.messages = [
            {b: (f.message(b, self.sites[k][b]) if informed[k] else self.blocks[b].zero_message())
             for b in f.block_names} for k, f in enumerate(self.factors)
        ]
        self.orders = [None] * len(self.factors)
        self.positions = [0] * len(self.factors)
        self.iteration = 0
        self.elbo_trace, self.rho_trace = [], []
        self.n_backoffs = 0
        self.n_accelerated = 0
        self.last_accelerated = False   # whether the last update was an Anderson step
        self.plain_next = False         # force an ordinary step (to confirm convergence)
        self.gains = []                  # ELBO gain per iteration, NaN for extrapolated ones (stopping rule)
        self.accelerator_rest = 0        # iterations to skip extrapolation (2^k after k rejections in a row)
        self.accelerator_failures = 0    # consecutive rejected extrapolations
        # the first sweep from the prior uses cheap quadrature (deterministic fits only; a start
        # from data-informed sites is already concentrated, where the accurate rule is cheap)
        self.coarse = (not self.stochastic and not any(informed)
                       and any([f.set_coarse(True) for f in self.factors]))
        if not self.coarse:
            for f in self.factors:
                f.set_coarse(False)
        # Anderson acceleration needs the exact ELBO as a safeguard and one fixed-point map
        self.accelerator = (AndersonAccelerator() if acceleration and self.rule.adaptive
                            and len(self.order) == 1 and not all(f.conjugate for f in self.factors)
                            else None)
        self._cache = [None] * len(self.factors)
        self._kl_cache = {}
        self._target_messages = {}
        self.q = None

    # ------------------------------------------------------------------ state
    def refresh_posterior(self):
        """Recompute every block's posterior from the stored messages."""
        self.q = {b: self.blocks[b].posterior(self._total_message(b)) for b in self.blocks}

    def _total_message(self, b, replace=None):
        total = None
        for k in self.touching[b]:
            msg = replace[k] if replace is not None and k in replace else self.messages[k][b]
            total = msg if total is None else tree_add(total, msg)
        return self.blocks[b].zero_message() if total is None else total

    # ------------------------------------------------------------------ evaluation
    def _evaluate(self, k, q, index):
        factor = self.factors[k]
        key = tuple(q[b] for b in factor.block_names)
        cached = self._cache[k]
        if cached is not None and cached[1] is index and all(a is b for a, b in zip(cached[0], key)):
            return cached[2]
        result = factor.evaluate(q, index=index, rng=self.rng)
        self._cache[k] = (key, index, result)
        return result

    def _kl(self, b, qb):
        cached = self._kl_cache.get(b)
        if cached is not None and cached[0] is qb:
            return cached[1]
        value = self.blocks[b].kl(qb)
        self._kl_cache[b] = (qb, value)
        return value

    def elbo(self, q, batches):
        """ELBO at ``q``: exact in full batch, the N/|B|-scaled estimate with minibatches."""
        total = 0.0
        for k, factor in enumerate(self.factors):
            index = batches[k]
            scale = 1.0 if index is None else factor.n_data / len(index)
            total += scale * self._evaluate(k, q, index).expected_log
        return total - sum(self._kl(b, q[b]) for b in self.blocks)

    # ------------------------------------------------------------------ minibatches
    def next_batches(self):
        """The data points each factor sees this iteration (None: all of them)."""
        if self.batch_size is None:
            return [None] * len(self.factors)
        batches = []
        for k, factor in enumerate(self.factors):
            n = factor.n_data
            if n <= self.batch_size:
                batches.append(None)
                continue
            # one shuffle per epoch; its last batch is the N mod |B| leftovers (scalings use len(batch))
            if self.orders[k] is None or self.positions[k] >= n:
                self.orders[k] = self.rng.permutation(n)
                self.positions[k] = 0
            start = self.positions[k]
            batches.append(np.sort(self.orders[k][start:start + self.batch_size]))
            self.positions[k] = start + len(batches[-1])
        return batches

    # ------------------------------------------------------------------ updates
    def _propose(self, b, k, target, index, rho):
        """New (sites, message) of factor ``k`` for block ``b`` after a step of size ``rho``."""
        factor = self.factors[k]
        sites, message = self.sites[k][b], self.messages[k][b]
        if index is None:
            # the message is linear in the sites: interpolate it instead of recomputing it
            target_message = self._target_messages.get(k)
            if target_message is None:
                target_message = self._target_messages[k] = factor.message(b, target)
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

    def _try_acceleration(self):
        """Extrapolate only in the asymptotic regime: full steps are being accepted, the last
        proposal was not rejected, no ordinary step is needed to confirm convergence, and
        ordinary steps are converging slowly (see ``_ACCELERATE_ABOVE``)."""
        if self.accelerator is None or self.plain_next:
            return False
        if self.accelerator_rest > 0:
            self.accelerator_rest -= 1
            return False
        return self.rule.rho(self.iteration) >= self.rule.max_rho and self._converging_slowly()

    def _converging_slowly(self):
        trace = self.elbo_trace
        if len(trace) < 3:
            return True
        last, before = trace[-1] - trace[-2], trace[-2] - trace[-3]
        return not before > 0.0 or last >= _ACCELERATE_ABOVE * before

    def _accelerated(self, b, ks, targets, batches, current_elbo):
        """Try the Anderson-accelerated sites for block ``b``; returns the new ELBO or None."""
        like = [self.sites[k][b] for k in ks]
        proposal = self.accelerator.propose(_flatten(like), _flatten([targets[k] for k in ks]))
        if proposal is None:
            return None
        proposals = {}
        for k, sites in zip(ks, _unflatten(proposal, like)):
            proposals[k] = (sites, self.factors[k].message(b, sites))
        try:
            qb = self.blocks[b].posterior(self._total_message(b, {k: p[1] for k, p in proposals.items()}))
        except InvalidPosterior:
            return None
        q_new = dict(self.q)
        q_new[b] = qb
        new_elbo = self.elbo(q_new, batches)
        if not np.isfinite(new_elbo) or new_elbo < current_elbo - 1e-11 * max(1.0, abs(current_elbo)):
            return None
        self._commit(b, proposals, q_new)
        return new_elbo

    def _commit(self, b, proposals, q_new):
        for k, (new_sites, new_message) in proposals.items():
            self.sites[k][b] = new_sites
            self.messages[k][b] = new_message
        self.q = q_new

    def update_block(self, b, batches, current_elbo):
        """One damped site update of block ``b``; returns (rho used or 0.0, new ELBO)."""
        ks = self.touching[b]
        targets = {k: self._evaluate(k, self.q, batches[k]).targets[b] for k in ks}
        self._target_messages = {}
        if self._try_acceleration():
            new_elbo = self._accelerated(b, ks, targets, batches, current_elbo)
            if new_elbo is not None:
                self.n_accelerated += 1
                self.accelerator_failures = 0
                self.last_accelerated = True
                return 1.0, new_elbo
            # back off exponentially: rejected extrapolations become rare where they do not pay
            # (often the pre-asymptotic phase), yet the accelerator returns once the iteration
            # settles into its linear regime
            self.accelerator_failures += 1
            self.accelerator_rest = 2 ** self.accelerator_failures - 1
        rho = self.rule.rho(self.iteration)
        warned = False
        while True:
            proposals = {k: self._propose(b, k, targets[k], batches[k], rho) for k in ks}
            try:
                qb = self.blocks[b].posterior(
                    self._total_message(b, {k: p[1] for k, p in proposals.items()})
                )
            except InvalidPosterior as err:
                self.n_backoffs += 1
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
                if not self.rule.adaptive and not warned:
                    warnings.warn(
                        f"block {b!r}: step shortened because the full step left the valid "
                        f"parameter set ({err})", StepBackoffWarning, stacklevel=4,
                    )
                    warned = True
                continue
            q_new = dict(self.q)
            q_new[b] = qb
            new_elbo = None
            if self.rule.adaptive:
                new_elbo = self.elbo(q_new, batches)
                slack = 1e-11 * max(1.0, abs(current_elbo))
                if not np.isfinite(new_elbo) or new_elbo < current_elbo - slack:
                    rho = self.rule.rejected(rho)
                    if rho < self.rule.min_rho:
                        return 0.0, current_elbo
                    continue
            self._commit(b, proposals, q_new)
            self.rule.accepted(rho)
            return rho, new_elbo

    def sweep(self):
        """One iteration over all blocks; returns (ELBO after the sweep, smallest rho used)."""
        self.last_accelerated = False
        batches = self.next_batches()
        if self.stochastic:
            self._cache = [None] * len(self.factors)
        current = self.elbo(self.q, batches) if self.rule.adaptive else None
        rhos = []
        for b in self.order:
            rho, current = self.update_block(b, batches, current)
            rhos.append(rho)
        elbo = current if current is not None else self.elbo(self.q, batches)
        self.iteration += 1
        return elbo, min(rhos) if rhos else 0.0

    def refine(self):
        """Leave the coarse quadrature: every factor evaluates accurately from now on."""
        for f in self.factors:
            f.set_coarse(False)
        self.coarse = False
        self._cache = [None] * len(self.factors)
        if self.accelerator is not None:
            self.accelerator.reset()

    def reset_structure(self):
        """Forget everything tied to the old prior after hyperparameters changed."""
        self._kl_cache.clear()
        self.gains = []
        self._cache = [None] * len(self.factors)
        self.refresh_posterior()
        if self.accelerator is not None:
            self.accelerator.reset()


def _check_batch_size(batch_size):
    return None if batch_size is None else check_integer(batch_size, "batch_size", minimum=1, suffix=" or None")


def _same_arrays(a, b):
    """Whether two parameter tuples hold the very same array objects."""
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _flatten(site_tuples):
    """Concatenate a list of site tuples into one vector."""
    return np.concatenate([np.ravel(a) for sites in site_tuples for a in sites])


def _unflatten(flat, like):
    """Split ``flat`` into site tuples shaped like ``like`` (a list of tuples)."""
    out, start = [], 0
    for sites in like:
        parts = []
        for a in sites:
            parts.append(flat[start:start + a.size].reshape(a.shape))
            start += a.size
        out.append(tuple(parts))
    return out
