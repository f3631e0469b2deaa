"""The normal with diagonal covariance: independent univariate normals.

For :math:`z \\in \\mathbb{R}^D` with means :math:`m_i` and variances :math:`v_i`,

.. math::

    q(z) = (2\\pi)^{-D/2} \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (z,\\; z^2), \\qquad
    \\lambda = (m / v,\\; -1 / (2 v)),

    A(\\lambda) = \\sum_i \\Big( -\\frac{\\lambda_{1i}^2}{4 \\lambda_{2i}}
                  - \\tfrac12 \\log(-2 \\lambda_{2i}) \\Big), \\qquad
    \\mu = (m,\\; v + m^2),

elementwise (squares and ratios entry by entry).  The Fisher information is
block diagonal across dimensions; per dimension, with :math:`z \\sim N(m, v)`,

.. math::

    \\operatorname{Var} z = v, \\qquad \\operatorname{Cov}(z, z^2) = 2 m v, \\qquad
    \\operatorname{Var} z^2 = 2 v^2 + 4 m^2 v,

laid out in flattened coordinates ``(z_1..z_D, z_1^2..z_D^2)``.  The round trip
loses about :math:`\\epsilon\\, m^2 / v` relative accuracy in the subtraction
:math:`v = \\mu_2 - \\mu_1^2`.
"""

import autograd.numpy as anp
import numpy as np

from ._base import ExponentialFamily
from ._gaussian_measure import GaussianBaseMeasure
from ._registry import register
from .checks import as_float, broadcast_pair, check_positive, number


@register
class DiagonalGaussian(GaussianBaseMeasure, ExponentialFamily):
    """A batch of normals with diagonal covariance ``N(mean, diag(var))``.

    Build one with :meth:`from_mean_var`, :meth:`from_natural` or
    :meth:`from_mean_params`.  Both natural-parameter parts and samples have
    shape ``batch + (D,)``.
    """

    name = "diagonal_gaussian"
    readable_params = ("mean", "var")
    param_names = ("mean / var", "-1 / (2 var)")
    event_ndims = (1, 1)
    sample_ndim = 1

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(z, z^2)`` for ``z`` of shape ``(..., D)``."""
        z = np.asarray(z, dtype=float)
        return z, z * z

    @classmethod
    def log_partition(cls, natural):
        """``sum_i (-eta1^2 / (4 eta2) - log(-2 eta2) / 2)``; autograd-differentiable."""
        eta1, eta2 = natural
        return anp.sum(-0.25 * eta1 * eta1 / eta2 - 0.5 * anp.log(-2.0 * eta2), axis=-1)

    @classmethod
    def natural_to_mean(cls, natural):
        """``(m, v + m^2)`` from ``(m / v, -1 / (2 v))``."""
        eta1, eta2 = natural
        var = -0.5 / eta2
        mean = eta1 * var
        return mean, var + mean * mean

    @classmethod
    def mean_to_natural(cls, mean):
        """``(m / v, -1 / (2 v))`` from ``(m, E[z^2])``; ``v = E[z^2] - m^2`` must be > 0."""
        m, second = mean
        var = second - m * m
        if np.any(var <= 0):
            raise ValueError(
                "mean[1] - mean[0]**2 (the variance) must be > 0 for DiagonalGaussian; "
                f"got minimum {number(np.min(var))}"
            )
        return m / var, -0.5 / var

    @classmethod
    def fisher(cls, natural):
        """Covariance of ``(z, z^2)``, block diagonal, shape ``batch + (2D, 2D)``."""
        var = -0.5 / natural[1]
        m = natural[0] * var
        blocks = (var, 2.0 * m * var, 2.0 * m * var, 2.0 * var * var + 4.0 * m * m * var)
        eye = np.eye(m.shape[-1])
        rows = [
            np.concatenate([blocks[0][..., None] * eye, blocks[1][..., None] * eye], axis=-1),
            np.concatenate([blocks[2][..., None] * eye, blocks[3][..., None] * eye], axis=-1),
        ]
        return np.concatenate(rows, axis=-2)

    @classmethod
    def is_valid_natural(cls, natural):
        """Every entry of ``natural[1]`` is < 0; shape ``batch``."""
        return np.all(np.asarray(natural[1]) < 0, axis=-1)

    @classmethod
    def _sample(cls, natural, rng, n):
        var = -0.5 / natural[1]
        return natural[0] * var + np.sqrt(var) * rng.standard_normal((n,) + var.shape)

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        if arrays[1].shape[-1] != arrays[0].shape[-1]:
            raise ValueError(
                f"{name}[1] ({cls.param_names[1]}) of {cls.__name__} must have the event shape "
                f"of {name}[0], {arrays[0].shape[-1:]}; got {arrays[1].shape[-1:]}"
            )

    @classmethod
    def _domain_description(cls):
        return "natural[1] = -1 / (2 var) must be < 0 in every entry"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_mean_var(cls, mean, var):
        """Build ``N(mean, diag(var))``.

        Parameters
        ----------
        mean : array_like, shape ``batch + (D,)``
        var : array_like, shape ``batch + (D,)``
            Variances, all > 0; broadcasts with ``mean``.

        Raises
        ------
        ValueError
            Naming ``mean`` or ``var`` if they are not finite, ``var`` is not
            positive, or their shapes do not broadcast.
        """
        mean = as_float(mean, "mean", ndim_min=1)
        if mean.shape[-1] < 1:
            raise ValueError(f"mean must have shape (..., D) with dimension D >= 1; got shape {mean.shape}")
        var = check_positive(var, "var")
        mean, var = broadcast_pair(mean, var, "mean", "var")
        return cls.from_natural((mean / var, -0.5 / var), validate=False)

    # ------------------------------------------------------------------ readable properties
    def _kl(self, other):
        """``KL(self || other)`` in closed form (elementwise Gaussians summed over D), shape ``batch``."""
        ratio = self.var / other.var
        diff = self.mean - other.mean
        return 0.5 * np.sum(ratio + diff * diff / other.var - 1.0 - np.log(ratio), axis=-1)

    def entropy(self):
        """Differential entropy ``sum_d (1 + log(2 pi v_d)) / 2``, shape ``batch``."""
        return 0.5 * np.sum(1.0 + np.log(2.0 * np.pi * self.var), axis=-1)

    @property
    def mean(self):
        """Means ``m``, shape ``batch + (D,)``."""
        return self._natural[0] * self.var

    @property
    def var(self):
        """Variances ``v``, shape ``batch + (D,)``."""
        return -0.5 / self._natural[1]

    @property
    def std(self):
        """Standard deviations ``sqrt(v)``, shape ``batch + (D,)``."""
        return np.sqrt(self.var)
