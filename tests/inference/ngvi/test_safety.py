"""Bad input, non-finite gradients, adversarial curvature, determinism."""

import numpy as np
import pytest

from efvi.inference import ngvi

from .models import LinearRegression, LogisticRegression

ALL = [ngvi.IVON, ngvi.VOGN, ngvi.Vadam, ngvi.Vprop, ngvi.VAN, ngvi.BayesByBackprop, ngvi.Adam, ngvi.RMSprop]
SAMPLED = [ngvi.IVON, ngvi.VOGN, ngvi.Vadam, ngvi.Vprop, ngvi.VAN, ngvi.BayesByBackprop]
WITH_BETAS = [ngvi.IVON, ngvi.VOGN, ngvi.Vadam, ngvi.VAN, ngvi.BayesByBackprop, ngvi.Adam]


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ np.array([1.0, -1.0, 0.5]) + 0.3 * rng.normal(size=n)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("argument, value, expected", [
    ("lr", 0.0, "positive"), ("lr", -1e-3, "positive"), ("lr", np.nan, "positive"),
    ("prior_precision", 0.0, "positive"), ("prior_precision", -1.0, "positive"),
    ("n_data", 0, ">= 1"), ("seed", -1, ">= 0"),
])
def test_bad_arguments_name_the_argument_expectation_and_value(cls, argument, value, expected):
    kwargs = {"prior_precision": 1.0, "lr": 0.1, argument: value}
    n_data = kwargs.pop("n_data", 10)
    with pytest.raises(ValueError) as error:
        cls(LinearRegression(3, 0.1), n_data, **kwargs)
    assert argument in str(error.value) and expected in str(error.value) and repr(value) in str(error.value)


@pytest.mark.parametrize("cls", SAMPLED)
@pytest.mark.parametrize("value", [0, -2, 1.5])
def test_mc_samples_must_be_a_positive_integer(cls, value):
    with pytest.raises(ValueError, match=rf"mc_samples must be an integer >= 1; got {value!r}"):
        cls(LinearRegression(3, 0.1), 10, mc_samples=value)


@pytest.mark.parametrize("cls", WITH_BETAS)
@pytest.mark.parametrize("betas, name", [((1.0, 0.9), "beta1"), ((0.9, 1.0), "beta2"), ((-0.1, 0.9), "beta1")])
def test_betas_must_lie_in_the_unit_interval(cls, betas, name):
    with pytest.raises(ValueError, match=rf"{name} must be a float in \[0, 1\); got"):
        cls(LinearRegression(3, 0.1), 10, betas=betas)


@pytest.mark.parametrize("cls", [ngvi.Vprop, ngvi.RMSprop])
def test_single_beta_must_lie_in_the_unit_interval(cls):
    with pytest.raises(ValueError, match=r"beta must be a float in \[0, 1\); got 1.0"):
        cls(LinearRegression(3, 0.1), 10, beta=1.0)


@pytest.mark.parametrize("cls", ALL)
def test_n_data_smaller_than_the_batch_is_refused(cls):
    X, y = _data(30)
    optimizer = cls(LinearRegression(3, 0.1), 20)
    with pytest.raises(ValueError, match="n_data must be at least the batch size 30; got n_data=20"):
        optimizer.step(X, y)
    assert optimizer.n_steps == 0


def test_a_model_without_the_protocol_is_refused():
    with pytest.raises(TypeError, match="lacks"):
        ngvi.IVON(object(), 10)


class _NaNAfter(LinearRegression):
    """Returns a NaN gradient from the ``bad_call``-th call on."""

    def __init__(self, bad_call):
        super().__init__(3, 0.1)
        self.calls, self.bad_call = 0, bad_call

    def log_lik_and_grads(self, params, X, y, curvature=None):
        self.calls += 1
        log_lik, grad, curv = super().log_lik_and_grads(params, X, y, curvature)
        if self.calls >= self.bad_call:
            grad = np.where(np.arange(grad.shape[-1]) == 1, np.nan, grad)
        return log_lik, grad, curv


@pytest.mark.parametrize("cls", ALL)
def test_a_nan_gradient_names_the_step_and_leaves_the_state_unchanged(cls):
    X, y = _data()
    optimizer = cls(_NaNAfter(bad_call=3), 30, lr=0.01)
    optimizer.step(X, y)
    optimizer.step(X, y)
    before = {k: np.copy(v) for k, v in vars(optimizer).items() if isinstance(v, np.ndarray)}
    with pytest.raises(ngvi.NonFiniteGradientError, match="step 3") as error:
        optimizer.step(X, y)
    assert isinstance(error.value, FloatingPointError) and error.value.step == 3
    assert optimizer.n_steps == 2
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(optimizer, name), value, err_msg=name)


class _Adversarial(LinearRegression):
    """A non-log-concave loss: NLL = -scale |w - 1|^2 / 2 per example, huge negative curvature."""

    def __init__(self, scale):
        super().__init__(3, 1.0)
        self.scale = scale

    def log_lik_and_grads(self, params, X, y, curvature=None):
        params = np.asarray(params, dtype=float)
        B = len(y)
        log_lik = 0.5 * self.scale * B * np.sum((params - 1) ** 2, axis=-1)
        grad = self.scale * B * (params - 1)
        if curvature in ("squared_gradients", "gauss_newton"):
            curv = -self.scale * B * np.ones_like(params)
        elif curvature in ("hessian", "gauss_newton_full"):
            curv = self.scale * B * np.eye(3) * (1 if curvature == "hessian" else -1)
        else:
            curv = None
        return log_lik, grad, curv


@pytest.mark.parametrize("make", [
    lambda m: ngvi.IVON(m, 30, lr=0.1, betas=(0.9, 0.5), mc_samples=4),
    lambda m: ngvi.VOGN(m, 30, lr=0.1, betas=(0.0, 0.5), curvature="gauss_newton"),
    lambda m: ngvi.VOGN(m, 30, lr=0.1, betas=(0.0, 0.5), curvature="hessian"),
    lambda m: ngvi.VAN(m, 30, lr=0.1, betas=(0.0, 0.5)),
    lambda m: ngvi.VAN(m, 30, lr=0.1, betas=(0.0, 0.5), curvature="gauss_newton_full"),
], ids=["IVON", "VOGN-gn", "VOGN-hessian", "VAN", "VAN-gn"])
@pytest.mark.parametrize("scale", [1e3, 1e8])
def test_precision_stays_positive_under_adversarial_curvature(make, scale):
    X, y = _data()
    optimizer = make(_Adversarial(scale))
    for _ in range(20):
        try:
            optimizer.step(X, y)
        except FloatingPointError:
            pass  # an overflowing proposal is refused; what is kept must stay valid
        precision = optimizer.precision
        assert np.all(np.isfinite(precision))
        assert np.all(np.linalg.eigvalsh(precision) > 0) if precision.ndim == 2 else np.all(precision > 0)
        assert np.all(np.isfinite(optimizer.posterior.mean))
    assert optimizer.n_steps > 0


def test_ivon_correction_keeps_the_curvature_above_minus_delta():
    from efvi.inference.ngvi._kernels import corrected_precision_update

    rng = np.random.default_rng(0)
    hess = rng.uniform(-0.09, 5, size=1000)
    estimate = rng.normal(scale=1e6, size=1000)
    out = np.empty_like(hess)
    for rho in (1e-5, 0.1, 0.5, 1.0):
        corrected_precision_update(hess, estimate, rho, np.array([0.1]), out)
        assert np.all(out + 0.1 > 0)


@pytest.mark.parametrize("cls", ALL)
def test_a_fixed_seed_gives_the_same_run(cls):
    X, y = _data()
    model = LogisticRegression(3)
    labels = (y > 0).astype(float)

    def run(seed):
        optimizer = cls(model, 30, lr=0.05, seed=seed)
        losses = [optimizer.step(X[i:i + 10], labels[i:i + 10]) for i in (0, 10, 20, 0)]
        return np.array(losses), optimizer.sample(5), optimizer.predict(X, n_samples=7)

    first, second, other = run(3), run(3), run(4)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    if cls not in (ngvi.Adam, ngvi.RMSprop):
        assert not np.array_equal(first[0], other[0])
