"""Flat storage of a parameter group: the parameters as views of one vector per device and dtype.

A step of a mean-field optimiser is a few dozen elementwise formulas; over
the many small tensors of a network, each formula would be one kernel launch
(and one Python call) per tensor.  A :class:`Bucket` holds the parameters of
one group that share a device and a dtype as views of one contiguous vector,
and the optimiser's state likewise, so a formula is one tensor operation per
bucket whatever the number of layers.  The per-parameter tensors of
``optimizer.state`` are views of the bucket's vectors, so torch's
``state_dict`` machinery sees the usual per-parameter state.
"""

import torch


class Bucket:
    """The parameters of one group with one device and dtype, and the optimiser's flat state.

    Parameters
    ----------
    params : list of torch.nn.Parameter
    state_names : tuple of str
        The per-parameter state tensors (e.g. ``("momentum", "hess")``).
    initial : dict
        Initial value (float) of each state tensor.

    Attributes
    ----------
    mean : tensor (P,)
        The parameters' storage: each parameter's ``.data`` is a view of it.
    state : dict of str to tensor (P,)
    slices : list of slice
    sums : dict of str to tensor (P,)
        The Monte Carlo sums of the step in progress.
    n_samples : int
    """

    def __init__(self, params, state_names, initial):
        self.params = list(params)
        self.state_names = state_names
        p0 = self.params[0]
        self.device, self.dtype = p0.device, p0.dtype
        sizes = [p.numel() for p in self.params]
        offsets = [sum(sizes[:k]) for k in range(len(sizes) + 1)]
        self.slices = [slice(a, b) for a, b in zip(offsets[:-1], offsets[1:])]
        self.numel = offsets[-1]
        self.mean = torch.cat([p.detach().reshape(-1) for p in self.params]) if self.params else None
        self.state = {name: torch.full((self.numel,), float(initial[name]), dtype=self.dtype, device=self.device)
                      for name in state_names}
        self.step = 0
        self.saved = None
        self.std = None
        self.noise = None
        self.sums = {}
        self.n_samples = 0
        self.had_grad = [False] * len(self.params)
        self._bind()

    def _bind(self):
        """Make every parameter a view of ``mean`` (keeping its values)."""
        with torch.no_grad():
            for p, sl in zip(self.params, self.slices):
                p.data = self.mean[sl].view_as(p)
        self._pointers = [p.data_ptr() for p in self.params]

    def rebind_if_moved(self):
        """Re-flatten after a parameter's storage was replaced (``module.to``, ``p.data = ...``).

        Returns
        -------
        bool
            Whether it was (the per-parameter views of the state are then new).
        """
        if all(p.data_ptr() == ptr and p.device == self.device and p.dtype == self.dtype
               for p, ptr in zip(self.params, self._pointers)):
            return False
        p0 = self.params[0]
        if any(p.device != p0.device or p.dtype != p0.dtype for p in self.params):
            raise TypeError("the parameters of one optimiser group that shared a device and dtype were moved to "
                            "different ones; create the optimiser after moving the model")
        self.device, self.dtype = p0.device, p0.dtype
        self.mean = torch.cat([p.detach().reshape(-1).to(self.device, self.dtype) for p in self.params])
        self.state = {k: v.to(self.device, self.dtype) for k, v in self.state.items()}
        for key in ("prior_precision", "prior_mean"):
            value = getattr(self, key, None)
            if torch.is_tensor(value):
                setattr(self, key, value.to(self.device, self.dtype))
        self.std = None
        self._bind()
        return True

    def views(self, name):
        """The per-parameter views of state ``name``, one per parameter."""
        flat = self.state[name]
        return [flat[sl].view_as(p) for p, sl in zip(self.params, self.slices)]

    def gather_grads(self, optimiser):
        """The parameters' gradients as one vector (zeros where a parameter has none), noting which had one."""
        parts = []
        for k, p in enumerate(self.params):
            g = p.grad
            if g is None:
                parts.append(torch.zeros(p.numel(), dtype=self.dtype, device=self.device))
                continue
            if g.is_sparse:
                raise RuntimeError(f"{optimiser} does not support sparse gradients; parameter of shape "
                                   f"{tuple(p.shape)} has one (use a dense embedding or another optimiser)")
            self.had_grad[k] = True
            parts.append(g.reshape(-1))
        return torch.cat(parts) if len(parts) > 1 else parts[0].clone()

    def keep_gradient_free(self, proposal, old):
        """In ``proposal`` (name -> (P,)), restore the entries of parameters that had no gradient this step."""
        for k, sl in enumerate(self.slices):
            if not self.had_grad[k]:
                for name, value in proposal.items():
                    if name in old:
                        value[sl] = old[name][sl]

    def add(self, name, value):
        """Add ``value`` to the Monte Carlo sum ``name`` (the first sample's value is taken as it is)."""
        if self.n_samples == 0:
            self.sums[name] = value
        else:
            self.sums[name].add_(value)

    def reset(self):
        self.sums, self.n_samples, self.std, self.noise = {}, 0, None, None
        self.had_grad = [False] * len(self.params)
