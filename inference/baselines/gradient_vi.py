"""Plain-gradient VI: Adam (or SGD) on the mean and Cholesky factor of a Gaussian block.

This is the method natural-gradient CVI is compared against (Khan and Nielsen, 2018,
Fig. 1b: Bayes-by-Backprop with Adam).  It uses the same factors and the same
exact (or Monte Carlo) expectations as the engine; only the update differs.
A factor's targets summed into the block's natural space are the gradient of
``E_q[log f]`` with respect to the Gaussian mean parameters
``mu = (m, V + m m^T)``; by the chain rule

.. math:: \\nabla_m = \\nabla_{\\mu_1} + 2 \\nabla_{\\mu_2} m, \\qquad
          \\nabla_V = \\nabla_{\\mu_2}, \\qquad \\nabla_L = 2 \\nabla_V L,

to which the gradient of ``-KL(q || p)`` is added in closed form.  The
Cholesky factor ``L`` is parameterised by its strict lower triangle and the
log of its diagonal.
"""

import time

import numpy as np

from ...expfam import Gaussian

from ..blocks import ExpFamBlock


class GradientVIResult:
    """Outcome of :func:`gradient_vi`: ``posterior``, ``elbo_trace``, ``time_trace`` (seconds)."""

    def __init__(self, posterior, elbo_trace, time_trace):
        self.posterior = posterior
        self.elbo_trace = np.asarray(elbo_trace)
        self.time_trace = np.asarray(time_trace)

    @property
    def elbo(self):
        return float(self.elbo_trace[-1])


def gradient_vi(model, block, n_iter=1000, learning_rate=0.05, optimizer="adam", seed=0,
                decay=0.0, callback=None):
    """Maximise the ELBO of a single-Gaussian-block model by plain gradient ascent.

    Parameters
    ----------
    model : efvi.inference.Model
        A model whose only latent block ``block`` is a full-covariance Gaussian.
    block : str
    n_iter : int
    learning_rate : float
        Initial step of Adam (or SGD).
    optimizer : {"adam", "sgd"}
    seed : int
        Seeds Monte Carlo factors.
    decay : float
        Step decay: ``lr_t = learning_rate / (1 + decay * t)``.
    callback : callable, optional
        ``callback(t, elbo, posterior)``; return True to stop.

    Returns
    -------
    GradientVIResult
    """
    prior_block = model.blocks.get(block)
    if not isinstance(prior_block, ExpFamBlock) or prior_block.family is not Gaussian or len(model.blocks) != 1:
        raise ValueError(f"gradient_vi needs a model whose only block {block!r} is a full Gaussian")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd'; got {optimizer!r}")
    prior = prior_block.prior
    m0, prior_precision = np.asarray(prior.mean), -2.0 * np.asarray(prior.natural[1])
    dim = m0.shape[0]
    rng = np.random.default_rng(seed)
    lower = np.tril_indices(dim, -1)
    L = np.linalg.cholesky(np.asarray(prior.cov))
    params = np.concatenate([m0, np.log(np.diag(L)), L[lower]])
    moment1, moment2 = np.zeros_like(params), np.zeros_like(params)
    elbo_trace, time_trace, start = [], [], time.perf_counter()
    for t in range(n_iter):
        m, L = _unpack(params, dim, lower)
        q = Gaussian.from_mean_cov(m, L @ L.T)
        expected, grad_mu1, grad_mu2 = 0.0, np.zeros(dim), np.zeros((dim, dim))
        for factor in model.factors:
            result = factor.evaluate({block: q}, rng=rng)
            expected += result.expected_log
            g1, g2 = factor.message(block, result.targets[block])
            grad_mu1, grad_mu2 = grad_mu1 + g1, grad_mu2 + g2
        elbo = expected - float(q.kl(prior))
        elbo_trace.append(elbo)
        time_trace.append(time.perf_counter() - start)
        if callback is not None and callback(t, elbo, q):
            break
        grad_m = grad_mu1 + 2.0 * grad_mu2 @ m - prior_precision @ (m - m0)
        V_inv = np.linalg.inv(L @ L.T)
        grad_V = grad_mu2 + 0.5 * (V_inv - prior_precision)
        grad_L = 2.0 * grad_V @ L
        grad = np.concatenate([grad_m, np.diag(grad_L) * np.diag(L), grad_L[lower]])
        lr = learning_rate / (1.0 + decay * t)
        if optimizer == "sgd":
            params = params + lr * grad
            continue
        moment1 = 0.9 * moment1 + 0.1 * grad
        moment2 = 0.999 * moment2 + 0.001 * grad * grad
        step = (moment1 / (1 - 0.9 ** (t + 1))) / (np.sqrt(moment2 / (1 - 0.999 ** (t + 1))) + 1e-8)
        params = params + lr * step
    m, L = _unpack(params, dim, lower)
    return GradientVIResult(Gaussian.from_mean_cov(m, L @ L.T), elbo_trace, time_trace)


def _unpack(params, dim, lower):
    L = np.diag(np.exp(params[dim:2 * dim]))
    L[lower] = params[2 * dim:]
    return params[:dim], L
