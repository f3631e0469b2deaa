"""Where a fit starts: a fresh state (informed sites where factors offer them), or a previous fit's, checked.

Both return the :class:`~efvi.inference._state.FitState` that
:meth:`efvi.inference._engine.Engine.start` attaches to the engine.
"""

import numpy as np

from ._acceleration import AndersonAccelerator
from ._state import ControllerState, FitState


def initial_state(engine, rule, seed, from_prior, accelerate):
    """A fresh :class:`FitState`: informed sites where factors offer them (unless ``from_prior``)."""
    bound = [{b: engine.blocks[b] for b in f.block_names} for f in engine.factors]
    informed = [None if from_prior else f.informed_sites(blocks) for f, blocks in zip(engine.factors, bound)]
    sites = [f.init_sites(blocks) if s is None else s for f, blocks, s in zip(engine.factors, bound, informed)]
    messages = [{b: (f.message(b, sites[k][b]) if informed[k] is not None else engine.blocks[b].zero_message())
                 for b in f.block_names} for k, f in enumerate(engine.factors)]
    # Anderson acceleration needs the exact ELBO as a safeguard and one fixed-point map
    # (one block whose factors are all conjugate is exact in one step; several blocks are a sweep to accelerate)
    use_accelerator = (accelerate and rule.adaptive and bool(engine.order)
                       and (len(engine.order) > 1 or not all(f.conjugate for f in engine.factors))
                       and not any(f.distributed for f in engine.factors)
                       # its history is 2 x depth copies of the sites: too much for a low-memory block
                       and not any(getattr(engine.blocks[b], "low_memory", False) for b in engine.order))
    controller = ControllerState(rule.initial_state(), type(rule).__name__, rule.params(),
                                 accelerator=AndersonAccelerator() if use_accelerator else None)
    state = FitState(sites, messages, np.random.default_rng(seed), controller)
    state.hyper.theta = {b: np.array(engine.blocks[b].hyperparameters()) for b in engine.learners}
    # the first sweep from the prior uses cheap quadrature (deterministic fits only; a start
    # from data-informed sites is already concentrated, where the accurate rule is cheap)
    state.coarse = (not engine.stochastic and all(s is None for s in informed)
                    and any(f.has_coarse_rule for f in engine.factors))
    return state

def resume_state(engine, saved, rule, accelerate):
    """A copy of a previous fit's state after checking that it belongs to this model.

    The step rule's state carries over when ``rule`` is of the saved fit's
    kind (checked against ``rule``), else the rule starts afresh;
    acceleration stays off if it was off in the saved fit.

    Raises
    ------
    ValueError
        Naming ``init`` and what does not match (factors, blocks, shapes,
        hyperparameters, step state).
    """
    fresh = initial_state(engine, rule, 0, from_prior=True, accelerate=accelerate)
    if len(saved.sites) != len(engine.factors):
        raise ValueError(f"init comes from a model with {len(saved.sites)} factors; this model has "
                         f"{len(engine.factors)}")
    for k, factor in enumerate(engine.factors):
        for what, old, new in (("sites", saved.sites[k], fresh.sites[k]),
                               ("message", saved.messages[k], fresh.messages[k])):
            if set(old) != set(new):
                raise ValueError(f"init does not match this model: factor {k} ({factor.describe()}) has "
                                 f"{what} for blocks {sorted(old)}, expected {sorted(new)}")
            for b in new:
                shapes_old, shapes_new = [np.shape(a) for a in old[b]], [np.shape(a) for a in new[b]]
                if shapes_old != shapes_new:
                    raise ValueError(f"init does not match this model: factor {k} {what} for block {b!r} "
                                     f"have shapes {shapes_old}, expected {shapes_new}")
        order = saved.orders[k]
        if order is not None and order.shape != (factor.n_data,):
            raise ValueError(f"init does not match this model: factor {k}'s minibatch order has "
                             f"{order.shape[0]} entries, expected {factor.n_data}")
    theta_old = {b: np.shape(t) for b, t in saved.hyper.theta.items()}
    theta_new = {b: np.shape(t) for b, t in fresh.hyper.theta.items()}
    if theta_old != theta_new:
        raise ValueError(f"init does not match this model: it learned hyperparameters of shapes {theta_old}, "
                         f"this model learns {theta_new}")
    state = saved.copy()
    state.sites = [factor.restore_sites(sites) for factor, sites in zip(engine.factors, state.sites)]
    controller = state.controller
    if controller.rule_kind == type(rule).__name__:
        try:
            controller.rule = rule.check_state(controller.rule)
        except ValueError as err:
            raise ValueError(f"init's step-size state does not suit the step rule {rule!r}: {err}") from None
    else:
        controller.rule = rule.initial_state()
    controller.rule_kind, controller.rule_params = type(rule).__name__, rule.params()
    if fresh.controller.accelerator is None:
        controller.accelerator = None
    elif controller.accelerator is not None and controller.accelerator.size not in (None, _site_size(fresh)):
        raise ValueError(f"init's acceleration history has {controller.accelerator.size} entries per "
                         f"step; this model's sites have {_site_size(fresh)}")
    return state


def _site_size(state):
    """Number of site entries of a single-block fit (what the accelerator extrapolates)."""
    return sum(np.size(a) for per_factor in state.sites for parts in per_factor.values() for a in parts)
