"""efvi's torch IVON follows the authors' own package (ivon-opt) under shared draws.

ivon-opt's ``weight_decay`` is efvi's ``prior_precision / ess``; both draw one
standard-normal vector per parameter group per sample (ivon-opt with
``torch.randn``, patched here to return the draws efvi takes through its
``_noise`` hook).  ``hess_init`` is a float32 number (0.25): ivon-opt 0.1.3
initialises its curvature through a float32 tensor, so 0.3 would start it at
0.30000001192..., 1e-8 away from efvi's float64 0.3.
"""

from contextlib import contextmanager

import pytest

torch = pytest.importorskip("torch")
ivon_opt = pytest.importorskip("ivon")

from efvi.inference.ngvi.torch import IVON  # noqa: E402


class _Fed(IVON):
    def _noise(self, bucket):
        return self.feed.pop(0).to(bucket.dtype)


@contextmanager
def _randn_returns(monkeypatch, value):
    with monkeypatch.context() as patch:
        patch.setattr(torch, "randn", lambda *args, **kwargs: value.clone())
        yield


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()


@pytest.mark.parametrize("mc_samples, clip_radius", [(1, float("inf")), (2, 0.1)])
def test_trajectory_equals_ivon_opt_under_shared_draws(monkeypatch, mc_samples, clip_radius):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(96, 4, generator=g, dtype=torch.float64)
    t = (x[:, :3] * 3).argmax(-1)
    ess, precision = 96.0, 0.5
    mine, theirs = _mlp(), _mlp()
    opt = _Fed(mine.parameters(), lr=0.1, ess=ess, prior_precision=precision, betas=(0.9, 0.999),
               hess_init=0.25, clip_radius=clip_radius)
    peer = ivon_opt.IVON(theirs.parameters(), lr=0.1, ess=ess, weight_decay=precision / ess, beta1=0.9,
                         beta2=0.999, hess_init=0.25, clip_radius=clip_radius)
    n_params = sum(p.numel() for p in mine.parameters())
    for step in range(60):
        rows = slice((step * 32) % 96, (step * 32) % 96 + 32)
        for _ in range(mc_samples):
            eps = torch.randn(n_params, generator=g, dtype=torch.float64)
            opt.feed = [eps]
            opt.zero_grad()
            with opt.sampled_params(train=True):
                torch.nn.functional.cross_entropy(mine(x[rows]), t[rows]).backward()
            peer.zero_grad()
            with _randn_returns(monkeypatch, eps), peer.sampled_params(train=True):
                torch.nn.functional.cross_entropy(theirs(x[rows]), t[rows]).backward()
        opt.step()
        peer.step()
    for a, b in zip(mine.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    hess = torch.cat([opt.state[p]["hess"].reshape(-1) for p in mine.parameters()])
    torch.testing.assert_close(hess, peer.param_groups[0]["hess"], rtol=1e-10, atol=0)
    assert not torch.allclose(hess, torch.full_like(hess, 0.25))
