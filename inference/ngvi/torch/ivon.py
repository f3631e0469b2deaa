"""IVON (Shen et al., 2024) as a ``torch.optim.Optimizer`` over any ``model.parameters()``.

The parameters hold the posterior mean between steps.  A step averages the
gradients of ``mc_samples`` losses, each evaluated at weights drawn from the
mean-field Gaussian posterior ``N(mu, 1 / (ess (h + delta)))``; the update of
the mean, the momentum and the curvature ``h`` is the one of the numpy
optimiser :class:`efvi.inference.ngvi.IVON`, from the same formulas.
"""

import math

from .. import _formulas, _kernels
from . import _checks
from ._base import MeanFieldOptimizer


class IVON(MeanFieldOptimizer):
    """Improved variational online Newton (Shen et al., 2024) for PyTorch models.

    Parameters
    ----------
    params : iterable of tensors or dicts
        ``model.parameters()`` or parameter groups; a group may set any keyword below
        except ``mc_samples`` and ``generator``.
    lr : float
        Learning rate (with ``rescale_lr`` the first steps' size in parameter units; ~0.1).
    ess : float
        Effective sample size, usually the training-set size N; ``N / T`` tempers the
        posterior at temperature T.
    prior_precision : float or list of tensors
        Precision of the Gaussian prior, one number or one tensor per parameter of the
        group.  IVON's weight decay is ``prior_precision / ess`` (ivon-opt's ``weight_decay``).
    prior_mean : float or list of tensors
        Mean of the prior (default 0); :meth:`as_prior` gives a posterior as the next prior.
    betas : (float, float)
        Gradient momentum and curvature decay, each in [0, 1).
    hess_init : float
        Initial curvature ``h_0`` (>= 0).
    mc_samples : int
        Weight samples per step of the closure form of :meth:`step`.
    rescale_lr : bool
        Step ``lr * (hess_init + delta)`` (the authors' default).
    clip_radius : float
        Elementwise bound of the preconditioned direction (inf: none).
    generator : torch.Generator, optional
        Source of the weight noise (on the parameters' device); saved in ``state_dict``.
        Under ``DistributedDataParallel`` every rank must draw the same noise: seed it
        (or torch's default generator) identically on every rank.

    Notes
    -----
    Use either the closure form, ``opt.step(closure)`` (the closure zeroes the
    gradients, computes the loss and calls ``backward``; it is evaluated
    ``mc_samples`` times at fresh weight samples), or the explicit form::

        for _ in range(mc_samples):
            opt.zero_grad()
            with opt.sampled_params(train=True):
                loss = loss_fn(model(x), y)
                loss.backward()
        opt.step()

    The loss is the minibatch's average negative log-likelihood (as
    ``torch.nn.functional.cross_entropy`` computes by default); the prior enters
    through ``prior_precision / ess``.  The state is ``momentum`` and ``hess`` per
    parameter (with the mean, the parameters themselves: three tensors, as in
    ivon-opt).  The parameters become views of one flat vector per device and
    dtype (so each formula is one tensor operation); replacing their storage
    (``model.to(...)``) after construction is detected and handled at the next
    step.  A step whose loss, gradients or proposed state are not finite
    raises :class:`~efvi.inference.ngvi.NonFiniteGradientError` naming the step
    and the parameter, and a diverging one
    :class:`~efvi.inference.DivergenceError`; either leaves the optimiser and the
    parameters unchanged.  These checks read a few numbers back from the device
    once per step.
    """

    sum_names = ("grad", "grad_noise")

    def __init__(self, params, lr=0.1, ess=None, *, prior_precision=1.0, prior_mean=0.0, betas=(0.9, 0.99999),
                 hess_init=1.0, mc_samples=1, rescale_lr=True, clip_radius=math.inf, generator=None):
        if ess is None:
            raise ValueError("ess must be given: a positive float, usually the training-set size")
        defaults = dict(lr=lr, ess=ess, prior_precision=prior_precision, prior_mean=prior_mean, betas=betas,
                        hess_init=hess_init, rescale_lr=bool(rescale_lr), clip_radius=clip_radius)
        super().__init__(params, defaults, mc_samples=mc_samples, generator=generator)

    def _check_group(self, group):
        group["betas"] = _checks.betas(group["betas"])
        if group["clip_radius"] != math.inf:
            group["clip_radius"] = _checks.real(group["clip_radius"], "clip_radius", low=0.0,
                                                expected="a positive float or inf")

    def _accumulate(self, bucket, grad, noise):
        bucket.add("grad_noise", grad * noise)
        bucket.add("grad", grad)

    def _propose(self, group, bucket, step):
        beta1, beta2 = group["betas"]
        n, sums, state = bucket.n_samples, bucket.sums, bucket.state
        if self._compiled(bucket):
            out = self._kernel_outputs(bucket)
            out["status"] = _kernels.ivon_update_from_sums(
                *self._arrays((sums["grad"], sums["grad_noise"])), n,
                *self._arrays((bucket.std, bucket.mean, state["hess"], state["momentum"])), group["ess"],
                *self._kernel_priors(bucket), beta1, 1.0 - beta2, 1.0 - beta1 ** step, group["lr"],
                group["hess_init"], group["rescale_lr"], group["clip_radius"],
                *self._arrays((out["mean"], out["hess"], out["momentum"])))
            return out
        delta = bucket.prior_precision / group["ess"]
        hess_estimate = _formulas.ivon_hess_estimate(sums["grad_noise"], n, bucket.std)
        momentum = _formulas.moving_average(state["momentum"], sums["grad"] / n, beta1)
        hess = _formulas.corrected_precision(state["hess"], hess_estimate, 1.0 - beta2, delta)
        direction = _formulas.ivon_direction(momentum, 1.0 - beta1 ** step, delta, bucket.mean,
                                             bucket.prior_mean, hess)
        if group["clip_radius"] != math.inf:
            direction = direction.clamp_(-group["clip_radius"], group["clip_radius"])
        step_size = _formulas.ivon_step_size(group["lr"], group["hess_init"], delta, group["rescale_lr"])
        return {"mean": bucket.mean - step_size * direction, "momentum": momentum, "hess": hess}
