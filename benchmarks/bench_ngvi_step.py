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

Measured on 2 cores shared with other engineers' jobs (load average 0.1-1.6
during the runs), 41 rounds, one run, with ``MALLOC_TRIM_THRESHOLD_=1000000000
MALLOC_MMAP_THRESHOLD_=1000000000`` (see ``bench_nn``), step time / Adam step
time (in brackets: step time / one gradient call of the network):

==================  ===========  ===========  ===========  ===========  ==============
network, batch 128  Adam         IVON         VOGN         Vadam        BBB
==================  ===========  ===========  ===========  ===========  ==============
14-64-1 Bernoulli   1.00 (1.55)  1.15 (1.79)  1.36 (2.14)  1.11 (1.74)  1.74 (2.72)
784-100-10 softmax  1.00 (1.58)  1.11 (1.75)  1.41 (2.22)  1.10 (1.71)  3.07 (4.83)
==================  ===========  ===========  ===========  ===========  ==============

Vprop / RMSprop: 1.16 (14-64-1), 1.19 (784-100-10).  Before the compiled
passes of ``efvi.inference.ngvi._kernels`` (same machine, same day, one run;
14-64-1 / 784-100-10): IVON 1.35 / 1.75, VOGN 1.55 / 1.94, Vadam 1.27 / 1.65, Vprop / RMSprop 1.25 / 1.72.

At 784-100-10 (P = 79,510) the gradient call is ~1.1 ms, ~0.85 ms of it the
two 128 x 784 x 100 matmuls of the first layer (forward, and the weights'
gradient A^T Delta), at the core's peak; Adam's own update, numpy
expressions over P, adds ~0.6 ms.  A sampling step adds the P
standard normals (numpy's ziggurat on PCG64 run by numba on the optimiser's
generator: the same draws as ``Generator.standard_normal``, ~0.3 ms instead of
0.75 ms) and one compiled update pass (~0.2 ms, bandwidth-bound); VOGN's
per-example squared gradients add a third such matmul, (A^2)^T Delta^2 (~0.5 ms).
The ratios to Adam are to efvi's Adam as it is: against the gradient call
alone (the floor of any first-order step) IVON costs 1.75x and VOGN 2.22x, so
against an Adam whose update were compiled too (~1.25 ms) IVON would be at
about 1.55x and VOGN at about 2x.
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
    params = net.init_params(seed)
    calls = {method: (lambda opt=opt: opt.step(X, y)) for method, opt in _optimizers(net).items()}
    calls["gradient"] = lambda: net.log_lik_and_grads(params, X, y)
    times = interleaved_times(calls, rounds)
    baseline = {"Vprop": "RMSprop"}
    rows = []
    for method in list(calls)[:-1]:
        ratios = times[method] / times["Adam"]
        verdict = ("ok" if np.median(ratios) <= 1.5 else "OVER 1.5") if method in TARGET else ""
        versus = ratio_summary(times, method, baseline[method]) if method in baseline else ""
        rows.append((name, method, f"{np.median(times[method]) * 1e3:.3f}", ratio_summary(times, method, "Adam"),
                     verdict, f"{np.median(times[method] / times['gradient']):.2f}", versus))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    rounds = 7 if parser.parse_args(argv).quick else 41
    rows = [row for name, (sizes, likelihood) in NETWORKS.items() for row in bench(name, sizes, likelihood, rounds)]
    print(f"{'network, batch 128':20s}{'optimiser':10s}{'ms / step':>10s}  {'step / Adam step':26s}"
          f"{'<= 1.5?':10s}{'step / gradient':17s}Vprop / RMSprop")
    for network, method, ms, ratio, verdict, per_gradient, versus in rows:
        print(f"{network:20s}{method:10s}{ms:>10s}  {ratio:26s}{verdict:10s}{per_gradient:17s}{versus}".rstrip())
    print(f"(medians over {rounds} rounds; ratios are medians of the round-by-round ratios, range in brackets; "
          f"'gradient' is one call of the network's log_lik_and_grads)")
    return rows


if __name__ == "__main__":
    main()
