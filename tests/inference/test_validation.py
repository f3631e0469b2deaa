"""Bad input raises errors that name the argument."""

import numpy as np
import pytest

from efvi.expfam import Gamma, Gaussian
from efvi.inference import Model, PoissonGamma
from efvi.models import glm, likelihoods


def _glm(X=None, y=None, on="w"):
    X = np.ones((4, 2)) if X is None else X
    y = np.array([0.0, 1.0, 1.0, 0.0]) if y is None else y
    return glm.GLM(likelihoods.BernoulliLogit(), X, y, on=on)


def _prior(dim=2):
    return Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))


def test_unknown_block_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"on='v'.*known blocks: 'w'"):
        Model(latents={"w": _prior()}, factors=[_glm(on="v")])


def test_unsupported_family_pairing():
    with pytest.raises(ValueError, match="Gaussian or DiagonalGaussian block"):
        Model(latents={"w": Gamma(1.0, 1.0)}, factors=[_glm()])
    with pytest.raises(ValueError, match="Gamma block"):
        Model(latents={"rate": _prior()}, factors=[PoissonGamma([1, 2], on="rate")])


def test_data_of_the_wrong_shape():
    with pytest.raises(ValueError, match="dimension 2"):
        Model(latents={"w": _prior(3)}, factors=[_glm()])
    with pytest.raises(ValueError, match="y must have one entry per row of X"):
        _glm(y=np.zeros(3))
    with pytest.raises(ValueError, match="X must have shape"):
        _glm(X=np.ones((2, 2, 2)))


def test_nan_in_design_matrix_and_prior_parameters():
    X = np.ones((4, 2))
    X[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"X must be finite"):
        _glm(X=X)
    with pytest.raises(ValueError, match="mean"):
        Gaussian.from_mean_cov(np.array([np.nan, 0.0]), np.eye(2))
    with pytest.raises(ValueError, match="shape"):
        Gamma(np.inf, 1.0)


def test_labels_outside_the_support():
    with pytest.raises(ValueError, match="y"):
        _glm(y=np.array([0.0, 2.0, 1.0, 0.0]))
    with pytest.raises(ValueError, match="counts"):
        PoissonGamma([1, -2], on="rate")
    with pytest.raises(ValueError, match="counts"):
        PoissonGamma([1.5, 2], on="rate")


@pytest.mark.parametrize("options, name", [
    (dict(step=2.0), "rho"), (dict(step="fast"), "step"), (dict(tol=-1.0), "tol"),
    (dict(max_iter=-1), "max_iter"), (dict(max_iter=2.5), "max_iter"), (dict(batch_size=0), "batch_size"),
    (dict(batch_size=2, minibatch="some"), "minibatch"), (dict(seed=-1), "seed"),
    (dict(callback=3), "callback"), (dict(init="previous"), "init"),
])
def test_invalid_fit_options(options, name):
    model = Model(latents={"w": _prior()}, factors=[_glm()])
    with pytest.raises(ValueError, match=name):
        model.fit(**options)


def test_model_arguments():
    with pytest.raises(ValueError, match="latents"):
        Model(latents=[], factors=[_glm()])
    with pytest.raises(ValueError, match="factors"):
        Model(latents={"w": _prior()}, factors=[])
    with pytest.raises(ValueError, match=r"factors\[0\]"):
        Model(latents={"w": _prior()}, factors=["not a factor"])


@pytest.mark.parametrize("options, name", [
    (dict(batch_size="a"), "batch_size"), (dict(batch_size=2.5), "batch_size"),
    (dict(batch_size=np.nan), "batch_size"), (dict(batch_size=np.inf), "batch_size"),
    (dict(batch_size=True), "batch_size"), (dict(max_iter="a"), "max_iter"), (dict(tol="a"), "tol"),
    (dict(tol=np.nan), "tol"),
])
def test_non_numeric_fit_options_raise_named_errors(options, name):
    model = Model(latents={"w": _prior()}, factors=[_glm()])
    with pytest.raises(ValueError, match=rf"^{name} must be .*; got "):
        model.fit(**options)


@pytest.mark.parametrize("exposure, shape", [(np.ones(3), r"\(3,\)"), (np.ones((2, 1)), r"\(2, 1\)")])
def test_poisson_gamma_exposure_of_the_wrong_shape(exposure, shape):
    with pytest.raises(ValueError, match=rf"exposure must be a scalar or have shape \(2,\).*got shape {shape}"):
        PoissonGamma([1, 2], on="rate", exposure=exposure)
