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
:mod:`efvi.expfam._special`: the forward one avoids the cancellation in
:math:`\\psi(\\alpha_k) - \\psi(\\alpha_0)` when :math:`\\alpha_k` dominates, the
inverse one is a vectorised Newton/Chebyshev solve.  Samples are drawn as
normalised Gamma variates, formed in log space so that tiny concentrations
do not give 0/0.  The support is the open simplex: ``logpdf`` is ``-inf`` at
points with an entry <= 0 or whose entries do not sum to 1 within ``1e-10 K``.
Concentrations far below 1 are held to about :math:`\\epsilon / \\alpha_k`
relative, like the Gamma shape (:mod:`efvi.expfam.gamma`).

Entropy and KL are closed forms without the cancellation of the generic
Bregman route, which for :math:`\\alpha_0 = 10^8` loses 7 digits of a KL and can
return a negative one.  With :math:`E` and the divergence pieces of
:mod:`efvi.expfam._bregman`,
:math:`H = \\sum_k E(\\alpha_k) - E(\\alpha_0) - (K - 1)\\psi(\\alpha_0)` (the
:math:`\\alpha` terms of :math:`E` cancel exactly), and the KL, which is
:math:`\\sum_k D(\\beta_k, \\alpha_k) - D(\\beta_0, \\alpha_0)` with :math:`D` the Bregman
divergence of :math:`\\log\\Gamma`, is evaluated as

.. math::

    KL(\\alpha \\| \\beta) = \\beta_0 \\sum_k p_k f\\big(\\tfrac{r_k}{p_k}\\big)
        + \\tfrac12 \\Big(\\sum_k m(t_k) - m(t_0)\\Big)
        + \\sum_k D_R(\\beta_k, \\alpha_k) - D_R(\\beta_0, \\alpha_0),

with :math:`t_k = \\beta_k / \\alpha_k`, :math:`p = \\alpha / \\alpha_0`,
:math:`r = \\beta / \\beta_0`: the large :math:`\\alpha f` parts of the :math:`D`
terms combine exactly into the first sum, whose terms are all non-negative,
and the rest, the excesses :math:`\\tfrac12 m + D_R` of the :math:`K` entries and
of the totals, is of order one (:func:`~efvi.expfam._bregman.gammaln_bregman_excess`
of all :math:`K + 1`).  The whole KL is evaluated row by row in one compiled
call (:func:`~efvi.expfam._bregman_kernels.dirichlet_kl_kernel`, tested against
these numpy pieces; its sums are compensated).
The first sum's :math:`r_k / p_k - 1 = t_k / t_0 - 1` is formed by
:func:`~efvi.expfam._bregman.ratio_gap`, from the exact differences
:math:`t_k - 1` where the ratios are near 1 and from :math:`t_k - t_0` where
they are small (a posterior against a vague prior, where the differences to 1
would leave 2e-10 relative error at :math:`\\alpha_0 = 10^8`).  Measured against mpmath:
relative error below 1e-12 for :math:`\\alpha_0` up to 1e10 (below 3e-14 for
posteriors :math:`\\beta + n` with counts :math:`n` up to 1e9 against priors
:math:`\\beta` from 1e-6 to 10), up to about :math:`\\epsilon\\sqrt{\\alpha_0}` when the
two differ only by a common relative change near the rounding of the
parameters.
"""

import autograd.numpy as anp
import numpy as np
from scipy import special

from ._base import ExponentialFamily
from ._differentiable import gammaln
from ._bregman import entropy_part
from ._bregman_kernels import dirichlet_kl_kernel
from ._registry import register
from ._special import dirichlet_from_mean_log, dirichlet_mean_log
from .checks import as_float, natural_from_shape, number


@register
class Dirichlet(ExponentialFamily):
    """A batch of Dirichlet distributions over ``K`` categories.

    Parameters
    ----------
    concentration : array_like, shape ``batch + (K,)``
        Concentrations ``alpha > 0``, ``K >= 2``; each at least ``2**-53``
        (about 1.1e-16), the smallest the natural parameter ``alpha - 1`` can hold.

    Raises
    ------
    ValueError
        Naming ``concentration`` if it is not finite and positive, has an
        entry below ``2**-53``, or has fewer than two categories.

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
        natural = natural_from_shape(concentration, "concentration", "concentration - 1")
        if natural.ndim < 1 or natural.shape[-1] < 2:
            raise ValueError(
                "concentration must have shape batch + (K,) with K >= 2; "
                f"got shape {natural.shape}"
            )
        self._natural = Dirichlet.from_natural((natural,), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z,)`` for ``z`` of shape ``(..., K)`` on the simplex."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return (np.log(z),)

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
        """``(alpha - 1,)`` from ``(E log z,)`` by the solve of :mod:`efvi.expfam._special`.

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
                f"got sum(exp(mean[0])) = {number(np.max(total))} at its largest"
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
    def in_support(cls, z):
        """Every ``z_k > 0`` and ``|sum_k z_k - 1| <= 1e-10 K``; shape ``z.shape[:-1]``."""
        z = np.asarray(z, dtype=float)
        return np.all(z > 0.0, axis=-1) & (np.abs(z.sum(axis=-1) - 1.0) <= 1e-10 * z.shape[-1])

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

    # ------------------------------------------------------------------ closed forms
    def entropy(self):
        """``sum_k E(alpha_k) - E(alpha_0) - (K - 1) psi(alpha_0)`` (module docstring); shape ``batch_shape``."""
        return entropy_from_concentration(self.concentration)

    def _kl(self, other):
        """``KL(self || other)`` without the cancellation of the generic route (module docstring)."""
        return kl_from_natural(self._natural[0], other.natural[0])

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


def entropy_from_concentration(alpha):
    """Dirichlet entropy for concentrations ``alpha`` of shape ``batch + (K,)``; shape ``batch``."""
    total = alpha.sum(axis=-1, keepdims=True)
    parts = entropy_part(np.concatenate([alpha, total], axis=-1))   # one call for the K entries and the total
    return parts[..., :-1].sum(axis=-1) - parts[..., -1] - (alpha.shape[-1] - 1) * special.digamma(total[..., 0])


def kl_from_natural(shifted_q, shifted_p):
    """``KL(Dir(alpha) || Dir(beta))`` from ``alpha - 1`` and ``beta - 1`` (shapes ``batch + (K,)``, broadcasting).

    The differences ``beta_k - alpha_k`` are taken between the natural
    parameters, where they are exact for nearby distributions.  One compiled
    call (:mod:`efvi.expfam._bregman_kernels`) for the whole batch.
    """
    shifted_q, shifted_p = np.asarray(shifted_q, dtype=float), np.asarray(shifted_p, dtype=float)
    if shifted_q.shape != shifted_p.shape:
        shifted_q, shifted_p = np.broadcast_arrays(shifted_q, shifted_p)
    shape = shifted_q.shape
    out = np.empty(shape[:-1])
    dirichlet_kl_kernel(np.ascontiguousarray(shifted_q).reshape(-1, shape[-1]),
                        np.ascontiguousarray(shifted_p).reshape(-1, shape[-1]), out.reshape(-1))
    return out
