"""Periodic (exp-sine-squared) kernel.

.. math::

    k(x, x') = \\sigma^2 \\exp\\left(-\\frac{2}{\\ell^2}
               \\sum_{d=1}^{D} \\sin^2\\frac{\\pi (x_d - x'_d)}{p}\\right),

with period :math:`p`, lengthscale :math:`\\ell` and variance :math:`\\sigma^2`.
In one dimension this is scikit-learn's ``ExpSineSquared`` (times a
constant); in several it is GPflow's ``Periodic``, a product of one-dimensional
periodic kernels, which is positive semi-definite (``ExpSineSquared`` of the
Euclidean distance is not, for ``D > 1``).  Hyperparameters, in
``log_params`` order: ``period``, ``lengthscale``, ``variance``.

It is computed as a squared exponential of the circle embedding
:math:`z(x) = (\\cos(2\\pi x / p), \\sin(2\\pi x / p))` (MacKay's
construction): :math:`|z_d(x) - z_d(x')|^2 = 4 \\sin^2(\\pi (x_d - x'_d)/p)`,
so :math:`k = \\sigma^2 \\exp(-|z(x) - z(x')|^2 / (2\\ell^2))` with one
pairwise distance of ``2D`` features.

For a scalar input its state-space form is a truncated cosine series (see
:mod:`.statespace`): an approximation whose error is at most
:meth:`Periodic.truncation_error`, attained at lags that are multiples of the
period.  By default the number of harmonics ``J`` is the smallest with an
error of at most ``1e-12`` times the variance, so the state dimension
``2J + 1`` grows like ``7 / lengthscale``; pass ``n_harmonics`` to fix it.
The dimension of a kernel's state is fixed once built: functions from
``discretise_fn`` keep it while the lengthscale changes, and their error then
follows ``truncation_error`` of the new lengthscale.
"""

import numpy as np

import autograd.numpy as anp

from . import statespace
from ._base import Leaf
from ._distance import sqdist
from ._validation import positive_param

_AUTO_RTOL = 1e-12
_AUTO_MAX_HARMONICS = 200


def _circle(X, period):
    """Circle embedding ``(cos(2 pi X / p), sin(2 pi X / p))``, shape (N, 2D)."""
    angle = (2.0 * np.pi / period) * X
    return anp.concatenate([anp.cos(angle), anp.sin(angle)], axis=1)


class Periodic(Leaf):
    """Periodic kernel ``variance * exp(-2 sum_d sin^2(pi (x_d - x'_d) / period) / lengthscale^2)``.

    Parameters
    ----------
    period : float
        Positive period ``p``.
    lengthscale : float
        Positive lengthscale ``ell`` (relative to the period's sine).
    variance : float
        Positive marginal variance.
    n_harmonics : int >= 1 or None, default None
        Harmonics kept in the state-space form; None chooses the fewest with a
        truncation error of at most 1e-12 times the variance.
    """

    def __init__(self, period=1.0, lengthscale=1.0, variance=1.0, n_harmonics=None):
        params = {
            "period": positive_param(period, "period"),
            "lengthscale": positive_param(lengthscale, "lengthscale"),
            "variance": positive_param(variance, "variance"),
        }
        if n_harmonics is not None and (
            isinstance(n_harmonics, bool) or not isinstance(n_harmonics, (int, np.integer)) or n_harmonics < 1
        ):
            raise ValueError(f"n_harmonics must be None or an integer >= 1 (0 would keep only the constant "
                             f"term, and a Markov GP would fit a constant); got {n_harmonics!r}")
        self._init_params(params, {"n_harmonics": n_harmonics})

    def _matrix(self, p, X, X2):
        period, lengthscale, variance = self._unpack(p)
        chord2 = sqdist(_circle(X, period), None if X2 is None else _circle(X2, period))
        return variance * anp.exp(-0.5 * chord2 / lengthscale**2)

    def _diag(self, p, X):
        return self._unpack(p)[2] * anp.ones(X.shape[0])

    @property
    def n_harmonics(self):
        """int: harmonics ``J`` of the state-space form (state dimension ``2J + 1``)."""
        if self._options["n_harmonics"] is not None:
            return int(self._options["n_harmonics"])
        n = statespace.periodic_harmonics(self.lengthscale, _AUTO_RTOL)
        if n > _AUTO_MAX_HARMONICS:
            raise ValueError(
                f"lengthscale={self.lengthscale!r} needs {n} harmonics for a state-space error below "
                f"{_AUTO_RTOL} of the variance (more than {_AUTO_MAX_HARMONICS}); pass n_harmonics to "
                "accept a larger error, or use a dense GP"
            )
        return n

    def truncation_error(self):
        """float: ``sup_tau |k_state_space(tau) - k(tau)|`` of the truncated state-space form."""
        return statespace.periodic_truncation_error(self.n_harmonics, self.lengthscale, self.variance)

    def _ss_dim(self):
        return 2 * self.n_harmonics + 1

    def _ss_obs_row(self):
        return statespace.periodic_obs_row(self.n_harmonics)

    def _ss_model(self, p):
        return statespace.periodic_model(self.n_harmonics, *self._unpack(p))

    def _ss_transition(self, p, dt):
        return statespace.periodic_transition(self.n_harmonics, self._unpack(p)[0], dt)
