r"""Likelihoods p(y | a) of one observation given a scalar Gaussian latent a.

In a GLM, a Gaussian process and a state-space model, data point i sees the
latent only through :math:`a_i \sim \mathcal N(m_i, v_i)`.  Every likelihood
here returns :math:`\mathbb E[\log p(y_i \mid a_i)]` and its derivatives in
:math:`m_i` and :math:`v_i` (``variational_expectations``), from which the
engine builds the 1-D Gaussian site :math:`\pi_i = -2\,\partial_v E_i`,
:math:`\gamma_i = \partial_m E_i + \pi_i m_i`; plus predictive moments and log
densities.  Closed forms where they exist (Gaussian, Poisson, Gamma/Exponential
with log link), one compiled Gauss-Hermite kernel otherwise.  The table of
parameterisations is in ``docs/likelihoods.md``.
"""

from ._base import Likelihood
from ._quadrature import DEFAULT_N_POINTS, gauss_hermite
from .bernoulli_logit import BernoulliLogit
from .bernoulli_probit import BernoulliProbit
from .binomial_logit import BinomialLogit
from .exponential import Exponential
from .gamma_log_link import GammaLogLink
from .gaussian import Gaussian, gaussian_expectations, gaussian_precision_site
from .negative_binomial import NegativeBinomial
from .poisson import Poisson
from .student_t import StudentT

__all__ = [
    "Likelihood", "DEFAULT_N_POINTS", "gauss_hermite",
    "Gaussian", "gaussian_expectations", "gaussian_precision_site",
    "BernoulliLogit", "BernoulliProbit", "BinomialLogit", "Poisson", "NegativeBinomial",
    "StudentT", "GammaLogLink", "Exponential",
]
