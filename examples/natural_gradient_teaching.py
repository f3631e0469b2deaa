"""Why natural gradients: the geometry of distributions (Khan and Nielsen, 2018, Fig. 1a) and what it buys.

Part 1.  Two pairs of Gaussians whose means differ by the same Euclidean
distance: N(0, 0.1^2) vs N(1, 0.1^2) barely overlap, N(0, 10^2) vs N(1, 10^2)
are almost identical.  The KL divergence tells them apart; the Euclidean
distance between parameters does not.  Plain gradient ascent measures steps in
the Euclidean metric; natural-gradient VI measures them in KL.

Part 2.  Bayesian logistic regression (2-D) fitted three ways: CVI (natural
gradient; the per-point sites are 1-D Gaussians), and plain gradient ascent on
the same exact ELBO with Adam and with SGD.  CVI reaches the optimum in a
handful of steps; the plain gradients need hundreds.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from efvi import plot
from efvi.expfam import DiagonalGaussian, Gaussian
from efvi.inference import Model
from efvi.inference.baselines import gradient_vi
from efvi.models import glm, likelihoods


def main(argv=None):
    args = parse_args(__doc__, argv)
    narrow = [DiagonalGaussian.from_mean_var(np.array([m]), np.array([0.01])) for m in (0.0, 1.0)]
    wide = [DiagonalGaussian.from_mean_var(np.array([m]), np.array([100.0])) for m in (0.0, 1.0)]
    print("Euclidean distance between the means: 1.0 for both pairs")
    print(f"KL, narrow pair: {float(narrow[0].kl(narrow[1])):.3f} nats")
    print(f"KL, wide pair:   {float(wide[0].kl(wide[1])):.5f} nats")

    rng = np.random.default_rng(0)
    n = 200
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    y = (rng.random(n) < 1 / (1 + np.exp(-X @ np.array([1.0, -3.0])))).astype(float)
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(2), 25.0 * np.eye(2))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    cvi = model.fit(tol=1e-12)
    best = cvi.elbo
    n_iter = 150 if args.quick else 1500
    adam = gradient_vi(model, "w", n_iter=n_iter, learning_rate=0.05)
    sgd = gradient_vi(model, "w", n_iter=n_iter, learning_rate=2e-3, optimizer="sgd")
    print(f"CVI:  ELBO {best:.6f} in {cvi.n_iter} iterations")
    for name, res in (("Adam", adam), ("SGD", sgd)):
        gap = best - res.elbo_trace
        reached = np.flatnonzero(gap < 1e-3)
        when = (f"within 1e-3 nats after {reached[0]} iterations" if reached.size
                else f"not within 1e-3 nats in {n_iter} iterations")
        print(f"{name}: final gap {gap[-1]:.2e} nats; {when}")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    grid = np.linspace(-3, 4, 500)
    for q, style in zip(narrow + wide, ["C0-", "C0--", "C1-", "C1--"]):
        axes[0].plot(grid, np.exp(q.logpdf(grid[:, None])), style)
    axes[0].set(title="same Euclidean distance, different KL", xlabel="z", yscale="log", ylim=(1e-4, 5))
    for name, trace, color, marker in (("CVI (natural gradient)", cvi.elbo_trace, "k", "o"),
                                       ("Adam", adam.elbo_trace, "C1", None), ("SGD", sgd.elbo_trace, "C2", None)):
        plot.elbo(trace, ax=axes[1], best=best, label=name, color=color, marker=marker)
    axes[1].set(xscale="log", ylabel="ELBO gap to the CVI optimum (nats)", title="logistic regression")
    axes[1].legend()
    save_figure(fig, args.output, "natural_gradient_teaching.png")
    return cvi, adam, sgd


if __name__ == "__main__":
    main()
