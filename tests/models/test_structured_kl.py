"""KL(q || p) and log Z of every structured block equal dense Gaussian computations and the site formula.

Each structure (dense GP, Markov GP, the GLM's dual route) returns the KL of its
posterior with the solver's result; the site formula ``sum_i E_q[log t_i] - log Z``
(:func:`efvi.models.sites.site_kl`) is the one expression they evaluate (the GP
solver in a cancellation-free form).  Checked here against
``KL(N(m, S) || N(m0, K))`` from dense matrices, with ``S = (K^-1 + Pi)^-1``.
"""

import numpy as np
import pytest

from efvi.expfam import Gaussian
from efvi.models import gp, lds
from efvi.models.glm.dual import DualWeights
from efvi.models.sites import site_kl


def _dense_kl(prior_mean, K, natural_mean, precision):
    """Posterior of the prior N(prior_mean, K) times sites (gamma, pi), its marginals and its KL to the prior."""
    K_inv = np.linalg.inv(K)
    S = np.linalg.inv(K_inv + np.diag(precision))
    m = S @ (K_inv @ prior_mean + natural_mean)
    n = K.shape[0]
    diff = m - prior_mean
    kl = 0.5 * (np.trace(K_inv @ S) + diff @ K_inv @ diff - n
                + np.linalg.slogdet(K)[1] - np.linalg.slogdet(S)[1])
    return m, np.diag(S), kl


def _dense_log_normaliser(prior_mean, K, natural_mean, precision):
    """log of the integral of N(f; prior_mean, K) prod_i exp(gamma_i f_i - pi_i f_i^2 / 2) df, from dense matrices."""
    def log_partition(eta1, precision_matrix):      # of exp(eta1^T f - f^T P f / 2)
        n = precision_matrix.shape[0]
        return (0.5 * eta1 @ np.linalg.solve(precision_matrix, eta1) - 0.5 * np.linalg.slogdet(precision_matrix)[1]
                + 0.5 * n * np.log(2 * np.pi))
    K_inv = np.linalg.inv(K)
    return (log_partition(K_inv @ prior_mean + natural_mean, K_inv + np.diag(precision))
            - log_partition(K_inv @ prior_mean, K_inv))


def _sites(n, rng, negative=False):
    precision = rng.uniform(0.1, 3.0, n)
    if negative:
        precision[::4] = -0.05       # a Student-t-like site: the posterior stays valid
    return rng.normal(size=n), precision


@pytest.mark.parametrize("negative", [False, True])
def test_gp_kl_is_the_dense_kl_and_the_site_formula(negative):
    rng = np.random.default_rng(0)
    X = np.sort(rng.uniform(0, 20, 25))[:, None]   # well-conditioned K: the dense reference inverts it
    block = gp.GP(gp.kernels.Matern52(lengthscale=1.3, variance=0.8), X, mean=0.4)
    gamma, pi = _sites(25, rng, negative)
    q = block.posterior((gamma, pi))
    m, v, kl = _dense_kl(np.full(25, 0.4), block._K, gamma, pi)
    np.testing.assert_allclose(q.mean, m, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(q.var, v, rtol=1e-9)
    assert block.kl(q) == pytest.approx(kl, rel=1e-9)
    assert site_kl(gamma, pi, q.mean, q.var, q.log_normaliser) == pytest.approx(kl, rel=1e-9)
    assert q.log_normaliser == pytest.approx(_dense_log_normaliser(np.full(25, 0.4), block._K, gamma, pi), rel=1e-9)


def test_markov_gp_kl_is_the_dense_kl_of_its_kernel():
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 10, 40))
    kernel = gp.kernels.Matern32(lengthscale=1.7, variance=1.2)
    block = lds.MarkovGP(kernel, t)
    gamma, pi = _sites(40, rng, negative=True)
    q = block.posterior((gamma, pi))
    m, v, kl = _dense_kl(np.zeros(40), kernel(t[:, None]), gamma, pi)
    np.testing.assert_allclose(q.mean, m, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(q.var, v, rtol=1e-8)
    assert block.kl(q) == pytest.approx(kl, rel=1e-8)
    assert q.log_normaliser == pytest.approx(_dense_log_normaliser(np.zeros(40), kernel(t[:, None]), gamma, pi),
                                             rel=1e-8)


def test_glm_dual_kl_is_the_dense_kl_of_the_weights():
    rng = np.random.default_rng(2)
    N, D = 12, 30
    X = rng.normal(size=(N, D))
    prior = Gaussian.from_mean_cov(rng.normal(size=D) * 0.1, np.diag(rng.uniform(0.5, 2.0, D)))
    block = DualWeights("w", prior, X)
    gamma, pi = _sites(N, rng)
    q = block.posterior((gamma, pi))
    # the weights' posterior: precision S0^-1 + X^T Pi X, natural mean S0^-1 m0 + X^T gamma
    precision = prior.precision + X.T @ (pi[:, None] * X)
    cov = np.linalg.inv(precision)
    mean = cov @ (prior.precision @ prior.mean + X.T @ gamma)
    dense = Gaussian.from_mean_cov(mean, cov)
    assert block.kl(q) == pytest.approx(float(dense.kl(prior)), rel=1e-9)
