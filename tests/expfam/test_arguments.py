"""Errors for mismatched ``z`` and ``other`` name the argument, the expected shape and the received one;
domain errors print the offending value plainly, at its batch index."""

import re

import numpy as np
import pytest

from efvi import expfam
from efvi.expfam import Bernoulli, Categorical, DiagonalGaussian, Dirichlet, Gamma, Gaussian, NormalWishart, Wishart

_KL_EVENT_MISMATCH = [
    (Gaussian.from_mean_cov(np.zeros(2), np.eye(2)), Gaussian.from_mean_cov(np.zeros(3), np.eye(3)),
     "(2,)", "(3,)"),
    (DiagonalGaussian.from_mean_var(np.zeros(2), np.ones(2)), DiagonalGaussian.from_mean_var(np.zeros(3), np.ones(3)),
     "(2,)", "(3,)"),
    (Dirichlet([1.0, 1.0]), Dirichlet([1.0, 1.0, 1.0]), "(2,)", "(3,)"),
    (Categorical([0.5, 0.5]), Categorical([0.2, 0.3, 0.5]), "(1,)", "(2,)"),
    (Categorical([0.5, 0.5]), Categorical([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]), "(1,)", "(2,)"),
    (Wishart(3.0, np.eye(2)), Wishart(4.0, np.eye(3)), "(2, 2)", "(3, 3)"),
    (NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)), NormalWishart(np.zeros(3), 1.0, 4.0, np.eye(3)),
     "(2,)", "(3,)"),
]


@pytest.mark.parametrize("q, p, expected, received", _KL_EVENT_MISMATCH)
def test_kl_with_another_event_shape_names_other_and_both_shapes(q, p, expected, received):
    pattern = r"^other .*event shape " + re.escape(expected) + ".*got " + re.escape(received)
    with pytest.raises(ValueError, match=pattern):
        q.kl(p)


@pytest.mark.parametrize("name", expfam.names())
def test_kl_with_a_batch_that_does_not_broadcast_names_other_and_both_shapes(name):
    from .cases import CASES

    q = next(q for q in CASES[name].examples if len(q.batch_shape) == 1 and q.batch_shape[0] >= 2)
    longer = type(q).from_natural(tuple(np.concatenate([p, p[:1]]) for p in q.natural))
    pattern = r"^other .*broadcasts with " + re.escape(str(q.batch_shape)) + r".*got batch shape " + re.escape(
        str(longer.batch_shape))
    with pytest.raises(ValueError, match=pattern):
        q.kl(longer)
    with pytest.raises(ValueError, match="^other must be a"):
        q.kl(Bernoulli(0.5) if name != "bernoulli" else Gamma(1.0, 1.0))
    assert q.kl(type(q).from_natural(tuple(p[:1] for p in q.natural))).shape == q.batch_shape


_LOGPDF_MISMATCH = [
    (Gaussian.from_mean_cov(np.zeros(2), np.eye(2)), np.zeros(3), "z", "(2,)", "(3,)"),
    (Gaussian.from_mean_cov(np.zeros(2), np.eye(2)), 0.0, "z", "(2,)", "()"),
    (DiagonalGaussian.from_mean_var(np.zeros((2, 2)), np.ones(2)), np.zeros((5, 3, 2)), "z", "(2,) + (2,)",
     "(5, 3, 2)"),
    (Dirichlet([[1.0, 2.0, 3.0]]), np.full(4, 0.25), "z", "(3,)", "(4,)"),
    (Gamma([1.0, 2.0], 1.0), np.ones(3), "z", "(2,)", "(3,)"),
    (Categorical([[0.5, 0.5]] * 3), [0, 1], "z", "(3,)", "(2,)"),
    (Wishart(3.0, np.eye(2)), np.eye(3), "z", "(2, 2)", "(3, 3)"),
    (NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)), (np.zeros(3), np.eye(2)), "z[0] (mu)", "(2,)", "(3,)"),
    (NormalWishart(np.zeros(2), 1.0, 3.0, np.eye(2)), (np.zeros(2), np.eye(3)), "z[1] (precision)", "(2, 2)",
     "(3, 3)"),
]


@pytest.mark.parametrize("q, z, argument, expected, received", _LOGPDF_MISMATCH)
def test_logpdf_with_a_mismatched_z_names_it_and_both_shapes(q, z, argument, expected, received):
    pattern = ("^" + re.escape(argument) + r" .*must have shape .*" + re.escape(expected)
               + ".*got shape " + re.escape(received))
    with pytest.raises(ValueError, match=pattern):
        q.logpdf(z)


def test_logpdf_broadcasts_draws_against_the_batch():
    q = Gamma([1.0, 2.0, 3.0], 1.0)
    assert q.logpdf(np.ones((4, 1, 3))).shape == (4, 1, 3)
    assert q.logpdf(2.0).shape == (3,)
    np.testing.assert_allclose(q.logpdf(2.0), q.logpdf(np.full(3, 2.0)), rtol=0)


_DOMAIN_ERRORS = [
    (lambda: Gamma.from_natural(([0.5, -1.5], [-1.0, -2.0])),
     r"at batch index \(1,\).*got natural\[0\] = -1\.5, natural\[1\] = -2\.0"),
    (lambda: Wishart.from_natural((0.0, 0.5 * np.eye(2))),
     r"got natural\[0\] = 0\.0, natural\[1\] = \[\[0\.5, 0\.0\], \[0\.0, 0\.5\]\]"),
    (lambda: Dirichlet.from_natural(([[0.0, 0.0], [0.0, -2.0]],)),
     r"at batch index \(1,\).*got natural\[0\] = \[0\.0, -2\.0\]"),
    (lambda: Gamma([1.0, 2.0, -3.0], 1.0), r"shape must be > 0\.0; got -3\.0 at index \(2,\)"),
    (lambda: Gamma(1.0, [[1.0, 0.0]]), r"rate must be > 0; got 0\.0 at index \(0, 1\)"),
    (lambda: Bernoulli([0.5, 1.5]), r"p must lie in \(0, 1\); got 1\.5 at index \(1,\)"),
    (lambda: Categorical([[0.5, 0.5], [0.3, 0.6]]),
     r"probs must sum to 1 .*got a sum of 0\.8999999999999999 at index \(1,\)"),
    (lambda: Categorical([0.5, -0.5, 1.0]), r"probs must lie in \(0, 1\]; got -0\.5 at index \(1,\)"),
    (lambda: Wishart([3.0, 0.5], np.eye(2)), r"df must be > D - 1 = 1; got 0\.5 at index \(1,\)"),
    (lambda: Wishart(1e-17, [[1.0]]),
     r"df must be at least 2\.220446049250313e-16, .*\(df - D - 1\) / 2.*got 1e-17"),
    (lambda: NormalWishart([0.0], 1.0, 1e-17, [[1.0]]),
     r"df must be at least 1\.1102230246251565e-16, .*df - D .*got 1e-17"),
    (lambda: Gamma.from_mean_params((1.0, 1.0)), r"got log\(mean\[1\]\) - mean\[0\] = -1\.0 at its smallest"),
    (lambda: Categorical.sufficient_stats([0, 2, 1], 2),
     r"z must hold integer labels in 0\.\.1; got 2 at index \(1,\)"),
]


@pytest.mark.parametrize("call, pattern", _DOMAIN_ERRORS)
def test_domain_errors_print_the_received_value_plainly(call, pattern):
    with pytest.raises(ValueError, match=pattern) as error:
        call()
    assert "np.float64" not in str(error.value) and "array(" not in str(error.value)


def test_degrees_of_freedom_just_above_the_bound_are_held():
    """The smallest df each natural parametrisation holds is accepted and stays valid."""
    for dim, smallest, rejected in [(1, 2.0 ** -52, 2.0 ** -54), (2, np.nextafter(1.0, 2.0), 1.0),
                                    (3, np.nextafter(2.0, 3.0), 2.0)]:
        q = Wishart(smallest, np.eye(dim))
        assert Wishart.is_valid_natural(q.natural) and np.isfinite(q.entropy())
        with pytest.raises(ValueError, match="df must be"):
            Wishart(rejected, np.eye(dim))
