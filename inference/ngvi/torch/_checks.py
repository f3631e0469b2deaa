"""Named checks of the torch optimisers' hyperparameters (the messages say what was expected and what came)."""

import torch

from .._base import check_betas as betas, check_real as real  # noqa: F401  (the numpy optimisers' checks)


def positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return value


def prior(value, name, params, positive):
    """A prior parameter: a float, or a list of tensors shaped like the group's parameters (copied)."""
    expected = "a positive finite float" if positive else "a finite float"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return real(value, name, low=0.0 if positive else None, expected=expected)
    if not isinstance(value, (list, tuple)) or len(value) != len(params):
        raise ValueError(f"{name} must be {expected} or a list of {len(params)} tensors shaped like the group's "
                         f"parameters; got {type(value).__name__}")
    out = []
    for k, (v, p) in enumerate(zip(value, params)):
        v = torch.as_tensor(v, dtype=p.dtype, device=p.device)
        if v.shape != p.shape:
            raise ValueError(f"{name}[{k}] must have the shape {tuple(p.shape)} of its parameter; "
                             f"got {tuple(v.shape)}")
        bad = ~torch.isfinite(v)
        if positive:
            bad |= v <= 0
        if bool(bad.any()):
            raise ValueError(f"{name}[{k}] must hold {expected}s; it has {int(bad.sum())} entries that are not")
        out.append(v.detach().clone())
    return out


def common_group(group):
    """Validate the hyperparameters every mean-field optimiser's group has, in place."""
    group["lr"] = real(group["lr"], "lr", low=0.0, expected="a positive finite float")
    group["ess"] = real(group["ess"], "ess", low=0.0, expected="a positive finite float (the training-set size)")
    group["hess_init"] = real(group["hess_init"], "hess_init", low=0.0, low_open=False,
                              expected="a non-negative finite float")
    for key, positive in (("prior_precision", True), ("prior_mean", False)):
        group[key] = prior(group[key], key, group["params"], positive)


def parameter_dtype(p, optimiser):
    """Float32 or float64 parameters only (half precision loses the curvature update and the samples)."""
    if not p.is_floating_point():
        raise TypeError(f"{optimiser} needs floating-point parameters; got a parameter of dtype {p.dtype}")
    if p.dtype not in (torch.float32, torch.float64):
        raise TypeError(f"{optimiser} needs float32 or float64 parameters: its curvature update and posterior "
                        f"samples lose the step in {p.dtype}; got a parameter of dtype {p.dtype}")
