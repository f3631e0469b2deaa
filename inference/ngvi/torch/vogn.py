"""VOGN (Khan et al., 2018) for PyTorch modules: per-example squared gradients or Gauss-Newton curvature.

The update is the one of the numpy :class:`efvi.inference.ngvi.VOGN` (the
diagonal natural-gradient step of Khan and Nielsen, 2018, with a Gauss-Newton
curvature at a weight sample), from the same formulas.  The curvature needs
one gradient per example, which ``loss.backward()`` does not give, so VOGN
owns the forward pass: :meth:`VOGN.step` takes the minibatch.
"""

import torch

from .. import _formulas, _kernels
from . import _checks
from ._base import MeanFieldOptimizer
from ._per_example import LOSSES, PerExample

_CURVATURES = ("squared_gradients", "gauss_newton")


def _unwrap(model):
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return model.module
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (VOGN evaluates it per example); "
                        f"got {type(model).__name__}")
    return model


def _distributed_world():
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


class VOGN(MeanFieldOptimizer):
    """Variational online Gauss-Newton (Khan et al., 2018) for PyTorch modules.

    Parameters
    ----------
    model : torch.nn.Module
        The network (a ``DistributedDataParallel`` wrapper is unwrapped); it is called on
        single examples (``torch.func.vmap``), so layers that mix the examples of a batch
        (``BatchNorm`` in training mode) are not supported.
    lr : float
        Step of the mean (~1e-3 as Adam's; 0.1 or more for small, well-conditioned models).
    ess : float
        Effective sample size, usually the training-set size.
    loss : {"cross_entropy", "binary_cross_entropy", "mse"} or callable
        The per-example negative log-likelihood (see Notes); a callable
        ``(outputs, targets) -> (B,)`` works with ``curvature="squared_gradients"``.
    curvature : {"squared_gradients", "gauss_newton"}
        Per-example squared gradients (the paper's choice; about one backward pass per
        example, vectorised) or the generalised Gauss-Newton diagonal (exact for
        canonical-link GLMs; K backward passes per example for K outputs).
    chunk_size : int, optional
        Examples per vectorised pass; memory is ``chunk_size x P`` (``x K`` for
        Gauss-Newton).  Default: the whole batch.
    params : iterable of tensors or dicts, optional
        The parameters to train (default ``model.parameters()``), or parameter groups.
    prior_precision, prior_mean : float or list of tensors
    betas : (float, float)
        Momentum (0: none, as in the paper) and curvature decay, each in [0, 1).
    hess_init : float
        Initial per-example curvature (>= 0).
    mc_samples : int
        Weight samples per step.
    generator : torch.Generator, optional

    Notes
    -----
    Training loop::

        opt = VOGN(model, lr=1e-3, ess=len(train_set))
        for x, y in loader:
            loss = opt.step(x, y)       # draws, per-example gradients, update

    Named losses: ``"cross_entropy"`` (logits (B, K), class indices),
    ``"binary_cross_entropy"`` (logits (B,) or (B, 1), targets in {0, 1}) and ``"mse"``
    (``0.5 * sum (f - y)^2``: a Gaussian likelihood with unit variance; scale the
    targets for another noise level).  Under ``torch.distributed`` (any wrapper, or
    none) the per-example sums are all-reduced across the ranks, so a step on B
    examples per rank equals a step on the joined batch; every rank must draw the
    same noise (seed the generator identically).  The checks of each step are those
    of :class:`~efvi.inference.ngvi.torch.IVON`.
    """

    sum_names = ("grad", "curvature")

    def __init__(self, model, lr=1e-3, ess=None, *, loss="cross_entropy", curvature="squared_gradients",
                 chunk_size=None, params=None, prior_precision=1.0, prior_mean=0.0, betas=(0.0, 0.999),
                 hess_init=1.0, mc_samples=1, generator=None):
        module = _unwrap(model)
        if ess is None:
            raise ValueError("ess must be given: a positive float, usually the training-set size")
        if curvature not in _CURVATURES:
            raise ValueError(f"curvature must be one of {', '.join(map(repr, _CURVATURES))}; got {curvature!r}")
        if not callable(loss) and loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))} or a callable; got {loss!r}")
        if chunk_size is not None:
            chunk_size = _checks.positive_int(chunk_size, "chunk_size")
        defaults = dict(lr=lr, ess=ess, prior_precision=prior_precision, prior_mean=prior_mean, betas=betas,
                        hess_init=hess_init)
        super().__init__(module.parameters() if params is None else params, defaults, mc_samples=mc_samples,
                         generator=generator)
        trained = [p for group in self.param_groups for p in group["params"]]
        self._per_example = PerExample(module, trained, loss, curvature, chunk_size)

    def _check_group(self, group):
        group["betas"] = _checks.betas(group["betas"])

    def _accumulate(self, bucket, grad, noise):
        raise TypeError("VOGN needs per-example gradients, which backward() does not give: call "
                        "opt.step(inputs, targets) instead of training inside sampled_params(train=True)")

    @torch.no_grad()
    def step(self, inputs, targets):
        """One VOGN step on a minibatch.

        Parameters
        ----------
        inputs : tensor (B, ...)
            Passed to the model.
        targets : tensor (B, ...)
            As the loss expects.

        Returns
        -------
        torch.Tensor
            The minibatch's average loss, averaged over the weight samples.

        Raises
        ------
        ValueError
            For an empty batch or inputs and targets of different lengths.
        NonFiniteGradientError, efvi.inference.DivergenceError
            As :meth:`IVON.step`; nothing is changed.
        """
        if not (torch.is_tensor(inputs) and torch.is_tensor(targets)) or inputs.ndim < 1 or targets.ndim < 1:
            raise ValueError("inputs and targets must be tensors with a leading batch dimension; got "
                             f"{type(inputs).__name__} and {type(targets).__name__}")
        if len(inputs) != len(targets) or len(inputs) == 0:
            raise ValueError(f"inputs and targets must hold the same positive number of examples; got "
                             f"{len(inputs)} and {len(targets)}")
        losses = []
        for _ in range(self.mc_samples):
            self._draw()
            try:
                with torch.enable_grad():
                    grads, curvs, loss_sum = self._per_example.sums(inputs, targets)
            finally:
                self._restore()
            losses.append(self._add_sample(grads, curvs, loss_sum, len(inputs)))
        loss = sum(losses) / len(losses)
        self._checked_commit(loss)
        return loss

    def _add_sample(self, grads, curvs, loss_sum, count):
        """Add one weight sample's batch averages to the buckets' sums (all-reduced across ranks)."""
        buckets = [bucket for _, bucket in self._all_buckets()]
        flat = [torch.cat([grads[p].reshape(-1) for p in b.params] + [curvs[p].reshape(-1) for p in b.params])
                for b in buckets]
        world = _distributed_world()
        if world is not None:
            totals = torch.stack([loss_sum.to(flat[0].dtype), torch.tensor(float(count), dtype=flat[0].dtype,
                                                                            device=flat[0].device)])
            for part in flat:
                world.all_reduce(part)
            world.all_reduce(totals)
            loss_sum, count = totals[0], totals[1]
        for bucket, part in zip(buckets, flat):
            bucket.add("grad", part[:bucket.numel] / count)
            bucket.add("curvature", part[bucket.numel:] / count)
            bucket.n_samples += 1
            bucket.had_grad = [True] * len(bucket.params)
        return loss_sum / count

    def _propose(self, group, bucket, step):
        beta1, beta2 = group["betas"]
        n = bucket.n_samples
        if self._compiled(bucket):
            out = self._kernel_outputs(bucket)
            out["status"], _ = _kernels.vogn_update_from_sums(
                *self._arrays((bucket.sums["grad"], bucket.sums["curvature"])), n,
                *self._arrays((bucket.mean, bucket.state["hess"], bucket.state["momentum"])), group["ess"],
                *self._kernel_priors(bucket), beta1, 1.0 - beta2, 1.0 - beta1 ** step, group["lr"],
                *self._arrays((out["mean"], out["hess"], out["momentum"])))
            return out
        delta = bucket.prior_precision / group["ess"]
        hess = _formulas.curvature_average(bucket.state["hess"], bucket.sums["curvature"] / n, 1.0 - beta2)
        momentum = _formulas.moving_average(
            bucket.state["momentum"],
            _formulas.prior_gradient(bucket.sums["grad"] / n, delta, bucket.mean, bucket.prior_mean), beta1)
        mean = _formulas.scaled_step(bucket.mean, group["lr"], momentum, 1.0 - beta1 ** step, hess + delta)
        return {"mean": mean, "momentum": momentum, "hess": hess}
