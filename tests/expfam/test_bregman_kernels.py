"""The compiled KL kernels of efvi.expfam._bregman_kernels against the numpy reference of efvi.expfam._bregman.

The references here compose the vectorised numpy pieces exactly as the
kernels' docstrings state; the kernels sum polynomials in another order, so
the two agree to a few units in the last place of each term (1.3e-14 relative
seen on 2e5 pairs, where the careful route subtracts ``a f`` from the shifted
divergence; 4e-16 at the median).  Their accuracy against mpmath is tested
through the families (``test_gamma.py``, ``test_dirichlet.py``).
"""

import numpy as np
import pytest

from efvi.expfam import Beta, Dirichlet, Gamma
from efvi.expfam import _bregman_kernels as kernels
from efvi.expfam._bregman import ASYMPTOTIC_MIN, gammaln_bregman_excess, ratio_gap, xlogx_gap

RTOL = 3e-14


def _route_pairs(seed, count):
    """``(c, a)`` over every route: ``a`` from 2**-53 to 1e15, ``c / a - 1`` from 1e-12 to 100 either way, and
    the boundaries (``c`` or ``a`` at and around 1 and 10, ``c = a / 2``, ``c = a``)."""
    rng = np.random.default_rng(seed)
    a = np.maximum(10.0 ** rng.uniform(-16.0, 15.0, count), 2.0 ** -53)
    relative = 10.0 ** rng.uniform(-12.0, 2.0, count) * rng.choice([-1.0, 1.0], count)
    c = np.maximum(np.where(relative > -1.0, a * (1.0 + relative), a * 10.0 ** rng.uniform(-10.0, 0.0, count)),
                   2.0 ** -53)
    edges = np.array([2.0 ** -53, 0.1, np.nextafter(1.0, 0.0), 1.0, np.nextafter(1.0, 2.0), 3.0,
                      np.nextafter(ASYMPTOTIC_MIN, 0.0), ASYMPTOTIC_MIN, 20.0, 221.0, 1e8])
    grid_c, grid_a = (x.ravel() for x in np.meshgrid(edges, edges))
    return np.concatenate([c, grid_c, grid_a / 2.0, edges]), np.concatenate([a, grid_a, grid_a, edges])


def test_excess_kernel_equals_the_numpy_reference_on_every_route():
    c, a = _route_pairs(0, 20000)
    out = np.empty(c.size)
    kernels.excess_kernel(c, a, c - a, out)
    np.testing.assert_allclose(out, gammaln_bregman_excess(c, a, c - a), rtol=RTOL, atol=0)
    assert np.all(out[c == a] == 0.0) and np.all(out[c != a] > 0.0)


def _gamma_reference(natural_q, natural_p):
    """The KL of ``gamma.py``'s docstring from the numpy pieces (what ``gamma_kl_kernel`` computes)."""
    shape_q, shape_p = natural_q[0] + 1.0, natural_p[0] + 1.0
    shape_diff = natural_p[0] - natural_q[0]
    t, t_minus_one = shape_p / shape_q, shape_diff / shape_q
    v, v_minus_one = natural_p[1] / natural_q[1], (natural_q[1] - natural_p[1]) / -natural_q[1]
    return (shape_q * v * xlogx_gap(t / v, ratio_gap(t, t_minus_one, v, v_minus_one))
            + gammaln_bregman_excess(shape_p, shape_q, shape_diff))


def _dirichlet_reference(shifted_q, shifted_p):
    """The KL of ``dirichlet.py``'s docstring from the numpy pieces (what ``dirichlet_kl_kernel`` computes),
    and the sum of its terms' sizes (the excess of the totals is subtracted)."""
    alpha, beta, diff = shifted_q + 1.0, shifted_p + 1.0, shifted_p - shifted_q
    alpha, beta, diff = (np.concatenate([x, x.sum(axis=-1, keepdims=True)], axis=-1) for x in (alpha, beta, diff))
    t, t_minus_one = beta / alpha, diff / alpha
    t0, t0_minus_one = t[..., -1:], t_minus_one[..., -1:]
    ratio_minus_one = ratio_gap(t[..., :-1], t_minus_one[..., :-1], t0, t0_minus_one)
    excess = gammaln_bregman_excess(beta, alpha, diff)
    leading = t0[..., 0] * (alpha[..., :-1] * xlogx_gap(t[..., :-1] / t0, ratio_minus_one)).sum(axis=-1)
    return leading + excess[..., :-1].sum(axis=-1) - excess[..., -1], leading + excess.sum(axis=-1)


def test_gamma_kl_equals_the_numpy_reference():
    """Posteriors against vague priors, nearby pairs (common and independent changes) and unrelated pairs."""
    rng = np.random.default_rng(1)
    count = 3000
    a, b = 10.0 ** rng.uniform(-6.0, 12.0, count), 10.0 ** rng.uniform(-6.0, 6.0, count)
    change = 10.0 ** rng.uniform(-12.0, -1.0, count)
    kind = np.arange(count) % 4
    c = np.select([kind == 0, kind == 1, kind == 2],
                  [a * (1 + change * rng.standard_normal(count)), a * (1 + change), np.full(count, 1e-6)],
                  a * np.exp(3.0 * rng.standard_normal(count)))
    d = np.select([kind == 0, kind == 1, kind == 2],
                  [b * (1 + change * rng.standard_normal(count)), b * (1 + change), np.full(count, 1e-6)],
                  b * np.exp(3.0 * rng.standard_normal(count)))
    q, p = Gamma(a, b), Gamma(c, d)
    np.testing.assert_allclose(q.kl(p), _gamma_reference(q.natural, p.natural), rtol=RTOL, atol=0)
    np.testing.assert_allclose(p.kl(q), _gamma_reference(p.natural, q.natural), rtol=RTOL, atol=0)


@pytest.mark.parametrize("num", [2, 4, 12])
def test_dirichlet_kl_equals_the_numpy_reference(num):
    """Concentrations 1e-6..1e10, posteriors ``prior + counts`` with an empty component, nearby pairs;
    ``K = 12`` sums the totals in another order than numpy's pairwise sum.  Nearby pairs subtract the
    totals' excess from the others', so the two agree to ``RTOL`` of the terms (the KL's own accuracy)."""
    rng = np.random.default_rng(2 + num)
    count = 1500
    prior = np.exp(rng.uniform(np.log(1e-6), np.log(10.0), (count, 1))) * np.ones(num)
    counts = 10.0 ** rng.uniform(-6.0, 9.0, (count, num))
    counts[::3, 0] = 1e-6
    posterior = prior + counts
    nearby = posterior * (1 + 10.0 ** rng.uniform(-12.0, -1.0, (count, 1)) * rng.standard_normal((count, num)))
    for q, p in [(posterior, prior), (prior, posterior), (posterior, nearby)]:
        q, p = Dirichlet(q), Dirichlet(p)
        reference, terms = _dirichlet_reference(q.natural[0], p.natural[0])
        assert np.all(np.abs(q.kl(p) - reference) <= RTOL * terms)


def test_the_wrappers_broadcast_batches_and_keep_shapes():
    """Scalars stay 0-d, batches broadcast (entries equal the pairs alone), and Beta is the K = 2 Dirichlet."""
    assert np.ndim(Gamma(221.0, 100.0).kl(Gamma(1e-6, 1e-6))) == 0
    q, p = Gamma([[1.0], [2.0]], 1.0), Gamma([1.5, 25.0, 3.5], [1.0, 2.0, 3.0])
    kl = q.kl(p)
    assert kl.shape == (2, 3)
    assert kl[1, 1] == Gamma(2.0, 1.0).kl(Gamma(25.0, 2.0))
    alpha = np.array([[0.1, 40.0, 55.0, 55.0], [30.0, 40.0, 50.0, 60.0]])
    q = Dirichlet(alpha)
    kl = q.kl(Dirichlet(np.full(4, 0.1)))
    assert kl.shape == (2,) and kl[0] == Dirichlet(alpha[0]).kl(Dirichlet(np.full(4, 0.1)))
    assert Dirichlet(alpha[:, None, :]).kl(Dirichlet(alpha)).shape == (2, 2)
    assert Beta(2.0, 3.0).kl(Beta(0.5, 0.5)) == Dirichlet([2.0, 3.0]).kl(Dirichlet([0.5, 0.5]))
