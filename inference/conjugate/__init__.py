"""Conjugate factors: closed-form sites, so a step with rho = 1 is exact VMP."""

from .binomial_beta import BinomialBeta
from .categorical_dirichlet import CategoricalDirichlet
from .gaussian_mixture import GaussianMixture
from .gaussian_wishart import GaussianWishart
from .poisson_gamma import PoissonGamma

__all__ = ["BinomialBeta", "CategoricalDirichlet", "GaussianMixture", "GaussianWishart", "PoissonGamma"]
