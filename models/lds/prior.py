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
"""

import numpy as np

from ...expfam import Gaussian
from ...expfam.checks import as_float, check_integer
from ...inference import Block, InvalidPosterior

from .._hyper import KernelHyperparameters
from ..gp.kernels import Kernel
from ..sites import site_divergence, site_kl
from .fisher_identity import log_normaliser_grad
from .smoother import STATUS_OK, Workspace, _run_smoother, _validate


class StateSpacePosterior:
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

    def predict(self, t_new):
        """Posterior mean and variance of ``f`` at new times (a Markov GP only): interpolation and forecasting.

        The new times join the block's times with empty sites and one smoother
        pass gives their marginals (O(T + M)).

        Parameters
        ----------
        t_new : array_like, shape (M,)
            Any real times, in any order (before, between or after the data).

        Returns
        -------
        mean, var : ndarray, shape (M,)

        Raises
        ------
        ValueError
            For a general LDS (its points are its time steps: read ``mean`` and
            ``var``), or for ``t_new`` that is not a finite 1-D array.
        """
        return self._prior._predict(self, t_new)

    def __repr__(self):
        return f"StateSpacePosterior(T={self.mean.shape[0]})"


class StateSpacePrior(Block):
    """Base class of state-space blocks; subclasses set the validated matrices with :meth:`_set_model`."""

    family = Gaussian

    def _set_model(self, transition, process_cov, obs_row, init_mean, init_cov, n_steps):
        zeros = np.zeros(n_steps)
        _, _, self.H, self.A, self.Q, self.m0, self.P0 = _validate(
            zeros, zeros, obs_row, transition, process_cov, init_mean, init_cov
        )
        self.n_points = n_steps
        self.state_dim = self.m0.shape[0]
        self._workspace = Workspace()

    def zero_message(self):
        return (np.zeros(self.n_points), np.zeros(self.n_points))

    def posterior(self, message):
        natural_mean = np.ascontiguousarray(message[0], dtype=float)
        precision = np.ascontiguousarray(message[1], dtype=float)
        result = _run_smoother(natural_mean, precision, self.H, self.A, self.Q, self.m0, self.P0,
                               store=False, return_status=True, workspace=self._workspace)
        if result.status != STATUS_OK:
            raise InvalidPosterior(f"block {self.name!r}: the sites make the state-space posterior "
                                   f"invalid at time step {result.failed_step}")
        return StateSpacePosterior(self, result.marginal_mean, result.marginal_var,
                                   float(result.log_normaliser), natural_mean, precision)

    def smoother(self, natural_mean, precision):
        """Full smoother output (states, covariances, cross-covariances) for these sites."""
        natural_mean, precision = (np.ascontiguousarray(x, dtype=float) for x in (natural_mean, precision))
        if natural_mean.shape != (self.n_points,) or precision.shape != (self.n_points,):
            raise ValueError(f"natural_mean and precision must have shape ({self.n_points},); "
                             f"got {natural_mean.shape} and {precision.shape}")
        return _run_smoother(natural_mean, precision, self.H, self.A, self.Q, self.m0, self.P0,
                             store=True, return_status=False)

    def kl(self, q):
        return site_kl(q.natural_mean, q.precision, q.mean, q.var, q.log_normaliser)

    def _predict(self, q, t_new):
        raise ValueError(f"block {self.name!r} is a general LDS: its points are its {self.n_points} time steps, "
                         "so there are no new inputs to predict at (read q.mean and q.var; a MarkovGP predicts "
                         "at new times)")

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
    """

    def __init__(self, transition, process_cov, obs_row, init_mean, init_cov, n_steps=None):
        lengths = {np.shape(transition)[0] if np.ndim(transition) == 3 else None,
                   np.shape(process_cov)[0] if np.ndim(process_cov) == 3 else None,
                   np.shape(obs_row)[0] if np.ndim(obs_row) == 2 else None, n_steps} - {None}
        if len(lengths) != 1:
            raise ValueError(
                "n_steps must be given when every matrix is constant, and must agree with the time axis "
                f"of time-varying transition/process_cov/obs_row; got lengths {sorted(lengths)}"
            )
        n_steps = check_integer(lengths.pop(), "n_steps", minimum=1)
        self._set_model(transition, process_cov, obs_row, init_mean, init_cov, n_steps)


class MarkovGP(KernelHyperparameters, StateSpacePrior):
    """A GP over sorted times ``t`` in state-space form (Matern 1/2, 3/2, 5/2 and sums).

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
        A kernel with a state-space form (see ``docs/kernels.md``).
    t : array_like, shape (T,)
        Non-decreasing times (irregular spacing allowed).
    learn_hyperparameters : bool
        Learn the kernel's log hyperparameters by maximising the ELBO.
    hyper_max_iter : int
        Iterations of the outer L-BFGS over the log hyperparameters (each re-converges the sites).
    """

    def __init__(self, kernel, t, learn_hyperparameters=False, hyper_max_iter=100):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel; got {type(kernel).__name__}")
        kind = np.asarray(t).dtype.kind
        if kind not in "iufO":
            raise ValueError(f"t must be an array of real numbers; got dtype {np.asarray(t).dtype}")
        t = as_float(t, "t", ndim_min=1)
        if t.ndim != 1 or t.shape[0] < 1:
            raise ValueError(f"t must be a 1-D array of at least one time; got shape {t.shape}")
        decreasing = np.flatnonzero(np.diff(t) < 0)
        if decreasing.size:
            i = decreasing[0]
            raise ValueError(f"t must be sorted (non-decreasing); got t[{i + 1}] = {float(t[i + 1])!r} "
                             f"< t[{i}] = {float(t[i])!r}")
        self.t = t
        self.dt = np.concatenate([[0.0], np.diff(t)])
        self.learns_hyperparameters = bool(learn_hyperparameters)
        self.hyper_max_iter = check_integer(hyper_max_iter, "hyper_max_iter", minimum=1)
        self._set_kernel(kernel)

    def _set_kernel(self, kernel):
        self.kernel = kernel
        ss = kernel.state_space()
        A, Q = kernel.discretise(self.dt)
        self._set_model(A, Q, ss.H, np.zeros(ss.H.shape[0]), ss.Pinf, self.t.shape[0])

    def _predict(self, q, t_new):
        t_new = as_float(t_new, "t_new", ndim_min=1)
        if t_new.ndim != 1:
            raise ValueError(f"t_new must be a 1-D array of times; got shape {t_new.shape}")
        times = np.concatenate([self.t, t_new])
        order = np.argsort(times, kind="stable")
        gamma, pi = np.zeros(times.shape[0]), np.zeros(times.shape[0])
        gamma[: self.n_points], pi[: self.n_points] = q.natural_mean, q.precision
        merged = MarkovGP(self.kernel, times[order])
        merged.name = self.name
        joint = merged.posterior((gamma[order], pi[order]))
        position = np.empty_like(order)
        position[order] = np.arange(order.shape[0])
        new = position[self.n_points:]
        return joint.mean[new], np.maximum(joint.var[new], 0.0)

    def _build(self, log_params):
        A, Q = self.kernel.discretise_fn(self.dt)(log_params)
        P0 = self.kernel.stationary_cov_fn()(log_params)
        return A, Q, np.zeros(self.state_dim), P0

    def log_normaliser(self, log_params, message):
        """``log Z(theta)`` and its gradient (Fisher's identity) with the sites held fixed.

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
        return log_normaliser_grad(np.asarray(log_params, float), self._build, gamma, pi, self.H[0])

