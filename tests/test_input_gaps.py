"""Inputs that used to be accepted silently, or rejected without saying why, get a named error or a documented meaning.

Each error names the argument, what was expected and what was received.
"""

import datetime
import logging
import warnings

import numba
import numpy as np
import pytest

import efvi
from efvi import DiagonalGaussian, Gamma, Gaussian, Model, NormalWishart, Observe, Wishart, glm, gp, lds, likelihoods
from efvi.expfam import numba_cache
from efvi.expfam.checks import as_float
from efvi.inference import conjugate
from efvi.models import _parallel
from efvi.models.gp import kernels

RNG = np.random.default_rng(0)
X = RNG.normal(size=(20, 2))
Y = RNG.normal(size=20)
T = np.arange(20.0)


def _glm_model(X, y, dim=None):
    dim = X.shape[1] if dim is None else dim
    return Model({"w": Gaussian.from_mean_cov(np.zeros(dim), np.eye(dim))},
                 [glm.GLM(likelihoods.Gaussian(variance=1.0), X, y, on="w")])


# ---------------------------------------------------------------- complex input
def _dual_posterior():
    wide = RNG.normal(size=(3, 5))
    return _glm_model(wide, np.zeros(3)).fit().posterior["w"]


COMPLEX_ENTRY_POINTS = {
    "GLM y": (lambda: glm.GLM(likelihoods.Gaussian(variance=1.0), X, Y + 0j, on="w"), "y"),
    "Observe y": (lambda: Observe(likelihoods.Gaussian(variance=1.0), Y + 0j, on="f"), "y"),
    "validate_y": (lambda: likelihoods.Poisson().validate_y(np.ones(3) + 0j), "y"),
    "variational_expectations": (
        lambda: likelihoods.BernoulliLogit().variational_expectations(np.zeros(3) + 0j, np.ones(3), np.ones(3)),
        "mean"),
    "log_density y": (lambda: likelihoods.Gaussian(variance=1.0).log_density(Y, Y + 0j), "y"),
    "BinomialBeta trials": (lambda: conjugate.BinomialBeta(np.ones(3), on="p", trials=np.ones(3) + 0j), "trials"),
    "DualPosterior.predict": (lambda: _dual_posterior().predict(RNG.normal(size=(2, 5)) + 0j), "X_new"),
}


@pytest.mark.parametrize("case", COMPLEX_ENTRY_POINTS)
def test_complex_input_is_rejected_by_name_not_cast(case):
    make, name = COMPLEX_ENTRY_POINTS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)     # the old behaviour: a cast with a warning
        with pytest.raises(ValueError, match=rf"^{name} must be real; got a complex array of shape"):
            make()


# ---------------------------------------------------------------- zero dimensions
@pytest.mark.parametrize("make, message", [
    (lambda: Gaussian.from_mean_cov(np.zeros(0), np.eye(0)), r"mean must have shape \(\.\.\., D\) with dimension D >= 1; got shape \(0,\)"),
    (lambda: Gaussian.from_mean_precision(np.zeros(0), np.eye(0)), r"mean must have shape .* D >= 1; got shape \(0,\)"),
    (lambda: Gaussian.from_natural((np.zeros(0), np.zeros((0, 0)))), r"natural\[0\] .* event dimensions of size >= 1; got shape \(0,\)"),
    (lambda: Gaussian.from_mean_params((np.zeros(0), np.zeros((0, 0)))), r"mean\[0\] of Gaussian .* size >= 1; got shape \(0,\)"),
    (lambda: DiagonalGaussian.from_mean_var(np.zeros(0), 1.0), r"mean must have shape .* D >= 1; got shape \(0,\)"),
    (lambda: Wishart(3.0, np.eye(0)), r"scale must be at least 1 x 1 .*; got shape \(0, 0\)"),
    (lambda: NormalWishart(np.zeros(0), 1.0, 3.0, np.eye(0)), r"scale must be at least 1 x 1"),
])
def test_zero_dimensional_gaussians_are_rejected(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("n_harmonics", [0, -1])
def test_periodic_needs_at_least_one_harmonic(n_harmonics):
    with pytest.raises(ValueError, match=rf"n_harmonics must be None or an integer >= 1 .*; got {n_harmonics}"):
        kernels.Periodic(n_harmonics=n_harmonics)
    assert kernels.Periodic(n_harmonics=1).n_harmonics == 1


def test_zero_column_design_is_rejected_before_blas():
    with pytest.raises(ValueError, match=r"X must have at least one column .*; got shape \(5, 0\)"):
        glm.GLM(likelihoods.Gaussian(variance=1.0), np.zeros((5, 0)), np.zeros(5), on="w")


# ---------------------------------------------------------------- no data
def test_a_factor_with_no_data_points_is_an_error_not_a_converged_prior():
    with pytest.raises(ValueError, match=r"factors\[0\] \(GLM\(on='w'\)\) has no data: expected at least one "
                                         r"data point; got 0"):
        _glm_model(np.zeros((0, 2)), np.zeros(0))


def test_a_factor_whose_observations_are_all_missing_is_an_error():
    with pytest.raises(ValueError, match=r"has no data: expected at least one observed value; got 5 data "
                                         r"points, all missing \(NaN\)"):
        _glm_model(X[:5], np.full(5, np.nan))
    with pytest.raises(ValueError, match="has no data"):
        Model({"f": lds.MarkovGP(kernels.Matern32(), T)},
              [Observe(likelihoods.Gaussian(variance=1.0), np.full(20, np.nan), on="f")])


def test_empty_conjugate_data_is_an_error():
    with pytest.raises(ValueError, match=r"has no data: expected at least one data point; got 0"):
        Model({"r": Gamma(2.0, 1.0)}, [conjugate.PoissonGamma(np.zeros(0), on="r")])


def test_some_missing_observations_still_fit():
    y = Y.copy()
    y[::2] = np.nan
    assert _glm_model(X, y).fit().converged


# ---------------------------------------------------------------- data frames
def test_a_string_column_is_named():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"age": [1.0, 2.0], "city": ["Oslo", "Rome"], "z": [0.0, 1.0]})
    with pytest.raises(ValueError, match=r"^X must be numeric; got column 'city' of dtype ") as info:
        glm.GLM(likelihoods.Gaussian(variance=1.0), frame, np.zeros(2), on="w")
    assert "Oslo" not in str(info.value)
    assert as_float(frame[["age", "z"]], "X").shape == (2, 2)


# ---------------------------------------------------------------- datetimes
def test_datetime_times_become_days_since_the_first():
    pd = pytest.importorskip("pandas")
    index = pd.date_range("2024-03-01", periods=6, freq="12h")
    days = np.arange(6) * 0.5
    for times in (index, np.asarray(index), list(index), [x.to_pydatetime() for x in index], pd.Series(index)):
        block = lds.MarkovGP(kernels.Matern32(lengthscale=2.0), times)
        np.testing.assert_array_equal(block.t, days)
        assert block.t_origin == np.datetime64("2024-03-01T00:00")
    aware = [datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
             datetime.datetime(2024, 3, 2, tzinfo=datetime.timezone.utc)]
    np.testing.assert_allclose(lds.MarkovGP(kernels.Matern32(), aware).t, [0.0, 1.0 + 1.0 / 24])


def test_datetime_fit_equals_the_float_fit_and_predicts_at_dates():
    pd = pytest.importorskip("pandas")
    index = pd.date_range("2024-03-01", periods=20, freq="D")
    y = np.sin(T / 3)

    def fit(times):
        return Model({"f": lds.MarkovGP(kernels.Matern32(lengthscale=3.0), times)},
                     [Observe(likelihoods.Gaussian(variance=0.1), y, on="f")]).fit()

    by_date, by_day = fit(index), fit(T)
    np.testing.assert_allclose(by_date.posterior["f"].mean, by_day.posterior["f"].mean, rtol=0, atol=1e-12)
    ahead = by_date.posterior["f"].predict(np.array(["2024-03-25T00:00", "2024-03-05T12:00"], dtype="datetime64[m]"))
    np.testing.assert_allclose(ahead[0], by_day.posterior["f"].predict(np.array([24.0, 4.5]))[0], atol=1e-12)


def test_other_time_types_get_a_hint():
    with pytest.raises(ValueError, match=r"t must be an array of real numbers or datetimes; got dtype "
                                         r"timedelta64\[h\]\. Convert other times to numbers first"):
        lds.MarkovGP(kernels.Matern32(), np.arange(5) * np.timedelta64(1, "h"))


# ---------------------------------------------------------------- tol
@pytest.mark.parametrize("tol", [np.float32(1e-6), np.float16(1e-3), np.float64(1e-6), np.int64(0)])
def test_numpy_real_scalars_are_accepted_as_tol(tol):
    assert _glm_model(X, Y).fit(tol=tol).converged


@pytest.mark.parametrize("tol", [np.complex64(1e-6), True, "1e-6", np.float32(np.nan)])
def test_other_tol_is_named(tol):
    with pytest.raises(ValueError, match="tol must be a finite number >= 0"):
        _glm_model(X, Y).fit(tol=tol)


# ---------------------------------------------------------------- exploding LDS prior
def test_an_exploding_lds_prior_is_blamed_on_the_prior_not_the_sites():
    with pytest.raises(ValueError, match=r"transition, process_cov and init_cov must give a valid prior; got one "
                                         r"whose state covariance .* overflows float64 by time step 1 \(largest "
                                         r"\|eigenvalue\| of transition: 1e\+200\)"):
        lds.LDS(np.eye(1) * 1e200, np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=10)
    with pytest.raises(ValueError, match=r"overflows float64 by time step 15[0-9]"):
        lds.LDS(np.eye(1) * 10.0, np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=200)
    lds.LDS(np.eye(1) * 10.0, np.eye(1), np.ones(1), np.zeros(1), np.eye(1), n_steps=100)   # large but finite


# ---------------------------------------------------------------- resuming another model
def test_resuming_a_fit_of_another_dimension_names_the_block_and_both_shapes():
    y = (RNG.random(20) < 0.5).astype(float)
    three = Model({"w": Gaussian.from_mean_cov(np.zeros(3), np.eye(3))},
                  [glm.GLM(likelihoods.BernoulliLogit(), RNG.normal(size=(20, 3)), y, on="w")]).fit()
    two = Model({"w": Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},
                [glm.GLM(likelihoods.BernoulliLogit(), RNG.normal(size=(20, 2)), y, on="w")])
    with pytest.raises(ValueError, match=r"init does not match this model: .* block 'w' .*\[\(3,\), \(3, 3\)\].*"
                                         r"\[\(2,\), \(2, 2\)\]"):
        two.fit(init=three)


def test_resuming_a_fit_with_other_data_points_names_the_shapes():
    short = Model({"f": gp.GP(kernels.RBF(), X[:10])}, [Observe(likelihoods.Gaussian(variance=1.0), Y[:10], on="f")])
    long = Model({"f": gp.GP(kernels.RBF(), X[:12])}, [Observe(likelihoods.Gaussian(variance=1.0), Y[:12], on="f")])
    with pytest.raises(ValueError, match=r"block 'f' .*\[\(10,\), \(10,\)\].*\[\(12,\), \(12,\)\]"):
        long.fit(init=short.fit())


# ---------------------------------------------------------------- reprs
def test_reprs_show_the_parameters_of_small_batches():
    assert repr(Gamma(2.0, 1.0)) == "Gamma(shape=2.0, rate=1.0)"
    assert repr(Gaussian.from_mean_cov(np.zeros(2), np.eye(2))) == "Gaussian(mean=[0.0, 0.0], cov=[[1.0, 0.0], [0.0, 1.0]])"
    assert repr(DiagonalGaussian.from_mean_var(np.ones(2), 2.0)) == "DiagonalGaussian(mean=[1.0, 1.0], var=[2.0, 2.0])"
    assert repr(efvi.Bernoulli(0.25)) == "Bernoulli(probs=0.25)"
    assert repr(efvi.Beta(1.0, 2.5)) == "Beta(a=1.0, b=2.5)"
    assert repr(Gamma(np.ones(100), 1.0)) == "Gamma(batch_shape=(100,), shape=<(100,) all 1.0>, rate=<(100,) all 1.0>)"
    assert repr(likelihoods.Gaussian(variance=0.3)) == "Gaussian(variance=0.3)"
    assert repr(kernels.Matern32(lengthscale=2.0)) == "Matern32(lengthscale=2.0, variance=1.0)"


def test_reprs_of_large_parameters_show_their_shapes_and_ranges():
    mean, var = np.linspace(-1.5, 0.5, 30), np.linspace(0.25, 2.0, 30)
    assert repr(DiagonalGaussian.from_mean_var(mean, var)) == \
        "DiagonalGaussian(mean=<(30,) from -1.5 to 0.5>, var=<(30,) from 0.25 to 2.0>)"
    assert repr(Gaussian.from_mean_cov(np.zeros(5), 2.0 * np.eye(5))) == \
        "Gaussian(mean=<(5,) all 0.0>, cov=<(5, 5) from 0.0 to 2.0>)"
    assert repr(DiagonalGaussian.from_mean_var(np.zeros((4, 3)), 1.0)) == \
        "DiagonalGaussian(batch_shape=(4,), mean=<(4, 3) all 0.0>, var=<(4, 3) all 1.0>)"


# ---------------------------------------------------------------- first use and threads
def test_compiling_is_logged_and_announced_once(monkeypatch, caplog):
    listener = numba_cache._compile_listener
    monkeypatch.setattr(listener, "announced", False)
    monkeypatch.setattr(listener, "total", 0.0)
    monkeypatch.setattr(numba_cache, "COMPILE_NOTICE_SECONDS", 0.0)
    namespace = {"__name__": f"{listener.package}.fake_kernels"}
    exec("def double(x):\n    return 2.0 * x\n\ndef triple(x):\n    return 3.0 * x\n", namespace)
    with caplog.at_level(logging.INFO, logger=listener.package):
        assert numba.njit(namespace["double"])(1.0) == 2.0
        assert numba.njit(namespace["triple"])(1.0) == 3.0
    compiled = [r for r in caplog.records if r.levelno == logging.INFO and "compiled numba kernel" in r.getMessage()]
    notices = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(compiled) == 2
    assert len(notices) == 1 and "compiling numba kernels on first use" in notices[0].getMessage()
    assert "the first fit of each kind of model compiles for about 5-20 s" in notices[0].getMessage()


def test_other_packages_compiling_is_not_announced(caplog):
    with caplog.at_level(logging.INFO, logger=numba_cache._compile_listener.package):
        numba.njit(lambda x: x + 1.0)(1.0)
    assert not [r for r in caplog.records if "numba kernel" in r.getMessage()]


def test_blas_is_limited_to_one_thread_inside_efvi_threads(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    monkeypatch.setattr(_parallel, "NUM_THREADS", 2)
    seen = []

    def kernel(rows):
        seen.append(max((lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                         if lib["user_api"] == "blas"), default=1))
        return (np.arange(rows.start, rows.stop, dtype=float),)

    n = 2 * _parallel.MIN_POINTS_PER_THREAD
    (out,) = _parallel.map_points(kernel, n)
    np.testing.assert_array_equal(out, np.arange(n))
    assert seen == [1, 1]
