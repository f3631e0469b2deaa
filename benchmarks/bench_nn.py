"""Cost of the MLP's curvatures against its plain gradient (issue 13, the model of the NGVI optimisers).

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_nn  [--quick]

``MLP.log_lik_and_grads`` on a batch of 128 with ``curvature=None`` (log-lik
and gradient), ``"squared_gradients"`` (plus sum_n g_n^2 by the outer-product
identity) and ``"gauss_newton"`` (plus the Gauss-Newton diagonal), for

* 14-64-1 ReLU, Bernoulli-logit (the Australian set of Khan and Nielsen, 2018, Fig. 1b);
* 784-100-10 ReLU, softmax (MNIST-sized);

each with one weight vector and with 16 Monte Carlo weight samples.  A plain
forward pass (``predict_outputs``) is timed beside them.  The calls are timed
in turn, round after round (``_common.interleaved_times``), and each ratio is
taken round by round.  Target: squared gradients <= ~2x the plain gradient.

Measured on 2 shared cores (load ~2.5), ratios to the plain gradient, median
over 25 rounds, with ``MALLOC_TRIM_THRESHOLD_=1000000000
MALLOC_MMAP_THRESHOLD_=1000000000`` (glibc keeps freed memory):

=========================  =========  ==============  ==============
network, batch 128         grad ms    squared grads   GGN diagonal
=========================  =========  ==============  ==============
14-64-1 Bernoulli, S=1     0.083      1.29            1.56
14-64-1 Bernoulli, S=16    0.67       1.33            1.70
784-100-10 softmax, S=1    1.10       1.51            1.77
784-100-10 softmax, S=16   17.6       1.46            1.77
=========================  =========  ==============  ==============

Under glibc's defaults the same calls are noisier and slower (784-100-10,
S=1: 2.4x and 2.9x): glibc returns freed arrays of a few hundred kB to the
OS after every call, and faulting the pages back costs about as much as a
matmul on this machine; the extra work of the curvatures is one more array
of that size per layer.
"""

import argparse

import numpy as np

from efvi.models import likelihoods, nn

from ._common import interleaved_times, ratio_summary

BATCH = 128
NETWORKS = {
    "14-64-1 Bernoulli": ([14, 64, 1], likelihoods.Bernoulli()),
    "784-100-10 softmax": ([784, 100, 10], nn.Softmax()),
}


def _problem(layer_sizes, likelihood, n_samples, seed=0):
    net = nn.MLP(layer_sizes, "relu", likelihood=likelihood)
    rng = np.random.default_rng(seed)
    mean = net.init_params(rng)
    params = mean if n_samples == 1 else mean + 0.01 * rng.standard_normal((n_samples, net.n_params))
    X = rng.standard_normal((BATCH, layer_sizes[0]))
    y = rng.integers(0, max(layer_sizes[-1], 2), BATCH).astype(float)
    return net, params, X, y


def bench(name, layer_sizes, likelihood, n_samples, rounds):
    net, params, X, y = _problem(layer_sizes, likelihood, n_samples)
    calls = {"forward": lambda: net.predict_outputs(params, X)}
    for curvature in (None, "squared_gradients", "gauss_newton"):
        calls[str(curvature)] = lambda c=curvature: net.log_lik_and_grads(params, X, y, curvature=c)
    t = interleaved_times(calls, rounds)
    return [(f"{name}, S={n_samples}", f"{np.median(t['forward']) * 1e3:.3f}", f"{np.median(t['None']) * 1e3:.3f}",
             f"{np.median(t['squared_gradients']) * 1e3:.3f}", ratio_summary(t, "squared_gradients", "None"),
             f"{np.median(t['gauss_newton']) * 1e3:.3f}", ratio_summary(t, "gauss_newton", "None"))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rounds = 5 if args.quick else 25
    rows = []
    for name, (layer_sizes, likelihood) in NETWORKS.items():
        for n_samples in (1, 16):
            rows += bench(name, layer_sizes, likelihood, n_samples, rounds)
    header = ("network, batch 128", "forward ms", "grad ms", "sq-grad ms", "sq-grad / grad", "GGN-diag ms",
              "GGN-diag / grad")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for r in [header] + rows:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(r, widths)).rstrip())
    print(f"(medians over {rounds} rounds; ratios are medians of the round-by-round ratios)")


if __name__ == "__main__":
    main()
