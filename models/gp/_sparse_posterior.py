"""The posterior of a sparse GP block, and how the data's factor sees its points.

:class:`SparseGPPosterior` is ``q(v)`` in the whitened inducing coordinates
with the marginals of ``f`` at the data and predictions at new inputs;
:class:`InducingView` gives a factor per-point sites on ``f_i`` whose message
lives in ``v``-space (:mod:`efvi.models.gp.sparse` has the maths).
"""

import numpy as np
from scipy.linalg import cho_solve, lapack, solve_triangular

from ...expfam import Gaussian
from ...inference import InvalidPosterior

from .._joint_draws import JointDraws, stacked_gaussian_draws
from ..glm._linalg import gram_and_projection, marginals, precision_inverse
from ..projection import PointValues
from ._sparse_features import features
from .kernels._validation import as_inputs
from .prior import kernel_layout


class SparseGPPosterior(JointDraws):
    """Posterior of a sparse GP block: ``q(v) = N(v_mean, v_cov)`` and the marginals of ``f`` at the data.

    Attributes
    ----------
    mean, var : ndarray, shape (N,)
        Marginal means and variances of ``f(x_i)`` at the block's inputs (computed on first use).
    v_mean : ndarray, shape (M,)
        Mean of the whitened inducing values ``v``.
    message : tuple
        The summed sites in ``v``-space, ``(Phi^T gamma', Phi^T diag(pi) Phi)``.
    """

    def __init__(self, block, message):
        self._block, self.message = block, message
        h, J = message
        precision = J + np.eye(J.shape[0])
        chol, info = lapack.dpotrf(precision, lower=1, clean=1)
        if info != 0 or not np.all(np.isfinite(chol)):
            raise InvalidPosterior("sparse GP sites: I + Phi^T diag(pi) Phi is not positive definite")
        self.precision_chol = chol
        self.v_mean = cho_solve((chol, True), h, check_finite=False)
        self.log_det_precision = 2.0 * float(np.sum(np.log(np.diag(chol))))
        self._v_cov = None
        self._marginals = None

    @property
    def v_cov(self):
        """ndarray, shape (M, M): covariance of ``v``, ``Lambda^{-1}``."""
        if self._v_cov is None:
            self._v_cov = cho_solve((self.precision_chol, True), np.eye(self.v_mean.shape[0]), check_finite=False)
        return self._v_cov

    @property
    def trace_cov(self):
        """``tr(Lambda^{-1})``."""
        return float(np.trace(self.v_cov))

    @property
    def inducing_inputs(self):
        """ndarray, shape (M, D): the inducing inputs ``Z`` (the learned ones after learning)."""
        return self._block.Z

    @property
    def inducing(self):
        """``q(u)`` at the inducing inputs as an :class:`efvi.expfam.Gaussian` (``u = mu_0 + L_z v``)."""
        L = self._block.inducing_chol
        cov = L @ self.v_cov @ L.T
        return Gaussian.from_mean_cov(self._block.mean_value + L @ self.v_mean, 0.5 * (cov + cov.T))

    def marginals(self, index=None):
        """Means and variances of ``f`` at the data points ``index`` (all when None), each shape (len,)."""
        if index is None and self._marginals is not None:
            return self._marginals
        if index is not None and self._marginals is not None:
            return self._marginals[0][index], self._marginals[1][index]
        n = self._block.n_points if index is None else len(index)
        mean, var = np.empty(n), np.empty(n)
        for positions, phi, d in self._block.feature_blocks(index):
            mean[positions], var[positions] = marginals(phi, self.v_mean, self.precision_chol)
            var[positions] += d
        mean += self._block.mean_value
        if index is None:
            self._marginals = (mean, var)
        return mean, var

    @property
    def mean(self):
        return self.marginals()[0]

    @property
    def var(self):
        return self.marginals()[1]

    @property
    def batch_shape(self):
        return (self._block.n_points,)

    @property
    def n_features(self):
        """int: number of input columns ``D`` that :meth:`predict` expects."""
        return self._block.Z.shape[1]

    def predict(self, X_new, full_cov=False):
        """Predictive distribution of ``f`` at new inputs.

        Parameters
        ----------
        X_new : array_like, shape (P, D) or (P,)
        full_cov : bool
            Return the (P, P) predictive covariance instead of the variances.

        Returns
        -------
        mean : ndarray, shape (P,)
        var : ndarray, shape (P,), or (P, P) with ``full_cov``
        """
        block = self._block
        X_new = as_inputs(X_new, "X_new", block.Z.shape[1])
        phi, d = features(block.kernel, X_new, block.Z, block.inducing_chol)
        mean = phi @ self.v_mean + block.mean_value
        whitened = solve_triangular(self.precision_chol, phi.T, lower=True, check_finite=False)
        if full_cov:
            cov = block.kernel(X_new) - phi @ phi.T + whitened.T @ whitened
            return mean, 0.5 * (cov + cov.T)
        return mean, np.maximum(d + np.einsum("mp,mp->p", whitened, whitened), 0.0)

    def _draws(self, rng, n, inputs):
        """Joint draws from the covariance over the block's inputs and ``inputs`` (:class:`JointDraws`;
        ``O(N^2)`` memory, ``O(N^3)`` time)."""
        return stacked_gaussian_draws(self, self._block.X, rng, n, inputs)

    def predictive_state(self):
        """What a fit file keeps so that a loaded fit predicts: ``("sparse_gp", spec, arrays)``, or None."""
        block = self._block
        arrays = {"X": block.X, "Z": block.Z, "mean": np.asarray(block.mean_value),
                  "jitter": np.asarray(block.jitter), "message/0": self.message[0], "message/1": self.message[1]}
        spec = kernel_layout(block.kernel, "kernel/", arrays)
        return None if spec is None else ("sparse_gp", {"kernel": spec, "repr": repr(block.kernel)}, arrays)

    def __repr__(self):
        return f"SparseGPPosterior(n={self._block.n_points}, m={self._block.n_inducing})"


class InducingView(PointValues):
    """The points of a sparse GP as its factor sees them: per-point sites on ``f_i``, messages in ``v``-space."""

    def __init__(self, block, n_data):
        super().__init__()
        self.block, self.n_data = block, n_data

    def marginals(self, q, index):
        return q.marginals(index)

    def marginal_rows(self, q):
        """``rows -> (means, variances)`` of the points ``rows`` (a slice), ``L^{-1}`` formed once.

        The site factor runs the likelihood on earlier rows while later rows' marginals are formed.
        """
        block = self.block
        inverse = precision_inverse(q.precision_chol)

        def rows_marginals(rows):
            phi, d = block.feature_rows(rows)
            mean, var = marginals(phi, q.v_mean, q.precision_chol, inverse)
            return mean + block.mean_value, var + d

        return rows_marginals

    def message(self, sites, index):
        gamma, pi = sites
        shifted = gamma - pi * self.block.mean_value if self.block.mean_value else gamma
        h, J = None, None
        for positions, phi, _ in self.block.feature_blocks(index):
            part_h, part_J = gram_and_projection(phi, pi[positions], shifted[positions])
            h, J = (part_h, part_J) if h is None else (h + part_h, J + part_J)
        return h, J
