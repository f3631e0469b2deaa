"""VOGN's per-example curvatures against a loop over the examples with plain autograd (independent route)."""

import pytest

torch = pytest.importorskip("torch")

from efvi.inference.ngvi.torch._per_example import PerExample  # noqa: E402


def _net(outputs):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, outputs)).double()


def _targets(loss, f):
    g = torch.Generator().manual_seed(4)
    if loss == "cross_entropy":
        return torch.randint(0, f.shape[1], (f.shape[0],), generator=g)
    if loss == "binary_cross_entropy":
        return torch.randint(0, 2, (f.shape[0],), generator=g).double()
    return torch.randn(f.shape, generator=g, dtype=torch.float64)


def _nll(loss, f, y):
    if loss == "cross_entropy":
        return torch.nn.functional.cross_entropy(f, y, reduction="sum")
    if loss == "binary_cross_entropy":
        return torch.nn.functional.binary_cross_entropy_with_logits(f[:, 0], y, reduction="sum")
    return 0.5 * ((f - y) ** 2).sum()


@pytest.mark.parametrize("loss, outputs", [("cross_entropy", 4), ("binary_cross_entropy", 1), ("mse", 2)])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_sums_equal_a_loop_over_examples(loss, outputs, chunk_size):
    net = _net(outputs)
    params = list(net.parameters())
    x = torch.randn(7, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = _targets(loss, net(x))
    squared = PerExample(net, params, loss, "squared_gradients", chunk_size).sums(x, y)
    newton = PerExample(net, params, loss, "gauss_newton", chunk_size).sums(x, y)
    grads = [torch.zeros_like(p) for p in params]
    squares = [torch.zeros_like(p) for p in params]
    ggn = [torch.zeros_like(p) for p in params]
    total = 0.0
    for n in range(len(x)):
        f = net(x[n:n + 1])[0]
        value = _nll(loss, f[None], y[n:n + 1])
        g = torch.autograd.grad(value, params, retain_graph=True)
        jac = [torch.stack([torch.autograd.grad(f[k], p, retain_graph=True)[0] for k in range(outputs)])
               for p in params]                                            # (K, *shape)
        H = torch.autograd.functional.hessian(lambda z: _nll(loss, z[None], y[n:n + 1]), f.detach())
        for k, p in enumerate(params):
            grads[k] += g[k]
            squares[k] += g[k] ** 2
            J = jac[k].reshape(outputs, -1)
            ggn[k] += torch.einsum("kp,kl,lp->p", J, H, J).reshape(p.shape)
        total += float(value.detach())
    for k, p in enumerate(params):
        for result in (squared, newton):
            torch.testing.assert_close(result[0][p], grads[k], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(squared[1][p], squares[k], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(newton[1][p], ggn[k], rtol=1e-10, atol=1e-12)
    assert float(squared[2]) == pytest.approx(total, rel=1e-12)
    assert float(newton[2]) == pytest.approx(total, rel=1e-12)


def test_parameters_outside_the_module_are_refused():
    with pytest.raises(ValueError, match="belong to the module"):
        PerExample(_net(2), [torch.nn.Parameter(torch.zeros(2))], "mse", "squared_gradients", None)


class _Twice(torch.nn.Module):
    """One linear layer applied twice: its per-example gradient is not one outer product."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.layer = torch.nn.Linear(3, 3).double()

    def forward(self, x):
        return self.layer(torch.tanh(self.layer(x)))


@pytest.mark.parametrize("curvature", ["squared_gradients", "gauss_newton"])
def test_a_layer_used_twice_takes_the_per_example_route(curvature):
    net = _Twice()
    params = list(net.parameters())
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = torch.randn(6, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    fast = PerExample(net, params, "mse", curvature, None).sums(x, y)
    chunked = PerExample(net, params, "mse", curvature, 2).sums(x, y)       # always the torch.func route
    for p in params:
        torch.testing.assert_close(fast[0][p], chunked[0][p], rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(fast[1][p], chunked[1][p], rtol=1e-12, atol=1e-14)
