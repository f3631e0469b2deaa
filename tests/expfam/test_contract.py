"""The exponential-family contract, checked for every registered family.

Every test is parametrised over ``expfam.names()``, so a new family is picked
up automatically and fails until it has a case in ``tests/expfam/cases/``.
Each property is checked against an independent route: autograd derivatives
of the log-partition, scipy.stats, and seeded Monte Carlo whose tolerance is
``SE_MULTIPLE`` standard errors estimated from the same samples.

Parameter tuples are compared by the relative errors of ``tests/expfam/_compare.py``.
"""

import re

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from hypothesis import given, settings

from efvi import expfam

from ._compare import case_of, flat, floats, matrix_relative_error, relative_error
from .cases import CASES

NAMES = expfam.names()
N_SAMPLES = 20000
SE_MULTIPLE = 5.0
GRADIENT_RTOL = 1e-8
EXTREME_RTOL = 1e-6
SCIPY_RTOL = 1e-10


def _autograd_mean(family, natural):
    """``grad A`` by autograd: the gradient of ``A`` summed over the batch."""
    return autograd.grad(lambda nat: anp.sum(family.log_partition(nat)))(floats(natural))


def _unflatten(flat, like, event_ndims):
    """:func:`efvi.expfam.unflatten` written with ``autograd.numpy`` so that it can be differentiated."""
    parts, start = [], 0
    for part, ndim in zip(like, event_ndims):
        event = np.shape(part)[np.ndim(part) - ndim:]
        size = int(np.prod(event))
        parts.append(anp.reshape(flat[..., start:start + size], flat.shape[:-1] + event))
        start += size
    return tuple(parts)


def _autograd_fisher(family, natural):
    """``hess A`` by autograd in flattened coordinates, shape ``batch + (P, P)``."""
    natural = floats(natural)
    flat = expfam.flatten(natural, family.event_ndims)
    rows = flat.reshape(-1, flat.shape[-1])
    for ours, reference in zip(_unflatten(rows, natural, family.event_ndims),
                               expfam.unflatten(rows, natural, family.event_ndims)):
        np.testing.assert_array_equal(ours, reference)

    def total(v):
        return anp.sum(family.log_partition(_unflatten(v, natural, family.event_ndims)))

    hessian = autograd.hessian(total)(rows)
    index = np.arange(rows.shape[0])
    return hessian[index, :, index, :].reshape(flat.shape + flat.shape[-1:])


def _within_standard_errors(estimate, samples, reference):
    """Monte Carlo check: ``|mean(samples) - reference| <= SE_MULTIPLE * sd / sqrt(n)`` entrywise."""
    standard_error = samples.std(axis=0) / np.sqrt(samples.shape[0])
    excess = np.abs(estimate - reference) - SE_MULTIPLE * standard_error
    assert np.all(excess <= 1e-12 * np.maximum(1.0, np.abs(reference))), (
        f"Monte Carlo mismatch: estimate {estimate}, reference {reference}, standard error {standard_error}"
    )


def _samples(dist, seed):
    return dist.sample(np.random.default_rng(seed), N_SAMPLES)


def _batched_examples(case):
    """Examples whose batch has at least two distributions along its first axis, for KL pairs."""
    found = [q for q in case.examples if len(q.batch_shape) >= 1 and q.batch_shape[0] >= 2]
    assert found, f"the {case.family.name} case needs an example with batch size >= 2"
    return found


def _rolled(q):
    """Another batch of the same family: the distributions of ``q`` shifted by one along axis 0."""
    return type(q).from_natural(tuple(np.roll(p, 1, axis=0) for p in q.natural))


# ---------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("name", NAMES)
def test_every_registered_family_has_a_case(name):
    case = case_of(name)
    assert case.family is expfam.get(name)
    assert case.examples and case.extreme


def test_every_case_is_a_registered_family():
    assert sorted(CASES) == NAMES


# ---------------------------------------------------------------------------- maps
@pytest.mark.parametrize("name", NAMES)
def test_natural_to_mean_is_the_gradient_of_the_log_partition(name):
    case = case_of(name)
    family = case.family

    @settings(max_examples=25, deadline=None)
    @given(case.moderate)
    def check(natural):
        error = relative_error(family, family.natural_to_mean(natural), _autograd_mean(family, natural))
        assert np.all(error <= GRADIENT_RTOL), error

    check()
    for q in case.examples:
        assert np.all(relative_error(family, q.mean_params, _autograd_mean(family, q.natural)) <= GRADIENT_RTOL)


@pytest.mark.parametrize("name", NAMES)
def test_mean_to_natural_inverts_natural_to_mean(name):
    case = case_of(name)
    family = case.family

    @settings(max_examples=50, deadline=None)
    @given(case.moderate)
    def check(natural):
        assert np.all(family.is_valid_natural(natural))
        back = family.mean_to_natural(family.natural_to_mean(natural))
        error = relative_error(family, back, natural)
        assert np.all(error <= case.mean_to_natural_rtol), error

    check()


@pytest.mark.parametrize("name", NAMES)
def test_extremes_round_trip_and_stay_finite(name):
    case = case_of(name)
    family = case.family
    for natural in case.extreme:
        natural = floats(natural)
        assert np.all(family.is_valid_natural(natural))
        mean = family.natural_to_mean(natural)
        back = family.mean_to_natural(mean)
        for part in mean + tuple(back):
            assert np.all(np.isfinite(part))
        assert np.all(relative_error(family, back, natural) <= EXTREME_RTOL)
        q = family.from_natural(natural)
        for value in (q.log_partition_value(), family.fisher(natural), q.entropy(), q.kl(q)):
            assert np.all(np.isfinite(value))


@pytest.mark.parametrize("name", NAMES)
def test_fisher_is_the_hessian_of_the_log_partition(name):
    case = case_of(name)
    family = case.family

    @settings(max_examples=10, deadline=None)
    @given(case.moderate)
    def check(natural):
        error = matrix_relative_error(family.fisher(natural), _autograd_fisher(family, natural))
        assert np.all(error <= GRADIENT_RTOL), error

    check()
    for q in case.examples:
        assert np.all(matrix_relative_error(family.fisher(q.natural), _autograd_fisher(family, q.natural))
                      <= GRADIENT_RTOL)


@pytest.mark.parametrize("name", NAMES)
def test_fisher_vector_product_matches_autograd(name):
    case = case_of(name)
    family = case.family
    rng = np.random.default_rng(1)
    for q in case.examples:
        vector = tuple(rng.standard_normal(np.shape(p)) for p in q.natural)
        gradient = autograd.grad(lambda nat: anp.sum(family.log_partition(nat)))
        reference = autograd.grad(
            lambda nat: sum(anp.sum(g * v) for g, v in zip(gradient(nat), vector))
        )(floats(q.natural))
        product = family.fisher_vp(q.natural, vector)
        assert np.all(relative_error(family, product, reference) <= GRADIENT_RTOL)


@pytest.mark.parametrize("name", NAMES)
def test_fisher_is_the_covariance_of_the_statistics(name):
    case = case_of(name)
    for seed, q in enumerate(case.examples):
        stats = flat(type(q), q.sufficient_stats_of(_samples(q, seed)))
        centred = stats - stats.mean(axis=0)
        products = centred[..., :, None] * centred[..., None, :]
        covariance = products.sum(axis=0) / (N_SAMPLES - 1)
        _within_standard_errors(covariance, products, type(q).fisher(q.natural))


@pytest.mark.parametrize("name", NAMES)
def test_sample_moments_match_mean_params(name):
    case = case_of(name)
    for seed, q in enumerate(case.examples):
        z = _samples(q, 100 + seed)
        stats = flat(type(q), q.sufficient_stats_of(z))
        _within_standard_errors(stats.mean(axis=0), stats, flat(type(q), q.mean_params))
        if isinstance(z, np.ndarray):
            _within_standard_errors(z.mean(axis=0), z, q.mean)
            if hasattr(q, "var"):
                squares = (z - z.mean(axis=0)) ** 2
                _within_standard_errors(squares.mean(axis=0), squares, q.var)


# ---------------------------------------------------------------------------- densities
@pytest.mark.parametrize("name", NAMES)
def test_logpdf_matches_scipy(name):
    case = case_of(name)
    if case.scipy_logpdf is None:
        pytest.skip(f"scipy has no {name} distribution")
    for seed, q in enumerate(case.examples):
        z = q.sample(np.random.default_rng(200 + seed), 64)
        np.testing.assert_allclose(q.logpdf(z), case.scipy_logpdf(q, z), rtol=SCIPY_RTOL, atol=SCIPY_RTOL)


@pytest.mark.parametrize("name", NAMES)
def test_entropy_matches_scipy_and_monte_carlo(name):
    case = case_of(name)
    for seed, q in enumerate(case.examples):
        entropy = q.entropy()
        assert entropy.shape == q.batch_shape
        if case.scipy_entropy is not None:
            np.testing.assert_allclose(entropy, case.scipy_entropy(q), rtol=SCIPY_RTOL, atol=SCIPY_RTOL)
        neg_logpdf = -q.logpdf(_samples(q, 300 + seed))
        _within_standard_errors(neg_logpdf.mean(axis=0), neg_logpdf, entropy)


@pytest.mark.parametrize("name", NAMES)
def test_kl_is_zero_to_itself_nonnegative_and_matches_monte_carlo(name):
    case = case_of(name)
    for seed, q in enumerate(_batched_examples(case)):
        p = _rolled(q)
        np.testing.assert_allclose(q.kl(q), 0.0, atol=1e-12)
        kl = q.kl(p)
        assert kl.shape == q.batch_shape
        assert np.all(kl >= -1e-12)
        z = _samples(q, 400 + seed)
        log_ratio = q.logpdf(z) - p.logpdf(z)
        _within_standard_errors(log_ratio.mean(axis=0), log_ratio, kl)


# ---------------------------------------------------------------------------- objects
@pytest.mark.parametrize("name", NAMES)
def test_from_natural_and_from_mean_params_round_trip(name):
    case = case_of(name)
    family = case.family
    for q in case.examples:
        again = family.from_natural(q.natural)
        assert again.batch_shape == q.batch_shape
        assert np.all(relative_error(family, again.mean_params, q.mean_params) == 0.0)
        back = family.from_mean_params(q.mean_params)
        assert np.all(relative_error(family, back.natural, q.natural) <= case.mean_to_natural_rtol)
        assert isinstance(back, family)


@pytest.mark.parametrize("name", NAMES)
def test_parameters_are_read_only(name):
    q = case_of(name).examples[0]
    for part in q.natural + q.mean_params:
        with pytest.raises(ValueError):
            part.flat[0] = 1.0


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize("name", NAMES)
def test_invalid_arguments_raise_value_error_naming_them(name):
    case = case_of(name)
    assert case.invalid, f"the {name} case lists no invalid calls"
    for call, argument in case.invalid:
        with pytest.raises(ValueError, match=re.escape(argument)):
            call()


@pytest.mark.parametrize("name", NAMES)
def test_malformed_natural_parameters_raise(name):
    family = case_of(name).family
    natural = tuple(np.array(p) for p in case_of(name).examples[0].natural)
    with pytest.raises(ValueError, match=re.escape("natural")):
        family.from_natural(natural[:-1] if len(natural) > 1 else natural + natural)
    for i in range(len(natural)):
        broken = list(natural)
        broken[i] = natural[i].copy()
        broken[i].flat[0] = np.nan
        with pytest.raises(ValueError, match=re.escape(f"natural[{i}]")):
            family.from_natural(tuple(broken))
    if len(natural) > 1:
        broken = (natural[0],) + tuple(np.stack([p, p]) for p in natural[1:])
        with pytest.raises(ValueError, match=re.escape("natural[1]")):
            family.from_natural(broken)
