"""Contract case for the Normal-Wishart distribution."""

import numpy as np
from hypothesis import strategies as st
from scipy.special import digamma
from scipy.stats import multivariate_normal, wishart

from efvi.expfam import NormalWishart

from .._matrices import matrix_setup, random_spd
from . import FamilyCase, register_case


def _natural(rng, dim, batch, log10_beta, log10_excess_df, log10_condition, log10_scale):
    """Natural parameters with ``df = D - 1 + 10**log10_excess_df`` and a mean near 0.

    The mean is within 3 standard deviations of 0 in the metric of
    ``beta E[Lambda] = beta df W``: ``E[mu^T Lambda mu] = D / beta + df m^T W m``
    then keeps ``D / beta`` to many digits, and ``inv(W) + beta m m^T`` does not
    swamp ``inv(W)``.  ``df`` is limited as for the Wishart (``tests/expfam/cases/wishart.py``).
    """
    scale, scale_inv = random_spd(rng, dim, batch, log10_condition, log10_scale)
    beta = 10.0 ** np.broadcast_to(log10_beta, batch)
    df = dim - 1.0 + 10.0 ** np.broadcast_to(log10_excess_df, batch)
    offsets = rng.uniform(-3.0, 3.0, batch + (dim,))
    metric = scale_inv / (beta * df)[..., None, None]
    mean = np.einsum("...ij,...j->...i", np.linalg.cholesky(metric), offsets)
    eta1 = beta[..., None] * mean
    return eta1, beta, scale_inv + eta1[..., :, None] * mean[..., None, :], df - dim


@st.composite
def _moderate(draw):
    """D in 1..3, beta in 1e-2..1e2, df - (D - 1) in 1e-2..1e3, scale condition number up to 1e2."""
    rng, dim, batch, log10_condition = draw(matrix_setup(3, 2.0))
    log10_beta = draw(st.floats(-2.0, 2.0))
    log10_excess_df = draw(st.floats(-2.0, 3.0))
    log10_scale = draw(st.floats(-2.0, 2.0))
    return _natural(rng, dim, batch, log10_beta, log10_excess_df, log10_condition, log10_scale)


def _extreme():
    """beta 1e-5 and 1e5, df - (D - 1) = 1e-3 and 1e6; scale condition number 1e8 with moderate df."""
    rng = np.random.default_rng(6)
    return [
        _natural(rng, 3, (2,), np.array([-5.0, 5.0]), np.array([-3.0, 6.0]), 0.5, -4.0),
        _natural(rng, 2, (2,), np.array([5.0, -5.0]), np.array([-3.0, 6.0]), 0.5, 4.0),
        _natural(rng, 3, (2,), np.array([-5.0, 5.0]), np.array([-3.0, 1.0]), 8.0, 0.0),
    ]


def _examples():
    rng = np.random.default_rng(7)
    scale3, _ = random_spd(rng, 3, (2,), 1.0)
    return [
        NormalWishart([[0.5, -1.0], [2.0, 0.3]], [1.0, 4.0], [5.0, 12.0],
                      [[[1.0, 0.3], [0.3, 0.5]], [[2.0, -0.8], [-0.8, 1.0]]]),
        NormalWishart(rng.normal(size=3), [0.5, 2.0], [6.0, 20.0], scale3),
        NormalWishart([1.0], 3.0, 4.0, [[0.7]]),
    ]


def _scipy_logpdf(dist, z):
    """log Wishart(precision) + log N(mu; m, (beta precision)^-1), from scipy."""
    mu, precision = z
    mean, beta, df, scale = dist.mean, dist.beta, dist.df, dist.scale
    shape = mu.shape[: mu.ndim - 1 - len(dist.batch_shape)]
    out = np.empty(shape + dist.batch_shape)
    for i in np.ndindex(*dist.batch_shape):
        for s in np.ndindex(*shape):
            lam = precision[s + i]
            out[s + i] = (wishart(df[i], scale[i]).logpdf(lam)
                          + multivariate_normal(mean[i], np.linalg.inv(beta[i] * lam)).logpdf(mu[s + i]))
    return out


def _scipy_entropy(dist):
    """H[Wishart] + E_Lambda H[N(m, (beta Lambda)^-1)], with E log|Lambda| written out again."""
    dim, beta, df, scale = dist.dim, dist.beta, dist.df, dist.scale
    out = np.empty(dist.batch_shape)
    for i in np.ndindex(*dist.batch_shape):
        expected_logdet = (np.sum(digamma(0.5 * (df[i] - np.arange(dim)))) + dim * np.log(2.0)
                           + np.linalg.slogdet(scale[i])[1])
        out[i] = (wishart(df[i], scale[i]).entropy() + 0.5 * dim * (1.0 + np.log(2.0 * np.pi))
                  - 0.5 * dim * np.log(beta[i]) - 0.5 * expected_logdet)
    return out


_NOT_PD = [[1.0, 2.0], [2.0, 1.0]]
_INVALID = [
    (lambda: NormalWishart(np.zeros(2), 0.0, 3.0, np.eye(2)), "beta"),
    (lambda: NormalWishart(np.zeros(2), -1.0, 3.0, np.eye(2)), "beta"),
    (lambda: NormalWishart(np.zeros(2), 1.0, 0.5, np.eye(2)), "df"),
    (lambda: NormalWishart(np.zeros(2), 1.0, 3.0, _NOT_PD), "scale"),
    (lambda: NormalWishart(np.zeros(3), 1.0, 3.0, np.eye(2)), "scale"),
    (lambda: NormalWishart([np.nan, 0.0], 1.0, 3.0, np.eye(2)), "mean"),
    (lambda: NormalWishart(np.zeros(2), np.nan, 3.0, np.eye(2)), "beta"),
    (lambda: NormalWishart.from_natural((np.zeros(2), -1.0, np.eye(2), 1.0)), "natural[1]"),
    (lambda: NormalWishart.from_natural((np.zeros(2), 1.0, np.eye(2), -2.0)), "natural[3]"),
    (lambda: NormalWishart.from_natural((np.ones(2), 1.0, np.eye(2), 1.0)), "natural[2]"),
    (lambda: NormalWishart.from_natural((np.zeros(2), 1.0, np.eye(3), 1.0)), "natural[2]"),
    (lambda: NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)).logpdf(np.zeros(2)), "z"),
    (lambda: NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)).logpdf((np.zeros(2), np.eye(3))), "z[1]"),
    (lambda: NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)).expected_mahalanobis(np.zeros((4, 3))), "x"),
]

register_case(FamilyCase(
    family=NormalWishart,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_examples(),
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
    derived_extremes=False,
))
