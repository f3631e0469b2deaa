r"""Exponential likelihood for positive continuous data, with a log link on the mean.

The Gamma likelihood with shape 1: mean :math:`e^{a}`, rate :math:`e^{-a}`,

.. math::

    \log p(y \mid a) = -a - y e^{-a},

which is ``scipy.stats.expon(scale=exp(a))``.  Closed forms as for
:class:`GammaLogLink` with :math:`k = 1`.
"""

from ._quadrature import DEFAULT_N_POINTS
from .gamma_log_link import GammaLogLink


class Exponential(GammaLogLink):
    """Positive continuous data: y ~ Exponential with mean exp(a).

    Parameters
    ----------
    n_points : int, optional
        Gauss-Hermite points of the quadrature route.
    """

    _repr_fields = ()

    def __init__(self, n_points=DEFAULT_N_POINTS):
        super().__init__(shape=1.0, n_points=n_points)
