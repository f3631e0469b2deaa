r"""A sparse (inducing-point) GP as a latent block: CVI with sites on the data, solved at M inducing points.

The prior ``f ~ GP(mu_0, k)`` is summarised by its values ``u = f(Z)`` at
``M`` inducing inputs ``Z``; as in Titsias (2009) and Hensman et al. (2013,
2015), the approximate posterior is ``q(f) = \int p(f | u) q(u) du``.  In the
whitened coordinates ``u = L_z v`` (``L_z L_z^T = K_zz``, ``v ~ N(0, I)``) the
value at input ``x_i`` is

.. math:: f_i = \mu_0 + \phi_i^T v + \epsilon_i, \qquad
          \phi_i = L_z^{-1} k_z(x_i), \qquad
          \epsilon_i \sim N(0, d_i), \quad d_i = k(x_i, x_i) - \lVert\phi_i\rVert^2,

so with ``q(v) = N(m, S)`` the marginal of ``f_i`` is
``N(mu_0 + phi_i^T m, phi_i^T S phi_i + d_i)``.  The data's factor sees
``f_i`` through its marginal, and its CVI sites are 1-D Gaussians in
``f_i`` (Khan and Nielsen, 2018, eqs. 15-17), exactly as for a dense GP.
The conditional variance ``d_i`` does not depend on ``q``, so a site
``(gamma_i, pi_i)`` on ``f_i`` is a site ``(phi_i gamma_i', phi_i pi_i
phi_i^T)`` on ``v`` (``gamma_i' = gamma_i - pi_i mu_0``), and the block's
conjugate computation is Bayesian linear regression on the features ``phi_i``:

.. math:: \Lambda = I + \Phi^T \operatorname{diag}(\pi) \Phi, \qquad
          \Lambda m = \Phi^T \gamma'.

The block's message is that pair ``(Phi^T gamma', Phi^T diag(pi) Phi)`` in
``v``-space, so a minibatch of ``B`` points costs ``O(B M^2)`` (stochastic CVI,
Khan and Nielsen, 2018, eq. 14) and a full-batch iteration ``O(N M^2)``.  The
ELBO is the SVGP bound ``sum_i E_q[log p(y_i | f_i)] - KL(q(v) || N(0, I))``
(Hensman et al., 2015), the KL being that of ``q(u)`` to ``p(u) = N(0, K_zz)``.

Kernel hyperparameters and, optionally, the inducing inputs are learned by the
engine's L-BFGS on the ELBO with the sites re-converged at each trial value
(as for the dense GP).  At converged sites the gradient is the partial
derivative of the bound at fixed ``q(u)``, whose per-point derivatives
``g_m = gamma_i - pi_i E[f_i]`` and ``g_v = -pi_i / 2`` are read off the sites
(:mod:`efvi.models.gp._sparse_gradient`).  Because ``Phi`` depends on the
hyperparameters, the engine re-derives the block's messages from the stored
per-point sites whenever they change.  Minibatch fits learn them too (Hensman
et al., 2013): one Adam step per stochastic CVI step, on the minibatch's
unbiased estimate of the same gradient at fixed ``q(u)``, after which
:meth:`SparseGP.carry_messages` keeps ``q(u)`` where it was.
"""

import numpy as np
from scipy.linalg import solve_triangular

from ...expfam import Gaussian
from ...expfam.checks import SYMMETRY_RTOL, as_float, check_integer, is_symmetric
from ...inference import Block
from ...inference.result import register_rebuilder

from . import _sparse_gradient
from ._sparse_features import STREAM_ROWS, features, inducing_cholesky
from ._sparse_posterior import InducingView, SparseGPPosterior
from .kernels import Kernel
from .kernels._validation import as_inputs
from .prior import saved_kernel


class SparseGP(Block):
    """Sparse GP prior: the function values at ``X`` through ``M`` inducing values at ``Z``.

    Observe it like a dense GP (``efvi.models.Observe(likelihood, y, on=...)``);
    one point of the block per row of ``X``.

    Parameters
    ----------
    kernel : efvi.models.gp.kernels.Kernel
    X : array_like, shape (N, D) or (N,)
        Inputs of the data points.
    inducing : array_like, shape (M, D) or (M,)
        Inducing inputs ``Z`` (distinct points; ``M`` is usually 50-1000).
    mean : float
        Constant prior mean.
    learn_hyperparameters : bool
        Learn the kernel's log hyperparameters by maximising the ELBO.
    learn_inducing : bool
        Learn the inducing inputs too (with ``learn_hyperparameters``, or alone).
    hyper_max_iter : int
        Iterations of the outer L-BFGS (each re-converges the sites).  With
        learned inducing inputs (``M x D`` more parameters) raise it, and the
        fit's ``max_iter``, well above the defaults (e.g. 2000 and 20000).
    learning_rate : float
        Adam's step size for the learned values in a minibatch fit
        (``fit(batch_size=...)``), which takes one Adam step on them per CVI
        step, from the same minibatch (the kernel's hyperparameters are
        logs; the inducing inputs are in the units of ``X``).  Full-batch
        fits learn by L-BFGS and do not use it.
    jitter : float
        Added to the diagonal of ``K_zz``, relative to its mean diagonal, before
        its Cholesky factorisation.
    max_feature_bytes : int
        The features ``Phi`` (``8 N M`` bytes) are kept in memory when they fit
        in this many bytes; otherwise they are rebuilt a block of rows at a
        time whenever they are needed (each iteration then evaluates the
        kernel twice: 4x the time per iteration at N = 1e6, M = 100; memory
        for the features independent of ``N``).

    Attributes
    ----------
    n_points : int
        ``N``, the number of data points the block's factor observes.
    """

    family = Gaussian
    messages_depend_on_hyperparameters = True
    """The ``v``-space message of a site depends on ``Phi``: the engine re-derives it when they change."""
    learns_from_minibatches = True
    """Minibatch fits may learn the hyperparameters: :meth:`elbo_gradient` of a minibatch's targets,
    weighted by ``N / B``, is an unbiased estimate of the ELBO's gradient at fixed ``q(u)``, and
    :meth:`carry_messages` keeps ``q(u)`` where it was when they change."""

    def __init__(self, kernel, X, inducing, mean=0.0, learn_hyperparameters=False, learn_inducing=False,
                 hyper_max_iter=100, jitter=1e-8, max_feature_bytes=2 ** 31, learning_rate=0.01):
        if not isinstance(kernel, Kernel):
            raise ValueError(f"kernel must be a efvi.models.gp.kernels.Kernel; got {type(kernel).__name__}")
        self.X = as_inputs(X, "X", kernel.input_dim)
        if self.X.shape[0] == 0:
            raise ValueError(f"X must hold at least one input point; got shape {self.X.shape}")
        self.Z = as_inputs(inducing, "inducing", self.X.shape[1])
        if self.Z.shape[0] == 0:
            raise ValueError(f"inducing must hold at least one inducing input; got shape {self.Z.shape}")
        mean = as_float(mean, "mean")
        if mean.ndim != 0:
            raise ValueError(f"mean must be a scalar (a constant prior mean); got an array of shape {mean.shape}")
        jitter = as_float(jitter, "jitter")
        if jitter.ndim != 0 or not 0.0 <= jitter < 1.0:
            raise ValueError(f"jitter must be a number in [0, 1) (relative to the mean prior variance at the "
                             f"inducing inputs); got {jitter}")
        self.mean_value, self.jitter = float(mean), float(jitter)
        self.learn_kernel = bool(learn_hyperparameters)
        self.learn_inducing = bool(learn_inducing)
        self.learns_hyperparameters = self.learn_kernel or self.learn_inducing
        self.hyper_max_iter = check_integer(hyper_max_iter, "hyper_max_iter", minimum=1)
        rate = as_float(learning_rate, "learning_rate")
        if rate.ndim != 0 or not 0.0 < rate < np.inf:
            raise ValueError(f"learning_rate must be a positive finite number (Adam's step size); got {learning_rate!r}")
        self.learning_rate = float(rate)
        self.n_points = self.X.shape[0]
        self.caches_features = 8 * self.n_points * self.Z.shape[0] <= check_integer(
            max_feature_bytes, "max_feature_bytes", minimum=0)
        self._set(kernel, self.Z)

    def __repr__(self):
        """``SparseGP(kernel=RBF(...), X=<500 inputs of dimension 1>, inducing=<20 inputs>, mean=0.0)``."""
        options = "".join(f", {name}=True" for name, on in (("learn_hyperparameters", self.learn_kernel),
                                                             ("learn_inducing", self.learn_inducing)) if on)
        return (f"SparseGP(kernel={self.kernel!r}, X=<{self.X.shape[0]} inputs of dimension {self.X.shape[1]}>, "
                f"inducing=<{self.Z.shape[0]} inputs>, mean={self.mean_value!r}{options})")

    def _set(self, kernel, Z, trial=False):
        self.kernel, self.Z = kernel, Z
        self.inducing_chol = inducing_cholesky(kernel, Z, self.jitter)
        self._features = None
        self._trial = trial
        self._last_batch = (None, None)

    @property
    def n_inducing(self):
        """int: the number ``M`` of inducing inputs."""
        return self.Z.shape[0]

    @property
    def features(self):
        """``(Phi, d)``: ``Phi = K_xz L_z^{-T}``, shape (N, M), and the conditional variances ``d``, shape (N,)."""
        if self._features is None:
            self._features = features(self.kernel, self.X, self.Z, self.inducing_chol)
        return self._features

    def feature_blocks(self, index=None):
        """Yield ``(positions, Phi rows, d rows)`` over the points ``index`` (all when None).

        ``positions`` locate the rows among the requested points (a slice of
        ``range(len(index))``, or of ``range(N)`` when ``index`` is None).

        One block from the kept features, or blocks of ``STREAM_ROWS`` rows built
        on the fly when they are not kept (``max_feature_bytes``).
        """
        n = self.n_points if index is None else len(index)
        step = max(n, 1) if self.caches_features else STREAM_ROWS
        for start in range(0, n, step):
            positions = slice(start, min(start + step, n))
            rows = positions if index is None else index[positions]
            yield (positions,) + self.feature_rows(rows)

    def feature_rows(self, rows):
        """``(Phi[rows], d[rows])`` for a slice or index array ``rows``: from the kept features, or built.

        A block made by :meth:`with_hyperparameters` builds the rows of a
        minibatch (an index array) alone unless its features are already kept:
        a minibatch fit that learns makes a new block every step, and building
        all ``N`` rows for each would cost ``O(N M^2)`` a step.
        """
        minibatch = not isinstance(rows, slice)
        if self.caches_features and (self._features is not None or not (self._trial and minibatch)):
            phi, d = self.features
            return phi[rows], d[rows]
        last, built = self._last_batch           # one minibatch's rows serve a whole step: built once
        if minibatch and last is not None and last.shape == np.shape(rows) and np.array_equal(last, rows):
            return built
        built = features(self.kernel, self.X[rows], self.Z, self.inducing_chol)
        if minibatch:
            self._last_batch = (np.array(rows), built)
        return built

    # ------------------------------------------------------------------ block protocol
    def blas_flops(self):
        """``N M^2``: the features' cross products (``M`` inducing inputs) and the ``M x M`` solves."""
        m = float(self.Z.shape[0])
        return self.n_points * m * m + m ** 3

    def zero_message(self):
        m = self.n_inducing
        return (np.zeros(m), np.zeros((m, m)))

    def posterior(self, message):
        return SparseGPPosterior(self, message)

    def kl(self, q):
        # KL(N(m, S) || N(0, I)) = (tr S + m^T m - M + log|Lambda|) / 2, with S = Lambda^{-1}
        return 0.5 * (q.trace_cov + q.v_mean @ q.v_mean - self.n_inducing + q.log_det_precision)

    def divergence(self, q, other):
        # Jeffreys divergence of two Gaussians in v: <d natural, d mean parameters>
        delta_second = (other.v_cov - q.v_cov) + (np.outer(other.v_mean, other.v_mean) - np.outer(q.v_mean, q.v_mean))
        delta_precision = other.message[1] - q.message[1]
        return float((other.message[0] - q.message[0]) @ (other.v_mean - q.v_mean)
                     - 0.5 * np.sum(delta_precision * delta_second))

    def point_view(self, factor):
        """How the data points of ``factor`` see this block (see :mod:`efvi.models.projection`)."""
        if factor.n_data != self.n_points:
            raise ValueError(f"{factor.describe()}: y has {factor.n_data} entries but block {self.name!r} "
                             f"has {self.n_points} points (rows of X)")
        return InducingView(self, factor.n_data)

    # ------------------------------------------------------------------ hyperparameters
    def hyperparameters(self):
        """The learned values: the kernel's log hyperparameters, then the inducing inputs (row-major)."""
        parts = [self.kernel.log_params] if self.learn_kernel else []
        if self.learn_inducing:
            parts.append(self.Z.ravel())
        return np.concatenate(parts) if parts else np.zeros(0)

    def hyperparameter_names(self):
        names = list(self.kernel.param_names) if self.learn_kernel else []
        if self.learn_inducing:
            names += [f"inducing[{i},{j}]" for i in range(self.Z.shape[0]) for j in range(self.Z.shape[1])]
        return tuple(names)

    def hyperparameter_log_scale(self):
        """The kernel's hyperparameters are logs; the inducing inputs are learned as they are."""
        n_kernel = self.kernel.n_params if self.learn_kernel else 0
        return np.arange(n_kernel + (self.Z.size if self.learn_inducing else 0)) < n_kernel

    def with_hyperparameters(self, theta):
        """A new block with the hyperparameters ``theta`` (ordered as :meth:`hyperparameters`)."""
        theta = np.asarray(theta, dtype=float)
        n_kernel = self.kernel.n_params if self.learn_kernel else 0
        expected = n_kernel + (self.Z.size if self.learn_inducing else 0)
        if theta.shape != (expected,):
            raise ValueError(f"theta must have shape ({expected},); got shape {theta.shape}")
        kernel = self.kernel.with_log_params(theta[:n_kernel]) if self.learn_kernel else self.kernel
        Z = theta[n_kernel:].reshape(self.Z.shape) if self.learn_inducing else self.Z
        if not np.all(np.isfinite(Z)):
            raise ValueError("the inducing inputs must be finite")
        block = SparseGP.__new__(SparseGP)
        block.__dict__.update(self.__dict__)
        block._set(kernel, np.ascontiguousarray(Z), trial=True)
        return block

    def elbo_gradient(self, q, observations):
        """Gradient of the ELBO in :meth:`hyperparameters` at fixed ``q(u)`` (see :mod:`._sparse_gradient`).

        With every point's converged sites this is the gradient of the
        converged ELBO (the envelope theorem); with the CVI targets of a
        minibatch at ``q``, weighted by ``N / B``, an unbiased estimate of the
        ELBO's gradient at fixed ``q(u)`` (Hensman et al., 2013).  The
        per-point derivatives are read off the sites or targets:
        ``g_m = gamma_i - pi_i E[f_i]``, ``g_v = -pi_i / 2``.

        Parameters
        ----------
        q : SparseGPPosterior
        observations : list of (sites, index, scale)
            One per factor observing this block: its per-point ``(gamma, pi)``
            (each of shape (N,), or (B,) for the points ``index`` of a
            minibatch; ``index`` None: all points) and the weight of its
            expected log-likelihood (``N / B`` for a minibatch, else 1).

        Returns
        -------
        ndarray, shape (n_hyperparameters,)
        """
        parts = []
        for (gamma, pi), index, scale in observations:
            mean = q.mean if index is None else q.marginals(index)[0]
            parts.append((gamma - pi * mean, -0.5 * pi, index, scale))
        return _sparse_gradient.bound_gradient(self, q, parts)

    def carry_messages(self, old, messages):
        """The factors' messages to this block that keep ``q(u)`` of the block ``old`` where it was.

        A minibatch fit that learns moves the hyperparameters at fixed
        ``q(u)`` (:mod:`._sparse_gradient`).  In the whitened coordinates
        ``v' = T^{-1} v`` with ``T = L_z^{-1} L_z'``, so the posterior's natural
        parameters become ``(T^T eta, T^T Lambda T)``: each message is carried
        by ``T``, and the first also takes the change of the prior's share,
        ``T^T T - I`` (the next CVI steps replace it with the sites' own).

        Parameters
        ----------
        old : SparseGP
            The block the messages were formed for.
        messages : list of tuple
            ``(eta, Lambda_part)`` of each factor, shapes (M,) and (M, M).

        Returns
        -------
        list of tuple, like ``messages``
        """
        T = solve_triangular(old.inducing_chol, self.inducing_chol, lower=True, check_finite=False)
        carried = [(T.T @ eta, T.T @ part @ T) for eta, part in messages]
        if carried:
            eta, part = carried[0]
            shift = T.T @ T - np.eye(T.shape[0])
            carried[0] = (eta, 0.5 * (part + part.T) + shift)
        return carried


def _rebuild_sparse_gp(spec, array, name):
    kernel = saved_kernel(spec, array)
    block = SparseGP(kernel, array("X"), array("Z"), mean=float(array("mean")), jitter=float(array("jitter")))
    block.name = name
    precision = array("message/1")
    if not np.all(is_symmetric(precision)):
        raise ValueError(f"message/1 (Phi^T diag(pi) Phi) must be symmetric to {SYMMETRY_RTOL:g} of its largest "
                         f"entry; it is off by {float(np.max(np.abs(precision - precision.T))):.3g}")
    return block.posterior((array("message/0"), precision))


register_rebuilder("sparse_gp", _rebuild_sparse_gp)

__all__ = ["SparseGP", "SparseGPPosterior", "features", "inducing_cholesky"]
