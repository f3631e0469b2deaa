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

Every estimator saves and loads itself without pickle, in the fit file's form
(:mod:`efvi.models._estimator_file`): ``estimator.save(path)`` and
``EstimatorClass.load(path)``.
"""

import numbers

import numpy as np

from ._labels import binary_labels
from .sites import check_weights

try:
    from sklearn.base import BaseEstimator as _SklearnBaseEstimator
    from sklearn.base import ClassifierMixin, DensityMixin, RegressorMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import validate_data
    HAVE_SKLEARN = True
except ImportError:                                           # pragma: no cover - exercised in a subprocess
    HAVE_SKLEARN = False

    class _SklearnBaseEstimator:
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



class BaseEstimator(_SklearnBaseEstimator):
    """scikit-learn's ``BaseEstimator`` with saving and loading in efvi's file format (no pickle).

    Subclasses with fitted state that is not plain arrays, numbers, labels, a
    fit, a posterior of that fit or an efvi kernel override
    :meth:`_fitted_state` and :meth:`_restore_fitted`; each checks its restored
    state in :meth:`_check_fitted_state`.
    """

    def save(self, path):
        """Write the estimator to ``path``: its parameters and, when fitted, its fitted state.

        One ``.npz`` file of arrays plus JSON metadata, in the form of
        :meth:`efvi.inference.FitResult.save` (no pickle), written to a
        temporary file beside ``path`` and renamed over it when complete.
        Read it back with ``type(self).load(path)``.

        Parameters
        ----------
        path : str or os.PathLike

        Raises
        ------
        ValueError
            Naming the parameter or fitted attribute that a file cannot hold:
            a kernel not built from :mod:`efvi.models.gp.kernels`, a ``Custom``
            likelihood or another likelihood class of your own, or any other
            object that is not numbers, strings, lists, tuples, dicts or arrays.
        """
        from ._estimator_file import save_estimator

        save_estimator(self, path)

    @classmethod
    def load(cls, path):
        """An estimator of this class read from a file of :meth:`save`, checked entry by entry.

        Nothing in the file is executed; the loaded estimator predicts bit for
        bit as the saved one did.

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        estimator
            Fitted if the saved one was.

        Raises
        ------
        efvi.inference.FitFileError
            If the file cannot be read, holds another estimator class, or any
            entry is missing, malformed, not finite or of the wrong shape; the
            message names the file and the entry.
        """
        from ._estimator_file import load_estimator

        return load_estimator(cls, path)

    def _fitted_state(self):
        """The fitted attributes to save (names ending in ``_``), by name."""
        return {name: value for name, value in vars(self).items() if name.endswith("_") and not name.startswith("_")}

    def _restore_fitted(self, state):
        """Set the fitted attributes read from a file (the inverse of :meth:`_fitted_state`)."""
        for name, value in state.items():
            setattr(self, name, value)

    def _check_fitted_state(self):
        """Raise a ValueError if restored attributes do not fit together (subclasses add their own checks)."""
        from ._estimator_file import expect_array

        if isinstance(self.n_features_in_, bool) or not isinstance(self.n_features_in_, int) \
                or self.n_features_in_ < 1:
            raise ValueError(f"n_features_in_ must be a positive integer; got {self.n_features_in_!r}")
        if hasattr(self, "feature_names_in_"):
            expect_array(self, "feature_names_in_", (self.n_features_in_,), kind="OU")


__all__ = ["BaseEstimator", "ClassifierMixin", "RegressorMixin", "DensityMixin", "NotFittedError",
           "check_X", "check_X_y", "check_labels", "binary_targets", "check_fitted", "check_sample_weight",
           "fit_options", "set_fit_results", "check_fit_results", "check_counts"]


def check_X_y(estimator, X, y, reset=True, y_numeric=True):
    """Validate training data; sets ``n_features_in_`` (and ``feature_names_in_`` from a DataFrame).

    Returns
    -------
    X : ndarray, shape (N, D), float64
    y : ndarray, shape (N,)
        Real numbers (bool, integer or float) when ``y_numeric``, else the labels as given.

    Raises
    ------
    ValueError
        Naming the problem: no rows or columns, NaN or inf, complex values, a
        2-D ``y``, a length mismatch, ``y=None``, or (``y_numeric``) a ``y``
        that is not numbers, such as strings.
    """
    if y_numeric:
        _check_numbers(estimator, y)
    return validate_data(estimator, X, y, reset=reset, dtype=np.float64, y_numeric=y_numeric,
                         ensure_min_samples=1, ensure_min_features=1)


def _check_numbers(estimator, y):
    """Raise a ValueError naming ``y`` and its first value that is not a number (a string, bytes, an object)."""
    values = np.asarray(y)
    if values.dtype.kind in "biufc":            # complex: scikit-learn's own error
        return
    for index, value in enumerate(values.flat):
        if not (value is None or isinstance(value, numbers.Number)):     # None: a missing value, NaN
            shown = value.item() if isinstance(value, np.generic) else value
            raise ValueError(f"y must hold real numbers (the targets of {type(estimator).__name__}); got "
                             f"{shown!r} at index {index} (an array of dtype {values.dtype})")


def check_X(estimator, X, reset=False):
    """Validate inputs after ``fit`` (same number of features, same column names); returns float64 (M, D)."""
    return validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_min_features=1)


def check_sample_weight(sample_weight, n_samples):
    """None, or ``sample_weight`` as a float64 vector of ``n_samples`` finite weights ``>= 0``.

    Raises
    ------
    ValueError
        Naming ``sample_weight``: another length, NaN or inf, a negative weight, non-numbers, or
        weights that are all zero (no data).
    """
    if sample_weight is None:
        return None
    weights = check_weights(sample_weight, n_samples, "sample_weight")
    if not weights.any():
        raise ValueError(f"sample_weight must not be all zero (that leaves no data); got {n_samples} zero weights")
    return weights


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


def check_fit_results(estimator):
    """Raise a ValueError unless the restored attributes of :func:`set_fit_results` are the fit's own.

    ``n_iter_``, ``converged_``, ``lower_bounds_`` and ``elbo_`` repeat what
    ``fit_result_`` holds (itself checked entry by entry when loaded), so a
    file that changed one of them (a negative iteration count, another
    ELBO) does not describe the fit.
    """
    fit = estimator.fit_result_
    check_counts(estimator)
    expected = {"n_iter_": int(fit.n_iter), "converged_": bool(fit.converged), "elbo_": float(fit.elbo)}
    for name, value in expected.items():
        got = getattr(estimator, name)
        if got != value:
            raise ValueError(f"{name} must be the fit's {value!r} (fit_result_); got {got!r}")
    if not np.array_equal(np.asarray(estimator.lower_bounds_, dtype=float), np.asarray(fit.elbo_trace, dtype=float)):
        raise ValueError("lower_bounds_ must be the fit's ELBO trace (fit_result_.elbo_trace)")


def check_counts(estimator, n_iter_minimum=0):
    """Raise a ValueError unless ``n_iter_`` is an integer ``>= n_iter_minimum`` and ``converged_`` (if any) a bool."""
    n_iter = estimator.n_iter_
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < n_iter_minimum:
        raise ValueError(f"n_iter_ must be an integer >= {n_iter_minimum}; got {n_iter!r}")
    if hasattr(estimator, "converged_") and not isinstance(estimator.converged_, bool):
        raise ValueError(f"converged_ must be True or False; got {estimator.converged_!r}")


def fit_options(estimator):
    """The keyword arguments of :meth:`efvi.inference.Model.fit` an estimator passes on (``progress`` too)."""
    return {"max_iter": estimator.max_iter, "tol": float(estimator.tol), "progress": bool(estimator.progress)}
