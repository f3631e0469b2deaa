"""Time per iteration of a GLM on Dask arrays against the in-memory GLM, at N = 1e6 and D = 20, 100.

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_glm_dask  [--quick]

Logistic regression with a full-covariance weight block.  The Dask fit runs on
a local cluster of two worker processes with one thread each (and efvi's own
per-point threads off in the workers); the in-memory fit runs in this process
with efvi's default threads (as many as cores).  Both take fixed full steps
(``step=1.0``, no Anderson acceleration) for a fixed number of iterations, and
the two are timed in turn, round by round, so that a shared machine whose speed
drifts compares like with like.  Three ways to hold the rows:

* ``in-memory``: one numpy array in this process;
* ``dask, persisted``: ``X`` persisted on the workers (``X.persist()``);
* ``dask, regenerated``: ``X`` a recipe (``dask.array.random`` from a seed)
  that every pass recomputes block by block, as when the rows do not fit in
  the workers' memory (examples/glm_dask_large.py).

Reported: the median over rounds of each fit's median time per iteration,
and the ratios to the in-memory fit.  ``--quick``: N = 1e5, D = 20 only.
"""

import argparse
import os
import time

import numpy as np

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods

ITERATIONS = 5
CHUNK_ROWS = 100_000


def _data(n, dim, chunk_rows, seed=0):
    """(X, y) as dask arrays on the workers: a seeded recipe, with an intercept and logistic labels."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n, dim), chunks=(chunk_rows, dim))
    X[:, 0] = 1.0
    truth = np.random.default_rng(seed).normal(0.0, 2.0 / np.sqrt(dim), dim)
    y = (rng.random(n, chunks=chunk_rows) < 1.0 / (1.0 + np.exp(-(X @ truth)))).astype(float)
    return X, y


def _per_iteration(model):
    fit = model.fit(step=1.0, max_iter=ITERATIONS, tol=0.0, acceleration=False, warn=False)
    return float(np.median(fit.timings["per_iteration"]))


def _compare(client, n, dim, rounds):
    X, y = _data(n, dim, min(CHUNK_ROWS, n))
    y = y.persist()
    prior = Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))
    likelihood = likelihoods.Bernoulli()
    start = time.perf_counter()
    X_kept = X.persist()
    client.wait_for_workers(2)
    factor_kept = glm.GLM(likelihood, X_kept, y, on="w")
    setup_kept = time.perf_counter() - start
    factor_regenerated = glm.GLM(likelihood, X, y, on="w")
    X_local, y_local = X_kept.compute(), y.compute()
    models = {
        "in-memory": Model({"w": prior}, [glm.GLM(likelihood, X_local, y_local, on="w")]),
        "dask, persisted": Model({"w": prior}, [factor_kept]),
        "dask, regenerated": Model({"w": prior}, [factor_regenerated]),
    }
    for model in models.values():                          # warm caches and workers
        model.fit(step=1.0, max_iter=1, warn=False)
    times = {name: [] for name in models}
    for _ in range(rounds):
        for name, model in models.items():
            times[name].append(_per_iteration(model))
    base = np.array(times["in-memory"])
    print(f"\n== N = {n:,}, D = {dim}: {X.numblocks[0]} blocks of {min(CHUNK_ROWS, n):,} rows; X is "
          f"{X.nbytes / 1e6:.0f} MB; persisting X and checking the rows took {setup_kept:.1f} s")
    print(f"{'rows':<20} {'s / iteration':>14} {'x in-memory':>12}   (median over {rounds} rounds of "
          f"{ITERATIONS} iterations; per-round ratios min-max)")
    for name, t in times.items():
        t = np.array(t)
        ratios = t / base
        print(f"{name:<20} {np.median(t):14.3f} {np.median(ratios):12.2f}   ({ratios.min():.2f}-{ratios.max():.2f})")
    return times


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="N = 1e5, D = 20 only")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1":
        print("note: run with OPENBLAS_NUM_THREADS=1 to compare single-threaded BLAS on both sides")
    from distributed import Client, LocalCluster

    cases = [(100_000, 20)] if args.quick else [(1_000_000, 20), (1_000_000, 100)]
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           env={"EFVI_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    client = Client(cluster)
    try:
        for n, dim in cases:
            _compare(client, n, dim, args.rounds)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
