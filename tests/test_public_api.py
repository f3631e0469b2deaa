"""The public surface the design documents works as written."""

import numpy as np

from efvi import expfam
from efvi.expfam import Bernoulli, DiagonalGaussian, Dirichlet, Gamma, Gaussian
from efvi.inference import Model
from efvi.models import Observe, glm, gp, lds, likelihoods


def test_design_section_6_walkthrough():
    rng = np.random.default_rng(0)
    assert expfam.get("gamma") is Gamma
    lam = Gamma(np.array([2.0, 3.0]), np.array([1.0, 0.5])).natural
    back = Gamma.mean_to_natural(Gamma.natural_to_mean(lam))
    np.testing.assert_allclose(back[0], lam[0], rtol=1e-12)
    q = Gaussian.from_natural(Gaussian.from_mean_cov(np.zeros(2), np.eye(2)).natural)
    q.natural, q.mean_params, q.logpdf(np.zeros(2)), q.sample(rng, 3), q.entropy()
    assert float(q.kl(Gaussian.from_mean_cov(np.ones(2), 2 * np.eye(2)))) > 0
    for family in (DiagonalGaussian, Dirichlet, Bernoulli):
        assert family.name in expfam.names()

    N, D = 50, 3
    X = rng.normal(size=(N, D))
    y = (rng.random(N) < 0.5).astype(float)
    model = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(D), np.eye(D))},
                  factors=[glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    fit = model.fit()
    assert fit.posterior["w"].mean.shape == (D,) and fit.posterior["w"].cov.shape == (D, D)
    assert fit.sites[0].precision.shape == (N,) and fit.sites[0].pseudo_obs.shape == (N,)
    assert fit.elbo_trace.ndim == 1 and fit.converged and fit.n_iter >= 1

    t = np.sort(rng.uniform(0, 10, size=N))
    for prior in (gp.GP(gp.kernels.Matern32(lengthscale=1.0, variance=1.0), t[:, None]),
                  lds.MarkovGP(gp.kernels.Matern32(lengthscale=1.0, variance=1.0), t)):
        fit = Model(latents={"f": prior}, factors=[Observe(likelihoods.BernoulliLogit(), y, on="f")]).fit()
        assert fit.posterior["f"].mean.shape == (N,) and np.all(fit.posterior["f"].var > 0)

    Xr = np.column_stack([np.ones(N), X])
    yr = Xr @ [1.0, 0.5, -0.5, 2.0] + 0.1 * rng.normal(size=N)
    fit = Model(latents={"w": Gaussian.from_mean_cov(np.zeros(D + 1), np.eye(D + 1)), "tau": Gamma(1.0, 1.0)},
                factors=[glm.GLM(likelihoods.Gaussian(precision="tau"), Xr, yr, on="w")]).fit()
    assert fit.converged and fit.posterior["tau"].mean > 10
