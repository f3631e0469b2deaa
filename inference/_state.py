"""What a fit carries from one iteration to the next, in one object.

A :class:`FitState` holds everything that ``Model.fit`` needs to continue a fit
exactly where it stopped: the sites and messages of every factor, the
minibatch orders, the random state, the traces, the controller's state (step
size, acceleration history, stopping-rule history) and the progress of the
hyperparameter search.  The engine, the controller and the hyperparameter
search read and write it; a :class:`~efvi.inference.FitResult` hands it on to
``fit(init=...)``; :mod:`efvi.inference._fitfile` saves and loads it.  Nothing
else holds state between iterations, so a model can be fitted any number of
times and gives the same answer each time.
"""

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ControllerState:
    """The controller's part of a fit's state (:class:`efvi.inference._controller.Controller`).

    Attributes
    ----------
    rule : dict
        The step rule's state (:meth:`efvi.inference.StepRule.initial_state`).
    rule_kind : str
        The step rule's class name.
    rule_params : dict
        The step rule's constructor arguments (:meth:`efvi.inference.StepRule.params`).
    gains : list of float
        ELBO gain of each recent iteration, NaN for an extrapolated one (the
        stopping rule uses the last three).
    steps : list of float
        The step size of each of those iterations (NaN for an extrapolated one).
    plain_next : bool
        Whether the next iteration must be an ordinary step (to confirm
        convergence after an extrapolated one).
    accelerator : AndersonAccelerator or None
        The acceleration history; None when acceleration is off for this fit.
    accelerator_rest : int
        Iterations left before extrapolation is tried again.
    accelerator_failures : int
        Extrapolations rejected in a row.
    divergence : float or None
        The Jeffreys divergence of the full step whose check just failed (the
        gain of that step, taken next, measures the rate); None otherwise.
    """

    rule: dict
    rule_kind: str = ""
    rule_params: dict = field(default_factory=dict)
    gains: list = field(default_factory=list)
    plain_next: bool = False
    accelerator: object = None
    accelerator_rest: int = 0
    accelerator_failures: int = 0
    divergence: object = None
    steps: list = field(default_factory=list)


@dataclass
class HyperState:
    """Progress of the hyperparameter search (:mod:`efvi.inference._hyperparameters`).

    Attributes
    ----------
    theta : dict
        Block name -> current log hyperparameters, shape (p_b,), for the
        blocks that learn them (empty otherwise).
    evaluations : list of (ndarray, float, ndarray)
        Every completed evaluation of the objective: (log hyperparameters of
        all learning blocks concatenated, ``-ELBO``, its gradient).  A resumed
        search replays them, so it takes exactly the path of an uninterrupted one.
    moments : dict
        Minibatch learning (Adam): block name -> (first, second) moment
        estimates, each of the shape of ``theta[b]`` (empty in full-batch fits).
    adam_steps : int
        Adam steps taken so far (its bias correction counts them).
    """

    theta: dict = field(default_factory=dict)
    evaluations: list = field(default_factory=list)
    moments: dict = field(default_factory=dict)
    adam_steps: int = 0


class FitState:
    """Everything a fit carries between iterations.

    Attributes
    ----------
    sites : list of dict
        One dict per factor: block name -> tuple of arrays with the data index first.
    messages : list of dict
        One dict per factor: block name -> the factor's message to the block.
    orders : list of (ndarray or None)
        Per factor, the shuffled order of the current minibatch epoch.
    positions : list of int
        Per factor, how far into its epoch order the fit has got.
    rng : numpy.random.Generator
        Drives minibatch orders and Monte Carlo draws.
    iteration : int
        Iterations (sweeps) completed, over every call to ``fit``.
    elbo_trace, rho_trace : list of float
        ELBO (and smallest step size) after every iteration, after the initial entry.
    n_backoffs, n_accelerated : int
        Proposals rejected for leaving the valid parameter set; extrapolated steps accepted.
    coarse : bool
        Whether the factors still evaluate with their cheap first-sweep quadrature.
    controller : ControllerState
    hyper : HyperState
    """

    def __init__(self, sites, messages, rng, controller, hyper=None):
        self.sites = sites
        self.messages = messages
        self.orders = [None] * len(sites)
        self.positions = [0] * len(sites)
        self.rng = rng
        self.iteration = 0
        self.elbo_trace = []
        self.rho_trace = []
        self.n_backoffs = 0
        self.n_accelerated = 0
        self.coarse = False
        self.controller = controller
        self.hyper = HyperState() if hyper is None else hyper

    def copy(self):
        """An independent copy (arrays copied), so that continuing a fit never changes the result it came from."""
        new = FitState(_copy_parts(self.sites), _copy_parts(self.messages), _copy_rng(self.rng),
                       _copy_controller(self.controller),
                       HyperState({b: np.array(t) for b, t in self.hyper.theta.items()},
                                  [(np.array(x), float(v), np.array(g)) for x, v, g in self.hyper.evaluations],
                                  {b: (np.array(m1), np.array(m2)) for b, (m1, m2) in self.hyper.moments.items()},
                                  self.hyper.adam_steps))
        new.orders = [None if o is None else np.array(o) for o in self.orders]
        new.positions = list(self.positions)
        new.iteration = self.iteration
        new.elbo_trace, new.rho_trace = list(self.elbo_trace), list(self.rho_trace)
        new.n_backoffs, new.n_accelerated = self.n_backoffs, self.n_accelerated
        new.coarse = self.coarse
        return new


def _copy_parts(per_factor):
    # every part copies itself: a numpy array by value, a Dask GLM's row blocks (never changed in place)
    # by sharing them -- np.array would gather those into this process
    return [{b: tuple(a.copy() for a in parts) for b, parts in d.items()} for d in per_factor]


def _copy_rng(rng):
    new = np.random.default_rng()
    new.bit_generator.state = rng.bit_generator.state
    return new


def _copy_controller(controller):
    accelerator = controller.accelerator
    if accelerator is not None:
        accelerator = type(accelerator)(accelerator.depth)
        accelerator.set_state(controller.accelerator.state())
    return ControllerState(dict(controller.rule), controller.rule_kind, dict(controller.rule_params),
                           list(controller.gains), controller.plain_next, accelerator,
                           controller.accelerator_rest, controller.accelerator_failures, controller.divergence,
                           list(controller.steps))
