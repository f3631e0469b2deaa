"""The L-BFGS-B convention shared by hyperparameter searches: a failed line search counts as converged
only at round-off (the last objective values agree to ``tol``)."""

import numpy as np

from efvi.inference.lbfgs import STALLED_EVALUATIONS, at_round_off, minimise


def test_at_round_off_needs_enough_finite_values_that_agree():
    tol = 1e-8
    agree = [-1e6 * (1 + 0.2 * tol * k) for k in range(STALLED_EVALUATIONS)]
    assert at_round_off([5.0] + agree, tol)
    assert not at_round_off(agree[1:], tol)                                  # too few
    assert not at_round_off(agree[:-1] + [np.inf], tol)                      # an invalid trial point
    assert not at_round_off(agree[:-1] + [agree[-1] * (1 + 3 * tol)], tol)   # they differ by more than tol


class _Recorded:
    """An objective that records its values: ``value(theta)`` with the gradient ``gradient(theta)``."""

    def __init__(self, value, gradient):
        self.value, self.gradient, self.values = value, gradient, []

    def __call__(self, theta):
        self.values.append(float(self.value(theta)))
        return self.values[-1], np.asarray(self.gradient(theta), dtype=float)


def test_a_line_search_failure_at_round_off_is_converged(monkeypatch):
    # L-BFGS-B ending with ABNORMAL_TERMINATION_IN_LNSRCH at an optimum (rare to provoke on purpose:
    # scipy reports most stalls as converged through ftol): the values agree to tol and the model
    # predicts a decrease of 2e-12 relative, so the search has converged; with a larger predicted
    # decrease, or values that differ, it has not
    from scipy.optimize import OptimizeResult
    from scipy.sparse.linalg import aslinearoperator

    from efvi.inference import lbfgs

    def failed(gradient):
        return OptimizeResult(x=np.zeros(2), fun=-1e6, jac=np.asarray(gradient), status=2, success=False,
                              message="ABNORMAL_TERMINATION_IN_LNSRCH",
                              hess_inv=aslinearoperator(np.eye(2)))

    values = [-1e6 * (1 + 1e-10 * k) for k in range(6)]
    for gradient, expected in (([2e-3, 0.0], True), ([2e-1, 0.0], False)):
        monkeypatch.setattr(lbfgs, "minimize", lambda *args, g=gradient, **kwargs: failed(g))
        _, converged, message = minimise(None, np.zeros(2), 1e-8, 10, lambda: values)
        assert converged is expected
        assert (message == "") is expected
    monkeypatch.setattr(lbfgs, "minimize", lambda *args, **kwargs: failed([2e-3, 0.0]))
    _, converged, _ = minimise(None, np.zeros(2), 1e-8, 10, lambda: values[:-1] + [-1e6 * (1 + 1e-7)])
    assert not converged


def test_a_line_search_failure_away_from_round_off_is_not_converged():
    # a wrong gradient (the opposite sign) on a quadratic: the line search fails where the values
    # still differ by far more than tol, and the search reports the failure with scipy's message
    objective = _Recorded(lambda t: float(np.sum((t - 3.0) ** 2)), lambda t: -2.0 * (t - 3.0))
    result, converged, message = minimise(objective, np.zeros(2), 1e-8, 100, lambda: objective.values)
    assert result.status == 2
    assert at_round_off(objective.values, 1e-8)          # the values agree: the line search shrank its steps
    assert not converged                                 # but the model predicts a large decrease
    assert message.startswith("the hyperparameter optimiser (L-BFGS-B, ftol=1e-11) stopped without converging")


def test_an_ordinary_search_converges_to_the_minimum():
    objective = _Recorded(lambda t: float(np.sum((t - 3.0) ** 2)), lambda t: 2.0 * (t - 3.0))
    result, converged, message = minimise(objective, np.zeros(3), 1e-8, 100, lambda: objective.values)
    assert converged and message == ""
    np.testing.assert_allclose(result.x, 3.0, atol=1e-6)
