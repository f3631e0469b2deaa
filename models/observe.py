"""``Observe``: a likelihood on the values of a structured Gaussian prior (GP, Markov GP, LDS).

Point ``i`` of ``y`` observes ``a_i``, the ``i``-th value of the block (the
function value ``f(x_i)`` of a GP, or ``H x_t`` of a state-space model), so the
marginals are the block posterior's ``mean[i]`` and ``var[i]`` and the message
to the block is the per-point site ``(gamma, pi)`` itself.  Everything else is
the shared site path (:mod:`efvi.models.sites`).
"""

import numpy as np

from .sites import GaussianSiteFactor


class Observe(GaussianSiteFactor):
    """Observations ``y_i ~ p(y | a_i)`` of the values of a structured Gaussian block.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
    y : array_like, shape (N,)
        One observation per point of the block; NaN marks a missing one
        (interpolation / forecasting).
    on : str
        Name of a GP, MarkovGP or LDS block with N points.
    """

    def bind(self, blocks):
        super().bind(blocks)
        block = blocks[self.roles["on"]]
        n_points = getattr(block, "n_points", None)
        if n_points is None:
            raise ValueError(
                f"{self.describe()}: Observe needs a structured Gaussian block (gp.GP, lds.MarkovGP, "
                f"lds.LDS); got {type(block).__name__} for {block.name!r} (use glm.GLM for a weight vector)"
            )
        if n_points != self.n_data:
            raise ValueError(f"{self.describe()}: y has {self.n_data} entries but block "
                             f"{block.name!r} has {n_points} points")

    def _marginals(self, q, index):
        if index is None:
            return q.mean, q.var
        return q.mean[index], q.var[index]

    def _message(self, sites, index):
        natural_mean, precision = sites[0], sites[1]
        if index is None:
            return (natural_mean, precision)
        full_mean, full_precision = np.zeros(self.n_data), np.zeros(self.n_data)
        full_mean[index], full_precision[index] = natural_mean, precision
        return (full_mean, full_precision)
