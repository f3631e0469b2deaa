"""The Bernoulli family on :math:`z \\in \\{0, 1\\}`.

With success probability :math:`0 < p < 1`,

.. math::

    q(z) = p^z (1 - p)^{1 - z}
         = \\exp\\big(\\lambda z - A(\\lambda)\\big),
    \\qquad \\phi(z) = z, \\qquad \\lambda = \\operatorname{logit} p = \\log\\frac{p}{1 - p},

    A(\\lambda) = \\log(1 + e^\\lambda) \\;(\\text{softplus}), \\qquad
    \\mu = \\sigma(\\lambda) = p, \\qquad F = p (1 - p),

with :math:`h(z) = 1` (counting measure).  Every map is written to stay
finite for any finite logit: softplus as ``logaddexp(0, lambda)``, the
Fisher information as :math:`\\sigma(\\lambda)\\sigma(-\\lambda)`.  The
inverse map :math:`\\operatorname{logit}\\mu` is exact up to the rounding of
:math:`1 - p`, so logits of magnitude 15 round-trip to about 1e-11.  ``logpdf``
is ``-inf`` at any point other than 0 and 1.
"""

import autograd.numpy as anp
import numpy as np
from scipy import special

from ._base import ExponentialFamily
from ._registry import register
from .checks import as_float, check_probability


@register
class Bernoulli(ExponentialFamily):
    """A batch of Bernoulli distributions with success probabilities ``p``.

    Parameters
    ----------
    p : array_like, shape ``batch``
        Success probabilities, strictly between 0 and 1.  Use
        :meth:`from_logits` for probabilities too close to 0 or 1 to write down.

    Raises
    ------
    ValueError
        Naming ``p`` if it is not finite or not in ``(0, 1)``.

    Notes
    -----
    Natural parameters ``(logit p,)`` of shape ``batch``; samples are floats
    0.0 or 1.0 of shape ``batch``.
    """

    name = "bernoulli"
    readable_params = ("probs",)
    param_names = ("logit p",)
    event_ndims = (0,)
    sample_ndim = 0

    def __init__(self, p):
        p = check_probability(p, "p", open_interval=True)
        self._natural = Bernoulli.from_natural((special.logit(p),), validate=False).natural
        self._mean_params = None

    @classmethod
    def from_logits(cls, logits):
        """Build from log-odds ``logits = log(p / (1 - p))``, any finite reals of shape ``batch``.

        Raises
        ------
        ValueError
            Naming ``logits`` if they are not finite.
        """
        return cls.from_natural((as_float(logits, "logits"),), validate=False)

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(z,)`` for ``z`` in {0, 1} of any shape."""
        return (np.asarray(z, dtype=float),)

    @classmethod
    def log_partition(cls, natural):
        """``softplus(lambda) = log(1 + e^lambda)``; autograd-differentiable, shape ``batch``."""
        return anp.logaddexp(0.0, natural[0])

    @classmethod
    def natural_to_mean(cls, natural):
        """``(sigmoid(lambda),)``, shape ``batch``."""
        return (special.expit(np.asarray(natural[0], dtype=float)),)

    @classmethod
    def mean_to_natural(cls, mean):
        """``(logit p,)`` from ``(p,)``.

        Raises
        ------
        ValueError
            If ``mean[0]`` is not in ``(0, 1)``.
        """
        p = check_probability(mean[0], "mean[0] (p)", open_interval=True)
        return (special.logit(p),)

    @classmethod
    def fisher(cls, natural):
        """``p (1 - p)`` as ``sigmoid(lambda) sigmoid(-lambda)``, shape ``batch + (1, 1)``."""
        logit = np.asarray(natural[0], dtype=float)
        return (special.expit(logit) * special.expit(-logit))[..., None, None]

    @classmethod
    def is_valid_natural(cls, natural):
        """Every finite logit is valid; shape ``batch``."""
        return np.isfinite(natural[0])

    @classmethod
    def in_support(cls, z):
        """``z`` is 0 or 1; shape ``z.shape``."""
        z = np.asarray(z, dtype=float)
        return (z == 0.0) | (z == 1.0)

    @classmethod
    def _sample(cls, natural, rng, n):
        p = special.expit(natural[0])
        return (rng.random((n,) + np.shape(p)) < p).astype(float)

    @classmethod
    def _domain_description(cls):
        return "natural[0] = logit p must be finite"

    # ------------------------------------------------------------------ readable properties
    @property
    def logits(self):
        """Log-odds ``log(p / (1 - p))``, shape ``batch_shape``."""
        return self._natural[0]

    @property
    def probs(self):
        """Success probabilities ``p``, shape ``batch_shape``."""
        return special.expit(self._natural[0])

    @property
    def mean(self):
        """``E z = p``, shape ``batch_shape``."""
        return self.probs

    @property
    def var(self):
        """``Var z = p (1 - p)``, shape ``batch_shape``."""
        return special.expit(self._natural[0]) * special.expit(-self._natural[0])
