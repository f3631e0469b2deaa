"""Bayesian logistic regression on breast cancer: CVI versus plain-gradient VI (Khan and Nielsen, 2018, the idea of Fig. 1b).

Both methods fit the same full-covariance Gaussian posterior to the same exact
ELBO (Gauss-Hermite expectations); CVI takes natural-gradient steps through
per-point 1-D Gaussian sites, the baseline takes Adam steps on the mean and the
Cholesky factor.  The plot shows the test log2-loss of the posterior predictive
and the ELBO gap against iterations, as in Fig. 1b of Khan and Nielsen (2018),
and the calibration of both final posterior predictives on the test set.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer

from _common import parse_args, save_figure
from efvi import plot
from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.inference.baselines import gradient_vi
from efvi.models import glm, likelihoods


def predictive(q, X):
    """Posterior predictive probability of label 1 at the rows of ``X``."""
    mean, var = X @ q.mean, np.einsum("nd,de,ne->n", X, q.cov, X)
    return likelihoods.BernoulliLogit().predict_mean_var(mean, var)[0]


def log2_loss(q, X, y):
    """Mean test log2-loss of the posterior predictive."""
    p1 = predictive(q, X)
    p = np.clip(np.where(y == 1, p1, 1 - p1), 1e-300, 1.0)
    return -np.mean(np.log2(p))


def main(argv=None):
    args = parse_args(__doc__, argv)
    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    y = data.target.astype(float)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:400], order[400:]
    dim = X.shape[1]
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X[train], y[train], on="w")])

    cvi_losses = []
    cvi = model.fit(tol=1e-10, callback=lambda info: cvi_losses.append(log2_loss(info.posterior["w"], X[test], y[test])))
    n_adam = 200 if args.quick else 2000
    adam_losses = []
    adam = gradient_vi(model, "w", n_iter=n_adam, learning_rate=0.05,
                       callback=lambda t, elbo, q: adam_losses.append(log2_loss(q, X[test], y[test])) and False)
    print(f"CVI : ELBO {cvi.elbo:.6f} after {cvi.n_iter} iterations ({cvi.timings['total']:.3f} s), "
          f"test log2-loss {cvi_losses[-1]:.4f}")
    print(f"Adam: ELBO {adam.elbo:.6f} after {n_adam} iterations ({adam.time_trace[-1]:.2f} s), "
          f"gap {cvi.elbo - adam.elbo:.2e} nats, test log2-loss {adam_losses[-1]:.4f}")

    fig, axes = plt.subplots(1, 3, figsize=(15, 3.5))
    axes[0].plot(np.arange(1, len(cvi_losses) + 1), cvi_losses, "k-o", markersize=3, label="CVI (natural gradient)")
    axes[0].plot(np.arange(1, len(adam_losses) + 1), adam_losses, "C1-", label="Adam (plain gradient)")
    axes[0].set(xscale="log", xlabel="iteration", ylabel="test log2-loss", title="breast cancer")
    axes[0].legend()
    plot.elbo(cvi, ax=axes[1], best=cvi.elbo, label="CVI", color="k")
    plot.elbo(adam.elbo_trace, ax=axes[1], best=cvi.elbo, label="Adam", color="C1", marker=None)
    axes[1].set(xscale="log", ylabel="ELBO gap to the CVI optimum (nats)")
    axes[1].legend()
    plot.calibration(y[test], predictive(cvi.posterior["w"], X[test]), n_bins=5, ax=axes[2], label="CVI", color="k")
    plot.calibration(y[test], predictive(adam.posterior, X[test]), n_bins=5, ax=axes[2], label="Adam",
                     color="C1")
    axes[2].set_title("test-set calibration")
    axes[2].legend(fontsize=8)
    save_figure(fig, args.output, "logistic_cvi_vs_adam.png")
    return cvi, adam


if __name__ == "__main__":
    main()
