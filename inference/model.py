"""``Model``: latent blocks with priors, factors that touch them, and ``fit()``."""

import numpy as np

from ..expfam._validation import check_integer

from .blocks import as_block
from .engine import Engine
from .loop import run
from .factor import Factor
from .result import FitResult


class Model:
    """A model built from latent blocks and factors, fitted by CVI.

    Parameters
    ----------
    latents : dict
        Block name -> prior: an ``expfam`` distribution (e.g.
        ``Gaussian.from_mean_cov(m0, S0)``, ``Gamma(1.0, 1.0)``) or a
        structured Gaussian prior (``gp.GP``, ``lds.MarkovGP``, ``lds.LDS``).
    factors : list of efvi.inference.Factor
        Likelihood terms; each names the blocks it touches.

    Raises
    ------
    ValueError
        If a factor names an unknown block, or pairs with a family it does not support.

    Examples
    --------
    >>> model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(D), np.eye(D))},
    ...               factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    >>> fit = model.fit()
    """

    def __init__(self, latents, factors):
        if not isinstance(latents, dict) or not latents:
            raise ValueError(f"latents must be a non-empty dict of name -> prior; got {latents!r}")
        for name in latents:
            if not isinstance(name, str):
                raise ValueError(f"latent names must be strings; got {name!r}")
        if isinstance(factors, Factor):
            factors = [factors]
        factors = list(factors)
        if not factors:
            raise ValueError("factors must contain at least one factor")
        self.blocks = {name: as_block(name, prior) for name, prior in latents.items()}
        for i, factor in enumerate(factors):
            if not isinstance(factor, Factor):
                raise ValueError(f"factors[{i}] must be an efvi.inference.Factor; got {type(factor).__name__}")
            for role, block in factor.roles.items():
                if block not in self.blocks:
                    raise ValueError(
                        f"factors[{i}] ({factor.describe()}): {role}={block!r} is not a latent "
                        f"block; known blocks: {', '.join(map(repr, self.blocks))}"
                    )
            factor.bind({b: self.blocks[b] for b in factor.block_names})
        self.factors = factors

    def fit(self, *, step=None, max_iter=200, tol=1e-8, batch_size=None, minibatch="svi",
            seed=0, init=None, callback=None, progress=False, warn=True, acceleration=True):
        """Fit the posterior by CVI (VMP for conjugate factors, SVI with minibatches).

        Parameters
        ----------
        step : None, "adaptive", "decaying", float or efvi.inference.StepRule
            Step-size rule (see :mod:`efvi.inference.steps`).  Default: adaptive
            (accept a step only if the ELBO does not decrease) for deterministic
            fits, a Robbins-Monro decay for stochastic ones.
        max_iter : int
            Maximum number of iterations (sweeps over the blocks) in this call.
        tol : float
            Stop when the relative ELBO change of one iteration is at most ``tol``,
            or (deterministic fits) when the ELBO still to gain, estimated from
            gains that shrink at least geometrically, is at most ``tol``
            (relative; see :func:`efvi.inference.loop.estimated_remaining_gain`).
        batch_size : int, optional
            Data points per factor per iteration (minibatches); None uses all.
            Each epoch is one shuffle of the points; its last batch holds the
            ``N mod batch_size`` left over (scaled by its own size), so every
            point is visited once per epoch.
        minibatch : {"svi", "sites"}
            ``"svi"``: the N/|B|-scaled update of seed 000 eq. 14; ``"sites"``:
            update only the chosen points' sites (eq. 21).
        seed : int
            Seeds the data order and Monte Carlo draws.
        init : None, "prior" or FitResult
            Where the sites start.  None: empty sites (the prior), except that
            factors may start from data-informed sites (the Gaussian-site
            factors do for likelihoods with an IRLS-style guess,
            ``Likelihood.initial_latent``); ``"prior"``: empty sites for every
            factor; a ``FitResult``: resume from a previous result of the same
            model (sites, step-size state and random state are restored).
        callback : callable, optional
            ``callback(info)`` after every iteration with an
            :class:`efvi.inference.IterationInfo`; returning True stops the fit.
        progress : bool
            Show a progress bar (tqdm).
        warn : bool
            Emit :class:`efvi.inference.ConvergenceWarning` if ``max_iter`` is reached.
        acceleration : bool
            Anderson-accelerate the site iteration of single-block deterministic
            fits with the adaptive step (:mod:`efvi.inference.acceleration`); a
            proposal is kept only if the ELBO does not decrease.

        Returns
        -------
        FitResult
        """
        max_iter = check_integer(max_iter, "max_iter", minimum=0)
        if not (isinstance(tol, (int, float)) and np.isfinite(tol) and tol >= 0):
            raise ValueError(f"tol must be a finite number >= 0; got {tol!r}")
        if callback is not None and not callable(callback):
            raise ValueError(f"callback must be callable; got {type(callback).__name__}")
        seed = check_integer(seed, "seed", minimum=0)
        if isinstance(init, str) and init != "prior":
            raise ValueError(f"init must be None, 'prior' or a FitResult; got {init!r}")
        engine = Engine(self, step=step, batch_size=batch_size, minibatch=minibatch, seed=seed,
                        acceleration=bool(acceleration), from_prior=isinstance(init, str))
        if init is not None and not isinstance(init, str):
            _restore(engine, init)
        engine.refresh_posterior()
        converged, timings = run(engine, max_iter, float(tol), callback, progress, warn)
        return self._result(engine, converged, timings)

    def _result(self, engine, converged, timings):
        state = {
            "sites": [{b: tuple(np.array(a) for a in v) for b, v in s.items()} for s in engine.sites],
            "messages": [{b: tuple(np.array(a) for a in v) for b, v in m.items()} for m in engine.messages],
            "orders": [None if o is None else np.array(o) for o in engine.orders],
            "positions": list(engine.positions),
            "rule_state": engine.rule.state(),
            "rng_state": engine.rng.bit_generator.state,
            "iteration": engine.iteration,
            "block_states": {b: blk.state() for b, blk in self.blocks.items()},
            "factor_names": [f.describe() for f in self.factors],
            "accelerator": engine.accelerator.state() if engine.accelerator is not None else {},
            "coarse": bool(engine.coarse),
            "flags": {"accelerator_off": engine.accelerator is None,
                      "accelerator_failures": engine.accelerator_failures,
                      "accelerator_rest": engine.accelerator_rest, "plain_next": engine.plain_next,
                      "gains": [float(g) for g in engine.gains[-3:]]},
        }
        views = [f.site_view(s) for f, s in zip(self.factors, engine.sites)]
        return FitResult(
            dict(engine.q), views, engine.elbo_trace, engine.rho_trace, engine.iteration,
            converged, engine.n_backoffs, timings, state,
        )


def _restore(engine, init):
    if not isinstance(init, FitResult):
        raise ValueError(f"init must be a FitResult from a previous fit; got {type(init).__name__}")
    state = init._state
    if len(state["sites"]) != len(engine.factors):
        raise ValueError(
            f"init comes from a model with {len(state['sites'])} factors; this model has "
            f"{len(engine.factors)}"
        )
    for k, (old, new) in enumerate(zip(state["sites"], engine.sites)):
        for b in new:
            shapes_old = [np.shape(a) for a in old.get(b, ())]
            shapes_new = [np.shape(a) for a in new[b]]
            if shapes_old != shapes_new:
                raise ValueError(
                    f"init does not match this model: factor {k} sites for block {b!r} have "
                    f"shapes {shapes_old}, expected {shapes_new}"
                )
    engine.sites = [{b: tuple(np.array(a) for a in v) for b, v in s.items()} for s in state["sites"]]
    engine.messages = [{b: tuple(np.array(a) for a in v) for b, v in m.items()} for m in state["messages"]]
    engine.orders = [None if o is None else np.array(o) for o in state["orders"]]
    engine.positions = list(state["positions"])
    engine.rule.set_state(state["rule_state"])
    engine.rng.bit_generator.state = state["rng_state"]
    engine.iteration = int(state["iteration"])
    engine.elbo_trace = list(np.asarray(init.elbo_trace, float))
    engine.rho_trace = list(np.asarray(init.rho_trace, float))
    engine.n_backoffs = init.n_backoffs
    if engine.coarse and not state.get("coarse", False):
        engine.refine()
    flags = state.get("flags", {})
    if flags.get("accelerator_off"):
        engine.accelerator = None
    engine.accelerator_failures = int(flags.get("accelerator_failures", 0))
    engine.accelerator_rest = int(flags.get("accelerator_rest", 0))
    engine.plain_next = bool(flags.get("plain_next", False))
    engine.gains = [float(g) for g in flags.get("gains", [])]
    if engine.accelerator is not None:
        engine.accelerator.set_state(state.get("accelerator", {}))
    for b, block_state in state["block_states"].items():
        if block_state:
            engine.blocks[b].set_state(block_state)

