"""Gaussian processes: the GP prior block, its solver, kernels and estimators."""

from . import kernels
from .estimator import GPClassifier, GPRegressor
from .prior import GP, GPPosterior

__all__ = ["kernels", "GP", "GPPosterior", "GPClassifier", "GPRegressor"]
