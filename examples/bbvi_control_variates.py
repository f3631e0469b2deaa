"""Black-box VI on Bayesian logistic regression: why score-function gradients need control variates.

A mean-field Gaussian posterior over the weights of a logistic regression
(breast cancer, four standardised features and an intercept; prior N(0, I)).
(a) The variance of the natural-gradient estimate at the optimum against the
number of samples, for the score function without a control variate, with
the leave-one-out baseline and with the optimal per-coordinate control
variate (Ranganath et al., 2014, Algorithms 1 and 2), and for the
reparameterisation gradient (Kingma and Welling, 2014).  (b) Black-box VI
with natural steps and each estimator against CVI (Khan and Lin, 2017) on the
same model: the exact ELBO gap (Gauss-Hermite expectations) against
iterations, with one step-size schedule for every estimator (the score
function without a control variate diverges at that schedule: efvi stops it
with a DivergenceError, and the script says at which iteration).
"""

import matplotlib

matplotlib.use("Agg")
import autograd.numpy as anp
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer

from _common import parse_args, save_figure
from efvi.expfam import DiagonalGaussian
from efvi.inference import DivergenceError, Model, bbvi
from efvi.models import glm, likelihoods

FEATURES = ["mean radius", "mean texture", "mean smoothness", "mean compactness"]
ESTIMATORS = {                       # label -> (estimator, control variate)
    "score, no control variate": ("score", "none"),
    "score, leave-one-out baseline": ("score", "loo"),
    "score, optimal control variate": ("score", "optimal"),
    "reparameterisation": ("reparam", None),
}
GAP = 0.1                            # nats: the ELBO gap whose first crossing is reported


def load():
    """Design matrix (intercept + standardised features) and labels."""
    data = load_breast_cancer()
    columns = [list(data.feature_names).index(name) for name in FEATURES]
    features = data.data[:, columns]
    features = (features - features.mean(0)) / features.std(0)
    return np.column_stack([np.ones(len(features)), features]), data.target.astype(float)


def main(argv=None):
    args = parse_args(__doc__, argv)
    X, y = load()
    dim = X.shape[1]
    prior = DiagonalGaussian.from_mean_var(np.zeros(dim), np.ones(dim))
    likelihood = likelihoods.BernoulliLogit()
    constant = -0.5 * dim * np.log(2 * np.pi)

    def log_joint(w):                                       # all draws at once: w has shape (S, D)
        logits = w @ X.T
        return (anp.sum(y * logits - anp.logaddexp(0.0, logits), axis=-1)
                - 0.5 * anp.sum(w ** 2, axis=-1) + constant)

    def expected_log_joint(q):                              # exact, for the ELBO gap
        mean, var = X @ q.mean, (X ** 2) @ q.var
        return (np.sum(likelihood.variational_expectations(mean, var, y)[0])
                - 0.5 * np.sum(q.mean ** 2 + q.var) + constant)

    cvi = Model({"w": prior}, [glm.GLM(likelihood, X, y, on="w")]).fit(tol=1e-12, init="prior")
    optimum = cvi.posterior["w"]

    # (a) variance of the natural-gradient estimate at the optimum against the number of samples
    sample_sizes = [3, 5, 10, 30, 100]
    replicates = 60 if args.quick else 400
    variance = {label: [] for label in ESTIMATORS}
    for label, (estimator, control_variate) in ESTIMATORS.items():
        for n_samples in sample_sizes:
            estimates = np.array([bbvi.gradient(log_joint, optimum, estimator=estimator,
                                                control_variate=control_variate, n_samples=n_samples,
                                                seed=1000 * n_samples + r, vectorized=True).natural["z"]
                                  for r in range(replicates)])
            variance[label].append(np.sum(np.var(estimates, axis=0, ddof=1)))
    at_ten = sample_sizes.index(10)
    none = variance["score, no control variate"][at_ten]
    print(f"(a) variance of the natural gradient at the optimum, 10 samples ({replicates} replicates):")
    for label in ESTIMATORS:
        print(f"    {label:32s} {variance[label][at_ten]:12.4g}   reduction x{none / variance[label][at_ten]:9.1f}")

    # (b) convergence against CVI
    n_iter = 300 if args.quick else 2000

    def schedule(t):
        return 0.2 / (1 + t / 50) ** 0.6

    gaps, diverged = {}, {}
    for label, (estimator, control_variate) in ESTIMATORS.items():
        try:
            fit = bbvi.fit(log_joint, prior, estimator=estimator, control_variate=control_variate, n_iter=n_iter,
                           n_samples=10, seed=0, learning_rate=schedule, vectorized=True,
                           expected_log_joint=expected_log_joint)
        except DivergenceError as error:                    # efvi stops a run that runs off, by name
            diverged[label] = error.step
            continue
        gaps[label] = cvi.elbo - fit.exact_elbo_trace
    gaps["CVI"] = cvi.elbo - cvi.elbo_trace                 # from the prior, as the others
    print(f"(b) iterations to an ELBO gap below {GAP} nats (natural steps, rho_t = 0.2 / (1 + t/50)^0.6, "
          f"10 samples; CVI: its own adaptive steps, exact expectations):")
    for label, step in diverged.items():
        print(f"    {label:32s} diverged: stopped at iteration {step} (DivergenceError)")
    for label, gap in gaps.items():
        reached = np.flatnonzero(gap < GAP)
        where = f"{reached[0]:6d}" if reached.size else f"not within {len(gap) - 1}"
        print(f"    {label:32s} {where}   final gap {gap[-1]:.3g} nats")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, values in variance.items():
        axes[0].plot(sample_sizes, values, "o-", label=label)
    axes[0].set(xscale="log", yscale="log", xlabel="samples per estimate",
                ylabel="trace of Var[natural gradient]", title="(a) gradient variance at the optimum")
    axes[0].legend(fontsize=8)
    for label, gap in gaps.items():
        style = "k-o" if label == "CVI" else "-"
        axes[1].plot(np.arange(len(gap)), np.maximum(gap, 1e-4), style, markersize=3, label=label)
    axes[1].axhline(GAP, color="grey", linestyle=":")
    axes[1].set(xscale="symlog", xlim=(0, n_iter), yscale="log", xlabel="iteration", ylabel="ELBO gap to the CVI optimum (nats)",
                title="(b) convergence, natural steps")
    axes[1].legend(fontsize=8)
    save_figure(fig, args.output, "bbvi_control_variates.png")
    return variance, gaps


if __name__ == "__main__":
    main()
