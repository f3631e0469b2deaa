r"""The stopping rule of black-box VI: the ELBO has stopped changing, up to its Monte Carlo error.

Every ``window`` iterations the mean ELBO of the last ``window`` iterates,
:math:`\bar{\mathcal L}_B`, is compared with that of the ``window`` before,
:math:`\bar{\mathcal L}_A`.  Each Monte Carlo estimate :math:`\hat{\mathcal L}_t`
comes with its standard error :math:`s_t = \operatorname{sd}_s(w_{ts}) / \sqrt S`
(:math:`w_{ts} = \log p(z_{ts}) - \log q(z_{ts})`), and the estimates of
different iterations use independent draws, so the change
:math:`d = \bar{\mathcal L}_B - \bar{\mathcal L}_A` has standard error

.. math:: s_d = \frac{1}{W} \Big(\sum_{t \in A} s_t^2 + \sum_{t \in B} s_t^2\Big)^{1/2}.

The fit has converged when the change is within the tolerance up to that error,

.. math:: |d| \le \mathrm{tol}\, \max(1, |\bar{\mathcal L}_B|) + z\, s_d, \qquad z = 2,

that is, when no change larger than the tolerance can be told apart from the
Monte Carlo noise.  With the exact ELBO (``expected_log_joint``) every
:math:`s_t` is 0 and the rule is a relative change of the windows' means, as
:meth:`efvi.inference.Model.fit` uses per iteration.  Checking once per window
(not at every iteration) keeps the rule from firing by chance on one of many
overlapping comparisons.

At the exact posterior of a conjugate model :math:`w_{ts}` is the same for
every draw (the log evidence), so :math:`s_t \to 0` there and the rule asks for
the tolerance alone.
"""

import numpy as np

Z = 2.0
"""Standard errors a change may lie within the tolerance by (about 95%, two-sided)."""


def due(n_values, window):
    """Whether the rule is checked when the trace holds ``n_values`` estimates (every ``window``, from ``2 window``)."""
    return n_values >= 2 * window and n_values % window == 0


def window_change(trace, standard_errors, window):
    """The change of the mean over the last two windows of ``trace``, its standard error and the window's mean.

    Parameters
    ----------
    trace, standard_errors : ndarray, shape (n,)
        ELBO estimates and their standard errors (zeros for exact values), ``n >= 2 window``.
    window : int

    Returns
    -------
    change, error, level : float
        :math:`d`, :math:`s_d` and :math:`\\bar{\\mathcal L}_B`.
    """
    trace, errors = np.asarray(trace, dtype=float), np.asarray(standard_errors, dtype=float)
    before, after = trace[-2 * window:-window], trace[-window:]
    error = np.sqrt(np.sum(errors[-2 * window:] ** 2)) / window
    return float(after.mean() - before.mean()), float(error), float(after.mean())


def converged(trace, standard_errors, window, tol):
    """Whether the rule holds on the last two windows, and a sentence that says why (or why not).

    Returns
    -------
    converged : bool
    reason : str
    """
    change, error, level = window_change(trace, standard_errors, window)
    allowed = tol * max(1.0, abs(level))
    within = abs(change) <= allowed + Z * error
    verb = "within" if within else "above"
    return bool(within), (f"the mean ELBO of the last {window} iterations changed by {change:.3g} nats "
                          f"(standard error {error:.2g}) from the {window} before: {verb} the tolerance "
                          f"{allowed:.3g} (tol {tol:g} x max(1, |ELBO|)) plus {Z:g} standard errors")
