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
:math:`\\lambda`.  On plain arrays both are computed in one compiled pass the
way scipy's ``logsumexp`` (the largest terms apart, :math:`\\log1p` of the rest)
and ``softmax`` compute them, with compensated sums and without their per-call
overhead, and a distribution keeps the two together (its KL, whose inner
product is compiled too, needs both); where autograd traces :math:`A` (to
differentiate it), autograd's ``logsumexp`` computes it.
The sufficient statistic is the one-hot encoding of the label without its
last entry, so it depends on :math:`K`: use
:meth:`Categorical.sufficient_stats` with ``num_classes`` or the object's
:meth:`sufficient_stats_of` (and likewise :meth:`Categorical.in_support`).
``logpdf`` is ``-inf`` at a label that is not an integer in ``0..K-1``;
``sufficient_stats`` raises for one.
"""

from math import exp, log, log1p

import autograd.numpy as anp
import numba
import numpy as np

from ._base import ExponentialFamily
from ._differentiable import logsumexp, traced
from ._kernels import _NUMBA_OPTIONS, compensated_add
from ._registry import register
from .checks import as_float, number, violation


def _with_reference(logits, zeros=np.zeros, concatenate=np.concatenate):
    """Append the reference class's zero logit: shape ``(..., K - 1)`` to ``(..., K)``."""
    return concatenate([logits, zeros(np.shape(logits)[:-1] + (1,))], axis=-1)


@numba.jit(inline="always", **_NUMBA_OPTIONS)
def _softmax_row(logits, probs):
    """``A`` of one row of logits ``(K - 1,)``, and its class probabilities into ``probs`` ``(K,)``.

    See :func:`_log_partition_and_probs`; the sums are compensated (``compensated_add``).
    """
    free = logits.shape[0]
    top = 0.0
    for k in range(free):
        top = max(top, logits[k])
    count, rest, rest_error, total, total_error = 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(free + 1):
        logit = logits[k] if k < free else 0.0
        if logit == top:
            weight = 1.0
            count += 1.0
        else:
            weight = exp(logit - top)
            rest, rest_error = compensated_add(rest, rest_error, weight)
        probs[k] = weight
        total, total_error = compensated_add(total, total_error, weight)
    total += total_error
    for k in range(free + 1):
        probs[k] /= total
    return top + log(count) + log1p((rest + rest_error) / count)


@numba.jit(**_NUMBA_OPTIONS)
def _log_partition_and_probs_kernel(logits, log_partition, probs):
    """:func:`_softmax_row` of each row of ``logits`` ``(n, K - 1)``, into ``log_partition`` ``(n,)`` and
    ``probs`` ``(n, K)``."""
    for i in range(logits.shape[0]):
        log_partition[i] = _softmax_row(logits[i], probs[i])


@numba.jit(**_NUMBA_OPTIONS)
def _kl_kernel(logits_q, logits_p, log_partition_p, log_partition_q, probs_q, out):
    """``KL(q || p) = A_p - A_q - <logits_p - logits_q, p_q>`` row by row (logits ``(n, K - 1)``, ``A``
    ``(n,)``, probabilities ``(n, K)``), the inner product compensated (``compensated_add``)."""
    for i in range(logits_q.shape[0]):
        inner, error = 0.0, 0.0
        for k in range(logits_q.shape[1]):
            inner, error = compensated_add(inner, error, (logits_p[i, k] - logits_q[i, k]) * probs_q[i, k])
        out[i] = log_partition_p[i] - log_partition_q[i] - (inner + error)


def _log_partition_and_probs(logits):
    """``A = log(1 + sum_k exp(logits_k))`` and the softmax of the logits with the reference zero.

    For a plain array of shape ``(..., K - 1)``; shapes ``(...)`` and ``(..., K)``.
    As ``scipy.special.logsumexp`` and ``softmax`` compute them (one compiled
    pass, sharing the exponentials): the largest of the logits and the
    reference zero (``count`` of them) apart, ``A = top + log(count) +
    log1p(rest / count)`` with ``rest`` the sum of the other ``exp(logit - top)``,
    and the probabilities ``exp(logit - top)`` normalised.
    """
    logits = np.asarray(logits, dtype=float)
    batch, free = logits.shape[:-1], logits.shape[-1]
    log_partition, probs = np.empty(batch), np.empty(batch + (free + 1,))
    _log_partition_and_probs_kernel(np.ascontiguousarray(logits).reshape(-1, free), log_partition.reshape(-1),
                                    probs.reshape(-1, free + 1))
    return log_partition, probs


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
    def log_partition(cls, natural):
        """``log(1 + sum_k exp(lambda_k))``; autograd-differentiable, shape ``batch``."""
        if traced(natural[0]):
            return logsumexp(_with_reference(natural[0], anp.zeros, anp.concatenate), axis=-1)
        return _log_partition_and_probs(natural[0])[0]

    @classmethod
    def natural_to_mean(cls, natural):
        """``(p_0..p_{K-2},)``, the softmax of the logits with the reference zero, shape ``batch + (K - 1,)``."""
        return (_log_partition_and_probs(natural[0])[1][..., :-1],)

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

    # ------------------------------------------------------------------ cached pieces
    def _softmax(self):
        """``(A, probabilities)`` of this batch by one compiled pass, computed once (read-only)."""
        pair = getattr(self, "_softmax_pair", None)
        if pair is None:
            pair = _log_partition_and_probs(self._natural[0])
            for part in pair:
                part.setflags(write=False)
            self._softmax_pair = pair
        return pair

    def _compute_log_partition(self):
        return self._softmax()[0]

    def _kl(self, other):
        """The base class's Bregman divergence, its inner product in the compiled :func:`_kl_kernel`."""
        logits_q, logits_p = self._natural[0], other.natural[0]
        log_partition_p = other.log_partition_value()
        if logits_q.shape == logits_p.shape:
            log_partition_q, probs_q = self._softmax()
        else:
            logits_q, logits_p = np.broadcast_arrays(logits_q, logits_p)
            log_partition_p = np.broadcast_to(log_partition_p, logits_q.shape[:-1])
            log_partition_q, probs_q = _log_partition_and_probs(logits_q)
        batch, free = logits_q.shape[:-1], logits_q.shape[-1]
        out = np.empty(batch)
        _kl_kernel(np.ascontiguousarray(logits_q).reshape(-1, free), np.ascontiguousarray(logits_p).reshape(-1, free),
                   np.ascontiguousarray(log_partition_p).reshape(-1), log_partition_q.reshape(-1),
                   probs_q.reshape(-1, free + 1), out.reshape(-1))
        return out

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
        return self._softmax()[1].copy()

    @property
    def mean(self):
        """``E z = sum_k k p_k`` of the label, shape ``batch_shape``."""
        return self.probs @ np.arange(self.num_classes, dtype=float)

    @property
    def var(self):
        """``Var z`` of the label, shape ``batch_shape``."""
        labels = np.arange(self.num_classes, dtype=float)
        return self.probs @ labels ** 2 - self.mean ** 2
