"""The per-parameter formulas of the diagonal ngvi updates, written once for every array type.

Each function is elementwise arithmetic only (``+ - * /`` and powers), so it
evaluates on Python or numpy floats, inside the compiled kernels of
efvi's numpy optimisers (where numba inlines it) and on ``torch.Tensor``
values of the PyTorch front end alike: both front ends run the same
expression tree, hence agree to rounding.  Clipping, which needs ``min`` and
``max``, is left to each caller.
"""


def corrected_precision(hess, hess_estimate, rho, delta):
    """The positivity-preserving curvature update (Lin et al., 2020; Shen et al., 2024).

    ``h + rho G + rho^2 G^2 / (2 (h + delta))`` with ``G = hess_estimate - h``;
    it keeps ``h + delta > 0`` whatever ``hess_estimate`` is.
    """
    gap = hess_estimate - hess
    return hess + rho * gap + 0.5 * rho ** 2 * gap ** 2 / (hess + delta)


def ivon_hess_estimate(grad_noise_sum, n_samples, std):
    """Stein's lemma: ``mean_s(g eps) / sigma`` is unbiased for the expected diagonal Hessian."""
    return grad_noise_sum / n_samples / std


def moving_average(average, value, beta):
    """``beta * average + (1 - beta) * value``."""
    return beta * average + (1.0 - beta) * value


def ivon_direction(momentum, bias1, delta, mean, prior_mean, hess):
    """IVON's preconditioned direction ``(m / (1 - beta1^t) + delta (mu - mu_0)) / (h + delta)`` (before clipping)."""
    return (momentum / bias1 + delta * (mean - prior_mean)) / (hess + delta)


def ivon_step_size(lr, hess_init, delta, rescale_lr):
    """``lr * (hess_init + delta)`` with ``rescale_lr`` (the authors' default), else ``lr``."""
    return lr * (hess_init + delta) if rescale_lr else lr


def prior_gradient(grad, delta, mean, prior_mean):
    """The per-example gradient with the prior's ``grad + delta (mu - mu_0)`` (VOGN, Vadam, Vprop)."""
    return grad + delta * (mean - prior_mean)


def curvature_average(hess, hess_estimate, rho):
    """The natural-gradient curvature step ``(1 - rho) h + rho h_hat`` (VOGN; Khan and Nielsen, 2018, eq. 17)."""
    return (1.0 - rho) * hess + rho * hess_estimate


def scaled_step(mean, lr, numerator, bias, scale):
    """The mean step ``mu - lr * numerator / bias / scale`` (VOGN, Vadam, Vprop; ``bias`` a moment's debiasing)."""
    return mean - lr * numerator / bias / scale
