r"""Exponential likelihood for positive continuous data, with a log or softplus link on the mean.

The Gamma likelihood with shape 1: mean :math:`\mu = h(a)`, rate :math:`1/\mu`,

.. math::

    \log p(y \mid a) = -\log\mu - y / \mu,

which is ``scipy.stats.expon(scale=mu)``.  Closed forms with the log link, as
for :class:`Gamma` with :math:`k = 1`.
"""

from ._quadrature import DEFAULT_N_POINTS
from .gamma import Gamma


class Exponential(Gamma):
    """Positive continuous data: y ~ Exponential with mean h(a) for the link h.

    Parameters
    ----------
    link : {"log", "softplus"}
        ``exp(a)`` (default) or ``log(1 + exp(a))``.
    n_points : int, optional
        Gauss-Hermite points (the log link's expectations are closed form).
    """

    _repr_fields = ("link",)

    def __init__(self, link="log", n_points=DEFAULT_N_POINTS):
        super().__init__(shape=1.0, link=link, n_points=n_points)
