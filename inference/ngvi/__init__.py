"""efvi.inference.ngvi: Gaussian natural-gradient VI for models without conjugate structure.

One natural-gradient step (Khan and Nielsen, 2018, eqs. 16-17; :mod:`._step`)
and the optimisers derived from it, each holding a Gaussian posterior over a
model's parameter vector:

- :class:`IVON` (Shen et al., 2024; the default): reparameterisation Hessian, positivity-preserving update;
- :class:`VOGN` (Khan et al., 2018): per-example squared gradients or Gauss-Newton diagonal;
- :class:`Vadam` (Khan et al., 2018): Adam on perturbed weights;
- :class:`Vprop` (Khan et al., 2017): RMSprop on perturbed weights;
- :class:`VAN` (Khan et al., 2017): full covariance, exact Hessian or Gauss-Newton;

and, for comparison, :class:`BayesByBackprop` (Blundell et al., 2015) and the
point estimates :class:`Adam` and :class:`RMSprop`.  Models are duck-typed
(see :mod:`._base` for the protocol).  A run whose loss or parameters
explode stops with :class:`efvi.inference.DivergenceError` (one rule for
every optimiser, :mod:`efvi.inference.divergence`).
"""

from ..divergence import DivergenceError  # noqa: F401  (documented in efvi.inference)
from ._base import NonFiniteGradientError
from .adam import Adam
from .bbb import BayesByBackprop
from .ivon import IVON
from .rmsprop import RMSprop
from .van import VAN
from .vadam import Vadam
from .vogn import VOGN
from .vprop import Vprop

__all__ = ["IVON", "VOGN", "Vadam", "Vprop", "VAN", "BayesByBackprop", "Adam", "RMSprop", "NonFiniteGradientError"]
