"""RMSprop (Hinton's lecture 6a) on the MAP objective: the point-estimate baseline of Vprop.

.. math:: s \\leftarrow \\beta s + (1 - \\beta) g^2, \\qquad
          w \\leftarrow w - \\alpha g / (\\sqrt{s} + \\epsilon).
"""

import numpy as np

from ._base import check_real
from ._point import PointOptimizer


class RMSprop(PointOptimizer):
    """RMSprop on ``mean NLL + (prior_precision / ess) |w|^2 / 2``.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float
    lr : float
    beta : float
        Decay of the squared-gradient average, in [0, 1).
    eps : float
    seed : int
    ess : float, optional
    """

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, beta=0.999, eps=1e-8, seed=0, ess=None):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess, seed=seed)
        self.beta = check_real(beta, "beta", low=0.0, high=1.0, low_open=False, expected="a float in [0, 1)")
        self.eps = check_real(eps, "eps", low=0.0, expected="a positive finite float")
        self.second = 0.0 * self.params

    def _propose(self, X, y, batch_size, step):
        nll, grad = self._objective_gradient(X, y, batch_size, step)
        second = self.beta * self.second + (1.0 - self.beta) * grad ** 2
        params = self.params - self.lr * grad / (np.sqrt(second) + self.eps)
        return {"params": params, "second": second}, nll
