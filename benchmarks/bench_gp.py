"""GP classification at N = 2000 (2-D inputs): CVI iterations against one Cholesky factorisation.

Run by hand:  python -m benchmarks.bench_gp  [--n 2000] [--repeats 5]

Reports, for a Bernoulli-logit GP with a fixed Matern-3/2 kernel,

* the time of one ``np.linalg.cholesky`` of the N x N kernel matrix (also
  LAPACK ``dpotrf`` through scipy, for reference);
* the time of one conjugate computation (``efvi.models.gp.solver.site_posterior``:
  Cholesky of ``I + S K S``, its triangular inverse, marginals, log Z);
* efvi's time per CVI iteration (median over the fit) divided by the
  Cholesky time (target: at most 1.5), the iterations to convergence with the
  default step rule, the total time, and the iterations and time to come
  within 0.01 nats of the optimum;
* the peers' reported figure (BayesNewton / GPflow natural gradients with
  gamma = 1: 4-5 iterations of about 2-4 s each) and, if ``import gpflow``
  works, a GPflow VGP run measured here, its Gaussian evaluated by efvi's exact
  ELBO.

On a shared machine the timings drift: the fits, the Cholesky factorisations
and the conjugate computation are timed in turn, ``--repeats`` rounds, and
each ratio is taken round by round (median and range reported).
"""

import argparse
import os
import time

import numpy as np
from scipy.linalg import lapack

from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods
from efvi.models.gp.solver import site_posterior

from ._common import interleaved_times, ratio_summary, time_to_reach


def make_problem(n, seed=0):
    """Inputs uniform on [-3, 3]^2; labels Bernoulli(sigmoid(f)) for a smooth latent f."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 2))
    latent = 2.0 * np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 1]
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-2.0 * latent))).astype(float)
    return X, y


def _model(kernel, X, y):
    return Model({"f": gp.GP(kernel, X)}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])


def _gaussian_elbo(K_chol, y, mean, factor):
    """efvi's exact ELBO of ``N(mean, factor factor^T)`` (``factor`` lower triangular) under ``N(0, K)``."""
    from scipy.linalg import solve_triangular

    expected = likelihoods.BernoulliLogit().variational_expectations(mean, np.sum(factor ** 2, 1), y)[0]
    whitened = solve_triangular(K_chol, factor, lower=True)
    shift = solve_triangular(K_chol, mean, lower=True)
    kl = (0.5 * (np.sum(whitened ** 2) + shift @ shift - len(y)) + np.sum(np.log(np.diag(K_chol)))
          - np.sum(np.log(np.abs(np.diag(factor)))))
    return float(np.sum(expected) - kl)


def _gpflow_run(X, y, kernel, optimum, max_iter=10):
    """GPflow VGP + NaturalGradient(gamma=1), if installed; its Gaussian scored by efvi's exact ELBO."""
    try:
        import gpflow
        import tensorflow as tf
    except ImportError:
        return None
    lengthscale, variance = np.exp(kernel.log_params)
    vgp = gpflow.models.VGP((X, y[:, None]), kernel=gpflow.kernels.Matern32(lengthscales=lengthscale,
                                                                         variance=variance),
                            likelihood=gpflow.likelihoods.Bernoulli(invlink=tf.sigmoid))
    gpflow.set_trainable(vgp.kernel, False)
    natgrad = gpflow.optimizers.NaturalGradient(gamma=1.0)
    K = kernel(X)
    K_chol = np.linalg.cholesky(K)
    whitening = np.linalg.cholesky(K + gpflow.config.default_jitter() * np.eye(len(y)))
    times, elbos, elapsed = [], [], 0.0
    for _ in range(max_iter):
        start = time.perf_counter()
        natgrad.minimize(vgp.training_loss, [(vgp.q_mu, vgp.q_sqrt)])
        elapsed += time.perf_counter() - start   # the scoring below is not the peer's time
        times.append(elapsed)
        # VGP is whitened: f = L v with v ~ N(q_mu, q_sqrt q_sqrt^T), L L^T = K + jitter I
        q_mu, q_sqrt = vgp.q_mu.numpy()[:, 0], np.tril(vgp.q_sqrt.numpy()[0])
        elbos.append(_gaussian_elbo(K_chol, y, whitening @ q_mu, whitening @ q_sqrt))
    elbos = np.array(elbos)
    reached = np.flatnonzero(elbos >= optimum - 0.01)
    return {"iterations": int(reached[0] + 1) if reached.size else None,
            "per_iteration": float(np.median(np.diff(np.concatenate([[0.0], times])))),
            "time_to_0.01": time_to_reach(times, elbos, optimum), "gap": optimum - float(elbos[-1])}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    X, y = make_problem(args.n)
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=2.0)
    K = kernel(X)
    _model(kernel, X[:50], y[:50]).fit()                       # compile / load the numba kernels
    model = _model(kernel, X, y)

    fit = model.fit()                                          # the default step rule and tol
    tight = model.fit(tol=1e-13, max_iter=100, warn=False)     # the optimum, for the 0.01-nat figure
    sites = tight.sites[0]
    per_iteration, totals = [], []

    def efvi():
        timings = model.fit().timings
        per_iteration.append(np.median(timings["per_iteration"]))
        totals.append(timings["total"])     # every other call is the untimed warm-up: same fit

    # timed in turn, round by round, so that each ratio compares like with like on a drifting machine
    t = interleaved_times({"efvi": efvi, "numpy": lambda: np.linalg.cholesky(K),
                           "dpotrf": lambda: lapack.dpotrf(K, lower=1, clean=1),
                           "solver": lambda: site_posterior(K, sites.natural_mean, sites.precision)},
                          args.repeats)
    t["per_iteration"] = np.array(per_iteration[-args.repeats:])
    chol_numpy, chol_lapack, solver_time = (np.median(t[k]) for k in ("numpy", "dpotrf", "solver"))

    times = np.cumsum([0.0] + list(tight.timings["per_iteration"]))
    optimum = tight.elbo
    within = np.flatnonzero(tight.elbo_trace >= optimum - 0.01)
    median = float(np.median(t["per_iteration"]))

    print(f"GP classification, N = {args.n}, 2-D inputs, Matern-3/2 (fixed hyperparameters)")
    print(f"medians over {args.repeats} rounds, each timing every item once in turn; BLAS threads: "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', f'default ({os.cpu_count()} cores)')}")
    print(f"one Cholesky of K: np.linalg.cholesky {chol_numpy * 1e3:.1f} ms, "
          f"scipy LAPACK dpotrf {chol_lapack * 1e3:.1f} ms")
    print(f"one conjugate computation (site_posterior): {solver_time * 1e3:.1f} ms "
          f"= {ratio_summary(t, 'solver', 'numpy')} x np.linalg.cholesky "
          f"= {ratio_summary(t, 'solver', 'dpotrf')} x dpotrf")
    print(f"time per iteration / np.linalg.cholesky: {ratio_summary(t, 'per_iteration', 'numpy')}; "
          f"/ dpotrf: {ratio_summary(t, 'per_iteration', 'dpotrf')}")
    print()
    header = (f"{'method':<34}{'iterations':>11}{'per iter (s)':>14}{'/ np chol':>11}{'/ dpotrf':>10}"
              f"{'total (s)':>11}{'to 0.01 nats (s)':>18}")
    print(header)
    print(f"{'efvi CVI (default rule and tol)':<34}{fit.n_iter:>11d}{median:>14.3f}{median / chol_numpy:>11.2f}"
          f"{median / chol_lapack:>10.2f}{np.median(totals):>11.2f}"
          f"{time_to_reach(times, tight.elbo_trace, optimum):>18.2f}")
    print(f"{'BayesNewton / GPflow (reported)':<34}{'4-5':>11}{'2-4':>14}{'':>21}{'8-20':>11}")
    peer = _gpflow_run(X, y, kernel, optimum)
    if peer is None:
        print(f"{'GPflow VGP + NaturalGradient':<34}  skipped (gpflow is not installed)")
    else:
        print(f"{'GPflow VGP + NaturalGradient':<34}{peer['iterations'] or '>10':>11}{peer['per_iteration']:>14.3f}"
              f"{peer['per_iteration'] / chol_numpy:>11.2f}{peer['per_iteration'] / chol_lapack:>10.2f}{'':>11}"
              f"{peer['time_to_0.01'] or float('nan'):>18.2f}")
    print()
    print(f"efvi: converged={fit.converged}, ELBO {fit.elbo:.6f}, optimum {optimum:.6f} "
          f"(gap {optimum - fit.elbo:.1e} nats); within 0.01 nats after {within[0]} iterations; "
          f"{fit.n_backoffs} back-offs")
    print("The floor of one iteration is dpotrf + dtrtri (the marginal variances need diag of an "
          "inverse): 2N^3/3 flops against the Cholesky's N^3/3.")
    return {"cholesky": chol_numpy, "solver": solver_time, "per_iteration": t["per_iteration"],
            "n_iter": fit.n_iter, "total": fit.timings["total"]}


if __name__ == "__main__":
    main()
