"""efvi.inference: the conjugate-computation VI (CVI) engine.

Build a :class:`Model` from latent blocks (exponential-family priors or
structured Gaussian priors) and factors, then call :meth:`Model.fit`.  Every
factor keeps one site per data point; a block's posterior is its prior plus
the sum of its sites (Khan and Nielsen, 2018, eq. 21).  Conjugate factors give
VMP with ``rho = 1``; minibatches give SVI.

Public names: the model and its result (:class:`Model`, :class:`FitResult`,
:class:`Marginals`, :class:`FitFileError`, :class:`IterationInfo`), step-size
rules, warnings and :class:`DivergenceError`, the ready-made conjugate and generic factors, and what a
new factor or structured prior is written against (:class:`Factor`,
:class:`FactorEval`, :class:`SiteView`, :class:`GaussianSiteView`,
:class:`Block`, :class:`InvalidPosterior`).  The engine's own modules
(underscore names) are private.
"""

from . import baselines, bbvi, ngvi, vpng
from .blocks import Block, InvalidPosterior
from .callbacks import IterationInfo
from .divergence import DivergenceError
from .conjugate import ARDPrior, BinomialBeta, CategoricalDirichlet, GaussianMixture, GaussianWishart, PoissonGamma
from .factor import Factor, FactorEval, GaussianSiteView, SiteView
from ._fitfile import FitFileError
from .generic import Enumerated, ExpectedLogFactor, MonteCarloFactor
from .model import Model
from .result import FitResult, Marginals, PriorNotSupportedError
from .steps import Adaptive, Decaying, Fixed, StepRule
from .warnings import ConvergenceWarning, StepBackoffWarning

__all__ = [
    "baselines", "bbvi", "ngvi", "vpng", "PriorNotSupportedError",
    "Model", "FitResult", "Marginals", "Factor", "FactorEval", "SiteView", "GaussianSiteView", "Block",
    "InvalidPosterior", "IterationInfo", "FitFileError", "Adaptive", "Decaying", "Fixed", "StepRule",
    "ConvergenceWarning", "StepBackoffWarning", "DivergenceError",
    "ARDPrior", "BinomialBeta", "CategoricalDirichlet", "GaussianMixture", "GaussianWishart", "PoissonGamma",
    "Enumerated", "ExpectedLogFactor", "MonteCarloFactor",
]
