"""Poisson Markov GP (Matern-3/2) at T = 1e5 and 1e6: CVI time per iteration, time to converge, cost of one Kalman pass.

The reference point is BayesNewton's ``MarkovVariationalGP`` (JAX) on a
Poisson Matern-3/2 problem with T = 100,000: about 0.11 s per iteration,
and its first full natural-gradient step overshoots (ELBO about -3e13), so it
needs about 30 iterations.

Data: irregular times with gaps uniform in [0.5, 1.5], a latent path drawn
exactly from the Matern-3/2 GP prior (lengthscale 50, variance 1) through its
state-space recursion, and Poisson counts with rate ``exp(f)``.  The fitted
model has the true hyperparameters.  For each size the script reports

* ``bare pass``: one compiled Kalman filter + RTS smoother pass returning the
  marginals of ``f`` (``lds.smoothed_marginals``, with its input checks) and
  the block's own call of the same pass (``MarkovGP.posterior``, no checks),
  at the converged sites; ``likelihood``: the Poisson expectations as an
  iteration computes them (stored ``y``, no input checks; best of ``--repeats``);
* for the default fit (adaptive step with Anderson acceleration) and for the
  adaptive step alone (``acceleration=False``): iterations, total time, median
  time per iteration, its ratio to the block's pass, and the speed-up over
  BayesNewton's 0.11 s per iteration;
* what the first full step (rho = 1) does to the ELBO from the default
  (IRLS-style) start and from the prior, and how the default rule recovers
  from the prior's overshoot (``fit(init="prior")``: ``rho_trace``).

All timings are wall-clock after a warm-up fit that compiles the kernels (or
loads them from numba's cache).  Run from the repository root:
``python -m benchmarks.bench_markov_gp`` (``--sizes 100000`` for a quick run).
"""

import argparse
import time

import numpy as np

from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods

BAYESNEWTON_S_PER_ITER = 0.11
LENGTHSCALE, VARIANCE = 50.0, 1.0


def simulate(rng, T):
    """Times (T,) and Poisson counts (T,) from a Matern-3/2 path drawn through its state-space form."""
    t = np.cumsum(rng.uniform(0.5, 1.5, T))
    kernel = gp.kernels.Matern32(lengthscale=LENGTHSCALE, variance=VARIANCE)
    A, Q = kernel.discretise(np.concatenate([[0.0], np.diff(t)]))
    noise = np.einsum("tij,tj->ti", np.linalg.cholesky(Q[1:]), rng.normal(size=(T - 1, 2)))
    x = np.empty((T, 2))
    x[0] = np.linalg.cholesky(kernel.state_space().Pinf) @ rng.normal(size=2)
    for step in range(1, T):  # benchmark set-up only, not timed
        x[step] = A[step] @ x[step - 1] + noise[step - 1]
    return t, rng.poisson(np.exp(x[:, 0])).astype(float)


def best_time(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def model_for(t, y):
    kernel = gp.kernels.Matern32(lengthscale=LENGTHSCALE, variance=VARIANCE)
    return Model({"f": lds.MarkovGP(kernel, t)}, [Observe(likelihoods.Poisson(), y, on="f")])


def measure(T, repeats, seed=0):
    """Fit one problem of size ``T`` three ways and time the pieces; returns a dict of figures."""
    t, y = simulate(np.random.default_rng(seed), T)
    model = model_for(t, y)
    block = model.blocks["f"]
    fits = {"default (adaptive + Anderson)": model.fit(),
            "adaptive, no acceleration": model.fit(acceleration=False),
            "default from the prior": model.fit(init="prior")}
    first = {"informed start (default)": model.fit(step=1.0, max_iter=1, warn=False),
             "prior": model.fit(step=1.0, max_iter=1, warn=False, init="prior")}
    sites = fits["default (adaptive + Anderson)"].sites[0]
    gamma, pi = sites.natural_mean, sites.precision
    q = block.posterior((gamma, pi))
    factor = model.factors[0]
    pieces = {
        "smoothed_marginals": best_time(lambda: lds.smoothed_marginals(gamma, pi, block.H[0], block.A, block.Q,
                                                                       block.m0, block.P0), repeats),
        "block pass": best_time(lambda: block.posterior((gamma, pi)), repeats),
        # the call a CVI iteration makes: stored y, no validation, log y! cached
        "likelihood": best_time(lambda: factor.likelihood._variational_expectations(q.mean, q.var, factor.y),
                                repeats),
    }
    return {"T": T, "fits": fits, "first": first, "pieces": pieces}


def report(result):
    T, pieces, fits, first = result["T"], result["pieces"], result["fits"], result["first"]
    print(f"\nT = {T:,}: bare pass {pieces['smoothed_marginals'] * 1e3:.1f} ms (smoothed_marginals), "
          f"{pieces['block pass'] * 1e3:.1f} ms (MarkovGP.posterior); Poisson expectations "
          f"{pieces['likelihood'] * 1e3:.1f} ms")
    for start, fit in first.items():
        elbo0, elbo1 = fit.elbo_trace[0], fit.elbo_trace[1]
        print(f"  first full step (rho = 1) from the {start}: ELBO {elbo0:.6g} -> {elbo1:.6g} "
              f"({'overshoots' if elbo1 < elbo0 else 'improves'})")
    header = (f"  {'rule':<31} {'iters':>5} {'total s':>8} {'s/iter':>8} {'/ pass':>7} {'vs BN':>7} "
              f"{'backoffs':>8}  {'ELBO':>16}  rho_trace[:8]")
    print(header)
    for name, fit in fits.items():
        per_iter = float(np.median(fit.timings["per_iteration"]))
        print(f"  {name:<31} {fit.n_iter:>5} {fit.timings['total']:>8.3f} {per_iter:>8.4f} "
              f"{per_iter / pieces['block pass']:>7.2f} {BAYESNEWTON_S_PER_ITER / per_iter:>6.1f}x "
              f"{fit.n_backoffs:>8}  {fit.elbo:>16.6f}  {np.array2string(fit.rho_trace[1:9], precision=3)}"
              + ("" if fit.converged else "  (NOT converged)"))


def main(sizes=(100_000, 1_000_000), repeats=3):
    t, y = simulate(np.random.default_rng(1), 2000)
    model_for(t, y).fit()  # warm-up: compile the kernels or load them from numba's cache
    results = []
    for T in sizes:
        result = measure(T, repeats)
        report(result)
        results.append(result)
    print(f"\nBayesNewton MarkovVariationalGP reference: {BAYESNEWTON_S_PER_ITER} s/iteration at T = 100,000, "
          "about 30 iterations (its first full step overshoots to an ELBO of about -3e13)")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    main(options.sizes, options.repeats)
