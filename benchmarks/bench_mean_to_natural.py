"""Benchmark: Gamma and Dirichlet (K = 5) ``mean_to_natural`` on a batch of 1e6.

Parameters are drawn log-uniformly over the contract tests' moderate range
(Gamma shape 1e-2..1e3 and rate 1e-2..1e2, Dirichlet concentrations
1e-2..1e3), mapped to mean parameters, and mapped back.  The timing is the best
of ``--repeats`` runs after a warm-up call (which compiles the numba kernels
on a fresh machine); the error is the largest relative error of the readable
parameters (shape, rate, concentrations) after the round trip.

Run ``python benchmarks/bench_mean_to_natural.py [--size N] [--repeats R]``.
"""

import argparse
import time

import numpy as np

from efvi.expfam import Dirichlet, Gamma


def _time_inverse(family, natural, repeats):
    """Best wall and CPU seconds of ``family.mean_to_natural`` and its result."""
    mean = family.natural_to_mean(natural)
    family.mean_to_natural(tuple(p[:10] for p in mean))
    best_wall = best_cpu = np.inf
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        back = family.mean_to_natural(mean)
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu, back


def _relative_error(value, reference):
    return float(np.max(np.abs(value - reference) / np.abs(reference)))


def main(size=1_000_000, repeats=3, seed=0):
    rng = np.random.default_rng(seed)
    shape = 10.0 ** rng.uniform(-2.0, 3.0, size)
    rate = 10.0 ** rng.uniform(-2.0, 2.0, size)
    wall, cpu, back = _time_inverse(Gamma, (shape - 1.0, -rate), repeats)
    print(f"Gamma      n={size:>9,d}  {wall:6.3f} s wall  {cpu:6.3f} s CPU   max relative error: "
          f"shape {_relative_error(back[0] + 1.0, shape):.1e}, rate {_relative_error(-back[1], rate):.1e}")

    concentration = 10.0 ** rng.uniform(-2.0, 3.0, (size, 5))
    wall, cpu, back = _time_inverse(Dirichlet, (concentration - 1.0,), repeats)
    print(f"Dirichlet  n={size:>9,d}  {wall:6.3f} s wall  {cpu:6.3f} s CPU   max relative error: "
          f"concentration {_relative_error(back[0] + 1.0, concentration):.1e}  (K = 5)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000, help="batch size (default 1e6)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs, best reported (default 3)")
    args = parser.parse_args()
    main(args.size, args.repeats)
