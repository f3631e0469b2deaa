"""Sparse GP classification by CVI: many points, a few inducing inputs, learned kernel and inducing inputs.

A dense GP costs O(N^3) and N^2 memory; a sparse GP summarises the latent
function by its values at M inducing inputs and costs O(N M^2) per iteration.
CVI keeps one 1-D Gaussian site per data point, exactly as for the dense GP;
the conjugate step is Bayesian linear regression of the sites'
pseudo-observations on M whitened kernel features.  The script fits

1. fixed hyperparameters and inducing inputs, full batch (a handful of sweeps);
2. the same by stochastic CVI with minibatches (Khan and Nielsen, 2018, eq. 14),
   which reaches the same posterior;
3. kernel hyperparameters and inducing inputs learned by maximising the ELBO;
4. the same learned from minibatches: a stochastic CVI step on q and an Adam
   step on the kernel and the inducing inputs at fixed q(u) per minibatch
   (Hensman et al., 2013), compared with 3 by the full-batch ELBO at the
   values each learned;

and, on a subset small enough for it, a dense GP for reference.  It prints
ELBOs, held-out accuracy and log-likelihood and times, and plots the
predictive probability with the inducing inputs before and after learning,
and the ELBO of the minibatch fit against the full-batch optimum.
"""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from efvi.inference import Decaying, Model
from efvi.models import Observe, gp, likelihoods


def latent(X):
    """The true latent function of the toy data, shape (n,)."""
    return 2.0 * np.sin(1.5 * X[:, 0]) * np.cos(X[:, 1]) + 0.5 * X[:, 0]


def make_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 2))
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-latent(X)))).astype(float)
    return X, y


def fit_sparse(X, y, Z, kernel, **options):
    block = gp.SparseGP(kernel, X, Z, learn_hyperparameters=options.pop("learn", False),
                        learn_inducing=options.pop("learn_inducing", False),
                        learning_rate=options.pop("learning_rate", 0.01))
    model = Model({"f": block}, [Observe(likelihoods.BernoulliLogit(), y, on="f")])
    start = time.perf_counter()
    fit = model.fit(**options)
    return fit, time.perf_counter() - start


def held_out(fit, X_test, y_test):
    """Accuracy and mean log predictive density on held-out points."""
    prediction = fit.predict(X_test, likelihoods.BernoulliLogit())
    accuracy = np.mean((prediction.mean > 0.5) == y_test)
    return accuracy, float(np.mean(prediction.log_density(y_test)))


def main(argv=None):
    args = parse_args(__doc__, argv)
    n, side, n_dense = (4000, 4, 500) if args.quick else (100_000, 8, 2000)
    X, y = make_data(n, seed=0)
    X_test, y_test = make_data(5000, seed=1)
    grid = np.linspace(-2.5, 2.5, side)
    Z = np.array([[a, b] for a in grid for b in grid])
    kernel = gp.kernels.RBF(lengthscale=1.0, variance=1.0)
    print(f"sparse GP classification: N = {n} points, M = {len(Z)} inducing inputs, 5000 held-out points")

    full, seconds = fit_sparse(X, y, Z, kernel, tol=1e-10)
    accuracy, log_density = held_out(full, X_test, y_test)
    print(f"1. full batch, fixed kernel and Z     ELBO {full.elbo:12.3f}  ({full.n_iter} iterations, "
          f"{'converged' if full.converged else 'NOT converged'}, {seconds:.2f} s); held-out accuracy "
          f"{accuracy:.3f}, log density {log_density:.4f}")

    batch = max(n // 20, 100)
    target = full.posterior["f"].inducing.mean
    distances = []                       # max |m_u - m_u(full)| after every minibatch step

    def track(info):
        distances.append(np.abs(info.posterior["f"].inducing.mean - target).max())

    stochastic, seconds = fit_sparse(X, y, Z, kernel, batch_size=batch, step=Decaying(rho0=1.0, delay=5.0, power=0.7),
                                     max_iter=400 if args.quick else 600, tol=0.0, warn=False, seed=0, callback=track)
    gap = distances[-1]
    print(f"2. minibatches of {batch}, decaying step: max |m_u - m_u(full)| = {gap:.2e} after "
          f"{stochastic.n_iter} steps ({stochastic.n_iter * batch / n:.0f} epochs, {seconds:.2f} s)")

    learned, seconds = fit_sparse(X, y, Z, kernel, learn=True, learn_inducing=True, tol=1e-8,
                                  max_iter=300 if args.quick else 1000, warn=False)
    accuracy_l, log_density_l = held_out(learned, X_test, y_test)
    values = learned.hyperparameters["f"]
    print(f"3. learned kernel and Z               ELBO {learned.elbo:12.3f}  ({learned.n_iter} site sweeps, "
          f"{'converged' if learned.converged else 'NOT converged'}, {seconds:.2f} s); held-out accuracy "
          f"{accuracy_l:.3f}, log density {log_density_l:.4f}")
    print(f"   lengthscale {values['lengthscale']:.3f}, variance {values['variance']:.3f} (started at 1, 1)")
    if not learned.converged:
        print(f"   not converged: {learned.message} (raise hyper_max_iter and max_iter to go on)")

    steps = 300 if args.quick else 1000
    from_batches, seconds = fit_sparse(X, y, Z, kernel, learn=True, learn_inducing=True, learning_rate=0.02,
                                       batch_size=batch, max_iter=steps, warn=False, seed=0)
    values_b = from_batches.hyperparameters["f"]
    # the full-batch ELBO at what the minibatches learned: q re-converged at those values
    learned_kernel = gp.kernels.RBF(lengthscale=values_b["lengthscale"], variance=values_b["variance"])
    refit, _ = fit_sparse(X, y, from_batches.posterior["f"].inducing_inputs, learned_kernel, tol=1e-10)
    print(f"4. learned from minibatches of {batch}  ELBO {refit.elbo:12.3f}  (full batch at the learned values; "
          f"{steps} Adam steps, {steps * batch / n:.0f} epochs, {seconds:.2f} s): lengthscale "
          f"{values_b['lengthscale']:.3f}, variance {values_b['variance']:.3f}; {learned.elbo - refit.elbo:.2f} nats "
          "below 3")

    subset = slice(0, n_dense)
    start = time.perf_counter()
    dense = Model({"f": gp.GP(kernel, X[subset])},
                  [Observe(likelihoods.BernoulliLogit(), y[subset], on="f")]).fit(tol=1e-10)
    dense_seconds = time.perf_counter() - start
    sparse_subset, sparse_seconds = fit_sparse(X[subset], y[subset], Z, kernel, tol=1e-10)
    print(f"dense GP on the first {n_dense} points: ELBO {dense.elbo:.3f} ({dense_seconds:.2f} s); sparse GP on the "
          f"same points: ELBO {sparse_subset.elbo:.3f} ({sparse_seconds:.2f} s; the bound is below the dense "
          f"ELBO by the cost of {len(Z)} inducing inputs)")

    fig, axes = plt.subplots(1, 3, figsize=(17, 4.6), gridspec_kw={"width_ratios": [1, 1, 1.1]})
    grid_x, grid_y = np.meshgrid(np.linspace(-3, 3, 90), np.linspace(-3, 3, 90))
    points = np.column_stack([grid_x.ravel(), grid_y.ravel()])
    for ax, fit, title in ((axes[0], full, "fixed kernel and inducing inputs"),
                           (axes[1], learned, "learned kernel and inducing inputs")):
        surface = fit.predict(points, likelihoods.BernoulliLogit()).mean.reshape(grid_x.shape)
        filled = ax.contourf(grid_x, grid_y, surface, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.85)
        ax.contour(grid_x, grid_y, latent(points).reshape(grid_x.shape), levels=[0.0], colors="g",
                   linestyles="--", linewidths=1.5)
        ax.contour(grid_x, grid_y, surface, levels=[0.5], colors="k", linewidths=1.5)
        inducing = fit.posterior["f"].inducing_inputs
        ax.scatter(inducing[:, 0], inducing[:, 1], marker="x", c="k", s=40, label="inducing inputs")
        ax.set(xlabel="$x_1$", ylabel="$x_2$", title=f"P(y = 1 | x): {title}")
    axes[0].legend(loc="lower right", fontsize=8)
    fig.colorbar(filled, ax=axes[1], label="P(y = 1 | x)")
    axes[2].semilogy(np.arange(1, len(distances) + 1) * batch / n, distances, lw=1.0)
    axes[2].set(xlabel="epochs", ylabel="max |m_u - m_u(full batch)|",
                title=f"stochastic CVI, minibatches of {batch}")
    fig.subplots_adjust(wspace=0.3)
    save_figure(fig, args.output, "sparse_gp_classification.png")
    return full


if __name__ == "__main__":
    main()
