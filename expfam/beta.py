"""The Beta family on :math:`0 < z < 1`: a two-category Dirichlet.

With :math:`a, b > 0`,

.. math::

    q(z) = \\frac{\\Gamma(a + b)}{\\Gamma(a)\\Gamma(b)} z^{a - 1} (1 - z)^{b - 1}
         = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (\\log z,\\; \\log(1 - z)), \\qquad \\lambda = (a - 1,\\; b - 1),

    A(\\lambda) = \\log \\Gamma(a) + \\log \\Gamma(b) - \\log \\Gamma(a + b),
    \\qquad \\mu = (\\psi(a) - \\psi(a + b),\\; \\psi(b) - \\psi(a + b)),

with :math:`h(z) = 1`.  This is the Dirichlet on :math:`(z, 1 - z)` with
:math:`\\alpha = (a, b)`, so every map (log-partition, mean parameters and
their inverse, Fisher information), the entropy and the KL divergence (closed
forms without cancellation, :mod:`efvi.expfam.dirichlet`) are the Dirichlet ones on
the stacked pair.  The support is the open interval :math:`0 < z < 1`; shapes
far below 1 are held to about :math:`\\epsilon / a` relative (:mod:`efvi.expfam.gamma`).
"""

import autograd.numpy as anp
import numpy as np

from ._base import ExponentialFamily
from ._registry import register
from .checks import broadcast_pair, natural_from_shape, number
from .dirichlet import Dirichlet, entropy_from_concentration, kl_from_natural


def _stacked(params, stack=np.stack):
    """The Dirichlet parameter tuple ``(stack([p0, p1], -1),)`` for a Beta parameter pair."""
    return (stack([params[0], params[1]], axis=-1),)


@register
class Beta(ExponentialFamily):
    """A batch of Beta distributions ``Beta(a, b)`` (density ``z^(a-1) (1-z)^(b-1) / B(a, b)``).

    Parameters
    ----------
    a : array_like, shape ``batch``
        First shape, > 0 (the weight of ``log z``).
    b : array_like, shape ``batch``
        Second shape, > 0 (the weight of ``log(1 - z)``); broadcasts with ``a``.
        Both at least ``2**-53`` (about 1.1e-16), the smallest shape the natural
        parameters ``a - 1``, ``b - 1`` can hold.

    Raises
    ------
    ValueError
        Naming ``a`` or ``b`` if either is not finite and positive, is below
        ``2**-53``, or if they do not broadcast.

    Notes
    -----
    Natural parameters ``(a - 1, b - 1)``, both of shape ``batch``; samples
    have shape ``batch``.
    """

    name = "beta"
    param_names = ("a - 1", "b - 1")
    event_ndims = (0, 0)
    sample_ndim = 0

    def __init__(self, a, b):
        a_minus_one = natural_from_shape(a, "a", "a - 1")
        b_minus_one = natural_from_shape(b, "b", "b - 1")
        a_minus_one, b_minus_one = broadcast_pair(a_minus_one, b_minus_one, "a", "b")
        self._natural = Beta.from_natural((a_minus_one, b_minus_one), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z, log(1 - z))`` for ``0 < z < 1`` of any shape."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(z), np.log1p(-z)

    @classmethod
    def log_partition(cls, natural):
        """``log B(a, b)``; autograd-differentiable, shape ``batch``."""
        return Dirichlet.log_partition(_stacked(natural, anp.stack))

    @classmethod
    def natural_to_mean(cls, natural):
        """``(psi(a) - psi(a + b), psi(b) - psi(a + b))``, each of shape ``batch``."""
        mean_log = Dirichlet.natural_to_mean(_stacked(natural))[0]
        return mean_log[..., 0], mean_log[..., 1]

    @classmethod
    def mean_to_natural(cls, mean):
        """``(a - 1, b - 1)`` from ``(E log z, E log(1 - z))`` by the Dirichlet solve.

        Raises
        ------
        ValueError
            If ``exp(mean[0]) + exp(mean[1]) >= 1`` (no Beta has these moments).
        """
        stacked = _stacked(tuple(np.asarray(p, dtype=float) for p in mean))
        with np.errstate(over="ignore"):
            total = np.exp(stacked[0]).sum(axis=-1)
        if not np.all(total < 1.0):
            raise ValueError(
                "mean for Beta must satisfy exp(mean[0]) + exp(mean[1]) < 1, i.e. "
                f"E[log z] < log E[z] and E[log(1 - z)] < log E[1 - z]; got {number(np.max(total))} at its largest"
            )
        natural = Dirichlet.mean_to_natural(stacked)[0]
        return natural[..., 0], natural[..., 1]

    @classmethod
    def fisher(cls, natural):
        """The Dirichlet Fisher information of ``(a, b)``, shape ``batch + (2, 2)``."""
        return Dirichlet.fisher(_stacked(natural))

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] > -1`` and ``natural[1] > -1``, shape ``batch``."""
        return (np.asarray(natural[0]) > -1.0) & (np.asarray(natural[1]) > -1.0)

    @classmethod
    def in_support(cls, z):
        """``0 < z < 1``, shape ``z.shape``."""
        z = np.asarray(z, dtype=float)
        return (z > 0.0) & (z < 1.0)

    @classmethod
    def _sample(cls, natural, rng, n):
        a = natural[0] + 1.0
        return rng.beta(a, natural[1] + 1.0, size=(n,) + np.shape(a))

    @classmethod
    def _domain_description(cls):
        return "natural[0] = a - 1 and natural[1] = b - 1 must both be > -1"

    # ------------------------------------------------------------------ closed forms
    def entropy(self):
        """The Dirichlet entropy of ``(a, b)``, shape ``batch_shape``."""
        return entropy_from_concentration(_stacked(self._natural)[0] + 1.0)

    def _kl(self, other):
        """The Dirichlet KL divergence of the stacked pairs, shape: the batch shapes broadcast."""
        return kl_from_natural(_stacked(self._natural)[0], _stacked(other.natural)[0])

    # ------------------------------------------------------------------ readable properties
    @property
    def a(self):
        """First shapes ``a``, shape ``batch_shape``."""
        return self._natural[0] + 1.0

    @property
    def b(self):
        """Second shapes ``b``, shape ``batch_shape``."""
        return self._natural[1] + 1.0

    @property
    def mean(self):
        """``E z = a / (a + b)``, shape ``batch_shape``."""
        return self.a / (self.a + self.b)

    @property
    def var(self):
        """``Var z = a b / ((a + b)^2 (a + b + 1))``, shape ``batch_shape``."""
        total = self.a + self.b
        return self.a * self.b / (total ** 2 * (total + 1.0))
