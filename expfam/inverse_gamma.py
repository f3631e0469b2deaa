"""The inverse Gamma family on :math:`z > 0`.

With shape :math:`a > 0` and scale :math:`b > 0` (``scipy.stats.invgamma(a, scale=b)``;
:math:`1 / z \\sim \\mathrm{Gamma}(a, \\text{rate } b)`),

.. math::

    q(z) = \\frac{b^a}{\\Gamma(a)} z^{-a - 1} e^{-b / z}
         = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (\\log z,\\; 1 / z), \\qquad \\lambda = (-(a + 1),\\; -b),

    A(\\lambda) = \\log \\Gamma(a) - a \\log b, \\qquad
    \\mu = (\\log b - \\psi(a),\\; a / b),

with :math:`h(z) = 1` and :math:`a = -\\lambda_1 - 1`.  ``natural_to_mean``,
``mean_to_natural`` and ``fisher`` are the derived maps of
:class:`~efvi.expfam.ExponentialFamily` (autograd of :math:`A`; Newton's method
from :math:`\\lambda = (-2, -1)`).  The mean parameters exist iff
:math:`\\mu_2 > 0` and :math:`\\log \\mu_2 + \\mu_1 > 0` (Jensen's inequality for
:math:`1/z`), which :meth:`InverseGamma.is_valid_mean` checks.

Small shapes.  The natural parameter :math:`-(a + 1)` holds :math:`a` to about
:math:`\\epsilon / a` relative, like the Gamma's :math:`a - 1`; a shape below
:math:`2^{-52} \\approx 2.2 \\times 10^{-16}` rounds to :math:`-(a + 1) = -1` and
is rejected by the constructor.

Entropy and KL.  The map :math:`z \\mapsto 1/z` takes this family onto
:math:`\\mathrm{Gamma}(a, b)`, so the KL divergence is the Gamma's
(:func:`efvi.expfam.gamma.kl_from_natural`, three non-negative terms without
cancellation), and the entropy is the Gamma's plus :math:`-2 E \\log(1/z)`:
:math:`H = E(a) - 2\\psi(a) + \\log b` with
:math:`E(a) = \\log\\Gamma(a) - (a - 1)\\psi(a) + a`
(:func:`~efvi.expfam._bregman.entropy_part`).  The generic Bregman routes
subtract numbers of size :math:`a \\log a` (the KL of two shape-1e6
distributions: 1e-9 absolute; the entropy at shape 1e9: 3e-6).
"""

import autograd.numpy as anp
import numpy as np
from scipy import special

from ._base import ExponentialFamily
from ._bregman import entropy_part
from ._differentiable import gammaln
from ._registry import register
from .checks import broadcast_pair, check_positive, violation
from .gamma import Gamma, kl_from_natural


@register
class InverseGamma(ExponentialFamily):
    """A batch of inverse Gamma distributions ``InverseGamma(shape, scale)`` (density
    ``b^a z^(-a-1) e^(-b / z) / Gamma(a)``).

    Parameters
    ----------
    shape : array_like, shape ``batch``
        Shapes ``a > 0``; at least ``2**-52`` (about 2.2e-16), the smallest shape
        the natural parameter ``-(a + 1)`` can hold.
    scale : array_like, shape ``batch``
        Scales ``b > 0`` (``scipy.stats.invgamma(a, scale=b)``); broadcasts with ``shape``.

    Raises
    ------
    ValueError
        Naming ``shape`` or ``scale`` if either is not finite and positive, the
        shape is below ``2**-52``, or they do not broadcast.

    Notes
    -----
    Natural parameters ``(-(shape + 1), -scale)``, both of shape ``batch``;
    samples have shape ``batch``.  See the module docstring for the maths.
    """

    name = "inverse_gamma"
    param_names = ("-(shape + 1)", "-scale")
    event_ndims = (0, 0)
    sample_ndim = 0

    def __init__(self, shape, scale):
        shape = check_positive(shape, "shape")
        natural_shape = -(shape + 1.0)
        collapsed = ~(natural_shape < -1.0)
        if np.any(collapsed):
            raise ValueError(
                f"shape must be at least {2.0 ** -52!r}, the smallest shape whose natural parameter "
                f"-(shape + 1) is < -1 in float64; got {violation(shape, collapsed)}"
            )
        scale = check_positive(scale, "scale")
        natural_shape, scale = broadcast_pair(natural_shape, scale, "shape", "scale")
        self._natural = InverseGamma.from_natural((natural_shape, -scale), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ the minimal contract
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z, 1 / z)`` for ``z > 0`` of any shape."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(z), 1.0 / z

    @classmethod
    def log_partition(cls, natural):
        """``log Gamma(a) - a log b``; autograd-differentiable, shape ``batch``."""
        shape = -natural[0] - 1.0
        return gammaln(shape) - shape * anp.log(-natural[1])

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] < -1`` and ``natural[1] < 0``, shape ``batch``."""
        return (np.asarray(natural[0]) < -1.0) & (np.asarray(natural[1]) < 0.0)

    @classmethod
    def is_valid_mean(cls, mean):
        """``mean[1] > 0`` and ``log(mean[1]) + mean[0] > 0``, shape ``batch``."""
        inverse = np.asarray(mean[1], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (inverse > 0.0) & (np.log(inverse) + np.asarray(mean[0]) > 0.0)

    @classmethod
    def in_support(cls, z):
        """``0 < z < inf``, the Gamma's support; shape ``z.shape``."""
        return Gamma.in_support(z)

    @classmethod
    def _sample(cls, natural, rng, n):
        shape = -natural[0] - 1.0
        with np.errstate(divide="ignore"):
            return -natural[1] / rng.gamma(shape, size=(n,) + np.shape(shape))

    @classmethod
    def _domain_description(cls):
        return "natural[0] = -(shape + 1) must be < -1 and natural[1] = -scale must be < 0"

    @classmethod
    def _mean_domain_description(cls):
        return ("mean[1] = E[1/z] must be > 0 and log(mean[1]) + mean[0] > 0, i.e. "
                "log E[1/z] > E[log(1/z)]")

    # ------------------------------------------------------------------ closed forms
    def entropy(self):
        """``E(a) - 2 psi(a) + log b`` (module docstring); shape ``batch_shape``."""
        return entropy_part(self.shape) - 2.0 * special.digamma(self.shape) + np.log(self.scale)

    def _kl(self, other):
        """The KL divergence of the Gamma distributions of ``1 / z`` (module docstring)."""
        return kl_from_natural(_gamma_natural(self._natural), _gamma_natural(other.natural))

    # ------------------------------------------------------------------ readable properties
    @property
    def shape(self):
        """Shapes ``a``, shape ``batch_shape``."""
        return -self._natural[0] - 1.0

    @property
    def scale(self):
        """Scales ``b``, shape ``batch_shape``."""
        return -self._natural[1]

    @property
    def mean(self):
        """``E z = b / (a - 1)`` for ``a > 1``, ``inf`` otherwise; shape ``batch_shape``."""
        shape = self.shape
        with np.errstate(divide="ignore"):
            return np.where(shape > 1.0, self.scale / (shape - 1.0), np.inf)

    @property
    def var(self):
        """``Var z = b^2 / ((a - 1)^2 (a - 2))`` for ``a > 2``, ``inf`` otherwise; shape ``batch_shape``."""
        shape = self.shape
        with np.errstate(divide="ignore"):
            return np.where(shape > 2.0, self.scale ** 2 / ((shape - 1.0) ** 2 * (shape - 2.0)), np.inf)


def _gamma_natural(natural):
    """The natural parameters ``(a - 1, -b)`` of ``Gamma(a, rate b)``, the law of ``1 / z``."""
    return -np.asarray(natural[0]) - 2.0, natural[1]
