"""What CVI's per-data sites look like: pseudo-observations and precisions of a logistic GLM.

Each data point keeps a 1-D Gaussian site ``exp(gamma_i a - pi_i a^2 / 2)`` on
its linear predictor ``a_i = x_i^T w``: a pseudo-observation ``gamma_i / pi_i``
with noise variance ``1 / pi_i``.  The posterior is exactly Bayesian linear
regression on these pseudo-observations.  Points the model already explains
get small precisions (they barely inform ``w``); points near the decision
boundary get precisions near the logistic curvature 1/4.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit

from _common import parse_args, save_figure
from efvi import plot
from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods


def main(argv=None):
    args = parse_args(__doc__, argv)
    rng = np.random.default_rng(1)
    n = 100 if args.quick else 300
    x = rng.uniform(-4, 4, size=n)
    X = np.column_stack([np.ones(n), x])
    y = (rng.random(n) < expit(0.5 + 1.5 * x)).astype(float)
    fit = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(2), 10 * np.eye(2))},
                factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit()
    sites, q = fit.sites[0], fit.posterior["w"]
    print(f"posterior mean {np.round(q.mean, 3)}, ELBO {fit.elbo:.4f} ({fit.n_iter} iterations)")
    print(f"site precisions: min {sites.precision.min():.4f}, max {sites.precision.max():.4f} (logistic bound 0.25)")
    check = np.linalg.solve(np.eye(2) / 10 + X.T @ (sites.precision[:, None] * X), X.T @ sites.natural_mean)
    print(f"Bayesian linear regression on the pseudo-observations reproduces the mean: "
          f"{np.allclose(check, q.mean, rtol=1e-8)}")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    plot.sites(fit, x=x, y=y, ax=axes)
    grid = np.linspace(-4, 4, 100)
    axes[0].plot(grid, q.mean[0] + q.mean[1] * grid, "k-", label="posterior mean of a(x)")
    axes[0].set(ylim=(-15, 15), title="sites as pseudo-observations (crosses: the labels)")
    axes[0].legend()
    axes[1].set_title("site precisions")
    save_figure(fig, args.output, "glm_sites.png")
    return fit


if __name__ == "__main__":
    main()
