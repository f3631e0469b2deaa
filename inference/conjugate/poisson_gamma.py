"""Poisson counts with a Gamma-distributed rate: the conjugate Poisson-Gamma factor.

.. math:: y_i \\sim \\mathrm{Poisson}(e_i \\lambda_{g_i}), \\qquad \\lambda \\sim \\mathrm{Gamma}(a, b).

With the Gamma statistics ``(log lambda, lambda)`` the site of data point ``i``
is ``(y_i, -e_i)`` whatever the posterior, and

.. math:: E_q[\\log p(y_i)] = y_i (E[\\log\\lambda] + \\log e_i) - e_i E[\\lambda] - \\log y_i!.
"""

import numpy as np
from scipy.special import gammaln

from ...expfam import Gamma
from ...expfam.checks import check_positive

from ..factor import FactorEval
from .._summed import SummedSitesFactor, check_counts


class PoissonGamma(SummedSitesFactor):
    """Poisson observations of a Gamma rate block.

    Parameters
    ----------
    counts : array_like, shape (N,)
        Non-negative integer counts.
    on : str
        Name of the Gamma block holding the rate.
    exposure : float or array_like, shape (N,), optional
        Positive exposures ``e_i`` (default 1).
    group : array_like of int, shape (N,), optional
        Batch element of the rate block each count uses (for a batched Gamma block).
    """

    conjugate = True

    def __init__(self, counts, on, exposure=None, group=None):
        self.counts = check_counts(counts, "counts")
        self.n_data = self.counts.shape[0]
        exposure = np.ones(self.n_data) if exposure is None else check_positive(exposure, "exposure")
        if exposure.ndim != 0 and exposure.shape != (self.n_data,):
            raise ValueError(f"exposure must be a scalar or have shape ({self.n_data},), one per count; "
                             f"got shape {exposure.shape}")
        self.exposure = exposure * np.ones(self.n_data)
        self.roles = {"on": on}
        self._set_group(group, self.n_data)

    def bind(self, blocks):
        super().bind(blocks)
        self._check_group_block("on", self._require_family(blocks, "on", Gamma))

    def evaluate(self, q, index=None, rng=None):
        y, e = self._rows(self.counts, index), self._rows(self.exposure, index)
        e_log_rate, e_rate = (self._gather(m, index) for m in q[self.roles["on"]].mean_params)
        expected = np.sum(y * (e_log_rate + np.log(e)) - e * e_rate - gammaln(y + 1.0))
        return FactorEval(float(expected), {self.roles["on"]: (y.copy(), -e)})
