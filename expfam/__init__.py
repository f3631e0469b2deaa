"""expfam: exponential families as pure maths on parameter tuples.

Every family registers itself with :func:`register`; look one up by name with
:func:`get` and list them with :func:`names`.  A family states its
log-partition, statistics, base measure, support and parameter space; the base
class :class:`ExponentialFamily` derives the rest (``docs/add_a_family.md``).
Conventions (natural parameters, sufficient statistics, inner product) are
stated in each family's docstring and in ``docs/expfam.md``.
"""

from ._base import ExponentialFamily
from ._newton import ConvergenceError
from ._params import flatten, inner, tree_add, tree_lerp, tree_scale, tree_sub, unflatten
from ._registry import get, names, register
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .diagonal_gaussian import DiagonalGaussian
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .gaussian import Gaussian
from .inverse_gamma import InverseGamma
from .normal_wishart import NormalWishart
from .poisson import Poisson
from .wishart import Wishart

__all__ = [
    "ExponentialFamily", "ConvergenceError", "get", "names", "register",
    "flatten", "unflatten", "inner", "tree_add", "tree_sub", "tree_scale", "tree_lerp",
    "Bernoulli", "Beta", "Categorical", "DiagonalGaussian", "Dirichlet", "Exponential", "Gamma",
    "Gaussian", "InverseGamma", "NormalWishart", "Poisson", "Wishart",
]
