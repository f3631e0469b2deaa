"""Bayesian neural networks on Australian and breast cancer: VOGN against Bayes-by-Backprop (Khan and Nielsen, 2018, Fig. 1b).

One hidden layer of 64 ReLU units, a N(0, I) prior on every weight (prior
precision 1), minibatches of 128 and 16 Monte Carlo weight samples per step, as
in the paper.  VOGN is the natural-gradient step with per-example squared
gradients; Bayes-by-Backprop (Blundell et al., 2015) follows the
reparameterisation gradient of the mean and a softplus scale with Adam; Vadam
(Khan et al., 2018) and IVON (Shen et al., 2024) are shown beside them.  The
plot is the test log2-loss against epochs; the printout puts our end points
beside the published ones for Australian (test negative log-likelihood in nats
per point and accuracy), computed two ways: the per-point predictive mixture,
and the paper's Monte Carlo average of the whole test set's log-likelihood.
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
"""Khan and Nielsen (2018), Fig. 1b end points on Australian: (test NLL in nats per point, accuracy)."""

BATCH, SAMPLES, PRIOR_PRECISION = 128, 16, 1.0


CHECKPOINTS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000)
"""Epochs at which the test loss is recorded (a log-spaced curve)."""


def _optimizers(net, n_data, seed):
    """The methods and learning rates compared: Bayes-by-Backprop at Adam's default rate (as in the paper)
    and at a tuned one (1e-2, the best of 1e-3, 1e-2); VOGN and IVON at 0.1 (best of 0.01, 0.03, 0.1)."""
    common = dict(n_data=n_data, prior_precision=PRIOR_PRECISION, mc_samples=SAMPLES, seed=seed)
    return {
        "VOGN": ngvi.VOGN(net, lr=0.1, **common),
        "BBB": ngvi.BayesByBackprop(net, lr=1e-3, **common),
        "BBB lr 1e-2": ngvi.BayesByBackprop(net, lr=1e-2, **common),
        "Vadam": ngvi.Vadam(net, lr=1e-2, **common),
        "IVON": ngvi.IVON(net, lr=0.1, **common),
    }


def test_metrics(opt, net, X, y, n_samples, rng):
    """Per-point predictive NLL (nats), the paper's whole-set Monte Carlo NLL (nats), log2-loss and accuracy."""
    prob = opt.predict(X, n_samples=n_samples)[:, 1]
    p_true = np.clip(np.where(y == 1, prob, 1 - prob), 1e-300, 1.0)
    samples = opt.sample(n_samples)
    per_sample = np.array([net.log_lik_and_grads(w, X, y)[0] for w in samples])   # summed over the test set
    whole_set = -(logsumexp(per_sample) - np.log(n_samples)) / len(y)
    return -np.mean(np.log(p_true)), whole_set, -np.mean(np.log2(p_true)), np.mean((prob > 0.5) == y)


def run(name, epochs, seed=0):
    X_tr, y_tr, X_te, y_te = load_libsvm(name)
    rng = np.random.default_rng(seed)
    net = nn.MLP([X_tr.shape[1], 64, 1], activation="relu", likelihood=likelihoods.Bernoulli())
    curves, final = {}, {}
    for method, opt in _optimizers(net, len(y_tr), seed).items():
        losses = []
        for epoch in range(1, epochs + 1):
            order = rng.permutation(len(y_tr))
            for start in range(0, len(y_tr), BATCH):
                batch = order[start:start + BATCH]
                opt.step(X_tr[batch], y_tr[batch])
            if epoch in CHECKPOINTS or epoch == epochs:
                losses.append((epoch, test_metrics(opt, net, X_te, y_te, 32, rng)[2]))
        curves[method] = np.array(losses)
        final[method] = test_metrics(opt, net, X_te, y_te, 100, rng)
    return curves, final


def epochs_to_reach(curve, target):
    """The first recorded epoch whose test loss is at most ``target`` (None if never)."""
    reached = curve[curve[:, 1] <= target]
    return int(reached[0, 0]) if reached.size else None


def main(argv=None):
    args = parse_args(__doc__, argv)
    epochs = 5 if args.quick else 1000
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    results = {}
    for ax, name in zip(axes, ("australian", "breast_cancer_libsvm")):
        curves, final = run(name, epochs)
        results[name] = final
        for method, curve in curves.items():
            ax.plot(curve[:, 0], curve[:, 1], "-o", markersize=3, label=method)
        ax.set(xscale="log", xlabel="epoch", ylabel="test log2-loss", title=name.replace("_", " "))
        ax.legend()
        print(f"\n{name}, {epochs} epochs: test NLL per point (predictive mixture / whole-set Monte Carlo), "
              "accuracy; published (Australian only)")
        for method, (nll, whole, _, accuracy) in final.items():
            published = PUBLISHED_AUSTRALIAN.get(method) if name == "australian" else None
            paper = f"   published {published[0]:.3f}, {published[1]:.3f}" if published else ""
            print(f"  {method:12s} {nll:.3f} / {whole:.3f}, accuracy {accuracy:.3f}{paper}")
        target = curves["BBB"][-1, 1]
        print(f"  epochs to reach Bayes-by-Backprop's final test log2-loss {target:.3f} (recorded epochs "
              f"{', '.join(str(e) for e in CHECKPOINTS if e <= epochs)}): "
              + ", ".join(f"{m} {epochs_to_reach(c, target)}" for m, c in curves.items()))
    save_figure(fig, args.output, "nn_vogn_vs_bbb.png")
    return results


if __name__ == "__main__":
    main()
