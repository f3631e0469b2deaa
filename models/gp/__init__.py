"""Gaussian processes: the GP prior block, its solver, kernels and estimators."""

from .._lazy import lazy_names
from . import kernels
from .prior import GP, GPPosterior
from .sparse import SparseGP, SparseGPPosterior

__all__ = ["kernels", "GP", "GPPosterior", "SparseGP", "SparseGPPosterior", "GPClassifier", "GPRegressor"]

# the estimators import scikit-learn: on first use only
__getattr__ = lazy_names(__name__, {"GPClassifier": "estimator", "GPRegressor": "estimator"})
