"""Cost of one natural-gradient VI step against one Adam step (issue 13's speed target).

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_ngvi_step  [--quick]

Target: one IVON / VOGN / Vadam step <= 1.5x one Adam step on the same MLP
and batch.  ``.step(X_batch, y_batch)`` of each optimiser (``mc_samples=1``;
VOGN with its paper's per-example squared gradients) is timed against
``ngvi.Adam``'s on the same network and minibatch of 128, in turn, round after
round (``_common.interleaved_times``); each ratio is the median of the
round-by-round ratios.  Vprop and its baseline RMSprop (Khan et al., 2017) and
Bayes-by-Backprop are timed beside them:

* 14-64-1 ReLU, Bernoulli-logit (the Australian set of Khan and Nielsen, 2018, Fig. 1b);
* 784-100-10 ReLU, softmax (MNIST-sized).

Each optimiser keeps stepping on the same batch while it is timed, so its
state evolves as in training; the learning rates are small enough that
nothing diverges over the run.

Measured on 2 shared cores (load ~2-3), 41 rounds, with
``MALLOC_TRIM_THRESHOLD_=1000000000 MALLOC_MMAP_THRESHOLD_=1000000000``
(see ``bench_nn``), step time / Adam step time:

==================  =====  =====  =====  ======  ==============
network, batch 128  IVON   VOGN   Vadam  BBB     Vprop/RMSprop
==================  =====  =====  =====  ======  ==============
14-64-1 Bernoulli   1.33   1.54   1.29   1.60    1.30
784-100-10 softmax  1.80   1.97   1.66   3.27    1.76
==================  =====  =====  =====  ======  ==============

At 784-100-10 (P = 79,510) an Adam step is ~1.9 ms, ~1.1 ms of it the
model's gradient.  A sampling step also draws P standard normals (0.6-0.75 ms
with numpy's PCG64 on this machine, ~40% of an Adam step) and forms
``m + sigma eps``, which alone puts the floor near 1.45x; VOGN's squared
gradients add ~0.5x of a gradient on top.
"""

import argparse

import numpy as np

from efvi.inference import ngvi
from efvi.models import likelihoods, nn

from ._common import interleaved_times, ratio_summary

BATCH, N_DATA = 128, 10_000
NETWORKS = {
    "14-64-1 Bernoulli": ([14, 64, 1], likelihoods.Bernoulli()),
    "784-100-10 softmax": ([784, 100, 10], nn.Softmax()),
}
TARGET = ("IVON", "VOGN", "Vadam")


def _optimizers(net):
    common = dict(n_data=N_DATA, prior_precision=1.0, seed=0)
    return {
        "Adam": ngvi.Adam(net, lr=1e-4, **common),
        "IVON": ngvi.IVON(net, lr=1e-3, mc_samples=1, **common),
        "VOGN": ngvi.VOGN(net, lr=1e-4, mc_samples=1, **common),
        "Vadam": ngvi.Vadam(net, lr=1e-4, mc_samples=1, **common),
        "RMSprop": ngvi.RMSprop(net, lr=1e-4, **common),
        "Vprop": ngvi.Vprop(net, lr=1e-4, mc_samples=1, **common),
        "BBB": ngvi.BayesByBackprop(net, lr=1e-4, mc_samples=1, **common),
    }


def bench(name, layer_sizes, likelihood, rounds, seed=0):
    """Median ms per step and each optimiser's round-by-round ratio to Adam."""
    net = nn.MLP(layer_sizes, "relu", likelihood=likelihood)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((BATCH, layer_sizes[0]))
    y = rng.integers(0, max(layer_sizes[-1], 2), BATCH).astype(float)
    calls = {method: (lambda opt=opt: opt.step(X, y)) for method, opt in _optimizers(net).items()}
    times = interleaved_times(calls, rounds)
    baseline = {"Vprop": "RMSprop"}
    rows = []
    for method in calls:
        ratios = times[method] / times["Adam"]
        verdict = ("ok" if np.median(ratios) <= 1.5 else "OVER 1.5") if method in TARGET else ""
        versus = ratio_summary(times, method, baseline[method]) if method in baseline else ""
        rows.append((name, method, f"{np.median(times[method]) * 1e3:.3f}", ratio_summary(times, method, "Adam"),
                     verdict, versus))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    rounds = 7 if parser.parse_args(argv).quick else 41
    rows = [row for name, (sizes, likelihood) in NETWORKS.items() for row in bench(name, sizes, likelihood, rounds)]
    print(f"{'network, batch 128':20s}{'optimiser':10s}{'ms / step':>10s}  {'step / Adam step':26s}"
          f"{'<= 1.5?':10s}Vprop / RMSprop")
    for network, method, ms, ratio, verdict, versus in rows:
        print(f"{network:20s}{method:10s}{ms:>10s}  {ratio:26s}{verdict:10s}{versus}".rstrip())
    print(f"(medians over {rounds} rounds; ratios are medians of the round-by-round ratios, range in brackets)")
    return rows


if __name__ == "__main__":
    main()
