"""Kernel matrices against a double-loop reference and scikit-learn; PSD; shapes; distances."""

import numpy as np
import pytest
from sklearn.gaussian_process import kernels as sk

from efvi.models.gp import kernels
from efvi.models.gp.kernels import _distance

from ._helpers import all_kernels, reference_matrix

DIMS = (1, 3)


def _inputs(dim, n, seed):
    return np.random.default_rng(seed).normal(size=(n, dim))


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("name", list(all_kernels(1)))
def test_matrix_matches_double_loop(name, dim):
    kernel = all_kernels(dim)[name]
    X, X2 = _inputs(dim, 12, 0), _inputs(dim, 7, 1)
    np.testing.assert_allclose(kernel(X), reference_matrix(kernel, X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel(X, X2), reference_matrix(kernel, X, X2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel.diag(X), np.diag(reference_matrix(kernel, X)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(all_kernels(1)))
def test_symmetric_exactly_and_psd(name):
    kernel = all_kernels(3)[name]
    X = _inputs(3, 60, 2)
    K = kernel(X)
    assert K.shape == (60, 60) and K.dtype == np.float64
    np.testing.assert_array_equal(K, K.T)
    scale = np.abs(np.diag(K)).max()
    assert np.linalg.eigvalsh(K).min() >= -1e-10 * scale


def _sklearn_pairs():
    rng = np.random.default_rng(5)
    ard = rng.uniform(0.5, 2.0, size=3)
    return [
        (kernels.RBF(lengthscale=0.9, variance=1.7), sk.ConstantKernel(1.7) * sk.RBF(length_scale=0.9)),
        (kernels.RBF(lengthscale=ard), sk.RBF(length_scale=ard)),
        (kernels.Matern12(lengthscale=ard, variance=0.8), sk.ConstantKernel(0.8) * sk.Matern(ard, nu=0.5)),
        (kernels.Matern32(lengthscale=1.3), sk.Matern(length_scale=1.3, nu=1.5)),
        (kernels.Matern52(lengthscale=ard, variance=2.2), sk.ConstantKernel(2.2) * sk.Matern(ard, nu=2.5)),
        (
            kernels.Periodic(period=1.9, lengthscale=0.8, variance=1.2),
            sk.ConstantKernel(1.2) * sk.ExpSineSquared(length_scale=0.8, periodicity=1.9),
        ),
        (kernels.Linear(variance=1.0, offset=0.09), sk.DotProduct(sigma_0=0.3)),
        (kernels.Linear(variance=0.5, offset=0.3), sk.ConstantKernel(0.5) * sk.DotProduct(sigma_0=np.sqrt(0.6))),
        (kernels.White(variance=0.25), sk.WhiteKernel(noise_level=0.25)),
        (kernels.Constant(variance=0.4), sk.ConstantKernel(0.4)),
        (
            kernels.Matern32(lengthscale=0.6) + kernels.RBF(lengthscale=2.0) * kernels.Constant(0.3),
            sk.Matern(0.6, nu=1.5) + sk.RBF(2.0) * sk.ConstantKernel(0.3),
        ),
    ]


@pytest.mark.parametrize("ours, theirs", _sklearn_pairs(), ids=lambda k: repr(k)[:30])
def test_matches_sklearn(ours, theirs):
    # ExpSineSquared uses the Euclidean distance, which is a valid kernel (and
    # equal to our per-dimension Periodic) only for one-dimensional inputs
    dim = 1 if isinstance(ours, kernels.Periodic) else 3
    X, X2 = _inputs(dim, 25, 3), _inputs(dim, 9, 4)
    np.testing.assert_allclose(ours(X), theirs(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours(X, X2), theirs(X, X2), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours.diag(X), theirs.diag(X), rtol=1e-12, atol=1e-14)


def test_one_dimensional_inputs_are_columns():
    kernel = kernels.Matern32(lengthscale=0.5)
    t, s = np.linspace(0.0, 3.0, 8), np.array([0.25, 4.0])
    np.testing.assert_array_equal(kernel(t, s), kernel(t[:, None], s[:, None]))
    assert kernel(t).shape == (8, 8) and kernel.diag(t).shape == (8,)


def test_empty_inputs_give_empty_matrices():
    kernel = kernels.RBF() + kernels.White()
    assert kernel(np.zeros((0, 2))).shape == (0, 0)
    assert kernel(np.zeros((3, 2)), np.zeros((0, 2))).shape == (3, 0)


@pytest.mark.parametrize("dim", [2, _distance._NUMBA_MAX_DIM + 5])
def test_sqdist_matches_differences(dim):
    # the numba path (small dim) and the BLAS path (large dim) against explicit differences
    a, b = _inputs(dim, 30, 6) + 50.0, _inputs(dim, 11, 7) + 50.0
    b[2] = a[5] + 1e-7  # a near-duplicate pair, where the BLAS expansion alone would cancel
    b[3] = a[8]
    expected = ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1)
    np.testing.assert_allclose(_distance.sqdist(a, b), expected, rtol=1e-12, atol=0)
    sym = _distance.sqdist(a)
    np.testing.assert_array_equal(sym, sym.T)
    np.testing.assert_array_equal(np.diag(sym), 0.0)
    assert sym.min() >= 0.0


def test_nearby_points_keep_relative_accuracy():
    # exact differences: a gap of 1e-9 at |t| = 1e3 is resolved, so Matern12 sees it
    t = np.array([1000.0, 1000.0 + 1e-9])
    kernel = kernels.Matern12(lengthscale=1.0)
    gap = np.diff(t)[0]
    np.testing.assert_allclose(1.0 - kernel(t)[0, 1], -np.expm1(-gap), rtol=1e-6)


def test_large_dimension_blas_path_matches_reference():
    kernel = kernels.Matern52(lengthscale=np.linspace(0.5, 3.0, 14))
    X, X2 = _inputs(14, 15, 8), _inputs(14, 6, 9)
    np.testing.assert_allclose(kernel(X), reference_matrix(kernel, X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kernel(X, X2), reference_matrix(kernel, X, X2), rtol=1e-12, atol=1e-14)


def _kernel_types(kernel):
    parts = getattr(kernel, "parts", ())
    return {type(kernel)}.union(*(_kernel_types(part) for part in parts))


def test_every_public_kernel_is_tested():
    public = {
        getattr(kernels, name)
        for name in kernels.__all__
        if isinstance(getattr(kernels, name), type) and issubclass(getattr(kernels, name), kernels.Kernel)
    }
    abstract = {kernels.Kernel, kernels.Stationary}
    covered = set().union(*(_kernel_types(k) for k in all_kernels(1).values()))
    assert public - abstract <= covered, f"kernels without matrix tests: {public - abstract - covered}"
