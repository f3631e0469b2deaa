"""Covariance functions for Gaussian-process priors.

Kernels are immutable objects holding positive hyperparameters; they evaluate
kernel matrices on inputs of shape ``(N, D)`` (or ``(N,)``), expose their
hyperparameters on the log scale for optimisation (``log_params``,
``param_names``, ``with_log_params``), give autograd-differentiable matrix
functions (``matrix_fn``), and, for kernels of time, a closed-form
state-space form (``state_space``, ``discretise``, ``discretise_fn``,
``stationary_cov_fn``) used by Markov GPs.  See ``docs/kernels.md`` for the
table of kernels.

>>> from efvi.models.gp import kernels
>>> k = kernels.Matern32(lengthscale=2.0) + kernels.White(variance=0.1)
>>> k.param_names
('k1.lengthscale', 'k1.variance', 'k2.variance')
"""

from ._base import Kernel
from .combination import Product, Sum
from .constant import Constant, White
from .linear import Linear
from .matern import Matern12, Matern32, Matern52
from .periodic import Periodic
from .stationary import RBF, Stationary
from .statespace import StateSpace

__all__ = [
    "Kernel",
    "Stationary",
    "RBF",
    "Matern12",
    "Matern32",
    "Matern52",
    "Periodic",
    "Linear",
    "Constant",
    "White",
    "Sum",
    "Product",
    "StateSpace",
]
