"""Vprop against RMSprop on handwritten digits: same cost per step, similar fit, plus uncertainty (Khan et al., 2017, the Vprop poster).

The Vprop poster (Khan, Liu, Tangkaratt and Gal, 2017) turns RMSprop into
Gaussian variational inference with three changes: the gradient is taken at a
weight sample ``w = m + sigma eps`` with ``sigma^2 = 1 / (N (s + delta))``, the
scaling vector enters without its square root, and the prior adds
``delta m`` to the gradient.  Its experiments compare Vprop with RMSprop on
logistic regression and on a multilayer perceptron; in our copy of the seed
those panels are figures without numbers, so there is nothing published to
print beside ours: the claims shown are (a) a Vprop step costs about what an
RMSprop step costs, (b) the test learning curves are similar, and (c) Vprop
gives a posterior, hence predictive uncertainty, where RMSprop gives a point.

Data: scikit-learn's digits (8 x 8 images, 10 classes, 1,797 images), 1,200
for training and 597 for testing, pixels standardised with the training
statistics.  Models: logistic regression (an ``nn.MLP([64, 10])`` with a
softmax output, no hidden layer) and an MLP with 64 ReLU units; prior
precision 1; minibatches of 64; one Monte Carlo sample per step (Vprop-1);
the same ``lr`` and ``beta`` for both methods.  Predictions of Vprop average
the softmax over posterior samples.  Uncertainty is summarised by the
predictive entropy on test images the model gets right, on those it gets
wrong, and on out-of-distribution inputs (images of uniform random pixels),
and by the expected calibration error (ECE, 10 bins of confidence).
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from _common import parse_args, save_figure
from efvi.inference import ngvi
from efvi.models import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository root, for its benchmark timer
from benchmarks._common import interleaved_times, ratio_summary  # noqa: E402

N_TRAIN, BATCH, PRIOR_PRECISION, LR, BETA = 1200, 64, 1.0, 1e-3, 0.999
NETWORKS = {"logistic regression": [64, 10], "MLP 64-64-10 (ReLU)": [64, 64, 10]}


def load_data(seed=0):
    """Digits split 1,200 / 597, standardised; plus 500 images of uniform random pixels (out of distribution)."""
    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.target))
    train, test = order[:N_TRAIN], order[N_TRAIN:]
    centre, scale = digits.data[train].mean(0), digits.data[train].std(0) + 1e-8
    noise = np.random.default_rng(seed + 1).integers(0, 17, size=(500, 64)).astype(float)
    standardise = lambda images: (images - centre) / scale
    y = digits.target.astype(float)
    return standardise(digits.data[train]), y[train], standardise(digits.data[test]), y[test], standardise(noise)


def _optimizers(net, seed=0):
    common = dict(n_data=N_TRAIN, prior_precision=PRIOR_PRECISION, lr=LR, beta=BETA, seed=seed)
    return {"RMSprop": ngvi.RMSprop(net, **common), "Vprop": ngvi.Vprop(net, mc_samples=1, **common)}


def entropy(prob):
    return -np.sum(prob * np.log(np.clip(prob, 1e-300, 1.0)), axis=1)


def expected_calibration_error(prob, y, n_bins=10):
    """Average |accuracy - confidence| over equal-width confidence bins, weighted by bin size."""
    confidence, correct = prob.max(axis=1), prob.argmax(axis=1) == y
    bins = np.minimum((confidence * n_bins).astype(int), n_bins - 1)
    return sum(abs(correct[bins == b].mean() - confidence[bins == b].mean()) * np.mean(bins == b)
               for b in range(n_bins) if np.any(bins == b))


def test_metrics(opt, X, y, n_samples):
    """Test accuracy, log-loss (nats per image) and the predictive probabilities."""
    prob = opt.predict(X, n_samples=n_samples)
    log_loss = -np.mean(np.log(np.clip(prob[np.arange(len(y)), y.astype(int)], 1e-300, 1.0)))
    return np.mean(prob.argmax(axis=1) == y), log_loss, prob


def step_time_ratio(net, X, y, rounds):
    """Seconds per step of fresh RMSprop and Vprop optimisers on one minibatch, timed in turn, round by round."""
    batch = np.arange(BATCH)
    calls = {name: (lambda opt=opt: opt.step(X[batch], y[batch])) for name, opt in _optimizers(net, seed=1).items()}
    return interleaved_times(calls, rounds)


def train(net, data, epochs, seed=0):
    X_train, y_train, X_test, y_test, X_noise = data
    rng = np.random.default_rng(seed)
    curves, final = {}, {}
    for name, opt in _optimizers(net, seed).items():
        accuracy, log_loss = [], []
        for _ in range(epochs):
            order = rng.permutation(N_TRAIN)
            for start in range(0, N_TRAIN, BATCH):
                batch = order[start:start + BATCH]
                opt.step(X_train[batch], y_train[batch])
            acc, loss, _ = test_metrics(opt, X_test, y_test, 32)
            accuracy.append(acc)
            log_loss.append(loss)
        curves[name] = (accuracy, log_loss)
        acc, loss, prob = test_metrics(opt, X_test, y_test, 200)
        correct = prob.argmax(axis=1) == y_test
        final[name] = {"accuracy": acc, "log_loss": loss, "ece": expected_calibration_error(prob, y_test),
                       "entropy_right": entropy(prob[correct]), "entropy_wrong": entropy(prob[~correct]),
                       "entropy_noise": entropy(opt.predict(X_noise, n_samples=200))}
    return curves, final


def main(argv=None):
    args = parse_args(__doc__, argv)
    epochs, rounds = (6, 7) if args.quick else (100, 41)
    data = load_data()
    fig, axes = plt.subplots(len(NETWORKS), 3, figsize=(14, 7.5))
    results = {}
    for row, (title, sizes) in zip(axes, NETWORKS.items()):
        net = nn.MLP(sizes, "relu", likelihood=nn.Softmax())
        times = step_time_ratio(net, data[0], data[1], rounds)
        curves, final = train(net, data, epochs)
        results[title] = final, times
        ratio = ratio_summary(times, "Vprop", "RMSprop")
        print(f"\n{title} ({net.n_params} weights), {epochs} epochs, batch {BATCH}, lr {LR}, beta {BETA}")
        print(f"  time per step: RMSprop {np.median(times['RMSprop']) * 1e3:.3f} ms, "
              f"Vprop {np.median(times['Vprop']) * 1e3:.3f} ms; Vprop / RMSprop {ratio}")
        print("  method   test acc  log-loss  ECE    mean predictive entropy (nats): right / wrong / random pixels")
        for name, m in final.items():
            print(f"  {name:8s} {m['accuracy']:.3f}     {m['log_loss']:.3f}     {m['ece']:.3f}  "
                  f"{m['entropy_right'].mean():.3f} / {m['entropy_wrong'].mean():.3f} / "
                  f"{m['entropy_noise'].mean():.3f}")
        epoch_axis = np.arange(1, epochs + 1)
        for name, (accuracy, log_loss) in curves.items():
            row[0].plot(epoch_axis, log_loss, label=name)
            row[1].plot(epoch_axis, accuracy, label=name)
        row[0].set(xlabel="epoch", ylabel="test log-loss (nats)", yscale="log",
                   title=f"{title}: step time Vprop / RMSprop = {np.median(times['Vprop'] / times['RMSprop']):.2f}")
        row[1].set(xlabel="epoch", ylabel="test accuracy", title=f"{title}: accuracy")
        bins = np.linspace(0, np.log(10), 30)
        for colour, (name, m) in zip(("C0", "C1"), final.items()):
            for key, style, label in (("entropy_right", "-", "right"), ("entropy_wrong", "--", "wrong"),
                                      ("entropy_noise", ":", "random pixels")):
                row[2].hist(m[key], bins=bins, density=True, histtype="step", ls=style, color=colour,
                            label=f"{name}, {label}")
        row[2].set(xlabel="predictive entropy (nats; max log 10)", ylabel="density",
                   title=f"{title}: test-point uncertainty")
        for ax in row:
            ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, args.output, "nn_vprop_vs_rmsprop.png")
    return results


if __name__ == "__main__":
    main()
