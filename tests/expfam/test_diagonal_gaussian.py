"""DiagonalGaussian against the full-covariance Gaussian with a diagonal covariance."""

import autograd
import numpy as np

from efvi.expfam import DiagonalGaussian, Gaussian, flatten


def _pair(rng, batch=(3,), dim=4):
    mean = rng.normal(size=batch + (dim,))
    var = 10.0 ** rng.uniform(-2, 2, batch + (dim,))
    full = Gaussian.from_mean_cov(mean, var[..., :, None] * np.eye(dim))
    return DiagonalGaussian.from_mean_var(mean, var), full


def test_logpdf_entropy_and_kl_match_the_full_gaussian():
    rng = np.random.default_rng(50)
    (q, q_full), (p, p_full) = _pair(rng), _pair(rng)
    z = q.sample(rng, 5)
    np.testing.assert_allclose(q.logpdf(z), q_full.logpdf(z), rtol=1e-12)
    np.testing.assert_allclose(q.entropy(), q_full.entropy(), rtol=1e-12)
    np.testing.assert_allclose(q.kl(p), q_full.kl(p_full), rtol=1e-10)


def test_fisher_closed_form_equals_autograd_hessian():
    rng = np.random.default_rng(51)
    q, _ = _pair(rng, batch=(2,), dim=3)
    fisher = DiagonalGaussian.fisher(q.natural)
    assert fisher.shape == (2, 6, 6)
    for b in range(2):
        flat = flatten(tuple(p[b] for p in q.natural), DiagonalGaussian.event_ndims)
        hessian = autograd.hessian(lambda f: DiagonalGaussian.log_partition((f[:3], f[3:])))(flat)
        np.testing.assert_allclose(fisher[b], hessian, rtol=1e-12, atol=1e-12 * np.abs(hessian).max())


def test_properties_and_broadcasting():
    q = DiagonalGaussian.from_mean_var([[1.0, -2.0]], 0.25)
    assert q.batch_shape == (1,)
    np.testing.assert_allclose(q.mean, [[1.0, -2.0]], rtol=1e-15)
    np.testing.assert_allclose(q.var, [[0.25, 0.25]], rtol=1e-15)
    np.testing.assert_allclose(q.std, [[0.5, 0.5]], rtol=1e-15)
