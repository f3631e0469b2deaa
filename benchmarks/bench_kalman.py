"""Time one compiled Kalman filter + RTS smoother pass (efvi.models.lds) at T = 1e5 and 1e6, d = 1, 2, 3.

For each size it reports the best of ``--repeats`` wall-clock runs, after a
warm-up call that compiles (or loads from cache) the kernels, of

* ``smoother``: :func:`efvi.models.lds.kalman_smoother`, all outputs (smoothed
  state moments, lag-one cross-covariances, a-marginals, log Z);
* ``marginals``: :func:`efvi.models.lds.smoothed_marginals`, a-marginals and log Z
  only (what a CVI site update needs);
* ``filter``: :func:`efvi.models.lds.kalman_filter` alone;

with constant ``A``, ``Q`` (given once) and with time-varying ``(T, d, d)``
stacks (a Markov GP on irregular times).  Input validation is included.

Run from the repository root: ``python -m benchmarks.bench_kalman`` (``--sizes 100000`` for a
quick run).
"""

import argparse
import time

import numpy as np

from efvi.models.lds import kalman_filter, kalman_smoother, smoothed_marginals


def make_problem(rng, T, d, time_varying):
    """A stable random state-space prior and Gaussian sites with 10% missing steps."""
    A = 0.95 * np.linalg.qr(rng.normal(size=(d, d)))[0]
    B = rng.normal(size=(d, d))
    Q = 0.1 * B @ B.T + 0.05 * np.eye(d)
    if time_varying:
        scale = rng.uniform(0.5, 1.0, size=(T, 1, 1))
        A, Q = scale * A, scale * Q
    pi = rng.uniform(0.5, 2.0, size=T)
    pi[rng.uniform(size=T) < 0.1] = 0.0
    gamma = pi * rng.normal(size=T)
    return (gamma, pi, np.ones(d), A, Q, np.zeros(d), np.eye(d))


def best_time(function, args, repeats):
    function(*args)  # warm-up: compiles the kernels or loads them from numba's cache
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return min(times)


def main(sizes=(100_000, 1_000_000), dims=(1, 2, 3), repeats=3):
    rng = np.random.default_rng(0)
    functions = {"smoother": kalman_smoother, "marginals": smoothed_marginals, "filter": kalman_filter}
    print(f"{'T':>9} {'d':>2} {'A, Q':>12} " + " ".join(f"{name + ' (s)':>14}" for name in functions))
    results = {}
    for T in sizes:
        for d in dims:
            for time_varying in (False, True):
                args = make_problem(rng, T, d, time_varying)
                row = {name: best_time(f, args, repeats) for name, f in functions.items()}
                results[(T, d, time_varying)] = row
                kind = "time-varying" if time_varying else "constant"
                print(f"{T:>9} {d:>2} {kind:>12} " + " ".join(f"{row[name]:>14.4f}" for name in functions))
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    main(options.sizes, options.dims, options.repeats)
