"""VAN: variational adaptive-Newton with a full covariance (Khan et al., 2017).

The natural-gradient step of Khan and Nielsen (2018), eqs. 16-17, for a
full-covariance Gaussian, in per-example units (``delta = prior_precision / lambda``):

.. math::
    H &\\leftarrow (1 - \\rho) H + \\rho \\hat H, \\qquad \\rho = 1 - \\beta_2 \\\\
    \\bar g &\\leftarrow \\beta_1 \\bar g + (1 - \\beta_1) (\\hat g + \\delta (m - m_0)) \\\\
    m &\\leftarrow m - \\alpha (H + \\delta I)^{-1} \\bar g / (1 - \\beta_1^t),
    \\qquad V^{-1} = \\lambda (H + \\delta I),

with ``hat H`` the exact Hessian (or the full Gauss-Newton matrix) of the
average negative log-likelihood at a weight sample.  With ``beta1 = 0``,
``lr = rho``, a full batch and exact expectations (``antithetic=True`` makes
them exact for a quadratic log-likelihood) it is the CVI step; with
``lr = rho = 1`` on Bayesian linear regression it lands on the exact
posterior.  When the plain update is not positive definite (a non-convex
loss), the positivity-preserving rule of Lin et al. (2020) is used for that step.
O(P^3) per step: for small models.
"""

import numpy as np

from ...expfam import Gaussian

from ._base import Optimizer, check_betas, check_real
from . import _state_rules as rules
from ._step import full_precision_update

_CURVATURES = ("hessian", "gauss_newton_full")
SYMMETRY_RTOL = 1e-10
"""How far from symmetric a restored ``hess`` may be, relative to its largest entry (rounding only)."""


class VAN(Optimizer):
    """Variational adaptive-Newton with a full-covariance Gaussian posterior (Khan et al., 2017).

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
        Step of the mean.
    betas : (float, float)
        Momentum (0: none) and curvature decay ``1 - rho``, each in [0, 1).
    hess_init : float
        Initial per-example curvature ``H_0 = hess_init I`` (>= 0; 0 starts at the prior).
    mc_samples, seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    curvature : {"hessian", "gauss_newton_full"}
    antithetic : bool
        Draw the weight samples in pairs ``m +- L^{-T} eps`` (``mc_samples`` even).

    Attributes
    ----------
    mean : ndarray (P,)
    hess : ndarray (P, P)
    n_corrected_ : int
        Steps that took the positivity-preserving rule.
    """

    state_rules = {**Optimizer.state_rules, "betas": rules.unit_pair, "curvature": rules.choice(*_CURVATURES),
                   "antithetic": rules.boolean, "mean": rules.array(), "hess": rules.array(ndim=2),
                   "momentum": rules.array(), "n_corrected_": rules.count(per_step=lambda optimizer: 1)}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=0.1, betas=(0.0, 0.9), hess_init=0.0,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0, curvature="hessian", antithetic=False):
        if curvature not in _CURVATURES:
            raise ValueError(f"curvature must be one of {', '.join(map(repr, _CURVATURES))}; got {curvature!r}")
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, prior_mean=prior_mean)
        self.betas = check_betas(betas)
        hess_init = check_real(hess_init, "hess_init", low=0.0, low_open=False,
                               expected="a non-negative finite float")
        self.curvature = curvature
        self._set_antithetic(antithetic)
        self.mean = self._init_params()
        self.hess = hess_init * np.eye(self.n_params)
        self.momentum = np.zeros(self.n_params)
        self.n_corrected_ = 0

    @property
    def precision(self):
        """Posterior precision matrix ``ess * (hess + delta I)``, shape (P, P)."""
        return self.ess * (self.hess + self._delta_matrix())

    @property
    def posterior(self):
        """The full-covariance Gaussian posterior, an :class:`efvi.expfam.Gaussian`."""
        return Gaussian.from_mean_precision(self.mean, self.precision)

    def _delta_matrix(self):
        """``diag(delta)``, shape (P, P): the prior precision per example as a matrix."""
        return np.diag(np.broadcast_to(self.delta, (self.n_params,)))

    def _check_state_invariants(self):
        scale = np.max(np.abs(self.hess))
        if not np.all(np.abs(self.hess - self.hess.T) <= SYMMETRY_RTOL * scale):
            raise ValueError(f"hess must be symmetric (to {SYMMETRY_RTOL:g} of its largest entry); it is off by "
                             f"{float(np.max(np.abs(self.hess - self.hess.T))):.3g}")
        try:
            np.linalg.cholesky(self.precision)
        except np.linalg.LinAlgError:
            raise ValueError("hess must give a positive definite posterior precision ess * (hess + delta I)") from None

    def _check_precision(self, state, step):
        try:
            np.linalg.cholesky(self.ess * (state["hess"] + self._delta_matrix()))
        except np.linalg.LinAlgError:
            raise FloatingPointError(
                f"step {step}: the proposed precision is not positive definite; state left unchanged") from None

    def _sample(self, rng, n):
        chol = np.linalg.cholesky(self.precision)
        return self.mean + np.linalg.solve(chol.T, rng.standard_normal((n, self.n_params)).T).T

    def _propose(self, X, y, batch_size, step):
        beta1, beta2 = self.betas
        chol = np.linalg.cholesky(self.precision)
        params = self.mean + np.linalg.solve(chol.T, self._standard_normal().T).T
        outputs = [self._evaluate(w, X, y, batch_size, step, self.curvature) for w in params]
        nll = np.mean([o[0] for o in outputs])
        grad = np.mean([o[1] for o in outputs], axis=0)
        hess_estimate = np.mean([o[2] for o in outputs], axis=0)
        hess, corrected = full_precision_update(self.hess, 0.5 * (hess_estimate + hess_estimate.T),
                                                1.0 - beta2, self.delta)
        momentum = beta1 * self.momentum + (1.0 - beta1) * (grad + self._prior_gradient(self.mean))
        shifted = hess + self._delta_matrix()
        mean = self.mean - self.lr * np.linalg.solve(shifted, momentum / (1.0 - beta1 ** step))
        return ({"mean": mean, "hess": hess, "momentum": momentum,
                 "n_corrected_": self.n_corrected_ + int(corrected)}, float(nll))
