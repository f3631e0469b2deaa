"""The compiled linear algebra of efvi.expfam._linalg_kernels against numpy references and exact arithmetic.

The reference for the refined solves and inverses is the numpy route they
replaced (LAPACK's triangular solves, one refinement step with the residual in
``numpy.longdouble``), written out here; exact rational inverses show that the
compensated residual is at least as accurate.
"""

import math
from fractions import Fraction

import numba
import numpy as np
import pytest

from efvi.expfam import _linalg
from efvi.expfam._kernels import compensated_add
from efvi.expfam._linalg_kernels import _fma

from ._matrices import random_spd
from .test_linalg import _exact_inverse


def _longdouble_refined(a, chol, b):
    """``A^-1 b`` by LAPACK's substitutions and one refinement step with a ``longdouble`` residual."""
    x = _linalg.cho_solve(chol, b)
    extended = np.longdouble
    residual = (b.astype(extended) - a.astype(extended) @ x.astype(extended)).astype(float)
    return x + _linalg.cho_solve(chol, residual)


@pytest.mark.parametrize("dim", [1, 2, 5, 11, 64])
def test_refined_solves_and_inverses_equal_the_longdouble_reference_when_well_conditioned(dim):
    """Condition 1e3 (both routes then round to within a few units of each other), a batch of three."""
    rng = np.random.default_rng(dim)
    a, _ = random_spd(rng, dim, (3,), 3.0)
    chol = np.linalg.cholesky(a)
    b = rng.standard_normal((3, dim))
    np.testing.assert_allclose(_linalg.pd_solve(a, chol, b),
                               _longdouble_refined(a, chol, b[..., None])[..., 0], rtol=1e-13, atol=1e-15)
    eye = np.broadcast_to(np.eye(dim), a.shape)
    reference = _linalg.symmetrise(_longdouble_refined(a, chol, eye))
    inverse = _linalg.pd_inverse_from_cholesky(a, chol)
    np.testing.assert_allclose(inverse, reference, rtol=1e-13, atol=1e-13 * np.abs(reference).max())
    np.testing.assert_array_equal(inverse, np.swapaxes(inverse, -1, -2))


def _exact_solve(matrix, vector):
    """``A^-1 b`` in exact rational arithmetic (Gauss-Jordan), rounded at the end."""
    dim = len(vector)
    rows = [[Fraction(float(v)) for v in row] + [Fraction(float(vector[i]))] for i, row in enumerate(matrix)]
    for col in range(dim):
        pivot = next(r for r in range(col, dim) if rows[r][col] != 0)
        rows[col], rows[pivot] = rows[pivot], rows[col]
        rows[col] = [v / rows[col][col] for v in rows[col]]
        for r in range(dim):
            if r != col and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col])]
    return np.array([float(row[dim]) for row in rows])


@pytest.mark.parametrize("log10_condition", [6.0, 8.0, 10.0])
def test_refined_solves_and_inverses_are_as_accurate_as_twice_the_working_precision(log10_condition):
    """Against exact rational solutions and inverses: error at most ``4 (u + (cond u)^2)`` (correctly rounded
    up to condition 1e8 on these), and never above the longdouble route's."""
    rng = np.random.default_rng(70)
    u = np.finfo(float).eps / 2
    bound = 4 * (u + (10.0 ** log10_condition * u) ** 2)
    for _ in range(5):
        a, _ = random_spd(rng, 5, (), log10_condition)
        chol = np.linalg.cholesky(a)
        exact = _exact_inverse(a)
        error = np.linalg.norm(_linalg.pd_inverse_from_cholesky(a, chol) - exact) / np.linalg.norm(exact)
        before = np.linalg.norm(_linalg.symmetrise(_longdouble_refined(a, chol, np.eye(5))) - exact)
        assert error <= bound and error <= max(before / np.linalg.norm(exact), 2 * u)
        b = rng.standard_normal(5)
        exact = _exact_solve(a, b)
        error = np.linalg.norm(_linalg.pd_solve(a, chol, b) - exact) / np.linalg.norm(exact)
        before = np.linalg.norm(_longdouble_refined(a, chol, b[:, None])[:, 0] - exact) / np.linalg.norm(exact)
        assert error <= bound and error <= max(before, 2 * u)


def test_solves_broadcast_batches_and_wide_matrices_skip_the_kernels():
    rng = np.random.default_rng(71)
    a, _ = random_spd(rng, 3, (4,), 2.0)
    chol = np.linalg.cholesky(a)
    b = rng.standard_normal((2, 4, 3))
    x = _linalg.pd_solve(a, chol, b)
    assert x.shape == (2, 4, 3)
    np.testing.assert_allclose(x[1, 2], _linalg.pd_solve(a[2], chol[2], b[1, 2]), rtol=1e-15)
    np.testing.assert_allclose(np.einsum("kij,nkj->nki", a, x), b, rtol=1e-12, atol=1e-12)
    assert _linalg.pd_solve(a[0], chol[0], b[:, 0]).shape == (2, 3)
    wide, _ = random_spd(rng, _linalg.REFINE_MAX_DIM + 1, (), 2.0)
    wide_chol = np.linalg.cholesky(wide)
    vector = rng.standard_normal(wide.shape[0])
    np.testing.assert_allclose(wide @ _linalg.pd_solve(wide, wide_chol, vector), vector, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_linalg.pd_inverse_from_cholesky(wide, wide_chol) @ wide, np.eye(len(wide)),
                               atol=1e-10)


def test_symmetric_cholesky_tests_validity_like_numpy_and_returns_its_factor():
    """Symmetric to 1e-10 of the largest entry and positive definite; NaN, inf, asymmetric and indefinite
    stacks give None; the factor is LAPACK's to rounding; wide matrices go to LAPACK."""
    rng = np.random.default_rng(72)
    for dim in (1, 2, 7, _linalg.REFINE_MAX_DIM + 1):
        a, _ = random_spd(rng, dim, (3,), 4.0)
        a = _linalg.symmetrise(a)
        np.testing.assert_allclose(_linalg.symmetric_cholesky(-0.5 * a, -2.0), np.linalg.cholesky(a),
                                   rtol=1e-12, atol=1e-12 * np.abs(a).max())
        nearly = a.copy()
        nearly[1, 0, -1] *= 1 + 1e-12
        assert _linalg.symmetric_cholesky(nearly) is not None
        for bad_value in (np.nan, np.inf, -1.0):
            bad = a.copy()
            bad[2, -1, -1] = bad_value
            assert _linalg.symmetric_cholesky(bad) is None
        if dim > 1:
            asymmetric = a.copy()
            asymmetric[0, 0, -1] += 1e-6 * np.abs(a).max()
            assert _linalg.symmetric_cholesky(asymmetric) is None
            assert np.all(_linalg.is_symmetric(nearly)) and not np.all(_linalg.is_symmetric(asymmetric))
    assert _linalg.symmetric_cholesky(np.zeros((0, 2, 2))).shape == (0, 2, 2)


@pytest.mark.parametrize("dim", [3, _linalg.REFINE_MAX_DIM + 1])
def test_quadratic_forms_on_every_route_equal_the_numpy_route(dim):
    """One matrix per point, points against every matrix of a batch (compiled, at any width), and a broadcast
    the kernel does not take (numpy), all equal ``|L^-1 x|^2`` from LAPACK."""
    rng = np.random.default_rng(73)
    a, _ = random_spd(rng, dim, (4,), 3.0)
    chol = np.linalg.cholesky(a)

    def reference(chol, x):
        batch = np.broadcast_shapes(x.shape[:-1], chol.shape[:-2])
        y = np.linalg.solve(np.broadcast_to(chol, batch + chol.shape[-2:]),
                            np.broadcast_to(x, batch + x.shape[-1:])[..., None])[..., 0]
        return (y * y).sum(axis=-1)

    for x in (rng.standard_normal((4, dim)), rng.standard_normal((5, 4, dim)), rng.standard_normal((2, 1, dim))):
        got = _linalg.quad_form_chol(chol, x)
        assert got.shape == np.broadcast_shapes(x.shape[:-1], (4,))
        np.testing.assert_allclose(got, reference(chol, x), rtol=1e-13)
    np.testing.assert_allclose(_linalg.quad_form_chol(chol[0], x[0, 0]), reference(chol[0], x[0, 0]), rtol=1e-13)


def test_compensated_sums_and_the_fused_multiply_add_are_exact():
    """``compensated_add`` sums to within ``u |s| + n u^2 sum |x|`` of the exact sum where numpy's sum loses
    digits to cancellation, and ``_fma(a, b, -a b)`` is the exact rounding error of the product."""
    @numba.njit
    def compensated(values):
        total, error = 0.0, 0.0
        for value in values:
            total, error = compensated_add(total, error, value)
        return total + error

    @numba.njit
    def product_error(a, b):
        return _fma(a, b, -(a * b))

    rng = np.random.default_rng(74)
    u = np.finfo(float).eps / 2
    for _ in range(20):
        small = rng.standard_normal(40)
        large = 10.0 ** rng.uniform(10, 16, 20)
        values = rng.permutation(np.concatenate([small, large, -large]))
        exact = math.fsum(values)
        bound = u * abs(exact) + len(values) * u * u * np.abs(values).sum()
        assert abs(compensated(values) - exact) <= bound < 1e-10 * abs(exact)
        assert abs(np.sum(values) - exact) > 1e3 * bound
    for a, b in rng.standard_normal((50, 2)) * 10.0 ** rng.uniform(-100, 100, (50, 2)):
        assert Fraction(product_error(a, b)) == Fraction(a) * Fraction(b) - Fraction(a * b)


def test_frozen_and_writable_inputs_share_one_compiled_specialisation():
    # a family's parameters are read-only arrays and temporaries are writable: the wrappers pass every input
    # read-only, so that each kernel compiles once for both (a specialisation costs about a second)
    from efvi.expfam import _linalg_kernels as kernels

    rng = np.random.default_rng(3)
    a, _ = random_spd(rng, 3, batch=(4,))
    frozen = a.copy()
    frozen.flags.writeable = False
    b = rng.normal(size=(4, 3))
    compiled = (kernels.symmetric_cholesky_kernel, kernels.refined_solve_kernel, kernels.quad_form_kernel)

    def use(matrix):
        chol = _linalg.symmetric_cholesky(matrix)
        _linalg.pd_solve(matrix, chol, b)
        _linalg.pd_inverse(matrix, "a")
        _linalg.quad_form_chol(chol, b)
        return [len(kernel.signatures) for kernel in compiled]

    assert use(a) == use(frozen), [kernel.signatures for kernel in compiled]
    assert not hasattr(kernels, "refined_inverse_kernel")   # the inverse is the refined solve of the identity
