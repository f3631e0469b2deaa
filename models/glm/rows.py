r"""The rows of a design matrix as a projection: point ``i`` sees the weights through ``a_i = x_i^T w``.

The conjugate computation is Bayesian linear regression on the sites'
pseudo-observations:

.. math:: \Lambda = \Lambda_0 + X^T \operatorname{diag}(\pi) X, \qquad
          \Lambda m = \Lambda_0 m_0 + X^T \gamma,

i.e. the message to a full-covariance Gaussian block is
``(X^T gamma, -X^T diag(pi) X / 2)``, built with ``dsyrk``.  The marginals are
``m_i = x_i^T m`` and ``v_i = ||L^{-1} x_i||^2`` with ``L`` the Cholesky factor
of the posterior precision.  Each of the two reads ``X`` once, in cache-sized
blocks of rows (:mod:`efvi.models.glm._linalg`).

With fewer rows than columns (N < D) and a full Gaussian block that only this
projection's factor touches, the block is solved in the N-space instead
(:mod:`efvi.models.glm.dual`) and the rows become the identity projection on
its points: no D x D matrix is factorised.

For a DiagonalGaussian block (mean field over weights) the natural gradient of
``E[log p(y_i | a_i)]`` with respect to the diagonal mean parameters
``(m_d, m_d^2 + v_d)`` is ``(x_i g_m + m * x_i^2 pi_i, -x_i^2 pi_i / 2)``; its
first part depends on the current mean, so those sites also keep that ``(N, D)``
part (still no ``D x D`` per point).
"""

import numpy as np

from ...expfam import DiagonalGaussian, Gaussian

from ..projection import PointValues
from ._informed import informed_weights, newton_sites
from ._linalg import gram_and_projection, marginals, precision_inverse
from .dual import DualWeights


class Rows:
    """Projection ``a_i = x_i^T w`` of a Gaussian or DiagonalGaussian weight block ``w``.

    Parameters
    ----------
    X : ndarray, shape (N, D)
        Finite, C-contiguous design matrix.
    """

    families = (Gaussian, DiagonalGaussian)
    """The block families the rows can project (checked by the factor)."""

    def __init__(self, X):
        self.X = X

    def replace_block(self, block):
        """The dual route (:mod:`efvi.models.glm.dual`) for a full Gaussian block when N < D, else None."""
        if block.family is Gaussian and not isinstance(block, DualWeights) and self.X.shape[0] < self.X.shape[1]:
            return DualWeights(block.name, block.prior, self.X)
        return None

    def bind(self, factor, block):
        """The bound projection for ``block``: full rows, diagonal rows or the dual route's points.

        Raises
        ------
        ValueError
            Unless ``block`` is a single Gaussian or DiagonalGaussian (``families``) of dimension D.
        """
        dim = block.prior.natural[0].shape[-1]
        if block.prior.batch_shape != () or dim != self.X.shape[1]:
            raise ValueError(
                f"{factor.describe()}: block {block.name!r} must be a single Gaussian of dimension "
                f"{self.X.shape[1]} (columns of X); got batch {block.prior.batch_shape}, dimension {dim}"
            )
        if isinstance(block, DualWeights):
            return PointValues(points=lambda q: q.points).bind(factor, block)
        if block.family is DiagonalGaussian:
            return DiagonalRows(self.X)
        return FullRows(self.X, factor.likelihood.conjugate, factor.observed)


class FullRows:
    """Bound rows on a full Gaussian block: sites ``(gamma, pi)``, message ``(X^T gamma, -X^T diag(pi) X / 2)``.

    Parameters
    ----------
    X : ndarray, shape (N, D)
    conjugate : bool
        Whether the likelihood is Gaussian (then every observed point may share one site precision).
    observed : ndarray of bool, shape (N,)
    """

    def __init__(self, X, conjugate, observed):
        self.X, self._conjugate, self._observed = X, conjugate, observed
        self._all_observed = bool(observed.all())
        self._gram = None
        self._start_message = None

    def _rows(self, index):
        return self.X if index is None else self.X[index]

    def marginals(self, q, index):
        return marginals(self._rows(index), q.mean, q.precision_cholesky)

    def marginal_rows(self, q):
        """``rows -> (means, variances)`` of the points ``rows`` (a slice), the triangular inverse formed once."""
        mean, chol = q.mean, q.precision_cholesky
        inverse = precision_inverse(chol)
        return lambda rows: marginals(self.X[rows], mean, chol, inverse)

    def message(self, sites, index):
        natural_mean, precision = sites[0], sites[1]
        start, self._start_message = self._start_message, None
        if start is not None and index is None and start[0][0] is natural_mean and start[0][1] is precision:
            return start[1]
        common = self._common_precision(precision) if index is None else None
        if common is not None:
            # a Gaussian likelihood gives every observed point the same site precision E[tau]:
            # the Gram matrix is that number times X^T X of the observed rows, formed once
            return (natural_mean @ self.X, -0.5 * common * self._observed_gram())
        projection, gram = gram_and_projection(self._rows(index), precision, natural_mean)
        return (projection, -0.5 * gram)

    def targets(self, q, natural_mean, precision, g_m, index):
        return (natural_mean, precision)

    def zero_sites(self):
        return (np.zeros(self.X.shape[0]), np.zeros(self.X.shape[0]))

    def informed(self, block, natural_mean, precision, g_m, point_targets=None):
        if point_targets is None or self._conjugate:
            return (natural_mean, precision)
        prior = block.prior
        sites, message = newton_sites(self.X, prior.mean, prior.precision, natural_mean, precision, point_targets)
        self._start_message = (sites, message)     # the engine asks for it next: not formed twice
        return sites

    def _common_precision(self, precision):
        """The site precision shared by every observed point (0 at missing ones), or None."""
        if not self._conjugate:
            return None
        if self._all_observed:
            lowest, highest = precision.min(), precision.max()
            return float(lowest) if lowest == highest else None
        observed = precision[self._observed]
        if observed.size == 0 or not (np.all(observed == observed[0]) and not np.any(precision[~self._observed])):
            return None
        return float(observed[0])

    def _observed_gram(self):
        """``X^T X`` over the observed rows, computed on first use."""
        if self._gram is None:
            X = np.ascontiguousarray(self.X[self._observed])
            self._gram = gram_and_projection(X, np.ones(X.shape[0]), None)[1]
        return self._gram


class DiagonalRows:
    """Bound rows on a DiagonalGaussian block: sites ``(gamma, pi, x_i g_m + x_i^2 pi_i m)`` (module notes).

    Parameters
    ----------
    X : ndarray, shape (N, D)
    """

    targets_depend_on_block = True
    """The third part is formed at the block's mean: even a Gaussian likelihood's targets depend on the
    posterior, so one full step is not the optimum (it is a Jacobi sweep of the mean-field equations)."""

    def __init__(self, X):
        self.X = X

    def _rows(self, index):
        return self.X if index is None else self.X[index]

    def marginals(self, q, index):
        X = self._rows(index)
        return X @ q.mean, (X * X) @ q.var

    def message(self, sites, index):
        X = self._rows(index)
        return (sites[2].sum(axis=0), -0.5 * ((X * X).T @ sites[1]))

    def targets(self, q, natural_mean, precision, g_m, index):
        return self._targets_at(q.mean, natural_mean, precision, g_m, index)

    def zero_sites(self):
        return (np.zeros(self.X.shape[0]), np.zeros(self.X.shape[0]), np.zeros_like(self.X))

    def informed(self, block, natural_mean, precision, g_m, point_targets=None):
        # the third part depends on the mean it is formed at: form it at the weighted-least-squares
        # weights of the informed sites (an IRLS step, solved approximately by CG), so that the fit
        # does not start from the prior's mean
        weights = informed_weights(self.X, natural_mean, precision, block.prior.mean, block.prior.var)
        if weights is None:
            return None
        return self._targets_at(weights, natural_mean, precision, g_m, None)

    def _targets_at(self, weights, natural_mean, precision, g_m, index):
        """Sites formed at the weight mean ``weights`` (D,): ``(gamma, pi, x_i g_m + x_i^2 pi_i w)``."""
        X = self._rows(index)
        # expectations that overflowed (an exponential link under a diffuse prior) give inf * 0 = NaN
        # here, quietly: a proposal with non-finite sites is invalid and is never taken
        with np.errstate(invalid="ignore"):
            return (natural_mean, precision, X * g_m[:, None] + (X * X) * precision[:, None] * weights)


__all__ = ["Rows", "FullRows", "DiagonalRows"]
