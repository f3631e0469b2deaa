"""Sparse-GP classification: efvi's CVI against GPflow's SVGP and BayesNewton's SVGP, in one run.

Protocol (``benchmarks/_svgp_data.py``): 2-D inputs, Bernoulli-logit labels,
a squared-exponential kernel with fixed hyperparameters, M fixed inducing
inputs and jitter 1e-6 on K(Z, Z), so that every library maximises the same
bound over q(u) (Hensman, Matthews and Ghahramani, 2015) and their converged
ELBOs can be compared number for number.  Everything runs in float64 on one
thread (OPENBLAS_NUM_THREADS=1 for all; one TensorFlow thread; one XLA thread).

* **efvi** fits ``gp.SparseGP`` by CVI, full batch, with its default adaptive
  step, starting from its default start.
* **GPflow** (``benchmarks/svgp_gpflow_peer.py``, run in its own venv) fits
  ``SVGP(whiten=True)`` with ``NaturalGradient(gamma=1)`` compiled by
  ``tf.function``, starting from the prior.
* **BayesNewton** (``benchmarks/svgp_bayesnewton_peer.py``, its own venv,
  optional) fits ``SparseVariationalGP`` by its CVI step with lr = 1, compiled
  by ``objax.Jit``, from its default sites; N x N intermediates replaced by
  their diagonals (that script's ``diagonal`` variant), otherwise BayesNewton's
  own code.

For each (N, M) each library is run in turn, and the script reports the time
to an ELBO within 0.01 nats of that library's own converged value (efvi: from
building the block, features included, to the end of that iteration; the
peers: from their first step, excluding the one-time tracing and compilation,
reported separately), the steps to get there, the median time per step and
the final ELBO; and GPflow's ELBO evaluated at efvi's and at BayesNewton's
q(u) (``--q-in``), a cross-check of the bound by another implementation.  The
ELBO after each step is evaluated outside the peers' timed intervals; efvi's
own ELBO is part of its iteration.  efvi's fit is run twice: the first run
(the figure compared) pays for the first use of its N x M feature memory (on
this machine's virtual memory, 1.6 s of 2.3 s of feature building at N = 1e6,
M = 100), which the peers pay in their excluded first step; the second run is
reported beside it.

The machine may be shared: before each library's timed run the script waits
(up to ``--wait`` seconds) for the 1-minute load average to fall below
``--max-load`` and records the load at the start and at the end of the run.
``--out FILE.json`` keeps every figure, the peers' full results and efvi's
per-iteration times.

Run by hand (about 10 minutes with N = 1e6)::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sparse_gp.py \\
        --gpflow-python /work/venvs/gpflow/bin/python \\
        --bayesnewton-python /work/venvs/bayesnewton/bin/python \\
        --sizes 1e4:100 1e5:100 1e4:500 1e5:500 1e6:100 --out sparse_gp.json
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

PEER_ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "TF_CPP_MIN_LOG_LEVEL": "3"}


def efvi_run(n, m, tol=1e-10):
    """Fit efvi's sparse GP; returns timings, the ELBO trace and q(u) in both of GPflow's forms."""
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
            "per_iteration_s": steps.tolist(), "elbo": trace.tolist(),
            "iterations_to_within": reached, "seconds_to_within": before_loop + float(steps[:reached].sum()),
            "total_s": total, "final_elbo": float(trace[-1]),
            "q_whitened": (q.v_mean, np.linalg.cholesky(q.v_cov))}


def wait_for_quiet(max_load, wait):
    """Wait up to ``wait`` seconds for the 1-minute load average to drop below ``max_load``; return it."""
    deadline = time.monotonic() + wait
    while os.getloadavg()[0] >= max_load and time.monotonic() < deadline:
        time.sleep(10)
    return os.getloadavg()[0]


def _run_peer(python, script, args, out):
    done = subprocess.run([python, str(HERE / script), *args, "--out", str(out)], capture_output=True,
                          text=True, env=PEER_ENV)
    if done.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(Path(out).read_text())


def gpflow_fit(python, n, m, workdir):
    """GPflow's SVGP + NaturalGradient(gamma=1) fit (``svgp_gpflow_peer.py``)."""
    return _run_peer(python, "svgp_gpflow_peer.py",
                     ["--n", str(n), "--m", str(m), "--threads", "1", "--gamma", "1.0", "--iters", "300"],
                     Path(workdir) / f"gpflow_{n}_{m}.json")


def gpflow_bound_at(python, n, m, q_file, workdir):
    """GPflow's ELBO at the q(u) stored in ``q_file`` (the format of ``svgp_gpflow_peer.py --q-in``)."""
    out = Path(workdir) / f"gpflow_at_{Path(q_file).stem}.json"
    return _run_peer(python, "svgp_gpflow_peer.py",
                     ["--n", str(n), "--m", str(m), "--threads", "1", "--q-in", str(q_file)], out)


def bayesnewton_fit(python, n, m, workdir):
    """BayesNewton's SparseVariationalGP fitted by CVI with lr = 1 (``svgp_bayesnewton_peer.py``)."""
    q_file = Path(workdir) / f"bayesnewton_q_{n}_{m}.npz"
    result = _run_peer(python, "svgp_bayesnewton_peer.py",
                       ["--n", str(n), "--m", str(m), "--lr", "1.0", "--iters", "300", "--q-out", str(q_file)],
                       Path(workdir) / f"bayesnewton_{n}_{m}.json")
    return result, (q_file if q_file.exists() else None)


def run_size(n, m, args, workdir):
    """efvi, then each available peer, for one (N, M); returns a JSON-ready record."""
    record = {"n": n, "m": m}
    record["load_efvi"] = wait_for_quiet(args.max_load, args.wait)
    ours = efvi_run(n, m)
    warm = efvi_run(n, m)                            # the same fit again, in a process that has done it once
    record["load_after_efvi"] = os.getloadavg()[0]
    mean, chol = ours.pop("q_whitened")
    record["efvi_again"] = {key: warm[key] for key in ("features_s", "setup_s", "step_s", "seconds_to_within",
                                                       "iterations_to_within", "final_elbo")}
    record["efvi"] = ours
    efvi_q = Path(workdir) / f"efvi_q_{n}_{m}.npz"
    np.savez(efvi_q, q_mu=mean[:, None], q_sqrt=chol[None], whitened=1)
    if Path(args.gpflow_python).exists():
        record["load_gpflow"] = wait_for_quiet(args.max_load, args.wait)
        record["gpflow"] = gpflow_fit(args.gpflow_python, n, m, workdir)
        record["load_after_gpflow"] = os.getloadavg()[0]
        record["gpflow_at_efvi"] = gpflow_bound_at(args.gpflow_python, n, m, efvi_q, workdir)
    if Path(args.bayesnewton_python).exists():
        record["load_bayesnewton"] = wait_for_quiet(args.max_load, args.wait)
        record["bayesnewton"], bn_q = bayesnewton_fit(args.bayesnewton_python, n, m, workdir)
        record["load_after_bayesnewton"] = os.getloadavg()[0]
        if bn_q is not None and "gpflow" in record and record["bayesnewton"]["status"] == "converged":
            record["gpflow_at_bayesnewton"] = gpflow_bound_at(args.gpflow_python, n, m, bn_q, workdir)
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e4:100", "1e5:100"], help="N:M pairs")
    parser.add_argument("--gpflow-python", default="/work/venvs/gpflow/bin/python",
                        help="the Python of a venv with gpflow 2.11 and tensorflow (skipped if missing)")
    parser.add_argument("--bayesnewton-python", default="/work/venvs/bayesnewton/bin/python",
                        help="the Python of a venv with bayesnewton 1.3.4 and jax 0.4.13 (skipped if missing)")
    parser.add_argument("--max-load", type=float, default=1.5,
                        help="wait for the 1-minute load average to fall below this before each timed run")
    parser.add_argument("--wait", type=float, default=300.0, help="longest wait for a quiet machine, seconds")
    parser.add_argument("--out", help="write every figure to this JSON file")
    args = parser.parse_args(argv)
    efvi_run(2000, 20)                               # compile / load efvi's kernels before timing
    records = []
    with tempfile.TemporaryDirectory() as workdir:
        for size in args.sizes:
            n, m = (int(float(part)) for part in size.split(":"))
            records.append(run_size(n, m, args, workdir))
            _print_record(records[-1])
            if args.out:
                Path(args.out).write_text(json.dumps(records, indent=1))
    return records


def _peer_figures(peer):
    """(steps, seconds to within WITHIN, s / step, compile s, final ELBO) of a peer's fit, or None."""
    within = peer.get(f"within_{WITHIN}_of_final") or {}
    if peer.get("status") != "converged" or within.get("first_step") is None:
        return None
    return (within["first_step"], within["first_time_s"], peer["step_median_s"],
            peer["tracing_s"] + peer["compile_and_first_step_s"], peer["final_elbo"])


def _print_record(record):
    ours = record["efvi"]
    print(f"N = {record['n']:.0e}, M = {record['m']}")
    print(f"  efvi CVI    (load {record['load_efvi']:.2f}-{record['load_after_efvi']:.2f}): "
          f"{ours['iterations_to_within']} iterations, "
          f"{ours['seconds_to_within']:.3f} s to within {WITHIN} nats (features {ours['features_s']:.3f} s, "
          f"setup {ours['setup_s']:.3f} s, {ours['step_s']:.4f} s / iteration); final ELBO "
          f"{ours['final_elbo']:.6f} after {ours['iterations']} iterations")
    again = record["efvi_again"]
    print(f"    the same fit again: {again['seconds_to_within']:.3f} s to within {WITHIN} nats (features "
          f"{again['features_s']:.3f} s, setup {again['setup_s']:.3f} s, {again['step_s']:.4f} s / iteration)")
    for name, key in (("GPflow", "gpflow"), ("BayesNewton", "bayesnewton")):
        if key not in record:
            continue
        figures = _peer_figures(record[key])
        label = f"  {name:<11} (load {record['load_' + key]:.2f}-{record['load_after_' + key]:.2f}):"
        if figures is None:
            print(f"{label} {record[key].get('status')}: {record[key].get('error')}")
            continue
        steps, seconds, per_step, compile_s, final = figures
        print(f"{label} {steps} steps, {seconds:.3f} s to within {WITHIN} nats ({per_step:.4f} s / step, "
              f"+ {compile_s:.2f} s tracing and compilation); final ELBO {final:.6f}")
        print(f"    ratio {name} / efvi: {seconds / ours['seconds_to_within']:.1f}x to within {WITHIN} without "
              f"compilation, {(seconds + compile_s) / ours['seconds_to_within']:.1f}x with it; per step "
              f"{per_step / ours['step_s']:.1f}x")
    for key, whose in (("gpflow_at_efvi", "efvi's"), ("gpflow_at_bayesnewton", "BayesNewton's")):
        if key in record:
            print(f"  GPflow's bound at {whose} q(u): {record[key]['elbo']:.6f} "
                  f"(100 Gauss-Hermite nodes: {record[key]['elbo_gh100']:.6f})")


if __name__ == "__main__":
    main()
