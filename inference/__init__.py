"""inference: the conjugate-computation VI (CVI) engine.

Build a :class:`Model` from latent blocks (exponential-family priors or
structured Gaussian priors) and factors, then call :meth:`Model.fit`.  Every
factor keeps one site per data point; a block's posterior is its prior plus
the sum of its sites (seed 000, eq. 21).  Conjugate factors give VMP with
``rho = 1``; minibatches give SVI.
"""

from . import baselines
from .blocks import Block, ExpFamBlock, InvalidPosterior
from .callbacks import IterationInfo
from .conjugate import BinomialBeta, CategoricalDirichlet, GaussianMixture, GaussianWishart, PoissonGamma
from .factor import Factor, FactorEval, GaussianSiteView, SiteView
from .fitfile import FitFileError
from .generic import Enumerated, ExpectedLogFactor, MonteCarloFactor
from .model import Model
from .result import FitResult, Marginals
from .steps import Adaptive, Decaying, Fixed, StepRule
from .warnings import ConvergenceWarning, StepBackoffWarning

__all__ = [
    "baselines",
    "Model", "FitResult", "Marginals", "Factor", "FactorEval", "SiteView", "GaussianSiteView", "Block", "ExpFamBlock",
    "InvalidPosterior", "IterationInfo", "FitFileError", "Adaptive", "Decaying", "Fixed", "StepRule",
    "ConvergenceWarning", "StepBackoffWarning",
    "BinomialBeta", "CategoricalDirichlet", "GaussianMixture", "GaussianWishart", "PoissonGamma",
    "Enumerated", "ExpectedLogFactor", "MonteCarloFactor",
]
