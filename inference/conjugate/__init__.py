"""Conjugate factors: closed-form sites, so a step with rho = 1 is exact VMP."""

from .ard_prior import ARDPrior
from .binomial_beta import BinomialBeta
from .categorical_dirichlet import CategoricalDirichlet
from .gaussian_mixture import GaussianMixture
from .gaussian_wishart import GaussianWishart
from .poisson_gamma import PoissonGamma

__all__ = ["ARDPrior", "BinomialBeta", "CategoricalDirichlet", "GaussianMixture", "GaussianWishart", "PoissonGamma"]
