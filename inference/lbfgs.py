"""L-BFGS-B with efvi's tolerance convention, shared by every hyperparameter search.

A search stops when L-BFGS-B's relative objective change falls below
``ftol = 1e-3 tol`` (``tol`` the fit's relative ELBO tolerance) or its
projected gradient below ``gtol = 1e-6``.  The objective is an ELBO summed
over ``N`` points, so for large ``N`` that ``ftol`` can be below the
round-off of the objective itself: the line search then fails
(``ABNORMAL_TERMINATION_IN_LNSRCH``) at the optimum, because no step can
show a decrease that rounding does not swamp.  Such a failure counts as
converged when the last ``STALLED_EVALUATIONS`` objective values agree to
``tol`` (relative) *and* the decrease that L-BFGS-B's own quadratic model
still predicts, ``g^T H^{-1} g / 2`` (its gradient and inverse-Hessian
approximation at the answer), is at most ``tol`` times the objective.  The
second test tells an optimum at round-off from a line search that failed
elsewhere (a gradient that does not match the objective also ends in
values that agree, as the line search shrinks its steps around one point);
every other failure is reported as not converged.
"""

import numpy as np

def minimize(*args, **kwargs):
    """:func:`scipy.optimize.minimize`, imported on first use (importing scipy.optimize costs ~0.13 s)."""
    from scipy.optimize import minimize as scipy_minimize

    return scipy_minimize(*args, **kwargs)


STALLED_EVALUATIONS = 5
"""Evaluations whose objective values must agree to ``tol`` for a failed line search to count as converged."""


def at_round_off(values, tol):
    """Whether the last ``STALLED_EVALUATIONS`` objective values are finite and agree to ``tol`` (relative).

    Parameters
    ----------
    values : sequence of float
        Every objective value evaluated so far, oldest first.
    tol : float

    Returns
    -------
    bool
    """
    last = np.asarray(values[-STALLED_EVALUATIONS:], dtype=float)
    return (last.shape[0] == STALLED_EVALUATIONS and bool(np.all(np.isfinite(last)))
            and float(np.ptp(last)) <= tol * float(np.max(np.abs(last))))


def minimise(objective, start, tol, max_iter, values):
    """Minimise ``objective(theta) -> (value, gradient)`` by L-BFGS-B with ``ftol = 1e-3 tol``, ``gtol = 1e-6``.

    Parameters
    ----------
    objective : callable
        ``theta (P,) -> (float, ndarray of shape (P,))``.
    start : ndarray, shape (P,)
    tol : float
        The fit's relative tolerance.
    max_iter : int
        L-BFGS-B iterations at most.
    values : callable
        ``values() -> sequence of float``: every objective value evaluated so far (the round-off rule).

    Returns
    -------
    result : scipy.optimize.OptimizeResult
    converged : bool
        L-BFGS-B's own verdict, or a failed line search at round-off (:func:`at_round_off`) where
        its quadratic model predicts a decrease of at most ``tol`` (relative) (:func:`predicted_decrease`).
    message : str
        Why the search did not converge ("" when it did).
    """
    result = minimize(objective, start, jac=True, method="L-BFGS-B",
                      options={"maxiter": max_iter, "ftol": 1e-3 * tol, "gtol": 1e-6})
    converged = bool(result.success) or (result.status == 2 and at_round_off(values(), tol)
                                         and predicted_decrease(result) <= tol * abs(float(result.fun)))
    message = "" if converged else f"{describe(tol)} stopped without converging: {result.message}"
    return result, converged, message


def predicted_decrease(result):
    """``g^T H^{-1} g / 2`` at L-BFGS-B's answer: the decrease its quadratic model still predicts.

    Parameters
    ----------
    result : scipy.optimize.OptimizeResult
        Of L-BFGS-B (``jac`` and ``hess_inv`` at ``x``).

    Returns
    -------
    float
        ``inf`` when it is not finite.
    """
    gradient = np.asarray(result.jac, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        value = 0.5 * float(gradient @ np.asarray(result.hess_inv.dot(gradient), dtype=float))
    return value if np.isfinite(value) else np.inf


def describe(tol):
    """The optimiser's name and settings, for messages."""
    return f"the hyperparameter optimiser (L-BFGS-B, ftol={1e-3 * tol:.0e})"
