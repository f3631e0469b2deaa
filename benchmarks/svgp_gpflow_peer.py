"""The first peer of the sparse-GP benchmark: GPflow's SVGP fitted by NaturalGradient.

Runs in a separate environment that holds GPflow (it does not import efvi), for
example one made with::

    python3.11 -m venv VENV
    VENV/bin/pip install "gpflow==2.11.*" "tensorflow==2.21.*" tensorflow-probability tf-keras

and is run from the repository root as a script::

    OPENBLAS_NUM_THREADS=1 VENV/bin/python benchmarks/svgp_gpflow_peer.py \\
        --n 100000 --m 100 --gamma 1.0 --link logit --out svgp_n1e5_m100_g1.json

The problem, kernel, inducing inputs and jitter come from ``_svgp_data`` (shared
with efvi's side).  The model is ``gpflow.models.SVGP`` with a fixed squared
exponential kernel, fixed inducing inputs, ``num_data = N`` and, by default,
the whitened parameterisation (``--no-whiten`` for the plain one).  The fit is
full batch: each step is one ``gpflow.optimizers.NaturalGradient(gamma)`` step
on ``(q_mu, q_sqrt)`` (Salimbeni, Eleftheriadis and Hensman, 2018), compiled
once by ``tf.function``, in float64, on one TensorFlow thread (``--threads``).

Timing.  The step function is traced and run once, then q(u) is reset to its
initial value (q_mu = 0, q_sqrt = I) and the timed fit starts, so the trace's
times contain no tracing or graph compilation (reported separately).  After
every step the full-batch ELBO ``model.elbo(data)`` is evaluated by its own
compiled function, outside the timed interval.  The fit stops after ``--iters``
steps or once the ELBO has changed by less than ``--rtol`` (1e-9) relative over
the last 5 steps.  For non-conjugate likelihoods natural gradients with
gamma = 1 can oscillate; run gamma = 1, 0.5, 0.1 and compare.

Likelihood.  ``--link logit`` is ``Bernoulli(invlink=tf.sigmoid)``; ``--link
probit`` is GPflow's default ``Bernoulli()``, whose inverse link is
``1e-3 + 0.998 Phi(f)`` (GPflow clips the probit away from 0 and 1), so its
ELBO is not that of the exact probit; ``--link probit-exact`` is the exact
probit, log Phi((2y - 1) f) by TensorFlow Probability's stable
``Normal.log_cdf``.  In all three the expected log-likelihood is Gauss-Hermite
quadrature with ``--gh-points`` nodes (GPflow's default 20); the final q(u) is
also scored with 100 nodes to show the quadrature error.

Cross-checking another library's q(u).  ``--q-in FILE.npz`` skips the fit and
only evaluates GPflow's ELBO at a given q(u).  The file holds ``q_mu``, shape
(M,) or (M, 1), and either ``q_sqrt``, shape (M, M) or (1, M, M), lower
triangular, or ``q_cov``, shape (M, M); and ``whitened`` (0 or 1, default 0).
With ``whitened = 0`` they describe q(u) = N(q_mu, q_sqrt q_sqrt^T) over the
inducing outputs u = f(Z) themselves (GPflow's ``whiten=False`` form); with
``whitened = 1`` they describe q(v) for v = L^{-1} u, L L^T = K(Z, Z) + jitter I
(GPflow's ``whiten=True`` form).  ``--q-out FILE.npz`` saves the fitted q(u)
in both forms (``q_mu``, ``q_sqrt`` plain; ``v_mu``, ``v_sqrt`` whitened) with
the inducing inputs ``Z``.

``--summary RUN.json ...`` prints a markdown table of finished runs (also of
``svgp_bayesnewton_peer.py``'s, which have the same fields).

``bench_sparse_gp.py`` runs this script in turn with efvi and with
``svgp_bayesnewton_peer.py`` for each (N, M), with gamma = 1 and at most 300
steps, and calls it again with ``--q-in`` at efvi's and BayesNewton's fitted
q(u).
"""

import argparse
import json
import os
import platform
import resource
import sys
import time

import numpy as np

try:
    from ._svgp_data import BOX, CHUNK, JITTER, KERNEL, inducing_points, make_classification
except ImportError:                       # run as a script from another environment
    from _svgp_data import BOX, CHUNK, JITTER, KERNEL, inducing_points, make_classification

GAP = 0.01
"""The accuracy of the time-to-accuracy figure, in nats below the run's final ELBO."""

WINDOW = 5
"""The convergence test compares the ELBO with its value this many steps earlier."""


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_shared_arguments(parser)
    parser.add_argument("--gamma", type=float, default=1.0, help="natural-gradient step size")
    parser.add_argument("--link", choices=("logit", "probit", "probit-exact"), default="logit")
    parser.add_argument("--no-whiten", dest="whiten", action="store_false",
                        help="fit q(u) directly instead of the whitened q(v)")
    parser.add_argument("--gh-points", type=int, default=20, help="Gauss-Hermite nodes of the fit")
    parser.add_argument("--threads", type=int, default=1, help="TensorFlow intra- and inter-op threads")
    parser.add_argument("--q-in", help="only evaluate the ELBO at the q(u) in this .npz file")
    parser.add_argument("--summary", nargs="+", metavar="RUN_JSON",
                        help="print a markdown table of these result files and exit")
    args = check_shared_arguments(parser, parser.parse_args(argv), ("gh_points", "threads"))
    if not args.gamma > 0:
        parser.error(f"--gamma must be positive, got {args.gamma}")
    return args


def add_shared_arguments(parser):
    """The options of both peers' scripts: the problem's size and seed, the step budget, the outputs."""
    parser.add_argument("--n", type=float, default=1e4, help="number of data points (1e5 accepted)")
    parser.add_argument("--m", type=int, default=100, help="number of inducing points")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the inducing points")
    parser.add_argument("--iters", type=int, default=200, help="maximum number of steps")
    parser.add_argument("--rtol", type=float, default=1e-9,
                        help=f"stop when the ELBO changes by less than this, relative, over {WINDOW} steps")
    parser.add_argument("--q-out", help="save the fitted q(u) to this .npz file")
    parser.add_argument("--out", help="write the results to this JSON file")


def check_shared_arguments(parser, args, counts=()):
    """Check the shared options and the integer options ``counts`` (each at least 1); returns ``args``."""
    if args.n != int(args.n) or args.n < 1:
        parser.error(f"--n must be a positive integer, got {args.n}")
    args.n = int(args.n)
    for name in ("m", "iters", *counts):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    return args


def _tensorflow(threads):
    """Import TensorFlow limited to ``threads`` threads (must run before any TensorFlow op)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    return tf


def _versions():
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp

    try:
        import tf_keras
        keras = tf_keras.__version__
    except ImportError:
        keras = None
    return {"python": platform.python_version(), "numpy": np.__version__, "tensorflow": tf.__version__,
            "tensorflow_probability": tfp.__version__, "gpflow": gpflow.__version__, "tf_keras": keras}


def _likelihood(link, gh_points):
    import gpflow
    import tensorflow as tf
    import tensorflow_probability as tfp
    from gpflow.quadrature import NDiagGHQuadrature

    quadrature = NDiagGHQuadrature(1, gh_points)
    if link == "logit":
        return gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid, quadrature=quadrature)
    if link == "probit":
        return gpflow.likelihoods.Bernoulli(quadrature=quadrature)

    standard_normal = tfp.distributions.Normal(np.float64(0.0), np.float64(1.0))

    class ExactProbitBernoulli(gpflow.likelihoods.Bernoulli):
        """GPflow's Bernoulli with the unclipped probit: log p(y | f) = log Phi((2y - 1) f)."""

        def _scalar_log_prob(self, X, F, Y):
            return standard_normal.log_cdf((2.0 * Y - 1.0) * F)

    return ExactProbitBernoulli(quadrature=quadrature)


def build_model(Z, n, link, whiten, gh_points):
    """GPflow's SVGP on the shared problem: kernel and inducing inputs fixed, q(u) trainable.

    q starts at the prior in both parameterisations: q(v) = N(0, I) when whitened
    (GPflow's default), q(u) = N(0, K(Z, Z) + jitter I) when not (GPflow's
    default there, q_sqrt = I, is a different start from which the first
    natural-gradient step fails numerically on this ill-conditioned K(Z, Z)).
    """
    import gpflow

    gpflow.config.set_default_float(np.float64)
    gpflow.config.set_default_jitter(JITTER)
    kernel = gpflow.kernels.SquaredExponential(variance=KERNEL["variance"],
                                               lengthscales=KERNEL["lengthscale"])
    q_sqrt = None if whiten else inducing_cholesky(Z)[None]
    model = gpflow.models.SVGP(kernel, _likelihood(link, gh_points), inducing_variable=Z.copy(),
                               whiten=whiten, num_data=n, q_sqrt=q_sqrt)
    gpflow.set_trainable(model.kernel, False)
    gpflow.set_trainable(model.inducing_variable, False)
    gpflow.set_trainable(model.q_mu, False)       # moved by the natural-gradient step only
    gpflow.set_trainable(model.q_sqrt, False)
    return model


def inducing_cholesky(Z):
    """L with L L^T = K(Z, Z) + jitter I, in numpy (the whitening map u = L v)."""
    sq = np.sum((Z[:, None, :] - Z[None, :, :]) ** 2, axis=-1)
    K = KERNEL["variance"] * np.exp(-0.5 * sq / KERNEL["lengthscale"] ** 2)
    return np.linalg.cholesky(K + JITTER * np.eye(len(Z)))


def load_q(path, m):
    """Read and check a q(u) file (module docstring); returns q_mu (M,), q_sqrt (M, M), whitened."""
    with np.load(path) as data:
        keys = set(data.files)
        if "q_mu" not in keys or not keys & {"q_sqrt", "q_cov"}:
            raise ValueError(f"--q-in {path}: expected arrays 'q_mu' and 'q_sqrt' or 'q_cov', "
                             f"found {sorted(keys)}")
        q_mu = np.asarray(data["q_mu"], dtype=np.float64).reshape(-1)
        whitened = bool(data["whitened"]) if "whitened" in keys else False
        if "q_sqrt" in keys:
            q_sqrt = np.asarray(data["q_sqrt"], dtype=np.float64)
            q_sqrt = q_sqrt[0] if q_sqrt.ndim == 3 and q_sqrt.shape[0] == 1 else q_sqrt
            if q_sqrt.shape == (m, m) and np.any(np.triu(q_sqrt, 1)):
                raise ValueError(f"--q-in {path}: q_sqrt must be lower triangular, its largest entry "
                                 f"above the diagonal is {np.abs(np.triu(q_sqrt, 1)).max():.3g}")
        else:
            q_cov = np.asarray(data["q_cov"], dtype=np.float64)
            if q_cov.shape != (m, m):
                raise ValueError(f"--q-in {path}: q_cov must have shape ({m}, {m}), got {q_cov.shape}")
            q_sqrt = np.linalg.cholesky(q_cov)
    if q_mu.shape != (m,) or q_sqrt.shape != (m, m):
        raise ValueError(f"--q-in {path}: expected q_mu of {m} values and a {m} x {m} factor for "
                         f"--m {m}, got q_mu {q_mu.shape} and factor {q_sqrt.shape}")
    if not (np.all(np.isfinite(q_mu)) and np.all(np.isfinite(q_sqrt))):
        raise ValueError(f"--q-in {path}: q_mu and the factor must be finite")
    return q_mu, q_sqrt, whitened


def q_forms(model, L):
    """The model's q in both forms: plain (q(u), u = f(Z)) and whitened (q(v), u = L v)."""
    mu, sqrt = model.q_mu.numpy()[:, 0], np.tril(model.q_sqrt.numpy()[0])
    if model.whiten:
        return {"q_mu": L @ mu, "q_sqrt": L @ sqrt, "v_mu": mu, "v_sqrt": sqrt}
    from scipy.linalg import solve_triangular
    return {"q_mu": mu, "q_sqrt": sqrt, "v_mu": solve_triangular(L, mu, lower=True),
            "v_sqrt": solve_triangular(L, sqrt, lower=True)}


def q_summary(forms):
    """A few numbers that identify q(u) without storing it."""
    sd = np.sqrt(np.sum(forms["q_sqrt"] ** 2, axis=1))
    return {"u_mean_first5": forms["q_mu"][:5].tolist(), "u_mean_norm": float(np.linalg.norm(forms["q_mu"])),
            "u_sd_min": float(sd.min()), "u_sd_max": float(sd.max()), "u_sd_mean": float(sd.mean()),
            "v_mean_norm": float(np.linalg.norm(forms["v_mu"])),
            "v_logdet_cov": float(2.0 * np.sum(np.log(np.abs(np.diag(forms["v_sqrt"])))))}


def elbo_with_nodes(model, data, gh_points):
    """The model's ELBO with its expected log-likelihood by ``gh_points``-node Gauss-Hermite quadrature."""
    from gpflow.quadrature import NDiagGHQuadrature

    kept = model.likelihood.quadrature
    model.likelihood.quadrature = NDiagGHQuadrature(1, gh_points)
    try:
        return float(model.elbo(data))
    finally:
        model.likelihood.quadrature = kept


def within(times, elbos, target, gap=GAP):
    """Steps and time to come within ``gap`` of ``target``: first reached, and for good (never left after)."""
    close = np.abs(np.asarray(elbos) - target) <= gap
    first = np.flatnonzero(close)
    if first.size == 0:
        return {"first_step": None, "first_time_s": None, "settled_step": None, "settled_time_s": None}
    outside = np.flatnonzero(~close)
    settled = 0 if outside.size == 0 else outside[-1] + 1
    return {"first_step": int(first[0]), "first_time_s": float(times[first[0]]),
            "settled_step": int(settled), "settled_time_s": float(times[settled])}


def fit(model, data, gamma, iters, rtol):
    """Run the natural-gradient fit; returns the trace (step 0 is the initial q) and timings."""
    import gpflow
    import tensorflow as tf

    natgrad = gpflow.optimizers.NaturalGradient(gamma=gamma)
    loss = model.training_loss_closure(data, compile=False)
    variational = [(model.q_mu, model.q_sqrt)]

    @tf.function
    def step():
        natgrad.minimize(loss, variational)
        return model.q_mu[0, 0]            # read after the update: fetching it waits for the step

    elbo = tf.function(lambda: model.elbo(data))
    start_mu, start_sqrt = model.q_mu.numpy(), model.q_sqrt.numpy()

    start = time.perf_counter()
    step.get_concrete_function()
    tracing = time.perf_counter() - start
    start = time.perf_counter()
    try:
        step().numpy()
    except tf.errors.InvalidArgumentError as exc:
        return _failed(exc, tracing)
    first_call = time.perf_counter() - start
    start = time.perf_counter()
    elbo().numpy()
    elbo_first_call = time.perf_counter() - start
    model.q_mu.assign(start_mu)
    model.q_sqrt.assign(start_sqrt)

    times, elbos, step_times, eval_times = [0.0], [float(elbo())], [], []
    status, error = "max_iters", None
    for _ in range(iters):
        begin = time.perf_counter()
        try:
            step().numpy()
        except tf.errors.InvalidArgumentError as exc:      # non-finite or non-positive-definite q
            status, error = "failed", _message(exc)
            break
        step_times.append(time.perf_counter() - begin)
        times.append(times[-1] + step_times[-1])
        begin = time.perf_counter()
        elbos.append(float(elbo()))
        eval_times.append(time.perf_counter() - begin)
        if not np.isfinite(elbos[-1]):
            status, error = "failed", "non-finite ELBO"
            break
        if len(elbos) > WINDOW and abs(elbos[-1] - elbos[-1 - WINDOW]) < rtol * abs(elbos[-1]):
            status = "converged"
            break
    return {"status": status, "error": error, "time_s": times, "elbo": elbos,
            "tracing_s": tracing, "compile_and_first_step_s": first_call - (np.median(step_times)
                                                                            if step_times else 0.0),
            "first_step_call_s": first_call, "elbo_compile_and_first_call_s": elbo_first_call,
            "step_median_s": float(np.median(step_times)) if step_times else None,
            "step_min_s": float(np.min(step_times)) if step_times else None,
            "elbo_eval_median_s": float(np.median(eval_times)) if eval_times else None}


def _message(exc):
    """The first lines of a TensorFlow error, without its graph traceback."""
    return " ".join(str(exc).split("\n\n")[0].split())[:300]


def _failed(exc, tracing):
    """The result of a fit whose warm-up step already failed."""
    return {"status": "failed", "error": _message(exc), "time_s": [], "elbo": [float("nan")],
            "tracing_s": tracing, "compile_and_first_step_s": None, "first_step_call_s": None,
            "elbo_compile_and_first_call_s": None, "step_median_s": None, "step_min_s": None,
            "elbo_eval_median_s": None}


def run(args):
    """Build the problem and the model, fit or evaluate, and return the JSON-ready result."""
    wall = time.perf_counter()
    tf = _tensorflow(args.threads)
    X, y = make_classification(args.n, args.seed)
    Z = inducing_points(args.m, args.seed)
    L = inducing_cholesky(Z)
    data = (tf.convert_to_tensor(X), tf.convert_to_tensor(y[:, None]))
    result = {"n": args.n, "m": args.m, "seed": args.seed, "link": args.link,
              "protocol": {"kernel": "squared exponential, fixed", **KERNEL, "jitter": JITTER,
                           "inputs": f"uniform on [-{BOX}, {BOX}]^2, chunks of {CHUNK}",
                           "labels": "Bernoulli(sigmoid(2 sin(1.5 x1) cos(x2) + 0.5 x1))",
                           "inducing": "stratified draw (benchmarks/_svgp_data.inducing_points), fixed",
                           "num_data": args.n, "batch": "full"},
              "quadrature": f"Gauss-Hermite, {args.gh_points} nodes (GPflow's default is 20) for the "
                            "expected log-likelihood of every link; elbo_gh100 rescores the final q with 100",
              "versions": _versions(),
              "threads": {"tensorflow_intra_inter": args.threads,
                          "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
              "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    if args.link == "probit":
        result["likelihood_note"] = "GPflow's clipped probit 1e-3 + 0.998 Phi(f), not the exact probit"

    if args.q_in:
        q_mu, q_sqrt, whitened = load_q(args.q_in, args.m)
        model = build_model(Z, args.n, args.link, whitened, args.gh_points)
        model.q_mu.assign(q_mu[:, None])
        model.q_sqrt.assign(q_sqrt[None])
        result.update({"mode": "evaluate", "q_in": os.path.abspath(args.q_in), "q_in_whitened": whitened,
                       "elbo": float(model.elbo(data)), "elbo_gh100": elbo_with_nodes(model, data, 100),
                       "q": q_summary(q_forms(model, L))})
    else:
        model = build_model(Z, args.n, args.link, args.whiten, args.gh_points)
        trace = fit(model, data, args.gamma, args.iters, args.rtol)
        final = trace["elbo"][-1]
        forms = q_forms(model, L)
        result.update({"mode": "fit", "gamma": args.gamma, "whiten": args.whiten, "iters": args.iters,
                       "rtol": args.rtol, "optimizer": "gpflow.optimizers.NaturalGradient (XiNat), "
                                                       "full batch, one tf.function per step",
                       **trace, "n_steps": len(trace["elbo"]) - 1, "final_elbo": final,
                       "best_elbo": float(np.nanmax(trace["elbo"])),
                       "elbo_gh100": elbo_with_nodes(model, data, 100) if np.isfinite(final) else None,
                       f"within_{GAP}_of_final": within(trace["time_s"], trace["elbo"], final),
                       "q": q_summary(forms)})
        if args.q_out:
            np.savez(args.q_out, Z=Z, whitened=0, **forms)
    result["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    result["total_wall_s"] = time.perf_counter() - wall
    return result


def summary(paths):
    """A markdown table of finished fits, one row per result file."""
    columns = ["N", "M", "link", "whiten", "gamma", "status", "steps", "s / step", "steps to 0.01",
               "s to 0.01", "settled steps", "settled s", "final ELBO", "ELBO (GH 100)",
               "tracing + compile s", "peak RSS GB"]
    rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    runs = []
    for path in paths:
        with open(path) as handle:
            runs.append(json.load(handle))
    runs = [r for r in runs if r.get("mode") == "fit"]
    for r in sorted(runs, key=lambda r: (r["m"], r["n"], r["link"], not r["whiten"], -r["gamma"])):
        w = r[f"within_{GAP}_of_final"]
        compile_s = r["compile_and_first_step_s"]
        cells = [f"{r['n']:.0e}", r["m"], r["link"], "yes" if r["whiten"] else "no", r["gamma"], r["status"],
                 r["n_steps"], _cell(r["step_median_s"], ".4g"), _cell(w["first_step"], "d"),
                 _cell(w["first_time_s"], ".3g"), _cell(w["settled_step"], "d"), _cell(w["settled_time_s"], ".3g"),
                 f"{r['final_elbo']:.4f}", _cell(r.get("elbo_gh100"), ".4f"),
                 _cell(None if compile_s is None else r["tracing_s"] + compile_s, ".2f"),
                 f"{r['peak_rss_gb']:.2f}"]
        rows.append("| " + " | ".join(str(cell) for cell in cells) + " |")
    return "\n".join(rows)


def _cell(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv=None):
    args = parse_args(argv)
    if args.summary:
        print(summary(args.summary))
        return None
    result = run(args)
    report(result, args.out, ("protocol", "versions") + (("time_s", "elbo") if result["mode"] == "fit" else ()))
    return result


def report(result, out, hidden):
    """Write ``result`` to the JSON file ``out`` (if given, atomically) and print it without the ``hidden`` keys."""
    if out:
        tmp = out + ".tmp"
        with open(tmp, "w") as handle:
            handle.write(json.dumps(result, indent=1))
        os.replace(tmp, out)
    print(json.dumps({k: v for k, v in result.items() if k not in hidden}, indent=1))


if __name__ == "__main__":
    main()
