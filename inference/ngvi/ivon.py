"""IVON: improved variational online Newton (Shen et al., 2024).

A mean-field Gaussian whose running curvature ``h`` is estimated from the
reparameterised gradients alone, ``h_hat = g * eps / sigma`` (Stein's lemma:
unbiased for the expected diagonal Hessian), and updated by the
positivity-preserving rule of Lin et al. (2020):

.. math::
    \\bar g &\\leftarrow \\beta_1 \\bar g + (1 - \\beta_1) \\hat g \\\\
    h &\\leftarrow \\beta_2 h + (1 - \\beta_2) \\hat h
        + \\tfrac{1}{2} (1 - \\beta_2)^2 (h - \\hat h)^2 / (h + \\delta) \\\\
    m &\\leftarrow m - \\alpha \\, \\frac{\\bar g / (1 - \\beta_1^t) + \\delta (m - m_0)}{h + \\delta},
    \\qquad \\sigma^2 = 1 / (\\lambda (h + \\delta)),

with ``lambda`` the effective sample size and ``delta = prior_precision / lambda``.
As in the authors' code (team-approx-bayes/ivon), ``alpha`` is ``lr * (hess_init + delta)``
when ``rescale_lr`` (so that ``lr`` is the first steps' size in parameter units),
and the mean step may be clipped elementwise to ``clip_radius``.
"""

import numpy as np

from ._base import DiagonalOptimizer, as_vector, check_betas, check_real
from . import _state_rules as rules
from ._kernels import ivon_update


class IVON(DiagonalOptimizer):
    """Improved variational online Newton (Shen et al., 2024), the default ngvi optimiser.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
        Prior precision; IVON's weight decay is ``prior_precision / ess``.
    lr : float
        Learning rate (the authors suggest ~0.1 with ``rescale_lr``).
    betas : (float, float)
        Momentum of the gradient and decay of the curvature, each in [0, 1).
    hess_init : float
        Initial curvature ``h_0`` (per example, >= 0).
    mc_samples : int
    seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    rescale_lr : bool
        Multiply ``lr`` by ``hess_init + delta`` (the authors' default).
    clip_radius : float
        Elementwise bound of the mean step's preconditioned direction (inf: none).
    """

    state_rules = {**DiagonalOptimizer.state_rules, "betas": rules.unit_pair,
                   "hess_init": rules.real(0.0, low_open=False), "rescale_lr": rules.boolean,
                   "clip_radius": rules.real(0.0, allow_inf=True)}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=0.1, betas=(0.9, 0.99999), hess_init=1.0,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0, rescale_lr=True, clip_radius=np.inf):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, hess_init=hess_init, prior_mean=prior_mean)
        self.betas = check_betas(betas)
        self.hess_init = float(hess_init)
        self.rescale_lr = bool(rescale_lr)
        self.clip_radius = np.inf if clip_radius == np.inf else check_real(
            clip_radius, "clip_radius", low=0.0, expected="a positive float or inf")

    _checks_proposal = True

    def _propose(self, X, y, batch_size, step):
        beta1, beta2 = self.betas
        noise, params, std = self._draw()
        nll, grads, _ = self._evaluate(params, X, y, batch_size, step)
        state = {name: np.empty(self.n_params) for name in ("mean", "hess", "momentum")}
        status = ivon_update(grads, noise, std, self.mean, self.hess, self.momentum, self.ess,
                             as_vector(self.prior_precision), as_vector(self.prior_mean), beta1, 1.0 - beta2,
                             1.0 - beta1 ** step, self.lr, self.hess_init, self.rescale_lr, self.clip_radius,
                             *state.values())
        self._raise_for_status(status, tuple(state), step)
        return state, float(np.mean(nll))
