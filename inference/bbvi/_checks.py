"""The checks of black-box VI's arguments, shared by :func:`efvi.inference.bbvi.fit` and the file reader.

Each raises a ValueError naming the argument, what was expected and what came.
"""

import numbers

import numpy as np

from ...expfam import DiagonalGaussian, ExponentialFamily, Gaussian
from ...expfam.checks import check_integer
from . import _estimators
from ._joint import SINGLE_BLOCK, LogJoint

ESTIMATORS = ("score", "reparam")
"""The ``estimator=`` names."""

REPARAMETERISABLE = (Gaussian, DiagonalGaussian)
"""The block families the reparameterisation estimator takes."""


def _check(log_joint, init, estimator, control_variate, n_samples, vectorized):
    if isinstance(init, ExponentialFamily):
        posterior, single = {SINGLE_BLOCK: init}, True
    elif isinstance(init, dict) and init:
        for name, q in init.items():
            if not isinstance(name, str) or not isinstance(q, ExponentialFamily):
                raise ValueError(f"init must map block names (str) to expfam distributions; got "
                                 f"{name!r}: {type(q).__name__}")
        posterior, single = dict(init), False
    else:
        raise ValueError(f"init must be an expfam distribution or a non-empty dict of them; got "
                         f"{type(init).__name__}")
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(map(repr, ESTIMATORS))}; got {estimator!r}")
    if estimator == "reparam":
        if control_variate not in (None, "none"):
            raise ValueError(f"control_variate must be None with estimator='reparam' (control variates are "
                             f"for the score function); got {control_variate!r}")
        for name, q in posterior.items():
            if type(q) not in REPARAMETERISABLE:
                raise ValueError(f"estimator='reparam' needs Gaussian or DiagonalGaussian blocks; block {name!r} "
                                 f"is {type(q).__name__}: use estimator='score'")
        control_variate = "none"
    elif control_variate is None:
        control_variate = "loo"
    elif control_variate not in _estimators.CONTROL_VARIATES:
        raise ValueError(f"control_variate must be one of "
                         f"{', '.join(map(repr, _estimators.CONTROL_VARIATES))} or None; got {control_variate!r}")
    minimum = 3 if control_variate == "optimal" else 2
    n_samples = check_integer(n_samples, "n_samples", minimum=minimum,
                              suffix=" (the control variate is estimated from the other draws)")
    if not isinstance(vectorized, (bool, np.bool_)):
        raise ValueError(f"vectorized must be True or False; got {vectorized!r}")
    terms = _check_terms(log_joint, posterior, single)
    options = {"estimator": estimator, "control_variate": control_variate, "n_samples": n_samples,
               "rao_blackwellised": not callable(log_joint)}
    return LogJoint(terms, single, bool(vectorized)), posterior, options


def _check_terms(log_joint, posterior, single):
    names = tuple(posterior)
    if callable(log_joint):
        return [(names, log_joint)]
    if single or not isinstance(log_joint, (list, tuple)) or not log_joint:
        raise ValueError(
            "log_joint must be a callable"
            + ("" if single else " or a non-empty list of (blocks, log_density) terms")
            + f"; got {type(log_joint).__name__}")
    terms = []
    for k, term in enumerate(log_joint):
        if not isinstance(term, (tuple, list)) or len(term) != 2 or not callable(term[1]):
            raise ValueError(f"log_joint[{k}] must be a pair (blocks, log_density) with log_density callable; "
                             f"got {term!r}")
        blocks = (term[0],) if isinstance(term[0], str) else tuple(term[0])
        unknown = [b for b in blocks if b not in posterior]
        if not blocks or unknown:
            raise ValueError(f"log_joint[{k}] must name blocks of init ({', '.join(map(repr, names))}); "
                             f"got {term[0]!r}")
        terms.append((blocks, term[1]))
    missing = [b for b in names if not any(b in blocks for blocks, _ in terms)]
    if missing:
        raise ValueError(f"every block of init must appear in some term of log_joint; "
                         f"{', '.join(map(repr, missing))} appear in none")
    return terms


def _check_learning_rate(learning_rate):
    if callable(learning_rate):
        def schedule(iteration):
            value = learning_rate(iteration)
            if not isinstance(value, numbers.Real) or not np.isfinite(value) or value <= 0:
                raise ValueError(f"learning_rate({iteration}) must return a finite float > 0; got {value!r}")
            return float(value)
        return schedule
    if (not isinstance(learning_rate, numbers.Real) or isinstance(learning_rate, bool)
            or not np.isfinite(learning_rate) or learning_rate <= 0):
        raise ValueError(f"learning_rate must be a finite float > 0 or a callable; got {learning_rate!r}")
    return lambda iteration: float(learning_rate)


def _check_expected(expected_log_joint):
    if expected_log_joint is not None and not callable(expected_log_joint):
        raise ValueError(f"expected_log_joint must be callable or None; got {type(expected_log_joint).__name__}")


def _check_tol(tol):
    if not isinstance(tol, numbers.Real) or isinstance(tol, bool) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite float >= 0; got {tol!r}")
    return float(tol)


def _check_warn(warn):
    if not isinstance(warn, (bool, np.bool_)):
        raise ValueError(f"warn must be True or False; got {warn!r}")
    return bool(warn)
