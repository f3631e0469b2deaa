"""A Bayesian Gaussian mixture by VMP on the iris petals, checked against scikit-learn.

Blocks: Dirichlet weights, Categorical assignments (one per flower),
Normal-Wishart components.  Factors: ``CategoricalDirichlet`` (the assignments'
prior) and ``GaussianMixture`` (the likelihood).  With the same priors and the
same initial responsibilities the fit equals scikit-learn's
``BayesianGaussianMixture``; the script prints both and plots the components.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris
from sklearn.mixture import BayesianGaussianMixture

from _common import parse_args, save_figure
from efvi.expfam import Categorical, Dirichlet, NormalWishart
from efvi.inference import CategoricalDirichlet, GaussianMixture, Model


class _StartFrom(BayesianGaussianMixture):
    """scikit-learn's estimator started from given responsibilities."""

    def __init__(self, resp=None, **kwargs):
        super().__init__(**kwargs)
        self.resp = resp

    def _initialize_parameters(self, X, random_state, **kwargs):
        self._initialize(X, self.resp)


def main(argv=None):
    args = parse_args(__doc__, argv)
    X = load_iris().data[:, 2:]
    if args.quick:
        X = X[::3]
    n, dim, k = len(X), X.shape[1], 4
    resp = np.random.default_rng(0).dirichlet(np.ones(k), size=n)
    mean0, cov0 = X.mean(0), np.cov(X.T)

    latents = {
        "weights": Dirichlet(np.full(k, 0.1)),
        "theta": NormalWishart(np.tile(mean0, (k, 1)), np.ones(k), np.full(k, dim + 1.0),
                               np.tile(np.linalg.inv(cov0), (k, 1, 1))),
        "z": Categorical(resp),
    }
    model = Model(latents, [CategoricalDirichlet(on="weights", assignments="z"),
                            GaussianMixture(X, assignments="z", components="theta")])
    fit = model.fit(max_iter=2000, tol=1e-12)
    weights = fit.posterior["weights"].concentration / fit.posterior["weights"].concentration.sum()

    sk = _StartFrom(resp=resp, n_components=k, weight_concentration_prior_type="dirichlet_distribution",
                    weight_concentration_prior=0.1, mean_precision_prior=1.0, mean_prior=mean0,
                    degrees_of_freedom_prior=dim + 1.0, covariance_prior=cov0, reg_covar=0.0,
                    tol=1e-12, max_iter=2000).fit(X)
    print(f"efvi VMP: ELBO {fit.elbo:.4f} after {fit.n_iter} iterations")
    print(f"mixing weights  efvi    {np.round(weights, 4)}")
    print(f"                sklearn {np.round(sk.weights_, 4)}")
    print(f"max |means difference| = {np.abs(fit.posterior['theta'].mean - sk.means_).max():.2e}")

    fig, ax = plt.subplots(figsize=(5, 4))
    labels = np.argmax(fit.posterior["z"].probs, axis=1)
    ax.scatter(X[:, 0], X[:, 1], c=labels, s=12, cmap="viridis")
    theta = fit.posterior["theta"]
    angles = np.linspace(0, 2 * np.pi, 100)
    for j in np.flatnonzero(weights > 0.01):
        cov = np.linalg.inv(theta.expected_precision[j])
        vals, vecs = np.linalg.eigh(cov)
        ellipse = theta.mean[j][:, None] + vecs @ (2 * np.sqrt(vals)[:, None] * np.array([np.cos(angles), np.sin(angles)]))
        ax.plot(*ellipse, "k-")
    ax.set(xlabel="petal length", ylabel="petal width", title="Bayesian GMM by VMP (2-sd ellipses)")
    save_figure(fig, args.output, "gaussian_mixture.png")
    return fit


if __name__ == "__main__":
    main()
