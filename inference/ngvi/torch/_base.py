"""What efvi's torch optimisers share: flat buckets, weight samples, the checked commit, state_dict, priors.

Each optimiser holds a mean-field Gaussian ``N(mu, 1 / (ess h + prior_precision))``
over the parameters: ``mu`` is the parameters themselves, ``h`` the state
``"hess"``.  A step evaluates the loss at ``mc_samples`` weight samples
(:meth:`MeanFieldOptimizer.sampled_params`), proposes the next state from the
shared formulas of :mod:`efvi.inference.ngvi` without touching the current
one, checks it with one read from the device (finite entries, positive
precisions, the divergence rule of :mod:`efvi.inference.divergence`) and only
then commits it.
"""

import copy
import math
from contextlib import contextmanager

import torch

import numpy as np

from ...divergence import DivergenceRule
from .. import _kernels
from .._base import NonFiniteGradientError
from . import _checks
from ._buckets import Bucket


class MeanFieldOptimizer(torch.optim.Optimizer):
    """Base of the torch optimisers (not used directly).

    Subclasses set :attr:`state_names` and :attr:`sum_names`, validate their own
    group keys in :meth:`_check_group` and implement :meth:`_accumulate` and
    :meth:`_propose`.
    """

    #: per-parameter state tensors besides the mean (the parameters)
    state_names = ("momentum", "hess")
    #: Monte Carlo sums a step collects
    sum_names = ("grad",)
    #: On the CPU, evaluate the draw and the update with the compiled kernels of the numpy optimisers
    #: (the same formulas in one pass over memory instead of one tensor operation each); False: tensor
    #: operations everywhere, as on other devices.
    use_kernels = True

    def __init__(self, params, defaults, *, mc_samples, generator):
        self.mc_samples = _checks.positive_int(mc_samples, "mc_samples")
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None; got {type(generator).__name__}")
        self.generator = generator
        self.divergence = DivergenceRule(name=type(self).__name__)
        self._buckets = []      # one list of buckets per parameter group
        self._sampling = False
        super().__init__(params, defaults)

    # -- groups and buckets ----------------------------------------------------------------------------------
    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        try:
            for p in group["params"]:
                _checks.parameter_dtype(p, type(self).__name__)
            _checks.common_group(group)
            self._check_group(group)
        except (TypeError, ValueError):
            self.param_groups.pop()                  # a refused group is not kept
            raise
        self._buckets.append(self._make_buckets(group))

    def _check_group(self, group):
        """Validate the subclass's own group keys in place."""

    def _make_buckets(self, group):
        by_kind = {}
        for k, p in enumerate(group["params"]):
            by_kind.setdefault((p.device, p.dtype), []).append(k)
        buckets = []
        for indices in by_kind.values():
            # the group's index is its position among the groups added so far
            params = [group["params"][k] for k in indices]
            bucket = Bucket(params, self.state_names, self._initial_state(group))
            bucket.indices, bucket.group_index = indices, len(self._buckets)
            bucket.prior_precision = self._flat_prior(group["prior_precision"], indices, bucket)
            bucket.prior_mean = self._flat_prior(group["prior_mean"], indices, bucket)
            self._expose(bucket)
            buckets.append(bucket)
        return buckets

    def _expose(self, bucket):
        """Point ``self.state[p]`` at views of the bucket's flat state (what torch's state_dict reads)."""
        for p, *views in zip(bucket.params, *(bucket.views(name) for name in self.state_names)):
            self.state[p] = {"step": bucket.step, **dict(zip(self.state_names, views))}

    def _follow_moves(self):
        for _, bucket in self._all_buckets():
            if bucket.rebind_if_moved():
                self._expose(bucket)

    def _initial_state(self, group):
        return {"momentum": 0.0, "hess": group["hess_init"]}

    @staticmethod
    def _flat_prior(value, indices, bucket):
        if isinstance(value, float):
            return value
        return torch.cat([value[k].reshape(-1) for k in indices]).to(bucket.device, bucket.dtype)

    def _all_buckets(self):
        for group, buckets in zip(self.param_groups, self._buckets):
            for bucket in buckets:
                yield group, bucket

    # -- weight samples --------------------------------------------------------------------------------------
    def _noise(self, bucket):
        """Standard normals for a bucket, shape (P,) (a hook: tests feed shared draws here)."""
        return torch.randn(bucket.numel, dtype=bucket.dtype, device=bucket.device, generator=self.generator)

    def _compiled(self, bucket):
        """Whether this bucket's draw and update run in the compiled kernels (CPU tensors)."""
        return self.use_kernels and bucket.device.type == "cpu"

    @staticmethod
    def _kernel_priors(bucket):
        """The prior precision and mean as the kernels take them: float64 arrays of length 1 or P."""
        return tuple(np.array([value], dtype=np.float64) if isinstance(value, float)
                     else value.detach().numpy().astype(np.float64)
                     for value in (bucket.prior_precision, bucket.prior_mean))

    def _std(self, group, bucket):
        """The posterior standard deviations ``1 / sqrt(ess h + prior_precision)``, (P,)."""
        if self._compiled(bucket):
            std = torch.empty_like(bucket.mean)
            _kernels.posterior_std(bucket.state["hess"].numpy(), group["ess"], self._kernel_priors(bucket)[0],
                                   std.numpy())
            return std
        return 1.0 / torch.sqrt(group["ess"] * bucket.state["hess"] + bucket.prior_precision)

    @torch.no_grad()
    def _draw(self):
        self._follow_moves()
        for group, bucket in self._all_buckets():
            if bucket.std is None:
                bucket.std = self._std(group, bucket)
            bucket.noise = self._noise(bucket)
            if bucket.saved is None:
                bucket.saved = torch.empty_like(bucket.mean)
            if self._compiled(bucket):
                _kernels.sample_in_place(bucket.mean.numpy(), bucket.noise.numpy(), bucket.std.numpy(),
                                         bucket.saved.numpy())
            else:
                bucket.saved.copy_(bucket.mean)
                bucket.mean.addcmul_(bucket.noise, bucket.std)

    @torch.no_grad()
    def _restore(self):
        for _, bucket in self._all_buckets():
            bucket.mean.copy_(bucket.saved)

    @contextmanager
    def sampled_params(self, train=False):
        """Within the block the parameters hold one draw from the posterior.

        Parameters
        ----------
        train : bool
            On exit, add the parameters' ``.grad`` (and what the optimiser's curvature
            needs) to the step's Monte Carlo sums; :meth:`step` then uses them.
            Parameters without a gradient are left out of the step.
        """
        if self._sampling:
            raise RuntimeError("sampled_params blocks cannot be nested")
        self._sampling = True
        self._draw()
        try:
            yield
        finally:
            try:
                self._restore()
                if train:
                    with torch.no_grad():
                        for _, bucket in self._all_buckets():
                            self._accumulate(bucket, bucket.gather_grads(type(self).__name__), bucket.noise)
                            bucket.n_samples += 1
            finally:
                self._sampling = False

    def _accumulate(self, bucket, grad, noise):
        """Add one sample's gradient (P,) and noise (P,) to the bucket's sums."""
        raise NotImplementedError

    # -- the step --------------------------------------------------------------------------------------------
    def _evaluate_closure(self, closure):
        losses = []
        for _ in range(self.mc_samples):
            with torch.enable_grad(), self.sampled_params(train=True):
                losses.append(closure())
        return sum(losses) / len(losses)

    @torch.no_grad()
    def step(self, closure=None):
        """One step; with ``closure``, evaluates it at ``mc_samples`` weight samples first.

        Returns
        -------
        torch.Tensor or None
            The closure's average loss over the samples (None without a closure).

        Raises
        ------
        RuntimeError
            When no sample was evaluated with ``sampled_params(train=True)``.
        NonFiniteGradientError
            When the loss, a gradient or the proposed state is not finite; nothing is changed.
        efvi.inference.DivergenceError
            When the loss or the parameters' norm grew by orders of magnitude within the
            last steps (:mod:`efvi.inference.divergence`); the step is not applied.
        """
        loss = None if closure is None else self._evaluate_closure(closure)
        self._checked_commit(None if loss is None else _global_mean(loss))
        return loss

    def _checked_commit(self, loss):
        """Propose, check and commit; on failure drop the step's samples (the state stays as it was)."""
        try:
            self._commit(self._propose_all(), loss)
        except (FloatingPointError, RuntimeError):
            for _, bucket in self._all_buckets():
                bucket.reset()
            raise

    def _propose_all(self):
        proposals = []
        for group, bucket in self._all_buckets():
            if bucket.n_samples == 0:
                continue
            step = bucket.step + 1
            old = {"mean": bucket.mean, **bucket.state}
            proposal = self._propose(group, bucket, step)
            if not all(bucket.had_grad):
                bucket.keep_gradient_free(proposal, old)
            proposals.append((group, bucket, step, proposal))
        if not proposals:
            raise RuntimeError("step() needs at least one sample: evaluate the loss inside "
                               "'with opt.sampled_params(train=True):' and call backward() first, "
                               "or pass a closure")
        return proposals

    def _propose(self, group, bucket, step):
        """The proposed ``{"mean": ..., **state}`` of one bucket, as new tensors (P,).

        Compiled proposals (:meth:`_compiled`) add the kernel's ``"status"``.
        """
        raise NotImplementedError

    def _kernel_outputs(self, bucket):
        """Fresh output tensors (P,) for a compiled update: the mean and each state."""
        return {name: torch.empty_like(bucket.mean) for name in ("mean", *self.state_names)}

    @staticmethod
    def _arrays(tensors):
        return [t.numpy() for t in tensors]

    def _commit(self, proposals, loss):
        """Check every proposal with one device read, then replace the state; or raise, changing nothing.

        A proposal from a compiled kernel carries its ``"status"`` (finite entries, positive
        precisions); the others are checked here by the minimum and maximum precision.
        """
        stats = []
        for group, bucket, _, proposal in proposals:
            stats.append(torch.dot(proposal["mean"], proposal["mean"]))
            if "status" not in proposal:
                stats += list(torch.aminmax(group["ess"] * proposal["hess"] + bucket.prior_precision))
        if loss is not None:
            stats.append(torch.as_tensor(loss).detach().reshape(()))
        device = stats[0].device
        wide = torch.float32 if device.type == "mps" else torch.float64       # MPS has no float64
        values = torch.stack([v.to(device, wide) for v in stats]).tolist()
        step = max(step for _, _, step, _ in proposals)
        if loss is not None and not math.isfinite(values[-1]):
            raise NonFiniteGradientError(f"step {step}: the loss is not finite ({values[-1]}); the optimiser and "
                                         f"the parameters were left unchanged", step)
        squares, position = [], 0
        for _, _, _, proposal in proposals:
            square, position = values[position], position + 1
            if "status" in proposal:
                ok = proposal["status"] == 0
            else:
                (low, high), position = values[position:position + 2], position + 2
                ok = low > 0 and math.isfinite(high)
            if not (ok and math.isfinite(square)):
                self._raise_not_finite(proposals, step)
            squares.append(square)
        self.divergence(step, loss=None if loss is None else values[-1], norm=math.sqrt(sum(squares)))
        for _, bucket, new_step, proposal in proposals:
            bucket.mean.copy_(proposal["mean"])
            for name in self.state_names:
                bucket.state[name].copy_(proposal[name])
            bucket.step = new_step
            for p in bucket.params:
                self.state[p]["step"] = new_step
            bucket.reset()

    def _raise_not_finite(self, proposals, step):
        """Name the first parameter whose gradient or proposed state is not finite (or precision not positive)."""
        for group, bucket, _, proposal in proposals:
            precision = group["ess"] * proposal["hess"] + bucket.prior_precision
            checks = [("gradient", bucket.sums["grad"], torch.isfinite),
                      *((name, value, torch.isfinite) for name, value in proposal.items() if name != "status"),
                      ("precision", precision, lambda value: value > 0)]
            for name, value, ok in checks:
                for k, p, sl in zip(bucket.indices, bucket.params, bucket.slices):
                    if not bool(ok(value[sl]).all()):
                        what = "is not positive" if name == "precision" else "is not finite"
                        raise NonFiniteGradientError(
                            f"step {step}: the {name} of parameter {k} of group {bucket.group_index} "
                            f"(shape {tuple(p.shape)}) {what}; the optimiser and the parameters were left "
                            f"unchanged", step)
        raise NonFiniteGradientError(f"step {step}: the norm of the proposed parameters overflows their dtype "
                                     f"(the run diverged); the optimiser and the parameters were left unchanged", step)

    # -- posterior -------------------------------------------------------------------------------------------
    @torch.no_grad()
    def as_prior(self):
        """The current posterior as the next task's prior (variational continual learning).

        Returns
        -------
        list of dict
            One per parameter group: ``{"params", "prior_mean", "prior_precision"}`` with
            lists of tensors; pass it to a new optimiser as its parameter groups.
        """
        groups = []
        for group, buckets in zip(self.param_groups, self._buckets):
            means, precisions = [None] * len(group["params"]), [None] * len(group["params"])
            for bucket in buckets:
                precision = group["ess"] * bucket.state["hess"] + bucket.prior_precision
                for k, p, sl in zip(bucket.indices, bucket.params, bucket.slices):
                    means[k] = p.detach().clone()
                    precisions[k] = precision[sl].view_as(p).clone()
            groups.append({"params": group["params"], "prior_mean": means, "prior_precision": precisions})
        return groups

    def state_dict(self):
        """The optimiser's state as a new dict (copies, unlike torch's own: later steps do not change it)."""
        out = copy.deepcopy(super().state_dict())
        out["efvi"] = {"optimizer": type(self).__name__, "mc_samples": self.mc_samples,
                       "generator": None if self.generator is None else self.generator.get_state(),
                       "divergence": self.divergence.state_dict()}
        return out

    def load_state_dict(self, state_dict):
        """Restore a state saved by :meth:`state_dict` of the same optimiser over parameters of the same shapes."""
        name = type(self).__name__
        extra = state_dict.get("efvi") if isinstance(state_dict, dict) else None
        if not isinstance(extra, dict) or extra.get("optimizer") != name:
            found = "no 'efvi' entry" if not isinstance(extra, dict) else f"one of {extra.get('optimizer')!r}"
            raise ValueError(f"state_dict must come from efvi's torch {name}.state_dict(); got {found}")
        groups = state_dict.get("param_groups", [])
        if len(groups) != len(self.param_groups):
            raise ValueError(f"state_dict has {len(groups)} parameter groups; this optimiser has "
                             f"{len(self.param_groups)}")
        for k, (mine, theirs) in enumerate(zip(self.param_groups, groups)):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError(f"state_dict group {k} has {len(theirs['params'])} parameters; "
                                 f"this optimiser's has {len(mine['params'])}")
        saved_state = state_dict.get("state", {})
        ids = [i for g in groups for i in g["params"]]
        params = [p for g in self.param_groups for p in g["params"]]
        for i, p in zip(ids, params):
            saved = saved_state.get(i)
            if not saved or set(saved) != {"step", *self.state_names}:
                raise ValueError(f"state_dict entry for parameter {i} must hold step and "
                                 f"{', '.join(self.state_names)}; got {sorted(saved or {})}")
            for key in self.state_names:
                if tuple(saved[key].shape) != tuple(p.shape):
                    raise ValueError(f"state_dict entry {key!r} of parameter {i} has shape "
                                     f"{tuple(saved[key].shape)}; the parameter has shape {tuple(p.shape)}")
        rule = DivergenceRule(name=name)
        rule.load_state_dict(extra["divergence"])
        super().load_state_dict({k: v for k, v in state_dict.items() if k != "efvi"})
        for group, buckets in zip(self.param_groups, self._buckets):
            for bucket in buckets:
                bucket.rebind_if_moved()
                steps = {int(self.state[p]["step"]) for p in bucket.params}
                if len(steps) != 1:
                    raise ValueError(f"state_dict parameters of one group disagree on the step: {sorted(steps)}")
                bucket.step = steps.pop()
                for key in self.state_names:
                    bucket.state[key].copy_(torch.cat([self.state[p][key].reshape(-1) for p in bucket.params]))
                self._expose(bucket)
                bucket.prior_precision = self._flat_prior(group["prior_precision"], bucket.indices, bucket)
                bucket.prior_mean = self._flat_prior(group["prior_mean"], bucket.indices, bucket)
                bucket.reset()
        self.divergence = rule
        self.mc_samples = extra["mc_samples"]
        if extra["generator"] is not None and self.generator is not None:
            self.generator.set_state(extra["generator"])


def _global_mean(loss):
    """The loss averaged over the ranks of ``torch.distributed`` (itself outside it), so every rank checks alike."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return loss
    total = torch.as_tensor(loss).detach().clone()
    dist.all_reduce(total)
    return total / dist.get_world_size()


@torch.no_grad()
def predict(model, optimizer, inputs, n_samples=32, transform=None):
    """The model's outputs averaged over ``n_samples`` posterior weight samples.

    Parameters
    ----------
    model : torch.nn.Module
    optimizer : IVON, VOGN, Vadam or Vprop
        Holds the posterior over ``model``'s parameters.
    inputs : tensor or tuple of tensors
        Passed to ``model``.
    n_samples : int
    transform : callable, optional
        Applied to each sample's outputs before averaging, e.g. ``lambda z: z.softmax(-1)``
        for class probabilities (averaging logits is not the predictive).

    Returns
    -------
    torch.Tensor
        The average of ``transform(model(*inputs))`` over the samples.
    """
    _checks.positive_int(n_samples, "n_samples")
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    total = None
    for _ in range(n_samples):
        with optimizer.sampled_params(train=False):
            out = model(*inputs)
            out = transform(out) if transform is not None else out
        total = out if total is None else total + out
    return total / n_samples
