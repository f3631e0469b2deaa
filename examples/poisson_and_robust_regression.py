"""Two GLMs on the same site path: Poisson regression, and robust regression with Student-t noise.

1. Poisson regression with exposures (log link): counts of events in regions of
   different sizes, recovering the rate coefficients with posterior intervals.
2. Robust regression: a line with 10% gross outliers, fitted with a Gaussian and
   with a Student-t likelihood.  The Student-t sites of the outliers get
   negative precisions (the likelihood is not log-concave); the engine keeps the
   posterior valid, and the fit ignores the outliers where the Gaussian one is
   dragged towards them.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods


def _fit(lik, X, y, prior_var):
    dim = X.shape[1]
    return Model(latents={"w": Gaussian.from_mean_cov(np.zeros(dim), prior_var * np.eye(dim))},
                 factors=[glm.GLM(lik, X, y, on="w")]).fit(max_iter=500)


def main(argv=None):
    args = parse_args(__doc__, argv)
    rng = np.random.default_rng(4)
    n = 300 if args.quick else 2000
    X = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    exposure = rng.uniform(0.5, 5.0, size=n)
    true_w = np.array([0.3, 0.8, -0.5])
    counts = rng.poisson(exposure * np.exp(X @ true_w))
    poisson = _fit(likelihoods.Poisson(exposure=exposure), X, counts, 1.0)
    q = poisson.posterior["w"]
    print(f"Poisson regression ({poisson.n_iter} iterations):")
    for name, t, m, s in zip(["intercept", "x1", "x2"], true_w, q.mean, np.sqrt(np.diag(q.cov))):
        print(f"  {name:<9s} true {t:+.2f}  posterior {m:+.3f} ± {s:.3f}")

    m = 60 if args.quick else 200
    x = rng.uniform(0, 10, size=m)
    y = 1.0 + 0.5 * x + 0.5 * rng.normal(size=m)
    outliers = rng.choice(m, size=m // 10, replace=False)
    y[outliers] += rng.uniform(8, 15, size=outliers.size)
    design = np.column_stack([np.ones(m), x])
    gauss = _fit(likelihoods.Gaussian(variance=0.25), design, y, 100.0)
    student = _fit(likelihoods.StudentT(df=3.0, scale=0.5), design, y, 100.0)
    print("robust regression (truth: intercept 1.0, slope 0.5):")
    for name, fit in (("Gaussian", gauss), ("Student-t", student)):
        w = fit.posterior["w"].mean
        print(f"  {name:<9s} intercept {w[0]:+.3f}, slope {w[1]:+.3f}, {fit.n_iter} iterations, "
              f"{fit.n_backoffs} step back-offs")
    negative = int(np.sum(student.sites[0].precision < 0))
    print(f"  Student-t sites with negative precision: {negative} (the posterior stays valid: "
          f"eigenvalues {np.round(np.linalg.eigvalsh(student.posterior['w'].cov), 5)})")

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    axes[0].errorbar(range(3), q.mean, yerr=2 * np.sqrt(np.diag(q.cov)), fmt="o", label="posterior ± 2 sd")
    axes[0].plot(range(3), true_w, "kx", label="truth")
    axes[0].set(xticks=range(3), xticklabels=["intercept", "x1", "x2"], title="Poisson regression")
    axes[0].legend()
    axes[1].scatter(x, y, s=10, c=np.isin(np.arange(m), outliers), cmap="coolwarm")
    grid = np.linspace(0, 10, 50)
    for name, fit, style in (("Gaussian", gauss, "C0-"), ("Student-t", student, "C3-")):
        w = fit.posterior["w"].mean
        axes[1].plot(grid, w[0] + w[1] * grid, style, label=name)
    axes[1].set(xlabel="x", ylabel="y", title="robust regression")
    axes[1].legend()
    save_figure(fig, args.output, "poisson_and_robust_regression.png")
    return poisson, gauss, student


if __name__ == "__main__":
    main()
