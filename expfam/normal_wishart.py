"""The Normal-Wishart distribution: a joint prior on a mean and a precision matrix.

A draw is a pair :math:`(\\mu, \\Lambda)` with :math:`\\mu \\in \\mathbb{R}^D` and
:math:`\\Lambda` a :math:`D \\times D` positive-definite matrix:

.. math::

    \\Lambda \\sim \\mathrm{Wishart}(\\nu, W), \\qquad
    \\mu \\mid \\Lambda \\sim N\\big(m, (\\beta \\Lambda)^{-1}\\big).

Expanding the log density,
:math:`\\log p = \\tfrac{\\nu - D}{2}\\log|\\Lambda| - \\tfrac{\\beta}{2}(\\mu - m)^T \\Lambda (\\mu - m)
- \\tfrac12 \\operatorname{tr}(W^{-1} \\Lambda) + \\dots`, gives the minimal form

.. math::

    p(\\mu, \\Lambda) = (2\\pi)^{-D/2} \\exp\\big(\\langle \\lambda, \\phi \\rangle - A(\\lambda)\\big),
    \\qquad
    \\phi = \\big(\\Lambda \\mu,\\; -\\tfrac12 \\mu^T \\Lambda \\mu,\\; -\\tfrac12 \\Lambda,\\;
                 \\tfrac12 \\log|\\Lambda|\\big),

    \\lambda = \\big(\\beta m,\\; \\beta,\\; W^{-1} + \\beta m m^T,\\; \\nu - D\\big),
    \\qquad
    A(\\lambda) = -\\tfrac{D}{2}\\log\\beta + \\tfrac{\\nu}{2}\\log|W| + \\tfrac{\\nu D}{2}\\log 2
                  + \\log\\Gamma_D(\\tfrac{\\nu}{2}),

where :math:`\\beta = \\lambda_2`, :math:`m = \\lambda_1 / \\lambda_2`,
:math:`W^{-1} = \\mathrm{sym}(\\lambda_3) - \\lambda_1 \\lambda_1^T / \\lambda_2` and
:math:`\\nu = \\lambda_4 + D`; the last three terms of :math:`A` are the Wishart
log normaliser.  The mean parameters are

.. math::

    \\mu = \\Big(\\nu W m,\\; -\\tfrac12\\big(\\tfrac{D}{\\beta} + \\nu\\, m^T W m\\big),\\;
               -\\tfrac{\\nu}{2} W,\\;
               \\tfrac12\\big(\\psi_D(\\tfrac{\\nu}{2}) + D\\log 2 + \\log|W|\\big)\\Big),

i.e. :math:`E[\\Lambda\\mu] = \\nu W m`, :math:`E[\\mu^T\\Lambda\\mu] = D/\\beta + \\nu m^T W m`,
:math:`E[\\Lambda] = \\nu W` and the Wishart :math:`E\\log|\\Lambda|`.  Inverting: with
:math:`E[\\Lambda] = -2\\mu_3`, :math:`m = E[\\Lambda]^{-1}\\mu_1`,
:math:`D/\\beta = -2\\mu_2 - m^T \\mu_1`, and :math:`\\nu` from the Wishart equation for
:math:`2\\mu_4 - \\log|E\\Lambda|`.  A Gaussian observation :math:`x` with precision
:math:`\\Lambda` and mean :math:`\\mu` contributes :math:`(x, 1, x x^T, 1)` to
:math:`\\lambda`, which is why this statistic suits conjugate mixture models.
The Fisher information is the autograd Hessian of :math:`A`
(:mod:`efvi.expfam._autodiff`).  A distribution factors :math:`W^{-1}` once, in
one compiled pass with its validity test (``from_valid_natural``, the engine's
test of every proposal), and keeps the factor and :math:`\\log|W^{-1}|` for its
mean parameters, log-partition and ``expected_mahalanobis``.

Samples are pairs ``(mu, precision)`` of arrays with shapes
``(n,) + batch + (D,)`` and ``(n,) + batch + (D, D)``; ``logpdf`` and
``sufficient_stats`` take the same pairs, and ``logpdf`` is ``-inf`` where the
precision is not symmetric positive definite.

Moments.  ``mean`` and ``var`` describe :math:`\\mu`, whose marginal is a
multivariate Student-t with :math:`\\nu - D + 1` degrees of freedom: by the law
of total covariance and the inverse-Wishart mean
:math:`E[\\Lambda^{-1}] = W^{-1} / (\\nu - D - 1)`,

.. math::

    E[\\mu] = m, \\qquad
    \\operatorname{Cov}(\\mu) = E[(\\beta\\Lambda)^{-1}] = \\frac{W^{-1}}{\\beta(\\nu - D - 1)}
    \\quad (\\nu > D + 1;\\ \\text{infinite otherwise}).

``expected_precision`` and ``precision_var`` describe :math:`\\Lambda`, a
Wishart: :math:`E\\Lambda = \\nu W`, :math:`\\operatorname{Var}\\Lambda_{ij} = \\nu(W_{ij}^2 + W_{ii}W_{jj})`.
"""

from math import log

import autograd.numpy as anp
import numba
import numpy as np

from . import _linalg
from ._autodiff import hessian_of_log_partition
from ._base import ExponentialFamily
from ._kernels import _NUMBA_OPTIONS, compensated_add
from ._linalg_kernels import SYMMETRY_RTOL, cholesky, is_symmetric
from ._registry import register
from .checks import as_float, check_pd, check_positive, number
from .wishart import (bartlett_factor, df_from_logdet_gap, element_variances, expected_logdet, log_normaliser,
                      log_normaliser_from_logdet, natural_df)

_LOG_2PI = np.log(2.0 * np.pi)
_SCALE_INV = "natural[2] - outer(natural[0], natural[0]) / natural[1] (the inverse scale)"


def _unpack(natural):
    """``(beta, m, df, W^-1)`` from natural parameters; works on autograd boxes."""
    eta1, beta, eta3, eta4 = natural
    dim = np.shape(eta1)[-1]
    outer = eta1[..., :, None] * eta1[..., None, :] / beta[..., None, None]
    return beta, eta1 / beta[..., None], eta4 + dim, _linalg.symmetrise(eta3) - outer


@numba.jit(**_NUMBA_OPTIONS)
def _factor_kernel(eta1, beta, eta3, eta4, m, scale_inv, chol, logdet, valid):
    """Per batch element (``eta1`` ``(n, D)``, ``eta3`` ``(n, D, D)``): the validity of
    :meth:`NormalWishart.is_valid_natural`, and where valid ``m``, ``W^-1`` (as :func:`_unpack` forms them),
    its Cholesky factor and ``log|W^-1|``."""
    n, dim = eta1.shape
    for i in range(n):
        valid[i] = beta[i] > 0.0 and eta4[i] > -1.0 and is_symmetric(eta3[i], SYMMETRY_RTOL)
        if not valid[i]:
            continue
        for r in range(dim):
            m[i, r] = eta1[i, r] / beta[i]
            for c in range(dim):
                scale_inv[i, r, c] = 0.5 * (eta3[i, r, c] + eta3[i, c, r]) - eta1[i, r] * eta1[i, c] / beta[i]
        valid[i] = cholesky(scale_inv[i], chol[i])
        total, error = 0.0, 0.0
        for r in range(dim):
            total, error = compensated_add(total, error, log(chol[i, r, r]) if valid[i] else 0.0)
        logdet[i] = 2.0 * (total + error)


def _factor(natural):
    """``((beta, m, df, W^-1, chol(W^-1), log|W^-1|), valid)`` from natural parameters (plain arrays).

    ``valid``: the whole batch passes :meth:`NormalWishart.is_valid_natural`
    (the factors are None, or meaningless, where it does not).  One compiled
    pass (:func:`_factor_kernel`) for ``D <= REFINE_MAX_DIM``, where per-call
    overheads dominate; numpy and LAPACK above.
    """
    eta1, beta, eta3, eta4 = (np.asarray(p, dtype=float) for p in natural)
    batch, dim = eta1.shape[:-1], eta1.shape[-1]
    if dim <= _linalg.REFINE_MAX_DIM and beta.shape == eta4.shape == eta3.shape[:-2] == batch:
        m, scale_inv, chol = np.empty(eta1.shape), np.empty(eta3.shape), np.empty(eta3.shape)
        logdet, valid = np.empty(batch), np.empty(batch, dtype=np.bool_)
        _factor_kernel(eta1.reshape(-1, dim), beta.reshape(-1), eta3.reshape(-1, dim, dim), eta4.reshape(-1),
                       m.reshape(-1, dim), scale_inv.reshape(-1, dim, dim), chol.reshape(-1, dim, dim),
                       logdet.reshape(-1), valid.reshape(-1))
        return (beta, m, eta4 + dim, scale_inv, chol, logdet), bool(valid.all())
    if not np.all(NormalWishart.is_valid_natural(natural)):
        return None, False
    beta, m, df, scale_inv = _unpack((eta1, beta, eta3, eta4))
    chol = np.linalg.cholesky(scale_inv)
    return (beta, m, df, scale_inv, chol, _linalg.logdet_from_cholesky(chol)), True


def _factors_or_raise(natural):
    """``(beta, m, df, W^-1, chol(W^-1), log|W^-1|)`` from natural parameters (plain arrays).

    Raises
    ------
    ValueError
        Naming the inverse scale and the batch index where it is not positive definite.
    """
    factors, valid = _factor(natural)
    if valid:
        return factors
    beta, m, df, scale_inv = _unpack(natural)      # outside the natural parameter space: as before, raise
    chol = _linalg.cholesky(scale_inv, _SCALE_INV)  # only where W^-1 is not positive definite
    return beta, m, df, scale_inv, chol, _linalg.logdet_from_cholesky(chol)


def _mean_params(beta, m, df, scale_inv, chol, logdet_scale_inv):
    """The mean parameters from the parts :func:`_factor` computes (module docstring)."""
    dim = m.shape[-1]
    expected_precision = df[..., None, None] * _linalg.pd_inverse_from_cholesky(scale_inv, chol)
    quad = dim / beta + df * _linalg.quad_form_chol(chol, m)
    logdet = expected_logdet(df, -logdet_scale_inv, dim)
    return (np.einsum("...ij,...j->...i", expected_precision, m), -0.5 * quad,
            -0.5 * expected_precision, 0.5 * logdet)


@register
class NormalWishart(ExponentialFamily):
    """A batch of Normal-Wishart distributions over pairs ``(mu, precision)``.

    Parameters
    ----------
    mean : array_like, shape ``batch + (D,)``
        Location ``m`` of ``mu``.
    beta : array_like, shape ``batch``
        Scaling of the precision of ``mu``: ``mu | Lambda ~ N(m, (beta Lambda)^-1)``; > 0.
    df : array_like, shape ``batch``
        Wishart degrees of freedom, > D - 1.
    scale : array_like, shape ``batch + (D, D)``
        Wishart scale ``W``, symmetric positive definite.  Batch shapes broadcast.
    """

    name = "normal_wishart"
    param_names = ("beta * mean", "beta", "inv(scale) + beta * outer(mean, mean)", "df - D")
    event_ndims = (1, 0, 2, 0)
    sample_ndim = 1  # of mu; a draw is the pair (mu, precision)
    draw_parts = ("mu", "precision")

    def __new__(cls, mean, beta, df, scale):
        mean = as_float(mean, "mean", ndim_min=1)
        beta = check_positive(beta, "beta")
        scale = check_pd(scale, "scale")
        dim = mean.shape[-1]
        if scale.shape[-1] != dim:
            raise ValueError(f"scale must have shape (..., {dim}, {dim}) to match mean of shape {mean.shape}; got {scale.shape}")
        eta4 = natural_df(df, dim, "df - D", float(dim))
        try:
            batch = np.broadcast_shapes(mean.shape[:-1], beta.shape, eta4.shape, scale.shape[:-2])
        except ValueError:
            raise ValueError(
                f"batch shapes of mean {mean.shape[:-1]}, beta {beta.shape}, df {eta4.shape} and "
                f"scale {scale.shape[:-2]} do not broadcast"
            ) from None
        mean = np.broadcast_to(mean, batch + (dim,))
        beta = np.broadcast_to(beta, batch).copy()
        scale = _linalg.symmetrise(np.broadcast_to(scale, batch + (dim, dim)))
        eta3 = _linalg.pd_inverse(scale, "scale") + beta[..., None, None] * mean[..., :, None] * mean[..., None, :]
        eta4 = np.broadcast_to(eta4, batch).copy()
        return cls.from_natural((beta[..., None] * mean, beta, eta3, eta4), validate=False)

    def __init__(self, mean, beta, df, scale):
        """Construction happens in ``__new__``, which validates every argument."""

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(Lambda mu, -mu^T Lambda mu / 2, -Lambda / 2, log|Lambda| / 2)`` for ``z = (mu, Lambda)``."""
        mu, precision = cls._check_sample(z)
        chol = _linalg.cholesky(_linalg.symmetrise(precision), "z[1] (the precision sample)")
        lam_mu = np.einsum("...ij,...j->...i", precision, mu)
        return (lam_mu, -0.5 * np.sum(mu * lam_mu, axis=-1), -0.5 * precision,
                0.5 * _linalg.logdet_from_cholesky(chol))

    @classmethod
    def log_base_measure(cls, z):
        """``-D/2 log(2 pi)``, shape ``mu.shape[:-1]``."""
        mu, _ = cls._check_sample(z)
        return np.full(mu.shape[:-1], -0.5 * mu.shape[-1] * _LOG_2PI)

    @classmethod
    def expected_log_base_measure(cls, natural):
        """``-D/2 log(2 pi)``, shape ``batch``."""
        return np.full(cls.batch_shape_of(natural), -0.5 * np.shape(natural[0])[-1] * _LOG_2PI)

    @classmethod
    def log_partition(cls, natural):
        """``-D/2 log beta`` plus the Wishart log normaliser; autograd-differentiable."""
        beta, _, df, scale_inv = _unpack(natural)
        return -0.5 * np.shape(natural[0])[-1] * anp.log(beta) + log_normaliser(df, scale_inv)

    @classmethod
    def natural_to_mean(cls, natural):
        """``(E[Lambda mu], -E[mu^T Lambda mu]/2, -E[Lambda]/2, E[log|Lambda|]/2)``."""
        return _mean_params(*_factors_or_raise(natural))

    @classmethod
    def mean_to_natural(cls, mean):
        """Natural parameters from mean parameters (closed form plus the Wishart ``df`` solve)."""
        lam_mu, half_quad, half_precision, half_logdet = mean
        dim = lam_mu.shape[-1]
        expected_precision = -2.0 * _linalg.symmetrise(half_precision)
        chol = _linalg.cholesky(expected_precision, "-2 * mean[2] (E[Lambda])")
        m = _linalg.pd_solve(expected_precision, chol, lam_mu)
        dim_over_beta = -2.0 * half_quad - np.sum(m * lam_mu, axis=-1)
        if np.any(dim_over_beta <= 0):
            raise ValueError(
                "mean[1] is not a Normal-Wishart mean: -2 * mean[1] - m^T mean[0] (= D / beta) must be > 0; "
                f"got minimum {number(np.min(dim_over_beta))}"
            )
        beta = dim / dim_over_beta
        gap = 2.0 * half_logdet - _linalg.logdet_from_cholesky(chol)
        df = df_from_logdet_gap(gap, dim, "mean[3] (E log|Lambda| / 2)")
        scale_inv = df[..., None, None] * _linalg.pd_inverse_from_cholesky(expected_precision, chol)
        eta1 = beta[..., None] * m
        return eta1, beta, scale_inv + eta1[..., :, None] * m[..., None, :], df - dim

    @classmethod
    def fisher(cls, natural):
        """Hessian of ``A`` by autograd, shape ``batch + (P, P)`` with ``P = D + 1 + D*D + 1``."""
        return hessian_of_log_partition(cls.log_partition, natural, cls.event_ndims)

    @classmethod
    def is_valid_natural(cls, natural):
        """``beta > 0``, ``df > D - 1``, ``natural[2]`` symmetric and the inverse scale positive definite."""
        eta1, beta, eta3, eta4 = (np.asarray(p, dtype=float) for p in natural)
        positive = beta > 0
        symmetric = _linalg.is_symmetric(eta3)
        _, _, _, scale_inv = _unpack((eta1, np.where(positive, beta, 1.0), eta3, eta4))
        return positive & (eta4 > -1.0) & symmetric & _linalg.is_pd(scale_inv)

    @classmethod
    def from_valid_natural(cls, natural):
        """As the base class, with the validity test and the factorisation of ``W^-1`` in one pass
        (:func:`_factor`), whose results the distribution keeps for its mean parameters, log-partition
        and ``expected_mahalanobis``."""
        factors, valid = _factor(natural)
        if not valid:
            return None
        obj = cls.from_natural(natural, validate=False)
        obj._factors = factors
        return obj

    @classmethod
    def _sample(cls, natural, rng, n):
        beta, m, df, scale_inv = _unpack(natural)
        scale = _linalg.pd_inverse(scale_inv, _SCALE_INV)
        factor = bartlett_factor(df, np.linalg.cholesky(scale), rng, n)
        noise = rng.standard_normal((n,) + m.shape + (1,))
        # mu = m + F^-T noise / sqrt(beta) has covariance (beta F F^T)^-1 = (beta Lambda)^-1.
        offset = _linalg.solve_triangular(factor, noise, transpose=True)[..., 0]
        return m + offset / np.sqrt(beta)[..., None], factor @ np.swapaxes(factor, -1, -2)

    @classmethod
    def in_support(cls, z):
        """Whether each precision ``z[1]`` is symmetric positive definite; shape ``z[1].shape[:-2]``."""
        return _linalg.is_spd(z[1])

    @classmethod
    def _check_sample(cls, z):
        if not isinstance(z, (tuple, list)) or len(z) != 2:
            raise ValueError(
                f"z for {cls.__name__} must be a pair (mu, precision) of arrays; got {type(z).__name__}"
            )
        mu = as_float(z[0], "z[0] (mu)", ndim_min=1, finite=False)
        precision = as_float(z[1], "z[1] (precision)", ndim_min=2, finite=False)
        if precision.shape != mu.shape + mu.shape[-1:]:
            raise ValueError(
                f"z[1] (precision) must have shape {mu.shape + mu.shape[-1:]} to match z[0] (mu) "
                f"of shape {mu.shape}; got {precision.shape}"
            )
        return mu, precision

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        dim = arrays[0].shape[-1]
        if arrays[2].shape[-2:] != (dim, dim):
            raise ValueError(
                f"{name}[2] ({cls.param_names[2]}) of {cls.__name__} must have event shape "
                f"({dim}, {dim}) to match {name}[0] of shape {arrays[0].shape}; got {arrays[2].shape}"
            )

    @classmethod
    def _domain_description(cls):
        return ("natural[1] = beta must be > 0, natural[3] = df - D > -1, and natural[2] - "
                "outer(natural[0], natural[0]) / natural[1] = inv(scale) symmetric positive definite")

    # ------------------------------------------------------------------ cached pieces
    def _held_factors(self):
        """``(beta, m, df, W^-1, chol(W^-1), log|W^-1|)`` of this batch, computed once (the parameters are
        read-only)."""
        factors = getattr(self, "_factors", None)
        if factors is None:
            factors = self._factors = _factors_or_raise(self._natural)
        return factors

    def _compute_mean_params(self):
        return _mean_params(*self._held_factors())

    def _compute_log_partition(self):
        """``-D/2 log beta`` plus the Wishart log normaliser, with ``log|W^-1|`` from the held factor."""
        beta, m, df, _, _, logdet_scale_inv = self._held_factors()
        dim = m.shape[-1]
        return -0.5 * dim * np.log(beta) + log_normaliser_from_logdet(df, logdet_scale_inv, dim)

    # ------------------------------------------------------------------ readable properties
    @property
    def dim(self):
        """Dimension ``D`` of ``mu``."""
        return self._natural[0].shape[-1]

    @property
    def mean(self):
        """Location ``m = E[mu]``, shape ``batch + (D,)``."""
        return self._natural[0] / self._natural[1][..., None]

    @property
    def event_shape(self):
        """Shapes of the two arrays of a draw, ``((D,), (D, D))``."""
        return (self.dim,), (self.dim, self.dim)

    @property
    def var(self):
        """``Var mu_i = [W^-1]_ii / (beta (nu - D - 1))``, shape ``batch + (D,)``; inf where ``nu <= D + 1``."""
        beta, _, df, scale_inv = _unpack(self._natural)
        excess = df - self.dim - 1.0
        with np.errstate(divide="ignore"):
            factor = np.where(excess > 0, 1.0 / (beta * excess), np.inf)
        return factor[..., None] * np.diagonal(scale_inv, axis1=-2, axis2=-1)

    @property
    def precision_var(self):
        """Element variances of the precision, ``nu (W_ij^2 + W_ii W_jj)``, shape ``batch + (D, D)``."""
        return element_variances(self.df, self.scale)

    @property
    def beta(self):
        """Precision scaling ``beta``, shape ``batch``."""
        return self._natural[1]

    @property
    def df(self):
        """Wishart degrees of freedom ``nu``, shape ``batch``."""
        return self._natural[3] + self.dim

    @property
    def scale(self):
        """Wishart scale ``W``, shape ``batch + (D, D)``."""
        return _linalg.pd_inverse(_unpack(self._natural)[3], _SCALE_INV)

    @property
    def expected_precision(self):
        """``E[Lambda] = nu W``, shape ``batch + (D, D)``."""
        return -2.0 * self.mean_params[2]

    @property
    def expected_logdet_precision(self):
        """``E log|Lambda|``, shape ``batch``."""
        return 2.0 * self.mean_params[3]

    def expected_mahalanobis(self, x):
        """``E[(x - mu)^T Lambda (x - mu)] = D / beta + nu (x - m)^T W (x - m)``.

        Parameters
        ----------
        x : array_like, shape ``sample_shape + (D,)``
            Data points, e.g. ``(N, D)``.

        Returns
        -------
        array, shape ``sample_shape + batch``
        """
        x = as_float(x, "x", ndim_min=1)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., {self.dim}); got {x.shape}")
        beta, m, df, _, chol, _ = self._held_factors()
        batch = self.batch_shape
        diff = x.reshape(x.shape[:-1] + (1,) * len(batch) + (self.dim,)) - m
        return self.dim / beta + df * _linalg.quad_form_chol(chol, diff)
