"""Per-example curvature sums of fully connected networks without per-example gradients.

For a linear layer ``z_n = W a_n + b`` the per-example gradient of a loss is
the outer product ``d_n a_n^T`` with ``d_n`` the gradient in ``z_n``, so the sum
of the squared per-example gradients is one matrix product,
``sum_n (d_n ** 2) (a_n ** 2)^T`` (and ``sum_n d_n ** 2`` for ``b``): the cost
of a second weight gradient, not of B of them (Goodfellow, 2015; the
"sum of squared gradients" of BackPACK, Dangel et al., 2020).  The
Gauss-Newton diagonal is the same sum over the columns ``l_k`` of a factor
``H_n = L_n L_n^T`` of the loss's Hessian in the outputs, each column
back-propagated once: K backward passes for K outputs.

It applies when every trained parameter is the weight or bias of an
``nn.Linear`` that the forward pass calls once, on inputs of shape (B, in);
otherwise :func:`linear_sums` returns None and the caller falls back to
``torch.func`` per-example gradients.
"""

import torch


def linear_layers(module, params):
    """The ``nn.Linear`` layers holding ``params``, or None if some parameter is in no linear layer."""
    ids = {id(p) for p in params}
    layers = [m for m in module.modules() if isinstance(m, torch.nn.Linear)
              and any(id(q) in ids for q in (m.weight, m.bias) if q is not None)]
    covered = {id(q) for m in layers for q in (m.weight, m.bias) if q is not None}
    return layers if ids <= covered else None


def output_hessian_factor(loss_name, f):
    """``L`` (B, K, C) with ``L_n L_n^T`` the Hessian of example n's loss in its K outputs."""
    batch = f.shape[0]
    flat = f.reshape(batch, -1).detach()
    if loss_name == "cross_entropy":                           # diag(p) - p p^T = sum_k p_k (e_k - p)(e_k - p)^T
        prob = flat.softmax(-1)
        eye = torch.eye(flat.shape[1], dtype=flat.dtype, device=flat.device)
        return prob.sqrt()[:, None, :] * (eye[None] - prob[:, :, None])
    if loss_name == "binary_cross_entropy":
        prob = flat.sigmoid()
        return (prob * (1 - prob)).sqrt()[:, :, None]
    eye = torch.eye(flat.shape[1], dtype=flat.dtype, device=flat.device)
    return eye.expand(batch, -1, -1)                           # half squared error: H = I


def linear_sums(module, order, layers, loss_fn, loss_name, curvature, x, y):
    """Batch sums of the gradients, the per-example curvatures and the losses, or None if not applicable.

    Returns
    -------
    grads, curvs : dict of parameter to tensor shaped like it
    loss_sum : tensor ()
    """
    records = {}

    def keep(layer, inputs, output):
        records.setdefault(layer, []).append((inputs[0], output))

    hooks = [layer.register_forward_hook(keep) for layer in layers]
    try:
        f = module(x)
    finally:
        for hook in hooks:
            hook.remove()
    if any(len(records.get(layer, ())) != 1 or records[layer][0][0].ndim != 2 for layer in layers):
        return None
    outputs = [records[layer][0][1] for layer in layers]
    loss_sum = loss_fn(f, y).sum()
    found = torch.autograd.grad(loss_sum, list(order) + outputs, retain_graph=curvature == "gauss_newton",
                                allow_unused=True)
    grads = {p: (torch.zeros_like(p) if g is None else g) for p, g in zip(order, found)}
    if curvature == "gauss_newton":
        factor = output_hessian_factor(loss_name, f)
        squares = [torch.zeros_like(z) for z in outputs]
        for k in range(factor.shape[2]):
            column = factor[:, :, k].reshape(f.shape)
            deltas = torch.autograd.grad(f, outputs, grad_outputs=column, retain_graph=k + 1 < factor.shape[2])
            for total, d in zip(squares, deltas):
                total += d * d
    else:
        squares = [d * d for d in found[len(order):]]
    curvs = {p: torch.zeros_like(p) for p in order}
    trained = set(map(id, order))
    for layer, square in zip(layers, squares):
        a = records[layer][0][0].detach()
        if id(layer.weight) in trained:
            curvs[layer.weight] = square.transpose(0, 1) @ (a * a)
        if layer.bias is not None and id(layer.bias) in trained:
            curvs[layer.bias] = square.sum(0)
    return grads, curvs, loss_sum.detach()
