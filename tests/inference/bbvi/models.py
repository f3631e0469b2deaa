"""Conjugate test models with their exact ELBO as a function of the natural parameters (for autograd).

Each model gives ``init`` (the q the gradient is taken at), ``log_joint``
(a callable, and where there are several blocks also the same log joint as
``terms``), ``exact_elbo(natural)`` written with autograd.numpy (``natural``
a dict block -> natural-parameter tuple) and the exact posterior's natural
parameters where q's family contains it.
"""

import autograd.numpy as anp
import numpy as np
from autograd.scipy.special import digamma, gammaln

from efvi.expfam import DiagonalGaussian, Gamma, Gaussian

LOG_2PI = np.log(2 * np.pi)


class GaussianMean:
    """``z ~ N(0, prior_var I)``, ``y_i ~ N(z, noise_var I)``, ``z`` in R^D; q Gaussian or DiagonalGaussian."""

    def __init__(self, family=DiagonalGaussian, dim=2, n=8, prior_var=2.0, noise_var=1.5, seed=0):
        rng = np.random.default_rng(seed)
        self.y = rng.normal(1.0, 1.0, size=(n, dim))
        self.prior_var, self.noise_var, self.family = prior_var, noise_var, family
        mean, var = np.linspace(-0.5, 0.5, dim), np.linspace(0.3, 0.8, dim)
        self.init = (DiagonalGaussian.from_mean_var(mean, var) if family is DiagonalGaussian
                     else Gaussian.from_mean_cov(mean, np.diag(var) + 0.1 * (1 - np.eye(dim))))

    def log_joint(self, z):
        y = self.y
        return (-0.5 * anp.sum(z ** 2) / self.prior_var
                - 0.5 * anp.sum((y - z) ** 2) / self.noise_var)

    def exact_elbo(self, natural):
        eta1, eta2 = natural["z"]
        if self.family is DiagonalGaussian:
            var = -0.5 / eta2
            mean, trace, logdet = eta1 * var, anp.sum(var), anp.sum(anp.log(var))
        else:
            cov = anp.linalg.inv(-2.0 * 0.5 * (eta2 + anp.transpose(eta2)))
            mean = anp.dot(cov, eta1)
            trace, logdet = anp.trace(cov), anp.linalg.slogdet(cov)[1]
        n = self.y.shape[0]
        expected = (-0.5 * (anp.sum(mean ** 2) + trace) / self.prior_var
                    - 0.5 * (anp.sum((self.y - mean) ** 2) + n * trace) / self.noise_var)
        return expected + 0.5 * logdet

    def posterior_natural(self):
        n, dim = self.y.shape
        precision = 1 / self.prior_var + n / self.noise_var
        eta1 = self.y.sum(axis=0) / self.noise_var
        if self.family is DiagonalGaussian:
            return eta1, np.full(dim, -0.5 * precision)
        return eta1, -0.5 * precision * np.eye(dim)


class PoissonGamma:
    """``z ~ Gamma(a0, b0)``, ``y_i ~ Poisson(z)``; q Gamma."""

    def __init__(self, n=10, a0=2.0, b0=1.0, seed=0):
        self.y = np.random.default_rng(seed).poisson(3.0, size=n).astype(float)
        self.a0, self.b0 = a0, b0
        self.init = Gamma(4.0, 1.5)

    def log_joint(self, z):
        y = self.y
        return ((self.a0 - 1) * anp.log(z) - self.b0 * z
                + anp.sum(y * anp.log(z) - z - gammaln(y + 1)))

    def exact_elbo(self, natural):
        shape, rate = natural["z"][0] + 1.0, -natural["z"][1]
        e_log, e_z = digamma(shape) - anp.log(rate), shape / rate
        expected = ((self.a0 - 1) * e_log - self.b0 * e_z
                    + anp.sum(self.y * e_log - e_z - gammaln(self.y + 1)))
        entropy = shape - anp.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape)
        return expected + entropy

    def posterior_natural(self):
        return np.array(self.a0 - 1 + self.y.sum()), np.array(-(self.b0 + len(self.y)))


class NormalGamma:
    """Two blocks: ``mu ~ N(0, s0^2)``, ``tau ~ Gamma(a0, b0)``, ``y_i ~ N(mu, 1 / tau)``; q(mu) q(tau)."""

    def __init__(self, n=12, s0=3.0, a0=2.0, b0=2.0, seed=0):
        self.y = np.random.default_rng(seed).normal(1.0, 0.7, size=n)
        self.s0, self.a0, self.b0 = s0, a0, b0
        self.init = {"mu": DiagonalGaussian.from_mean_var([0.5], [0.2]), "tau": Gamma(5.0, 3.0)}
        self.terms = [("mu", self._log_prior_mu), ("tau", self._log_prior_tau),
                      (("mu", "tau"), self._log_lik)]

    def _log_prior_mu(self, z):
        return -0.5 * anp.sum(z["mu"] ** 2) / self.s0 ** 2

    def _log_prior_tau(self, z):
        return (self.a0 - 1) * anp.log(z["tau"]) - self.b0 * z["tau"]

    def _log_lik(self, z):
        return anp.sum(0.5 * anp.log(z["tau"]) - 0.5 * z["tau"] * (self.y - z["mu"][0]) ** 2)

    def log_joint(self, z):
        return self._log_prior_mu(z) + self._log_prior_tau(z) + self._log_lik(z)

    def exact_elbo(self, natural):
        eta1, eta2 = natural["mu"]
        var = -0.5 / eta2[0]
        mean = eta1[0] * var
        shape, rate = natural["tau"][0] + 1.0, -natural["tau"][1]
        e_log, e_tau = digamma(shape) - anp.log(rate), shape / rate
        n = len(self.y)
        expected = (-0.5 * (mean ** 2 + var) / self.s0 ** 2 + (self.a0 - 1) * e_log - self.b0 * e_tau
                    + 0.5 * n * e_log - 0.5 * e_tau * (anp.sum((self.y - mean) ** 2) + n * var))
        entropy = (0.5 * anp.log(var) + shape - anp.log(rate) + gammaln(shape)
                   + (1 - shape) * digamma(shape))
        return expected + entropy
