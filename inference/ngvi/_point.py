"""Point-estimate optimisers' shared behaviour: MAP of the tempered log-joint, no posterior."""

import numpy as np

from ._base import Optimizer
from . import _state_rules as rules


class PointOptimizer(Optimizer):
    """Minimises ``mean NLL + sum delta (w - prior_mean)^2 / 2``: MAP with the Gaussian prior.

    ``delta = prior_precision / ess``, elementwise for per-parameter precisions.

    Attributes
    ----------
    params : ndarray (P,)
    """

    state_rules = {**Optimizer.state_rules, "params": rules.array()}

    def __init__(self, model, n_data, *, prior_precision, lr, ess, seed, prior_mean=0.0):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess, mc_samples=1, seed=seed,
                         prior_mean=prior_mean)
        self.params = self._init_params()

    @property
    def posterior(self):
        raise AttributeError(f"{type(self).__name__} finds a point estimate and has no posterior; use .params")

    def _sample(self, rng, n):
        return np.repeat(self.params[None, :], n, axis=0)

    def predict(self, X, n_samples=1, seed=None):
        """The model's ``predictive`` at the point estimate (``n_samples`` is ignored)."""
        return self.model.predictive(self.params[None, :], X)

    def _objective_gradient(self, X, y, batch_size, step):
        nll, grad, _ = self._evaluate(self.params, X, y, batch_size, step)
        return float(nll), grad + self._prior_gradient(self.params)
