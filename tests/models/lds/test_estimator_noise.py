"""MarkovGPRegressor learns its Gaussian noise: the truth within 20%, and EM's fixed point is the dense marginal
likelihood's maximum over the noise."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from efvi.models.gp.kernels import Matern32
from efvi.models.lds import MarkovGPRegressor


def _data(n=300, noise_sd=0.3, seed=0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 10.0, n))
    return t, 4.0 + np.sin(t) + noise_sd * rng.standard_normal(n)


def test_learned_noise_is_within_20_percent_of_the_truth():
    t, y = _data()
    model = MarkovGPRegressor().fit(t[:, None], y)          # defaults: noise starts at 1.0 (the truth is 0.09)
    assert model.noise_variance_ == pytest.approx(0.09, rel=0.2)
    assert model.n_noise_iter_ > 0
    fixed = MarkovGPRegressor(learn_noise=False).fit(t[:, None], y)
    assert fixed.noise_variance_ == 1.0 and fixed.n_noise_iter_ == 0


def test_em_noise_maximises_the_dense_marginal_likelihood_at_a_fixed_kernel():
    t, y = _data(n=120, seed=1)
    kernel = Matern32(lengthscale=1.5, variance=0.8)
    model = MarkovGPRegressor(kernel=kernel, learn_hyperparameters=False, noise_variance=0.5).fit(t[:, None], y)
    K, r = kernel(t[:, None]), y - y.mean()

    def negative_log_marginal(log_noise):                  # the dense route: -log N(r; 0, K + s I) up to a constant
        L = np.linalg.cholesky(K + np.exp(log_noise) * np.eye(len(t)))
        alpha = np.linalg.solve(L, r)
        return 0.5 * alpha @ alpha + np.log(np.diag(L)).sum()

    best = np.exp(minimize_scalar(negative_log_marginal, bounds=(-8.0, 2.0), method="bounded",
                                  options={"xatol": 1e-10}).x)
    # EM stops when a step moves the noise by < 1e-4 (relative); it converges linearly, so it sits
    # within ~1e-4 / (1 - rate) of the maximum: 1e-3 leaves room for a rate up to 0.9
    assert model.noise_variance_ == pytest.approx(best, rel=1e-3)
