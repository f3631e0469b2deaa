"""The families that state only their log-partition (Poisson, Exponential, inverse Gamma) against scipy.stats.

The contract compares their ``logpdf`` and ``entropy`` with scipy.stats
(``tests/expfam/cases/``); here their mean and variance, and the derived mean
parameters (autograd's gradient of ``A``) and Fisher information (its Hessian),
against expectations of the sufficient statistics that scipy.stats computes by
summation or quadrature (``expect``), distribution by distribution of each
contract example.  Tolerances: ``MOMENT_RTOL`` = 1e-12 for scipy's closed-form
mean and variance; ``EXPECT_RTOL`` = 1e-8 for its numerical expectations, whose
quadrature and summation tolerances are about 1e-10.
"""

import numpy as np
import pytest
from scipy import stats

from .cases import CASES

MOMENT_RTOL = 1e-12
EXPECT_RTOL = 1e-8

SCIPY = {
    "poisson": lambda q, i: stats.poisson(q.rate[i]),
    "exponential": lambda q, i: stats.expon(scale=1.0 / q.rate[i]),
    "inverse_gamma": lambda q, i: stats.invgamma(q.shape[i], scale=q.scale[i]),
}


def _elements(name):
    """``(q, index, frozen scipy distribution)`` for every batch element of every example of ``name``."""
    return [(q, index, SCIPY[name](q, index)) for q in CASES[name].examples for index in np.ndindex(q.batch_shape)]


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_mean_and_variance_match_scipy(name):
    for q, index, reference in _elements(name):
        np.testing.assert_allclose(q.mean[index], reference.mean(), rtol=MOMENT_RTOL)
        np.testing.assert_allclose(q.var[index], reference.var(), rtol=MOMENT_RTOL)


@pytest.mark.parametrize("name", sorted(SCIPY))
def test_derived_mean_parameters_and_fisher_match_scipy_expectations(name):
    family = CASES[name].family
    for q, index, reference in _elements(name):
        mean = [reference.expect(lambda z, j=j: family.sufficient_stats(z)[j]) for j in range(len(q.natural))]
        np.testing.assert_allclose([p[index] for p in q.mean_params], mean, rtol=EXPECT_RTOL)
        covariance = [[reference.expect(lambda z, j=j, k=k: (family.sufficient_stats(z)[j] - mean[j])
                                        * (family.sufficient_stats(z)[k] - mean[k]))
                       for k in range(len(mean))] for j in range(len(mean))]
        natural = tuple(p[index] for p in q.natural)
        np.testing.assert_allclose(family.fisher(natural), covariance, rtol=EXPECT_RTOL)
