"""Sparse-GP hyperparameters learned from minibatches: efvi against GPflow's SVGP recipe, in one run.

Protocol: 1-D regression, ``y = sin(2x) + N(0, 0.3^2)`` at ``N`` uniform inputs
in [-3, 3]; a squared-exponential kernel starting at lengthscale 0.3 and
variance 0.5; ``--m`` (15) fixed inducing inputs on a grid; the Gaussian noise variance
fixed at 0.09.  Both libraries take ``--steps`` iterations on minibatches of
``--batch``, each a natural-gradient step of size ``--gamma`` on ``q(u)`` and
an Adam step of size ``--lr`` on the kernel's log parameters:

* **efvi**: ``gp.SparseGP(..., learn_hyperparameters=True, learning_rate=lr)``
  fitted with ``fit(batch_size=B, step=gamma)`` (Adam at fixed ``q(u)``);
* **GPflow** (``svgp_gpflow_minibatch_peer.py``, its own venv): ``SVGP`` with
  ``NaturalGradient(gamma)`` and Adam, whitened and not.

The figure of merit is how far the full-batch ELBO at the learned values (``q``
re-converged there by efvi in full batch) is below the full-batch optimum
(efvi's L-BFGS with the sites converged at every trial value), and the time
per step.  Run by hand::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse_minibatch_learning.py \\
        --gpflow-python /work/venvs/gpflow/bin/python
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

START = {"lengthscale": 0.3, "variance": 0.5}
NOISE = 0.09


def problem(n, m=15, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, (n, 1))
    return X, np.sin(2.0 * X[:, 0]) + 0.3 * rng.normal(size=n), np.linspace(-3.0, 3.0, m)[:, None]


def model(X, y, Z, lengthscale, variance, learn=True, **options):
    from efvi.models import Observe, gp, likelihoods
    from efvi.inference import Model

    block = gp.SparseGP(gp.kernels.RBF(lengthscale=lengthscale, variance=variance), X, Z,
                        learn_hyperparameters=learn, **options)
    return Model({"f": block}, [Observe(likelihoods.Gaussian(variance=NOISE), y, on="f")])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--m", type=int, default=15, help="inducing inputs")
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--gpflow-python", default=None)
    args = parser.parse_args()

    X, y, Z = problem(args.n, args.m)
    optimum = model(X, y, Z, **START).fit()

    def gap(values):
        return optimum.elbo - model(X, y, Z, values["lengthscale"], values["variance"], learn=False).fit().elbo

    rows = [("start", START, float("nan"))]
    start = time.perf_counter()
    fit = model(X, y, Z, **START, learning_rate=args.lr).fit(batch_size=args.batch, step=args.gamma,
                                                             max_iter=args.steps, warn=False)
    rows.append(("efvi (q(u) held)", fit.hyperparameters["f"], (time.perf_counter() - start) / args.steps))
    if args.gpflow_python:
        with tempfile.TemporaryDirectory() as directory:
            data = os.path.join(directory, "problem.npz")
            np.savez(data, X=X, y=y, Z=Z, noise=NOISE, batch=args.batch, seed=0, **START)
            for whiten in (0, 1):
                out = os.path.join(directory, f"gpflow_{whiten}.json")
                peer = os.path.join(os.path.dirname(os.path.abspath(__file__)), "svgp_gpflow_minibatch_peer.py")
                subprocess.run([args.gpflow_python, peer, "--data", data, "--whiten", str(whiten), "--gamma",
                                str(args.gamma), "--lr", str(args.lr), "--steps", str(args.steps), "--out", out],
                               check=True, capture_output=True)
                with open(out) as fh:
                    result = json.load(fh)
                rows.append((f"GPflow SVGP (whiten={bool(whiten)})", result, result["seconds_per_step"]))
    print(f"N = {args.n}, M = {args.m}, minibatches of {args.batch}, natural-gradient step {args.gamma}, Adam {args.lr}, "
          f"{args.steps} steps; full-batch optimum: ELBO {optimum.elbo:.4f}, lengthscale "
          f"{optimum.hyperparameters['f']['lengthscale']:.4f}, variance {optimum.hyperparameters['f']['variance']:.4f}")
    print(f"{'learner':30s} {'lengthscale':>11s} {'variance':>9s} {'nats below optimum':>19s} {'ms/step':>8s}")
    for name, values, seconds in rows:
        print(f"{name:30s} {values['lengthscale']:11.4f} {values['variance']:9.4f} {gap(values):19.3f} "
              f"{1e3 * seconds:8.2f}")


if __name__ == "__main__":
    main()
