"""Do the Bayesian-MLP estimators' default learning rates work?  (issue 25, item 3)

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_nn_defaults  [--optimizers NAME ...]

Every optimiser of ``efvi.models.nn.estimator.OPTIMIZERS``, at its default
learning rate (``lr=None``) and at each of 1e-3, 1e-2 and 1e-1, everything
else at the estimators' defaults, on three data sets with a fixed split:

* breast cancer (scikit-learn, 569 x 30, 2 classes), 30% test, stratified;
* digits (scikit-learn, 1797 x 64, 10 classes), 30% test, stratified;
* a 1-D regression: 1000 points, x ~ U(-3, 3), y = sin(x) + N(0, 0.3^2), scored
  on 1000 more (the regressor learns its noise).

Classifiers are scored by test accuracy and log-loss, the regressor by test
RMSE.  The default passes when its accuracy is within 1 point of the best
accuracy of the three rates, its log-loss within 5% of their best log-loss
and its RMSE within 5% of their best RMSE (each best taken separately).
VAN (full covariance, O(P^3) per step with an exact Hessian) is run with one
hidden layer of 8 units instead of 64, so that it takes minutes, not hours.

The table the estimators' defaults were chosen by is in
``efvi.models.nn.estimator`` (the docstrings of ``CLASSIFIER_LR`` and ``REGRESSOR_LR``).
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from efvi.models.nn import BayesianMLPClassifier, BayesianMLPRegressor
from efvi.models.nn.estimator import OPTIMIZERS

GRID = (1e-3, 1e-2, 1e-1)
SMALL_NETWORK = {"van": (8,)}
"""Optimisers run on a smaller network than the default (64,) (their cost per step)."""


def load(name):
    """``(X_train, X_test, y_train, y_test)`` of a benchmark data set, always the same split."""
    if name == "regression":
        rng = np.random.default_rng(0)
        x = rng.uniform(-3.0, 3.0, (2000, 1))
        y = np.sin(x[:, 0]) + 0.3 * rng.standard_normal(2000)
        return x[:1000], x[1000:], y[:1000], y[1000:]
    X, y = {"cancer": load_breast_cancer, "digits": load_digits}[name](return_X_y=True)
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def scores(optimizer, lr, data, name):
    """Test scores of one fit: ``{"acc", "logloss"}`` or ``{"rmse"}``; ``None`` values if the fit failed."""
    X_train, X_test, y_train, y_test = data
    hidden = SMALL_NETWORK.get(optimizer, (64,))
    estimator = BayesianMLPRegressor if name == "regression" else BayesianMLPClassifier
    model = estimator(optimizer=optimizer, lr=lr, hidden_layer_sizes=hidden)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(X_train, y_train)
        except (ArithmeticError, ValueError, RuntimeError):   # a diverged fit scores nothing
            return {"rmse": None} if name == "regression" else {"acc": None, "logloss": None}
    if name == "regression":
        return {"rmse": float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))}
    proba = model.predict_proba(X_test)
    return {"acc": float(np.mean(model.classes_[proba.argmax(axis=1)] == y_test)),
            "logloss": float(log_loss(y_test, proba, labels=model.classes_))}


def verdict(default, grid):
    """Whether the default's scores are within the bounds of the grid's best, and the best of each score.

    Parameters
    ----------
    default : dict of str to float or None
    grid : list of dict
        The scores at each rate of ``GRID``.

    Returns
    -------
    ok : bool
    best : dict of str to float
    """
    best = {}
    for key in default:
        values = [scores[key] for scores in grid if scores[key] is not None]
        best[key] = (max if key == "acc" else min)(values) if values else None
    if any(value is None for value in default.values()):
        return False, best
    ok = all(best[key] is None or (default[key] >= best[key] - 0.01 if key == "acc"
                                   else default[key] <= 1.05 * best[key]) for key in default)
    return ok, best


def _fmt(value):
    return "  fail" if value is None else f"{value:6.3f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizers", nargs="+", default=list(OPTIMIZERS), choices=list(OPTIMIZERS))
    parser.add_argument("--sets", nargs="+", default=["cancer", "digits", "regression"],
                        choices=["cancer", "digits", "regression"])
    parser.add_argument("--candidates", nargs="*", type=float, default=[],
                        help="more learning rates to judge against the grid as the default is")
    args = parser.parse_args(argv)
    failures = 0
    for name in args.sets:
        data = load(name)
        print(f"\n{name}: default | lr = {' | '.join(f'{lr:g}' for lr in GRID)} | within bounds"
              + "".join(f" | lr = {lr:g}, within" for lr in args.candidates))
        for optimizer in args.optimizers:
            start = time.perf_counter()
            default = scores(optimizer, None, data, name)
            grid = [scores(optimizer, lr, data, name) for lr in GRID]
            ok, best = verdict(default, grid)
            failures += not ok
            cells = [" ".join(_fmt(s[key]) for key in default) for s in [default, *grid]]
            cells.append("yes" if ok else "NO ")
            for lr in args.candidates:
                candidate = scores(optimizer, lr, data, name)
                cells.append(" ".join(_fmt(candidate[key]) for key in default)
                             + (" yes" if verdict(candidate, grid)[0] else " NO "))
            print(f"  {optimizer:8s} {' | '.join(cells)} ({time.perf_counter() - start:.0f} s)", flush=True)
    print(f"\n{failures} default(s) outside the bounds")
    return failures


if __name__ == "__main__":
    main()
