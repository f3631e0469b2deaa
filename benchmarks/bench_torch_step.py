"""One step of efvi's torch optimisers against one step of torch.optim.Adam (and ivon-opt where installed).

Two networks, batch 128, float32, one thread: the 784-100-10 MLP (random
MNIST-sized inputs) and the small digits CNN of
``examples/torch_vprop_vs_rmsprop.py`` (8 x 8 inputs).  Each optimiser's whole
step (forward, backward, update; the variational ones inside
``sampled_params``; VOGN's ``step(x, y)`` with its per-example gradients) is
timed in rounds, all optimisers interleaved in one process; the script prints
the median per step and its ratio to Adam's.  Runs on CUDA too when a GPU is
present (``--device cuda``; no copy to the host per step but the one read of
the step's checks).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_torch_step.py
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from efvi.inference.ngvi.torch import IVON, VOGN, Vadam, Vprop

_LOSS = torch.nn.functional.cross_entropy


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, 100), torch.nn.ReLU(), torch.nn.Linear(100, 10))


def cnn():
    """The example's CNN (examples/torch_vprop_vs_rmsprop.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from torch_vprop_vs_rmsprop import cnn as example_cnn

    return example_cnn()


def _point_step(model, opt, x, y):
    def step():
        opt.zero_grad()
        _LOSS(model(x), y).backward()
        opt.step()
    return step


def _sampled_step(model, opt, x, y):
    def step():
        opt.zero_grad()
        with opt.sampled_params(train=True):
            _LOSS(model(x), y).backward()
        opt.step()
    return step


def steppers(make, device, x, y, ess=60000.0):
    """name -> a function doing one training step, each on its own copy of the network."""
    out = {}
    model = make().to(device)
    out["torch Adam"] = _point_step(model, torch.optim.Adam(model.parameters(), lr=1e-3), x, y)
    for name, cls, lr in (("efvi IVON", IVON, 0.1), ("efvi Vadam", Vadam, 1e-3), ("efvi Vprop", Vprop, 1e-3)):
        model = make().to(device)
        out[name] = _sampled_step(model, cls(model.parameters(), lr=lr, ess=ess), x, y)
    model = make().to(device)
    vogn = VOGN(model, lr=1e-3, ess=ess)
    out["efvi VOGN"] = lambda: vogn.step(x, y)
    n_params = sum(p.numel() for p in model.parameters())
    out["(torch.randn P)"] = lambda: torch.randn(n_params, device=device)   # the draw every sampler pays
    try:
        import ivon as ivon_opt
    except ImportError:
        return out
    model = make().to(device)
    out["ivon-opt IVON"] = _sampled_step(model, ivon_opt.IVON(model.parameters(), lr=0.1, ess=ess), x, y)
    return out


def measure(calls, device, rounds, steps):
    """Median seconds per step of each call, interleaved round by round."""
    times = {name: [] for name in calls}
    for fn in calls.values():
        for _ in range(3):
            fn()
    for _ in range(rounds):
        for name, fn in calls.items():
            if device.type == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(steps):
                fn()
            if device.type == "cuda":
                torch.cuda.synchronize()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    device = torch.device(args.device)
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 10, (128,), generator=g).to(device)
    for label, make, shape in (("MLP 784-100-10", mlp, (128, 784)), ("digits CNN", cnn, (128, 1, 8, 8))):
        x = torch.randn(*shape, generator=g).to(device)
        medians = measure(steppers(make, device, x, y), device, args.rounds, args.steps)
        base = medians["torch Adam"]
        print(f"{label}, batch 128, float32, {args.device}")
        for name, median in medians.items():
            print(f"  {name:14s} {1e3 * median:8.3f} ms/step   {median / base:5.2f}x Adam")


if __name__ == "__main__":
    main()
