r"""The bivariate toy of Tang and Ranganath, section 3: where the q-Fisher fails and :math:`F_r` does not.

Model (their eq. 2): :math:`n` points from a bivariate Gaussian with unknown
mean and a fixed, nearly singular covariance,

.. math:: p(x_{1:n}, \mu) = \mathcal N(\mu; 0, I_2) \prod_{i=1}^n
          \mathcal N(x_i; \mu, \Sigma), \qquad
          \Sigma = \begin{pmatrix} 1 & 1 - \varepsilon \\ 1 - \varepsilon & 1 \end{pmatrix},

with the mean-field family :math:`q(\mu; \lambda) = \mathcal N(\lambda_1,
\sigma^2) \mathcal N(\lambda_2, \sigma^2)`, :math:`\sigma` fixed.

**The ELBO and its gradient (derived here; the paper's printed gradient has a
typo).**  With :math:`S = \sum_i x_i`,

.. math::
    \mathcal L(\lambda)
    &= \sum_i \mathbb E_q \log \mathcal N(x_i; \mu, \Sigma)
       + \mathbb E_q \log \mathcal N(\mu; 0, I) + \mathbb H[q] \\
    &= -\tfrac12 \sum_i (x_i - \lambda)^\top \Sigma^{-1} (x_i - \lambda)
       - \tfrac{n \sigma^2}{2} \operatorname{tr} \Sigma^{-1}
       - \tfrac n2 \log |\Sigma| - n \log 2\pi
       - \tfrac12 (\lambda^\top \lambda + 2 \sigma^2) + 1 + 2 \log \sigma ,

because :math:`\mathbb E_q[(x - \mu)^\top P (x - \mu)] = (x - \lambda)^\top P
(x - \lambda) + \sigma^2 \operatorname{tr} P` and the entropy of :math:`q` is
:math:`1 + \log 2\pi + 2 \log \sigma` (the prior's and the entropy's
:math:`\log 2\pi` cancel).  Hence

.. math:: \nabla_\lambda \mathcal L = -\lambda + \Sigma^{-1} (S - n \lambda),
          \qquad \nabla^2_\lambda \mathcal L = -(I + n \Sigma^{-1}).

The paper prints :math:`-\lambda + \frac1n \Sigma^{-1}(-\lambda + S)`: the
:math:`1/n` should not be there and the :math:`\lambda` inside the bracket is
:math:`n \lambda`.  The printed form vanishes at :math:`(n \Sigma + I)^{-1} S`,
not at the optimum the paper states; ours vanishes at
:math:`\lambda^\star = (I + n \Sigma^{-1})^{-1} \Sigma^{-1} S = (n I + \Sigma)^{-1} S`,
the exact posterior mean :math:`\mu'` of section 3.

**Three directions.**  The q-Fisher of :math:`q` in :math:`\lambda` is
:math:`I / \sigma^2`, so the q-natural gradient :math:`\sigma^2 \nabla \mathcal L`
points where the gradient does.  The variational predictive Fisher is
:math:`F_r = (\Sigma + \sigma^2 I)^{-1}` (Theorem 1), so VPNG steps along
:math:`(\Sigma + \sigma^2 I) \nabla \mathcal L`.  The exact direction to the
optimum is the Newton direction :math:`(I + n \Sigma^{-1})^{-1} \nabla \mathcal L
= \lambda^\star - \lambda`; VPNG's preconditioner :math:`\Sigma + \sigma^2 I`
differs from :math:`n \times` Newton's :math:`(I/n + \Sigma^{-1})^{-1}` only by
terms of order :math:`\sigma^2` and :math:`1/n`, so for small :math:`\sigma` it
points almost straight at :math:`\lambda^\star`, whatever :math:`\varepsilon`.
"""

import autograd.numpy as anp
import numpy as np

from ...expfam.checks import as_float, check_integer
from ._checks import check_real
from .linear_gaussian import linear_gaussian_fisher


def toy_covariance(epsilon):
    r""":math:`\Sigma` of the toy: unit variances, covariance :math:`1 - \varepsilon`, for ``epsilon`` in (0, 2)."""
    epsilon = check_real(epsilon, "epsilon", low=0.0, high=2.0, expected="a float in (0, 2) (Sigma positive definite)")
    return np.array([[1.0, 1.0 - epsilon], [1.0 - epsilon, 1.0]])


def cosine(first, second):
    """Cosine of the angle between two vectors (nan if either is zero)."""
    first, second = np.ravel(first), np.ravel(second)
    norm = np.linalg.norm(first) * np.linalg.norm(second)
    return float(first @ second / norm) if norm > 0 else float("nan")


class BivariateToy:
    r"""The model of eq. 2 of Tang and Ranganath with its data and the mean-field width :math:`\sigma`.

    Parameters
    ----------
    data : array_like, shape (n, 2)
        The observations :math:`x_{1:n}`.
    epsilon : float
        In (0, 2); :math:`\Sigma` has eigenvalues :math:`2 - \varepsilon` (along
        (1, 1)) and :math:`\varepsilon` (along (1, -1)).
    sigma : float
        The fixed standard deviation of each factor of :math:`q`; positive.
    """

    def __init__(self, data, epsilon, sigma):
        data = as_float(data, "data")
        if data.ndim != 2 or data.shape[1] != 2 or data.shape[0] == 0:
            raise ValueError(f"data must have shape (n, 2) with n >= 1; got shape {data.shape}")
        self.data = data
        self.epsilon = float(epsilon)
        self.likelihood_cov = toy_covariance(epsilon)
        self.sigma = check_real(sigma, "sigma", low=0.0, expected="a positive finite float")

    @classmethod
    def simulate(cls, n=20, epsilon=0.01, sigma=0.05, true_mean=(1.0, 0.5), seed=0):
        """Draw ``n`` points from :math:`\\mathcal N(\\text{true\\_mean}, \\Sigma)`."""
        n = check_integer(n, "n", minimum=1)
        true_mean = as_float(true_mean, "true_mean")
        if true_mean.shape != (2,):
            raise ValueError(f"true_mean must have shape (2,); got shape {true_mean.shape}")
        rng = np.random.default_rng(seed)
        return cls(rng.multivariate_normal(true_mean, toy_covariance(epsilon), size=n), epsilon, sigma)

    @property
    def n(self):
        return self.data.shape[0]

    def _mean(self, mean):
        mean = as_float(mean, "mean")
        if mean.shape != (2,):
            raise ValueError(f"mean must have shape (2,); got shape {mean.shape}")
        return mean

    def elbo(self, mean):
        """The exact ELBO at variational mean ``mean`` (2,); autograd-safe in ``mean``."""
        if np.shape(mean) != (2,):
            raise ValueError(f"mean must have shape (2,); got shape {np.shape(mean)}")
        precision = np.linalg.inv(self.likelihood_cov)
        residual = self.data - mean
        n, variance = self.n, self.sigma ** 2
        return (-0.5 * anp.sum((residual @ precision) * residual)
                - 0.5 * n * variance * np.trace(precision)
                - 0.5 * n * np.linalg.slogdet(self.likelihood_cov)[1] - n * np.log(2 * np.pi)
                - 0.5 * (anp.sum(mean ** 2) + 2 * variance) + 1.0 + 2.0 * np.log(self.sigma))

    def elbo_gradient(self, mean):
        r"""The corrected gradient :math:`-\lambda + \Sigma^{-1}(S - n\lambda)`, shape (2,)."""
        mean = self._mean(mean)
        return -mean + np.linalg.solve(self.likelihood_cov, self.data.sum(axis=0) - self.n * mean)

    def elbo_hessian(self):
        r""":math:`-(I + n \Sigma^{-1})`, shape (2, 2)."""
        return -(np.eye(2) + self.n * np.linalg.inv(self.likelihood_cov))

    def optimum(self):
        r""":math:`\lambda^\star = (n I + \Sigma)^{-1} S`, the exact posterior mean."""
        return np.linalg.solve(self.n * np.eye(2) + self.likelihood_cov, self.data.sum(axis=0))

    def q_fisher(self):
        r"""Fisher information of :math:`q` in :math:`\lambda`: :math:`I / \sigma^2`."""
        return np.eye(2) / self.sigma ** 2

    def predictive_fisher(self):
        r""":math:`F_r` from the general Gaussian-linear closed form (design :math:`I`, noise :math:`\Sigma`)."""
        return linear_gaussian_fisher(np.eye(2), self.likelihood_cov, self.sigma)

    def directions(self, mean):
        """The update directions at ``mean``: a dict of (2,) vectors.

        ``gradient``, ``q_natural`` (:math:`F_q^{-1} \\nabla`), ``vpng``
        (:math:`F_r^{-1} \\nabla`) and ``to_optimum`` (:math:`\\lambda^\\star - \\lambda`).
        """
        mean = self._mean(mean)
        gradient = self.elbo_gradient(mean)
        return {"gradient": gradient,
                "q_natural": np.linalg.solve(self.q_fisher(), gradient),
                "vpng": np.linalg.solve(self.predictive_fisher(), gradient),
                "to_optimum": self.optimum() - mean}
