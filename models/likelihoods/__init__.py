r"""Likelihoods p(y | a) of one observation given a scalar Gaussian latent a.

In a GLM, a Gaussian process and a state-space model, data point i sees the
latent only through :math:`a_i \sim \mathcal N(m_i, v_i)`.  Every likelihood
here returns :math:`\mathbb E[\log p(y_i \mid a_i)]` and its derivatives in
:math:`m_i` and :math:`v_i` (``variational_expectations``), from which the
engine builds the 1-D Gaussian site :math:`\pi_i = -2\,\partial_v E_i`,
:math:`\gamma_i = \partial_m E_i + \pi_i m_i`; plus predictive moments and log
densities.  A likelihood is a distribution with a link
(``Bernoulli(link="probit")``, ``Poisson(link="softplus")``; :mod:`._link`),
compiled with numba: closed forms where they exist (Gaussian, Poisson,
Gamma/Exponential with the log link), one compiled Gauss-Hermite kernel
otherwise.  ``Custom(log_prob)`` takes any elementwise autograd.numpy log
density instead.  The table of distributions and links is in
``docs/likelihoods.md``.
"""

from . import link_cloglog, link_log, link_logit, link_probit, link_softplus  # noqa: F401  (register the links)
from ._base import Likelihood
from ._link import LINKS
from ._quadrature import DEFAULT_N_POINTS, gauss_hermite
from .aliases import BernoulliLogit, BernoulliProbit, BinomialLogit, GammaLogLink
from .bernoulli import Bernoulli
from .binomial import Binomial
from .custom import Custom
from .exponential import Exponential
from .gamma import Gamma
from .gaussian import Gaussian, gaussian_expectations, gaussian_precision_site
from .negative_binomial import NegativeBinomial
from .poisson import Poisson
from .spec import from_spec
from .student_t import StudentT

__all__ = [
    "Likelihood", "DEFAULT_N_POINTS", "gauss_hermite", "LINKS",
    "Gaussian", "gaussian_expectations", "gaussian_precision_site",
    "Bernoulli", "Binomial", "Poisson", "NegativeBinomial", "Gamma", "Exponential", "StudentT", "Custom",
    "BernoulliLogit", "BernoulliProbit", "BinomialLogit", "GammaLogLink", "from_spec",
]
