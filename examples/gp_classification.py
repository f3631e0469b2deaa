"""GP classification of the two-moons toy set by CVI, with learned kernel hyperparameters.

The latent function has a GP prior with a Matern-3/2 kernel; each label is
Bernoulli-logit given its value.  CVI keeps one 1-D Gaussian site per point and
the conjugate step is GP regression on the sites' pseudo-observations; the
kernel's lengthscale and variance are learned by maximising the ELBO,
alternating with the site updates.  The script prints the accuracy on held-out
points, the ELBO, the learned hyperparameters and the iterations, and plots the
predictive probability P(y = 1 | x) with the decision boundary (P = 0.5), the
ELBO's convergence and the calibration on the held-out points.
"""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons

from _common import parse_args, save_figure
from efvi import plot
from efvi.inference import Model
from efvi.models import Observe, gp, likelihoods


def main(argv=None):
    args = parse_args(__doc__, argv)
    n_train = 80 if args.quick else 300
    X, y = make_moons(n_samples=n_train, noise=0.3, random_state=0)
    X_test, y_test = make_moons(n_samples=1000, noise=0.3, random_state=1)

    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=1.0)
    prior = gp.GP(kernel, X, learn_hyperparameters=True)
    likelihood = likelihoods.BernoulliLogit()
    model = Model(latents={"f": prior}, factors=[Observe(likelihood, y, on="f")])
    start = time.perf_counter()
    fit = model.fit(max_iter=500, tol=1e-9)
    seconds = time.perf_counter() - start
    posterior = fit.posterior["f"]

    def probability(points):
        mean, var = posterior.predict(points)
        return likelihood.predict_mean_var(mean, var)[0]

    train_accuracy = np.mean((probability(X) > 0.5) == y)
    test_accuracy = np.mean((probability(X_test) > 0.5) == y_test)
    learned = fit.hyperparameters["f"]
    lengthscale, variance = learned["lengthscale"], learned["variance"]
    fixed = Model({"f": gp.GP(kernel, X)}, [Observe(likelihood, y, on="f")]).fit(tol=1e-9)
    print(f"GP classification of two moons: N = {n_train} training points, 1000 held-out points")
    print(f"ELBO with the initial hyperparameters      {fixed.elbo:10.4f} ({fixed.n_iter} iterations)")
    print(f"ELBO with learned hyperparameters           {fit.elbo:10.4f} ({fit.n_iter} iterations, "
          f"{'converged' if fit.converged else 'NOT converged'}, {seconds:.2f} s)")
    print(f"learned lengthscale {lengthscale:.4f}, variance {variance:.4f} (started at 1, 1)")
    print(f"accuracy: training {train_accuracy:.3f}, held-out {test_accuracy:.3f}")

    fig, (ax, ax_trace, ax_calibration) = plt.subplots(1, 3, figsize=(16, 4.2),
                                                       gridspec_kw={"width_ratios": [1.3, 1, 1]})
    grid_x, grid_y = np.meshgrid(np.linspace(-2.0, 3.0, 120), np.linspace(-1.5, 2.0, 100))
    grid = np.column_stack([grid_x.ravel(), grid_y.ravel()])
    surface = probability(grid).reshape(grid_x.shape)
    filled = ax.contourf(grid_x, grid_y, surface, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.8)
    ax.contour(grid_x, grid_y, surface, levels=[0.5], colors="k", linewidths=2)
    ax.scatter(X[:, 0], X[:, 1], c=y, cmap="RdBu_r", edgecolors="k", s=18)
    fig.colorbar(filled, ax=ax, label="P(y = 1 | x)")
    ax.set(xlabel="$x_1$", ylabel="$x_2$",
           title=f"predictive probability (held-out accuracy {test_accuracy:.3f})")
    plot.elbo(fit, ax=ax_trace)
    ax_trace.set(xlabel="trace entry (site sweeps and hyperparameter rounds)", title="convergence of the ELBO")
    plot.calibration(y_test, probability(X_test), ax=ax_calibration)
    ax_calibration.set_title("calibration on the held-out points")
    fig.subplots_adjust(wspace=0.35)
    save_figure(fig, args.output, "gp_classification.png")
    return fit


if __name__ == "__main__":
    main()
