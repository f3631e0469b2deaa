"""The Gamma family on :math:`z > 0`.

With shape :math:`a > 0` and rate :math:`b > 0`,

.. math::

    q(z) = \\frac{b^a}{\\Gamma(a)} z^{a - 1} e^{-b z}
         = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z) = (\\log z,\\; z), \\qquad \\lambda = (a - 1,\\; -b),

    A(\\lambda) = \\log \\Gamma(\\lambda_1 + 1) - (\\lambda_1 + 1) \\log(-\\lambda_2),
    \\qquad \\mu = (\\psi(a) - \\log b,\\; a / b),

with base measure :math:`h(z) = 1` and Fisher information

.. math::

    F = \\begin{pmatrix} \\psi'(a) & 1/b \\\\ 1/b & a / b^2 \\end{pmatrix}.

The inverse map has no closed form: :math:`a` solves
:math:`\\log a - \\psi(a) = \\log \\mu_2 - \\mu_1` (:mod:`efvi.expfam._special`), then
:math:`b = a / \\mu_2`.  The right-hand side is about :math:`1/(2a)`, so for
large shapes the mean parameters themselves carry only about
:math:`2 a \\epsilon |\\mu_1|` relative information about :math:`a`.

Small shapes.  The natural parameter :math:`a - 1` holds a shape far below 1
only to about :math:`\\epsilon / a` relative (:math:`\\epsilon = 2^{-52}`; at most
:math:`2^{-54} / a`: 6e-11 at :math:`a = 10^{-6}`, 6e-7 at :math:`10^{-10}`); a shape below
:math:`2^{-53} \\approx 1.1 \\times 10^{-16}` rounds to :math:`a - 1 = -1` and is
rejected by the constructor.

Entropy and KL are closed forms without the cancellation of the generic
Bregman route (which loses about :math:`a \\epsilon` absolute for large shapes).
With :math:`E(a) = \\log\\Gamma(a) - (a - 1)\\psi(a) + a` (:mod:`efvi.expfam._bregman`),
:math:`H = E(a) - \\log b`, and for :math:`q = (a, b)`, :math:`p = (c, d)`, with
:math:`t = c / a`, :math:`v = d / b`,

.. math::

    KL(q \\| p) = a v\\, f\\big(\\tfrac{t}{v}\\big) + \\tfrac12 m(t) + D_R(c, a), \\qquad
    f(s) = s \\log s - s + 1, \\quad m(s) = s - 1 - \\log s,

three non-negative terms (:math:`D_R` the Bregman divergence of Binet's
function).  This equals :math:`D(c, a) + a(x - \\log(1 + x)) + (a - c)\\log(1 + x)`,
:math:`x = v - 1`, with :math:`D` the Bregman divergence of :math:`\\log\\Gamma`, but
its first term holds exactly the part in which the other two cancel when
shape and rate change together.  The last two terms are
:func:`~efvi.expfam._bregman.gammaln_bregman_excess`; the whole KL is evaluated
entry by entry in one compiled call
(:func:`~efvi.expfam._bregman_kernels.gamma_kl_kernel`, tested against these
numpy pieces).  The first term's
:math:`t / v - 1` is formed (:func:`~efvi.expfam._bregman.ratio_gap`) from the
differences :math:`t - 1`, :math:`v - 1` of the natural parameters, exact for
nearby distributions, where :math:`t + v \\ge 1`, and from :math:`t - v` where
both are small, as for a posterior against a vague prior (there the
differences to 1 would leave an error of about :math:`a\\epsilon`: 5e-8
relative for a posterior of shape 1e10 against Gamma(1e-6, 1e-6)).  Measured
against mpmath: relative error below 1e-12 for shapes up to 1e10 (below 4e-14
for posteriors of shape 10..1e10 against priors of shape :math:`2^{-52}`..10,
rates independent or means equal), up to about :math:`\\epsilon\\sqrt{a}` when two
distributions differ only by a common relative change of shape and rate near
the rounding of the parameters (KL near 1e-20).
"""

import autograd.numpy as anp
import numpy as np
from scipy import special

from ._base import ExponentialFamily
from ._differentiable import gammaln
from ._bregman import entropy_part
from ._bregman_kernels import gamma_kl_kernel
from ._registry import register
from ._special import gamma_shape_from_log_gap
from .checks import broadcast_pair, check_positive, natural_from_shape, number


@register
class Gamma(ExponentialFamily):
    """A batch of Gamma distributions ``Gamma(shape, rate)`` (density ``b^a z^(a-1) e^(-b z) / Gamma(a)``).

    Parameters
    ----------
    shape : array_like, shape ``batch``
        Shapes ``a > 0``; at least ``2**-53`` (about 1.1e-16), the smallest
        shape the natural parameter ``a - 1`` can hold.  Shapes far below 1 are
        held to about ``eps / a`` relative (module docstring).
    rate : array_like, shape ``batch``
        Rates ``b > 0`` (scale ``1 / b``); broadcasts with ``shape``.

    Raises
    ------
    ValueError
        Naming ``shape`` or ``rate`` if either is not finite and positive, the
        shape is below ``2**-53``, or they do not broadcast.

    Notes
    -----
    Natural parameters ``(shape - 1, -rate)``, both of shape ``batch``;
    samples have shape ``batch``.  See the module docstring for the maths.
    """

    name = "gamma"
    param_names = ("shape - 1", "-rate")
    event_ndims = (0, 0)
    sample_ndim = 0

    def __init__(self, shape, rate):
        shape_minus_one = natural_from_shape(shape, "shape", "shape - 1")
        rate = check_positive(rate, "rate")
        shape_minus_one, rate = broadcast_pair(shape_minus_one, rate, "shape", "rate")
        self._natural = Gamma.from_natural((shape_minus_one, -rate), validate=False).natural
        self._mean_params = None

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z):
        """``(log z, z)`` for ``z > 0`` of any shape."""
        z = np.asarray(z, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(z), z

    @classmethod
    def log_partition(cls, natural):
        """``log Gamma(a) - a log b``; autograd-differentiable, shape ``batch``."""
        shape = natural[0] + 1.0
        return gammaln(shape) - shape * anp.log(-natural[1])

    @classmethod
    def natural_to_mean(cls, natural):
        """``(psi(a) - log b, a / b)``, each of shape ``batch``."""
        shape = np.asarray(natural[0], dtype=float) + 1.0
        rate = -np.asarray(natural[1], dtype=float)
        return special.digamma(shape) - np.log(rate), shape / rate

    @classmethod
    def mean_to_natural(cls, mean):
        """``(a - 1, -b)`` from ``(E log z, E z)`` by the shape solve of :mod:`efvi.expfam._special`.

        Raises
        ------
        ValueError
            If ``mean[1] <= 0`` or ``log(mean[1]) <= mean[0]`` (no Gamma has
            these moments, by Jensen's inequality).
        """
        mean_log = np.asarray(mean[0], dtype=float)
        mean_z = np.asarray(mean[1], dtype=float)
        if not np.all(mean_z > 0):
            raise ValueError(f"mean[1] (E[z]) for Gamma must be > 0; got minimum {number(np.min(mean_z))}")
        gap = np.log(mean_z) - mean_log
        if not np.all(gap > 0):
            raise ValueError(
                "mean for Gamma must satisfy log(mean[1]) > mean[0], i.e. log E[z] > E[log z]; "
                f"got log(mean[1]) - mean[0] = {number(np.min(gap))} at its smallest"
            )
        shape = gamma_shape_from_log_gap(gap)
        return shape - 1.0, -shape / mean_z

    @classmethod
    def fisher(cls, natural):
        """``[[psi'(a), 1/b], [1/b, a/b^2]]``, shape ``batch + (2, 2)``."""
        shape = np.asarray(natural[0], dtype=float) + 1.0
        rate = -np.asarray(natural[1], dtype=float)
        cross = 1.0 / rate
        return np.stack([
            np.stack([special.polygamma(1, shape), cross], axis=-1),
            np.stack([cross, shape * cross * cross], axis=-1),
        ], axis=-2)

    @classmethod
    def is_valid_natural(cls, natural):
        """``natural[0] > -1`` and ``natural[1] < 0``, shape ``batch``."""
        return (np.asarray(natural[0]) > -1.0) & (np.asarray(natural[1]) < 0.0)

    @classmethod
    def in_support(cls, z):
        """``0 < z < inf``, shape ``z.shape``."""
        z = np.asarray(z, dtype=float)
        return (z > 0.0) & (z < np.inf)

    @classmethod
    def _sample(cls, natural, rng, n):
        shape = natural[0] + 1.0
        return rng.gamma(shape, -1.0 / natural[1], size=(n,) + np.shape(shape))

    @classmethod
    def _domain_description(cls):
        return "natural[0] = shape - 1 must be > -1 and natural[1] = -rate must be < 0"

    # ------------------------------------------------------------------ closed forms
    def entropy(self):
        """``log Gamma(a) - (a - 1) psi(a) + a - log b`` without cancellation; shape ``batch_shape``."""
        return entropy_part(self.shape) - np.log(self.rate)

    def _kl(self, other):
        """``KL(self || other)`` as three non-negative terms (module docstring)."""
        return kl_from_natural(self._natural, other.natural)

    # ------------------------------------------------------------------ readable properties
    @property
    def shape(self):
        """Shapes ``a``, shape ``batch_shape``."""
        return self._natural[0] + 1.0

    @property
    def rate(self):
        """Rates ``b``, shape ``batch_shape``."""
        return -self._natural[1]

    @property
    def mean(self):
        """``E z = a / b``, shape ``batch_shape``."""
        return self.shape / self.rate

    @property
    def var(self):
        """``Var z = a / b^2``, shape ``batch_shape``."""
        return self.shape / self.rate ** 2


def kl_from_natural(natural_q, natural_p):
    """``KL(q || p)`` between Gamma distributions given by natural parameters (batches broadcast).

    ``a v f(t / v) + m(t) / 2 + D_R(c, a)`` with ``t = c / a``, ``v = d / b``
    (module docstring); the differences ``c - a`` and ``d - b`` are taken
    between natural parameters, where they are exact for nearby distributions.
    One compiled call (:mod:`efvi.expfam._bregman_kernels`) for the whole batch.
    """
    parts = [np.asarray(p, dtype=float) for p in (*natural_q, *natural_p)]
    shape = parts[0].shape
    if any(p.shape != shape for p in parts):
        parts = np.broadcast_arrays(*parts)
        shape = parts[0].shape
    out = np.empty(shape)
    gamma_kl_kernel(*(np.ascontiguousarray(p).reshape(-1) for p in parts), out.reshape(-1))
    return out
