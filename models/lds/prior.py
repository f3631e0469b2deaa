"""Linear-Gaussian state-space priors as latent blocks: ``LDS`` and ``MarkovGP``.

The prior is ``x_0 ~ N(m_0, P_0)``, ``x_t = A_t x_{t-1} + q_t``,
``q_t ~ N(0, Q_t)``, and time step ``t`` is observed through the scalar
``a_t = H_t x_t``.  Factors (:class:`efvi.models.Observe`) send per-step 1-D sites
``(gamma_t, pi_t)``; the block's conjugate computation is one compiled Kalman
filter and RTS smoother pass over the sites (:mod:`efvi.models.lds.smoother`), which
returns the marginals of ``a_t`` and ``log Z``, at ``O(T d^3)`` cost.  The
matrices are validated once, when the block is built; each iteration then
calls the compiled kernels directly.

A Markov GP is the state-space form of a GP with a Matern (or sum of Matern)
kernel of time: ``A_t = expm(F dt_t)``, ``Q_t = Pinf - A_t Pinf A_t^T``,
``m_0 = 0``, ``P_0 = Pinf``.  Its hyperparameters are learned like the GP's
(:mod:`efvi.inference._hyperparameters`); the gradient of ``log Z(theta)`` with the
sites fixed comes from Fisher's identity (:mod:`efvi.models.lds.fisher_identity`).

**Memory.**  By default a block stores ``A_t`` and ``Q_t`` (``2 d^2`` values
per step) and a workspace for the smoother (``2 d^2 + d``): with the
engine's per-point arrays a Poisson Markov GP fit at ``d = 2`` peaks at
about 300 bytes per time step.  A *low-memory* block (``low_memory=True``,
the default above ``LOW_MEMORY_STEPS`` steps) smooths in segments of
``SEGMENT_STEPS`` steps from checkpoints (:mod:`efvi.models.lds.smoother`)
and a low-memory Markov GP computes each segment's ``A_t``, ``Q_t`` from its
times when a pass reaches it, so it keeps nothing per step but the times;
the fit then peaks at about 115 bytes per step (sites, two posteriors,
site targets and the likelihood's per-point arrays; 85 with a Gaussian
likelihood), and its results are bit for bit those of a stored block.  The
price is time: each pass refilters the segments and computes the matrices
twice (compiled, into arrays the block keeps), about 2.2 times a stored
iteration of a Poisson fit at ``d = 2`` (``benchmarks/bench_markov_memory.py``;
an LDS, whose matrices are given, 1.7 times).
The engine does not Anderson-accelerate a low-memory block, whose history
would hold ``2 x depth`` copies of the sites.  A low-memory Markov GP that
learns its hyperparameters computes ``log Z`` and its gradient segment by
segment too (:func:`.fisher_identity.log_normaliser_grad_in_segments`): each
segment's matrices and their derivatives when the backward pass reaches it,
so learning holds nothing more per step than a fit with a fixed kernel
(about 30 MB more in all, for one segment's arrays), where a stored block's
gradient takes about 650 bytes per step; an evaluation takes about the time
of a stored block's (0.8 to 1.1 times at ``T = 1e6 .. 2e6``).
"""

import numpy as np

from ...expfam import Gaussian
from ...expfam.checks import check_integer
from ...inference import Block, InvalidPosterior
from ...inference.result import register_rebuilder

from .._hyper import KernelHyperparameters
from .._joint_draws import JointDraws
from ..gp.kernels import Kernel
from ..gp.kernels._compiled_statespace import discretise, discretise_into
from ..gp.prior import kernel_layout, saved_kernel
from ..sites import site_divergence, site_kl
from .fisher_identity import log_normaliser_grad, log_normaliser_grad_in_segments
from .sampling import backward_draws
from ._times import times_as_float
from .smoother import (
    STATUS_OK, PerThreadScratch, Workspace, _run_smoother, _validate_prior, _validate_sites_in_segments,
    check_process_cov, segment_of,
)

LOW_MEMORY_STEPS = 2 ** 24
"""Blocks with more time steps than this run low-memory by default (``low_memory=None``; module notes)."""

SEGMENT_STEPS = 2 ** 16
"""Time steps per segment of a low-memory block's passes."""


class StateSpacePosterior(JointDraws):
    """Posterior of a state-space block.

    Attributes
    ----------
    mean, var : ndarray, shape (T,)
        Smoothed marginals of ``a_t = H_t x_t`` (``f(t)`` for a Markov GP).
    log_normaliser : float
        ``log Z`` of the prior times the sites.
    """

    def __init__(self, prior, mean, var, log_normaliser, natural_mean, precision):
        self._prior = prior
        self.mean, self.var, self.log_normaliser = mean, var, log_normaliser
        self.natural_mean, self.precision = natural_mean, precision
        self._states = None

    @property
    def batch_shape(self):
        return self.mean.shape

    def _smoothed(self):
        if self._states is None:
            self._states = self._prior.smoother(self.natural_mean, self.precision)
        return self._states

    @property
    def state_means(self):
        """Smoothed state means ``E[x_t]``, shape (T, d) (computed on first access)."""
        return self._smoothed().means

    @property
    def state_covs(self):
        """Smoothed state covariances, shape (T, d, d) (computed on first access)."""
        return self._smoothed().covs

    def predict(self, inputs, full_cov=False):
        """Posterior of the observed value at new times (Markov GP) or time steps (LDS).

        The new points join the block's own with empty sites and one smoother
        pass gives their marginals (O(T + M)); ``full_cov`` adds their joint
        covariance from the smoothed chain's lag-one cross-covariances.

        Parameters
        ----------
        inputs : array_like, shape (M,)
            A Markov GP: any finite times, in any order (before, between or
            after the data: interpolation and forecasts), datetimes if the
            block's times were datetimes.  An LDS: time steps, integers
            ``>= 0`` (an integer dtype); steps ``>= T`` are forecasts, which need a constant
            transition, process covariance and observation row.
        full_cov : bool
            Return the (M, M) covariance instead of the variances.

        Returns
        -------
        mean : ndarray, shape (M,)
        var : ndarray, shape (M,), or (M, M) with ``full_cov=True``

        Raises
        ------
        ValueError
            For inputs that are not a non-empty finite 1-D array (integer
            steps ``>= 0`` for an LDS), or an LDS forecast with time-varying
            matrices.
        """
        merged, joint, position, _ = self._prior._merged(self, inputs)
        mean = joint.mean[position]
        if not full_cov:
            return mean, np.maximum(joint.var[position], 0.0)
        return mean, _chain_cov(merged.smoother(joint.natural_mean, joint.precision), merged.H, position)

    def _draws(self, rng, n, inputs):
        """Joint draws by forward filtering, backward sampling (:class:`JointDraws`, :mod:`.sampling`): ``O(T)``
        per draw, no ``T x T`` matrix; with ``inputs`` the new points join the block's own with empty sites
        (as in :meth:`predict`) and one pass draws all of them."""
        if inputs is not None:
            _, joint, position, own = self._prior._merged(self, inputs)
            draws = joint._draws(rng, n, None)
            return draws[:, own], draws[:, position]
        prior = self._prior
        return backward_draws(self.natural_mean, self.precision, prior.H, prior._transitions(), prior.m0, prior.P0,
                              n, rng, workspace=prior._workspace)

    def predictive_state(self):
        """What a fit file keeps so that a loaded fit predicts (the prior's parts and the summed sites), or None."""
        return self._prior._predictive_state(self)

    def __repr__(self):
        return f"StateSpacePosterior(T={self.mean.shape[0]})"


class StateSpacePrior(Block):
    """Base class of state-space blocks; subclasses set the validated matrices with :meth:`_set_model`."""

    family = Gaussian
    low_memory = False
    """Whether the passes run in segments (and a Markov GP computes its matrices per segment); see the module notes."""

    def _set_model(self, transition, process_cov, obs_row, init_mean, init_cov, n_steps):
        """Validate and keep the prior's matrices (``transition``, ``process_cov`` None: see :meth:`_transitions`)."""
        self.H, self.A, self.Q, self.m0, self.P0 = _validate_prior(obs_row, transition, process_cov, init_mean,
                                                                   init_cov, n_steps)
        self.n_points = n_steps
        self.state_dim = self.m0.shape[0]
        self._workspace = Workspace(SEGMENT_STEPS if self.low_memory else None)

    def _transitions(self):
        """What the passes read ``A_t``, ``Q_t`` from (``segment_of``): the stored stacks by default."""
        return (self.A, self.Q)

    def zero_message(self):
        return (np.zeros(self.n_points), np.zeros(self.n_points))

    def posterior(self, message):
        natural_mean = np.ascontiguousarray(message[0], dtype=float)
        precision = np.ascontiguousarray(message[1], dtype=float)
        result = _run_smoother(natural_mean, precision, self.H, self._transitions(), self.m0, self.P0,
                               store=False, return_status=True, workspace=self._workspace)
        if result.status != STATUS_OK:
            prior_step = self._prior_failure()
            if prior_step is not None:
                raise InvalidPosterior(f"block {self.name!r}: the prior itself is invalid, whatever the sites: "
                                       f"its {self._overflow_message(prior_step)}")
            raise InvalidPosterior(f"block {self.name!r}: the sites make the state-space posterior "
                                   f"invalid at time step {result.failed_step}")
        return StateSpacePosterior(self, result.marginal_mean, result.marginal_var,
                                   float(result.log_normaliser), natural_mean, precision)

    def _prior_failure(self):
        """The first time step at which the prior alone (empty sites) fails to smooth, or None if it does not."""
        zeros = np.zeros(self.n_points)
        result = _run_smoother(zeros, zeros, self.H, self._transitions(), self.m0, self.P0,
                               store=False, return_status=True, workspace=self._workspace)
        if result.status == STATUS_OK and np.all(np.isfinite(result.marginal_var)):
            return None
        return max(int(result.failed_step), 0)

    def _overflow_message(self, step):
        """Why the prior fails at ``step``: the covariance overflows, and what the transition's eigenvalues are."""
        transitions = self._transitions()
        radius = max(float(np.max(np.abs(np.linalg.eigvals(segment_of(transitions, start, start + SEGMENT_STEPS)[0]))))
                     for start in range(0, self.n_points, SEGMENT_STEPS))
        return (f"state covariance A_t P A_t^T + Q_t overflows float64 by time step {step} (largest "
                f"|eigenvalue| of transition: {radius:.3g}); use a transition with eigenvalues of modulus "
                f"<= 1, fewer steps, or a rescaled state")

    def smoother(self, natural_mean, precision):
        """Full smoother output (states, covariances, cross-covariances) for these sites."""
        natural_mean, precision = (np.ascontiguousarray(x, dtype=float) for x in (natural_mean, precision))
        if natural_mean.shape != (self.n_points,) or precision.shape != (self.n_points,):
            raise ValueError(f"natural_mean and precision must have shape ({self.n_points},); "
                             f"got {natural_mean.shape} and {precision.shape}")
        return _run_smoother(natural_mean, precision, self.H, self._transitions(), self.m0, self.P0,
                             store=True, return_status=False, workspace=self._workspace)

    def kl(self, q):
        return site_kl(q.natural_mean, q.precision, q.mean, q.var, q.log_normaliser)

    def _merged(self, q, inputs):
        """A block over its own points and the new ones, its posterior with empty new sites, the positions of the
        new points in it and those of the block's own points."""
        raise NotImplementedError

    def _predictive_state(self, q):
        raise NotImplementedError

    def divergence(self, q, other):
        return site_divergence(q, other)


class LDS(StateSpacePrior):
    """A general linear-Gaussian state-space prior observed through ``a_t = H_t x_t``.

    Parameters
    ----------
    transition : array_like, shape (d, d) or (T, d, d)
        ``A_t`` (``A_0`` unused); constant if 2-D.
    process_cov : array_like, shape (d, d) or (T, d, d)
        ``Q_t``, positive semi-definite; constant if 2-D.
    obs_row : array_like, shape (d,) or (T, d)
        ``H_t``.
    init_mean : array_like, shape (d,)
    init_cov : array_like, shape (d, d)
    n_steps : int, optional
        ``T``; needed only when every matrix is constant.
    low_memory : bool, optional
        Smooth in segments, recomputing the filter of each segment in the
        backward pass: the pass keeps no values per step instead of
        ``2 d^2 + d``, for about 1.7 times the time (module notes).  Default
        (None): only above ``LOW_MEMORY_STEPS`` steps.
    """

    def __init__(self, transition, process_cov, obs_row, init_mean, init_cov, n_steps=None, low_memory=None):
        lengths = {np.shape(transition)[0] if np.ndim(transition) == 3 else None,
                   np.shape(process_cov)[0] if np.ndim(process_cov) == 3 else None,
                   np.shape(obs_row)[0] if np.ndim(obs_row) == 2 else None, n_steps} - {None}
        if len(lengths) != 1:
            raise ValueError(
                "n_steps must be given when every matrix is constant, and must agree with the time axis "
                f"of time-varying transition/process_cov/obs_row; got lengths {sorted(lengths)}"
            )
        n_steps = check_integer(lengths.pop(), "n_steps", minimum=1)
        self.low_memory = _low_memory(low_memory, n_steps)
        self._set_model(transition, process_cov, obs_row, init_mean, init_cov, n_steps)
        prior_step = self._prior_failure()
        if prior_step is not None:
            raise ValueError(f"transition, process_cov and init_cov must give a valid prior; got one whose "
                             f"{self._overflow_message(prior_step)}")

    def __repr__(self):
        """``LDS(n_steps=100, state_dim=2)`` (and ``low_memory=True`` when it smooths in segments)."""
        extra = ", low_memory=True" if self.low_memory else ""
        return f"LDS(n_steps={self.n_points}, state_dim={self.state_dim}{extra})"

    def _merged(self, q, inputs):
        steps = np.asarray(inputs)
        if steps.dtype.kind not in "iu" or steps.ndim != 1 or steps.size == 0 or np.any(steps < 0):
            raise ValueError(f"block {self.name!r} is a general LDS: its inputs are time steps, so steps must be a "
                             f"non-empty 1-D array of integers >= 0 (steps >= {self.n_points} are forecasts); got "
                             f"{inputs!r}"[:300])
        steps = steps.astype(np.int64)
        end = int(steps.max()) + 1
        own_steps = np.arange(self.n_points)
        if end <= self.n_points:
            return self, q, steps, own_steps
        future, own = [], []
        for name, stack in (("transition", self.A), ("process_cov", self.Q), ("obs_row", self.H)):
            stack = np.broadcast_to(stack, (self.n_points,) + stack.shape[1:])        # a constant is stored once
            own.append(stack)
            used = stack[1:] if name != "obs_row" and stack.shape[0] > 1 else stack     # A_0, Q_0 are unused
            if np.any(used != used[-1]):
                raise ValueError(f"block {self.name!r}: forecasting beyond its {self.n_points} time steps needs a "
                                 f"constant {name}, and this LDS's varies with time (build an LDS that includes "
                                 "the future steps' matrices, with missing observations there, instead)")
            future.append(np.broadcast_to(used[-1], (end - self.n_points,) + used.shape[1:]))
        A, Q, H = (np.concatenate([mine, more]) for mine, more in zip(own, future))
        extended = LDS(A, Q, H, self.m0, self.P0, low_memory=self.low_memory)
        extended.name = self.name
        gamma, pi = np.zeros(end), np.zeros(end)
        gamma[: self.n_points], pi[: self.n_points] = q.natural_mean, q.precision
        return extended, extended.posterior((gamma, pi)), steps, own_steps

    def _predictive_state(self, q):
        A, Q, H = (np.broadcast_to(a, (self.n_points,) + a.shape[1:]) for a in (self.A, self.Q, self.H))
        return ("lds", {}, {"transition": A, "process_cov": Q, "obs_row": H, "init_mean": self.m0,
                            "init_cov": self.P0, "natural_mean": q.natural_mean, "precision": q.precision})


class MarkovGP(KernelHyperparameters, StateSpacePrior):
    """A GP over sorted times ``t`` in state-space form (Matern 1/2, 3/2, 5/2 and sums).

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
        A kernel with a state-space form (see ``docs/kernels.md``).
    t : array_like, shape (T,)
        Non-decreasing times (irregular spacing allowed): real numbers, or
        datetimes (numpy ``datetime64``, pandas ``Timestamp`` or
        ``DatetimeIndex``, ``datetime.datetime``), which become float days
        since the first time, ``(t - t[0]) / np.timedelta64(1, "D")``, so the
        kernel's lengthscale is in days.  The first time is kept as
        ``t_origin`` (None for real times); ``predict`` takes datetimes too.
    learn_hyperparameters : bool
        Learn the kernel's log hyperparameters by maximising the ELBO.
    hyper_max_iter : int
        Iterations of the outer L-BFGS over the log hyperparameters (each re-converges the sites).
    low_memory : bool, optional
        Keep nothing per time step but the times: the transition and process
        covariance of each segment are computed when a pass reaches it, and
        the smoother refilters each segment from a checkpoint (module
        notes); about twice the time of an iteration over stored matrices.
        ``A`` and ``Q`` are then None.  Default (None): only above
        ``LOW_MEMORY_STEPS`` steps.  Learning hyperparameters is low-memory
        too: the gradient of ``log Z`` is computed segment by segment, in
        about the time of a stored block's, and equals it to rounding.
    """

    def __init__(self, kernel, t, learn_hyperparameters=False, hyper_max_iter=100, low_memory=None):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel; got {type(kernel).__name__}")
        t, self.t_origin = times_as_float(t, "t")
        if t.ndim != 1 or t.shape[0] < 1:
            raise ValueError(f"t must be a 1-D array of at least one time; got shape {t.shape}")
        decreasing = np.flatnonzero(np.diff(t) < 0)
        if decreasing.size:
            i = decreasing[0]
            raise ValueError(f"t must be sorted (non-decreasing); got t[{i + 1}] = {float(t[i + 1])!r} "
                             f"< t[{i}] = {float(t[i])!r}")
        self.t = t
        self.low_memory = _low_memory(low_memory, t.shape[0])
        self.learns_hyperparameters = bool(learn_hyperparameters)
        self.hyper_max_iter = check_integer(hyper_max_iter, "hyper_max_iter", minimum=1)
        self._set_kernel(kernel)

    def __repr__(self):
        """The kernel, the times (how many, from when to when), the state dimension and the options set.

        ``MarkovGP(kernel=Matern32(lengthscale=1.0, variance=1.0), t=<50 times from 0.0 to 10.0>, state_dim=2)``;
        datetimes read ``t=<365 times from 0.0 to 364.0 days after 2020-01-01>``.
        """
        origin = ""
        if self.t_origin is not None:
            day = self.t_origin.astype("datetime64[D]")
            origin = f" days after {np.datetime_as_string(self.t_origin, unit='D' if day == self.t_origin else 's')}"
        first, last = (float(f"{float(t):.6g}") for t in (self.t[0], self.t[-1]))
        times = f"<{self.t.shape[0]} times from {first!r} to {last!r}{origin}>"
        options = "".join(f", {name}=True" for name, on in (("learn_hyperparameters", self.learns_hyperparameters),
                                                             ("low_memory", self.low_memory)) if on)
        return f"MarkovGP(kernel={self.kernel!r}, t={times}, state_dim={self.state_dim}{options})"

    @property
    def dt(self):
        """The gaps between consecutive times, shape (T,), ``dt[0] = 0`` (computed on access)."""
        return np.concatenate([[0.0], np.diff(self.t)])

    def _set_kernel(self, kernel):
        self.kernel = kernel
        ss = kernel.state_space()
        A = Q = self._segments = None
        if not self.low_memory:
            A, Q = discretise(kernel, self.dt)
        self._set_model(A, Q, ss.H, np.zeros(ss.H.shape[0]), ss.Pinf, self.t.shape[0])
        if self.low_memory:
            self._segments = _SegmentMatrices(kernel, self.t, ss.Pinf)
            for start in range(0, self.n_points, SEGMENT_STEPS):
                check_process_cov(self._segments(start, start + SEGMENT_STEPS)[1], self.P0, offset=start)

    def _transitions(self):
        if not self.low_memory:
            return (self.A, self.Q)
        return self._segments

    def _merged(self, q, inputs):
        t_new, new_origin = times_as_float(inputs, "t_new", origin=self.t_origin)
        if self.t_origin is None and new_origin is not None:
            raise ValueError("t_new must be real numbers like the block's times t; got datetimes")
        if t_new.ndim != 1 or t_new.shape[0] == 0:
            raise ValueError(f"t_new must be a non-empty 1-D array of times; got shape {t_new.shape}")
        times = np.concatenate([self.t, t_new])
        order = np.argsort(times, kind="stable")
        gamma, pi = np.zeros(times.shape[0]), np.zeros(times.shape[0])
        gamma[: self.n_points], pi[: self.n_points] = q.natural_mean, q.precision
        merged = MarkovGP(self.kernel, times[order], low_memory=self.low_memory)
        merged.name, merged.t_origin = self.name, self.t_origin
        joint = merged.posterior((gamma[order], pi[order]))
        position = np.empty_like(order)
        position[order] = np.arange(order.shape[0])
        return merged, joint, position[self.n_points:], position[: self.n_points]

    def _predictive_state(self, q):
        if self.t_origin is not None:
            return None         # datetime times: the origin is not a float array (only marginals are saved)
        arrays = {"t": self.t, "natural_mean": q.natural_mean, "precision": q.precision}
        spec = kernel_layout(self.kernel, "kernel/", arrays)
        return None if spec is None else ("markov_gp", {"kernel": spec, "repr": repr(self.kernel)}, arrays)

    def _build_steps(self, log_params, start, stop):
        """``(A, Q)`` of the steps ``start..stop-1`` as functions of the log hyperparameters (autograd)."""
        return self.kernel.discretise_fn(_gaps_into(self.t, start, stop, np.empty(stop - start)))(log_params)

    def _build_start(self, log_params):
        """``(m_0, P_0)`` as functions of the log hyperparameters (autograd)."""
        return np.zeros(self.state_dim), self.kernel.stationary_cov_fn()(log_params)

    def _build(self, log_params):
        return self._build_steps(log_params, 0, self.n_points) + self._build_start(log_params)

    def log_normaliser(self, log_params, message):
        """``log Z(theta)`` and its gradient (Fisher's identity) with the sites held fixed.

        A low-memory block computes both segment by segment (the matrices of
        a segment and their derivatives when the backward pass reaches it),
        holding nothing per time step; the results agree with a stored
        block's to rounding.

        Parameters
        ----------
        log_params : array_like, shape (p,)
            The kernel's log hyperparameters.
        message : tuple of ndarray, shape (T,)
            The summed sites ``(gamma, pi)``.

        Returns
        -------
        log_normaliser : float
        grad : ndarray, shape (p,)
        """
        gamma, pi = message
        log_params = np.asarray(log_params, float)
        if not self.low_memory:
            return log_normaliser_grad(log_params, self._build, gamma, pi, self.H[0])
        gamma, pi = _validate_sites_in_segments(gamma, pi, self.n_points, self._workspace.segment_steps)
        block = self if np.array_equal(log_params, self.hyperparameters()) else self.with_hyperparameters(log_params)
        return log_normaliser_grad_in_segments(log_params, block._build_steps, block._build_start, block._segments,
                                               gamma, pi, self.H, self._workspace.segment_steps)



def _low_memory(low_memory, n_steps):
    """The ``low_memory`` argument of a block of ``n_steps`` steps resolved to a bool."""
    if low_memory is None:
        return n_steps > LOW_MEMORY_STEPS
    if not isinstance(low_memory, (bool, np.bool_)):
        raise ValueError(f"low_memory must be True, False or None; got {low_memory!r}")
    return bool(low_memory)


class _SegmentMatrices(PerThreadScratch):
    """``(start, stop) -> (A, Q)``: a kernel's discretisation over the gaps of steps ``start..stop-1`` of the
    times ``t`` (the gap of step 0 is 0), the same values as the whole series' (each step's matrices depend on
    its gap alone).

    Compiled kernels write them into arrays kept between calls (one set per
    thread, grown to the longest segment asked for), so that a pass does not
    allocate them afresh per segment: the arrays returned are overwritten by
    the next call.
    """

    def __init__(self, kernel, t, Pinf):
        super().__init__()
        self.kernel, self.t, self.Pinf = kernel, t, Pinf

    def _arrays(self, n):
        arrays = getattr(self._local, "arrays", None)
        if arrays is None or arrays[0].shape[0] < n:
            d = self.Pinf.shape[0]
            arrays = self._local.arrays = (np.empty(n), np.empty((n, d, d)), np.empty((n, d, d)))
        return arrays

    def __call__(self, start, stop):
        stop = min(stop, self.t.shape[0])
        gaps, A, Q = (x[: stop - start] for x in self._arrays(stop - start))
        _gaps_into(self.t, start, stop, gaps)
        if discretise_into(self.kernel, gaps, A, Q, self.Pinf):
            return A, Q
        return self.kernel.discretise(gaps)


def _gaps_into(t, start, stop, out):
    """``out`` (stop - start,) holding the gaps of the steps ``start..stop-1`` of the times ``t`` (the gap of
    step 0 is 0); returns ``out``."""
    if start == 0:
        out[0] = 0.0
        np.subtract(t[1:stop], t[: stop - 1], out=out[1:])       # np.diff's operation
    else:
        np.subtract(t[start:stop], t[start - 1 : stop - 1], out=out)
    return out


def _chain_cov(smoothed, H, position):
    """Covariance of ``H_t x_t`` at the steps ``position`` (any order) of a smoothed linear-Gaussian chain.

    The smoothed states form a Gauss-Markov chain,
    ``E[x_{t+1} | x_t] = m_{t+1} + B_t (x_t - m_t)`` with
    ``B_t = Cov(x_{t+1}, x_t) P_t^{-1}``, so ``Cov(x_q, x_p) = B_{q-1} ... B_p P_p`` for ``p <= q``.
    """
    covs, cross = smoothed.covs, smoothed.cross_covs
    size, last = position.shape[0], H.shape[0] - 1          # a constant H is stored once
    out = np.empty((size, size))
    carried = []            # (index into position, Cov(x_t, x_p)) for the points p already passed
    t = 0
    for i in np.argsort(position, kind="stable"):
        step = int(position[i])
        while t < step:
            gain = np.linalg.lstsq(covs[t], cross[t + 1].T, rcond=None)[0].T
            carried = [(j, gain @ c) for j, c in carried]
            t += 1
        carried.append((i, covs[step]))
        for j, c in carried:
            out[i, j] = out[j, i] = H[min(step, last)] @ c @ H[min(position[j], last)]
    return out


def _rebuild_markov_gp(spec, array, name):
    kernel = saved_kernel(spec, array)
    block = MarkovGP(kernel, array("t"))
    block.name = name
    return block.posterior((array("natural_mean"), array("precision")))


def _rebuild_lds(spec, array, name):
    if spec != {}:
        raise ValueError(f"must be an empty object; got {spec!r}"[:300])
    block = LDS(array("transition"), array("process_cov"), array("obs_row"), array("init_mean"), array("init_cov"))
    block.name = name
    return block.posterior((array("natural_mean"), array("precision")))


register_rebuilder("markov_gp", _rebuild_markov_gp)
register_rebuilder("lds", _rebuild_lds)
