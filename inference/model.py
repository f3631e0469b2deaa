"""``Model``: latent blocks with priors, factors that touch them, and ``fit()``."""

import numbers

import numpy as np

from ..expfam.checks import check_integer
from .blas_threads import blas_threads_for
from .blocks import as_block
from ._controller import Controller
from ._engine import Engine
from .factor import Factor
from ._loop import run
from .result import FitResult
from ._start import initial_state, resume_state
from .steps import resolve_step


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
        If a factor names an unknown block, pairs with a family it does not
        support, or has no data (no data points, or every observation missing):
        fitting it would return the prior.

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
            _check_has_data(factor, i)
            factor.bind({b: self.blocks[b] for b in factor.block_names})
        for name, block in list(self.blocks.items()):
            touching = [f for f in factors if name in f.block_names]
            replacement = touching[0].replace_block(block) if len(touching) == 1 else None
            if replacement is not None:
                self.blocks[name] = replacement
                touching[0].bind({b: self.blocks[b] for b in touching[0].block_names})
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
            (relative).  A fit counts as converged only if its last step could
            have moved it and the gains are evidence of the gap: after a step
            shorter than a full CVI step, in an extrapolated fit, or when the
            last gain was above the tolerance or the recent gains were not
            decreasing, the posterior a full step would give must be close
            enough to the current one that the estimated gap to the optimum,
            ``J / (2 (1 - rho))`` (``J`` their Jeffreys divergence, ``rho`` the
            square root of the largest recent ratio of gains), is at most
            ``tol |ELBO|``.
        batch_size : int, optional
            Data points per factor per iteration (minibatches); None uses all.
            Each epoch is one shuffle of the points; its last batch holds the
            ``N mod batch_size`` left over (scaled by its own size), so every
            point is visited once per epoch.
        minibatch : {"svi", "sites"}
            ``"svi"``: the ``N/|B|``-scaled update of Khan and Nielsen (2018), eq. 14; ``"sites"``:
            update only the chosen points' sites (eq. 21).
        seed : int
            Seeds the data order and Monte Carlo draws.
        init : None, "prior" or FitResult
            Where the sites start.  None: empty sites (the prior), except that
            factors may start from data-informed sites (the Gaussian-site
            factors do for likelihoods with an IRLS-style guess,
            ``Likelihood.initial_latent``); ``"prior"``: empty sites for every
            factor (a factor whose CVI targets at the prior are unusable --
            an exponential link under a diffuse prior, where ``E[exp(a)]``
            overflows -- aims its first step at its data-informed sites
            instead, with the same ELBO check); a ``FitResult``: resume from a
            previous result of the same model.  Everything the fit carried is
            restored (sites, messages, step-size state, acceleration and
            stopping-rule history, minibatch order, random state and the
            hyperparameter search), so a resumed fit takes exactly the path of
            an uninterrupted one.
        callback : callable, optional
            ``callback(info)`` after every iteration with an
            :class:`efvi.inference.IterationInfo`; returning True stops the fit.
        progress : bool
            Show a progress bar (tqdm) towards ``max_iter``; when the fit ends it
            stays on screen, ends at the iterations run and says how the fit
            ended (``efvi fit, converged: 100%|...| 62/62``).
        warn : bool
            Emit :class:`efvi.inference.ConvergenceWarning` if ``max_iter`` is reached.
        acceleration : bool
            Anderson-accelerate the site iteration of deterministic fits with
            the adaptive step (Anderson mixing): of one block's sites, or with
            several blocks of the whole sweep's (VMP included); a proposal is
            kept only if every posterior is valid and the ELBO does not decrease.

        Notes
        -----
        A fit whose BLAS calls are all small (every factor's and block's
        ``blas_flops()`` below ``efvi.inference.blas_threads.SMALL_BLAS_FLOPS``, e.g.
        a GLM with ``N D^2 < 3e7``) runs BLAS on one thread, which is faster
        for such calls and far faster on a busy machine; large problems keep
        BLAS's threads.

        Returns
        -------
        FitResult
            The model itself is never changed by fitting: learned
            hyperparameters come back on the result (``fit.hyperparameters``,
            ``fit.priors``), and fitting the same model twice gives the same answer.
        """
        max_iter = check_integer(max_iter, "max_iter", minimum=0)
        tol = _check_tol(tol)
        if callback is not None and not callable(callback):
            raise ValueError(f"callback must be callable; got {type(callback).__name__}")
        seed = check_integer(seed, "seed", minimum=0)
        if isinstance(init, str) and init != "prior":
            raise ValueError(f"init must be None, 'prior' or a FitResult; got {init!r}")
        if init is not None and not isinstance(init, (str, FitResult)):
            raise ValueError(f"init must be None, 'prior' or a FitResult from a previous fit; got {type(init).__name__}")
        batch_size = None if batch_size is None else check_integer(batch_size, "batch_size", minimum=1,
                                                                    suffix=" or None")
        flops = max([f.blas_flops() for f in self.factors] + [b.blas_flops() for b in self.blocks.values()])
        with blas_threads_for(flops):
            engine = Engine(self, batch_size, minibatch)
            rule = resolve_step(step, engine.stochastic)
            if isinstance(init, FitResult):
                state = resume_state(engine, init.state, rule, bool(acceleration))
            else:
                state = initial_state(engine, rule, seed, from_prior=init == "prior", accelerate=bool(acceleration))
            engine.start(state, Controller(rule, state.controller, tol, engine.stochastic))
            converged, message, timings = run(engine, max_iter, callback, progress, warn)
        views = [f.site_view(s) for f, s in zip(self.factors, state.sites)]
        priors = {b: engine.blocks[b] for b in engine.learners}
        return FitResult(dict(engine.q), views, state, converged, timings, message=message, priors=priors,
                         factor_names=[f.describe() for f in self.factors],
                         likelihoods=[getattr(f, "likelihood", None) for f in self.factors])


def _check_has_data(factor, i):
    """A factor without observed data would leave its blocks at the prior and call that converged."""
    if factor.n_data == 0:
        raise ValueError(f"factors[{i}] ({factor.describe()}) has no data: expected at least one data point; "
                         f"got 0")
    if factor.n_observed == 0:
        raise ValueError(f"factors[{i}] ({factor.describe()}) has no data: expected at least one observed "
                         f"value; got {factor.n_data} data points, all missing (NaN)")


def _check_tol(tol):
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite number >= 0; got {tol!r} of type {type(tol).__name__}")
    return float(tol)
