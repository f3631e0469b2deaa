r"""The gradient of the sparse-GP bound in the kernel hyperparameters and the inducing inputs, at fixed ``q(u)``.

With ``q(u) = N(mu_0 + a, C C^T)`` held fixed at the inducing inputs (``a``
and ``C`` do not change with the hyperparameters ``theta``), the whitened
posterior moves with ``theta``: ``v = L_z(theta)^{-1} (u - mu_0)`` has mean
``m(theta) = L_z^{-1} a`` and covariance ``S(theta) = A A^T`` with
``A = L_z^{-1} C``.  The bound then depends on ``theta`` through the marginals
of ``f_i`` and through the KL term,

.. math:: \mu_i = \mu_0 + \phi_i^T m, \qquad
          \sigma^2_i = k(x_i, x_i) + \phi_i^T (S - I) \phi_i, \qquad
          \phi_i = L_z(\theta)^{-1} k_z(x_i; \theta),

.. math:: KL(q(v) \| N(0, I)) = \tfrac12 (\lVert A \rVert_F^2 + \lVert m \rVert^2 - M - \log|C C^T|)
          + \textstyle\sum_j \log (L_z)_{jj},

so its gradient is that of ``F(theta) = s sum_i (g_{m,i} mu_i + g_{v,i} sigma^2_i) - KL``
with the per-point derivatives ``g_m, g_v`` of ``E[log p(y_i | f_i)]`` held
fixed (``s = N / B`` for a minibatch, 1 for all points).

* At converged CVI sites (full-batch learning) ``g_m, g_v`` are read off the
  sites (``pi_i = -2 g_v``, ``gamma_i = g_m + pi_i mu_i``); there the bound is
  stationary in ``q``, so by the envelope theorem this partial derivative is
  the gradient of the converged bound, whatever is held fixed.
* In a minibatch fit they are the CVI targets of the minibatch at ``q``, and
  ``F``'s gradient is an unbiased estimate of the bound's gradient at fixed
  ``q(u)``.  Holding ``q(u)`` rather than the whitened ``q(v)`` fixed is
  what makes such steps efficient: scaling the kernel's variance at fixed
  ``q(v)`` rescales the posterior mean of ``f`` with it, so the variance
  and ``q(v)`` can only move together, slowly (on a 4,000-point regression,
  50 epochs of Adam at fixed ``q(v)`` stopped 6.7 nats from the optimum, as
  GPflow's whitened SVGP does, 7.9; at fixed ``q(u)`` 0.6).

``F``'s derivatives in the kernel matrices are closed forms.  At the
current ``theta`` (where ``m`` and ``S`` are ``q``'s own ``v_mean`` and
``v_cov``), with ``phi = L_z^{-1} K_zx`` and, summed over the points,
``w = sum_i s g_{m,i} phi_i`` and ``Q = sum_i s g_{v,i} phi_i phi_i^T``:

.. math:: \partial F / \partial K_zx = L_z^{-T} \big(m (s g_m)^T + 2 (S - I) \Phi \operatorname{diag}(s g_v)\big),
          \qquad \partial F / \partial k(x_i, x_i) = s g_{v,i},

.. math:: \partial F / \partial K_zz = L_z^{-T} \big(-w m^T - Q S - S Q + Q + \tfrac12 (S + m m^T - I)\big) L_z^{-1}

(the jitter, a fraction of the mean of ``diag K_zz``, adds the trace of the
last to that diagonal).  Everything inside the brackets is in the whitened
coordinates, so nothing is multiplied by ``K_zz^{-1}`` explicitly: two
triangular solves at the end are as accurate as differentiating through the
Cholesky factor.  One reverse pass of autograd through the kernel alone then
takes these to the hyperparameters and the inducing inputs, a block of rows at
a time (each block's ``K_zx`` cotangent is formed and used at once), so
nothing ``N``-sized is kept, no ``N``-sized autograd graph is built and no
linear algebra is traced (checked against finite differences of an independent SVGP bound).
"""

import numpy as np
from scipy.linalg import solve_triangular

ROWS = 16384
"""Data points per autograd pass."""


def bound_gradient(block, q, parts):
    """``dF/dtheta`` (module notes) for a :class:`efvi.models.gp.sparse.SparseGP` block at fixed ``q(u)``.

    Parameters
    ----------
    block : SparseGP
    q : SparseGPPosterior
        The posterior whose ``q(u)`` is held.
    parts : list of (g_m, g_v, index, scale)
        The data terms, one per factor observing the block: derivatives of each
        point's expected log-likelihood in the mean and the variance of ``f_i``
        (shape (N,), or (B,) for the points ``index`` of a minibatch; ``index``
        None: all points) and the weight of the term (``N / B`` for a minibatch).

    Returns
    -------
    ndarray, shape (n_hyperparameters,), ordered as ``block.hyperparameters()``
    """
    from autograd import grad

    kernel, Z, L = block.kernel, block.Z, block.inducing_chol
    theta = block.hyperparameters()
    m, S = q.v_mean, q.v_cov
    size = L.shape[0]
    spread = S - np.eye(size)
    w, Q = np.zeros(size), np.zeros((size, size))
    gradient = np.zeros_like(theta)
    through = grad(_kernel_terms)
    blocks = []
    for g_m, g_v, index, scale in parts:
        for start in range(0, len(g_m), ROWS):
            rows = slice(start, start + ROWS)
            blocks.append((rows if index is None else index[rows], scale * g_m[rows], scale * g_v[rows]))
    for i, (rows, mean_weights, var_weights) in enumerate(blocks):
        X = block.X[rows]
        phi = block.feature_rows(rows)[0].T              # L_z^{-1} K_zx: kept, or built (once a minibatch)
        w += phi @ mean_weights
        Q += (phi * var_weights) @ phi.T
        G_zx = _back(L, np.outer(m, mean_weights) + 2.0 * (spread @ phi) * var_weights)
        if i < len(blocks) - 1:
            gradient += through(theta, block, (X, G_zx, var_weights), None)
    QS = Q @ S
    H = -np.outer(w, m) - QS - QS.T + Q + 0.5 * (spread + np.outer(m, m))
    G_zz = _back(L, _back(L, H).T).T                     # L^{-T} H L^{-1}
    jitter = block.jitter * np.trace(G_zz) if np.mean(kernel.diag(Z)) > 1e-300 else 0.0
    # the last block of rows and K_zz in one reverse pass (a minibatch is one block: one pass a step)
    last = (X, G_zx, var_weights) if blocks else None
    return gradient + through(theta, block, last, (G_zz, jitter))


def _back(L, B):
    """``L^{-T} B`` for the lower triangular ``L``."""
    return solve_triangular(L, B, lower=True, trans="T", check_finite=False)


def _kernel_parts(theta, block):
    """The kernel's parameters and the inducing inputs at ``theta`` (autograd)."""
    import autograd.numpy as anp

    kernel = block.kernel
    n_kernel = kernel.n_params if block.learn_kernel else 0
    params = anp.exp(theta[:n_kernel]) if block.learn_kernel else kernel._param_vector()
    Z = anp.reshape(theta[n_kernel:], block.Z.shape) if block.learn_inducing else block.Z
    return params, Z


def _kernel_terms(theta, block, rows, inducing):
    """``<G_zx, K_zx> + <g, diag K_xx>`` over ``rows = (X, G_zx, g)`` plus, with ``inducing = (G_zz, jitter)``,
    ``<G_zz, K_zz> + jitter mean(diag K_zz)``, at ``theta`` (autograd: its gradient is the chain rule)."""
    import autograd.numpy as anp

    kernel = block.kernel
    params, Z = _kernel_parts(theta, block)
    value = 0.0
    if rows is not None:
        X, G_zx, g = rows
        value = anp.sum(G_zx * kernel._matrix(params, Z, X)) + anp.dot(g, kernel._diag(params, X))
    if inducing is not None:
        G_zz, jitter = inducing
        value = value + anp.sum(G_zz * kernel._matrix(params, Z, None)) + jitter * anp.mean(kernel._diag(params, Z))
    return value
