"""efvi: variational inference with exponential families.

efvi fits approximate posteriors by conjugate-computation variational
inference (CVI; Khan and Lin, 2017): natural-gradient VI in which every
likelihood term keeps a local exponential-family *site*, and the posterior is
the prior times the product of sites, computed in closed form.

Subpackages
-----------
efvi.expfam
    Exponential families: maps between parameters, Fisher information, KL,
    entropy, sampling, and a registry (``efvi.expfam.get("gamma")``).
efvi.inference
    The engine: ``Model(latents, factors).fit()``, step sizes, minibatches,
    conjugate and generic factors, saved and resumed fits.
efvi.models
    Likelihoods, GLMs, Gaussian processes, state-space models (Markov GPs).

The everyday names are available here: ``efvi.Model``, the families
(``efvi.Gaussian``, ``efvi.Gamma``, ...), ``efvi.glm``, ``efvi.gp``,
``efvi.lds``, ``efvi.nn``, ``efvi.likelihoods`` and ``efvi.Observe``.

Optional extras: ``efvi.plot`` draws fit results (ELBO traces, sites,
posterior bands, calibration; ``pip install efvi[plot]``) and
``efvi.to_inference_data`` exports posterior samples to ArviZ
(``pip install efvi[arviz]``).  Neither imports its dependency until used.
"""

# In the installed distribution this file is efvi/__init__.py: the repository's top-level
# folders expfam/, inference/ and models/ become efvi.expfam, efvi.inference and efvi.models
# (setuptools package_dir).  The imports below are absolute so that they name efvi whatever
# name this file is imported under (a test runner may import the checkout's root as a package).
__version__ = "0.1.0"

import sys

from efvi import expfam, inference, models
from efvi.expfam import (Bernoulli, Beta, Categorical, DiagonalGaussian, Dirichlet, Gamma, Gaussian,
                         NormalWishart, Wishart)
from efvi.inference import ConvergenceWarning, FitResult, Model
from efvi.models import Observe, glm, gp, lds, likelihoods, nn
from efvi.inference import plot
from efvi.inference.inference_data import to_inference_data

sys.modules.setdefault(__name__ + ".plot", plot)   # so that ``import efvi.plot`` works too, like os.path
del sys                                             # dir(efvi) lists efvi's names only

__all__ = [
    "__version__", "expfam", "inference", "models",
    "Model", "FitResult", "ConvergenceWarning",
    "Bernoulli", "Beta", "Categorical", "DiagonalGaussian", "Dirichlet", "Gamma", "Gaussian",
    "NormalWishart", "Wishart",
    "Observe", "glm", "gp", "lds", "nn", "likelihoods", "plot", "to_inference_data",
]
