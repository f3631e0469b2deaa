"""The Wishart distribution on positive-definite (precision) matrices.

For a :math:`D \\times D` positive-definite :math:`L` with degrees of freedom
:math:`\\nu > D - 1` and scale :math:`W`,

.. math::

    q(L) = \\exp\\big(\\langle \\lambda, \\phi(L) \\rangle - A(\\lambda)\\big), \\qquad
    \\phi(L) = (\\log|L|,\\; L), \\qquad
    \\lambda = \\big(\\tfrac{\\nu - D - 1}{2},\\; -\\tfrac12 W^{-1}\\big),

    A(\\lambda) = \\tfrac{\\nu}{2} \\log|W| + \\tfrac{\\nu D}{2} \\log 2 + \\log\\Gamma_D(\\tfrac{\\nu}{2}),
    \\qquad \\mu = \\big(\\psi_D(\\tfrac{\\nu}{2}) + D \\log 2 + \\log|W|,\\; \\nu W\\big),

with :math:`\\nu = 2\\lambda_1 + D + 1`, :math:`W^{-1} = -2\\,\\mathrm{sym}(\\lambda_2)`,
the multivariate gamma :math:`\\log\\Gamma_D(a) = \\tfrac{D(D-1)}{4}\\log\\pi +
\\sum_{i=0}^{D-1} \\log\\Gamma(a - i/2)` and :math:`\\psi_D(a) = \\sum_{i=0}^{D-1}
\\psi(a - i/2)`; the base measure is 1.  The Hessian of :math:`A` (the covariance of
the flattened statistics :math:`(\\log|L|, \\operatorname{vec} L)`) is

.. math::

    \\operatorname{Var}\\log|L| = \\sum_{i=0}^{D-1} \\psi'\\big(\\tfrac{\\nu - i}{2}\\big), \\qquad
    \\operatorname{Cov}(\\log|L|, L) = 2 W, \\qquad
    \\operatorname{Cov}(L_{ij}, L_{kl}) = \\nu (W_{ik} W_{jl} + W_{il} W_{jk}).

The inverse map has no closed form: with :math:`W = \\mu_2 / \\nu`, the degrees of
freedom solve the one-dimensional equation

.. math::

    g(\\nu) = \\psi_D(\\tfrac{\\nu}{2}) + D \\log 2 - D \\log \\nu = \\mu_1 - \\log|\\mu_2|,

whose left side increases from :math:`-\\infty` (at :math:`\\nu = D - 1`) to 0; the
right side is negative by Jensen's inequality.  :func:`df_from_logdet_gap` solves
it by a safeguarded, vectorised Newton iteration in :math:`\\log(\\nu - D + 1)`,
to about 1e-13 relative for :math:`\\nu \\le 10^3`.  For large :math:`\\nu` the
right side is about :math:`-D(D+1)/(2\\nu)`, a small difference of large
logarithms: float64 mean parameters then fix :math:`\\nu` only to about
:math:`2 u\\,\\kappa(W)\\,\\nu / (D + 1)` relative (``u`` the unit roundoff).
The element variances (``var``) are :math:`\\operatorname{Var} L_{ij} =
\\nu (W_{ij}^2 + W_{ii} W_{jj})`, the diagonal of the covariance above.  The
support is the symmetric positive-definite matrices: ``logpdf`` is ``-inf``
elsewhere.  The pure functions here are shared with the Normal-Wishart family.
"""

import functools

import autograd.numpy as anp
import numpy as np
from scipy.special import digamma, polygamma

from . import _linalg
from ._base import ExponentialFamily
from ._differentiable import gammaln
from ._registry import register
from .checks import check_pd, natural_from_shape, number

_LOG_2 = np.log(2.0)
_LOG_PI = np.log(np.pi)


@functools.cache
def _half_steps(dim):
    """``(0, 1/2, ..., (D - 1)/2)``, read-only: the arguments ``a - i/2`` of the multivariate gamma's factors."""
    steps = np.arange(dim) / 2.0
    steps.setflags(write=False)
    return steps


def multigammaln(a, dim):
    """``log Gamma_D(a)``, elementwise in ``a`` (autograd-differentiable)."""
    return 0.25 * dim * (dim - 1) * _LOG_PI + gammaln(a[..., None] - _half_steps(dim)).sum(axis=-1)


def multidigamma(a, dim):
    """``psi_D(a) = sum_i digamma(a - i/2)``, elementwise in ``a``."""
    return digamma(np.asarray(a)[..., None] - _half_steps(dim)).sum(axis=-1)


def multitrigamma(a, dim):
    """``sum_i trigamma(a - i/2)``, elementwise in ``a``."""
    return polygamma(1, np.asarray(a)[..., None] - _half_steps(dim)).sum(axis=-1)


def log_normaliser(df, scale_inv):
    """Wishart log normaliser from ``df`` (shape ``batch``) and ``W^-1`` (``batch + (D, D)``).

    ``-(df/2) log|W^-1| + (df D / 2) log 2 + log Gamma_D(df / 2)``; autograd-differentiable.
    """
    _, logdet = anp.linalg.slogdet(scale_inv)
    return log_normaliser_from_logdet(df, logdet, scale_inv.shape[-1])


def log_normaliser_from_logdet(df, logdet_scale_inv, dim):
    """:func:`log_normaliser` given ``log|W^-1|`` (e.g. from a Cholesky factor the caller holds)."""
    return -0.5 * df * logdet_scale_inv + 0.5 * df * dim * _LOG_2 + multigammaln(0.5 * df, dim)


def expected_logdet(df, logdet_scale, dim):
    """``E log|L| = psi_D(df / 2) + D log 2 + log|W|`` under ``Wishart(df, W)``."""
    return multidigamma(0.5 * df, dim) + dim * _LOG_2 + logdet_scale


def df_from_logdet_gap(gap, dim, name="mean"):
    """Solve ``psi_D(nu/2) + D log 2 - D log nu = gap`` for ``nu > D - 1``.

    Parameters
    ----------
    gap : array, shape ``batch``
        ``E log|L| - log|E L|``; must be < 0.
    dim : int
        Matrix dimension ``D``.
    name : str
        Argument named in the error for a non-negative gap.

    Returns
    -------
    array, shape ``batch``: degrees of freedom, to about 1e-13 relative.
    """
    gap = np.asarray(gap, dtype=float)
    if np.any(gap >= 0):
        raise ValueError(
            f"{name} is not the mean of a Wishart: E log|L| - log|E L| must be < 0 "
            f"(Jensen's inequality); got maximum {number(np.max(gap))}"
        )
    offset = dim - 1.0
    flat_gap = gap.ravel()
    t = np.log(np.maximum(0.5 * dim * (dim + 1) / -flat_gap - offset, 2.0 / -flat_gap))
    lo = np.full_like(t, -np.inf)
    hi = np.full_like(t, np.inf)
    active = np.arange(t.size)
    for _ in range(100):
        if active.size == 0:
            break
        t_a, gap_a = t[active], flat_gap[active]
        s = np.exp(t_a)
        nu = offset + s
        digammas = multidigamma(0.5 * nu, dim)
        f = digammas + dim * _LOG_2 - dim * np.log(nu) - gap_a
        slope = (0.5 * multitrigamma(0.5 * nu, dim) - dim / nu) * s
        lo_a = np.where(f < 0, t_a, lo[active])
        hi_a = np.where(f > 0, t_a, hi[active])
        proposal = t_a - np.clip(f / slope, -5.0, 5.0)
        outside = ((proposal < lo_a) | (proposal > hi_a)) & np.isfinite(lo_a) & np.isfinite(hi_a)
        proposal = np.where(outside, 0.5 * (lo_a + hi_a), proposal)
        # Converged when the step is negligible or f is at its rounding level.
        rounding = 8 * np.finfo(float).eps * (np.abs(digammas) + dim * np.abs(np.log(nu)) + np.abs(gap_a))
        done = (np.abs(proposal - t_a) <= 1e-15 * np.maximum(1.0, np.abs(t_a))) | (np.abs(f) <= rounding)
        t[active], lo[active], hi[active] = proposal, lo_a, hi_a
        active = active[~done]
    return (offset + np.exp(t)).reshape(gap.shape)


def element_variances(df, scale):
    """``Var L_ij = df (W_ij^2 + W_ii W_jj)`` under ``Wishart(df, W)``.

    Parameters
    ----------
    df : array, shape ``batch``
    scale : array, shape ``batch + (D, D)``

    Returns
    -------
    array, shape ``batch + (D, D)``
    """
    diagonal = np.diagonal(scale, axis1=-2, axis2=-1)
    return np.asarray(df)[..., None, None] * (scale * scale + diagonal[..., :, None] * diagonal[..., None, :])


def natural_df(df, dim, natural_name, shift):
    """Validated natural parameter ``(df - shift) / (shift - D + 1)`` of the degrees of freedom.

    ``df`` must exceed ``D - 1``; the Wishart holds ``(df - D - 1) / 2``
    (``shift = D + 1``), the Normal-Wishart ``df - D`` (``shift = D``).
    """
    return natural_from_shape(df, "df", natural_name, shift=shift, scale=1.0 / (shift - dim + 1.0),
                              bound_name=f"D - 1 = {dim - 1}")


def bartlett_factor(df, scale_chol, rng, n):
    """Lower-triangular ``F`` with ``F F^T ~ Wishart(df, W)``, by the Bartlett decomposition.

    ``F = chol(W) B`` with ``B`` lower triangular, ``B_ii^2 ~ chi^2(df - i)`` and
    standard normal entries below the diagonal; ``F`` is the Cholesky factor of
    the draw, which the Normal-Wishart sampler reuses.

    Parameters
    ----------
    df : array, shape ``batch``
    scale_chol : array, shape ``batch + (D, D)``
        Cholesky factor of the scale ``W``.
    rng : numpy.random.Generator
    n : int

    Returns
    -------
    array, shape ``(n,) + batch + (D, D)``
    """
    dim = scale_chol.shape[-1]
    batch = np.shape(df)
    chi2 = rng.chisquare(np.asarray(df)[..., None] - np.arange(dim), size=(n,) + batch + (dim,))
    lower = np.tril(rng.standard_normal((n,) + batch + (dim, dim)), k=-1)
    return scale_chol @ (lower + np.sqrt(chi2)[..., None] * np.eye(dim))


@register
class Wishart(ExponentialFamily):
    """A batch of Wishart distributions ``Wishart(df, scale)`` over ``D x D`` precision matrices.

    Parameters
    ----------
    df : array_like, shape ``batch``
        Degrees of freedom, each > D - 1.
    scale : array_like, shape ``batch + (D, D)``
        Symmetric positive-definite scale ``W``; batch broadcasts with ``df``.

    Notes
    -----
    Natural parameters are ``((df - D - 1)/2, -W^-1 / 2)``; samples have shape
    ``batch + (D, D)``; ``mean = df * W`` and ``var`` (element variances) have
    that shape too.
    """

    name = "wishart"
    param_names = ("(df - D - 1) / 2", "-inv(scale) / 2")
    event_ndims = (0, 2)
    sample_ndim = 2

    def __new__(cls, df, scale):
        scale = check_pd(scale, "scale")
        dim = scale.shape[-1]
        eta1 = natural_df(df, dim, "(df - D - 1) / 2", dim + 1.0)
        try:
            batch = np.broadcast_shapes(eta1.shape, scale.shape[:-2])
        except ValueError:
            raise ValueError(f"batch shapes of df {eta1.shape} and scale {scale.shape[:-2]} do not broadcast") from None
        scale_inv = _linalg.pd_inverse(_linalg.symmetrise(np.broadcast_to(scale, batch + (dim, dim))), "scale")
        eta1 = np.broadcast_to(eta1, batch).copy()
        return cls.from_natural((eta1, -0.5 * scale_inv), validate=False)

    def __init__(self, df, scale):
        """Construction happens in ``__new__``, which validates ``df`` and ``scale``."""

    # ------------------------------------------------------------------ pure maths
    @staticmethod
    def _df_and_scale_inv(natural):
        eta1, eta2 = natural
        dim = np.shape(eta2)[-1]
        return 2.0 * eta1 + dim + 1.0, -2.0 * _linalg.symmetrise(eta2)

    @classmethod
    def sufficient_stats(cls, z):
        """``(log|L|, L)`` for ``L`` of shape ``(..., D, D)``, positive definite."""
        z = np.asarray(z, dtype=float)
        chol = _linalg.cholesky(_linalg.symmetrise(z), "z (a Wishart sample)")
        return _linalg.logdet_from_cholesky(chol), z

    @classmethod
    def log_partition(cls, natural):
        """``A(lambda)``; autograd-differentiable."""
        df, scale_inv = cls._df_and_scale_inv(natural)
        return log_normaliser(df, scale_inv)

    @classmethod
    def natural_to_mean(cls, natural):
        """``(E log|L|, df * W)``."""
        df, scale_inv = cls._df_and_scale_inv(natural)
        chol = _linalg.cholesky(scale_inv, "-2 * natural[1] (the inverse scale)")
        dim = scale_inv.shape[-1]
        logdet_scale = -_linalg.logdet_from_cholesky(chol)
        return expected_logdet(df, logdet_scale, dim), df[..., None, None] * _linalg.pd_inverse_from_cholesky(scale_inv, chol)

    @classmethod
    def mean_to_natural(cls, mean):
        """Natural parameters from ``(E log|L|, E L)`` by a Newton solve for ``df``."""
        expected_log, expected = mean
        expected = _linalg.symmetrise(expected)
        chol = _linalg.cholesky(expected, "mean[1] (E[L])")
        dim = expected.shape[-1]
        df = df_from_logdet_gap(expected_log - _linalg.logdet_from_cholesky(chol), dim, "mean[0] (E log|L|)")
        return 0.5 * (df - dim - 1.0), -0.5 * df[..., None, None] * _linalg.pd_inverse_from_cholesky(expected, chol)

    @classmethod
    def fisher(cls, natural):
        """Covariance of ``(log|L|, vec L)``, shape ``batch + (1 + D*D, 1 + D*D)``."""
        df, scale_inv = cls._df_and_scale_inv(natural)
        dim = scale_inv.shape[-1]
        scale = _linalg.pd_inverse(scale_inv, "-2 * natural[1] (the inverse scale)")
        batch = df.shape
        var_logdet = multitrigamma(0.5 * df, dim)[..., None, None]
        cross = 2.0 * scale.reshape(batch + (1, dim * dim))
        ww = np.einsum("...ik,...jl->...ijkl", scale, scale)
        cov_l = df[..., None, None] * (ww + np.swapaxes(ww, -1, -2)).reshape(batch + (dim * dim, dim * dim))
        top = np.concatenate([var_logdet, cross], axis=-1)
        bottom = np.concatenate([np.swapaxes(cross, -1, -2), cov_l], axis=-1)
        return np.concatenate([top, bottom], axis=-2)

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] > -1`` (df > D - 1) and ``natural[1]`` symmetric negative definite."""
        eta1, eta2 = (np.asarray(p, dtype=float) for p in natural)
        symmetric = _linalg.is_symmetric(eta2)
        return (eta1 > -1.0) & symmetric & _linalg.is_pd(-eta2)

    @classmethod
    def in_support(cls, z):
        """Whether each matrix is symmetric positive definite; shape ``z.shape[:-2]``."""
        return _linalg.is_spd(z)

    @classmethod
    def _sample(cls, natural, rng, n):
        df, scale_inv = cls._df_and_scale_inv(natural)
        scale = _linalg.pd_inverse(scale_inv, "-2 * natural[1] (the inverse scale)")
        factor = bartlett_factor(df, np.linalg.cholesky(scale), rng, n)
        return factor @ np.swapaxes(factor, -1, -2)

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        shape = arrays[1].shape
        if shape[-1] != shape[-2]:
            raise ValueError(f"{name}[1] ({cls.param_names[1]}) of {cls.__name__} must be square; got shape {shape}")

    @classmethod
    def _domain_description(cls):
        return "natural[0] = (df - D - 1)/2 must be > -1 and natural[1] = -inv(scale)/2 symmetric negative definite"

    # ------------------------------------------------------------------ readable properties
    @property
    def dim(self):
        """Matrix dimension ``D``."""
        return self._natural[1].shape[-1]

    @property
    def df(self):
        """Degrees of freedom, shape ``batch``."""
        return 2.0 * self._natural[0] + self.dim + 1.0

    @property
    def scale(self):
        """Scale matrix ``W``, shape ``batch + (D, D)``."""
        return _linalg.pd_inverse(-2.0 * self._natural[1], "-2 * natural[1] (the inverse scale)")

    @property
    def mean(self):
        """``E[L] = df * W``, shape ``batch + (D, D)``."""
        return self.mean_params[1]

    @property
    def var(self):
        """Element variances ``Var L_ij = df (W_ij^2 + W_ii W_jj)``, shape ``batch + (D, D)``."""
        return element_variances(self.df, self.scale)

    @property
    def expected_logdet(self):
        """``E log|L|``, shape ``batch``."""
        return self.mean_params[0]
