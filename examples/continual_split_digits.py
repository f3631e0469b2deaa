"""Continual learning on permuted digits: variational continual learning vs EWC vs plain fine-tuning.

scikit-learn's 8x8 digits (1,797 images, 70/30 train/test) are shown as five
tasks that arrive one after another; task t permutes the 64 pixels by a fixed
random permutation (task 1: none).  One MLP [64, 100, 10] with a 10-way
softmax learns them all.  Permuted digits (the permuted-MNIST benchmark of
Kirkpatrick et al., 2017 and Nguyen et al., 2018, on the small digits) is
chosen over split digits because every weight, the output layer included, is
shared by every task with the same ten classes: a single head is then correct,
and forgetting can only be prevented through the weights.  (Split digits needs
a head per task to be fair to any method, which the MLP does not have; with
one shared Bernoulli head all three learners below forgot the first pair
alike, about 0.5-0.6 accuracy, so it compared nothing.)

Three learners see each task's data only while it is the current task:

- **VCL** (Nguyen et al., 2018): VOGN's mean-field Gaussian posterior after
  task t is the prior of task t+1, ``VOGN(..., **previous.as_prior())``; Bayes'
  rule ``p(w | D_1..t) ~ p(D_t | w) p(w | D_1..t-1)`` with each posterior
  approximated.
- **EWC** (Kirkpatrick et al., 2017): Adam on the task's loss plus
  ``(lambda / 2) sum_i F_i (w_i - w*_i)^2``, a diagonal Laplace approximation
  of the previous posterior with the empirical Fisher ``F`` (summed squared
  per-example gradients at the previous MAP ``w*``).  That penalty is a
  Gaussian prior ``N(w*, diag(1 / (lambda F)))``, so it is Adam with
  ``prior_mean=w*`` and ``prior_precision = base + lambda * F``; the Fisher of
  every finished task is added up (online EWC).
- **Fine-tuning**: Adam from the previous weights with only a weak prior
  ``N(w*, I)`` (precision 1 against ~1,250 examples): nothing protects the
  old tasks.

The plot shows the average test accuracy over the tasks seen so far, and the
accuracy on the first task, as tasks arrive; the script prints the final
accuracy on every task for each method.
"""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from _common import parse_args, save_figure
from efvi.inference import ngvi
from efvi.models import nn

N_TASKS = 5
BASE_PRECISION = 1.0


def permuted_digits(n_tasks, seed=0):
    """Train and test sets of each task, lists of (X, y): X in [0, 1] with task t's pixel permutation, y the digit."""
    digits = load_digits()
    X, labels = digits.data / 16.0, digits.target.astype(float)
    rng = np.random.default_rng(seed)
    test = rng.uniform(size=len(labels)) < 0.3
    permutations = [np.arange(X.shape[1])] + [rng.permutation(X.shape[1]) for _ in range(n_tasks - 1)]
    train_sets = [(X[~test][:, order], labels[~test]) for order in permutations]
    test_sets = [(X[test][:, order], labels[test]) for order in permutations]
    return train_sets, test_sets


def run_epochs(optimizer, X, y, epochs, batch_size, rng):
    """Minibatch steps over ``epochs`` shuffles of the task's data."""
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch_size):
            batch = order[start:start + batch_size]
            optimizer.step(X[batch], y[batch])


class EWC:
    """Elastic weight consolidation as a Gaussian prior for the next task's MAP optimiser.

    The penalty ``(strength / 2) sum_i F_i (w_i - w*_i)^2`` on the summed
    negative log-likelihood is the negative log density of ``N(w*, diag(1 /
    (strength F)))``: :meth:`prior` returns it (plus the base precision) as
    ``prior_mean`` and ``prior_precision`` for :class:`ngvi.Adam`.

    Parameters
    ----------
    strength : float
        lambda, the weight of the penalty.
    base_precision : float
        The isotropic prior precision every task keeps.
    """

    def __init__(self, strength, base_precision):
        self.strength, self.base_precision = strength, base_precision
        self.anchor, self.fisher = None, 0.0

    def consolidate(self, net, params, X, y):
        """Add the empirical Fisher of a finished task at its MAP ``params`` and move the anchor there."""
        _, _, squared_gradients = net.log_lik_and_grads(params, X, y, curvature="squared_gradients")
        self.fisher = self.fisher + squared_gradients
        self.anchor = params.copy()

    def prior(self):
        """Keyword arguments for the next Adam: ``prior_mean`` and ``prior_precision`` (P,)."""
        return {"prior_mean": self.anchor, "prior_precision": self.base_precision + self.strength * self.fisher}


def accuracy(proba, y):
    return float(np.mean(np.argmax(proba, axis=1) == y))


def run_method(name, net, train_sets, test_sets, settings, seed):
    """Train on the tasks in turn; return the (n_tasks, n_tasks) accuracies: row t after task t, column s on task s."""
    rng = np.random.default_rng(seed)
    n_tasks = len(train_sets)
    accuracies = np.full((n_tasks, n_tasks), np.nan)
    previous, ewc = None, EWC(settings["ewc_strength"], BASE_PRECISION)
    for t, (X, y) in enumerate(train_sets):
        if name == "VCL":
            prior = {"prior_precision": BASE_PRECISION} if previous is None else previous.as_prior()
            optimizer = ngvi.VOGN(net, len(y), lr=settings["vogn_lr"], betas=(0.9, 0.99), hess_init=1.0,
                                  curvature="gauss_newton", mc_samples=4, seed=seed + t, **prior)
        elif name == "EWC":
            prior = {"prior_precision": BASE_PRECISION} if previous is None else ewc.prior()
            optimizer = ngvi.Adam(net, len(y), lr=settings["adam_lr"], seed=seed + t, **prior)
        else:
            prior = ({"prior_precision": BASE_PRECISION} if previous is None
                     else {"prior_precision": BASE_PRECISION, "prior_mean": previous.params})
            optimizer = ngvi.Adam(net, len(y), lr=settings["adam_lr"], seed=seed + t, **prior)
        run_epochs(optimizer, X, y, settings["epochs"], settings["batch_size"], rng)
        if name == "EWC":
            ewc.consolidate(net, optimizer.params, X, y)
        previous = optimizer
        for s in range(t + 1):
            X_test, y_test = test_sets[s]
            accuracies[t, s] = accuracy(optimizer.predict(X_test, n_samples=settings["n_samples"], seed=0), y_test)
    return accuracies


def main(argv=None):
    args = parse_args(__doc__, argv)
    train_sets, test_sets = permuted_digits(N_TASKS, seed=0)
    net = nn.MLP([64, 100, 10], activation="relu", likelihood=nn.Softmax())
    settings = {"epochs": 10 if args.quick else 30, "batch_size": 64, "n_samples": 20 if args.quick else 100,
                "vogn_lr": 0.05, "adam_lr": 0.01, "ewc_strength": 100.0}
    print(f"permuted digits: {N_TASKS} tasks, an MLP {list(net.layer_sizes)} ({net.n_params} weights), "
          f"{settings['epochs']} epochs of {len(train_sets[0][1])} images per task")
    results = {}
    for name in ("VCL", "EWC", "fine-tuning"):
        start = time.perf_counter()
        results[name] = run_method(name, net, train_sets, test_sets, settings, seed=1)
        final = results[name][-1]
        print(f"{name:>11}: final accuracy per task {np.array2string(final, precision=3)}, "
              f"average {final.mean():.3f} ({time.perf_counter() - start:.1f} s)")

    n_tasks = N_TASKS
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for name, marker in zip(results, "osd"):
        accuracies = results[name]
        average = [np.mean(accuracies[t, :t + 1]) for t in range(n_tasks)]
        axes[0].plot(np.arange(1, n_tasks + 1), average, marker=marker, label=name)
        axes[1].plot(np.arange(1, n_tasks + 1), accuracies[:, 0], marker=marker, label=name)
    axes[0].set(xlabel="tasks seen", ylabel="average test accuracy on tasks so far", title="permuted digits",
                xticks=range(1, n_tasks + 1))
    axes[1].set(xlabel="tasks seen", ylabel="test accuracy on task 1", title="forgetting the first task",
                xticks=range(1, n_tasks + 1))
    axes[0].legend()
    save_figure(fig, args.output, "continual_split_digits.png")
    plt.close(fig)
    return results


if __name__ == "__main__":
    main()
