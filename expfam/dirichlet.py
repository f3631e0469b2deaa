"""The Dirichlet family on the probability simplex.

With concentrations :math:`\\alpha_k > 0`, :math:`k = 1..K`, and
:math:`\\alpha_0 = \\sum_k \\alpha_k`, the density with respect to Lebesgue
measure on the first :math:`K - 1` coordinates is

.. math::

    q(z) = \\frac{\\Gamma(\\alpha_0)}{\\prod_k \\Gamma(\\alpha_k)} \\prod_k z_k^{\\alpha_k - 1}
         = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = \\log z, \\qquad \\lambda = \\alpha - 1,

    A(\\lambda) = \\sum_k \\log \\Gamma(\\alpha_k) - \\log \\Gamma(\\alpha_0),
    \\qquad \\mu_k = \\psi(\\alpha_k) - \\psi(\\alpha_0),

with :math:`h(z) = 1` and Fisher information
:math:`F = \\operatorname{diag}(\\psi'(\\alpha)) - \\psi'(\\alpha_0) \\mathbf{1}\\mathbf{1}^T`.
Both maps between :math:`\\lambda` and :math:`\\mu` go through
:mod:`expfam._special`: the forward one avoids the cancellation in
:math:`\\psi(\\alpha_k) - \\psi(\\alpha_0)` when :math:`\\alpha_k` dominates, the
inverse one is a vectorised Newton/Chebyshev solve.  Samples are drawn as
normalised Gamma variates, formed in log space so that tiny concentrations
do not give 0/0.
"""

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import gammaln
from scipy import special

from ._base import ExponentialFamily
from ._registry import register
from ._special import dirichlet_from_mean_log, dirichlet_mean_log
from ._validation import as_float, check_positive


@register
class Dirichlet(ExponentialFamily):
    """A batch of Dirichlet distributions over ``K`` categories.

    Parameters
    ----------
    concentration : array_like, shape ``batch + (K,)``
        Concentrations ``alpha > 0``, ``K >= 2``.

    Raises
    ------
    ValueError
        Naming ``concentration`` if it is not finite and positive or has
        fewer than two categories.

    Notes
    -----
    Natural parameters ``(concentration - 1,)`` of shape ``batch + (K,)``;
    samples have shape ``batch + (K,)`` and lie on the simplex.
    """

    name = "dirichlet"
    param_names = ("concentration - 1",)
    event_ndims = (1,)
    sample_ndim = 1

    def __init__(self, concentration):
        concentration = check_positive(concentration, "concentration")
        if concentration.ndim < 1 or concentration.shape[-1] < 2:
            raise ValueError(
                "concentration must have shape batch + (K,) with K >= 2; "
                f"got shape {concentration.shape}"
            )
        self._natural = Dirichlet.from_natural((concentration - 1.0,), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z,)`` for ``z`` of shape ``(..., K)`` on the simplex."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return (np.log(z),)

    @classmethod
    def log_base_measure(cls, z):
        """Zero (``h = 1``), shape ``z.shape[:-1]``."""
        return np.zeros(np.shape(z)[:-1])

    @classmethod
    def log_partition(cls, natural):
        """``sum_k log Gamma(alpha_k) - log Gamma(alpha_0)``; autograd-differentiable, shape ``batch``."""
        alpha = natural[0] + 1.0
        return anp.sum(gammaln(alpha), axis=-1) - gammaln(anp.sum(alpha, axis=-1))

    @classmethod
    def natural_to_mean(cls, natural):
        """``(psi(alpha) - psi(alpha_0),)``, shape ``batch + (K,)``."""
        return (dirichlet_mean_log(np.asarray(natural[0], dtype=float) + 1.0),)

    @classmethod
    def mean_to_natural(cls, mean):
        """``(alpha - 1,)`` from ``(E log z,)`` by the solve of :mod:`expfam._special`.

        Raises
        ------
        ValueError
            If ``mean[0]`` is not finite, has fewer than two categories, or
            ``sum_k exp(mean[0]_k) >= 1`` (no Dirichlet has these moments, by
            Jensen's inequality).
        """
        mean_log = as_float(mean[0], "mean[0] (E[log z])", ndim_min=1)
        if mean_log.shape[-1] < 2:
            raise ValueError(f"mean[0] for Dirichlet must have K >= 2 entries; got shape {mean_log.shape}")
        with np.errstate(over="ignore"):
            total = np.exp(mean_log).sum(axis=-1)
        if not np.all(total < 1.0):
            raise ValueError(
                "mean[0] for Dirichlet must satisfy sum(exp(mean[0])) < 1, i.e. E[log z_k] < log E[z_k]; "
                f"got sum(exp(mean[0])) = {np.max(total)!r} at its largest"
            )
        return (dirichlet_from_mean_log(mean_log) - 1.0,)

    @classmethod
    def fisher(cls, natural):
        """``diag(psi'(alpha)) - psi'(alpha_0)``, shape ``batch + (K, K)``."""
        alpha = np.asarray(natural[0], dtype=float) + 1.0
        trigamma = special.polygamma(1, alpha)
        total = special.polygamma(1, alpha.sum(axis=-1))
        return trigamma[..., :, None] * np.eye(alpha.shape[-1]) - total[..., None, None]

    @classmethod
    def is_valid_natural(cls, natural):
        """Every entry of ``natural[0]`` is > -1; shape ``batch``."""
        return np.all(np.asarray(natural[0]) > -1.0, axis=-1)

    @classmethod
    def _sample(cls, natural, rng, n):
        # Gamma(alpha) = Gamma(alpha + 1) * U^(1/alpha), taken in log space.
        alpha = natural[0] + 1.0
        size = (n,) + alpha.shape
        log_gamma = np.log(rng.gamma(alpha + 1.0, size=size)) + np.log1p(-rng.random(size)) / alpha
        log_gamma -= log_gamma.max(axis=-1, keepdims=True)
        weights = np.exp(log_gamma)
        return weights / weights.sum(axis=-1, keepdims=True)

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        if arrays[0].shape[-1] < 2:
            raise ValueError(
                f"{name}[0] ({cls.param_names[0]}) of Dirichlet must have K >= 2 entries; "
                f"got shape {arrays[0].shape}"
            )

    @classmethod
    def _domain_description(cls):
        return "natural[0] = concentration - 1 must be > -1 in every entry"

    # ------------------------------------------------------------------ readable properties
    @property
    def concentration(self):
        """Concentrations ``alpha``, shape ``batch_shape + (K,)``."""
        return self._natural[0] + 1.0

    @property
    def mean(self):
        """``E z = alpha / alpha_0``, shape ``batch_shape + (K,)``."""
        alpha = self.concentration
        return alpha / alpha.sum(axis=-1, keepdims=True)

    @property
    def var(self):
        """``Var z_k = alpha_k (alpha_0 - alpha_k) / (alpha_0^2 (alpha_0 + 1))``, shape ``batch_shape + (K,)``."""
        alpha = self.concentration
        total = alpha.sum(axis=-1, keepdims=True)
        return alpha * (total - alpha) / (total ** 2 * (total + 1.0))
