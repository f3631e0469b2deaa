"""Wide logistic regression (N < D): the GLM's dual route, which solves in the N x N data space.

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_glm_wide

Reports the default fit's time at N = 50 and D = 500, 2000 and 8000 (full
covariance, prior N(0, I)), and at D = 500 also the primal route (a D x D
precision factorised per proposal) on the same model, with the largest
difference of the posterior means.
"""

import time

import numpy as np

from efvi import Gaussian, Model, glm, likelihoods


def _model(n, dim, primal=False, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, dim)) / np.sqrt(dim) * 2
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ rng.normal(size=dim)))).astype(float)
    factor = glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")
    if primal:
        factor.replace_block = lambda block: None
    return Model({"w": Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))}, [factor])


def _timed(model, repeat=3):
    model.fit()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fit = model.fit()
        times.append(time.perf_counter() - start)
    return fit, min(times)


def main():
    for dim in (500, 2000, 8000):
        fit, seconds = _timed(_model(50, dim))
        print(f"N = 50, D = {dim}: dual route {seconds * 1e3:.1f} ms, {fit.n_iter} iterations, "
              f"converged {fit.converged}")
    dual, dual_s = _timed(_model(50, 500))
    primal, primal_s = _timed(_model(50, 500, primal=True))
    difference = np.abs(dual.posterior["w"].mean - primal.posterior["w"].mean).max()
    print(f"N = 50, D = 500: primal route {primal_s * 1e3:.1f} ms ({primal_s / dual_s:.0f}x the dual route); "
          f"posterior means differ by at most {difference:.1e}")


if __name__ == "__main__":
    main()
