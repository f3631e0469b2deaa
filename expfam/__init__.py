"""expfam: exponential families as pure maths on parameter tuples.

Every family registers itself with :func:`register`; look one up by name with
:func:`get` and list them with :func:`names`.  Conventions (natural parameters,
sufficient statistics, inner product) are stated in each family's docstring and
in ``docs/expfam.md``.
"""

from ._base import ExponentialFamily
from ._params import flatten, inner, tree_add, tree_lerp, tree_scale, tree_sub, unflatten
from ._registry import get, names, register
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .diagonal_gaussian import DiagonalGaussian
from .dirichlet import Dirichlet
from .gamma import Gamma
from .gaussian import Gaussian
from .normal_wishart import NormalWishart
from .wishart import Wishart

__all__ = [
    "ExponentialFamily", "get", "names", "register",
    "flatten", "unflatten", "inner", "tree_add", "tree_sub", "tree_scale", "tree_lerp",
    "Bernoulli", "Beta", "Categorical", "DiagonalGaussian", "Dirichlet", "Gamma",
    "Gaussian", "NormalWishart", "Wishart",
]
