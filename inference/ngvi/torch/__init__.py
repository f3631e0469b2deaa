"""efvi.inference.ngvi.torch: efvi's natural-gradient optimisers as ``torch.optim.Optimizer`` subclasses.

Needs the optional extra ``efvi[torch]``; ``import efvi`` never imports torch.
The per-parameter maths is that of the numpy optimisers of
:mod:`efvi.inference.ngvi` (one formulation, shared), so given the same
random draws both follow the same trajectory.  The errors they raise,
:class:`~efvi.inference.ngvi.NonFiniteGradientError` and
:class:`~efvi.inference.DivergenceError`, are those of :mod:`efvi.inference`
(importable from here too).
"""

from ...divergence import DivergenceError  # noqa: F401  (documented in efvi.inference)
from .._base import NonFiniteGradientError  # noqa: F401  (documented in efvi.inference.ngvi)
from ._base import predict
from .ivon import IVON
from .vadam import Vadam, Vprop
from .vogn import VOGN

__all__ = ["IVON", "VOGN", "Vadam", "Vprop", "predict"]
