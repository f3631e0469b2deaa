r"""The gradient of the sparse-GP bound in the kernel hyperparameters and the inducing inputs, at fixed ``q(v)``.

With ``q(v) = N(m, S)`` held fixed (whitened coordinates, so ``KL(q(v) || N(0, I))``
does not depend on the hyperparameters ``theta``), the bound depends on
``theta`` only through the marginals of ``f_i``,

.. math:: \mu_i = \mu_0 + \phi_i^T m, \qquad
          \sigma^2_i = k(x_i, x_i) + \phi_i^T (S - I) \phi_i, \qquad
          \phi_i = L_z(\theta)^{-1} k_z(x_i; \theta),

so its gradient is that of ``F(theta) = sum_i g_{m,i} mu_i + g_{v,i} sigma^2_i``
with the per-point derivatives ``g_m, g_v`` of ``E[log p(y_i | f_i)]`` held
fixed.  At converged CVI sites these are read off the sites
(``pi_i = -2 g_v``, ``gamma_i = g_m + pi_i mu_i``), and by the envelope theorem
this partial derivative is the gradient of the converged bound.  ``F`` is
differentiated by autograd through the kernel, the Cholesky factor of
``K_zz`` and the triangular solve, a block of rows at a time (``F`` is a sum
over points), so no ``N``-sized autograd graph is built.
"""

import numpy as np

ROWS = 16384
"""Data points per autograd pass."""


def bound_gradient(block, v_mean, v_cov, g_m, g_v):
    """``dF/dtheta`` (module notes) for a :class:`efvi.models.gp.sparse.SparseGP` block.

    Parameters
    ----------
    block : SparseGP
    v_mean : ndarray, shape (M,)
    v_cov : ndarray, shape (M, M)
    g_m, g_v : ndarray, shape (N,)
        Derivatives of each point's expected log-likelihood in the mean and the variance of ``f_i``.

    Returns
    -------
    ndarray, shape (n_hyperparameters,), ordered as ``block.hyperparameters()``
    """
    from autograd import grad

    theta = block.hyperparameters()
    gradient = np.zeros_like(theta)
    centred = v_cov - np.eye(v_cov.shape[0])
    objective = grad(_partial_bound)
    for start in range(0, block.n_points, ROWS):
        rows = slice(start, start + ROWS)
        gradient += objective(theta, block, block.X[rows], v_mean, centred, g_m[rows], g_v[rows])
    return gradient


def _partial_bound(theta, block, X, v_mean, centred, g_m, g_v):
    """``sum_i g_m,i phi_i^T m + g_v,i (k_ii + phi_i^T (S - I) phi_i)`` over the rows ``X`` (autograd)."""
    import autograd.numpy as anp
    from autograd.scipy.linalg import solve_triangular

    kernel = block.kernel
    n_kernel = kernel.n_params if block.learn_kernel else 0
    params = anp.exp(theta[:n_kernel]) if block.learn_kernel else kernel._param_vector()
    Z = anp.reshape(theta[n_kernel:], block.Z.shape) if block.learn_inducing else block.Z
    K_zz = kernel._matrix(params, Z, None)
    scale = block.jitter * anp.maximum(anp.mean(kernel._diag(params, Z)), 1e-300)
    chol = anp.linalg.cholesky(K_zz + scale * anp.eye(block.Z.shape[0]))
    phi_t = solve_triangular(chol, kernel._matrix(params, Z, X), lower=True)       # (M, n)
    quadratic = anp.sum(phi_t * anp.dot(centred, phi_t), axis=0)
    return anp.dot(g_m, anp.dot(v_mean, phi_t)) + anp.dot(g_v, kernel._diag(params, X) + quadratic)
