"""Quick start: Bayesian logistic regression on the breast-cancer data by CVI.

The data ship with scikit-learn (569 tumours, 30 features).  The weights get a
N(0, I) prior; efvi fits a full-covariance Gaussian posterior by
conjugate-computation VI: each data point keeps a 1-D Gaussian site, and the
posterior is Bayesian linear regression on those pseudo-observations.

The script fits all the data and prints the largest effects, then checks the
posterior predictive on held-out tumours by stratified cross-validation (10
folds; 3 with ``--quick``).  Its figure shows the largest effects with their
posterior uncertainty and the calibration of the held-out predictions.

Run:  python examples/quickstart.py        (add --quick for 3 folds instead of 10)
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold

from _common import parse_args, save_figure
from efvi import plot
from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods

N_EFFECTS = 10
"""How many of the largest posterior effects the figure shows."""


def fit_weights(X, y):
    """The CVI fit of Bayesian logistic regression with a N(0, I) prior on the weights."""
    D = X.shape[1]
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(D), np.eye(D))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    return model.fit()


def held_out_probabilities(X, y, n_folds):
    """P(y = 1) of every row under the posterior predictive of a fit that did not see it."""
    prob = np.empty(len(y))
    folds = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=0)
    for train, test in folds.split(X, y):
        mean, var = glm.predict_latent(fit_weights(X[train], y[train]).posterior["w"], X[test])
        prob[test] = likelihoods.BernoulliLogit().predict_mean_var(mean, var)[0]
    return prob


def main(argv=None):
    args = parse_args(__doc__, argv)
    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    y = data.target.astype(float)

    fit = fit_weights(X, y)
    q = fit.posterior["w"]
    print(f"ELBO {fit.elbo:.6f} after {fit.n_iter} iterations "
          f"(converged: {fit.converged}, {fit.timings['total']:.3f} s)")
    sd = np.sqrt(np.diag(q.cov))
    order = np.argsort(-np.abs(q.mean[1:]))[:N_EFFECTS]
    print("largest posterior effects (mean ± sd):")
    for j in order[:5]:
        print(f"  {data.feature_names[j]:<24s} {q.mean[j + 1]:+.3f} ± {sd[j + 1]:.3f}")
    p = 1 / (1 + np.exp(-(X @ q.mean)))
    print(f"training accuracy of the posterior mean: {np.mean((p > 0.5) == y):.3f}")
    sites = fit.sites[0]
    i = int(np.argmax(sites.precision))
    print(f"each data point keeps a 1-D Gaussian site; the most informative, point {i}, is a "
          f"pseudo-observation {sites.pseudo_obs[i]:+.3f} with precision {sites.precision[i]:.3f}")

    n_folds = 3 if args.quick else 10
    prob = np.clip(held_out_probabilities(X, y, n_folds), 1e-12, 1 - 1e-12)
    log_loss = -np.mean(y * np.log(prob) + (1 - y) * np.log1p(-prob))
    print(f"held out ({n_folds}-fold cross-validation): accuracy {np.mean((prob > 0.5) == y):.3f}, "
          f"log-loss {log_loss:.3f} nats per tumour")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1.3, 1]})
    rows = np.arange(len(order))[::-1]
    axes[0].errorbar(q.mean[order + 1], rows, xerr=2 * sd[order + 1], fmt="o", color="C0", capsize=3)
    axes[0].axvline(0.0, color="0.5", linestyle=":")
    axes[0].set_yticks(rows, [data.feature_names[j] for j in order])
    axes[0].set(xlabel="weight (standardised feature), posterior mean ± 2 sd",
                title=f"the {len(order)} largest effects on P(benign)")
    plot.calibration(y, prob, n_bins=5, ax=axes[1], label=f"{n_folds}-fold held out")
    axes[1].set_title("held-out posterior predictive")
    axes[1].legend(loc="upper left")
    fig.tight_layout()
    save_figure(fig, args.output, "quickstart.png")
    return fit


if __name__ == "__main__":
    main()
