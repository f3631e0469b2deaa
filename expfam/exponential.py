"""The exponential family member ``Exponential(rate)`` on :math:`z \\ge 0`.

With rate :math:`r > 0`,

.. math::

    q(z) = r e^{-r z} = \\exp\\big(\\lambda z - A(\\lambda)\\big),
    \\qquad \\phi(z) = z, \\qquad \\lambda = -r, \\qquad
    A(\\lambda) = -\\log(-\\lambda), \\qquad h(z) = 1,

so :math:`\\mu = 1 / r` and :math:`F = 1 / r^2`.  This is the minimal contract
of ``docs/add_a_family.md``: the class states its log-partition, statistic,
support, natural parameter space and names, and takes ``natural_to_mean``,
``mean_to_natural`` (Newton's method from :math:`\\lambda = -1`), ``fisher`` and
the entropy :math:`1 - \\log r` from :class:`~efvi.expfam.ExponentialFamily`.
It adds one closed form, the KL divergence: the generic Bregman form
:math:`\\log(r_q / r_p) + r_p / r_q - 1` subtracts numbers near 1 and keeps
only about :math:`\\epsilon / KL` relative accuracy for nearby rates (0.02 at
a relative rate difference of 1e-7); written as :math:`m(r_p / r_q)`,
:math:`m(t) = t - 1 - \\log t` (:func:`~efvi.expfam._bregman.log_gap`), it
keeps every digit.  ``logpdf`` is ``-inf`` for :math:`z < 0` (and at
:math:`z = \\infty`); :math:`z = 0` is in the support, as in ``scipy.stats.expon``.
"""

import autograd.numpy as anp
import numpy as np

from ._base import ExponentialFamily
from ._bregman import log_gap
from ._registry import register
from .checks import check_positive


@register
class Exponential(ExponentialFamily):
    """A batch of exponential distributions with rates ``rate`` (density ``rate exp(-rate z)``, ``z >= 0``).

    Parameters
    ----------
    rate : array_like, shape ``batch``
        Rates ``r > 0`` (the mean is ``1 / r``).

    Raises
    ------
    ValueError
        Naming ``rate`` if it is not finite and positive.

    Notes
    -----
    Natural parameters ``(-rate,)`` of shape ``batch``; samples have shape ``batch``.
    """

    name = "exponential"
    param_names = ("-rate",)
    event_ndims = (0,)
    sample_ndim = 0

    def __init__(self, rate):
        self._natural = Exponential.from_natural((-check_positive(rate, "rate"),), validate=False).natural
        self._mean_params = None

    @classmethod
    def sufficient_stats(cls, z):
        """``(z,)`` for ``z >= 0`` of any shape."""
        return (np.asarray(z, dtype=float),)

    @classmethod
    def log_partition(cls, natural):
        """``-log(-lambda) = -log(rate)``; autograd-differentiable, shape ``batch``."""
        return -anp.log(-natural[0])

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] = -rate < 0``; shape ``batch``."""
        return np.asarray(natural[0]) < 0.0

    @classmethod
    def is_valid_mean(cls, mean):
        """``mean[0] = 1 / rate > 0``; shape ``batch``."""
        return np.asarray(mean[0]) > 0.0

    @classmethod
    def in_support(cls, z):
        """``0 <= z < inf``, shape ``z.shape``."""
        z = np.asarray(z, dtype=float)
        return (z >= 0.0) & (z < np.inf)

    @classmethod
    def _sample(cls, natural, rng, n):
        scale = -1.0 / natural[0]
        return rng.exponential(scale, size=(n,) + np.shape(scale))

    @classmethod
    def _domain_description(cls):
        return "natural[0] = -rate must be < 0"

    @classmethod
    def _mean_domain_description(cls):
        return "mean[0] = E[z] = 1 / rate must be > 0"

    def _kl(self, other):
        """``m(r_p / r_q)`` (module docstring), the ratio's gap to 1 from the natural parameters."""
        mine, theirs = self._natural[0], other.natural[0]
        return log_gap(theirs / mine, (theirs - mine) / mine)

    @property
    def rate(self):
        """Rates ``r``, shape ``batch_shape``."""
        return -self._natural[0]

    @property
    def mean(self):
        """``E z = 1 / r``, shape ``batch_shape``."""
        return 1.0 / self.rate

    @property
    def var(self):
        """``Var z = 1 / r^2``, shape ``batch_shape``."""
        return 1.0 / self.rate ** 2
