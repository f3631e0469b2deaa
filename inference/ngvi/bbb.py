"""Bayes by Backprop (Blundell et al., 2015): plain-gradient VI of a mean-field Gaussian, with Adam.

The posterior is ``N(m, diag(sigma^2))`` with ``sigma = softplus(r)``; Adam
minimises the per-example negative ELBO
``E_q[mean NLL] + KL(q || p) / lambda`` by the reparameterisation
``w = m + sigma eps``:

.. math::
    \\nabla_m = \\hat g + \\delta (m - m_0), \\qquad
    \\nabla_r = \\operatorname{sigmoid}(r)\\,
        \\big(\\overline{\\hat g \\epsilon} + \\delta \\sigma - 1 / (\\lambda \\sigma)\\big),

with the KL in closed form (Blundell et al. estimate it by Monte Carlo too).
This is the gradient method natural-gradient VI is compared against in Khan
and Nielsen (2018), Fig. 1b.
"""

import numpy as np

from ...expfam import DiagonalGaussian

from .._adam import adam_update
from ._base import Optimizer, check_betas, check_real
from . import _state_rules as rules


def _softplus(x):
    return np.logaddexp(0.0, x)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


class BayesByBackprop(Optimizer):
    """Bayes by Backprop (Blundell et al., 2015) trained with Adam.

    Parameters
    ----------
    model : object following the ngvi model protocol
    n_data : int
    prior_precision : float or ndarray (P,)
    lr : float
    betas : (float, float)
        Adam's moment decays, each in [0, 1).
    init_std : float, optional
        Initial posterior standard deviation (default ``1 / sqrt(ess + prior_precision)``,
        IVON's and VOGN's start).
    mc_samples, seed : int
    ess : float, optional
        Effective sample size (default ``n_data``).
    prior_mean : float or ndarray (P,)
        Prior mean (default 0; a vector also sets the starting mean, see :class:`Optimizer`).
    eps : float
        Adam's denominator offset.

    Attributes
    ----------
    mean, raw_std : ndarray (P,)
        ``m`` and ``r``, with ``sigma = softplus(r)``.
    """

    state_rules = {**Optimizer.state_rules, "betas": rules.unit_pair, "eps": rules.real(0.0), "mean": rules.array(),
                   "raw_std": rules.array(), "first": rules.array(2), "second": rules.array(2, low=0.0)}

    def __init__(self, model, n_data, *, prior_precision=1.0, lr=1e-2, betas=(0.9, 0.999), init_std=None,
                 mc_samples=1, seed=0, ess=None, prior_mean=0.0, eps=1e-8):
        super().__init__(model, n_data, prior_precision=prior_precision, lr=lr, ess=ess,
                         mc_samples=mc_samples, seed=seed, prior_mean=prior_mean)
        self.betas = check_betas(betas)
        self.eps = check_real(eps, "eps", low=0.0, expected="a positive finite float")
        init_std = 1.0 / np.sqrt(self.ess + self.prior_precision) if init_std is None else check_real(
            init_std, "init_std", low=0.0, expected="a positive finite float or None")
        self.mean = self._init_params()
        self.raw_std = np.full(self.n_params, np.log(np.expm1(init_std)))
        self.first = np.zeros(2 * self.n_params)
        self.second = np.zeros(2 * self.n_params)

    @property
    def std(self):
        return _softplus(self.raw_std)

    @property
    def precision(self):
        return 1.0 / self.std ** 2

    @property
    def posterior(self):
        """The mean-field Gaussian posterior, an :class:`efvi.expfam.DiagonalGaussian`."""
        return DiagonalGaussian.from_mean_var(self.mean, self.std ** 2)

    def _check_precision(self, state, step):
        std = _softplus(state["raw_std"])
        if not np.all((std > 0) & np.isfinite(1.0 / std ** 2)):
            raise FloatingPointError(f"step {step}: a proposed standard deviation underflowed; state left unchanged")

    def _sample(self, rng, n):
        return self.mean + rng.standard_normal((n, self.n_params)) * self.std

    def _propose(self, X, y, batch_size, step):
        std = self.std
        noise = self._standard_normal()
        nll, grads, _ = self._evaluate(self.mean + noise * std, X, y, batch_size, step)
        grad_mean = grads.mean(axis=0) + self._prior_gradient(self.mean)
        grad_std = np.mean(grads * noise, axis=0) + self.delta * std - 1.0 / (self.ess * std)
        grad = np.concatenate([grad_mean, grad_std * _sigmoid(self.raw_std)])
        params = np.concatenate([self.mean, self.raw_std])
        params, first, second = adam_update(params, grad, self.first, self.second, step, self.lr,
                                            *self.betas, self.eps)
        return ({"mean": params[:self.n_params], "raw_std": params[self.n_params:], "first": first,
                 "second": second}, float(np.mean(nll)))
