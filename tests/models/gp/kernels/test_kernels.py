"""The compiled kernels of ``_kernels.py`` against slow numpy references."""

import numpy as np
import pytest

from efvi.models.gp.kernels import _kernels


@pytest.mark.parametrize("dim", [1, 4])
def test_sqdist_against_broadcast_differences(dim):
    rng = np.random.default_rng(dim)
    a, b = rng.normal(size=(13, dim)), rng.normal(size=(6, dim))
    expected = np.array([[np.sum((x - y) ** 2) for y in b] for x in a])
    np.testing.assert_allclose(_kernels._sqdist(a, b), expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("d", [1, 2, 5])
def test_congruence_and_its_vector_jacobian_products(d):
    rng = np.random.default_rng(d)
    A, G = rng.normal(size=(7, d, d)), rng.normal(size=(7, d, d))
    root = rng.normal(size=(d, d))
    P = root @ root.T
    out, noise = np.empty((7, d, d)), np.empty((7, d, d))
    _kernels.congruence_into(A, P, out, False, (0,) * d)
    np.testing.assert_allclose(out, np.einsum("tij,jk,tlk->til", A, P, A), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(out, np.swapaxes(out, 1, 2))
    # the process-noise form P - A P A^T: the same sums subtracted from P
    _kernels.congruence_into(A, P, noise, True, (0,) * d)
    np.testing.assert_array_equal(noise, P - out)
    # <G, A P A^T> is linear in P and quadratic in A: its gradients in closed form
    np.testing.assert_allclose(
        _kernels._congruence_vjp_a(G, A, P),
        np.einsum("tij,tjk,kl->til", G + np.swapaxes(G, 1, 2), A, P),
        rtol=1e-13,
        atol=1e-13,
    )
    np.testing.assert_allclose(
        _kernels._congruence_vjp_p(G, A), np.einsum("tji,tjk,tkl->il", A, G, A), rtol=1e-13, atol=1e-13
    )
