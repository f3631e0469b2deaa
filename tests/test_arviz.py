"""efvi.to_inference_data: ArviZ posterior groups hold the draws, with dims and coords named from the fit."""

import subprocess
import sys

import numpy as np
import pytest

import efvi
from efvi.inference import CategoricalDirichlet, Model, PoissonGamma
from efvi.models import glm

arviz = pytest.importorskip("arviz")


def _draw_means(data, name):
    return data.posterior[name].mean(dim=("chain", "draw")).values


def test_posterior_means_are_the_sample_means_of_each_block():
    counts = np.array([3.0, 5.0, 4.0, 6.0])
    fit = Model({"rate": efvi.Gamma(np.ones(2), np.ones(2))},
                [PoissonGamma(counts, on="rate", group=np.array([0, 0, 1, 1]))]).fit()
    data = efvi.to_inference_data(fit, n_samples=400, seed=7)
    assert isinstance(data, arviz.InferenceData)
    draws = fit.posterior["rate"].sample(np.random.default_rng(7), 400)
    assert data.posterior["rate"].shape == (1, 400, 2)
    assert data.posterior["rate"].dims == ("chain", "draw", "rate_dim_0")
    np.testing.assert_allclose(_draw_means(data, "rate"), draws.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(data.posterior["rate"].values[0], draws)
    assert data.attrs["inference_library"] == "efvi"


def test_a_glm_estimators_weights_are_named_by_its_features():
    pandas = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pandas.DataFrame(rng.normal(size=(50, 2)), columns=["age", "dose"])
    y = (frame["dose"] + 0.3 * rng.normal(size=50) > 0).astype(int)
    model = glm.BayesianLogisticRegression().fit(frame, y)
    data = efvi.to_inference_data(model, n_samples=300, seed=1)
    weights = data.posterior["w"]
    assert weights.dims == ("chain", "draw", "feature")
    expected = ["age", "dose"] if hasattr(model, "feature_names_in_") else ["x0", "x1"]
    assert list(weights.coords["feature"].values) == ["intercept"] + expected
    draws = model.posterior_.sample(np.random.default_rng(1), 300)
    np.testing.assert_allclose(_draw_means(data, "w"), draws.mean(axis=0), rtol=1e-12)


def test_coords_and_dims_given_by_the_caller_win():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(30), rng.normal(size=30)])
    y = X @ [0.5, -1.0] + 0.1 * rng.normal(size=30)
    fit = Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(2), np.eye(2)), "tau": efvi.Gamma(1.0, 1.0)},
                [glm.GLM(efvi.likelihoods.Gaussian(precision="tau"), X, y, on="w")]).fit()
    data = efvi.to_inference_data(fit, n_samples=50, coords={"term": ["bias", "slope"]}, dims={"w": ["term"]},
                                  blocks=["w"])
    assert list(data.posterior.data_vars) == ["w"]
    assert list(data.posterior["w"].coords["term"].values) == ["bias", "slope"]


def test_one_posterior_and_a_family_with_two_draw_parts():
    gamma = efvi.Gamma(2.0, 3.0)
    data = efvi.to_inference_data(gamma, n_samples=20, seed=3)
    np.testing.assert_allclose(data.posterior["gamma"].values[0], gamma.sample(np.random.default_rng(3), 20))

    data = efvi.to_inference_data({"theta": efvi.NormalWishart(np.zeros(2), 1.0, 4.0, np.eye(2))}, n_samples=30)
    assert data.posterior["theta_mu"].shape == (1, 30, 2)
    assert data.posterior["theta_precision"].shape == (1, 30, 2, 2)


def test_batched_categorical_blocks_keep_their_batch_axes():
    labels = np.array([0, 1, 1, 2, 2, 2])
    fit = Model({"p": efvi.Dirichlet(np.ones(3))}, [CategoricalDirichlet(on="p", labels=labels)]).fit()
    data = efvi.to_inference_data(fit, n_samples=10)
    assert data.posterior["p"].shape == (1, 10, 3)


def test_invalid_requests_are_named():
    fit = Model({"rate": efvi.Gamma(1.0, 1.0)}, [PoissonGamma(np.array([1.0, 2.0]), on="rate")]).fit()
    with pytest.raises(ValueError, match="blocks must name"):
        efvi.to_inference_data(fit, blocks=["nope"])
    with pytest.raises(ValueError, match="n_samples"):
        efvi.to_inference_data(fit, n_samples=0)
    with pytest.raises(ValueError, match="fit must be"):
        efvi.to_inference_data(3.0)
    loaded_gp = {"f": efvi.inference.Marginals(np.zeros(3), np.ones(3))}
    with pytest.raises(ValueError, match="cannot be sampled"):
        efvi.to_inference_data(loaded_gp)


def test_without_arviz_the_error_names_the_extra():
    code = ("import sys\nsys.modules['arviz'] = None\nimport efvi\n"
            "try:\n    efvi.to_inference_data(efvi.Gamma(1.0, 1.0))\n"
            "except ImportError as error:\n    print(error)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "pip install efvi[arviz]" in done.stdout


def _structured_fits():
    """A Poisson fit of each structured block on the same 30 times: Markov GP, dense GP, sparse GP."""
    from efvi.models import Observe, gp, lds, likelihoods

    rng = np.random.default_rng(0)
    t = np.sort(rng.uniform(0.0, 10.0, 30))
    y = rng.poisson(np.exp(np.sin(t))).astype(float)
    kernel = gp.kernels.Matern32(lengthscale=1.5)
    blocks = {"markov_gp": (lds.MarkovGP(kernel, t), np.array([2.5, 11.0])),
              "gp": (gp.GP(kernel, t[:, None]), np.array([[2.5], [11.0]])),
              "sparse_gp": (gp.SparseGP(kernel, t[:, None], t[::3, None]), np.array([[2.5], [11.0]]))}
    return {kind: (Model({"f": block}, [Observe(likelihoods.Poisson(), y, on="f")]).fit(), new)
            for kind, (block, new) in blocks.items()}


@pytest.fixture(scope="module")
def structured_fits():
    return _structured_fits()


@pytest.mark.parametrize("kind", ["markov_gp", "gp", "sparse_gp"])
def test_structured_fits_export_joint_draws_at_their_inputs_and_new_ones(kind, structured_fits, tmp_path):
    fit, new = structured_fits[kind]
    posterior = fit.posterior["f"]
    data = efvi.to_inference_data(fit, n_samples=200, seed=4)
    assert data.posterior["f"].shape == (1, 200, 30)
    np.testing.assert_array_equal(data.posterior["f"].values[0], posterior.sample(np.random.default_rng(4), 200))

    data = efvi.to_inference_data(fit, n_samples=200, seed=4, inputs=new)
    own, at_new = posterior.sample_joint(np.random.default_rng(4), 200, new)
    np.testing.assert_array_equal(data.posterior["f"].values[0], own)
    np.testing.assert_array_equal(data.posterior["f_new"].values[0], at_new)
    assert data.posterior["f_new"].shape == (1, 200, 2)

    path = tmp_path / "draws.nc"
    data.to_netcdf(str(path))
    back = arviz.from_netcdf(str(path))
    for name in ("f", "f_new"):
        np.testing.assert_array_equal(back.posterior[name].values, data.posterior[name].values)
    assert back.attrs["inference_library"] == "efvi"

    fit.save(tmp_path / "fit.npz")
    loaded = efvi.inference.FitResult.load(tmp_path / "fit.npz")
    again = efvi.to_inference_data(loaded, n_samples=200, seed=4, inputs={"f": new})
    np.testing.assert_allclose(again.posterior["f_new"].values, data.posterior["f_new"].values, rtol=1e-6,
                               atol=1e-8)


def test_a_markov_gp_regressor_exports_its_latent_function():
    from efvi.models.lds import MarkovGPRegressor

    t = np.linspace(0.0, 5.0, 25)
    model = MarkovGPRegressor().fit(t[:, None], np.sin(t) + 0.1 * np.random.default_rng(1).normal(size=25))
    data = efvi.to_inference_data(model, n_samples=50)
    assert data.posterior["f"].shape == (1, 50, 25)


def test_new_inputs_must_name_a_block_that_draws_at_them(structured_fits):
    fit, new = structured_fits["gp"]
    with pytest.raises(ValueError, match="inputs must name blocks that draw at new inputs"):
        efvi.to_inference_data(fit, inputs={"g": new})
    rate = Model({"rate": efvi.Gamma(1.0, 1.0)}, [PoissonGamma(np.array([1.0, 2.0]), on="rate")]).fit()
    with pytest.raises(ValueError, match=r"inputs must be a dict .* hold 0"):
        efvi.to_inference_data(rate, inputs=new)
    with pytest.raises(ValueError, match="inputs"):
        efvi.to_inference_data(fit, inputs=np.ones((2, 3)))
