"""The GLM factor: ``y_i ~ p(y | a_i)`` with ``a_i = x_i^T w`` and a Gaussian block ``w``.

The conjugate computation is Bayesian linear regression on the sites'
pseudo-observations:

.. math:: \\Lambda = \\Lambda_0 + X^T \\operatorname{diag}(\\pi) X, \\qquad
          \\Lambda m = \\Lambda_0 m_0 + X^T \\gamma,

i.e. the message to a full-covariance Gaussian block is
``(X^T gamma, -X^T diag(pi) X / 2)``, built with ``dsyrk``.  The marginals are
``m_i = x_i^T m`` and ``v_i = ||L^{-1} x_i||^2`` with ``L`` the Cholesky factor
of the posterior precision.  Each of the two reads ``X`` once, in cache-sized blocks
of rows (:mod:`efvi.models.glm._linalg`).

With fewer rows than columns (N < D) and a full Gaussian block that only
this factor touches, the model solves in the N-space instead
(:mod:`efvi.models.glm.dual`): no D x D matrix is factorised.

For a DiagonalGaussian block (mean field over weights) the natural gradient of
``E[log p(y_i | a_i)]`` with respect to the diagonal mean parameters
``(m_d, m_d^2 + v_d)`` is ``(x_i g_m + m * x_i^2 pi_i, -x_i^2 pi_i / 2)``; its first
part depends on the current mean, so those sites also keep that ``(N, D)`` part
(still no ``D x D`` per point).
"""

import numpy as np

from ...expfam import DiagonalGaussian, Gaussian
from ...expfam.checks import as_float

from ..sites import GaussianSiteFactor
from ._informed import informed_weights
from ._linalg import gram_and_projection, marginals
from .dual import DualWeights


class GLM(GaussianSiteFactor):
    """A generalised linear model likelihood on a Gaussian weight block.

    Parameters
    ----------
    likelihood : efvi.models.likelihoods.Likelihood
        E.g. ``likelihoods.BernoulliLogit()`` or ``likelihoods.Gaussian(variance=0.1)``
        or ``likelihoods.Gaussian(precision="tau")`` with a Gamma block ``tau``.
    X : array_like, shape (N, D)
        Design matrix (finite; include a column of ones for an intercept).
    y : array_like, shape (N,)
        Responses; NaN marks a missing one.
    on : str
        Name of the Gaussian or DiagonalGaussian block of weights, dimension D.
    """

    def __init__(self, likelihood, X, y, on="w"):
        self.X = np.ascontiguousarray(as_float(X, "X", ndim_min=2))
        if self.X.ndim != 2:
            raise ValueError(f"X must have shape (N, D); got {self.X.shape}")
        super().__init__(likelihood, y, on)
        if self.y.shape[0] != self.X.shape[0]:
            raise ValueError(f"y must have one entry per row of X ({self.X.shape[0]}); got {self.y.shape[0]}")

    def bind(self, blocks):
        super().bind(blocks)
        block = self._require_family(blocks, "on", Gaussian, DiagonalGaussian)
        dim = block.prior.natural[0].shape[-1]
        if block.prior.batch_shape != () or dim != self.X.shape[1]:
            raise ValueError(
                f"{self.describe()}: block {block.name!r} must be a single Gaussian of dimension "
                f"{self.X.shape[1]} (columns of X); got batch {block.prior.batch_shape}, dimension {dim}"
            )
        self.diagonal = block.family is DiagonalGaussian
        self.dual = isinstance(block, DualWeights)

    def replace_block(self, block):
        """The dual route (:mod:`efvi.models.glm.dual`) for a full Gaussian block when N < D."""
        if block.family is Gaussian and not isinstance(block, DualWeights) and self.X.shape[0] < self.X.shape[1]:
            return DualWeights(block.name, block.prior, self.X)
        return None

    def _rows(self, index):
        return self.X if index is None else self.X[index]

    def _marginals(self, q, index):
        if self.dual:
            points = q.points
            return (points.mean, points.var) if index is None else (points.mean[index], points.var[index])
        X = self._rows(index)
        if self.diagonal:
            return X @ q.mean, (X * X) @ q.var
        return marginals(X, q.mean, q.precision_cholesky)

    def _informed_form(self, block, natural_mean, precision, g_m):
        if not self.diagonal:
            return (natural_mean, precision)
        # diagonal sites carry a third part that depends on the mean they were formed at: form
        # them at the weighted-least-squares weights of the informed sites (an IRLS step, solved
        # approximately by CG), so that the fit does not start from the prior's mean
        weights = informed_weights(self.X, natural_mean, precision, block.prior.mean, block.prior.var)
        if weights is None:
            return None
        return self._targets_at(weights, natural_mean, precision, g_m, None)

    def _zero_sites(self):
        zeros = (np.zeros(self.n_data), np.zeros(self.n_data))
        return zeros + ((np.zeros_like(self.X),) if self.diagonal else ())

    def _targets(self, q_block, natural_mean, precision, g_m, index):
        if not self.diagonal:
            return (natural_mean, precision)
        return self._targets_at(q_block.mean, natural_mean, precision, g_m, index)

    def _targets_at(self, weights, natural_mean, precision, g_m, index):
        """Diagonal sites formed at the weight mean ``weights`` (D,): ``(gamma, pi, x_i g_m + x_i^2 pi_i w)``."""
        X = self._rows(index)
        return (natural_mean, precision, X * g_m[:, None] + (X * X) * precision[:, None] * weights)

    def _message(self, sites, index):
        if self.dual:       # the block solves in the N-space: the message is the sites themselves
            if index is None:
                return (sites[0], sites[1])
            full = (np.zeros(self.n_data), np.zeros(self.n_data))
            full[0][index], full[1][index] = sites[0], sites[1]
            return full
        X = self._rows(index)
        natural_mean, precision = sites[0], sites[1]
        if self.diagonal:
            return (sites[2].sum(axis=0), -0.5 * ((X * X).T @ precision))
        common = self._common_precision(precision) if index is None else None
        if common is not None:
            # a Gaussian likelihood gives every observed point the same site precision E[tau]:
            # the Gram matrix is that number times X^T X of the observed rows, formed once
            return (natural_mean @ X, -0.5 * common * self._observed_gram())
        projection, gram = gram_and_projection(X, precision, natural_mean)
        return (projection, -0.5 * gram)

    def _common_precision(self, precision):
        """The site precision shared by every observed point (0 at missing ones), or None."""
        if not self.likelihood.conjugate:
            return None
        if self.all_observed:
            lowest, highest = precision.min(), precision.max()
            return float(lowest) if lowest == highest else None
        observed = precision[self.observed]
        if observed.size == 0 or not (np.all(observed == observed[0]) and not np.any(precision[~self.observed])):
            return None
        return float(observed[0])

    def _observed_gram(self):
        """``X^T X`` over the observed rows, computed on first use."""
        if getattr(self, "_gram", None) is None:
            X = self.X[self.observed]
            self._gram = gram_and_projection(np.ascontiguousarray(X), np.ones(X.shape[0]), None)[1]
        return self._gram

