"""efvi models: likelihoods and structured priors on the shared Gaussian site path.

* :mod:`efvi.models.likelihoods` -- ``p(y | a)`` for a scalar Gaussian latent ``a``,
  with compiled Gauss-Hermite expectations;
* :mod:`efvi.models.glm` -- ``GLM`` factors on a Gaussian weight block, and
  scikit-learn-style estimators;
* :mod:`efvi.models.gp` -- Gaussian-process priors, kernels and estimators;
* :mod:`efvi.models.lds` -- linear-Gaussian state-space priors and Markov GPs with a
  compiled Kalman smoother;
* :mod:`efvi.models.nn` -- a multilayer perceptron with hand-written gradients and
  curvature, the model of the natural-gradient optimisers (:mod:`efvi.inference.ngvi`);
* :class:`Observe` -- a likelihood on the values of a GP or state-space block;
* :class:`GaussianSiteFactor` -- the one site factor behind both, with a
  projection (:mod:`efvi.models.projection`) saying how a point sees the latent.
"""

from . import glm, gp, lds, likelihoods, nn, projection
from .observe import Observe
from .sites import GaussianSiteFactor

__all__ = ["likelihoods", "glm", "gp", "lds", "nn", "projection", "Observe", "GaussianSiteFactor"]
