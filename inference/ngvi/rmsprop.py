"""RMSprop (Hinton's lecture 6a) on the MAP objective: the point-estimate baseline of Vprop.

.. math:: s \\leftarrow \\beta s + (1 - \\beta) g^2, \\qquad
          w \\leftarrow w - \\alpha g / (\\sqrt{s} + \\epsilon).
"""

import numpy as np

from ._base import check_real
from . import _state_rules as rules
from ._point import PointOptimizer


class RMSprop(PointOptimizer):
    """RMSprop on ``mean NLL + (prior_precision / ess) |w - prior_mean|^2 / 2``.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
    beta : float
        Decay of the squared-gradient average, in [0, 1).
    eps : float
    seed : int
    ess : float, optional
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    """

    state_rules = {**PointOptimizer.state_rules, "beta": rules.unit_real, "eps": rules.real(0.0),
                   "second": rules.array(low=0.0)}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, beta=0.999, eps=1e-8, seed=0, ess=None,
                 prior_mean=0.0):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess, seed=seed,
                         prior_mean=prior_mean)
        self.beta = check_real(beta, "beta", low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
        self.eps = check_real(eps, "eps", low=0.0, expected="a positive finite float")
        self.second = 0.0 * self.params

    def _propose(self, X, y, batch_size, step):
        nll, grad = self._objective_gradient(X, y, batch_size, step)
        second = self.beta * self.second + (1.0 - self.beta) * grad ** 2
        params = self.params - self.lr * grad / (np.sqrt(second) + self.eps)
        return {"params": params, "second": second}, nll
