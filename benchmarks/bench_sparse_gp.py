"""Sparse-GP classification: efvi's CVI against GPflow's SVGP with natural gradients, in one run.

Protocol (``benchmarks/_svgp_data.py``): 2-D inputs, Bernoulli-logit labels,
a squared-exponential kernel with fixed hyperparameters, M fixed inducing
inputs and jitter 1e-6, so that both libraries maximise the same bound over
q(u) and their converged ELBOs can be compared number for number.  efvi fits
``gp.SparseGP`` by CVI (full batch, its default adaptive step); GPflow fits
``SVGP(whiten=True)`` with ``NaturalGradient(gamma=1)`` compiled by
``tf.function`` (``benchmarks/svgp_gpflow_peer.py``, run in its own venv).

For each (N, M) the script reports, for each library, the time to an ELBO
within 0.01 nats of its converged value (efvi: from building the block,
features included, to the end of that iteration; GPflow: from the first
step, excluding the one-time tf.function tracing and compilation, reported
separately), the time per step and the final ELBO; and GPflow's ELBO
evaluated at efvi's q(u) (``--q-in``) as a cross-check of the bound.

Run by hand (several minutes at N = 1e6)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse_gp.py \\
        --gpflow-python /work/venvs/gpflow/bin/python --sizes 1e4:100 1e5:100 1e6:100 1e4:500 1e5:500
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _svgp_data import JITTER, KERNEL, inducing_points, make_classification  # noqa: E402

from efvi.inference import Model  # noqa: E402
from efvi.models import Observe, gp, likelihoods  # noqa: E402

WITHIN = 0.01
"""Nats from the converged ELBO that count as 'reached'."""


def efvi_run(n, m, tol=1e-10):
    """Fit efvi's sparse GP; returns timings, the ELBO trace and q(u) in GPflow's whitened form."""
    X, y = make_classification(n)
    Z = inducing_points(m)
    kernel = gp.kernels.RBF(lengthscale=KERNEL["lengthscale"], variance=KERNEL["variance"])
    start = time.perf_counter()
    block = gp.SparseGP(kernel, X, Z, jitter=JITTER)
    block.features                                   # built once; part of the measured time
    features_s = time.perf_counter() - start
    fit = Model({"f": block}, [Observe(likelihoods.BernoulliLogit(), y, on="f")]).fit(tol=tol, warn=False)
    total = time.perf_counter() - start
    trace = np.asarray(fit.state.elbo_trace)
    steps = np.asarray(fit.timings["per_iteration"])
    before_loop = total - steps.sum()              # features, model building, the first posterior
    reached = int(np.argmax(np.abs(trace - trace[-1]) < WITHIN))   # trace[0] is the starting ELBO
    q = fit.posterior["f"]
    return {"n": n, "m": m, "converged": bool(fit.converged), "iterations": len(steps),
            "features_s": features_s, "setup_s": before_loop, "step_s": float(np.median(steps)),
            "iterations_to_within": reached, "seconds_to_within": before_loop + float(steps[:reached].sum()),
            "total_s": total, "final_elbo": float(trace[-1]),
            "q_whitened": (q.v_mean, np.linalg.cholesky(q.v_cov))}


def gpflow_run(python, n, m, q_whitened, workdir):
    """Run the GPflow peer: a fit, then its ELBO at efvi's q(u)."""
    out = Path(workdir) / f"gpflow_{n}_{m}.json"
    base = [python, str(HERE / "svgp_gpflow_peer.py"), "--n", str(n), "--m", str(m), "--threads", "1"]
    subprocess.run(base + ["--gamma", "1.0", "--iters", "300", "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    fitted = json.loads(out.read_text())
    q_file = Path(workdir) / f"efvi_q_{n}_{m}.npz"
    mean, chol = q_whitened
    np.savez(q_file, q_mu=mean[:, None], q_sqrt=chol[None], whitened=1)
    evaluated = Path(workdir) / f"gpflow_at_efvi_{n}_{m}.json"
    subprocess.run(base + ["--q-in", str(q_file), "--out", str(evaluated)], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    at_efvi = json.loads(evaluated.read_text())
    return fitted, at_efvi


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e4:100", "1e5:100"], help="N:M pairs")
    parser.add_argument("--gpflow-python", default="/work/venvs/gpflow/bin/python",
                        help="the Python of a venv with gpflow 2.11 and tensorflow (skipped if missing)")
    args = parser.parse_args(argv)
    efvi_run(2000, 20)                               # compile / load efvi's kernels before timing
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for size in args.sizes:
            n, m = (int(float(part)) for part in size.split(":"))
            ours = efvi_run(n, m)
            peer = at_ours = None
            if Path(args.gpflow_python).exists():
                peer, at_ours = gpflow_run(args.gpflow_python, n, m, ours["q_whitened"], workdir)
            rows.append((ours, peer, at_ours))
            _print_row(ours, peer, at_ours)
    return rows


def _print_row(ours, peer, at_ours):
    print(f"N = {ours['n']:.0e}, M = {ours['m']}")
    print(f"  efvi CVI : {ours['iterations_to_within']} iterations, {ours['seconds_to_within']:.3f} s to within "
          f"{WITHIN} nats (features {ours['features_s']:.3f} s, {ours['step_s']:.4f} s / iteration); "
          f"final ELBO {ours['final_elbo']:.6f} after {ours['iterations']} iterations")
    if peer is None:
        return
    within = peer["within_0.01_of_final"]
    print(f"  GPflow   : {within['first_step']} steps, {within['first_time_s']:.3f} s to within {WITHIN} nats "
          f"({peer['step_median_s']:.4f} s / step, + {peer['tracing_s'] + peer['compile_and_first_step_s']:.2f} s "
          f"tracing and compilation); final ELBO {peer['final_elbo']:.6f}")
    print(f"  GPflow's bound at efvi's q(u): {at_ours['elbo']:.6f} (100 Gauss-Hermite nodes: "
          f"{at_ours['elbo_gh100']:.6f}); efvi's own ELBO {ours['final_elbo']:.6f}")
    gpflow_total = within["first_time_s"] + peer["tracing_s"] + peer["compile_and_first_step_s"]
    print(f"  ratio GPflow / efvi, time to within {WITHIN}: {within['first_time_s'] / ours['seconds_to_within']:.1f}x "
          f"without GPflow's compilation, {gpflow_total / ours['seconds_to_within']:.1f}x with it; per step "
          f"{peer['step_median_s'] / ours['step_s']:.1f}x")


if __name__ == "__main__":
    main()
