"""The compiled per-parameter passes of the diagonal optimisers against plain numpy formulas."""

import numpy as np
import pytest

from efvi.inference.ngvi import _kernels as kernels

P = 57


def _prior(kind, rng):
    """Prior precision and mean as the kernels take them (length 1 or P) and as numpy broadcasts them."""
    if kind == "scalar":
        return np.array([2.0]), np.array([0.3]), 2.0, 0.3
    precision, mean = rng.uniform(0.5, 3.0, P), rng.normal(size=P)
    return precision, mean, precision, mean


def _state(rng, n_samples):
    return dict(grads=rng.normal(size=(n_samples, P)), noise=rng.normal(size=(n_samples, P)),
                mean=rng.normal(size=P), hess=rng.uniform(0.0, 2.0, P), momentum=rng.normal(size=P))


def _corrected(hess, estimate, rho, delta):
    gap = estimate - hess
    return hess + rho * gap + 0.5 * rho ** 2 * gap ** 2 / (hess + delta)


@pytest.mark.parametrize("n_fresh, n_samples", [(1, 1), (3, 3), (2, 4)])
@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_perturb_draws_numpys_normals_in_order(n_fresh, n_samples, kind):
    rng = np.random.default_rng(0)
    precision, _, precision_np, _ = _prior(kind, rng)
    mean, hess, ess = rng.normal(size=P), rng.uniform(0, 2, P), 50.0
    noise, params, std = np.empty((n_samples, P)), np.empty((n_samples, P)), np.empty(P)
    kernels.perturb(np.random.default_rng(7), mean, hess, ess, precision, n_fresh, noise, params, std)
    fresh = np.random.default_rng(7).standard_normal((n_fresh, P))
    expected_noise = np.concatenate([fresh, -fresh[:n_samples - n_fresh]])
    np.testing.assert_array_equal(noise, expected_noise)
    np.testing.assert_array_equal(std, 1.0 / np.sqrt(ess * hess + precision_np))
    np.testing.assert_array_equal(params, mean + expected_noise * std)


def test_standard_normal_continues_the_generators_stream():
    rng, reference = np.random.default_rng(3), np.random.default_rng(3)
    rng.random(5), reference.random(5)
    out = np.empty((2, 10))
    kernels.standard_normal(rng, out, 2)
    np.testing.assert_array_equal(out, reference.standard_normal((2, 10)))
    assert rng.random() == reference.random()


@pytest.mark.parametrize("n_samples", [1, 3])
@pytest.mark.parametrize("kind", ["scalar", "vector"])
@pytest.mark.parametrize("rescale_lr, clip_radius", [(True, np.inf), (False, 0.05)])
def test_ivon_update_equals_its_numpy_formulas(n_samples, kind, rescale_lr, clip_radius):
    rng = np.random.default_rng(1)
    state = _state(rng, n_samples)
    precision, prior_mean, precision_np, prior_mean_np = _prior(kind, rng)
    std = rng.uniform(0.1, 1.0, P)
    ess, beta1, rho, step, lr, hess_init = 40.0, 0.9, 0.2, 3, 0.1, 0.5
    out = [np.empty(P) for _ in range(3)]
    status = kernels.ivon_update(state["grads"], state["noise"], std, state["mean"], state["hess"],
                                 state["momentum"], ess, precision, prior_mean, beta1, rho, 1 - beta1 ** step, lr,
                                 hess_init, rescale_lr, clip_radius, *out)
    delta = precision_np / ess
    estimate = np.mean(state["grads"] * state["noise"], axis=0) / std
    momentum = beta1 * state["momentum"] + (1 - beta1) * state["grads"].mean(axis=0)
    hess = _corrected(state["hess"], estimate, rho, delta)
    direction = (momentum / (1 - beta1 ** step) + delta * (state["mean"] - prior_mean_np)) / (hess + delta)
    step_size = lr * (hess_init + delta) if rescale_lr else lr
    mean = state["mean"] - step_size * np.clip(direction, -clip_radius, clip_radius)
    assert status == 0
    for got, expected in zip(out, (mean, hess, momentum)):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("n_samples", [1, 3])
@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_vogn_update_equals_its_numpy_formulas_and_counts_corrections(n_samples, kind):
    rng = np.random.default_rng(2)
    state = _state(rng, n_samples)
    precision, prior_mean, precision_np, prior_mean_np = _prior(kind, rng)
    curv = rng.uniform(0, 3, (n_samples, P))
    curv[:, :5] = -1e3                    # an indefinite curvature on five coordinates
    ess, beta1, rho, step, lr = 40.0, 0.5, 0.3, 2, 0.1
    out = [np.empty(P) for _ in range(3)]
    status, n_corrected = kernels.vogn_update(state["grads"], curv, state["mean"], state["hess"],
                                              state["momentum"], ess, precision, prior_mean, beta1, rho,
                                              1 - beta1 ** step, lr, *out)
    delta = np.broadcast_to(precision_np / ess, (P,))
    plain = (1 - rho) * state["hess"] + rho * curv.mean(axis=0)
    bad = ~(plain + delta > 0)
    hess = np.where(bad, _corrected(state["hess"], curv.mean(axis=0), rho, delta), plain)
    momentum = beta1 * state["momentum"] + (1 - beta1) * (state["grads"].mean(axis=0)
                                                          + delta * (state["mean"] - prior_mean_np))
    mean = state["mean"] - lr * momentum / (1 - beta1 ** step) / (hess + delta)
    assert status == 0 and n_corrected == bad.sum() == 5
    for got, expected in zip(out, (mean, hess, momentum)):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("n_samples", [1, 3])
@pytest.mark.parametrize("kind", ["scalar", "vector"])
def test_vadam_update_equals_its_numpy_formulas(n_samples, kind):
    rng = np.random.default_rng(3)
    state = _state(rng, n_samples)
    precision, prior_mean, precision_np, prior_mean_np = _prior(kind, rng)
    ess, beta1, beta2, step, lr = 40.0, 0.9, 0.99, 4, 0.01
    out = [np.empty(P) for _ in range(3)]
    status = kernels.vadam_update(state["grads"], state["mean"], state["hess"], state["momentum"], ess, precision,
                                  prior_mean, beta1, beta2, 1 - beta1 ** step, 1 - beta2 ** step, lr, *out)
    delta = precision_np / ess
    momentum = beta1 * state["momentum"] + (1 - beta1) * (state["grads"].mean(axis=0)
                                                          + delta * (state["mean"] - prior_mean_np))
    hess = beta2 * state["hess"] + (1 - beta2) * np.mean(state["grads"] ** 2, axis=0)
    mean = state["mean"] - lr * momentum / (1 - beta1 ** step) / (np.sqrt(hess / (1 - beta2 ** step)) + delta)
    assert status == 0
    for got, expected in zip(out, (mean, hess, momentum)):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("n_samples", [1, 3])
@pytest.mark.parametrize("square_root", [False, True])
def test_vprop_update_equals_its_numpy_formulas(n_samples, square_root):
    rng = np.random.default_rng(4)
    state = _state(rng, n_samples)
    precision, prior_mean, precision_np, prior_mean_np = _prior("vector", rng)
    ess, beta, lr = 40.0, 0.9, 0.01
    out = [np.empty(P) for _ in range(2)]
    status = kernels.vprop_update(state["grads"], state["mean"], state["hess"], ess, precision, prior_mean, beta,
                                  lr, square_root, *out)
    delta = precision_np / ess
    hess = beta * state["hess"] + (1 - beta) * np.mean(state["grads"] ** 2, axis=0)
    scale = (np.sqrt(hess) if square_root else hess) + delta
    mean = state["mean"] - lr * (state["grads"].mean(axis=0) + delta * (state["mean"] - prior_mean_np)) / scale
    assert status == 0
    for got, expected in zip(out, (mean, hess)):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_status_names_the_non_finite_output_and_a_non_positive_precision():
    rng = np.random.default_rng(5)
    state = _state(rng, 1)
    out = [np.empty(P) for _ in range(3)]
    grads = state["grads"].copy()
    grads[0, 3] = np.inf                 # an infinite gradient makes the momentum and the mean infinite
    status = kernels.vadam_update(grads, state["mean"], state["hess"], state["momentum"], 40.0, np.array([1.0]),
                                  np.array([0.0]), 0.9, 0.99, 0.1, 0.01, 0.01, *out)
    assert status & 1 and status & 4 and not status & kernels.PRECISION_BIT
    hess = np.full(P, -1e3)               # a (corrupted) negative curvature gives a negative precision
    status = kernels.vprop_update(state["grads"], state["mean"], hess, 40.0, np.array([1.0]), np.array([0.0]), 0.9,
                                  0.01, False, *out[:2])
    assert status == kernels.PRECISION_BIT
