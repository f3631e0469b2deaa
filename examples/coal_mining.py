"""British coal-mining disasters, 1851-1962: the accident rate as a Poisson Markov GP.

The yearly counts (112 years, 191 disasters; Jarrett 1979) are modelled as
``y_t ~ Poisson(exp(f(t)))`` with a Matern-3/2 GP prior on the log rate
``f``, in state-space form (``lds.MarkovGP``): each CVI iteration is one
Kalman filter and smoother pass over the sites.  The kernel's lengthscale and
variance are learned by maximising the ELBO (alternating with the site
updates), and ten years with no data (NaN) after 1962 are forecast.

The plot shows the counts and the posterior of the rate ``exp(f)``: its mean
``exp(m + v/2)`` and the 90% band ``exp(m +- 1.645 sqrt(v))`` (lognormal
quantiles).  The full run also fits the same model as a dense GP and checks
that the answers agree; ``--quick`` skips that check.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from _common import parse_args, save_figure
from efvi import plot
from efvi.inference import Model
from efvi.models import Observe, gp, lds, likelihoods

FIRST_YEAR = 1851
COUNTS = np.array([
    4, 5, 4, 1, 0, 4, 3, 4, 0, 6, 3, 3, 4, 0, 2, 6, 3, 3, 5, 4, 5, 3, 1, 4, 4, 1, 5, 5, 3, 4,
    2, 5, 2, 2, 3, 4, 2, 1, 3, 2, 2, 1, 1, 1, 1, 3, 0, 0, 1, 0, 1, 1, 0, 0, 3, 1, 0, 3, 2, 2,
    0, 1, 1, 1, 0, 1, 0, 1, 0, 0, 0, 2, 1, 0, 0, 0, 1, 1, 0, 2, 3, 3, 1, 1, 2, 1, 1, 1, 1, 2,
    4, 2, 0, 0, 0, 1, 4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 1,
], dtype=float)
FORECAST_YEARS = 10
Z90 = 1.6448536269514722


def main(argv=None):
    args = parse_args(__doc__, argv)
    assert COUNTS.shape == (112,) and COUNTS.sum() == 191
    years = FIRST_YEAR + np.arange(COUNTS.shape[0] + FORECAST_YEARS, dtype=float)
    y = np.concatenate([COUNTS, np.full(FORECAST_YEARS, np.nan)])

    start = gp.kernels.Matern32(lengthscale=5.0, variance=1.0)
    block = lds.MarkovGP(start, years, learn_hyperparameters=True)
    model = Model({"f": block}, [Observe(likelihoods.Poisson(), y, on="f")])
    fit = model.fit()
    fixed = Model({"f": lds.MarkovGP(start, years)}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()

    q = fit.posterior["f"]
    learned = fit.hyperparameters["f"]
    lengthscale, variance = learned["lengthscale"], learned["variance"]
    rate_mean = np.exp(q.mean + q.var / 2)
    lower, upper = np.exp(q.mean - Z90 * np.sqrt(q.var)), np.exp(q.mean + Z90 * np.sqrt(q.var))
    print(f"{COUNTS.shape[0]} years, {int(COUNTS.sum())} disasters")
    print(f"learned Matern-3/2: lengthscale {lengthscale:.2f} years, variance {variance:.3f}")
    print(f"ELBO {fit.elbo:.3f} (start hyperparameters: {fixed.elbo:.3f}); {fit.n_iter} iterations, "
          f"converged {fit.converged}, {fit.timings['total']:.2f} s")
    for year in (1851, 1890, 1962, years[-1]):
        i = int(year - FIRST_YEAR)
        print(f"  rate in {int(year)}: {rate_mean[i]:.2f} per year, 90% band [{lower[i]:.2f}, {upper[i]:.2f}]")
    observed = slice(0, COUNTS.shape[0])
    drop = years[observed][np.argmin(np.gradient(q.mean[observed]))]
    print(f"  steepest fall of the log rate: {int(drop)}")
    if not args.quick:  # the same model as a dense GP (O(T^3)): the same answer
        dense_block = gp.GP(start, years, learn_hyperparameters=True)
        dense = Model({"f": dense_block}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()
        print(f"dense GP check: lengthscale {dense.hyperparameters['f']['lengthscale']:.4f}, ELBO {dense.elbo:.6f} "
              f"(Markov GP {fit.elbo:.6f}), max |mean difference| "
              f"{np.max(np.abs(dense.posterior['f'].mean - q.mean)):.1e}")

    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.bar(years[observed], COUNTS, color="0.75", width=0.8, label="disasters per year")
    plot.bands(fit, x=years, k=Z90, transform=np.exp, ax=ax)
    ax.plot(years, rate_mean, color="C0", linestyle="--", label="posterior mean rate exp(m + v/2)")
    ax.axvspan(years[COUNTS.shape[0]] - 0.5, years[-1] + 0.5, color="C1", alpha=0.1, label="forecast (no data)")
    ax.set(xlabel="year", ylabel="disasters",
           title=f"Coal-mining disasters: Poisson Markov GP (Matern-3/2, lengthscale {lengthscale:.1f} y)")
    ax.legend(loc="upper right", fontsize=8)
    save_figure(fig, args.output, "coal_mining.png")
    return fit


if __name__ == "__main__":
    main()
