"""Exact expectations for discrete blocks by enumerating every configuration.

For a block of ``K`` independent discrete variables (Bernoulli or Categorical,
batch shape ``(K,)`` or ``()``) with ``C`` values each, a factor
``log f(z)`` is tabulated once on all ``C^K`` configurations ``c``; then

.. math:: E_q[\\log f_i] = \\sum_c \\Big(\\prod_k q_k(c_k)\\Big) \\log f_i(c),

a polynomial in the mean parameters, differentiated exactly by autograd
(:class:`efvi.inference.generic.ExpectedLogFactor`).  For a single Bernoulli this is
``mu f(1) + (1 - mu) f(0)``.
"""

import itertools

import autograd.numpy as anp
import numpy as np

from ...expfam import Bernoulli, Categorical

from .expected import ExpectedLogFactor

MAX_CONFIGURATIONS = 2 ** 16


class Enumerated(ExpectedLogFactor):
    """A non-conjugate factor on a discrete block, by exact enumeration.

    Parameters
    ----------
    log_factor : callable
        ``log_factor(z)`` for one configuration ``z`` (int array of the block's
        batch shape) returns ``log f_i(z)`` for every data point, shape (N,),
        or a scalar (one data point).
    on : str
        Name of a Bernoulli or Categorical block.
    """

    def __init__(self, log_factor, on):
        if not callable(log_factor):
            raise ValueError(f"log_factor must be callable; got {type(log_factor).__name__}")
        self.log_factor = log_factor
        super().__init__(self._expected, on)

    def bind(self, blocks):
        block = self._require_family(blocks, "on", Bernoulli, Categorical)
        batch = block.prior.batch_shape
        n_values = 2 if block.family is Bernoulli else block.prior.natural[0].shape[-1] + 1
        n_vars = int(np.prod(batch))
        if n_values ** n_vars > MAX_CONFIGURATIONS:
            raise ValueError(
                f"{self.describe()}: {n_values}^{n_vars} configurations exceed the enumeration "
                f"limit {MAX_CONFIGURATIONS}; use a Monte Carlo factor instead"
            )
        configs = np.array(list(itertools.product(range(n_values), repeat=n_vars)), dtype=int)
        table = np.array([np.atleast_1d(self.log_factor(c.reshape(batch))) for c in configs], float)
        if not np.all(np.isfinite(table)):
            raise ValueError("log_factor must be finite for every configuration of the block")
        self.configs, self.table = configs, table
        self.n_values, self.batch = n_values, batch
        self.n_data = table.shape[1]
        super().bind(blocks)

    def _expected(self, mean):
        flat = anp.reshape(mean[0], (-1,) if self.n_values == 2 else (-1, self.n_values - 1))
        if self.n_values == 2:
            probs = anp.stack([1.0 - flat, flat], axis=-1)
        else:
            probs = anp.concatenate([flat, 1.0 - anp.sum(flat, axis=-1, keepdims=True)], axis=-1)
        n_vars = probs.shape[0]
        weights = anp.prod(probs[anp.arange(n_vars)[None, :], self.configs], axis=1)
        return anp.dot(weights, self.table)

    def evaluate(self, q, index=None, rng=None):
        if index is not None:
            raise ValueError("Enumerated factors are evaluated on all their data points (no minibatches)")
        return super().evaluate(q)
