"""One GLM iteration against its floor: one Gram matrix, one Cholesky factorisation and the marginals.

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_glm_iteration  [--quick]

A CVI iteration of logistic regression with a full-covariance weight block
must at least form ``X^T diag(pi) X`` (and ``X^T gamma``), factorise the D x D
posterior precision once, and compute the marginals ``x_i^T m`` and
``||L^{-1} x_i||^2``.  The floor is those three with efvi's own blocked BLAS
kernels (the fastest we have); the rest of an iteration is the likelihood's
expectations, the site update and the ELBO.  Reported: efvi's median time per
iteration of a whole fit divided by the floor, the two timed in turn, round by
round, at (N, D) = (1e5, 50), (2e4, 200) and (4e3, 800).
"""

import argparse

import numpy as np
from scipy.linalg import lapack

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods
from efvi.models.glm._linalg import gram_and_projection, marginals

from ._common import interleaved_times, ratio_summary


def _problem(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=(n, dim - 1))])
    w_true = rng.normal(size=dim) / np.sqrt(dim) * 2
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ w_true))).astype(float)
    return X, y


def _floor(X):
    rng = np.random.default_rng(1)
    pi, gamma = rng.uniform(0.05, 0.25, X.shape[0]), rng.normal(size=X.shape[0])
    identity = np.eye(X.shape[1])

    def floor():
        projection, gram = gram_and_projection(X, pi, gamma)
        chol, info = lapack.dpotrf(gram + identity, lower=1)
        mean = lapack.dpotrs(chol, projection, lower=1)[0]
        return marginals(X, mean, chol)

    return floor


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    sizes = [(10_000, 50), (4_000, 200)] if args.quick else [(100_000, 50), (20_000, 200), (4_000, 800)]
    rounds = 3 if args.quick else 9
    for n, dim in sizes:
        X, y = _problem(n, dim)
        prior = Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
        model = Model({"w": prior}, [glm.GLM(likelihoods.Bernoulli(), X, y, on="w")])
        per_iteration = []

        def efvi():
            fit = model.fit()
            per_iteration.append(np.median(fit.timings["per_iteration"]))

        times = interleaved_times({"efvi": efvi, "floor": _floor(X)}, rounds)
        times["iteration"] = np.array(per_iteration[-rounds:])
        print(f"N = {n}, D = {dim}: iteration {np.median(times['iteration']) * 1e3:.2f} ms, "
              f"floor (Gram + Cholesky + marginals) {np.median(times['floor']) * 1e3:.2f} ms; "
              f"iteration / floor {ratio_summary(times, 'iteration', 'floor')}")


if __name__ == "__main__":
    main()
