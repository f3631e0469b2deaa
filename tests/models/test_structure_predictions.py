"""Every structure predicts at new inputs: checked against dense references.

* GLM weights (full, mean field, dual): ``x^T m`` and ``x^T S x`` from the dense covariance;
* Markov GP at new times: the dense GP with the same kernel and the same sites
  (``gp.GP`` predicts by ``k_*^T alpha`` and ``k_** - k_*^T W k_*``), for times
  before, between (also equal to data times) and after the data.
"""

import numpy as np
import pytest

import efvi
from efvi.models import gp, lds
from efvi.models.glm import predict_latent


def _weights_fit(N, D, family, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    y = (X @ rng.normal(size=D) + rng.logistic(size=N) > 0).astype(float)
    prior = (efvi.Gaussian.from_mean_cov(np.zeros(D), 2.0 * np.eye(D)) if family == "full"
             else efvi.DiagonalGaussian.from_mean_var(np.zeros(D), 2.0 * np.ones(D)))
    fit = efvi.Model({"w": prior}, [efvi.glm.GLM(efvi.likelihoods.Bernoulli(), X, y, on="w")]).fit(tol=1e-10)
    return fit.posterior["w"], rng.normal(size=(7, D))


@pytest.mark.parametrize("N, D, family", [(80, 5, "full"), (80, 5, "diagonal"), (10, 25, "full")])
def test_glm_predictions_equal_the_dense_covariance(N, D, family):
    q, X_new = _weights_fit(N, D, family)
    mean, var = predict_latent(q, X_new)
    cov = np.asarray(q.cov) if hasattr(q, "cov") else np.diag(q.var)
    np.testing.assert_allclose(mean, X_new @ np.asarray(q.mean), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, np.einsum("md,de,me->m", X_new, cov, X_new), rtol=1e-9)


def test_glm_predictions_name_bad_rows():
    q, X_new = _weights_fit(40, 3, "full")
    with pytest.raises(ValueError, match=r"X_new must have shape \(M, 3\)"):
        predict_latent(q, X_new[:, :2])
    with pytest.raises(ValueError, match="X_new"):
        predict_latent(q, np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="posterior must be a weight posterior"):
        predict_latent(np.zeros(3), X_new)


def test_markov_gp_predicts_at_new_times_like_the_dense_gp():
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0.0, 10.0, 40))
    counts = rng.poisson(np.exp(np.sin(t))).astype(float)
    counts[[3, 17]] = np.nan
    kernel = gp.kernels.Matern52(lengthscale=1.5, variance=1.3)
    lik = efvi.likelihoods.Poisson()
    fit = efvi.Model({"f": lds.MarkovGP(kernel, t)}, [efvi.Observe(lik, counts, on="f")]).fit(tol=1e-11)
    q = fit.posterior["f"]
    t_new = np.array([-2.0, 12.5, 4.2, t[5], 0.3, 9.99, 4.2])
    mean, var = q.predict(t_new)
    # the dense GP posterior from the same sites
    dense = gp.GP(kernel, t[:, None]).posterior((q.natural_mean, q.precision))
    ref_mean, ref_var = dense.predict(t_new[:, None])
    np.testing.assert_allclose(mean, ref_mean, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(var, ref_var, rtol=1e-8, atol=1e-9)
    # at a data time the prediction is that point's marginal
    assert mean[3] == pytest.approx(q.mean[5], rel=1e-10) and var[3] == pytest.approx(q.var[5], rel=1e-9)


def test_a_general_lds_says_it_has_no_new_inputs():
    block = lds.LDS(np.eye(1), 0.1 * np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=5)
    block.name = "x"
    q = block.posterior((np.zeros(5), np.ones(5)))
    with pytest.raises(ValueError, match="general LDS"):
        q.predict(np.array([1.0]))


def test_markov_gp_prediction_names_bad_times():
    block = lds.MarkovGP(gp.kernels.Matern12(lengthscale=1.0, variance=1.0), np.arange(5.0))
    q = block.posterior((np.zeros(5), np.ones(5)))
    with pytest.raises(ValueError, match="t_new"):
        q.predict(np.array([np.inf]))
    with pytest.raises(ValueError, match="t_new"):
        q.predict(np.ones((2, 2)))
