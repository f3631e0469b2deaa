"""Per-example gradients and Gauss-Newton diagonals of a module's loss, with ``torch.func``.

VOGN's curvature is an average over the examples of a minibatch of squared
per-example gradients ``g_n^2`` (Khan et al., 2018), or of the diagonal of the
generalised Gauss-Newton matrix ``J_n^T H_n J_n`` with ``J_n`` the Jacobian of
the network's outputs for example ``n`` and ``H_n`` the Hessian of the loss in
those outputs.  Both need one gradient (or one Jacobian) per example:
``torch.func.vmap`` of ``grad`` (or ``jacrev``) over the batch, in chunks of
``chunk_size`` examples so that memory stays ``chunk_size x P`` (``x K``
outputs for Gauss-Newton).  Costs, for P parameters and K outputs: squared
gradients about one backward pass per example, vectorised; Gauss-Newton K
backward passes per example (the Jacobian's rows).  Networks whose trained
parameters all sit in ``nn.Linear`` layers take a faster route when no
``chunk_size`` is set (:mod:`._linear_curvature`): the sums without the
per-example gradients, at the cost of one (squared gradients) or K
(Gauss-Newton) extra backward passes of the batch.

Losses by name, each the per-example negative log-likelihood up to a constant:

- ``"cross_entropy"``: logits (B, K), class indices (B,); ``H = diag(p) - p p^T``;
- ``"binary_cross_entropy"``: logits (B,) or (B, 1), targets in {0, 1}; ``H = p (1 - p)``;
- ``"mse"``: outputs and targets (B, ...), ``0.5 * sum (f - y)^2`` (a Gaussian with
  unit variance); ``H = I``.

A callable ``loss(outputs, targets) -> (B,)`` of per-example losses is accepted
for squared gradients.
"""

import torch
from torch.func import functional_call, grad_and_value, jacrev, vmap

from ._linear_curvature import linear_layers, linear_sums

LOSSES = ("cross_entropy", "binary_cross_entropy", "mse")


def per_example_loss(name):
    """The per-example loss ``(outputs (B, ...), targets (B, ...)) -> (B,)`` of a loss name or callable."""
    if callable(name):
        return name
    if name == "cross_entropy":
        return lambda f, y: torch.nn.functional.cross_entropy(f, y, reduction="none")
    if name == "binary_cross_entropy":
        return lambda f, y: torch.nn.functional.binary_cross_entropy_with_logits(
            f.reshape(y.shape), y.to(f.dtype), reduction="none")
    if name == "mse":
        return lambda f, y: 0.5 * ((f - y.to(f.dtype)) ** 2).reshape(f.shape[0], -1).sum(1)
    raise ValueError(f"loss must be one of {', '.join(map(repr, LOSSES))} or a callable "
                     f"(outputs, targets) -> per-example losses (B,); got {name!r}")


class PerExample:
    """Sums over a batch of per-example gradients and curvatures of ``module``'s loss.

    Parameters
    ----------
    module : torch.nn.Module
    params : list of torch.nn.Parameter
        The parameters differentiated (others and buffers are held fixed).
    loss : str or callable
    curvature : {"squared_gradients", "gauss_newton"}
    chunk_size : int or None
        Examples per vectorised pass (None: the whole batch at once).
    """

    def __init__(self, module, params, loss, curvature, chunk_size):
        if curvature == "gauss_newton" and loss not in LOSSES:
            raise ValueError(f"curvature='gauss_newton' needs a named loss ({', '.join(map(repr, LOSSES))}) whose "
                             f"Hessian in the outputs is known; got loss={loss!r}")
        self.module, self.loss_name, self.curvature, self.chunk_size = module, loss, curvature, chunk_size
        self.loss = per_example_loss(loss)
        ids = {id(p) for p in params}
        self.names = [name for name, p in module.named_parameters() if id(p) in ids]
        found = {id(p) for _, p in module.named_parameters() if id(p) in ids}
        if found != ids:
            raise ValueError("every parameter the optimiser trains must belong to the module it was given")
        by_id = {id(p): p for p in params}
        self.order = [by_id[id(p)] for name, p in module.named_parameters() if id(p) in ids]
        self.layers = linear_layers(module, self.order)

    def _functional(self, values, x):
        others = {name: p for name, p in self.module.named_parameters() if name not in self.names}
        state = {**others, **dict(self.module.named_buffers()), **dict(zip(self.names, values))}
        return functional_call(self.module, state, (x,))

    def sums(self, inputs, targets):
        """Sums over the batch of the per-example gradients, curvatures and losses.

        Returns
        -------
        grads, curvs : dict of parameter to tensor shaped like it
        loss_sum : tensor ()
        """
        if self.layers is not None and self.chunk_size is None:
            fast = linear_sums(self.module, self.order, self.layers, self.loss, self.loss_name, self.curvature,
                               inputs, targets)
            if fast is not None:
                return fast
        values = tuple(p.detach() for p in self.order)
        size = inputs.shape[0]
        chunk = size if self.chunk_size is None else self.chunk_size
        grads = {p: torch.zeros_like(p) for p in self.order}
        curvs = {p: torch.zeros_like(p) for p in self.order}
        loss_sum = torch.zeros((), dtype=values[0].dtype, device=values[0].device)
        for start in range(0, size, chunk):
            x, y = inputs[start:start + chunk], targets[start:start + chunk]
            g, c, loss = (self._gauss_newton if self.curvature == "gauss_newton" else self._squared)(values, x, y)
            for p, gk, ck in zip(self.order, g, c):
                grads[p] += gk
                curvs[p] += ck
            loss_sum = loss_sum + loss
        return grads, curvs, loss_sum

    def _squared(self, values, x, y):
        def one(values, xn, yn):
            f = self._functional(values, xn.unsqueeze(0))
            return self.loss(f, yn.unsqueeze(0)).sum()

        g, losses = vmap(grad_and_value(one), in_dims=(None, 0, 0))(values, x, y)
        return [gk.sum(0) for gk in g], [(gk * gk).sum(0) for gk in g], losses.sum()

    def _gauss_newton(self, values, x, y):
        def outputs(values, xn):
            return self._functional(values, xn.unsqueeze(0))[0]

        f = self._functional(values, x)                                  # (B, K...) outputs
        jac = vmap(jacrev(outputs), in_dims=(None, 0))(values, x)         # each (B, K..., *shape)
        losses = self.loss(f, y)
        batch = f.shape[0]
        flat = f.reshape(batch, -1)
        jac = [j.reshape(batch, flat.shape[1], -1) for j in jac]         # (B, K, numel)
        if self.loss_name == "cross_entropy":
            prob = flat.softmax(-1)
            residual = prob - torch.nn.functional.one_hot(y, flat.shape[1]).to(flat.dtype)
            weight = prob
        elif self.loss_name == "binary_cross_entropy":
            prob = flat.sigmoid()
            residual, weight = prob - y.reshape(batch, 1).to(flat.dtype), prob * (1 - prob)
        else:
            residual, weight = flat - y.reshape(batch, -1).to(flat.dtype), None
        grads, curvs = [], []
        for j, p in zip(jac, self.order):
            grads.append(torch.einsum("bk,bkp->p", residual, j).reshape(p.shape))
            if weight is None:                                            # H = I
                curv = (j * j).sum((0, 1))
            elif self.loss_name == "cross_entropy":                       # diag(p) - p p^T
                mixed = torch.einsum("bk,bkp->bp", weight, j)
                curv = torch.einsum("bk,bkp->p", weight, j * j) - (mixed * mixed).sum(0)
            else:
                curv = torch.einsum("bk,bkp->p", weight, j * j)
            curvs.append(curv.reshape(p.shape))
        return grads, curvs, losses.sum()
