"""Contract tests run on every likelihood exported by ``efvi.models.likelihoods``, with every link.

Independent references: scipy.stats log densities and moments, seeded Monte
Carlo with score-function gradients (which never touch the likelihood's own
derivatives) and a tolerance of five standard errors, central finite
differences, the Gauss-Hermite route that every closed form must match, and
for every compiled likelihood its ``Custom`` twin (the same log density in
autograd.numpy), which must give the same expectations, predictions and fits.
"""

import copy

import numpy as np
import pytest

from efvi.expfam import Gaussian as GaussianPrior
from efvi.inference import Model
from efvi.models import Observe, glm, gp, lds
from efvi.models import likelihoods as L

from .cases import CASES, LINKED, compiled_cases, likelihood_classes

N = 6
MEAN = np.array([-2.0, -0.7, 0.0, 0.4, 1.2, 2.0])
VAR = np.array([0.05, 0.3, 0.5, 1.0, 0.2, 0.8])
MC_SAMPLES = 200_000
N_SIGMA = 5.0
CLOSED_FORM_ROUTES = {
    "_variational_expectations": "_quadrature_expectations",
    "_predict_mean_var": "_quadrature_predict_mean_var",
    "_predict_log_density": "_quadrature_predict_log_density",
}


@pytest.fixture(params=list(CASES))
def cls(request):
    """The name of a case in ``cases.CASES`` (a likelihood class, or a distribution with a link)."""
    return request.param


def _setup(cls, seed=0):
    case = CASES[cls]
    lik = case.make(N)
    rng = np.random.default_rng(seed)
    y = case.sample(lik, rng, MEAN + np.sqrt(VAR) * rng.standard_normal(N))
    return case, lik, y


def _close(actual, expected, tol):
    actual, expected = np.asarray(actual), np.asarray(expected)
    bad = ~(np.abs(actual - expected) <= tol * (1.0 + np.abs(expected)))
    assert not bad.any(), f"max relative error {np.max(np.abs(actual - expected) / (1 + np.abs(expected))):.3g} > {tol}"


def test_every_likelihood_has_a_case():
    classes = likelihood_classes()
    assert classes, "efvi.models.likelihoods exports no likelihood"
    covered = {type(case.make(2)) for case in CASES.values()}
    missing = [cls.__name__ for cls in classes if cls not in covered]
    assert not missing, f"likelihoods without a test case in cases.py: {missing}"
    stale = [name for name, case in CASES.items() if type(case.make(2)) not in classes]
    assert not stale, f"test cases for classes not exported by efvi.models.likelihoods: {stale}"


def test_every_distribution_has_a_case_with_every_link():
    with_links = [cls for cls in likelihood_classes() if "link" in cls._repr_fields]
    assert set(with_links) == set(LINKED), "list every distribution with links in cases.LINKED"
    for cls in with_links:
        covered = {case.make(2).link for case in CASES.values() if type(case.make(2)) is cls}
        expected = {name for name, link in L.LINKS.items() if link.domain == cls.domain}
        assert covered == expected, f"{cls.__name__}: cases for links {sorted(covered)}, registered {sorted(expected)}"


def test_every_compiled_likelihood_has_a_custom_twin():
    missing = [name for name in compiled_cases() if CASES[name].twin is None]
    assert not missing, f"compiled likelihoods without a Custom twin in cases.py: {missing}"


def test_log_density_matches_scipy(cls):
    case, lik, y = _setup(cls)
    f = MEAN + np.linspace(-3.0, 3.0, 7)[:, None]
    _close(lik.log_density(f, y), case.logpdf(lik, f, y), 1e-12)


def test_pointwise_derivatives_match_finite_differences(cls):
    case, lik, y = _setup(cls)
    h = 1e-5
    value, d1, d2 = lik._pointwise(MEAN, y)
    up, d1_up, _ = lik._pointwise(MEAN + h, y)
    down, d1_down, _ = lik._pointwise(MEAN - h, y)
    # central differences: truncation ~ h^2 = 1e-10, rounding ~ 1e-16 |value| / h
    _close(d1, (up - down) / (2 * h), 1e-7)
    _close(d2, (d1_up - d1_down) / (2 * h), 1e-7)


def test_closed_forms_are_declared_and_match_quadrature(cls):
    """A declared closed form matches its quadrature route; any other route is that quadrature route, bit for bit."""
    case, lik, y = _setup(cls)
    for name, route in CLOSED_FORM_ROUTES.items():
        args = (MEAN, VAR) if name == "_predict_mean_var" else (MEAN, VAR, y)
        result = getattr(lik, name)(*args)
        if name in case.closed_forms:
            quadrature = getattr(lik, route)(*args, n_points=100)
            for c, q in zip(np.atleast_2d(result), np.atleast_2d(quadrature)):
                _close(c, q, 1e-10)
        else:
            for a, b in zip(np.atleast_2d(result), np.atleast_2d(getattr(lik, route)(*args))):
                np.testing.assert_array_equal(a, b, err_msg=f"{name} is a closed form: declare it in cases.py")


def test_quadrature_matches_monte_carlo(cls):
    case, lik, y = _setup(cls)
    rng = np.random.default_rng(1)
    z = rng.standard_normal((MC_SAMPLES, N))
    a = MEAN + np.sqrt(VAR) * z
    logp = case.logpdf(lik, a, y)
    centred = logp - case.logpdf(lik, MEAN, y)  # a constant baseline keeps the score estimators unbiased
    samples = {
        "E": logp,
        "dE/dm": centred * z / np.sqrt(VAR),
        "dE/dv": centred * (z**2 - 1.0) / (2.0 * VAR),
    }
    for name, estimate in zip(samples, lik._quadrature_expectations(MEAN, VAR, y)):
        mc = samples[name].mean(axis=0)
        se = samples[name].std(axis=0) / np.sqrt(MC_SAMPLES)
        assert np.all(np.abs(estimate - mc) <= N_SIGMA * se), (name, estimate, mc, se)


@pytest.mark.parametrize("route", ["_variational_expectations", "_quadrature_expectations"])
def test_expectation_derivatives_match_finite_differences(cls, route):
    case, lik, y = _setup(cls)
    expectations = getattr(lik, route)
    h = 1e-5
    _, d_mean, d_var = expectations(MEAN, VAR, y, n_points=100)
    fd_mean = (expectations(MEAN + h, VAR, y, n_points=100)[0] - expectations(MEAN - h, VAR, y, n_points=100)[0]) / (2 * h)
    fd_var = (expectations(MEAN, VAR + h, y, n_points=100)[0] - expectations(MEAN, VAR - h, y, n_points=100)[0]) / (2 * h)
    _close(d_mean, fd_mean, 1e-7)
    _close(d_var, fd_var, 1e-7)


def test_twenty_gauss_hermite_points_agree_with_one_hundred(cls):
    case, lik, y = _setup(cls)
    var = 0.25 * VAR
    for few, many in zip(lik._quadrature_expectations(MEAN, var, y, 20), lik._quadrature_expectations(MEAN, var, y, 100)):
        _close(few, many, 1e-8)


def test_small_variance_limit_is_the_pointwise_density(cls):
    case, lik, y = _setup(cls)
    value, d1, d2 = lik._pointwise(MEAN, y)
    tiny = np.full(N, 1e-12)
    for route in (lik._variational_expectations, lik._quadrature_expectations):
        e, d_mean, d_var = route(MEAN, tiny, y)
        _close(e, value, 1e-9)
        _close(d_mean, d1, 1e-9)
        _close(d_var, 0.5 * d2, 1e-9)


def test_missing_observations_give_exact_zeros(cls):
    case, lik, y = _setup(cls)
    missing = np.array([False, True, False, False, True, False])
    y_missing = np.where(missing, np.nan, y)
    for route in (lik.variational_expectations, lik._variational_expectations, lik._quadrature_expectations):
        full = route(MEAN, VAR, y)
        for with_nan, without in zip(route(MEAN, VAR, y_missing), full):
            assert np.all(with_nan[missing] == 0.0)
            np.testing.assert_array_equal(with_nan[~missing], without[~missing])
    assert np.all(np.isnan(lik.predict_log_density(MEAN, VAR, y_missing)[missing]))
    assert np.all(np.isnan(lik.log_density(MEAN, y_missing)[missing]))


def test_support_violations_name_y(cls):
    case = CASES[cls]
    for bad in case.invalid_y:
        lik = case.make(len(bad))
        for call in (lambda: lik.validate_y(bad), lambda: lik.log_density(np.zeros(len(bad)), bad),
                     lambda: lik.variational_expectations(np.zeros(len(bad)), np.ones(len(bad)), bad)):
            with pytest.raises(ValueError, match=r"^y must contain") as info:
                call()
            assert "got" in str(info.value)


def test_infinite_observations_are_rejected(cls):
    case, lik, y = _setup(cls)
    y_inf = y.copy()
    y_inf[2] = np.inf
    with pytest.raises(ValueError, match=r"^y must contain finite"):
        lik.validate_y(y_inf)
    with pytest.raises(ValueError, match="one-dimensional"):
        lik.validate_y(y[:, None])


def test_extreme_inputs_give_no_nan(cls):
    case = CASES[cls]
    grid_m, grid_v = np.meshgrid([-1e3, -30.0, 0.0, 30.0, 1e3], [1e-12, 1e-6, 1.0, 1e3, 1e6])
    for lik, values in case.extreme:
        m, v, y = (np.ascontiguousarray(x.ravel()) for x in np.broadcast_arrays(grid_m[..., None], grid_v[..., None], np.asarray(values)))
        finite = case.finite(lik, m, v, y)
        for route in (lik.variational_expectations, lik._quadrature_expectations):
            for output in route(m, v, y):
                assert not np.isnan(output).any()
                assert np.isfinite(output[finite]).all()
        outputs = [*lik.predict_mean_var(m, v), lik.predict_log_density(m, v, y), lik.log_density(m, y)]
        assert not any(np.isnan(output).any() for output in outputs)
        # at the smallest variance, expectations are pointwise values to second order in v
        tiny = v == 1e-12
        value, d1, d2 = lik._pointwise(m[tiny], y[tiny])
        expected = (value + 0.5e-12 * d2, d1, 0.5 * d2)
        for route in (lik._variational_expectations, lik._quadrature_expectations):
            for output, reference in zip(route(m[tiny], v[tiny], y[tiny]), expected):
                np.testing.assert_allclose(output, reference, rtol=1e-9, atol=1e-9)


def test_predictions_match_monte_carlo(cls):
    case, lik, y = _setup(cls)
    rng = np.random.default_rng(2)
    a = MEAN + np.sqrt(VAR) * rng.standard_normal((MC_SAMPLES, N))
    cond_mean, cond_var = (np.broadcast_to(x, a.shape) for x in case.mean_var(lik, a))
    mean, var = lik.predict_mean_var(MEAN, VAR)
    mc_mean = cond_mean.mean(axis=0)
    assert np.all(np.abs(mean - mc_mean) <= N_SIGMA * cond_mean.std(axis=0) / np.sqrt(MC_SAMPLES))
    spread = (cond_mean - mc_mean) ** 2
    se_var = (cond_var.std(axis=0) + spread.std(axis=0)) / np.sqrt(MC_SAMPLES)
    assert np.all(np.abs(var - (cond_var.mean(axis=0) + spread.mean(axis=0))) <= N_SIGMA * se_var)
    density = np.exp(case.logpdf(lik, a, y))
    se_log = density.std(axis=0) / (np.sqrt(MC_SAMPLES) * density.mean(axis=0))
    assert np.all(np.abs(lik.predict_log_density(MEAN, VAR, y) - np.log(density.mean(axis=0))) <= N_SIGMA * se_log)


def test_subset_slices_per_point_parameters(cls):
    case, lik, y = _setup(cls)
    index = np.array([4, 0, 2])
    sub = lik.subset(index)
    if lik.per_point_name is None:
        assert sub is lik
    for full, part in zip(lik.variational_expectations(MEAN, VAR, y), sub.variational_expectations(MEAN[index], VAR[index], y[index])):
        np.testing.assert_array_equal(part, full[index])


def test_with_per_point_replaces_the_per_point_parameter(cls):
    case, lik, y = _setup(cls)
    if lik.per_point_name is None:
        with pytest.raises(ValueError, match="has no per-point parameter"):
            lik.with_per_point(1.0)
        return
    index = np.array([4, 0, 2])
    values = np.broadcast_to(getattr(lik, lik.per_point_name), y.shape)[index]
    rebuilt = lik.with_per_point(values)
    assert type(rebuilt) is type(lik) and rebuilt.n_points == lik.n_points
    for full, part in zip(lik.variational_expectations(MEAN, VAR, y),
                          rebuilt.variational_expectations(MEAN[index], VAR[index], y[index])):
        np.testing.assert_array_equal(part, full[index])


def test_per_point_parameters_must_match_the_data(cls):
    case, lik, y = _setup(cls)
    if lik.per_point_name is None:
        assert lik._per_point().shape == (1,)
        return
    with pytest.raises(ValueError, match=lik.per_point_name):
        lik.validate_y(np.append(y, y[0]))


def test_log_concave_and_conjugate_flags_match_the_second_derivative(cls):
    case, lik, y = _setup(cls)
    a = np.linspace(-8.0, 8.0, 161)[:, None] + np.zeros(N)
    _, _, d2 = lik._pointwise(a, y)
    assert (d2.max() <= 0.0) == lik.log_concave
    assert (np.ptp(d2) == 0.0) == lik.conjugate


def test_n_points_from_constructor_or_call(cls):
    case, lik, y = _setup(cls)
    few = copy.copy(lik)
    few.n_points = 7
    for a, b in zip(few._quadrature_expectations(MEAN, VAR, y), lik._quadrature_expectations(MEAN, VAR, y, n_points=7)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="n_points"):
        lik.variational_expectations(MEAN, VAR, y, n_points=0)
    with pytest.raises(ValueError, match="n_points"):
        L.Custom(lik.log_prob, n_points=2.5) if isinstance(lik, L.Custom) else type(lik)(n_points=2.5)


def test_invalid_parameters_are_named(cls):
    for make, name in CASES[cls].invalid_params:
        with pytest.raises(ValueError, match=name):
            make()


def test_latent_marginals_are_validated(cls):
    case, lik, y = _setup(cls)
    bad_var = VAR.copy()
    bad_var[3] = -1e-3
    bad_mean = MEAN.copy()
    bad_mean[0] = np.nan
    for args, name in [((MEAN, bad_var, y), "var"), ((bad_mean, VAR, y), "mean"),
                       ((MEAN[:-1], VAR, y), "shape"), ((MEAN, VAR, y[:-1]), "y")]:
        with pytest.raises(ValueError, match=name):
            lik.variational_expectations(*args)
    assert repr(lik).startswith(type(lik).__name__ + "(")


# --- every compiled likelihood against its Custom twin -------------------------------------------

TWIN_N = 60


def _twin_setup(cls, n=TWIN_N, seed=3):
    case = CASES[cls]
    if case.twin is None:
        pytest.skip("a Custom likelihood has no twin")
    lik = case.make(n)
    rng = np.random.default_rng(seed)
    mean = rng.uniform(-3.0, 3.0, n)
    var = np.exp(rng.uniform(np.log(1e-8), np.log(2.0), n))
    var[:3] = 0.0
    y = case.sample(lik, rng, mean + np.sqrt(var) * rng.standard_normal(n))
    y[5] = np.nan
    return case, lik, case.twin(lik), mean, var, y


def test_custom_twin_gives_the_same_expectations_and_predictions(cls):
    case, lik, twin, mean, var, y = _twin_setup(cls)
    assert isinstance(twin, L.Custom)
    for n_points in (None, 20):
        for ours, theirs in zip(twin.variational_expectations(mean, var, y, n_points=n_points),
                                lik.variational_expectations(mean, var, y, n_points=n_points)):
            _close(ours, theirs, 1e-10)
    for ours, theirs in zip(twin.predict_mean_var(mean, var), lik.predict_mean_var(mean, var)):
        _close(ours, theirs, 1e-10)
    observed = ~np.isnan(y)
    _close(twin.predict_log_density(mean, var, y)[observed], lik.predict_log_density(mean, var, y)[observed], 1e-10)
    f = mean + np.linspace(-2.0, 2.0, 5)[:, None]
    for ours, theirs in zip(twin._pointwise(f, y), lik._pointwise(f, y)):
        _close(ours[:, observed], theirs[:, observed], 1e-12)
    np.testing.assert_array_equal(twin.initial_latent(y), lik.initial_latent(y))


def _twin_model(structure, likelihood, y, t):
    kernel = gp.kernels.Matern32(lengthscale=2.0, variance=1.0)
    if structure == "glm":
        X = np.column_stack([np.ones_like(t), t / 5.0 - 1.0, np.cos(t)])
        return Model({"w": GaussianPrior.from_mean_cov(np.zeros(3), np.eye(3))}, [glm.GLM(likelihood, X, y, on="w")])
    prior = gp.GP(kernel, t[:, None]) if structure == "gp" else lds.MarkovGP(kernel, t)
    return Model({"f": prior}, [Observe(likelihood, y, on="f")])


@pytest.mark.parametrize("structure", ["glm", "gp", "markov_gp"])
def test_custom_twin_fits_like_its_compiled_likelihood(cls, structure):
    """The same fitted ELBO to 1e-8 (relative) and the same posterior."""
    case = CASES[cls]
    if case.twin is None:
        pytest.skip("a Custom likelihood has no twin")
    n = 30
    rng = np.random.default_rng(5)
    t = np.sort(rng.uniform(0.0, 10.0, n))
    lik = case.make(n)
    y = case.sample(lik, rng, 0.3 + np.sin(t))
    y[4] = np.nan
    fits = [_twin_model(structure, likelihood, y, t).fit(tol=1e-11, max_iter=1000)
            for likelihood in (lik, case.twin(lik))]
    assert all(fit.converged for fit in fits)
    assert abs(fits[1].elbo - fits[0].elbo) <= 1e-8 * max(1.0, abs(fits[0].elbo)), (fits[0].elbo, fits[1].elbo)
    block = "w" if structure == "glm" else "f"
    np.testing.assert_allclose(fits[1].posterior[block].mean, fits[0].posterior[block].mean, rtol=1e-6, atol=1e-7)
