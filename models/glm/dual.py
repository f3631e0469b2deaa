r"""The GLM's dual route: Bayesian linear regression through the N x N Gram matrix when N < D.

With a Gaussian prior :math:`w \sim N(m_0, S_0)` the points see the weights only
through :math:`a = X w \sim N(X m_0, K)`, :math:`K = X S_0 X^T` (N x N).  The
sites act on :math:`a`, so the posterior of :math:`a` is GP regression with the
"kernel" :math:`K` (:func:`efvi.models.gp.solver.site_posterior`: one N x N
factorisation), and that of the weights follows from it without any D x D
factorisation (:math:`q(w \mid a) = p(w \mid a)` because the data enter through
:math:`a` alone):

.. math:: E[w] = m_0 + S_0 X^T \alpha, \qquad
          \mathrm{Cov}[w] = S_0 - S_0 X^T W X S_0,

with :math:`\alpha = K^{-1}(E[a] - X m_0)` and :math:`W = K^{-1} - K^{-1}
\mathrm{Cov}[a] K^{-1}` from the GP solver.  ``KL(q(w) || p(w)) = KL(q(a) || p(a))``
for the same reason, so the ELBO is the GP's.  An iteration costs
:math:`O(N^2 D + N^3)` instead of the primal :math:`O(N D^2 + D^3)`; the
covariance is formed (``D^2 N``) only when asked for.
"""

import numpy as np

from ...expfam import Gaussian
from ...expfam.checks import as_float
from ...inference import Block
from ...inference.result import register_rebuilder
from ..gp.solver import site_posterior
from ..sites import site_divergence


class DualWeights(Block):
    """A Gaussian weight block observed through the rows of ``X`` (N < D), solved in the N-space.

    Built by :class:`efvi.models.glm.GLM` when it is the only factor on a full
    Gaussian block and has fewer rows than columns; the user writes the model
    as usual.

    Parameters
    ----------
    name : str
    prior : efvi.expfam.Gaussian
        The weights' prior, batch shape ().
    X : ndarray, shape (N, D)
    """

    family = Gaussian

    def __init__(self, name, prior, X):
        self.name, self.prior, self.X = name, prior, X
        self.n_points = X.shape[0]
        precision = prior.precision
        diagonal = np.count_nonzero(precision - np.diag(np.diag(precision))) == 0
        # a diagonal prior (the usual isotropic one) never forms a D x D covariance
        self._prior_var = 1.0 / np.diag(precision) if diagonal else None
        self._cov_x = self.prior_cov_times(X.T)                          # S_0 X^T, (D, N)
        K = X @ self._cov_x
        self.K = 0.5 * (K + K.T)
        self.prior_mean = (prior.natural[0] * self._prior_var if self._prior_var is not None else prior.mean)
        self.shift = X @ self.prior_mean                                  # E[a] under the prior

    def prior_cov_times(self, matrix):
        """``S_0 @ matrix`` for a (D, M) matrix."""
        if self._prior_var is not None:
            return self._prior_var[:, None] * matrix
        return self.prior.cov @ matrix

    def prior_var(self):
        """``diag(S_0)``, shape (D,)."""
        return self._prior_var if self._prior_var is not None else np.diag(self.prior.cov).copy()

    def zero_message(self):
        return (np.zeros(self.n_points), np.zeros(self.n_points))

    def posterior(self, message):
        natural_mean, precision = message
        # sites on a = X m_0 + g  ->  sites on g with natural mean gamma - pi * X m_0
        solved = site_posterior(self.K, natural_mean - precision * self.shift, precision)
        return DualPosterior(self, solved, natural_mean, precision)

    def kl(self, q):
        return q._solved.kl

    def divergence(self, q, other):
        return site_divergence(q.points, other.points)


class _Points:
    """The marginals of ``a = X w`` and the sites on them (what the Jeffreys divergence reads)."""

    def __init__(self, mean, var, natural_mean, precision):
        self.mean, self.var, self.natural_mean, self.precision = mean, var, natural_mean, precision


class DualPosterior:
    """Posterior of the weights from the dual route.

    Attributes
    ----------
    mean : ndarray, shape (D,)
    points : object with ``mean``, ``var`` (the marginals of ``a_i = x_i^T w``, each (N,)) and the sites
    log_normaliser : float
    """

    def __init__(self, block, solved, natural_mean, precision):
        self._block, self._solved = block, solved
        self.mean = block.prior_mean + block._cov_x @ solved.alpha
        self.points = _Points(solved.mean + block.shift, solved.var, natural_mean, precision)
        self.log_normaliser = solved.log_normaliser
        self._cov = None

    @property
    def batch_shape(self):
        return ()

    @property
    def cov(self):
        """Covariance of the weights, shape (D, D): ``S_0 - S_0 X^T W X S_0``, formed on first use."""
        if self._cov is None:
            block = self._block
            eye = np.eye(self.mean.shape[0])
            cov = block.prior_cov_times(eye) - block._cov_x @ self._solved.w_matrix() @ block._cov_x.T
            self._cov = 0.5 * (cov + cov.T)
        return self._cov

    @property
    def var(self):
        """Marginal variances of the weights, shape (D,), without forming the covariance."""
        cov_x = self._block._cov_x
        return self._block.prior_var() - np.einsum("dn,nm,dm->d", cov_x, self._solved.w_matrix(), cov_x)

    def to_gaussian(self):
        """The same posterior as an :class:`efvi.expfam.Gaussian` (forms and factorises the D x D covariance)."""
        return Gaussian.from_mean_cov(self.mean, self.cov)

    def predict(self, X_new):
        """Mean and variance of ``x^T w`` at new rows ``X_new`` (M, D), each shape (M,), by the N x N solve."""
        X_new = as_float(X_new, "X_new", ndim_min=2)
        if X_new.ndim != 2 or X_new.shape[1] != self.mean.shape[0]:
            raise ValueError(f"X_new must have shape (M, {self.mean.shape[0]}); got {X_new.shape}")
        cov_new = self._block.prior_cov_times(X_new.T)                  # S_0 x_new^T, (D, M)
        cross = self._block.X @ cov_new                                    # X S_0 x_new^T, (N, M)
        prior_var = np.einsum("md,dm->m", X_new, cov_new)
        return X_new @ self.mean, np.maximum(prior_var - self._solved.predictive_var_reduction(cross), 0.0)

    def predictive_state(self):
        """What a fit file keeps so that a loaded fit predicts: ``("glm_dual", {}, arrays)``.

        The rows ``X``, the prior's natural parameters and the summed sites;
        :func:`_rebuild_dual` solves again from them, exactly.
        """
        block = self._block
        natural_mean, precision = block.prior.natural
        return "glm_dual", {}, {"X": block.X, "prior_natural_mean": natural_mean, "prior_precision_half": precision,
                                "natural_mean": self.points.natural_mean, "precision": self.points.precision}

    def __repr__(self):
        return f"DualPosterior(D={self.mean.shape[0]}, N={self.points.mean.shape[0]})"


def _rebuild_dual(spec, array, name):
    if spec != {}:
        raise ValueError(f"the dual route's spec must be empty; got {spec!r}"[:300])
    prior = Gaussian.from_natural((array("prior_natural_mean"), array("prior_precision_half")))
    return DualWeights(name, prior, array("X")).posterior((array("natural_mean"), array("precision")))


register_rebuilder("glm_dual", _rebuild_dual)
