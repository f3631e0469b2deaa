"""Categorical specifics: label statistics, saturated logits and the two constructors."""

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from scipy import special

from efvi.expfam import Categorical


def test_sufficient_stats_are_one_hot_without_the_last_class():
    stats = Categorical.sufficient_stats(np.array([[0, 2], [1, 2]]), num_classes=3)[0]
    np.testing.assert_array_equal(stats, [[[1, 0], [0, 0]], [[0, 1], [0, 0]]])
    q = Categorical([0.2, 0.3, 0.5])
    np.testing.assert_array_equal(q.sufficient_stats_of([2, 0])[0], [[0, 0], [1, 0]])


def test_probabilities_sum_to_one():
    q = Categorical([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    labels = np.arange(3)[:, None] * np.ones((1, 2), dtype=int)
    np.testing.assert_allclose(np.exp(q.logpdf(labels)), q.probs.T, rtol=1e-14)
    np.testing.assert_allclose(np.exp(q.logpdf(labels)).sum(axis=0), 1.0, rtol=1e-15)


def test_large_logits_stay_finite():
    q = Categorical.from_logits([[1000.0, -1000.0, 0.0], [-800.0, -800.0, 0.0]])
    p = Categorical.from_logits([[0.0, 0.0, 0.0], [800.0, 0.0, 0.0]])
    for value in (q.log_partition_value(), q.mean_params[0], Categorical.fisher(q.natural), q.entropy(),
                  q.kl(p), q.logpdf([[0, 0], [2, 2]]), q.probs, q.sample(np.random.default_rng(0), 10)):
        assert np.all(np.isfinite(value))
    np.testing.assert_allclose(q.log_partition_value(), [1000.0, special.logsumexp([-800.0, -800.0, 0.0])],
                               rtol=1e-15)


def test_constructors_agree_and_logits_are_shift_invariant():
    probs = np.array([0.1, 0.6, 0.3])
    by_probs = Categorical(probs)
    by_logits = Categorical.from_logits(np.log(probs) + 7.0)
    np.testing.assert_allclose(by_logits.natural[0], by_probs.natural[0], rtol=1e-14)
    np.testing.assert_allclose(by_logits.probs, probs, rtol=1e-14)
    assert by_probs.num_classes == 3
    np.testing.assert_allclose(by_probs.mean, probs @ np.arange(3), rtol=1e-15)


def test_labels_must_be_in_range():
    with pytest.raises(ValueError, match="z must hold integer labels in 0..2"):
        Categorical.sufficient_stats([3], num_classes=3)


def test_plain_arrays_get_scipys_values_without_scipy_and_traced_ones_go_through_autograd():
    """``log_partition`` and the probabilities of plain arrays are computed in numpy as scipy's
    ``logsumexp`` (the largest terms apart, ``log1p`` of the rest) and ``softmax`` compute them: ties,
    the reference class largest, tiny partitions, logits of +-700.  Where autograd traces the
    log-partition, its ``logsumexp`` gives the same value, and the gradient is the probabilities."""
    rng = np.random.default_rng(0)
    logits = np.concatenate([rng.normal(0.0, 3.0, (50, 3)), [[0.0, 0.0, -1.0], [2.0, 2.0, 2.0],
                                                             [-40.0, -40.0, -45.0], [700.0, -700.0, 699.0]]])
    full = np.concatenate([logits, np.zeros((len(logits), 1))], axis=-1)
    np.testing.assert_allclose(Categorical.log_partition((logits,)), special.logsumexp(full, axis=-1),
                               rtol=1e-15, atol=0)
    probs = special.softmax(full, axis=-1)
    np.testing.assert_allclose(Categorical.natural_to_mean((logits,))[0], probs[:, :-1], rtol=1e-15, atol=0)
    np.testing.assert_allclose(Categorical.from_natural((logits,)).probs, probs, rtol=1e-15, atol=0)
    value, gradient = autograd.value_and_grad(lambda x: anp.sum(Categorical.log_partition((x,))))(logits)
    np.testing.assert_allclose(value, np.sum(Categorical.log_partition((logits,))), rtol=1e-15)
    np.testing.assert_allclose(gradient, probs[:, :-1], rtol=1e-13, atol=1e-300)
    assert Categorical.log_partition((logits[0],)).shape == ()
    assert Categorical.log_partition((logits[:0],)).shape == (0,)


@pytest.mark.parametrize("num_classes", [2, 4, 40])
def test_compiled_kl_and_softmax_equal_the_generic_route_and_scipy_on_every_shape(num_classes):
    """The compiled KL (compensated inner product) against the base class's numpy Bregman divergence, for
    equal batches, a prior broadcast against a batch, and a batch broadcast against a larger prior; the
    log-partition and probabilities it keeps are the ones asked for first or later (K = 40 sums more
    terms than numpy's pairwise sums take one by one)."""
    from efvi.expfam import ExponentialFamily

    rng = np.random.default_rng(num_classes)
    logits_q, logits_p = rng.normal(0.0, 3.0, (2, 30, num_classes - 1))
    q, p = Categorical.from_natural((logits_q,)), Categorical.from_natural((logits_p,))
    scale = np.abs(q.log_partition_value()) + np.abs(p.log_partition_value()) + 3.0 * np.abs(logits_p - logits_q).max()
    for prior in (p, p[0], Categorical.from_natural((np.stack([logits_p, logits_q]),))):
        kl = Categorical.from_natural((logits_q,)).kl(prior)
        generic = ExponentialFamily._kl(q, prior)
        assert kl.shape == generic.shape
        assert np.all(np.abs(kl - generic) <= 1e-15 * scale.max())
    np.testing.assert_allclose(q[:1].kl(p), ExponentialFamily._kl(q[:1], p), rtol=0, atol=1e-15 * scale.max())
    full = np.concatenate([logits_q, np.zeros((30, 1))], axis=-1)
    for first_kl in (True, False):
        fresh = Categorical.from_natural((logits_q,))
        if first_kl:
            fresh.kl(p)
        np.testing.assert_allclose(fresh.mean_params[0], special.softmax(full, axis=-1)[:, :-1], rtol=1e-15)
        np.testing.assert_allclose(fresh.log_partition_value(), special.logsumexp(full, axis=-1), rtol=1e-15)
        np.testing.assert_array_equal(fresh.kl(p), q.kl(p))
