"""Anderson acceleration of a whole sweep, for fits with several blocks.

With several blocks one iteration is a sweep of block updates (variational
message passing where the factors are conjugate): a fixed-point map
``s <- G(s)`` on all the sites together.  After the ordinary sweep, its pair
``(s, G(s))`` joins the Anderson history (:mod:`efvi.inference._acceleration`)
when every block took a full step -- a shorter step is not the map, and the
history is dropped -- and the extrapolated sites of every block are tried at
once.  They replace ``G(s)`` only if every block's posterior is valid there and
the exact ELBO does not decrease, so a sweep never loses ELBO to
extrapolation.  (A fit with one block extrapolates that block's update
instead, inside :meth:`Engine._update_block`.)

The sites are flattened in a fixed order: for every block of the sweep, the
sites of every factor touching it (:func:`joint_sites`).  Trying an
extrapolated point (:func:`try_extrapolated`) is the same for one block's sites
and for all of them.
"""

import numpy as np

from .blocks import InvalidPosterior
from ._gains import lowers_elbo


def joint_sites(engine, blocks=None):
    """The sites of every (factor, block) pair for ``blocks`` (default: the sweep's), in a fixed order."""
    return [engine.state.sites[k][b] for b in (engine.order if blocks is None else blocks) for k in engine.touching[b]]


def joint_extrapolation(engine, before, restart, batches, elbo, accelerate, full):
    """Record this sweep as a step of the fixed-point map and try an extrapolated point (module notes).

    Parameters
    ----------
    engine : efvi.inference._engine.Engine
    before : ndarray or None
        The flattened sites before the sweep when the history records it (None otherwise).
    restart : bool
        Whether the history starts afresh (:meth:`Controller.keeps_history`).
    batches : list
        Per factor, the points of this iteration (None: all).
    elbo : float
        The ELBO after the ordinary sweep.
    accelerate : bool
        Whether to try an extrapolated point in this iteration.
    full : bool
        Whether every block took a full step.

    Returns
    -------
    elbo : float
        The ELBO after the iteration.
    accelerated : bool
        Whether the extrapolated sites were taken.
    """
    controller = engine.controller
    accelerator = controller.accelerator
    if not full:
        accelerator.reset()
        return elbo, False
    if restart:
        accelerator.reset()
    if before is None:
        return elbo, False
    accelerator.record(before, flatten(joint_sites(engine)))
    proposal = accelerator.propose(_joint_metric(engine)) if accelerate else None
    if proposal is None:
        return elbo, False
    new_elbo = try_extrapolated(engine, proposal, engine.order, batches, elbo)
    controller.extrapolation_done(new_elbo is not None)
    if new_elbo is None:
        return elbo, False
    engine.state.n_accelerated += 1
    return new_elbo, True


def _joint_metric(engine):
    """Anderson's least-squares weights of the joint sites (None: all 1)."""
    parts = [engine.anderson_metric(b) for b in engine.order]
    if all(p is None for p in parts):
        return None
    sizes = [sum(np.size(a) for k in engine.touching[b] for a in engine.state.sites[k][b]) for b in engine.order]
    return np.concatenate([np.ones(n) if p is None else p for p, n in zip(parts, sizes)])


def try_extrapolated(engine, proposal, blocks, batches, elbo):
    """Take the extrapolated sites ``proposal`` of ``blocks`` (flattened as :func:`joint_sites`) if every
    posterior is valid there and the ELBO is not lower than ``elbo``; returns the new ELBO or None."""
    pairs = [(k, b) for b in blocks for k in engine.touching[b]]
    sites = dict(zip(pairs, unflatten(proposal, joint_sites(engine, blocks))))
    messages = {(k, b): engine.factors[k].message(b, part) for (k, b), part in sites.items()}
    q_new = dict(engine.q)
    try:
        for b in blocks:
            q_new[b] = engine.blocks[b].posterior(engine.total_message(b, {k: messages[(k, b)]
                                                                           for k in engine.touching[b]}))
    except InvalidPosterior:
        return None
    new_elbo = engine.elbo(q_new, batches)
    if lowers_elbo(new_elbo, elbo):
        return None
    for (k, b), part in sites.items():
        engine.state.sites[k][b] = part
        engine.state.messages[k][b] = messages[(k, b)]
    engine.q = q_new
    return new_elbo


def flatten(site_tuples):
    """Concatenate a list of site tuples into one vector."""
    return np.concatenate([np.ravel(a) for sites in site_tuples for a in sites])


def unflatten(flat, like):
    """Split ``flat`` into site tuples shaped like ``like`` (a list of tuples)."""
    out, start = [], 0
    for sites in like:
        parts = []
        for a in sites:
            parts.append(flat[start:start + a.size].reshape(a.shape))
            start += a.size
        out.append(tuple(parts))
    return out
