"""The shared batched linear algebra, against numpy and exact rational arithmetic."""

from fractions import Fraction

import numpy as np
import pytest

from efvi.expfam import _linalg

from ._matrices import random_spd


def _exact_inverse(matrix):
    """Inverse of a float matrix in exact rational arithmetic (Gauss-Jordan), rounded at the end."""
    dim = matrix.shape[0]
    rows = [[Fraction(float(v)) for v in row] + [Fraction(int(i == j)) for j in range(dim)]
            for i, row in enumerate(matrix)]
    for col in range(dim):
        pivot = next(r for r in range(col, dim) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col]
        rows[col] = [v / head for v in rows[col]]
        for r in range(dim):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col])]
    return np.array([[float(v) for v in row[dim:]] for row in rows])


def test_is_pd_flags_each_matrix_of_a_stack():
    good, _ = random_spd(np.random.default_rng(60), 3, (4,), 2.0)
    stack = good.copy()
    stack[1, 0, 0] = -1.0
    stack[3, 2, 2] = np.nan
    np.testing.assert_array_equal(_linalg.is_pd(stack), [True, False, True, False])
    assert _linalg.is_pd(good).all()


def test_cholesky_names_the_argument_and_the_failing_index():
    stack, _ = random_spd(np.random.default_rng(61), 2, (3,), 1.0)
    stack[2] = [[1.0, 2.0], [2.0, 1.0]]
    with pytest.raises(ValueError, match=r"my_matrix.*\(2,\)"):
        _linalg.cholesky(stack, "my_matrix")


def test_solves_inverses_and_logdets_match_numpy():
    rng = np.random.default_rng(62)
    a, _ = random_spd(rng, 4, (2, 3), 3.0)
    b = rng.normal(size=(2, 3, 4))
    chol = _linalg.cholesky(a, "a")
    np.testing.assert_allclose(_linalg.pd_solve(a, chol, b), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-10)
    np.testing.assert_allclose(_linalg.pd_inverse(a, "a"), np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_linalg.logdet_from_cholesky(chol), np.linalg.slogdet(a)[1], rtol=1e-12)
    quad = np.einsum("...i,...ij,...j->...", b, np.linalg.inv(a), b)
    np.testing.assert_allclose(_linalg.quad_form_chol(chol, b), quad, rtol=1e-10)
    lower = _linalg.solve_triangular(chol, b[..., None])[..., 0]
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", chol, lower), b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("log10_condition", [6.0, 8.0])
def test_refined_inverse_error_is_set_by_the_extended_precision(log10_condition):
    """Refined inverses err by about ``u + cond * u_ext`` instead of ``cond * u`` (exact reference)."""
    rng = np.random.default_rng(63)
    bound = 4 * (np.finfo(float).eps + 10.0 ** log10_condition * np.finfo(np.longdouble).eps)
    for _ in range(5):
        a, _ = random_spd(rng, 4, (), log10_condition)
        exact = _exact_inverse(a)
        error = np.linalg.norm(_linalg.pd_inverse(a, "a") - exact) / np.linalg.norm(exact)
        assert error <= bound
