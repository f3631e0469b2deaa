r"""Observation distributions :math:`p(x' \mid \eta)` for the Monte Carlo and Gauss-Newton estimates of :math:`F_r`.

An output distribution gives, for parameters :math:`\eta` of shape
(..., d_out) broadcasting over leading axes:

- ``sample(eta, rng)``: a draw :math:`x' \sim p(x' \mid \eta)`, shape (..., d_out);
- ``log_prob(x, eta)``: :math:`\log p(x \mid \eta)` summed over the last axis,
  autograd-safe in ``eta``;
- ``fisher(eta)``: the Fisher information of :math:`p(\cdot \mid \eta)` in
  :math:`\eta`, shape (..., d_out, d_out).
"""

import autograd.numpy as anp
import numpy as np

from ...expfam.checks import check_pd


class GaussianOutput:
    r""":math:`x' \sim \mathcal N(\eta, \Sigma_x)`; Fisher :math:`\Sigma_x^{-1}`.

    Parameters
    ----------
    cov : array_like, shape (d_out, d_out)
        :math:`\Sigma_x`, symmetric positive definite.
    """

    def __init__(self, cov):
        self.cov = check_pd(cov, "cov")
        self.precision = np.linalg.inv(self.cov)
        self._chol = np.linalg.cholesky(self.cov)
        self._log_norm = -0.5 * (self.cov.shape[0] * np.log(2 * np.pi) + np.linalg.slogdet(self.cov)[1])

    def sample(self, eta, rng):
        eta = np.asarray(eta, dtype=float)
        return eta + rng.standard_normal(eta.shape) @ self._chol.T

    def log_prob(self, x, eta):
        residual = x - eta
        return self._log_norm - 0.5 * anp.sum((residual @ self.precision) * residual, axis=-1)

    def fisher(self, eta):
        return np.broadcast_to(self.precision, np.shape(eta)[:-1] + self.precision.shape)


class BernoulliOutput:
    r"""Independent :math:`x'_j \sim \text{Bernoulli}(\operatorname{sigmoid}(\eta_j))`; Fisher
    :math:`\operatorname{diag}(p (1 - p))`."""

    def sample(self, eta, rng):
        eta = np.asarray(eta, dtype=float)
        return (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(float)

    def log_prob(self, x, eta):
        return anp.sum(x * eta - anp.logaddexp(0.0, eta), axis=-1)

    def fisher(self, eta):
        p = 1.0 / (1.0 + np.exp(-np.asarray(eta, dtype=float)))
        return (p * (1 - p))[..., None] * np.eye(p.shape[-1])
