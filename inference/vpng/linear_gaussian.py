r"""The variational predictive Fisher of a Gaussian-linear model, in closed form.

The model observes :math:`x' \mid z \sim \mathcal N(A z + b, \Sigma_x)` and the
variational factor is mean-field Gaussian,
:math:`q(z; \lambda) = \mathcal N(m, \operatorname{diag}(s^2))`.  The
variational predictive distribution :math:`r(x'; \lambda) = \int p(x' \mid z)
q(z; \lambda) \, dz` is then Gaussian,

.. math:: r(x'; \lambda) = \mathcal N\big(A m + b,\; C\big), \qquad
          C = \Sigma_x + A \operatorname{diag}(s^2) A^\top ,

and its Fisher information is that of a Gaussian whose mean depends on
:math:`m` and whose covariance depends on :math:`\log s`:

.. math:: F_r^{(m, m)} = A^\top C^{-1} A = M, \qquad
          F_r^{(\log s_k, \log s_l)} = \tfrac12 \operatorname{tr}\big(C^{-1}
          \partial_k C \, C^{-1} \partial_l C\big) = 2 \, (s_k M_{kl} s_l)^2 ,

with no cross terms between mean and covariance (a Gaussian's Fisher is block
diagonal in these).  With a design per data point :math:`A_i` (a regression),
:math:`F_r` is the average over the empirical distribution of the data, as in
eq. 3 of Tang and Ranganath.  The bivariate toy of their section 3 is
:math:`A = I`, :math:`\Sigma_x = \Sigma`, :math:`s = \sigma`, whence
Theorem 1, :math:`F_r = (\Sigma + \sigma^2 I)^{-1}`.
"""

import numpy as np

from ...expfam.checks import as_float, check_pd, check_positive

WRT = ("mean", "mean_and_log_std")


def linear_gaussian_fisher(design, noise_cov, q_std, *, wrt="mean"):
    r"""Variational predictive Fisher :math:`F_r` of a Gaussian-linear model.

    Parameters
    ----------
    design : array_like, shape (d_obs, d_latent) or (n, d_obs, d_latent)
        :math:`A` (one design for every data point) or one :math:`A_i` per
        data point; :math:`F_r` averages over the ``n`` points.
    noise_cov : float or array_like, shape (d_obs, d_obs)
        :math:`\Sigma_x`: a positive variance (times the identity) or a
        symmetric positive-definite matrix.
    q_std : float or array_like, shape (d_latent,)
        The standard deviations :math:`s` of the mean-field Gaussian
        :math:`q(z)`; positive.
    wrt : {"mean", "mean_and_log_std"}
        The variational parameters: the mean only (the standard deviations
        fixed, as in the toy of Tang and Ranganath, 2019), or the mean followed by
        :math:`\log s`.

    Returns
    -------
    ndarray, shape (d_latent, d_latent) or (2 d_latent, 2 d_latent)
        :math:`F_r`; it does not depend on the variational mean.
    """
    design = as_float(design, "design")
    if design.ndim not in (2, 3) or 0 in design.shape:
        raise ValueError(f"design must have shape (d_obs, d_latent) or (n, d_obs, d_latent); got shape {design.shape}")
    designs = design[None] if design.ndim == 2 else design
    d_obs, d_latent = designs.shape[1:]
    noise = as_float(noise_cov, "noise_cov")
    if noise.ndim == 0:
        noise = check_positive(noise, "noise_cov") * np.eye(d_obs)
    elif noise.shape != (d_obs, d_obs):
        raise ValueError(f"noise_cov must be a positive float or a ({d_obs}, {d_obs}) matrix to match design; "
                         f"got shape {noise.shape}")
    noise = check_pd(noise, "noise_cov")
    std = check_positive(q_std, "q_std")
    if std.ndim == 0:
        std = np.full(d_latent, float(std))
    if std.shape != (d_latent,):
        raise ValueError(f"q_std must be a positive float or have shape ({d_latent},) to match design; "
                         f"got shape {std.shape}")
    if wrt not in WRT:
        raise ValueError(f"wrt must be one of {WRT}; got {wrt!r}")
    return _linear_gaussian_fisher(designs, noise, std, wrt)


def _linear_gaussian_fisher(designs, noise, std, wrt):
    variance = std ** 2
    cov = noise + np.einsum("nok,k,npk->nop", designs, variance, designs)
    per_point = designs.transpose(0, 2, 1) @ np.linalg.solve(cov, designs)       # M_i = A_i^T C_i^-1 A_i
    per_point = 0.5 * (per_point + per_point.transpose(0, 2, 1))
    mean_block = per_point.mean(axis=0)
    if wrt == "mean":
        return mean_block
    log_std_block = 2.0 * np.mean((std[:, None] * per_point * std[None, :]) ** 2, axis=0)
    d = mean_block.shape[0]
    out = np.zeros((2 * d, 2 * d))
    out[:d, :d], out[d:, d:] = mean_block, log_std_block
    return out
