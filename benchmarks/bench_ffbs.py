"""Joint posterior draws of a Markov GP by forward filtering, backward sampling: time against T, and agreement.

For T = 1e3 ... 1e6 irregular times (Matern-3/2, a 2-dimensional state,
Gaussian sites of precision 4 on noisy sin(t / 10)), it times
``posterior.sample(rng, n)`` (one Kalman filter, then the compiled backward
pass; ``--draws`` draws) and the smoother's marginals (``block.posterior``),
best of ``--repeats``.  At the smallest T it draws ``--check-draws`` samples and
reports the largest deviation of the sample mean and sample variance from the
smoother's marginals in units of their Monte Carlo standard errors
(``sqrt(var / n)`` and ``var sqrt(2 / n)``), and the largest deviation of the
sample covariance from the dense posterior covariance (``(K^-1 + Pi)^-1``)
relative to its standard error; for a correct sampler these are O(1) to
O(4) over ~1e3 to ~1e6 entries.

Run from the repository root: ``python -m benchmarks.bench_ffbs`` (``--sizes 1000 10000``).
"""

import argparse
import time

import numpy as np

from efvi.models import gp, lds


def _posterior(T, seed=0):
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.5, 1.5, T))
    block = lds.MarkovGP(gp.kernels.Matern32(lengthscale=20.0, variance=1.0), t)
    y = np.sin(t / 10.0) + 0.5 * rng.normal(size=T)
    return block, block.posterior((4.0 * y, np.full(T, 4.0)))


def _best(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def _agreement(n_draws):
    block, q = _posterior(300)
    draws = q.sample(np.random.default_rng(1), n_draws)
    mean_z = np.max(np.abs(draws.mean(axis=0) - q.mean) / np.sqrt(q.var / n_draws))
    var_z = np.max(np.abs(draws.var(axis=0) - q.var) / (q.var * np.sqrt(2.0 / n_draws)))
    K = block.kernel(block.t)
    S = np.sqrt(q.precision)
    cov = K - (K * S) @ np.linalg.solve(np.eye(K.shape[0]) + S[:, None] * K * S, S[:, None] * K)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n_draws)
    cov_z = np.max(np.abs(np.cov(draws.T) - cov) / se)
    return mean_z, var_z, cov_z


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000, 1000000])
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check-draws", type=int, default=20000)
    args = parser.parse_args(argv)
    _posterior(10)[1].sample(np.random.default_rng(0), 2)          # compile (or load from the cache)
    mean_z, var_z, cov_z = _agreement(args.check_draws)
    print(f"T = 300, {args.check_draws} draws: largest |mean error| {mean_z:.2f} SE, |variance error| {var_z:.2f} "
          f"SE, |covariance error| {cov_z:.2f} SE (over 300, 300 and 90000 entries)")
    print(f"{'T':>9} {'sample (s)':>11} {'per draw-step (ns)':>19} {'smoother (s)':>13}")
    for T in args.sizes:
        block, q = _posterior(T)
        sample = _best(lambda: q.sample(np.random.default_rng(0), args.draws), args.repeats)
        smooth = _best(lambda: block.posterior((q.natural_mean, q.precision)), args.repeats)
        print(f"{T:>9} {sample:>11.4f} {1e9 * sample / (T * args.draws):>19.1f} {smooth:>13.4f}")


if __name__ == "__main__":
    main()
