"""Adam (Kingma and Ba, 2015) on the MAP objective: the point-estimate baseline of Vadam and IVON."""

from .._adam import adam_update
from ._base import check_betas, check_real
from . import _state_rules as rules
from ._point import PointOptimizer


class Adam(PointOptimizer):
    """Adam on ``mean NLL + (prior_precision / ess) |w - prior_mean|^2 / 2``.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
    betas : (float, float)
        Moment decays, each in [0, 1).
    eps : float
        Added to the root of the second moment.
    seed : int
        Seeds the initial parameters.
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    """

    state_rules = {**PointOptimizer.state_rules, "betas": rules.unit_pair, "eps": rules.real(0.0),
                   "first": rules.array(), "second": rules.array(low=0.0)}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, seed=0,
                 ess=None, prior_mean=0.0):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess, seed=seed,
                         prior_mean=prior_mean)
        self.betas = check_betas(betas)
        self.eps = check_real(eps, "eps", low=0.0, expected="a positive finite float")
        self.first = 0.0 * self.params
        self.second = 0.0 * self.params

    def _propose(self, X, y, batch_size, step):
        nll, grad = self._objective_gradient(X, y, batch_size, step)
        params, first, second = adam_update(self.params, grad, self.first, self.second, step, self.lr,
                                            *self.betas, self.eps)
        return {"params": params, "first": first, "second": second}, nll
