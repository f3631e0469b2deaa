"""The Nile's annual flow, 1871-1970, with a local-level model: Gaussian versus Student-t noise.

The local-level model is the LDS ``level_t = level_{t-1} + N(0, sigma_eta^2)``
observed as ``flow_t = level_t + noise`` (``lds.LDS`` with ``A = H = 1``),
with the maximum-likelihood variances of Durbin and Koopman (2012):
``sigma_eta^2 = 1469.1``, ``sigma_eps^2 = 15099``, and the initial level
``N(flow_1871, sigma_eps^2)``.  With Gaussian noise one
CVI step is the exact Kalman smoother.  Student-t noise (4 degrees of freedom,
same variance) is not conjugate: its sites can have negative precision, and
the fit backs off any step that would make the posterior invalid.

Three artificial outliers (recording errors) are added to show robustness:
the script reports how far each model's smoothed level moves when they are
added, and plots both fits on the contaminated data.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import statsmodels.api as sm

from _common import parse_args, save_figure
from efvi import plot
from efvi.inference import Model
from efvi.models import Observe, lds, likelihoods

LEVEL_VAR, NOISE_VAR = 1469.1, 15099.0
DF = 4.0
OUTLIERS = {1880: 2200.0, 1925: 1700.0, 1950: 250.0}   # year -> recorded flow
Z90 = 1.6448536269514722


def local_level_fit(flow, likelihood):
    """Fit the local-level model with the given observation likelihood; returns the FitResult."""
    block = lds.LDS(np.eye(1), np.array([[LEVEL_VAR]]), np.ones(1), np.array([flow[0]]),
                    np.array([[NOISE_VAR]]), n_steps=flow.shape[0])
    return Model({"level": block}, [Observe(likelihood, flow, on="level")]).fit()


def main(argv=None):
    args = parse_args(__doc__, argv)
    data = sm.datasets.nile.load_pandas().data
    years = data["year"].to_numpy(dtype=float)
    clean = data["volume"].to_numpy(dtype=float)
    flow = clean.copy()
    outlier_index = np.searchsorted(years, list(OUTLIERS))
    flow[outlier_index] = list(OUTLIERS.values())

    likelihood = {"Gaussian": likelihoods.Gaussian(variance=NOISE_VAR),
                  "Student-t": likelihoods.StudentT(df=DF, scale=np.sqrt(NOISE_VAR * (DF - 2) / DF))}
    print(f"Nile flow {int(years[0])}-{int(years[-1])}, {flow.shape[0]} years; outliers added in "
          + ", ".join(str(y) for y in OUTLIERS) + (" (--quick: same data, it is small)" if args.quick else ""))
    fits = {}
    for name, lik in likelihood.items():
        fit = local_level_fit(flow, lik)
        reference = local_level_fit(clean, lik)
        fits[name] = fit
        moved = np.max(np.abs(fit.posterior["level"].mean - reference.posterior["level"].mean))
        negative = int(np.sum(fit.sites[0].precision < 0))
        print(f"{name:>9}: ELBO {fit.elbo:9.3f}, {fit.n_iter:2d} iterations, {fit.n_backoffs} back-offs, "
              f"{negative} negative site precisions; outliers move the level by up to {moved:6.1f}")
    for year in (1880, 1899, 1925, 1950):
        i = int(np.searchsorted(years, year))
        row = ", ".join(f"{name} {fit.posterior['level'].mean[i]:7.1f}" for name, fit in fits.items())
        print(f"  smoothed level in {year} (flow {flow[i]:6.0f}): {row}")

    fig, ax = plt.subplots(figsize=(8, 3.6))
    kept = np.ones(years.shape[0], bool)
    kept[outlier_index] = False
    ax.plot(years[kept], flow[kept], ".", color="0.6", label="flow")
    ax.plot(years[outlier_index], flow[outlier_index], "x", color="k", ms=8, label="artificial outliers")
    for (name, fit), color in zip(fits.items(), ("C3", "C0")):
        plot.bands(fit, x=years, k=Z90, ax=ax, label=f"{name} level", color=color)
    ax.set(xlabel="year", ylabel="flow (10^8 m^3)", title="Nile: local-level model, Gaussian vs Student-t noise")
    ax.legend(fontsize=8, loc="upper right")
    save_figure(fig, args.output, "nile_student_t.png")
    return fits


if __name__ == "__main__":
    main()
