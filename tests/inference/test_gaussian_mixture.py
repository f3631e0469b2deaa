"""The Bayesian Gaussian mixture by VMP matches scikit-learn's BayesianGaussianMixture."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from scipy.special import gammaln, multigammaln
from sklearn.mixture import BayesianGaussianMixture

from efvi.expfam import Categorical, Dirichlet, Gaussian, NormalWishart, Wishart
from efvi.inference import CategoricalDirichlet, GaussianMixture, Model

K, D = 3, 2


class _FixedInitBGM(BayesianGaussianMixture):
    """sklearn's estimator started from given responsibilities (its public inits are random)."""

    def __init__(self, resp_init=None, **kwargs):
        super().__init__(**kwargs)
        self.resp_init = resp_init

    def _initialize_parameters(self, X, random_state, **kwargs):
        self._initialize(X, self.resp_init)


def _data():
    rng = np.random.default_rng(3)
    centres = np.array([[0.0, 0.0], [4.0, 1.0], [-3.0, 3.0]])
    X = np.concatenate([rng.multivariate_normal(c, [[1.0, 0.3], [0.3, 0.6]], size=60) for c in centres])
    resp = rng.dirichlet(np.ones(K), size=len(X))
    return X, resp


PRIORS = dict(alpha0=0.7, beta0=0.8, df0=D + 1.5, mean0=np.array([0.2, 0.5]),
              cov_prior=np.array([[2.0, 0.2], [0.2, 1.5]]))


def _sklearn(X, resp, max_iter=5000, tol=1e-13):
    bgm = _FixedInitBGM(
        resp_init=resp, n_components=K, covariance_type="full",
        weight_concentration_prior_type="dirichlet_distribution",
        weight_concentration_prior=PRIORS["alpha0"], mean_precision_prior=PRIORS["beta0"],
        mean_prior=PRIORS["mean0"], degrees_of_freedom_prior=PRIORS["df0"],
        covariance_prior=PRIORS["cov_prior"], reg_covar=0.0, tol=tol, max_iter=max_iter, n_init=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return bgm.fit(X)


def _efvi(X, resp, max_iter=5000, tol=1e-15):
    scale0 = np.linalg.inv(PRIORS["cov_prior"])
    latents = {
        "weights": Dirichlet(np.full(K, PRIORS["alpha0"])),
        "theta": NormalWishart(np.tile(PRIORS["mean0"], (K, 1)), np.full(K, PRIORS["beta0"]),
                               np.full(K, PRIORS["df0"]), np.tile(scale0, (K, 1, 1))),
        "z": Categorical(resp),
    }
    factors = [CategoricalDirichlet(on="weights", assignments="z"),
               GaussianMixture(X, assignments="z", components="theta")]
    return Model(latents, factors).fit(max_iter=max_iter, tol=tol, warn=False)


@pytest.mark.parametrize("n_iter", [1, 7, 40])
def test_every_iteration_matches_sklearn(n_iter):
    """sklearn: an M-step from the initial responsibilities, then n_iter (E, M) pairs; efvi: n_iter + 1
    sweeps (weights, components, assignments).  The component posteriors are then the same."""
    X, resp = _data()
    bgm = _sklearn(X, resp, max_iter=n_iter, tol=0.0)
    fit = _efvi(X, resp, max_iter=n_iter + 1, tol=0.0)
    weights, theta = fit.posterior["weights"], fit.posterior["theta"]
    np.testing.assert_allclose(weights.concentration, bgm.weight_concentration_, rtol=1e-10)
    np.testing.assert_allclose(theta.mean, bgm.means_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(theta.beta, bgm.mean_precision_, rtol=1e-10)
    np.testing.assert_allclose(theta.df, bgm.degrees_of_freedom_, rtol=1e-10)
    np.testing.assert_allclose(theta.expected_precision, bgm.precisions_, rtol=1e-9)


def test_converged_fit_matches_sklearn_and_its_lower_bound():
    X, resp = _data()
    bgm = _sklearn(X, resp)
    fit = _efvi(X, resp)
    assert bgm.converged_ and fit.converged
    theta = fit.posterior["theta"]
    # both stop on an objective change of ~1e-13, which pins the parameters to ~sqrt(1e-13)
    np.testing.assert_allclose(theta.mean, bgm.means_, atol=1e-6)
    np.testing.assert_allclose(fit.posterior["weights"].concentration, bgm.weight_concentration_, rtol=1e-6)
    # sklearn drops constants that depend only on the priors and (N, D, K); add them back
    alpha0 = np.full(K, PRIORS["alpha0"])
    log_partition_dirichlet = np.sum(gammaln(alpha0)) - gammaln(alpha0.sum())
    scale0 = np.linalg.inv(PRIORS["cov_prior"])
    df0, beta0 = PRIORS["df0"], PRIORS["beta0"]
    log_partition_nw = (-0.5 * D * np.log(beta0) + 0.5 * df0 * np.linalg.slogdet(scale0)[1]
                        + 0.5 * df0 * D * np.log(2.0) + multigammaln(0.5 * df0, D))
    constant = (-K * log_partition_nw - log_partition_dirichlet - 0.5 * len(X) * D * np.log(2 * np.pi)
                + K * D * (D - 1) / 4 * np.log(np.pi))
    assert fit.elbo == pytest.approx(bgm.lower_bound_ + constant, abs=1e-6)


def test_vmp_elbo_never_decreases_and_mean_field_variant_runs():
    X, resp = _data()
    fit = _efvi(X, resp)
    assert np.all(np.diff(fit.elbo_trace) >= -1e-9 * np.abs(fit.elbo_trace[1:]))
    scale0 = np.linalg.inv(PRIORS["cov_prior"])
    latents = {
        "weights": Dirichlet(np.full(K, PRIORS["alpha0"])),
        "mu": Gaussian.from_mean_cov(np.tile(PRIORS["mean0"], (K, 1)), np.tile(4.0 * np.eye(D), (K, 1, 1))),
        "Lambda": Wishart(np.full(K, PRIORS["df0"]), np.tile(scale0, (K, 1, 1))),
        "z": Categorical(resp),
    }
    factors = [CategoricalDirichlet(on="weights", assignments="z"),
               GaussianMixture(X, assignments="z", means="mu", precisions="Lambda")]
    mf = Model(latents, factors).fit(max_iter=2000, tol=1e-12, warn=False)
    assert mf.converged
    assert np.all(np.diff(mf.elbo_trace) >= -1e-9 * np.abs(mf.elbo_trace[1:]))
    # the three clusters are recovered (up to label order)
    found = np.sort(mf.posterior["mu"].mean[:, 0])
    np.testing.assert_allclose(found, [-3.0, 0.0, 4.0], atol=0.4)
