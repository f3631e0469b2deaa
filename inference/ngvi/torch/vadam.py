"""Vadam (Khan et al., 2018) and Vprop (Khan et al., 2017) as ``torch.optim.Optimizer`` subclasses.

Adam and RMSprop run on weights perturbed by the mean-field posterior
``N(mu, 1 / (ess s + prior_precision))``, with the squared minibatch gradient
``s`` as the curvature and the prior added to the gradient; the updates are
those of the numpy :class:`efvi.inference.ngvi.Vadam` and
:class:`efvi.inference.ngvi.Vprop`, from the same formulas.  Migrating from
``torch.optim.Adam`` or ``RMSprop`` means wrapping the loss in
:meth:`~Vadam.sampled_params` and giving ``ess``.
"""

import torch

from .. import _formulas, _kernels
from . import _checks
from ._base import MeanFieldOptimizer

_USAGE = """
    Notes
    -----
    Training loop (or ``opt.step(closure)``, which does the same ``mc_samples`` times)::

        opt.zero_grad()
        with opt.sampled_params(train=True):
            loss_fn(model(x), y).backward()     # the minibatch's average NLL
        opt.step()

    The prior enters through ``delta = prior_precision / ess``; predictions average
    over posterior samples (:func:`efvi.inference.ngvi.torch.predict`).  Errors and
    the checks of each step are those of :class:`~efvi.inference.ngvi.torch.IVON`.
"""


class _SquaredGradient(MeanFieldOptimizer):
    sum_names = ("grad", "grad_square")

    def _accumulate(self, bucket, grad, noise):
        bucket.add("grad_square", grad * grad)
        bucket.add("grad", grad)

    @staticmethod
    def _averages(bucket):
        n = bucket.n_samples
        return bucket.sums["grad"] / n, bucket.sums["grad_square"] / n


class Vadam(_SquaredGradient):
    """Variational Adam (Khan et al., 2018) for PyTorch models.

    Parameters
    ----------
    params : iterable of tensors or dicts
        ``model.parameters()`` or parameter groups (each may set the keywords below
        except ``mc_samples`` and ``generator``).
    lr : float
        Adam's step size.
    ess : float
        Effective sample size, usually the training-set size.
    prior_precision, prior_mean : float or list of tensors
        The Gaussian prior, one number or one tensor per parameter.
    betas : (float, float)
        Adam's moment decays, each in [0, 1).
    hess_init : float
        Initial ``s`` (>= 0).
    mc_samples : int
    generator : torch.Generator, optional
    """ + _USAGE

    def __init__(self, params, lr=1e-3, ess=None, *, prior_precision=1.0, prior_mean=0.0, betas=(0.9, 0.999),
                 hess_init=0.0, mc_samples=1, generator=None):
        if ess is None:
            raise ValueError("ess must be given: a positive float, usually the training-set size")
        defaults = dict(lr=lr, ess=ess, prior_precision=prior_precision, prior_mean=prior_mean, betas=betas,
                        hess_init=hess_init)
        super().__init__(params, defaults, mc_samples=mc_samples, generator=generator)

    def _check_group(self, group):
        group["betas"] = _checks.betas(group["betas"])

    def _propose(self, group, bucket, step):
        beta1, beta2 = group["betas"]
        if self._compiled(bucket):
            out = self._kernel_outputs(bucket)
            out["status"] = _kernels.vadam_update_from_sums(
                *self._arrays((bucket.sums["grad"], bucket.sums["grad_square"])), bucket.n_samples,
                *self._arrays((bucket.mean, bucket.state["hess"], bucket.state["momentum"])), group["ess"],
                *self._kernel_priors(bucket), beta1, beta2, 1.0 - beta1 ** step, 1.0 - beta2 ** step, group["lr"],
                *self._arrays((out["mean"], out["hess"], out["momentum"])))
            return out
        grad, square = self._averages(bucket)
        delta = bucket.prior_precision / group["ess"]
        momentum = _formulas.moving_average(
            bucket.state["momentum"], _formulas.prior_gradient(grad, delta, bucket.mean, bucket.prior_mean), beta1)
        hess = _formulas.moving_average(bucket.state["hess"], square, beta2)
        scale = torch.sqrt(hess / (1.0 - beta2 ** step)) + delta
        mean = _formulas.scaled_step(bucket.mean, group["lr"], momentum, 1.0 - beta1 ** step, scale)
        return {"mean": mean, "momentum": momentum, "hess": hess}


class Vprop(_SquaredGradient):
    """Variational RMSprop (Vprop; Khan et al., 2017) for PyTorch models.

    Parameters
    ----------
    params : iterable of tensors or dicts
        ``model.parameters()`` or parameter groups.
    lr : float
        RMSprop's step size.
    ess : float
        Effective sample size, usually the training-set size.
    prior_precision, prior_mean : float or list of tensors
    beta : float
        Decay of ``s`` in [0, 1) (RMSprop's ``alpha``).
    hess_init : float
        Initial ``s`` (>= 0).
    sqrt : bool
        Divide by ``sqrt(s) + delta`` (the authors' code, closest to RMSprop) instead of
        ``s + delta`` (the poster's natural-gradient form).
    mc_samples : int
    generator : torch.Generator, optional
    """ + _USAGE

    state_names = ("hess",)

    def __init__(self, params, lr=1e-3, ess=None, *, prior_precision=1.0, prior_mean=0.0, beta=0.999,
                 hess_init=0.0, sqrt=False, mc_samples=1, generator=None):
        if ess is None:
            raise ValueError("ess must be given: a positive float, usually the training-set size")
        defaults = dict(lr=lr, ess=ess, prior_precision=prior_precision, prior_mean=prior_mean, beta=beta,
                        hess_init=hess_init, sqrt=bool(sqrt))
        super().__init__(params, defaults, mc_samples=mc_samples, generator=generator)

    def _check_group(self, group):
        group["beta"] = _checks.real(group["beta"], "beta", low=0.0, high=1.0, low_open=False,
                                     expected="a float in [0, 1)")

    def _initial_state(self, group):
        return {"hess": group["hess_init"]}

    def _propose(self, group, bucket, step):
        if self._compiled(bucket):
            out = self._kernel_outputs(bucket)
            out["status"] = _kernels.vprop_update_from_sums(
                *self._arrays((bucket.sums["grad"], bucket.sums["grad_square"])), bucket.n_samples,
                *self._arrays((bucket.mean, bucket.state["hess"])), group["ess"], *self._kernel_priors(bucket),
                group["beta"], group["lr"], group["sqrt"], *self._arrays((out["mean"], out["hess"])))
            return out
        grad, square = self._averages(bucket)
        delta = bucket.prior_precision / group["ess"]
        hess = _formulas.moving_average(bucket.state["hess"], square, group["beta"])
        scale = (torch.sqrt(hess) if group["sqrt"] else hess) + delta
        mean = _formulas.scaled_step(bucket.mean, group["lr"],
                                     _formulas.prior_gradient(grad, delta, bucket.mean, bucket.prior_mean), 1.0, scale)
        return {"mean": mean, "hess": hess}
