"""Bernoulli specifics: saturated logits and the two constructors."""

import numpy as np
from scipy import special

from efvi.expfam import Bernoulli

LARGE = np.array([-1000.0, -50.0, -30.0, 30.0, 50.0, 1000.0])


def test_large_logits_stay_finite_and_exact():
    q = Bernoulli.from_logits(LARGE)
    p = Bernoulli.from_logits(-LARGE)
    z = np.array([0.0, 1.0])[:, None] * np.ones_like(LARGE)
    for value in (q.log_partition_value(), q.mean_params[0], Bernoulli.fisher(q.natural), q.entropy(),
                  q.kl(p), q.logpdf(z), q.probs, q.var, q.sample(np.random.default_rng(0), 10)):
        assert np.all(np.isfinite(value))
    np.testing.assert_allclose(q.log_partition_value(), np.maximum(LARGE, 0.0) + np.log1p(np.exp(-np.abs(LARGE))),
                               rtol=1e-15)
    # log q(z) = lambda z - A(lambda) is exact to a few ulps of lambda
    error = np.abs(q.logpdf(z) - [special.log_expit(-LARGE), special.log_expit(LARGE)])
    assert np.all(error <= 4 * np.finfo(float).eps * np.abs(LARGE))
    # KL(lambda || -lambda) = lambda tanh(lambda / 2)
    np.testing.assert_allclose(q.kl(p), LARGE * np.tanh(LARGE / 2), rtol=1e-14)


def test_mean_to_natural_at_saturation_is_finite():
    logits = Bernoulli.mean_to_natural(Bernoulli.natural_to_mean((np.array([-30.0, 30.0]),)))[0]
    assert np.all(np.isfinite(logits))
    np.testing.assert_allclose(logits, [-30.0, 30.0], rtol=1e-3)


def test_probabilities_sum_to_one():
    q = Bernoulli([0.1, 0.5, 0.97])
    z = np.array([[0.0] * 3, [1.0] * 3])
    np.testing.assert_allclose(np.exp(q.logpdf(z)).sum(axis=0), 1.0, rtol=1e-15)


def test_constructors_agree():
    p = np.array([0.01, 0.3, 0.99])
    by_probability, by_logit = Bernoulli(p), Bernoulli.from_logits(np.log(p) - np.log1p(-p))
    np.testing.assert_allclose(by_probability.natural[0], by_logit.natural[0], rtol=1e-14)
    np.testing.assert_allclose(by_logit.probs, p, rtol=1e-14)
    np.testing.assert_allclose(by_logit.mean, p, rtol=1e-14)
