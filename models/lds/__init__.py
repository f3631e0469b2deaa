"""Linear-Gaussian state-space priors (``LDS``, ``MarkovGP``) and their compiled Kalman smoother.

``kalman_smoother`` is the conjugate computation of a state-space prior;
``smoothed_marginals`` is its lean form for site updates; ``log_normaliser_grad`` gives hyperparameter gradients by
Fisher's identity.
"""

from .._lazy import lazy_names
from .fisher_identity import expected_log_prior, log_normaliser_grad
from .prior import LDS, MarkovGP, StateSpacePosterior, StateSpacePrior
from .smoother import (
    FilterResult, MarginalsResult, SmootherResult, STATUS_INVALID_SITE, STATUS_OK, STATUS_SINGULAR_PREDICTION,
    kalman_filter, kalman_smoother, smoothed_marginals,
)

__all__ = [
    "LDS", "MarkovGP", "MarkovGPRegressor", "StateSpacePrior", "StateSpacePosterior",
    "kalman_filter", "kalman_smoother", "smoothed_marginals", "FilterResult", "SmootherResult",
    "MarginalsResult", "STATUS_OK", "STATUS_INVALID_SITE", "STATUS_SINGULAR_PREDICTION",
    "expected_log_prior", "log_normaliser_grad",
]

# the estimators import scikit-learn: on first use only
__getattr__ = lazy_names(__name__, {"MarkovGPRegressor": "estimator"})
