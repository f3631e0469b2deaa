"""GP regression with a fixed kernel against scikit-learn's GaussianProcessRegressor(optimizer=None).

Run by hand:  OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_gp_regression  [--n 2000] [--rounds 7]

Both fit N noisy points of a sine with a Matern-3/2 kernel (variance 1,
lengthscale 1, noise variance 0.09), report the log marginal likelihood (efvi:
the ELBO, which is exact here) and predict means and variances at 500 new
inputs.  They are timed in turn, round after round; the ratio is taken round
by round.  The figures also say how far the two answers are apart.
"""

import argparse

import numpy as np
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern

from efvi import Model, Observe, gp, likelihoods

from ._common import interleaved_times, ratio_summary

NOISE = 0.09


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 10, size=(args.n, 1))
    y = np.sin(X[:, 0]) + np.sqrt(NOISE) * rng.normal(size=args.n)
    X_new = np.linspace(0, 10, 500)[:, None]
    kernel = gp.kernels.Matern32(lengthscale=1.0, variance=1.0)
    peer = GaussianProcessRegressor(ConstantKernel(1.0, "fixed") * Matern(1.0, "fixed", nu=1.5), alpha=NOISE,
                                    optimizer=None)
    results = {}

    def efvi():
        fit = Model({"f": gp.GP(kernel, X)}, [Observe(likelihoods.Gaussian(variance=NOISE), y, on="f")]).fit()
        results["efvi"] = (fit.elbo, *fit.posterior["f"].predict(X_new), fit.n_iter)

    def sklearn():
        peer.fit(X, y)
        mean, sd = peer.predict(X_new, return_std=True)
        results["sklearn"] = (peer.log_marginal_likelihood_value_, mean, sd ** 2)

    t = interleaved_times({"efvi": efvi, "sklearn": sklearn}, args.rounds)
    (elbo, mean, var, n_iter), (lml, peer_mean, peer_var) = results["efvi"], results["sklearn"]
    print(f"GP regression, N = {args.n}, 500 predictions, Matern-3/2 fixed; medians over {args.rounds} rounds")
    print(f"efvi (fit + ELBO + predictive, {n_iter} iteration): {np.median(t['efvi']):.3f} s")
    print(f"scikit-learn GaussianProcessRegressor(optimizer=None): {np.median(t['sklearn']):.3f} s")
    print(f"efvi / scikit-learn: {ratio_summary(t, 'efvi', 'sklearn')}")
    print(f"ELBO - log marginal likelihood {elbo - lml:.1e}; predictive means differ by at most "
          f"{np.abs(mean - peer_mean).max():.1e}, variances by {np.abs(var - peer_var).max():.1e}")


if __name__ == "__main__":
    main()
