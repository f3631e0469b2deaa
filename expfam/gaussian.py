"""The multivariate normal with full covariance.

For :math:`z \\in \\mathbb{R}^D` with mean :math:`m` and covariance :math:`V`,

.. math::

    q(z) = (2\\pi)^{-D/2} \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (z,\\; z z^T), \\qquad
    \\lambda = (V^{-1} m,\\; -\\tfrac12 V^{-1}),

    A(\\lambda) = -\\tfrac14 \\lambda_1^T \\lambda_2^{-1} \\lambda_1
                  - \\tfrac12 \\log|-2\\lambda_2|, \\qquad
    \\mu = \\nabla A(\\lambda) = (m,\\; V + m m^T).

The matrix parts pair by the trace inner product over all :math:`D^2` entries.
``log_partition`` uses the symmetric part of :math:`\\lambda_2`, so autograd's
Hessian over all entries is the covariance of the flattened statistics
:math:`(z, \\operatorname{vec}(z z^T))`.  By Isserlis' theorem,

.. math::

    \\operatorname{Cov}(z_i, z_k z_l) = V_{ik} m_l + V_{il} m_k, \\qquad
    \\operatorname{Cov}(z_i z_j, z_k z_l) = V_{ik} V_{jl} + V_{il} V_{jk}
        + m_i m_k V_{jl} + m_i m_l V_{jk} + m_j m_k V_{il} + m_j m_l V_{ik},

which is :meth:`Gaussian.fisher` in flattened coordinates (``D + D*D``).

Accuracy.  The maps go through Cholesky factors with refined inverses
(:mod:`efvi.expfam._linalg`).  What limits a round trip is the representation: the
mean parameters hold :math:`V` only as :math:`\\mu_2 - \\mu_1 \\mu_1^T`, rounded to
float64, so the precision comes back to about
:math:`4 u \\|V^{-1}\\|_2 \\|\\mu_2\\|_F` relative (``u`` the unit roundoff), which is
:math:`\\kappa(V)\\,u` for means near 0 (5e-11 at :math:`\\kappa = 10^6`, 1e-7 at
:math:`10^{10}` in the tests) and grows with :math:`\\|m\\|^2 / \\lambda_{\\min}(V)`.
"""

import autograd.numpy as anp
import numba
import numpy as np

from . import _linalg
from ._base import ExponentialFamily
from ._gaussian_measure import _LOG_2PI, GaussianBaseMeasure
from ._kernels import _NUMBA_OPTIONS, compensated_add
from ._registry import register
from .checks import as_float, check_pd


@numba.jit(**_NUMBA_OPTIONS)
def _kl_squares_kernel(chol_q, chol_p, diff, out):
    """``out[i] = |L_q^-1 L_p|_F^2 + |L_p^T d|^2`` for stacks ``chol_q, chol_p`` ``(n, D, D)``, ``diff`` ``(n, D)``.

    The trace and Mahalanobis terms of :meth:`Gaussian._kl`: columns of
    ``L_q^-1 L_p`` by forward substitution (skipping the zeros above the
    diagonal of ``L_p``), the squares summed compensated.
    """
    n, dim = diff.shape
    column = np.empty(dim)
    for i in range(n):
        total, error = 0.0, 0.0
        for j in range(dim):
            for r in range(j, dim):
                value = chol_p[i, r, j]
                for k in range(j, r):
                    value -= chol_q[i, r, k] * column[k]
                column[r] = value / chol_q[i, r, r]
                total, error = compensated_add(total, error, column[r] * column[r])
            projected = 0.0
            for r in range(j, dim):
                projected += chol_p[i, r, j] * diff[i, r]
            total, error = compensated_add(total, error, projected * projected)
        out[i] = total + error


@register
class Gaussian(GaussianBaseMeasure, ExponentialFamily):
    """A batch of multivariate normals ``N(mean, cov)``.

    Build one with :meth:`from_mean_cov`, :meth:`from_mean_precision`,
    :meth:`from_natural` or :meth:`from_mean_params`.

    Natural parameters are ``(V^-1 m, -V^-1 / 2)`` with shapes
    ``batch + (D,)`` and ``batch + (D, D)``; samples have shape ``batch + (D,)``.
    """

    name = "gaussian"
    readable_params = ("mean", "cov")
    param_names = ("precision @ mean", "-precision / 2")
    event_ndims = (1, 2)
    sample_ndim = 1

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(z, z z^T)`` for ``z`` of shape ``(..., D)``."""
        z = np.asarray(z, dtype=float)
        return z, z[..., :, None] * z[..., None, :]

    @classmethod
    def log_partition(cls, natural):
        """``A = 1/2 eta1^T P^-1 eta1 - 1/2 log|P|`` with ``P = -2 sym(eta2)``; autograd-differentiable."""
        eta1, eta2 = natural
        precision = -2.0 * _linalg.symmetrise(eta2)
        solved = anp.linalg.solve(precision, eta1[..., None])[..., 0]
        _, logdet = anp.linalg.slogdet(precision)
        return 0.5 * anp.sum(eta1 * solved, axis=-1) - 0.5 * logdet

    @classmethod
    def natural_to_mean(cls, natural):
        """``(m, V + m m^T)`` from ``(V^-1 m, -V^-1/2)``."""
        eta1, eta2 = natural
        precision = -2.0 * _linalg.symmetrise(eta2)
        chol = _linalg.cholesky(precision, "-2 * natural[1] (the precision)")
        mean = _linalg.pd_solve(precision, chol, eta1)
        cov = _linalg.pd_inverse_from_cholesky(precision, chol)
        return mean, cov + mean[..., :, None] * mean[..., None, :]

    @classmethod
    def mean_to_natural(cls, mean):
        """``(V^-1 m, -V^-1/2)`` from ``(m, E[z z^T])``; ``V = E[z z^T] - m m^T`` must be positive definite."""
        m, second = mean
        cov = _linalg.symmetrise(second - m[..., :, None] * m[..., None, :])
        chol = _linalg.cholesky(cov, "mean[1] - outer(mean[0], mean[0]) (the covariance)")
        return _linalg.pd_solve(cov, chol, m), -0.5 * _linalg.pd_inverse_from_cholesky(cov, chol)

    @classmethod
    def fisher(cls, natural):
        """Covariance of ``(z, vec(z z^T))`` (Isserlis), shape ``batch + (D + D*D, D + D*D)``."""
        m, second = cls.natural_to_mean(natural)
        cov = second - m[..., :, None] * m[..., None, :]
        dim = m.shape[-1]
        batch = m.shape[:-1]
        cross = np.einsum("...ik,...l->...ikl", cov, m)
        cross = (cross + np.swapaxes(cross, -1, -2)).reshape(batch + (dim, dim * dim))
        vv = np.einsum("...ik,...jl->...ijkl", cov, cov)
        mmv = np.einsum("...i,...k,...jl->...ijkl", m, m, cov)
        mmv = mmv + np.swapaxes(mmv, -1, -2)
        quad = vv + np.swapaxes(vv, -1, -2) + mmv + np.swapaxes(mmv, -3, -4)
        quad = quad.reshape(batch + (dim * dim, dim * dim))
        top = np.concatenate([cov, cross], axis=-1)
        bottom = np.concatenate([np.swapaxes(cross, -1, -2), quad], axis=-1)
        return np.concatenate([top, bottom], axis=-2)

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[1]`` symmetric and negative definite; shape ``batch``."""
        eta2 = np.asarray(natural[1], dtype=float)
        symmetric = _linalg.is_symmetric(eta2)
        return symmetric & _linalg.is_pd(-eta2)

    @classmethod
    def from_valid_natural(cls, natural):
        """As the base class, with one Cholesky factorisation: the test's factor is kept for later use."""
        chol = _linalg.symmetric_cholesky(natural[1], -2.0)
        if chol is None:
            return None
        obj = cls.from_natural(natural, validate=False)
        obj._precision_chol = chol
        return obj

    @classmethod
    def _sample(cls, natural, rng, n):
        eta1, eta2 = natural
        chol = _linalg.cholesky(-2.0 * _linalg.symmetrise(eta2), "-2 * natural[1] (the precision)")
        mean = _linalg.pd_solve(-2.0 * _linalg.symmetrise(eta2), chol, eta1)
        noise = rng.standard_normal((n,) + mean.shape + (1,))
        return mean + _linalg.solve_triangular(chol, noise, transpose=True)[..., 0]

    @classmethod
    def _check_event_shapes(cls, arrays, name):
        dim = arrays[0].shape[-1]
        if arrays[1].shape[-2:] != (dim, dim):
            raise ValueError(
                f"{name}[1] ({cls.param_names[1]}) of {cls.__name__} must have event shape "
                f"({dim}, {dim}) to match {name}[0] of shape {arrays[0].shape}; got {arrays[1].shape}"
            )

    @classmethod
    def _domain_description(cls):
        return "natural[1] = -precision / 2 must be symmetric and negative definite"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_mean_cov(cls, mean, cov):
        """Build ``N(mean, cov)``.

        Parameters
        ----------
        mean : array_like, shape ``batch + (D,)``
        cov : array_like, shape ``batch + (D, D)``
            Symmetric positive definite; batch shapes broadcast with ``mean``.

        Raises
        ------
        ValueError
            Naming ``mean`` or ``cov`` if they are not finite, their shapes
            disagree, or ``cov`` is not symmetric positive definite.
        """
        mean, cov = cls._check_mean_matrix(mean, cov, "cov")
        chol = _linalg.cholesky(cov, "cov")
        precision = _linalg.pd_inverse_from_cholesky(cov, chol)
        return cls.from_natural((_linalg.pd_solve(cov, chol, mean), -0.5 * precision), validate=False)

    @classmethod
    def from_mean_precision(cls, mean, precision):
        """Build ``N(mean, precision^-1)``.

        Parameters
        ----------
        mean : array_like, shape ``batch + (D,)``
        precision : array_like, shape ``batch + (D, D)``
            Symmetric positive definite; batch shapes broadcast with ``mean``.
        """
        mean, precision = cls._check_mean_matrix(mean, precision, "precision")
        eta1 = np.einsum("...ij,...j->...i", precision, mean)
        return cls.from_natural((eta1, -0.5 * precision), validate=False)

    @staticmethod
    def _check_mean_matrix(mean, matrix, matrix_name):
        mean = as_float(mean, "mean", ndim_min=1)
        dim = mean.shape[-1]
        if dim < 1:
            raise ValueError(f"mean must have shape (..., D) with dimension D >= 1; got shape {mean.shape}")
        matrix = check_pd(matrix, matrix_name)
        if matrix.shape[-1] != dim:
            raise ValueError(
                f"{matrix_name} must have shape (..., {dim}, {dim}) to match mean of shape "
                f"{mean.shape}; got {matrix.shape}"
            )
        try:
            batch = np.broadcast_shapes(mean.shape[:-1], matrix.shape[:-2])
        except ValueError:
            raise ValueError(
                f"batch shapes of mean {mean.shape[:-1]} and {matrix_name} {matrix.shape[:-2]} "
                "do not broadcast"
            ) from None
        mean = np.broadcast_to(mean, batch + (dim,))
        matrix = _linalg.symmetrise(np.broadcast_to(matrix, batch + (dim, dim)))
        return mean, matrix

    # ------------------------------------------------------------------ closed forms
    def _kl(self, other):
        r"""``KL(self || other)`` in closed form from Cholesky factors of the precisions.

        .. math:: \tfrac12 [\operatorname{tr}(\Lambda_p V_q) + (m_q - m_p)^T \Lambda_p (m_q - m_p)
                  - D + \log|\Lambda_q| - \log|\Lambda_p|]

        The generic Bregman form subtracts terms of the size of the precision and
        loses everything for a concentrated posterior; this one does not (it is
        tested against the generic route on moderate parameters).
        """
        chol_q, chol_p = self.precision_cholesky, other.precision_cholesky
        diff = self.mean - other.mean
        dim = diff.shape[-1]
        if chol_q.shape == chol_p.shape and dim <= _linalg.REFINE_MAX_DIM:
            squares = np.empty(diff.shape[:-1])
            _kl_squares_kernel(chol_q.reshape(-1, dim, dim), chol_p.reshape(-1, dim, dim), diff.reshape(-1, dim),
                               squares.reshape(-1))
        else:
            whitened = _linalg.solve_triangular(chol_q, chol_p)             # L_q^{-1} L_p
            projected = (np.swapaxes(chol_p, -1, -2) @ diff[..., None])[..., 0]
            squares = (whitened * whitened).sum(axis=(-2, -1)) + (projected * projected).sum(axis=-1)
        return 0.5 * (squares - dim + self._precision_logdet() - other._precision_logdet())

    def entropy(self):
        """Differential entropy ``D (1 + log 2 pi) / 2 - log|Lambda| / 2``, shape ``batch``."""
        dim = self._natural[0].shape[-1]
        return 0.5 * dim * (1.0 + _LOG_2PI) - 0.5 * self._precision_logdet()

    def _compute_mean_params(self):
        """``(m, V + m m^T)`` from the held precision factor, mean and covariance (each computed once)."""
        mean = self.mean
        return mean, self.cov + mean[..., :, None] * mean[..., None, :]

    # ------------------------------------------------------------------ readable properties
    @property
    def mean(self):
        """Mean ``m``, shape ``batch + (D,)``; computed once (a solve with the precision, no inverse)."""
        if self._mean_params is not None:
            return self._mean_params[0]
        if getattr(self, "_mean", None) is None:
            mean = _linalg.pd_solve(self.precision, self.precision_cholesky, self._natural[0])
            mean.setflags(write=False)
            self._mean = mean
        return self._mean

    @property
    def cov(self):
        """Covariance ``V``, shape ``batch + (D, D)``; computed once."""
        if getattr(self, "_cov", None) is None:
            cov = _linalg.pd_inverse_from_cholesky(self.precision, self.precision_cholesky)
            cov.setflags(write=False)
            self._cov = cov
        return self._cov

    @property
    def var(self):
        """Marginal variances ``diag(V)``, shape ``batch + (D,)``."""
        return np.diagonal(self.cov, axis1=-2, axis2=-1).copy()

    @property
    def precision(self):
        """Precision ``V^-1``, shape ``batch + (D, D)``."""
        return -2.0 * self._natural[1]

    def _precision_logdet(self):
        """``log|Lambda|`` from the precision's Cholesky factor, computed once (a prior's, at every iteration)."""
        if getattr(self, "_logdet", None) is None:
            self._logdet = _linalg.logdet_from_cholesky(self.precision_cholesky)
        return self._logdet

    @property
    def precision_cholesky(self):
        """Lower Cholesky factor of the precision, shape ``batch + (D, D)``; computed once.

        Raises ``numpy.linalg.LinAlgError`` if the precision is not positive definite.
        """
        if getattr(self, "_precision_chol", None) is None:
            chol = _linalg.symmetric_cholesky(self._natural[1], -2.0)
            self._precision_chol = np.linalg.cholesky(_linalg.symmetrise(self.precision)) if chol is None else chol
        return self._precision_chol
