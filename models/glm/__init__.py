"""Generalised linear models: ``a_i = x_i^T w`` with a Gaussian (or diagonal Gaussian) weight block."""

from .._lazy import lazy_names
from .factor import GLM
from . import distributed  # noqa: F401  (registers DaskGLM with GLM; imports no Dask)
from .laplace import laplace
from .predict import predict_latent
from .rows import Rows

__all__ = ["GLM", "BayesianGLM", "BayesianLogisticRegression", "laplace", "Rows", "predict_latent"]

# the estimators import scikit-learn: on first use only
__getattr__ = lazy_names(__name__, {"BayesianGLM": "estimator", "BayesianLogisticRegression": "estimator"})
