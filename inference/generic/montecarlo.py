"""A factor given only by its log-density: Monte Carlo natural gradients.

For a Gaussian block ``q = N(m, V)`` (reparameterisation, with the Bonnet and
Price identities, Khan and Nielsen, 2018, eq. 15): with ``g_i = grad log f_i(z)`` and
``H_i = hess log f_i(z)`` at draws ``z ~ q``,

.. math:: \\nabla_{\\mu_1} E_q[\\log f_i] = E[g_i] - E[H_i] m, \\qquad
          \\nabla_{\\mu_2} E_q[\\log f_i] = E[H_i] / 2,

the site of point ``i`` in the statistics ``(z, z z^T)``; a DiagonalGaussian
block uses the diagonal of ``H_i``.  Gradients and Hessians come from autograd.

For any other registered family (score function with the sample mean as
control variate): ``grad_lambda E_q[log f_i] = Cov_q(phi(z), log f_i(z))`` and
the natural gradient is ``F(lambda)^{-1}`` times it.
"""

import autograd.numpy as anp
import numpy as np
from autograd import elementwise_grad

from ...expfam import DiagonalGaussian, Gaussian, flatten, unflatten

from ..factor import FactorEval
from .._summed import SummedSitesFactor
from . import _pointwise
from .expected import _infer_n_data


class MonteCarloFactor(_pointwise.PointwiseSites, SummedSitesFactor):
    """A user-written log-density factor, with Monte Carlo natural gradients.

    Parameters
    ----------
    log_density : callable
        ``log_density(z, *data)`` returns ``log f_i(z)`` for every data point.
        For Gaussian blocks it must broadcast: ``z`` of shape ``(S, N, D)``
        pairs draw ``s`` and data point ``i`` and the result has shape
        ``(S, N)`` (write it with ``autograd.numpy`` and ``(X * z).sum(-1)``
        rather than ``X @ z``).  For other families it is called once per draw
        with ``z`` of the block's shape and returns shape (N,).  On a structured
        Gaussian block (``gp.GP``, ``lds.MarkovGP``, ``lds.LDS``) point ``i``
        sees the block's value ``a_i``: ``z`` has shape ``(S, N)`` (draw ``s``
        of ``a_i``) and the result shape ``(S, N)``; the factor then keeps one
        1-D Gaussian site per point (Bonnet and Price in one dimension).
    on : str
        Name of the block.
    data : tuple of arrays
        Per-point arrays (leading dimension N); minibatches slice them.
    n_samples : int
        Draws per evaluation.
    expectation : callable, optional
        ``expectation(posterior, *data) -> (N,)``, the exact ``E_q[log f_i]``,
        used for the ELBO instead of the Monte Carlo estimate.
    """

    stochastic = True

    def __init__(self, log_density, on, data=(), n_samples=16, expectation=None, n_data=None):
        if not callable(log_density):
            raise ValueError(f"log_density must be callable; got {type(log_density).__name__}")
        if int(n_samples) != n_samples or n_samples < 2:
            raise ValueError(f"n_samples must be an integer >= 2; got {n_samples!r}")
        if expectation is not None and not callable(expectation):
            raise ValueError(f"expectation must be callable; got {type(expectation).__name__}")
        self.log_density, self.expectation = log_density, expectation
        self.n_samples = int(n_samples)
        self.data = tuple(np.asarray(d) for d in data)
        self.n_data = _infer_n_data(self.data, n_data)
        self.roles = {"on": on}

    def bind(self, blocks):
        if self._bind_pointwise(blocks):
            return
        super().bind(blocks)
        block = blocks[self.roles["on"]]
        self._family = block.family
        if block.family in (Gaussian, DiagonalGaussian) and block.prior.batch_shape != ():
            raise ValueError(f"{self.describe()}: a Gaussian block must have batch shape (); "
                             f"got {block.prior.batch_shape}")

    def evaluate(self, q, index=None, rng=None):
        rng = np.random.default_rng() if rng is None else rng
        data = tuple(self._rows(d, index) for d in self.data)
        posterior = q[self.roles["on"]]
        if self._pointwise:
            estimate, site = self._pointwise_reparameterised(posterior, index, data, rng)
        elif self._family in (Gaussian, DiagonalGaussian):
            estimate, site = self._reparameterised(posterior, data, rng)
        else:
            estimate, site = self._score_function(posterior, data, rng)
        if self.expectation is not None:
            estimate = float(np.sum(self.expectation(posterior, *data)))
        return FactorEval(float(estimate), {self.roles["on"]: site}, stochastic=True)

    def _reparameterised(self, posterior, data, rng):
        draws = posterior.sample(rng, self.n_samples)                      # (S, D)
        n_rows = len(data[0]) if data else self.n_data
        z = np.ascontiguousarray(np.broadcast_to(draws[:, None, :], (self.n_samples, n_rows, draws.shape[-1])))

        def total(zz):
            return anp.sum(self.log_density(zz, *data))

        values = np.asarray(self.log_density(z, *data), float)
        if values.shape != (self.n_samples, n_rows):
            raise ValueError(
                f"log_density(z, *data) with z of shape {z.shape} must return shape "
                f"({self.n_samples}, {n_rows}); got {values.shape}"
            )
        grad = elementwise_grad(total)
        g = grad(z)                                                          # (S, N, D)
        dim = z.shape[-1]
        hess = np.stack([elementwise_grad(lambda zz, d=d: grad(zz)[..., d].sum())(z)
                         for d in range(dim)], axis=-2)                     # (S, N, D, D)
        mean_g, mean_h = g.mean(axis=0), hess.mean(axis=0)
        mean_h = 0.5 * (mean_h + np.swapaxes(mean_h, -1, -2))
        m = posterior.mean
        if self._family is DiagonalGaussian:
            diag_h = np.diagonal(mean_h, axis1=-2, axis2=-1)
            return values.sum(axis=1).mean(), (mean_g - diag_h * m, 0.5 * diag_h)
        return values.sum(axis=1).mean(), (mean_g - mean_h @ m, 0.5 * mean_h)

    def _pointwise_reparameterised(self, posterior, index, data, rng):
        """Draws ``a_i = m_i + sqrt(v_i) eps`` per point: ``dE/dm = E[g]``, ``dE/dv = E[h] / 2``."""
        m, v = _pointwise.marginals(posterior, index)
        draws = m + np.sqrt(v) * rng.standard_normal((self.n_samples, m.shape[0]))     # (S, N)
        values = np.asarray(self.log_density(draws, *data), float)
        if values.shape != draws.shape:
            raise ValueError(f"log_density(a, *data) with a of shape {draws.shape} must return that shape; "
                             f"got {values.shape}")

        def total(a):
            return anp.sum(self.log_density(a, *data))

        first = elementwise_grad(total)
        g = first(draws)
        h = elementwise_grad(lambda a: anp.sum(first(a)))(draws)
        site = _pointwise.sites_from_derivatives(m, g.mean(axis=0), 0.5 * h.mean(axis=0))
        return values.sum(axis=1).mean(), site

    def _score_function(self, posterior, data, rng):
        family = self._family
        draws = posterior.sample(rng, self.n_samples)                      # (S,) + batch + event
        values = np.stack([np.asarray(self.log_density(d, *data), float) for d in draws])  # (S, N)
        stats = flatten(family.sufficient_stats(draws), family.event_ndims)  # (S,) + batch + (P,)
        centred_stats = stats - stats.mean(axis=0)
        centred_values = values - values.mean(axis=0)
        cov = np.einsum("s...p,sn->...pn", centred_stats, centred_values) / (self.n_samples - 1)
        nat_grad = np.linalg.solve(family.fisher(posterior.natural), cov)    # batch + (P, N)
        per_point = np.moveaxis(nat_grad, -1, 0)                             # (N,) + batch + (P,)
        site = unflatten(per_point, tuple(np.broadcast_to(p, per_point.shape[:1] + p.shape)
                                          for p in posterior.natural), family.event_ndims)
        return values.sum(axis=1).mean(), site
