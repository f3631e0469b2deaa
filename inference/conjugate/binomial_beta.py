"""Binomial (or Bernoulli) successes with a Beta-distributed probability.

.. math:: y_i \\sim \\mathrm{Binomial}(n_i, p_{g_i}), \\qquad p \\sim \\mathrm{Beta}(a, b).

With the Beta statistics ``(log p, log(1 - p))`` the site of point ``i`` is
``(y_i, n_i - y_i)``, and
``E_q[log p(y_i)] = log C(n_i, y_i) + y_i E[log p] + (n_i - y_i) E[log(1 - p)]``.
"""

import numpy as np
from scipy.special import gammaln

from ...expfam import Beta
from ...expfam.checks import as_float

from ..factor import FactorEval
from .._summed import SummedSitesFactor, check_counts


class BinomialBeta(SummedSitesFactor):
    """Binomial observations of a Beta probability block (Bernoulli when ``trials=1``).

    Parameters
    ----------
    successes : array_like, shape (N,)
        Integer successes ``0 <= y_i <= n_i``.
    on : str
        Name of the Beta block.
    trials : int or array_like, shape (N,)
        Number of trials ``n_i`` (default 1: Bernoulli labels in {0, 1}).
    group : array_like of int, shape (N,), optional
        Batch element of the Beta block each observation uses.
    """

    conjugate = True

    def __init__(self, successes, on, trials=1, group=None):
        n = as_float(trials, "trials")
        self.trials = check_counts(np.broadcast_to(n, np.shape(successes)).copy(), "trials")
        self.successes = check_counts(successes, "successes", upper=self.trials)
        self.n_data = self.successes.shape[0]
        self.roles = {"on": on}
        self._set_group(group, self.n_data)

    def bind(self, blocks):
        super().bind(blocks)
        self._check_group_block("on", self._require_family(blocks, "on", Beta))

    def evaluate(self, q, index=None, rng=None):
        y, n = self._rows(self.successes, index), self._rows(self.trials, index)
        e_log_p, e_log_1mp = (self._gather(m, index) for m in q[self.roles["on"]].mean_params)
        log_choose = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
        expected = np.sum(log_choose + y * e_log_p + (n - y) * e_log_1mp)
        return FactorEval(float(expected), {self.roles["on"]: (y.copy(), n - y)})
