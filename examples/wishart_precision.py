"""Unknown mean and precision matrix of the iris measurements: Gaussian-Wishart VMP.

``x_i ~ N(mu, Lambda^{-1})`` with a Gaussian block ``mu`` and a Wishart block
``Lambda`` (mean field).  VMP alternates the two conjugate updates; the script
prints the posterior correlation matrix next to the sample one and plots the
ELBO trace.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_iris

from _common import parse_args, save_figure
from efvi import plot
from efvi.expfam import Gaussian, Wishart
from efvi.inference import GaussianWishart, Model


def main(argv=None):
    args = parse_args(__doc__, argv)
    X = load_iris().data
    if args.quick:
        X = X[::5]
    dim = X.shape[1]
    model = Model({"mu": Gaussian.from_mean_cov(np.zeros(dim), 100.0 * np.eye(dim)),
                   "Lambda": Wishart(dim + 2.0, np.eye(dim) / (dim + 2.0))},
                  [GaussianWishart(X, precision="Lambda", mean="mu")])
    fit = model.fit(step=1.0, tol=1e-12)
    cov = np.linalg.inv(fit.posterior["Lambda"].mean)
    sd = np.sqrt(np.diag(cov))
    print(f"VMP: ELBO {fit.elbo:.4f} after {fit.n_iter} iterations")
    print("posterior mean of mu:", np.round(fit.posterior["mu"].mean, 3), " sample mean:", np.round(X.mean(0), 3))
    print("correlation from E[Lambda]^-1:\n", np.round(cov / np.outer(sd, sd), 3))
    print("sample correlation:\n", np.round(np.corrcoef(X.T), 3))
    fig, ax = plt.subplots(figsize=(4, 3))
    plot.elbo(fit, ax=ax).set_title("Gaussian-Wishart VMP")
    save_figure(fig, args.output, "wishart_precision.png")
    return fit


if __name__ == "__main__":
    main()
