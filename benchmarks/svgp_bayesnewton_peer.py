"""The second peer of the sparse-GP benchmark: BayesNewton's sparse variational GP fitted by CVI.

Runs in a separate environment that holds BayesNewton (it does not import efvi
or GPflow), for example one made with::

    python3.11 -m venv VENV
    VENV/bin/pip install jax==0.4.13 jaxlib==0.4.13 objax==1.7.0 numpy==1.26.4 scipy==1.11.4 numba==0.59.1 six
    VENV/bin/pip install bayesnewton==1.3.4

and is run from the repository root as a script::

    OPENBLAS_NUM_THREADS=1 VENV/bin/python benchmarks/svgp_bayesnewton_peer.py \\
        --n 10000 --m 100 --out svgp_bn_n1e4_m100.json

Model.  ``bayesnewton.models.SparseVariationalGP`` (Hensman, Matthews and
Ghahramani, 2015, fitted by conjugate-computation VI, Khan and Lin, 2017) with a
squared-exponential kernel on ``bayesnewton.kernels.StationaryKernel`` (BayesNewton
1.3.4 has Matern kernels but no squared exponential) whose variance and
lengthscale are fixed, the fixed inducing inputs of ``_svgp_data`` and
``bayesnewton.likelihoods.Bernoulli(link='logit')``.  Each step is one call of
``model.inference(lr)`` (``--lr``, 1 by default), BayesNewton's own CVI step:
one site per data point, the expected log-likelihood and its derivatives by
BayesNewton's default 20-point Gauss-Hermite rule (the same rule as GPflow's
SVGP), the new sites mixed with the old ones with weight ``lr``.  The ELBO is
``-model.energy()``.  The sites start where BayesNewton starts them (mean 0,
variance 100 per point), so step 0 is close to, but not exactly, the prior.

Two things are adjusted so that the bound is the one efvi and GPflow maximise:

* **Jitter.**  BayesNewton factorises K(Z, Z) without jitter; the kernel used
  here (``JitteredSquaredExponential``) adds ``JITTER`` to the diagonal of
  K(Z, Z), and only there (not to K(X, X)), as GPflow does.
* **Memory** (``--variant``).  BayesNewton's sparse GP forms N x N matrices:
  the dense K(X, X) and the full covariance of q(f) in
  ``sparse_conditional_post_to_data``, the N x N diagonal site precision in
  ``sparse_gaussian_conditional``, and an N x N mask in the constructor.  The
  ``stock`` variant runs the library as shipped, which fits in memory up to
  N of about 1e4 (refused above ``--max-dense-gb``).  The ``diagonal`` variant
  (default) is a subclass that replaces those four by their diagonals, O(N M)
  memory, and otherwise runs BayesNewton's own code (its inference step, site
  update, quadrature, posterior formulas and energy); at N = 1e4 it follows the
  stock model's ELBO trace to rounding (``--variant both`` checks this).

Numerics.  BayesNewton's posterior update inverts the sites' M x M precision
in u-space, W diag(pi) W^T with W = K(Z, Z)^-1 K(Z, X), before adding the
prior.  With M = 500 inducing points of this problem that matrix is singular
in float64 (condition number about 5e16), its Cholesky fails and the ELBO is
NaN from the start: such runs end with status ``failed``.  At M = 100 it is
well conditioned (about 1e4).

Timing.  ``model.inference`` and ``model.energy`` are compiled once each by
``objax.Jit`` in float64 (BayesNewton turns on x64), with XLA asked for one
thread (at N = 1e6 a second XLA thread still does about a fifth of the work).  One step is run to compile it, the sites are reset to their start,
and the timed fit begins, so the time trace contains no tracing or
compilation (reported apart).  The ELBO after each step is evaluated outside
the timed interval.  The fit stops after ``--iters`` steps or once the ELBO has
changed by less than ``--rtol`` relative over 5 steps.  The output JSON has the
fields of ``svgp_gpflow_peer.py``'s (``within_0.01_of_final``,
``step_median_s``, ``tracing_s``, ``compile_and_first_step_s``,
``final_elbo``, ...).  ``--q-out FILE.npz`` saves the fitted q(u) in the form
``svgp_gpflow_peer.py --q-in`` reads (``q_mu``, ``q_cov``, ``whitened = 0``),
so that GPflow's bound can be evaluated at BayesNewton's q(u).  The JSON also
holds ``elbo_direct_kl``: the final ELBO with the KL term computed directly
from q(u) and K(Z, Z) + jitter I in numpy, instead of BayesNewton's route
through the pseudo-likelihood of the sites.
"""

import argparse
import os
import platform
import resource
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

try:
    from ._svgp_data import BOX, CHUNK, JITTER, KERNEL, inducing_points, make_classification
    from .svgp_gpflow_peer import (GAP, WINDOW, add_shared_arguments, check_shared_arguments, inducing_cholesky,
                                   report, within)
except ImportError:                       # run as a script from another environment
    from _svgp_data import BOX, CHUNK, JITTER, KERNEL, inducing_points, make_classification
    from svgp_gpflow_peer import (GAP, WINDOW, add_shared_arguments, check_shared_arguments, inducing_cholesky,
                                  report, within)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_shared_arguments(parser)
    parser.add_argument("--lr", type=float, default=1.0, help="CVI step size (BayesNewton's inference lr)")
    parser.add_argument("--variant", choices=("diagonal", "stock", "both"), default="diagonal",
                        help="'stock': BayesNewton as shipped (N x N matrices); 'diagonal': those matrices "
                             "replaced by their diagonals; 'both': fit both and compare their traces")
    parser.add_argument("--max-dense-gb", type=float, default=8.0,
                        help="refuse the stock variant when one N x N float64 matrix times 6 exceeds this")
    args = check_shared_arguments(parser, parser.parse_args(argv))
    if not 0 < args.lr <= 1:
        parser.error(f"--lr must lie in (0, 1], got {args.lr}")
    return args


def _versions():
    import bayesnewton
    import jax
    import jaxlib
    import objax

    return {"python": platform.python_version(), "numpy": np.__version__, "jax": jax.__version__,
            "jaxlib": jaxlib.__version__, "objax": objax.__version__,
            "bayesnewton": getattr(bayesnewton, "__version__", _dist_version("bayesnewton"))}


def _dist_version(name):
    from importlib.metadata import version
    return version(name)


def _classes():
    """BayesNewton subclasses, defined on first use so that importing this module needs no BayesNewton."""
    import bayesnewton
    import jax.numpy as jnp
    import objax
    from bayesnewton.basemodels import BaseModel
    from bayesnewton.utils import inv, solve

    class JitteredSquaredExponential(bayesnewton.kernels.StationaryKernel):
        """A squared exponential on BayesNewton's ``StationaryKernel``, with ``jitter`` on K(Z, Z) only.

        BayesNewton 1.3.4 ships Matern kernels but no squared exponential;
        this one is k(r^2) = variance exp(-r^2 / 2) on the base class's scaled
        squared distances (as GPflow's).  K(Z, Z) is recognised as a call whose
        two arguments are the same array of ``num_inducing`` rows: BayesNewton
        forms K(Z, Z) by exactly such a call and K(X, X) from arrays of
        another length.
        """

        def __init__(self, num_inducing, jitter, **kwargs):
            super().__init__(**kwargs)
            self.num_inducing, self.jitter = num_inducing, jitter

        def K_r2(self, r2):
            return self.variance * jnp.exp(-0.5 * jnp.maximum(r2, 0.0))

        def K(self, X, X2):
            K = super().K(X, X2)
            if X is X2 and X.shape[0] == self.num_inducing:
                K = K + self.jitter * jnp.eye(self.num_inducing)
            return K

    class DiagonalSparseVariationalGP(bayesnewton.models.SparseVariationalGP):
        """BayesNewton's SVGP with its N x N intermediates replaced by their diagonals.

        Same maths and the same formulas as ``SparseGaussianProcess``
        (``update_posterior``, ``compute_global_pseudo_nat``,
        ``conditional_posterior_to_data``), with diag(nat2) W^T formed as a
        row scaling and only the diagonal of q(f)'s covariance computed.
        Full batch only.
        """

        def __init__(self, kernel, likelihood, X, Y, Z):
            BaseModel.__init__(self, kernel, likelihood, X, Y, func_dim=1)
            self.Z = objax.StateVar(jnp.array(Z))
            self.num_inducing = Z.shape[0]
            self.posterior_mean = objax.StateVar(jnp.zeros([self.num_inducing, 1, 1]))
            self.posterior_variance = objax.StateVar(jnp.ones([self.num_inducing, 1, 1]))
            self.posterior_covariance = objax.StateVar(jnp.eye(self.num_inducing))
            self.cov_block_diag_ind = jnp.eye(self.num_inducing, dtype=bool)

        def _projection(self):
            Z = self.Z.value
            Kuu = self.kernel(Z, Z)
            Kuf = self.kernel(Z, self.X)
            return Kuu, Kuf, solve(Kuu, Kuf)              # Wuf = Kuu^-1 Kuf, M x N

        def compute_global_pseudo_nat(self):
            _, _, Wuf = self._projection()
            return self._global_nat(Wuf)

        def _global_nat(self, Wuf):
            nat1 = Wuf @ self.pseudo_likelihood.nat1.reshape(-1, 1)
            nat2 = (Wuf * self.pseudo_likelihood.nat2.reshape(1, -1)) @ Wuf.T
            return nat1, nat2

        def update_posterior(self):
            Kuu, _, Wuf = self._projection()
            nat1, nat2 = self._global_nat(Wuf)
            likcov = inv(nat2)                             # sparse_gaussian_conditional, line for line
            likmean = likcov @ nat1
            Kuu_iKy = solve(Kuu + likcov, Kuu).T
            mean = Kuu_iKy @ likmean
            covariance = Kuu - Kuu_iKy @ Kuu
            self.posterior_mean.value = mean.reshape(self.num_inducing, 1, 1)
            self.posterior_variance.value = jnp.diag(covariance).reshape(self.num_inducing, 1, 1)
            self.posterior_covariance.value = covariance

        def conditional_posterior_to_data(self, batch_ind=None, post_mean=None, post_cov=None):
            if post_mean is None:
                post_mean = self.posterior_mean.value
            if post_cov is None:
                post_cov = self.posterior_covariance.value
            Kuu, Kuf, Wuf = self._projection()
            if batch_ind is not None:
                Kuf, Wuf = Kuf[:, batch_ind], Wuf[:, batch_ind]
            kff = self.kernel.variance * jnp.ones(Kuf.shape[1])   # stationary: k(x, x) = variance
            mean_f = Wuf.T @ post_mean.reshape(-1, 1)
            var_f = kff - jnp.sum(Kuf * Wuf, axis=0) + jnp.sum(Wuf * (post_cov @ Wuf), axis=0)
            return mean_f.reshape(-1, 1, 1), var_f.reshape(-1, 1, 1)

    return JitteredSquaredExponential, DiagonalSparseVariationalGP


def build_model(X, y, Z, variant):
    """BayesNewton's SVGP on the shared problem: kernel and inducing inputs fixed, sites trainable."""
    import bayesnewton

    JitteredSquaredExponential, DiagonalSparseVariationalGP = _classes()
    kernel = JitteredSquaredExponential(len(Z), JITTER, variance=KERNEL["variance"],
                                        lengthscale=KERNEL["lengthscale"], fix_variance=True,
                                        fix_lengthscale=True)
    likelihood = bayesnewton.likelihoods.Bernoulli(link="logit")
    if variant == "stock":
        return bayesnewton.models.SparseVariationalGP(kernel=kernel, likelihood=likelihood, X=X, Y=y, Z=Z,
                                                      opt_z=False)
    return DiagonalSparseVariationalGP(kernel, likelihood, X, y, Z)


def direct_kl_elbo(model, elbo, L):
    """The ELBO with BayesNewton's KL replaced by KL(q(u) || N(0, L L^T)) computed in numpy.

    BayesNewton's KL goes through the sites' pseudo-likelihood (an inverse of
    their M x M precision in u-space); this recomputes it from q(u) directly.
    """
    from scipy.linalg import cho_solve

    mean = np.asarray(model.posterior_mean.value, dtype=np.float64).reshape(-1)
    cov = np.asarray(model.posterior_covariance.value, dtype=np.float64)
    m = len(mean)
    kl_theirs = float(model.compute_kl())
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))):
        return None, kl_theirs, None
    S = np.linalg.cholesky(0.5 * (cov + cov.T))
    kl = 0.5 * (np.trace(cho_solve((L, True), cov)) + mean @ cho_solve((L, True), mean) - m
                + 2.0 * np.sum(np.log(np.diag(L))) - 2.0 * np.sum(np.log(np.diag(S))))
    return elbo + kl_theirs - kl, kl_theirs, kl


def fit(model, lr, iters, rtol):
    """Run BayesNewton's CVI steps; returns the trace (step 0 is the starting sites) and timings."""
    import objax

    def step():
        model.inference(lr=lr)
        return model.posterior_mean.value[0, 0, 0]     # read after the update: fetching it waits for the step

    step = objax.Jit(step, model.vars())
    energy = objax.Jit(lambda: model.energy(), model.vars())
    posterior = objax.Jit(lambda: model.update_posterior(), model.vars())
    start_state = model.vars().tensors()

    start = time.perf_counter()
    float(step())                                      # objax.Jit traces and compiles on the first call
    first_call = time.perf_counter() - start
    start = time.perf_counter()
    float(energy())
    energy_first_call = time.perf_counter() - start
    model.vars().assign(start_state)
    posterior()                                        # q(u) of the starting sites

    times, elbos, step_times, eval_times = [0.0], [-float(energy())], [], []
    status, error = "max_iters", None
    for _ in range(iters):
        if not np.isfinite(elbos[-1]):
            status, error = "failed", f"non-finite ELBO after step {len(elbos) - 1} (step 0 is the start)"
            break
        begin = time.perf_counter()
        float(step())
        step_times.append(time.perf_counter() - begin)
        times.append(times[-1] + step_times[-1])
        begin = time.perf_counter()
        elbos.append(-float(energy()))
        eval_times.append(time.perf_counter() - begin)
        if len(elbos) > WINDOW and abs(elbos[-1] - elbos[-1 - WINDOW]) < rtol * abs(elbos[-1]):
            status = "converged"
            break
    if status == "max_iters" and not np.isfinite(elbos[-1]):
        status, error = "failed", f"non-finite ELBO after step {len(elbos) - 1} (step 0 is the start)"
    median = float(np.median(step_times)) if step_times else None
    return {"status": status, "error": error, "time_s": times, "elbo": elbos, "tracing_s": 0.0,
            "compile_and_first_step_s": None if median is None else first_call - median,
            "first_step_call_s": first_call, "elbo_compile_and_first_call_s": energy_first_call,
            "step_median_s": median, "step_min_s": float(np.min(step_times)) if step_times else None,
            "elbo_eval_median_s": float(np.median(eval_times)) if eval_times else None}


def _finite_max(values):
    finite = [v for v in values if np.isfinite(v)]
    return max(finite) if finite else None


def run_variant(args, variant, X, y, Z, L):
    """Fit one variant; returns its JSON-ready result and the model."""
    if variant == "stock":
        need_gb = 6 * 8 * args.n ** 2 / 2**30
        if need_gb > args.max_dense_gb:
            return {"variant": variant, "status": "infeasible",
                    "error": f"stock BayesNewton forms N x N matrices: about {need_gb:.0f} GB at N = {args.n} "
                             f"(limit --max-dense-gb {args.max_dense_gb})"}, None
    model = build_model(X, y[:, None], Z, variant)
    trace = fit(model, args.lr, args.iters, args.rtol)
    final = trace["elbo"][-1]
    elbo_direct, kl_theirs, kl_direct = direct_kl_elbo(model, final, L)
    result = {"variant": variant, **trace, "n_steps": len(trace["elbo"]) - 1, "final_elbo": final,
              "best_elbo": _finite_max(trace["elbo"]), "elbo_direct_kl": elbo_direct,
              "kl_bayesnewton": kl_theirs, "kl_direct": kl_direct,
              f"within_{GAP}_of_final": within(trace["time_s"], trace["elbo"], final)}
    return result, model


def run(args):
    """Build the problem and the model, fit, and return the JSON-ready result."""
    wall = time.perf_counter()
    X, y = make_classification(args.n, args.seed)
    Z = inducing_points(args.m, args.seed)
    L = inducing_cholesky(Z)
    result = {"n": args.n, "m": args.m, "seed": args.seed, "link": "logit", "mode": "fit", "lr": args.lr,
              "gamma": args.lr, "whiten": False, "iters": args.iters, "rtol": args.rtol,
              "protocol": {"kernel": "squared exponential, fixed", **KERNEL, "jitter": JITTER,
                           "jitter_note": "added to K(Z, Z) only, by JitteredSquaredExponential",
                           "inputs": f"uniform on [-{BOX}, {BOX}]^2, chunks of {CHUNK}",
                           "labels": "Bernoulli(sigmoid(2 sin(1.5 x1) cos(x2) + 0.5 x1))",
                           "inducing": "stratified draw (benchmarks/_svgp_data.inducing_points), fixed",
                           "batch": "full", "start": "BayesNewton's default sites: mean 0, variance 100"},
              "quadrature": "BayesNewton's default Gauss-Hermite, 20 nodes; derivatives in m and v by the "
                            "same nodes (Stein's identities)",
              "optimizer": "bayesnewton SparseVariationalGP.inference(lr), CVI, full batch, objax.Jit",
              "versions": _versions(),
              "threads": {"XLA_FLAGS": os.environ.get("XLA_FLAGS"),
                          "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")},
              "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    variants = ("diagonal", "stock") if args.variant == "both" else (args.variant,)
    fits = {}
    for variant in variants:
        fits[variant] = run_variant(args, variant, X, y, Z, L)
    main_variant = variants[0]
    main, model = fits[main_variant]
    result.update(main)
    if args.variant == "both":
        other = fits["stock"][0]
        result["stock"] = other
        if "elbo" in other:
            k = min(len(other["elbo"]), len(main["elbo"]))
            result["stock_vs_diagonal_max_abs_elbo_difference"] = float(
                np.max(np.abs(np.subtract(other["elbo"][:k], main["elbo"][:k]))))
    if args.q_out and model is not None:
        mean = np.asarray(model.posterior_mean.value, dtype=np.float64).reshape(-1)
        cov = np.asarray(model.posterior_covariance.value, dtype=np.float64)
        np.savez(args.q_out, Z=Z, whitened=0, q_mu=mean, q_cov=0.5 * (cov + cov.T))
    result["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    result["total_wall_s"] = time.perf_counter() - wall
    return result


def main(argv=None):
    args = parse_args(argv)
    result = run(args)
    report(result, args.out, ("protocol", "versions", "time_s", "elbo"))
    return result


if __name__ == "__main__":
    main()
