"""Under DistributedDataParallel (2 processes, gloo, localhost) a step equals a 1-process step on the joined batch.

Each rank holds half of the batch and the same generator seed (so the same
weight noise).  IVON and Vadam see the gradients DDP averages (the curvature
of IVON is linear in them, Vadam's is the square of their average: both as
on the joined batch); VOGN all-reduces its per-example sums itself.
"""

import sys

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(not dist.is_available() or sys.platform == "win32",
                                reason="needs torch.distributed with gloo")

from efvi.inference.ngvi.torch import IVON, VOGN, Vadam  # noqa: E402

STEPS, B = 6, 16


def _setup(name, model):
    generator = torch.Generator().manual_seed(11)
    if name == "VOGN":
        return VOGN(model, lr=0.05, ess=64.0, mc_samples=2, generator=generator)
    cls = {"IVON": IVON, "Vadam": Vadam}[name]
    return cls(model.parameters(), lr=0.05, ess=64.0, mc_samples=2, generator=generator)


def _data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2 * B, 4, generator=g, dtype=torch.float64)
    return x, (x[:, :3] * 3).argmax(-1)


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()


def _run(name, model, opt, x, t):
    for _ in range(STEPS):
        if name == "VOGN":
            opt.step(x, t)
            continue

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), t)
            loss.backward()
            return loss

        opt.step(closure)


NAMES = ["IVON", "Vadam", "VOGN"]


def _worker(rank, rendezvous, out):
    # a file rendezvous, not a TCP port chosen in advance: under pytest-xdist another test process can take
    # a port between the parent's probe and rank 0's bind (a crashed gloo store: SIGABRT)
    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=2)
    try:
        torch.set_num_threads(1)
        results = {}
        for name in NAMES:                       # one pair of processes for all (each start costs seconds)
            net = _net()
            model = torch.nn.parallel.DistributedDataParallel(net)
            x, t = _data()
            rows = slice(rank * B, (rank + 1) * B)
            _run(name, model, _setup(name, model if name == "VOGN" else net), x[rows], t[rows])
            results[name] = [p.detach().clone() for p in net.parameters()]
        if rank == 0:
            torch.save(results, out)
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def distributed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    out = folder / "params.pt"
    torch.multiprocessing.start_processes(_worker, args=(str(folder / "rendezvous"), str(out)), nprocs=2,
                                          start_method="spawn")
    return torch.load(out)


@pytest.mark.parametrize("name", NAMES)
def test_two_processes_equal_one_on_the_joined_batch(distributed, name):
    net = _net()
    x, t = _data()
    _run(name, net, _setup(name, net), x, t)
    for a, b in zip(distributed[name], net.parameters()):
        torch.testing.assert_close(a, b.detach(), rtol=0, atol=1e-10)
    assert not torch.allclose(distributed[name][0], _net()[0].weight)
