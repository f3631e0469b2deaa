r"""Output layers of a network: the log-likelihood of its outputs, their residuals and output Hessians.

Each output type supplies, for network outputs ``F`` of shape ``(S, B, K)``
and labels ``y`` of shape ``(B,)``,

* ``log_lik(F, y, xp)``: :math:`\log p(y_n \mid f_n)`, shape (S, B); ``xp`` is
  ``numpy`` or ``autograd.numpy`` (the exact-Hessian route differentiates it);
* ``residual(F, y)``: :math:`r_n = \partial \log p / \partial f_n`, shape (S, B, K);
* ``precision_factor(F)``: :math:`L_n` with
  :math:`L_n L_n^\top = \Lambda_n = -\partial^2 \log p / \partial f_n^2`,
  shape (S, M, B, K) (the ``M`` columns first);
* ``predictive(F)``: the predictive averaged over the ``S`` samples.

=================  =======================================  ==========================================
output             :math:`\Lambda_n`                        factor :math:`L_n` (M columns)
=================  =======================================  ==========================================
Gaussian           :math:`1/\sigma^2`                       :math:`1/\sigma` (M = 1)
Bernoulli-logit    :math:`p(1-p)`                           :math:`\sqrt{p(1-p)}` (M = 1)
Softmax            :math:`\mathrm{diag}(p) - p p^\top`      :math:`\sqrt{p_m}(e_m - p)` (M = K)
=================  =======================================  ==========================================

For the softmax, :math:`\sum_m p_m (e_m - p)(e_m - p)^\top = \mathrm{diag}(p) - 2pp^\top + pp^\top\sum_m p_m`,
which is :math:`\Lambda_n` because :math:`\sum_m p_m = 1`.
"""

import math

import numpy as np
from scipy.special import expit, softmax

from ..likelihoods import Bernoulli, Gaussian

_LOG_2PI = math.log(2.0 * math.pi)


def _logsumexp(values, xp):
    shift = np.max(values, axis=-1, keepdims=True) if xp is np else xp.max(values, axis=-1, keepdims=True)
    return shift[..., 0] + xp.log(xp.sum(xp.exp(values - shift), axis=-1))


class GaussianOutput:
    """Regression: ``y ~ N(f, variance)`` with one output unit."""

    task = "regression"
    support = "finite real numbers"
    outputs_wanted = "1 output unit"

    def __init__(self, variance):
        self.variance = variance

    def n_outputs_ok(self, n_outputs):
        return n_outputs == 1

    def n_classes(self, n_outputs):
        return None

    def outside_support(self, y, n_outputs):
        return np.zeros(y.shape, bool)

    def log_lik(self, outputs, y, xp=np):
        return -0.5 * (_LOG_2PI + math.log(self.variance) + (y - outputs[..., 0]) ** 2 / self.variance)

    def residual(self, outputs, y):
        return (y[:, None] - outputs) / self.variance

    def precision_factor(self, outputs):
        return np.full((outputs.shape[0], 1) + outputs.shape[1:], 1.0 / math.sqrt(self.variance))

    def predictive(self, outputs):
        """Mean and variance of y under the equal mixture of the samples' Gaussians, each shape (B,)."""
        means = outputs[..., 0]
        mean = means.mean(axis=0)
        return mean, self.variance + np.mean(np.square(means - mean), axis=0)


class BernoulliOutput:
    """Binary labels: ``P(y = 1) = sigmoid(f)`` with one output unit."""

    task = "classification"
    support = "labels 0 or 1"
    outputs_wanted = "1 output unit"

    def n_outputs_ok(self, n_outputs):
        return n_outputs == 1

    def n_classes(self, n_outputs):
        return 2

    def outside_support(self, y, n_outputs):
        return (y != 0.0) & (y != 1.0)

    def log_lik(self, outputs, y, xp=np):
        logit = outputs[..., 0]
        return y * logit - xp.logaddexp(0.0, logit)

    def residual(self, outputs, y):
        return y[:, None] - expit(outputs)

    def precision_factor(self, outputs):
        prob = expit(outputs)
        return np.sqrt(prob * (1.0 - prob))[:, None]

    def predictive(self, outputs):
        """Class probabilities ``[1 - p, p]`` averaged over the samples, shape (B, 2)."""
        prob = expit(outputs[..., 0]).mean(axis=0)
        return np.column_stack([1.0 - prob, prob])


class Softmax:
    r"""Categorical labels ``0, ..., K-1`` with softmax probabilities of ``K >= 2`` output units.

    .. math::

        \log p(y = k \mid f) = f_k - \log \sum_j e^{f_j}.

    An output layer for :class:`efvi.models.nn.MLP` (``likelihood=nn.Softmax()``);
    it is not a scalar-latent likelihood of :mod:`efvi.models.likelihoods`.
    """

    task = "classification"
    support = "integer labels 0, ..., K-1"
    outputs_wanted = "at least 2 output units"

    def __repr__(self):
        return "Softmax()"

    def n_outputs_ok(self, n_outputs):
        return n_outputs >= 2

    def n_classes(self, n_outputs):
        return n_outputs

    def outside_support(self, y, n_outputs):
        return (y != np.floor(y)) | (y < 0) | (y > n_outputs - 1)

    def log_lik(self, outputs, y, xp=np):
        one_hot = np.eye(outputs.shape[-1])[y.astype(np.intp)]
        return xp.sum(outputs * one_hot, axis=-1) - _logsumexp(outputs, xp)

    def residual(self, outputs, y):
        residual = -softmax(outputs, axis=-1)
        residual[:, np.arange(len(y)), y.astype(np.intp)] += 1.0
        return residual

    def precision_factor(self, outputs):
        prob = softmax(outputs, axis=-1)                                      # (S, B, K)
        n_classes = prob.shape[-1]
        columns = np.eye(n_classes)[None, :, None, :] - prob[:, None]        # e_m - p: (S, M, B, K)
        return np.sqrt(np.moveaxis(prob, -1, 1))[..., None] * columns

    def predictive(self, outputs):
        """Class probabilities averaged over the samples, shape (B, K)."""
        return softmax(outputs, axis=-1).mean(axis=0)


def output_for(likelihood):
    """The output layer for a likelihood object: Gaussian (known variance), Bernoulli (logit) or Softmax.

    Raises
    ------
    ValueError
        Naming ``likelihood`` for any other likelihood, a Gaussian whose
        precision is a latent block, or a Bernoulli with another link.
    """
    if isinstance(likelihood, Softmax):
        return likelihood
    if isinstance(likelihood, Gaussian):
        if likelihood.variance is None:
            raise ValueError("likelihood must be a Gaussian with a known variance for an MLP; got a precision "
                             f"held in the latent block {likelihood.precision_block!r}")
        return GaussianOutput(likelihood.variance)
    if isinstance(likelihood, Bernoulli):
        if likelihood.link != "logit":
            raise ValueError(f"likelihood must be a Bernoulli with the logit link for an MLP; got link "
                             f"{likelihood.link!r}")
        return BernoulliOutput()
    raise ValueError("likelihood must be likelihoods.Gaussian(variance=...), likelihoods.Bernoulli() (logit) or "
                     f"nn.Softmax(); got {likelihood!r}")
