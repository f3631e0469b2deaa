"""Vprop: variational RMSprop (Khan et al., 2017, the Vprop poster).

The CVI step with the squared minibatch gradient as the curvature, written in
RMSprop's variables (``s = sigma^{-2} - prior precision``, here per example):

.. math::
    w &= m + \\sigma \\epsilon, \\qquad \\sigma^2 = 1 / (\\lambda (s + \\delta)) \\\\
    s &\\leftarrow \\beta s + (1 - \\beta) \\hat g^2 \\\\
    m &\\leftarrow m - \\alpha (s + \\delta)^{-1} (\\hat g + \\delta (m - m_0)).

``sqrt=True`` gives the square-root variant ``(sqrt(s) + delta)^{-1}`` of the
authors' code (emtiyaz/vadam, ``Vprop``), closer to RMSprop's step.  With
``lr = 1 - beta`` and ``sqrt=False`` the step is a natural-gradient step of
Khan and Nielsen (2018), eqs. 16-17, with ``hat g^2`` in place of the Hessian.
"""

import numpy as np

from ._base import DiagonalOptimizer, as_vector, check_real
from . import _state_rules as rules
from ._kernels import vprop_update


class Vprop(DiagonalOptimizer):
    """Variational RMSprop (Vprop-1 of the poster; Khan et al., 2017).

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
    beta : float
        Decay of ``s`` in [0, 1).
    hess_init : float
        Initial ``s`` (>= 0).
    mc_samples, seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    sqrt : bool
        Divide by ``sqrt(s) + delta`` (authors' code) instead of ``s + delta`` (poster).
    """

    state_rules = {**DiagonalOptimizer.state_rules, "beta": rules.unit_real, "sqrt": rules.boolean}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, beta=0.999, hess_init=0.0,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0, sqrt=False):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, hess_init=hess_init, prior_mean=prior_mean)
        self.beta = check_real(beta, "beta", low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
        self.sqrt = bool(sqrt)

    _checks_proposal = True

    def _propose(self, X, y, batch_size, step):
        _, params, _ = self._draw()
        nll, grads, _ = self._evaluate(params, X, y, batch_size, step)
        state = {name: np.empty(self.n_params) for name in ("mean", "hess")}
        status = vprop_update(grads, self.mean, self.hess, self.ess, as_vector(self.prior_precision),
                              as_vector(self.prior_mean), self.beta, self.lr, self.sqrt, *state.values())
        self._raise_for_status(status, tuple(state), step)
        return state, float(np.mean(nll))
