"""Conjugate count models by VMP: Poisson-Gamma rates and Binomial-Beta proportions.

1. Poisson-Gamma: yearly counts of 8 groups with different exposures share a
   Gamma prior; each group has its own rate (a batched Gamma block, one factor
   with ``group=``).  The posterior is exact after one step.
2. Binomial-Beta: successes out of trials for 6 groups (a batched Beta block).

Both print posterior means with 90% intervals and check the exact conjugate
answer; the plot shows the posterior densities.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

from _common import parse_args, save_figure
from efvi.expfam import Beta, Gamma
from efvi.inference import BinomialBeta, Model, PoissonGamma


def main(argv=None):
    args = parse_args(__doc__, argv)
    rng = np.random.default_rng(7)
    groups, per_group = 8, (5 if args.quick else 20)
    true_rates = rng.gamma(4.0, 0.5, size=groups)
    group = np.repeat(np.arange(groups), per_group)
    exposure = rng.uniform(0.5, 2.0, size=group.size)
    counts = rng.poisson(exposure * true_rates[group])
    fit = Model({"rate": Gamma(np.full(groups, 2.0), np.full(groups, 1.0))},
                [PoissonGamma(counts, on="rate", exposure=exposure, group=group)]).fit(step=1.0, max_iter=1, warn=False)
    q = fit.posterior["rate"]
    exact_shape = 2.0 + np.bincount(group, counts, groups)
    print("Poisson-Gamma rates: posterior mean [90% interval] (true)")
    for g in range(groups):
        lo, hi = stats.gamma.ppf([0.05, 0.95], q.shape[g], scale=1 / q.rate[g])
        print(f"  group {g}: {q.mean[g]:.3f} [{lo:.3f}, {hi:.3f}]  ({true_rates[g]:.3f})")
    print(f"  exact conjugate shapes recovered: {np.allclose(q.shape, exact_shape)}; "
          f"log evidence {fit.elbo:.4f}")

    trials = rng.integers(5, 40, size=6)
    p_true = rng.beta(2.0, 5.0, size=6)
    successes = rng.binomial(trials, p_true)
    beta_fit = Model({"p": Beta(np.ones(6), np.ones(6))},
                     [BinomialBeta(successes, on="p", trials=trials, group=np.arange(6))]).fit(
        step=1.0, max_iter=1, warn=False)
    qp = beta_fit.posterior["p"]
    print("Binomial-Beta proportions: posterior mean (successes/trials)")
    for g in range(6):
        print(f"  group {g}: {qp.mean[g]:.3f}  ({successes[g]}/{trials[g]})")

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    grid = np.linspace(0.01, 5, 400)
    for g in range(groups):
        axes[0].plot(grid, stats.gamma.pdf(grid, q.shape[g], scale=1 / q.rate[g]))
    axes[0].set(xlabel="rate", title="Poisson-Gamma posteriors")
    grid = np.linspace(0.001, 0.999, 400)
    for g in range(6):
        axes[1].plot(grid, np.exp(qp[g].logpdf(grid)))
    axes[1].set(xlabel="p", title="Binomial-Beta posteriors")
    save_figure(fig, args.output, "conjugate_counts.png")
    return fit, beta_fit


if __name__ == "__main__":
    main()
