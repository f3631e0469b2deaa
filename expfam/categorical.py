"""The categorical family on labels :math:`z \\in \\{0, \\dots, K - 1\\}`, minimal form.

With class probabilities :math:`p_0, \\dots, p_{K-1}` (all > 0, summing to 1),
the last class is the reference:

.. math::

    q(z) = p_z = \\exp\\big(\\langle \\lambda, \\phi(z) \\rangle - A(\\lambda)\\big),
    \\qquad \\phi(z)_k = [z = k], \\qquad \\lambda_k = \\log(p_k / p_{K-1}),
    \\qquad k = 0, \\dots, K - 2,

    A(\\lambda) = \\log\\Big(1 + \\sum_{k < K - 1} e^{\\lambda_k}\\Big), \\qquad
    \\mu_k = p_k, \\qquad F = \\operatorname{diag}(p) - p p^T

(the last two over the first :math:`K - 1` classes), with :math:`h(z) = 1`.
:math:`A` is a log-sum-exp with a zero appended for the reference class and
the mean parameters are its softmax, both stable for any finite
:math:`\\lambda`.  On plain arrays both are computed in numpy the way scipy's
``logsumexp`` (the largest terms apart, :math:`\\log1p` of the rest) and
``softmax`` compute them, without their per-call overhead; where autograd
traces :math:`A` (to differentiate it), autograd's ``logsumexp`` computes it.
The sufficient statistic is the one-hot encoding of the label without its
last entry, so it depends on :math:`K`: use
:meth:`Categorical.sufficient_stats` with ``num_classes`` or the object's
:meth:`sufficient_stats_of` (and likewise :meth:`Categorical.in_support`).
``logpdf`` is ``-inf`` at a label that is not an integer in ``0..K-1``;
``sufficient_stats`` raises for one.
"""

import autograd.numpy as anp
import numpy as np

from ._base import ExponentialFamily
from ._differentiable import logsumexp, traced
from ._registry import register
from .checks import as_float, number, violation


def _with_reference(logits, zeros=np.zeros, concatenate=np.concatenate):
    """Append the reference class's zero logit: shape ``(..., K - 1)`` to ``(..., K)``."""
    return concatenate([logits, zeros(np.shape(logits)[:-1] + (1,))], axis=-1)


def _log_partition(logits):
    """``log(1 + sum_k exp(logits_k))`` for a plain array, shape ``logits.shape[:-1]``.

    As ``scipy.special.logsumexp`` computes it: the largest of the logits and
    the reference zero (``count`` of them) apart, ``top + log(count) +
    log1p(rest / count)`` with ``rest`` the sum of the other ``exp(logit - top)``.
    """
    full = _with_reference(logits)
    top = full.max(axis=-1, keepdims=True)
    largest = full == top
    count = largest.sum(axis=-1)
    rest = np.where(largest, 0.0, np.exp(full - top)).sum(axis=-1)
    return top[..., 0] + np.log(count) + np.log1p(rest / count)


def _softmax(logits):
    """Class probabilities of logits with the reference zero, shape ``logits.shape[:-1] + (K,)``.

    As ``scipy.special.softmax`` computes them: ``exp(logit - max)`` normalised.
    """
    full = _with_reference(logits)
    weights = np.exp(full - full.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


@register
class Categorical(ExponentialFamily):
    """A batch of categorical distributions over labels ``0..K-1``.

    Parameters
    ----------
    probs : array_like, shape ``batch + (K,)``
        Class probabilities, each > 0, summing to 1 (to 1e-8) over the last
        axis, ``K >= 2``.  Use :meth:`from_logits` for unnormalised log
        probabilities.

    Raises
    ------
    ValueError
        Naming ``probs`` if it is not finite, has an entry outside ``(0, 1]``,
        does not sum to one, or has fewer than two classes.

    Notes
    -----
    Natural parameters ``(log(p[..., :-1] / p[..., -1:]),)`` of shape
    ``batch + (K - 1,)``; samples are integer labels of shape ``batch``.
    """

    name = "categorical"
    param_names = ("log(p_k / p_last)",)
    event_ndims = (1,)
    sample_ndim = 0

    def __init__(self, probs):
        probs = as_float(probs, "probs", ndim_min=1)
        if probs.shape[-1] < 2:
            raise ValueError(f"probs must have K >= 2 classes in its last axis; got shape {probs.shape}")
        outside = (probs <= 0) | (probs > 1)
        if np.any(outside):
            raise ValueError(f"probs must lie in (0, 1]; got {violation(probs, outside)}")
        total = probs.sum(axis=-1)
        off = np.abs(total - 1.0) > 1e-8
        if np.any(off):
            raise ValueError(f"probs must sum to 1 over the last axis; got a sum of {violation(total, off)}")
        log_probs = np.log(probs)
        natural = (log_probs[..., :-1] - log_probs[..., -1:],)
        self._natural = Categorical.from_natural(natural, validate=False).natural
        self._mean_params = None

    @classmethod
    def from_logits(cls, logits):
        """Build from unnormalised log probabilities of shape ``batch + (K,)``, ``K >= 2``.

        Raises
        ------
        ValueError
            Naming ``logits`` if they are not finite or have fewer than two classes.
        """
        logits = as_float(logits, "logits", ndim_min=1)
        if logits.shape[-1] < 2:
            raise ValueError(f"logits must have K >= 2 classes in its last axis; got shape {logits.shape}")
        return cls.from_natural((logits[..., :-1] - logits[..., -1:],), validate=False)

    # ------------------------------------------------------------------ pure maths
    @classmethod
    def sufficient_stats(cls, z, num_classes):
        """One-hot encoding of the labels ``z`` without the last class: ``(..., num_classes - 1)``.

        Raises
        ------
        ValueError
            Naming ``z`` if a label is not an integer in ``0..num_classes - 1``.
        """
        z = np.asarray(z)
        valid = cls.in_support(z, num_classes)
        if not np.all(valid):
            raise ValueError(f"z must hold integer labels in 0..{num_classes - 1}; got {violation(z, ~valid)}")
        return ((z[..., None] == np.arange(num_classes - 1)).astype(float),)

    @classmethod
    def in_support(cls, z, num_classes):
        """Whether each label is an integer in ``0..num_classes - 1``; shape ``z.shape``."""
        z = np.asarray(z)
        with np.errstate(invalid="ignore"):
            return (z >= 0) & (z < num_classes) & (z == np.floor(z))

    def in_support_of(self, z):
        """:meth:`in_support` with this batch's number of classes."""
        return type(self).in_support(z, self.num_classes)

    def sufficient_stats_of(self, z):
        """One-hot statistics of labels ``z`` (shape ``sample_shape + batch``) for this ``K``."""
        return type(self).sufficient_stats(z, self.num_classes)

    @classmethod
    def log_base_measure(cls, z):
        """Zero (``h = 1``), shape ``z.shape``."""
        return np.zeros(np.shape(z))

    @classmethod
    def log_partition(cls, natural):
        """``log(1 + sum_k exp(lambda_k))``; autograd-differentiable, shape ``batch``."""
        if traced(natural[0]):
            return logsumexp(_with_reference(natural[0], anp.zeros, anp.concatenate), axis=-1)
        return _log_partition(np.asarray(natural[0], dtype=float))

    @classmethod
    def natural_to_mean(cls, natural):
        """``(p_0..p_{K-2},)``, the softmax of the logits with the reference zero, shape ``batch + (K - 1,)``."""
        return (_softmax(np.asarray(natural[0], dtype=float))[..., :-1],)

    @classmethod
    def mean_to_natural(cls, mean):
        """``(log(p_k / p_last),)`` from ``(p_0..p_{K-2},)`` with ``p_last = 1 - sum p``.

        Raises
        ------
        ValueError
            If an entry of ``mean[0]`` is <= 0 or the entries sum to 1 or more.
        """
        probs = as_float(mean[0], "mean[0] (p)", ndim_min=1)
        last = 1.0 - probs.sum(axis=-1, keepdims=True)
        if np.any(probs <= 0) or np.any(last <= 0):
            raise ValueError(
                "mean[0] (p) for Categorical must be > 0 with sum < 1 (the last class's probability "
                f"1 - sum > 0); got minimum {number(np.min(probs))} and 1 - sum {number(np.min(last))}"
            )
        return (np.log(probs) - np.log(last),)

    @classmethod
    def fisher(cls, natural):
        """``diag(p) - p p^T`` over the first ``K - 1`` classes, shape ``batch + (K - 1, K - 1)``."""
        p = cls.natural_to_mean(natural)[0]
        return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]

    @classmethod
    def is_valid_natural(cls, natural):
        """Every finite ``lambda`` is valid; shape ``batch``."""
        return np.all(np.isfinite(natural[0]), axis=-1)

    @classmethod
    def _sample(cls, natural, rng, n):
        cumulative = np.cumsum(cls.natural_to_mean(natural)[0], axis=-1)
        uniform = rng.random((n,) + cumulative.shape[:-1])
        return np.sum(uniform[..., None] >= cumulative, axis=-1)

    @classmethod
    def _domain_description(cls):
        return "natural[0] = log(p_k / p_last) must be finite"

    # ------------------------------------------------------------------ readable properties
    @property
    def num_classes(self):
        """Number of classes ``K``."""
        return self._natural[0].shape[-1] + 1

    @property
    def logits(self):
        """Log probabilities relative to the last class, shape ``batch_shape + (K,)`` (last entry 0)."""
        return _with_reference(self._natural[0])

    @property
    def probs(self):
        """Class probabilities, shape ``batch_shape + (K,)``."""
        return _softmax(self._natural[0])

    @property
    def mean(self):
        """``E z = sum_k k p_k`` of the label, shape ``batch_shape``."""
        return self.probs @ np.arange(self.num_classes, dtype=float)

    @property
    def var(self):
        """``Var z`` of the label, shape ``batch_shape``."""
        labels = np.arange(self.num_classes, dtype=float)
        return self.probs @ labels ** 2 - self.mean ** 2
