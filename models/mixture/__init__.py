"""Mixture models: a Bayesian Gaussian mixture estimator fitted by VMP."""

from .._lazy import lazy_names

__all__ = ["BayesianGaussianMixture"]

__getattr__ = lazy_names(__name__, {"BayesianGaussianMixture": "estimator"})  # imports scikit-learn on first use
