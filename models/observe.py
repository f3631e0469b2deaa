"""``Observe``: a likelihood on the values of a structured Gaussian prior (GP, Markov GP, LDS).

Point ``i`` of ``y`` observes ``a_i``, the ``i``-th value of the block (the
function value ``f(x_i)`` of a GP, or ``H x_t`` of a state-space model): the
identity projection (:class:`efvi.models.projection.PointValues`) of the one
site factor (:mod:`efvi.models.sites`).
"""

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

    def __init__(self, likelihood, y, on):
        super().__init__(likelihood, y, on)
