"""One maths, two front ends: every torch optimiser equals its numpy counterpart under shared draws (float64).

The numpy optimisers draw their standard normals from a generator seeded from
their ``seed``; the torch optimisers here take the same rows in the same
order through their ``_noise`` hook.  Logistic regression on a linear module
(the numpy test model has closed-form gradients and curvatures), minibatches,
40 steps, with momentum, clipping, prior vectors and several MC samples.
"""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from efvi.inference import ngvi  # noqa: E402
from efvi.inference.ngvi import torch as ngvi_torch  # noqa: E402

from ..ngvi.models import LogisticRegression  # noqa: E402

N, D, B, STEPS, SEED = 120, 5, 30, 40, 4


def shared_draws(cls, use_kernels=True):
    """``cls`` taking its standard normals from a numpy generator, one row (P,) per weight sample."""

    class Shared(cls):
        def _noise(self, bucket):
            return torch.as_tensor(self.numpy_rng.standard_normal(bucket.numel), dtype=bucket.dtype)

    Shared.use_kernels = use_kernels
    return Shared


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N, D))
    y = (rng.random(N) < 1 / (1 + np.exp(-X @ rng.normal(size=D)))).astype(float)
    return X, y


# name: (numpy class, torch class, shared keywords, numpy-only keywords, torch-only keywords)
CASES = {
    "IVON": (ngvi.IVON, ngvi_torch.IVON, dict(lr=0.2, betas=(0.8, 0.99), hess_init=0.5, clip_radius=0.05), {}, {}),
    "Vadam": (ngvi.Vadam, ngvi_torch.Vadam, dict(lr=0.05, betas=(0.8, 0.99), hess_init=0.1), {}, {}),
    "Vprop": (ngvi.Vprop, ngvi_torch.Vprop, dict(lr=0.02, beta=0.9, hess_init=0.1), {}, {}),
    "Vprop-sqrt": (ngvi.Vprop, ngvi_torch.Vprop, dict(lr=0.02, beta=0.9, hess_init=0.1, sqrt=True), {}, {}),
    "VOGN-squared": (ngvi.VOGN, ngvi_torch.VOGN, dict(lr=0.1, betas=(0.5, 0.95), hess_init=0.2),
                     dict(curvature="squared_gradients"), dict(curvature="squared_gradients")),
    "VOGN-gauss-newton": (ngvi.VOGN, ngvi_torch.VOGN, dict(lr=0.1, betas=(0.5, 0.95), hess_init=0.2),
                          dict(curvature="gauss_newton"), dict(curvature="gauss_newton", chunk_size=7)),
    "VOGN-gauss-newton-linear": (ngvi.VOGN, ngvi_torch.VOGN, dict(lr=0.1, betas=(0.5, 0.95), hess_init=0.2),
                                 dict(curvature="gauss_newton"), dict(curvature="gauss_newton")),
}


@pytest.mark.parametrize("use_kernels", [True, False], ids=["compiled", "tensor-ops"])
@pytest.mark.parametrize("mc_samples, vectors", [(1, False), (3, True)])
@pytest.mark.parametrize("name", list(CASES))
def test_torch_equals_numpy_under_shared_draws(data, name, mc_samples, vectors, use_kernels):
    """On the CPU the torch optimisers run the numpy optimisers' compiled kernels; elsewhere (GPU) tensor
    operations on the same formulas: both paths are checked here."""
    X, y = data
    numpy_cls, torch_cls, shared, numpy_only, torch_only = CASES[name]
    rng = np.random.default_rng(0)
    precision = rng.uniform(0.5, 2.0, D) if vectors else 2.0
    mean0 = rng.normal(size=D) if vectors else 0.0
    reference = numpy_cls(LogisticRegression(D), N, prior_precision=precision, prior_mean=mean0,
                          mc_samples=mc_samples, seed=SEED, **shared, **numpy_only)
    model = torch.nn.Linear(D, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.tensor(np.broadcast_to(mean0, D).copy()).reshape(1, D))
    priors = dict(prior_precision=[torch.tensor(precision).reshape(1, D)] if vectors else precision,
                  prior_mean=[torch.tensor(mean0).reshape(1, D)] if vectors else mean0)
    first = model if torch_cls is ngvi_torch.VOGN else model.parameters()
    extra = dict(loss="binary_cross_entropy") if torch_cls is ngvi_torch.VOGN else {}
    opt = shared_draws(torch_cls, use_kernels)(first, ess=float(N), mc_samples=mc_samples, **priors, **shared, **torch_only,
                                  **extra)
    opt.numpy_rng = np.random.default_rng(np.random.SeedSequence(SEED).spawn(2)[0])
    Xt, yt = torch.tensor(X), torch.tensor(y)
    for step in range(STEPS):
        rows = slice((step * B) % N, (step * B) % N + B)
        reference.step(X[rows], y[rows])
        if torch_cls is ngvi_torch.VOGN:
            opt.step(Xt[rows], yt[rows])
        else:
            def closure():
                opt.zero_grad()
                loss = torch.nn.functional.binary_cross_entropy_with_logits(model(Xt[rows])[:, 0], yt[rows])
                loss.backward()
                return loss

            opt.step(closure)
        state = opt.state[model.weight]
        np.testing.assert_allclose(model.weight.detach().numpy()[0], reference.mean, rtol=0, atol=1e-12)
        np.testing.assert_allclose(state["hess"].numpy()[0], reference.hess, rtol=0, atol=1e-12)
        if "momentum" in state:
            np.testing.assert_allclose(state["momentum"].numpy()[0], reference.momentum, rtol=0, atol=1e-12)
        assert state["step"] == step + 1
    assert math.isfinite(float(opt.state_dict()["state"][0]["hess"].sum()))
