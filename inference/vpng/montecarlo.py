r"""Monte Carlo and Gauss-Newton estimates of :math:`F_r` for reparameterisable models.

The model is written as a function ``predict(params, noise)``: the variational
parameters :math:`\lambda` (P,) and standard-normal noise :math:`\varepsilon`
give the parameters :math:`\eta = h(\lambda, \varepsilon)` of the observation
distribution :math:`p(x' \mid \eta)` (an output of :mod:`.outputs`), through a
reparameterised draw :math:`z = g(\lambda, \varepsilon)` of the latent
variables.  ``predict`` must be written in ``autograd.numpy`` and broadcast
over leading axes: ``params`` (..., P) and ``noise`` (..., d_noise) give
``eta`` (..., d_out).

**Nested Monte Carlo** (:func:`predictive_fisher_mc`) estimates :math:`F_r`
itself.  The score of the mixture :math:`r(x') = \mathbb E_\varepsilon
p(x' \mid h(\lambda, \varepsilon))` is estimated by that of a :math:`K`-sample
average, :math:`\nabla_\lambda \log \frac1K \sum_k p(x' \mid h(\lambda,
\varepsilon_k))` (a self-normalised average of the per-sample scores), for
:math:`x' \sim r`.  Two independent batches of :math:`K` noise draws give two
such scores for each :math:`x'`, and their cross product (symmetrised) is
averaged: the variance of the inner estimate, which would inflate a plain
outer product, cancels, and the remaining self-normalisation bias is
:math:`O(1/K)`.  It converges to the closed form of
:func:`.linear_gaussian_fisher` (tested).

**Gauss-Newton** (:func:`gauss_newton_fisher`) is the seed's practical
estimate :math:`F_{r'}` (section 4, steps 1-2): the Fisher of
:math:`r'(x') = p(x' \mid h(\lambda, \varepsilon))` for a fixed draw of the
noise, averaged over draws,

.. math:: F_{r'} = \mathbb E_\varepsilon \big[ J_\varepsilon^\top
          F_p(\eta_\varepsilon) J_\varepsilon \big], \qquad
          J_\varepsilon = \partial \eta / \partial \lambda ,

which is the expected outer product of the scores of :math:`r'` in closed form
over :math:`x'`.  It is positive semi-definite but may be singular: the
optimiser adds the damping :math:`\mu I` (step 3).  It is not :math:`F_r`: it
ignores how the spread of :math:`q` widens the predictive distribution.  In
the Gaussian-linear toy it gives :math:`\Sigma^{-1}`, the
:math:`\sigma \to 0` limit of Theorem 1.
"""

import autograd.numpy as anp
import numpy as np
from autograd import grad

from ...expfam.checks import as_float, check_integer
from ._checks import check_callable


def _check(predict, params, output, noise_dim):
    check_callable(predict, "predict", "a function predict(params, noise) -> eta")
    params = as_float(params, "params")
    if params.ndim != 1 or params.size == 0:
        raise ValueError(f"params must be a non-empty vector (P,); got shape {params.shape}")
    for method in ("sample", "log_prob", "fisher"):
        if not callable(getattr(output, method, None)):
            raise ValueError(f"output must provide sample, log_prob and fisher (e.g. GaussianOutput, "
                             f"BernoulliOutput); got {output!r} without {method}")
    return params, check_integer(noise_dim, "noise_dim", minimum=1)


def _eta(predict, params, noise, name="predict"):
    eta = np.asarray(predict(params, noise), dtype=float)
    if eta.ndim != noise.ndim or eta.shape[:-1] != noise.shape[:-1]:
        raise ValueError(f"{name} must map params and noise of leading shape {noise.shape[:-1]} to eta of shape "
                         f"{noise.shape[:-1]} + (d_out,); got shape {eta.shape}")
    if not np.all(np.isfinite(eta)):
        raise ValueError(f"{name} must return finite values; got a non-finite eta")
    return eta


def predictive_fisher_mc(predict, params, output, *, noise_dim, n_outer=2000, n_inner=200, seed=0):
    r"""Nested Monte Carlo estimate of the variational predictive Fisher :math:`F_r`.

    Parameters
    ----------
    predict : callable
        ``predict(params (..., P), noise (..., noise_dim)) -> eta (..., d_out)``,
        autograd-safe and broadcasting.
    params : array_like, shape (P,)
        The variational parameters :math:`\lambda`.
    output : GaussianOutput or BernoulliOutput
        The observation distribution :math:`p(x' \mid \eta)`.
    noise_dim : int
        Dimension of the standard-normal noise.
    n_outer, n_inner : int
        Draws :math:`x' \sim r` and, for each, the number :math:`K` of noise
        draws in each of the two estimates of the score of :math:`\log r`.
    seed : int or numpy.random.Generator

    Returns
    -------
    ndarray, shape (P, P)
    """
    params, noise_dim = _check(predict, params, output, noise_dim)
    n_outer = check_integer(n_outer, "n_outer", minimum=1)
    n_inner = check_integer(n_inner, "n_inner", minimum=1)
    rng = np.random.default_rng(seed)
    outer_eta = _eta(predict, params, rng.standard_normal((n_outer, noise_dim)))
    new_data = output.sample(outer_eta, rng)[:, None, :]                           # (O, 1, d_out)
    inner_noise = rng.standard_normal((n_outer, 2, n_inner, noise_dim))

    def total_log_r(rows):                                      # rows (O, 2, P): one copy per x' and inner batch
        eta = predict(rows[:, :, None, :], inner_noise)                            # (O, 2, K, d_out)
        from autograd.scipy.special import logsumexp  # here: autograd.scipy imports scipy.stats (~0.45 s)

        return anp.sum(logsumexp(output.log_prob(new_data[:, None], eta), axis=2))

    scores = grad(total_log_r)(np.tile(params, (n_outer, 2, 1)))                    # (O, 2, P)
    cross = scores[:, 0].T @ scores[:, 1] / n_outer
    return 0.5 * (cross + cross.T)


def gauss_newton_fisher(predict, params, output, *, noise_dim, n_samples=100, seed=0):
    r"""Gauss-Newton estimate :math:`F_{r'} = \frac1S \sum_s J_s^\top F_p(\eta_s) J_s` (undamped).

    Parameters are as in :func:`predictive_fisher_mc`; ``n_samples`` noise
    draws :math:`\varepsilon_s`.  Costs one reverse pass per output
    dimension, so it suits small models; for dense networks use
    :class:`KroneckerFisher`.

    Returns
    -------
    ndarray, shape (P, P)
    """
    params, noise_dim = _check(predict, params, output, noise_dim)
    n_samples = check_integer(n_samples, "n_samples", minimum=1)
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((n_samples, noise_dim))
    rows = np.tile(params, (n_samples, 1))
    eta = _eta(predict, rows, noise)
    jacobian = np.stack([grad(lambda r, j=j: anp.sum(predict(r, noise)[:, j]))(rows)
                         for j in range(eta.shape[-1])], axis=1)                   # (S, d_out, P)
    return np.einsum("sop,soq,sqr->pr", jacobian, output.fisher(eta), jacobian) / n_samples
