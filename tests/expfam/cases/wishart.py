"""Contract case for the Wishart distribution."""

import numpy as np
from hypothesis import strategies as st
from scipy.stats import wishart

from efvi.expfam import Wishart

from .._matrices import matrix_setup, per_batch, random_spd
from . import FamilyCase, register_case


def _natural(rng, dim, batch, log10_excess_df, log10_condition, log10_scale):
    """Natural parameters with ``df = D - 1 + 10**log10_excess_df``.

    The mean parameters give ``df`` through ``E log|L| - log|E L|``, about
    ``-D (D + 1) / (2 df)`` for large ``df``, while float64 holds ``log|E L|`` only
    to about ``D u cond(W)`` (``u`` the unit roundoff): ``df`` is then known to
    about ``2 u cond(W) df / (D + 1)`` relative, which bounds the ranges below.
    """
    _, scale_inv = random_spd(rng, dim, batch, log10_condition, log10_scale)
    df = dim - 1.0 + 10.0 ** np.broadcast_to(log10_excess_df, batch)
    return 0.5 * (df - dim - 1.0), -0.5 * scale_inv


@st.composite
def _moderate(draw):
    """D in 1..4, df - (D - 1) in 1e-2..1e3, scale condition number up to 1e2."""
    rng, dim, batch, log10_condition = draw(matrix_setup(4, 2.0))
    log10_excess_df = draw(st.floats(-2.0, 3.0))
    log10_scale = draw(st.floats(-2.0, 2.0))
    return _natural(rng, dim, batch, log10_excess_df, log10_condition, log10_scale)


def _extreme():
    """df - (D - 1) = 1e-3 and 1e6 with a well-conditioned scale; scale condition number 1e8."""
    rng = np.random.default_rng(4)
    return [
        _natural(rng, 3, (2,), np.array([-3.0, 6.0]), 0.5, -4.0),
        _natural(rng, 1, (2,), np.array([-3.0, 6.0]), 0.0, 4.0),
        _natural(rng, 4, (2,), np.array([-3.0, 1.0]), 8.0, -4.0),
    ]


def _examples():
    rng = np.random.default_rng(5)
    scale3, _ = random_spd(rng, 3, (2,), 1.0)
    return [
        Wishart([5.0, 12.0], [[[1.0, 0.3], [0.3, 0.5]], [[2.0, -0.8], [-0.8, 1.0]]]),
        Wishart([4.5, 30.0], scale3),
        Wishart(3.0, [[0.7]]),
    ]


def _scipy_logpdf(dist, z):
    df, scale = dist.df, dist.scale
    return per_batch(
        dist.batch_shape, 2, z,
        lambda i, x: wishart(df[i], scale[i]).logpdf(np.moveaxis(x.reshape((-1,) + x.shape[-2:]), 0, -1)),
    )


def _scipy_entropy(dist):
    df, scale = dist.df, dist.scale
    out = np.empty(dist.batch_shape)
    for i in np.ndindex(*dist.batch_shape):
        out[i] = wishart(df[i], scale[i]).entropy()
    return out


_NOT_PD = [[1.0, 2.0], [2.0, 1.0]]
_INVALID = [
    (lambda: Wishart(1.0, np.eye(2)), "df"),
    (lambda: Wishart(-3.0, np.eye(2)), "df"),
    (lambda: Wishart(np.nan, np.eye(2)), "df"),
    (lambda: Wishart(3.0, _NOT_PD), "scale"),
    (lambda: Wishart(3.0, -np.eye(2)), "scale"),
    (lambda: Wishart(3.0, np.ones((2, 3))), "scale"),
    (lambda: Wishart(3.0, [[1.0, np.nan], [np.nan, 1.0]]), "scale"),
    (lambda: Wishart([3.0, 4.0, 5.0], np.broadcast_to(np.eye(2), (2, 2, 2))), "df"),
    (lambda: Wishart.from_natural((-1.5, -0.5 * np.eye(2))), "natural[0]"),
    (lambda: Wishart.from_natural((0.0, 0.5 * np.eye(2))), "natural[1]"),
    (lambda: Wishart.from_natural((np.zeros(3), -0.5 * np.eye(2))), "natural[1]"),
    (lambda: Wishart.from_mean_params((10.0, np.eye(2))), "mean[0]"),
    (lambda: Wishart.sufficient_stats(_NOT_PD), "z"),
    (lambda: Wishart(3.0, np.eye(2)).logpdf(np.eye(3)), "z"),
]

register_case(FamilyCase(
    family=Wishart,
    moderate=_moderate(),
    extreme=_extreme(),
    examples=_examples(),
    scipy_logpdf=_scipy_logpdf,
    scipy_entropy=_scipy_entropy,
    invalid=_INVALID,
    derived_extremes=False,
))
