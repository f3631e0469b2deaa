"""What every efvi estimator shares: the scikit-learn base classes, input validation and the fitted check.

scikit-learn is an optional dependency (``pip install efvi[sklearn]``) of the
estimators only: the rest of efvi imports without it.  When it is missing,
the base classes below are stand-ins whose constructor raises an
``ImportError`` naming the extra, so that ``import efvi`` still works and
the first use of an estimator says what to install.

Estimators follow scikit-learn's conventions: ``__init__`` only stores its
arguments (each has a default), ``fit`` validates with :func:`check_X_y` /
:func:`check_X` (which set ``n_features_in_`` and, for a DataFrame,
``feature_names_in_``), sets trailing-underscore results and returns
``self``; a method that needs a fit raises ``NotFittedError`` before it.
"""

import numpy as np

from ._labels import binary_labels

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, DensityMixin, RegressorMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data
    HAVE_SKLEARN = True
except ImportError:                                           # pragma: no cover - exercised in a subprocess
    HAVE_SKLEARN = False

    class BaseEstimator:
        """Stand-in when scikit-learn is missing: constructing an estimator names the extra to install."""

        def __new__(cls, *args, **kwargs):
            raise ImportError(f"{cls.__name__} needs scikit-learn: pip install 'efvi[sklearn]' "
                              f"(or pip install scikit-learn>=1.6)")

    class ClassifierMixin:
        """Stand-in of scikit-learn's ClassifierMixin."""

    class RegressorMixin:
        """Stand-in of scikit-learn's RegressorMixin."""

    class DensityMixin:
        """Stand-in of scikit-learn's DensityMixin."""

    class NotFittedError(ValueError, AttributeError):
        """Stand-in of scikit-learn's NotFittedError."""

__all__ = ["BaseEstimator", "ClassifierMixin", "RegressorMixin", "DensityMixin", "NotFittedError",
           "check_X", "check_X_y", "check_labels", "binary_targets", "check_fitted", "fit_options",
           "set_fit_results"]


def check_X_y(estimator, X, y, reset=True, y_numeric=True):
    """Validate training data; sets ``n_features_in_`` (and ``feature_names_in_`` from a DataFrame).

    Returns
    -------
    X : ndarray, shape (N, D), float64
    y : ndarray, shape (N,)
        float64 when ``y_numeric``, else the labels as given.

    Raises
    ------
    ValueError
        Naming the problem: no rows or columns, NaN or inf, complex values, a
        2-D ``y``, a length mismatch, or ``y=None``.
    """
    return validate_data(estimator, X, y, reset=reset, dtype=np.float64, y_numeric=y_numeric,
                         ensure_min_samples=1, ensure_min_features=1)


def check_X(estimator, X, reset=False):
    """Validate inputs after ``fit`` (same number of features, same column names); returns float64 (M, D)."""
    return validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_min_features=1)


def check_labels(y):
    """Raise scikit-learn's "Unknown label type" ``ValueError`` for continuous targets given to a classifier."""
    check_classification_targets(y)


def binary_targets(y):
    """The two classes of ``y`` and ``y`` coded 0.0 / 1.0, see :func:`efvi.models._labels.binary_labels`.

    Continuous numeric targets raise scikit-learn's "Unknown label type" ``ValueError``;
    labels of other types get :func:`binary_labels`'s errors (None, mixed types).
    """
    if np.asarray(y).dtype.kind in "fc":
        check_labels(y)
    return binary_labels(y)


def check_fitted(estimator, attribute):
    """Raise ``NotFittedError`` (a ``ValueError``) when ``estimator`` has no ``attribute`` yet."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet: call fit first")


def set_fit_results(estimator, fit, block):
    """Set ``fit_result_``, ``posterior_`` (of ``block``), ``n_iter_``, ``converged_``, ``lower_bounds_``, ``elbo_``."""
    estimator.fit_result_ = fit
    estimator.posterior_ = fit.posterior[block]
    estimator.n_iter_ = fit.n_iter
    estimator.converged_ = fit.converged
    estimator.lower_bounds_ = fit.elbo_trace
    estimator.elbo_ = fit.elbo
    return estimator


def fit_options(estimator):
    """The keyword arguments of :meth:`efvi.inference.Model.fit` an estimator passes on (``progress`` too)."""
    return {"max_iter": estimator.max_iter, "tol": float(estimator.tol), "progress": bool(estimator.progress)}
