"""Logistic regression on ten million rows that no worker can hold: a GLM on Dask arrays.

The design matrix (``N`` rows, ``D = 20`` columns with an intercept) and the
labels are generated chunk by chunk on the workers of a local Dask cluster
from a seed (``dask.array.random``), and each worker's memory budget is
below the size of ``X``.  So ``X`` is never held anywhere: every CVI
iteration is one pass in which each task regenerates its block of rows,
evaluates the in-memory GLM on it and keeps the block's sites beside it; only
the 20 x 20 statistics come back to this process, which does one Cholesky
per iteration.  The labels (8 bytes a row) and the sites (16 bytes a row)
stay on the workers.

Quick by default (``N = 100,000``); ``--full`` fits ``N = 10,000,000``
(``X`` is 1.6 GB; each of the two workers has a 1 GB budget).  It prints the
posterior against the weights that generated the data, the time per
iteration and the workers' peak memory, and plots the ELBO's approach to its
optimum and each weight's error in posterior standard deviations.
"""

import resource
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
import efvi
from efvi import plot

DIM = 20
SEED = 2024
WORKER_BUDGET = 2 ** 30
"""Bytes each worker may use (its ``memory_limit``)."""


def simulate(n, chunk_rows, seed=SEED):
    """Rows, labels and the true weights; the rows are a recipe for the workers, not data in this process."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    X = rng.standard_normal((n, DIM), chunks=(chunk_rows, DIM))
    X[:, 0] = 1.0                                                   # the intercept
    truth = np.random.default_rng(seed).normal(0.0, 0.5, DIM)
    y = (rng.random(n, chunks=chunk_rows) < 1.0 / (1.0 + np.exp(-(X @ truth)))).astype(float)
    return X, y, truth


def _peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024      # Linux reports KiB


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    full = "--full" in argv
    args = parse_args(__doc__, [a for a in argv if a != "--full"])
    from distributed import Client, LocalCluster

    n, chunk_rows = (10_000_000, 250_000) if full else (100_000, 25_000)
    # one thread per worker, and efvi's own per-point threads off: the workers are the parallelism
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit=WORKER_BUDGET,
                           dashboard_address=None, env={"EFVI_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    client = Client(cluster)
    try:
        X, y, truth = simulate(n, chunk_rows)
        print(f"N = {n:,} rows, D = {DIM}: X is {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} blocks of "
              f"{chunk_rows:,} rows; 2 workers with {WORKER_BUDGET / 2 ** 30:.1f} GiB each")
        start = time.perf_counter()
        factor = efvi.glm.GLM(efvi.likelihoods.Bernoulli(), X, y, on="w")
        print(f"rows checked and labels persisted in {time.perf_counter() - start:.1f} s")
        prior = efvi.Gaussian.from_mean_cov(np.zeros(DIM), 10.0 * np.eye(DIM))
        fit = efvi.Model({"w": prior}, [factor]).fit(progress=True)
        per_iteration = np.array(fit.timings["per_iteration"])
        q = fit.posterior["w"]
        sd = np.sqrt(q.var)
        print(fit.summary())
        print(f"{fit.n_iter} iterations, {factor.n_passes} passes over the rows; time per iteration "
              f"{np.median(per_iteration):.2f} s (median; min {per_iteration.min():.2f} s); "
              f"total {fit.timings['total']:.1f} s")
        print("weight  true     posterior mean +- sd")
        for d in range(5):
            print(f"w[{d}]  {truth[d]: .4f}  {q.mean[d]: .4f} +- {sd[d]:.4f}")
        z = np.abs(q.mean - truth) / sd
        print(f"largest |mean - true| / sd over the {DIM} weights: {z.max():.2f}")
        peaks = client.run(_peak_rss)
        print(f"peak worker memory: {max(peaks.values()) / 2 ** 20:.0f} MiB (budget {WORKER_BUDGET / 2 ** 20:.0f} MiB)")
        sites = fit.sites[0]
        print(f"site precisions stay on the workers: {type(sites.precision).__name__} with "
              f"{sites.precision.numblocks[0]} blocks; mean {float(sites.precision.mean().compute()):.4f}")
    finally:
        client.close()
        cluster.close()

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), gridspec_kw={"wspace": 0.3})
    plot.elbo(fit, ax=axes[0], marker="o")
    axes[0].set_title(f"ELBO gap, N = {n:,} (one pass over the rows an iteration)", fontsize=10)
    axes[1].axhspan(-2, 2, color="0.9")
    axes[1].plot(np.arange(DIM), (q.mean - truth) / sd, "o")
    axes[1].set(xlabel="weight", ylabel="(posterior mean - true) / sd", title="weights against the truth")
    save_figure(fig, args.output, "glm_dask_large.png")
    return fit


if __name__ == "__main__":
    main()
