"""Bayesian neural networks on Australian and breast cancer: VOGN against Bayes-by-Backprop (Khan and Nielsen, 2018, Fig. 1b).

One hidden layer of 64 ReLU units, a N(0, I) prior on every weight (prior
precision 1), minibatches of 128 and 16 Monte Carlo weight samples per step, as
in the paper.  VOGN is the natural-gradient step with per-example squared
gradients; Bayes-by-Backprop (Blundell et al., 2015) follows the
reparameterisation gradient of the mean and a softplus scale with Adam.

Two sets of settings are run.  The paper's are those of the authors' code for
the figure (Khan et al., 2018; emtiyaz/vadam, ``vogn_code``): learning rate
1e-3 for every method, VOGN's curvature decay 0.999, Adam's betas (0.9, 0.999)
for Bayes-by-Backprop and Vadam, every posterior starting at precision 1 (the
prior's: standard deviation 1 for every weight), 16 x 128 = 2048 epochs.  Ours
are tuned: VOGN and IVON (Shen et al., 2024) at 0.1, Bayes-by-Backprop at 1e-3
and 1e-2, every posterior starting at precision N + 1 (standard deviation
1/sqrt(N + 1)).  The test loss is evaluated after every epoch with 100 weight
samples, two ways: the paper's metric (the Monte Carlo average of the whole
test set's likelihood, a log-sum-exp over samples of the summed test
log-likelihood, divided by the test size) and the per-point predictive
mixture.  The printout gives the epochs each method takes to reach
Bayes-by-Backprop's final test loss, and the end points beside the published
ones for Australian.  The authors' plot counts minibatches on its x axis (3
per epoch here); epochs are counted here.

Full mode, measured (one run, seed 0), Australian: with the paper's settings
VOGN reaches Bayes-by-Backprop's final whole-set test loss (0.525 bits) at
epoch 114 and Bayes-by-Backprop itself at epoch 1528 (13x); on the per-point
mixture 373 against 1501 epochs (4x).  The authors' recorded run (their
results file, whole-set loss over 10 samples after every minibatch): epoch 29
against 891 (30x).  With our settings Bayes-by-Backprop at 1e-2 is the
fastest (3 epochs, VOGN and IVON 10-11): the gap is its slow start from the
prior's standard deviation, not a property of every setting.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import logsumexp

from _common import parse_args, save_figure
from _datasets import load_libsvm
from efvi.inference import ngvi
from efvi.models import likelihoods, nn

PUBLISHED_AUSTRALIAN = {"VOGN": (0.353, 0.864), "BBB": (0.433, 0.861), "Vadam": (0.485, 0.858)}
"""Khan and Nielsen (2018), Fig. 1b end points on Australian (the paper's settings): test NLL in
nats per point (whole-set Monte Carlo average) and accuracy."""

BATCH, SAMPLES, PRIOR_PRECISION, EVAL_SAMPLES = 128, 16, 1.0, 100


def _optimizers(net, n_data, seed):
    """The two sets of settings, each a dict of optimisers with Bayes-by-Backprop's target run named "BBB"."""
    common = dict(n_data=n_data, prior_precision=PRIOR_PRECISION, mc_samples=SAMPLES, seed=seed)
    paper = {   # authors' code: lr 1e-3, initial precision 1 (hess_init 0; BBB's initial std 1)
        "VOGN": ngvi.VOGN(net, lr=1e-3, betas=(0.0, 0.999), hess_init=0.0, **common),
        "BBB": ngvi.BayesByBackprop(net, lr=1e-3, betas=(0.9, 0.999), init_std=1.0, **common),
        "Vadam": ngvi.Vadam(net, lr=1e-3, betas=(0.9, 0.999), hess_init=0.0, **common),
    }
    ours = {    # tuned: VOGN and IVON best of 0.01, 0.03, 0.1; BBB at Adam's default rate and at 1e-2
        "VOGN": ngvi.VOGN(net, lr=0.1, **common),
        "BBB": ngvi.BayesByBackprop(net, lr=1e-3, **common),
        "BBB lr 1e-2": ngvi.BayesByBackprop(net, lr=1e-2, **common),
        "IVON": ngvi.IVON(net, lr=0.1, **common),
    }
    return {"paper's settings": paper, "our settings": ours}


def test_metrics(opt, net, X, y, n_samples):
    """Test NLL in nats per point, the paper's whole-set way and as the per-point mixture, and accuracy."""
    logits = net.predict_outputs(opt.sample(n_samples), X)[..., 0]              # (S, B)
    log_lik = -np.logaddexp(0.0, np.where(y == 1, -logits, logits))             # log p(y_n | w_s)
    whole_set = -(logsumexp(log_lik.sum(axis=1)) - np.log(n_samples)) / len(y)
    per_point = -np.mean(logsumexp(log_lik, axis=0) - np.log(n_samples))
    prob = np.mean(1.0 / (1.0 + np.exp(-logits)), axis=0)
    return whole_set, per_point, np.mean((prob > 0.5) == y)


def train(opt, net, data, epochs, rng):
    """Train for ``epochs``; rows ``(epoch, whole-set NLL, per-point NLL, accuracy)`` after every epoch."""
    X_tr, y_tr, X_te, y_te = data
    rows = []
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(y_tr))
        for start in range(0, len(y_tr), BATCH):
            batch = order[start:start + BATCH]
            opt.step(X_tr[batch], y_tr[batch])
        rows.append((epoch,) + test_metrics(opt, net, X_te, y_te, EVAL_SAMPLES))
    return np.array(rows)


def epochs_to_reach(curve, target):
    """The first epoch whose test loss is at most ``target`` (None if never)."""
    reached = np.flatnonzero(curve[:, 1] <= target)
    return int(curve[reached[0], 0]) if reached.size else None


def report(block, curves):
    """Print the epochs each method takes to reach Bayes-by-Backprop's final test loss, both metrics."""
    print(f"  {block}: epochs to reach Bayes-by-Backprop's final test log2-loss (first epoch at or below it)")
    reached = {}
    for column, metric in ((1, "whole-set (paper's metric)"), (2, "per-point mixture")):
        target = curves["BBB"][-1, column]
        reached[metric] = {m: epochs_to_reach(c[:, [0, column]], target) for m, c in curves.items()}
        bbb, vogn = reached[metric]["BBB"], reached[metric]["VOGN"]
        ratio = f"; VOGN {bbb / vogn:.0f}x fewer than BBB" if vogn else ""
        print(f"    {metric:27s} target {target / np.log(2):.3f}: "
              + ", ".join(f"{m} {e}" for m, e in reached[metric].items()) + ratio)
    return reached


def run(name, epochs, seed=0):
    data = load_libsvm(name)
    net = nn.MLP([data[0].shape[1], 64, 1], activation="relu", likelihood=likelihoods.Bernoulli())
    # every method sees the same minibatches
    return {block: {method: train(opt, net, data, epochs, np.random.default_rng(seed))
                    for method, opt in optimizers.items()}
            for block, optimizers in _optimizers(net, len(data[1]), seed).items()}


def main(argv=None):
    args = parse_args(__doc__, argv)
    epochs = 5 if args.quick else 16 * BATCH
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    results = {}
    for column, name in enumerate(("australian", "breast_cancer_libsvm")):
        curves = run(name, epochs)
        print(f"\n{name}, {epochs} epochs, batch {BATCH}, {SAMPLES} samples per step; test NLL in nats per point "
              f"(whole-set Monte Carlo / per-point mixture, {EVAL_SAMPLES} samples) and accuracy at the end"
              + ("; published (paper's settings, Australian)" if name == "australian" else ""))
        results[name] = {}
        for row, (block, block_curves) in enumerate(curves.items()):
            for method, curve in block_curves.items():
                whole, point, accuracy = curve[-1, 1:]
                published = PUBLISHED_AUSTRALIAN.get(method) if (name, row) == ("australian", 0) else None
                paper = f"   published {published[0]:.3f}, {published[1]:.3f}" if published else ""
                print(f"  {block:17s} {method:12s} {whole:.3f} / {point:.3f}, accuracy {accuracy:.3f}{paper}")
                axes[row, column].plot(curve[:, 0], curve[:, 1] / np.log(2), label=method)
            axes[row, column].set(xscale="log", ylabel="test log2-loss (whole set)",
                                  title=f"{name.replace('_', ' ')}: {block}")
            axes[row, column].legend()
        for block, block_curves in curves.items():
            results[name][block] = report(block, block_curves)
    for ax in axes[1]:
        ax.set_xlabel("epoch")
    save_figure(fig, args.output, "nn_vogn_vs_bbb.png")
    return results


if __name__ == "__main__":
    main()
