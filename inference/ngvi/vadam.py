"""Vadam: variational Adam (Khan et al., 2018).

Adam run on weights perturbed by the posterior, with the squared minibatch
gradient as the curvature (the "gradient magnitude" approximation
``(1/M) sum_i g_i^2 ~ (mean g)^2``) and the prior added to the gradient:

.. math::
    w &= m + \\sigma \\epsilon, \\qquad \\sigma^2 = 1 / (\\lambda (s + \\delta)) \\\\
    \\bar g &\\leftarrow \\beta_1 \\bar g + (1 - \\beta_1) (\\hat g + \\delta (m - m_0)), \\qquad
    s \\leftarrow \\beta_2 s + (1 - \\beta_2) \\hat g^2 \\\\
    m &\\leftarrow m - \\alpha \\, \\frac{\\bar g / (1 - \\beta_1^t)}{\\sqrt{s / (1 - \\beta_2^t)} + \\delta}.

Details follow the authors' code (emtiyaz/vadam, ``Vadam``): ``hat g^2`` is the
Monte Carlo average of the squared gradients, both moments are bias-corrected
in the mean step, and the posterior precision is ``lambda s + prior_precision``
with the raw ``s``.  The square root makes the step Adam's rather than the
natural gradient's (the approximation the paper makes to stay close to Adam).
"""

import numpy as np

from ._base import DiagonalOptimizer, as_vector, check_betas
from . import _state_rules as rules
from ._kernels import vadam_update


class Vadam(DiagonalOptimizer):
    """Variational Adam (Khan et al., 2018).

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
    betas : (float, float)
        Adam's moment decays, each in [0, 1).
    hess_init : float
        Initial ``s`` (>= 0); the authors' ``prec_init`` is ``ess * hess_init + prior_precision``.
    mc_samples, seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    """

    state_rules = {**DiagonalOptimizer.state_rules, "betas": rules.unit_pair}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, betas=(0.9, 0.999), hess_init=0.0,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, hess_init=hess_init, prior_mean=prior_mean)
        self.betas = check_betas(betas)

    _checks_proposal = True

    def _propose(self, X, y, batch_size, step):
        beta1, beta2 = self.betas
        _, params, _ = self._draw()
        nll, grads, _ = self._evaluate(params, X, y, batch_size, step)
        state = {name: np.empty(self.n_params) for name in ("mean", "hess", "momentum")}
        status = vadam_update(grads, self.mean, self.hess, self.momentum, self.ess, as_vector(self.prior_precision),
                              as_vector(self.prior_mean), beta1, beta2, 1.0 - beta1 ** step, 1.0 - beta2 ** step,
                              self.lr, *state.values())
        self._raise_for_status(status, tuple(state), step)
        return state, float(np.mean(nll))
