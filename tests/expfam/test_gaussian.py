"""Gaussian-specific checks: closed-form KL, Isserlis Fisher, constructors, conditioning."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from efvi.expfam import Gaussian, flatten
from efvi.expfam._autodiff import hessian_of_log_partition

from ._matrices import random_spd

UNIT_ROUNDOFF = np.finfo(float).eps / 2


def _kl_closed_form(m0, v0, m1, v1):
    """KL(N(m0, v0) || N(m1, v1)) from the textbook formula, with plain numpy."""
    dim = m0.shape[-1]
    p1 = np.linalg.inv(v1)
    diff = m1 - m0
    return 0.5 * (
        np.trace(p1 @ v0, axis1=-2, axis2=-1)
        + np.einsum("...i,...ij,...j->...", diff, p1, diff)
        - dim
        + np.linalg.slogdet(v1)[1]
        - np.linalg.slogdet(v0)[1]
    )


def test_kl_matches_closed_form():
    rng = np.random.default_rng(10)
    v0, _ = random_spd(rng, 3, (4,), 2.0)
    v1, _ = random_spd(rng, 3, (4,), 2.0)
    m0, m1 = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    q, p = Gaussian.from_mean_cov(m0, v0), Gaussian.from_mean_cov(m1, v1)
    expected = _kl_closed_form(m0, v0, m1, v1)
    np.testing.assert_allclose(q.kl(p), expected, rtol=1e-10)
    np.testing.assert_allclose(p.kl(q), _kl_closed_form(m1, v1, m0, v0), rtol=1e-10)


def test_entropy_matches_closed_form():
    rng = np.random.default_rng(11)
    cov, _ = random_spd(rng, 4, (3,), 3.0)
    q = Gaussian.from_mean_cov(rng.normal(size=(3, 4)), cov)
    expected = 0.5 * (4 * (1.0 + np.log(2.0 * np.pi)) + np.linalg.slogdet(cov)[1])
    np.testing.assert_allclose(q.entropy(), expected, rtol=1e-12)


def test_fisher_is_isserlis_and_equals_autograd_hessian():
    rng = np.random.default_rng(12)
    cov, _ = random_spd(rng, 3, (2,), 2.0)
    natural = Gaussian.from_mean_cov(rng.normal(size=(2, 3)), cov).natural
    fisher = Gaussian.fisher(natural)
    assert fisher.shape == (2, 12, 12)
    np.testing.assert_allclose(fisher, hessian_of_log_partition(Gaussian.log_partition, natural, Gaussian.event_ndims),
                               rtol=1e-9, atol=1e-9 * np.abs(fisher).max())
    for b in range(2):
        flat = flatten(tuple(p[b] for p in natural), Gaussian.event_ndims)
        hessian = autograd.hessian(lambda f: Gaussian.log_partition((f[:3], anp.reshape(f[3:], (3, 3)))))(flat)
        np.testing.assert_allclose(fisher[b], hessian, rtol=1e-9, atol=1e-9 * np.abs(fisher).max())


def test_fisher_vector_product_is_a_directional_derivative_of_the_mean():
    rng = np.random.default_rng(13)
    cov, _ = random_spd(rng, 2, (), 1.0)
    natural = Gaussian.from_mean_cov(rng.normal(size=2), cov).natural
    sym = rng.normal(size=(2, 2))
    direction = (rng.normal(size=2), sym + sym.T)
    step = 1e-6
    plus = Gaussian.natural_to_mean(tuple(p + step * d for p, d in zip(natural, direction)))
    minus = Gaussian.natural_to_mean(tuple(p - step * d for p, d in zip(natural, direction)))
    for fv, a, b in zip(Gaussian.fisher_vp(natural, direction), plus, minus):
        np.testing.assert_allclose(fv, (a - b) / (2 * step), rtol=1e-6, atol=1e-8)


def test_constructors_and_properties_agree():
    rng = np.random.default_rng(14)
    cov, precision = random_spd(rng, 3, (2,), 4.0)
    mean = rng.normal(size=3)
    by_cov = Gaussian.from_mean_cov(mean, cov)
    by_precision = Gaussian.from_mean_precision(mean, precision)
    assert by_cov.batch_shape == (2,)
    for a, b in zip(by_cov.natural, by_precision.natural):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * np.abs(b).max())
    np.testing.assert_allclose(by_cov.mean, np.broadcast_to(mean, (2, 3)), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(by_precision.cov, cov, rtol=1e-9, atol=1e-12 * np.abs(cov).max())
    np.testing.assert_allclose(by_cov.var, np.diagonal(cov, axis1=-2, axis2=-1), rtol=1e-9)
    np.testing.assert_allclose(by_cov.precision, precision, rtol=1e-9, atol=1e-12 * np.abs(precision).max())
    chol = by_cov.precision_cholesky
    np.testing.assert_allclose(chol @ np.swapaxes(chol, -1, -2), by_cov.precision, rtol=1e-12, atol=1e-12 * np.abs(precision).max())


def test_logpdf_broadcasts_one_point_against_the_batch():
    rng = np.random.default_rng(15)
    cov, _ = random_spd(rng, 2, (3,), 1.0)
    q = Gaussian.from_mean_cov(rng.normal(size=(3, 2)), cov)
    z = rng.normal(size=2)
    np.testing.assert_allclose(q.logpdf(z), q.logpdf(np.broadcast_to(z, (3, 2))), rtol=1e-14)
    assert q.logpdf(np.broadcast_to(z, (5, 3, 2))).shape == (5, 3)


@pytest.mark.parametrize("dim", [2, 4])
@pytest.mark.parametrize("sds", [0.0, 10.0, 1000.0])
def test_round_trip_error_is_bounded_by_the_mean_parameter_rounding(dim, sds):
    """A round trip loses at most ``4 u |P|_2 |E[z z^T]|_F`` relative (module docstring).

    Rounding ``E[z z^T]`` to float64 moves the covariance by ``u |E[z z^T]|_F`` and
    so the precision ``P`` by ``|P|_2^2`` times that; the factor 4 covers the
    subtraction, the refined inverse and the final rounding.  With means many
    standard deviations from 0 this exceeds ``cond * u``, which is why the
    contract case keeps means small.
    """
    rng = np.random.default_rng(16 + dim)
    for _ in range(50):
        cov, precision = random_spd(rng, dim, (), 6.0, rng.uniform(-3.0, 3.0))
        offsets = rng.normal(size=dim)
        mean = sds * np.linalg.cholesky(cov) @ (offsets / np.linalg.norm(offsets))
        natural = (precision @ mean, -0.5 * precision)
        moments = Gaussian.natural_to_mean(natural)
        back = Gaussian.mean_to_natural(moments)
        bound = 4 * UNIT_ROUNDOFF * np.linalg.norm(precision, 2) * np.linalg.norm(moments[1])
        for a, b in zip(back, natural):
            assert np.linalg.norm(a - b) <= bound * np.linalg.norm(b)


def test_round_trip_at_condition_number_1e6_with_zero_mean_is_within_cond_times_roundoff():
    rng = np.random.default_rng(20)
    cov, precision = random_spd(rng, 4, (200,), 6.0)
    natural = (np.zeros((200, 4)), -0.5 * precision)
    back = Gaussian.mean_to_natural(Gaussian.natural_to_mean(natural))
    error = np.linalg.norm(back[1] - natural[1], axis=(-2, -1)) / np.linalg.norm(natural[1], axis=(-2, -1))
    assert np.max(error) <= 1e6 * UNIT_ROUNDOFF
    assert np.all(back[0] == 0.0)


def test_closed_form_kl_and_entropy_agree_with_the_generic_bregman_route():
    from efvi.expfam import DiagonalGaussian, ExponentialFamily

    rng = np.random.default_rng(11)
    A, B = rng.normal(size=(2, 3, 4, 4))
    q = Gaussian.from_mean_cov(rng.normal(size=(3, 4)), A @ np.swapaxes(A, -1, -2) + np.eye(4))
    p = Gaussian.from_mean_cov(rng.normal(size=(3, 4)), B @ np.swapaxes(B, -1, -2) + np.eye(4))
    np.testing.assert_allclose(q.kl(p), ExponentialFamily._kl(q, p), rtol=1e-9)
    np.testing.assert_allclose(q.entropy(), ExponentialFamily.entropy(q), rtol=1e-10)
    dq = DiagonalGaussian.from_mean_var(rng.normal(size=(3, 4)), rng.uniform(0.1, 3, size=(3, 4)))
    dp = DiagonalGaussian.from_mean_var(rng.normal(size=(3, 4)), rng.uniform(0.1, 3, size=(3, 4)))
    np.testing.assert_allclose(dq.kl(dp), ExponentialFamily._kl(dq, dp), rtol=1e-9)
    np.testing.assert_allclose(dq.entropy(), ExponentialFamily.entropy(dq), rtol=1e-10)


def test_kl_of_a_concentrated_posterior_keeps_its_digits():
    # precision 1e12: the Bregman form cancels terms of size 1e12; the closed form is exact
    q = Gaussian.from_mean_cov(np.array([1.0, -1.0]), 1e-12 * np.eye(2))
    p = Gaussian.from_mean_cov(np.zeros(2), np.eye(2))
    exact = 0.5 * (2e-12 + 2.0 - 2.0 - 2 * np.log(1e-12))
    assert float(q.kl(p)) == pytest.approx(exact, rel=1e-12)


def test_kl_of_near_identical_gaussians_is_never_negative():
    """Rounding made about a quarter of such pairs' closed-form KL about -1e-15."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        A = rng.normal(size=(3, 3))
        cov = A @ A.T + 3 * np.eye(3)
        mean = rng.normal(size=3)
        q = Gaussian.from_mean_cov(mean, cov)
        p = Gaussian.from_mean_cov(mean * (1 + 1e-9), cov * (1 + 1e-9))
        assert q.kl(p) >= 0.0


def test_compiled_kl_equals_the_numpy_route_and_from_valid_natural_tests_like_is_valid_natural():
    """Batches of one shape take the compiled trace and Mahalanobis terms, broadcast ones and matrices wider
    than ``REFINE_MAX_DIM`` the numpy ones; the two agree.  ``from_valid_natural`` (one compiled
    validity test and factorisation) accepts and rejects what ``is_valid_natural`` does."""
    from efvi.expfam import _linalg

    rng = np.random.default_rng(12)
    for dim in (1, 3, 11, _linalg.REFINE_MAX_DIM + 1):
        cov_q, _ = random_spd(rng, dim, (3,), 3.0)
        cov_p, _ = random_spd(rng, dim, (3,), 2.0)
        q = Gaussian.from_mean_cov(rng.normal(size=(3, dim)), cov_q)
        p = Gaussian.from_mean_cov(rng.normal(size=(3, dim)), cov_p)
        fresh = Gaussian.from_valid_natural(q.natural)
        np.testing.assert_allclose(fresh.precision_cholesky, np.linalg.cholesky(q.precision), rtol=1e-12,
                                   atol=1e-12 * np.abs(q.precision).max())
        together = fresh.kl(p)
        one_by_one = [Gaussian.from_natural(tuple(x[i:i + 1] for x in q.natural)).kl(p)[i] for i in range(3)]
        np.testing.assert_allclose(together, one_by_one, rtol=1e-12)
        np.testing.assert_allclose(together, _kl_closed_form(q.mean, q.cov, p.mean, p.cov), rtol=1e-9)
        asymmetric = q.natural[1].copy()
        asymmetric[1, 0, -1] += 1e-6 * np.abs(asymmetric).max()
        indefinite = q.natural[1].copy()
        indefinite[2, -1, -1] = 1.0
        for eta2 in (asymmetric, indefinite):
            natural = (q.natural[0], eta2)
            assert (Gaussian.from_valid_natural(natural) is None) == (not np.all(Gaussian.is_valid_natural(natural)))
        assert Gaussian.from_valid_natural((q.natural[0], indefinite)) is None
        assert (Gaussian.from_valid_natural((q.natural[0], asymmetric)) is None) == (dim > 1)
