"""The Gamma family on :math:`z > 0`.

With shape :math:`a > 0` and rate :math:`b > 0`,

.. math::

    q(z) = \\frac{b^a}{\\Gamma(a)} z^{a - 1} e^{-b z}
         = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (\\log z,\\; z), \\qquad \\lambda = (a - 1,\\; -b),

    A(\\lambda) = \\log \\Gamma(\\lambda_1 + 1) - (\\lambda_1 + 1) \\log(-\\lambda_2),
    \\qquad \\mu = (\\psi(a) - \\log b,\\; a / b),

with base measure :math:`h(z) = 1` and Fisher information

.. math::

    F = \\begin{pmatrix} \\psi'(a) & 1/b \\\\ 1/b & a / b^2 \\end{pmatrix}.

The inverse map has no closed form: :math:`a` solves
:math:`\\log a - \\psi(a) = \\log \\mu_2 - \\mu_1` (:mod:`expfam._special`), then
:math:`b = a / \\mu_2`.  The right-hand side is about :math:`1/(2a)`, so for
large shapes the mean parameters themselves carry only about
:math:`2 a \\epsilon |\\mu_1|` relative information about :math:`a`.
"""

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import gammaln
from scipy import special

from ._base import ExponentialFamily
from ._registry import register
from ._special import gamma_shape_from_log_gap
from ._validation import check_positive


@register
class Gamma(ExponentialFamily):
    """A batch of Gamma distributions ``Gamma(shape, rate)`` (density ``b^a z^(a-1) e^(-b z) / Gamma(a)``).

    Parameters
    ----------
    shape : array_like, shape ``batch``
        Shapes ``a > 0``.
    rate : array_like, shape ``batch``
        Rates ``b > 0`` (scale ``1 / b``); broadcasts with ``shape``.

    Raises
    ------
    ValueError
        Naming ``shape`` or ``rate`` if either is not finite and positive, or
        if they do not broadcast.

    Notes
    -----
    Natural parameters ``(shape - 1, -rate)``, both of shape ``batch``;
    samples have shape ``batch``.  See the module docstring for the maths.
    """

    name = "gamma"
    param_names = ("shape - 1", "-rate")
    event_ndims = (0, 0)
    sample_ndim = 0

    def __init__(self, shape, rate):
        shape = check_positive(shape, "shape")
        rate = check_positive(rate, "rate")
        try:
            shape, rate = np.broadcast_arrays(shape, rate)
        except ValueError:
            raise ValueError(
                f"shape of shape {shape.shape} and rate of shape {rate.shape} do not broadcast"
            ) from None
        self._natural = Gamma.from_natural((shape - 1.0, -rate), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z, z)`` for ``z > 0`` of any shape."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(z), z

    @classmethod
    def log_base_measure(cls, z):
        """Zero (``h = 1``), shape ``z.shape``."""
        return np.zeros(np.shape(z))

    @classmethod
    def log_partition(cls, natural):
        """``log Gamma(a) - a log b``; autograd-differentiable, shape ``batch``."""
        shape = natural[0] + 1.0
        return gammaln(shape) - shape * anp.log(-natural[1])

    @classmethod
    def natural_to_mean(cls, natural):
        """``(psi(a) - log b, a / b)``, each of shape ``batch``."""
        shape = np.asarray(natural[0], dtype=float) + 1.0
        rate = -np.asarray(natural[1], dtype=float)
        return special.digamma(shape) - np.log(rate), shape / rate

    @classmethod
    def mean_to_natural(cls, mean):
        """``(a - 1, -b)`` from ``(E log z, E z)`` by the shape solve of :mod:`expfam._special`.

        Raises
        ------
        ValueError
            If ``mean[1] <= 0`` or ``log(mean[1]) <= mean[0]`` (no Gamma has
            these moments, by Jensen's inequality).
        """
        mean_log = np.asarray(mean[0], dtype=float)
        mean_z = np.asarray(mean[1], dtype=float)
        if not np.all(mean_z > 0):
            raise ValueError(f"mean[1] (E[z]) for Gamma must be > 0; got minimum {np.min(mean_z)!r}")
        log_gap = np.log(mean_z) - mean_log
        if not np.all(log_gap > 0):
            raise ValueError(
                "mean for Gamma must satisfy log(mean[1]) > mean[0], i.e. log E[z] > E[log z]; "
                f"got log(mean[1]) - mean[0] = {np.min(log_gap)!r} at its smallest"
            )
        shape = gamma_shape_from_log_gap(log_gap)
        return shape - 1.0, -shape / mean_z

    @classmethod
    def fisher(cls, natural):
        """``[[psi'(a), 1/b], [1/b, a/b^2]]``, shape ``batch + (2, 2)``."""
        shape = np.asarray(natural[0], dtype=float) + 1.0
        rate = -np.asarray(natural[1], dtype=float)
        cross = 1.0 / rate
        return np.stack([
            np.stack([special.polygamma(1, shape), cross], axis=-1),
            np.stack([cross, shape * cross * cross], axis=-1),
        ], axis=-2)

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] > -1`` and ``natural[1] < 0``, shape ``batch``."""
        return (np.asarray(natural[0]) > -1.0) & (np.asarray(natural[1]) < 0.0)

    @classmethod
    def _sample(cls, natural, rng, n):
        shape = natural[0] + 1.0
        return rng.gamma(shape, -1.0 / natural[1], size=(n,) + np.shape(shape))

    @classmethod
    def _domain_description(cls):
        return "natural[0] = shape - 1 must be > -1 and natural[1] = -rate must be < 0"

    # ------------------------------------------------------------------ readable properties
    @property
    def shape(self):
        """Shapes ``a``, shape ``batch_shape``."""
        return self._natural[0] + 1.0

    @property
    def rate(self):
        """Rates ``b``, shape ``batch_shape``."""
        return -self._natural[1]

    @property
    def mean(self):
        """``E z = a / b``, shape ``batch_shape``."""
        return self.shape / self.rate

    @property
    def var(self):
        """``Var z = a / b^2``, shape ``batch_shape``."""
        return self.shape / self.rate ** 2
