"""Quick start: Bayesian logistic regression on the breast-cancer data by CVI.

The data ship with scikit-learn (569 tumours, 30 features).  The weights get a
N(0, I) prior; efvi fits a full-covariance Gaussian posterior by
conjugate-computation VI: each data point keeps a 1-D Gaussian site, and the
posterior is Bayesian linear regression on those pseudo-observations.

Run:  python examples/quickstart.py
"""

import numpy as np
from sklearn.datasets import load_breast_cancer

from efvi.expfam import Gaussian
from efvi.inference import Model
from efvi.models import glm, likelihoods


def main(argv=None):
    data = load_breast_cancer()
    features = (data.data - data.data.mean(0)) / data.data.std(0)
    X = np.column_stack([np.ones(len(features)), features])
    y = data.target.astype(float)
    D = X.shape[1]

    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(D), np.eye(D))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    fit = model.fit()

    q = fit.posterior["w"]
    print(f"ELBO {fit.elbo:.6f} after {fit.n_iter} iterations "
          f"(converged: {fit.converged}, {fit.timings['total']:.3f} s)")
    sd = np.sqrt(np.diag(q.cov))
    order = np.argsort(-np.abs(q.mean[1:]))[:5]
    print("largest posterior effects (mean ± sd):")
    for j in order:
        print(f"  {data.feature_names[j]:<24s} {q.mean[j + 1]:+.3f} ± {sd[j + 1]:.3f}")
    p = 1 / (1 + np.exp(-(X @ q.mean)))
    print(f"training accuracy of the posterior mean: {np.mean((p > 0.5) == y):.3f}")
    sites = fit.sites[0]
    i = int(np.argmax(sites.precision))
    print(f"each data point keeps a 1-D Gaussian site; the most informative, point {i}, is a "
          f"pseudo-observation {sites.pseudo_obs[i]:+.3f} with precision {sites.precision[i]:.3f}")
    return fit


if __name__ == "__main__":
    main()
