"""Prediction from the Model API: ``fit.predict_latent`` and ``fit.predict`` against dense numpy references."""

import numpy as np
import pytest
import scipy.special
import scipy.stats

from efvi import FitResult, Gamma, Gaussian, Model, Observe, glm, gp, lds, likelihoods


def _dense_gp(K, K_cross, K_new, natural_mean, precision):
    """The GP posterior at new inputs from sites, by the textbook dense formulas (all precisions > 0)."""
    noise = np.diag(1.0 / precision)
    solve = np.linalg.solve(K + noise, np.column_stack([natural_mean / precision, K_cross]))
    return K_cross.T @ solve[:, 0], K_new - K_cross.T @ solve[:, 1:]


@pytest.fixture(scope="module")
def gp_fit():
    rng = np.random.default_rng(1)
    X = rng.uniform(-3, 3, size=(30, 2))
    y = np.sin(X[:, 0]) + 0.2 * rng.normal(size=30)
    kernel = gp.kernels.RBF(lengthscale=1.3, variance=0.8) + gp.kernels.Linear(variance=0.1)
    fit = Model({"f": gp.GP(kernel, X, mean=0.3)}, [Observe(likelihoods.Gaussian(variance=0.04), y, on="f")]).fit()
    return fit, kernel, X


@pytest.fixture(scope="module")
def markov_fit():
    rng = np.random.default_rng(2)
    t = np.sort(rng.uniform(0, 20, size=60))
    y = rng.poisson(np.exp(np.sin(t / 3)))
    kernel = gp.kernels.Matern32(lengthscale=2.0, variance=0.7)
    fit = Model({"f": lds.MarkovGP(kernel, t)}, [Observe(likelihoods.Poisson(), y, on="f")]).fit()
    return fit, kernel, t


@pytest.fixture(scope="module")
def glm_fit():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.ones(80), rng.normal(size=(80, 2))])
    y = X @ [0.5, -1.0, 0.7] + 0.5 * rng.normal(size=80)
    prior = Gaussian.from_mean_cov(np.zeros(3), 4.0 * np.eye(3))
    fit = Model({"w": prior}, [glm.GLM(likelihoods.Gaussian(variance=0.25), X, y, on="w")]).fit()
    return fit, X


@pytest.fixture(scope="module")
def dual_fit():
    """A GLM with fewer rows than weights: the dual route."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6, 10))
    prior = Gaussian.from_mean_cov(np.zeros(10), 2.0 * np.eye(10))
    fit = Model({"w": prior}, [glm.GLM(likelihoods.BernoulliLogit(), X, (X[:, 0] > 0).astype(float), on="w")]).fit()
    return fit, X


@pytest.fixture(scope="module")
def lds_fit():
    rng = np.random.default_rng(4)
    A = np.array([[0.95, 0.1], [-0.1, 0.9]])
    Q, H = 0.05 * np.eye(2), np.array([1.0, 0.5])
    block = lds.LDS(A, Q, H, np.zeros(2), np.eye(2), n_steps=40)
    y = np.cumsum(rng.normal(size=40)) * 0.1
    fit = Model({"x": block}, [Observe(likelihoods.Gaussian(variance=0.1), y, on="x")]).fit()
    return fit, A, Q, H


# ---------------------------------------------------------------------- against dense references
def test_glm_latent_and_gaussian_predictive_equal_the_dense_formulas(glm_fit):
    fit, X = glm_fit
    X_new = np.random.default_rng(5).normal(size=(7, 3))
    q = fit.posterior["w"]
    cov = np.linalg.inv(q.precision)
    latent = fit.predict_latent(X_new)
    np.testing.assert_allclose(latent.mean, X_new @ q.mean, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(latent.var, np.einsum("md,de,me->m", X_new, cov, X_new), rtol=1e-10)
    observed = fit.predict(X_new, likelihoods.Gaussian(variance=0.25))
    np.testing.assert_allclose(observed.var, latent.var + 0.25, rtol=1e-12)
    draws = latent.sample(40_000, seed=0)
    np.testing.assert_allclose(np.cov(draws.T), X_new @ cov @ X_new.T, atol=0.02 * np.max(latent.var))


def test_gp_prediction_equals_the_dense_gp(gp_fit):
    fit, kernel, X = gp_fit
    q, site = fit.posterior["f"], fit.sites[0]
    X_new = np.random.default_rng(6).uniform(-4, 4, size=(9, 2))
    mean, cov = _dense_gp(kernel(X), kernel(X, X_new), kernel(X_new), site.natural_mean - 0.3 * site.precision,
                          site.precision)
    latent = fit.predict_latent(X_new, block="f")
    np.testing.assert_allclose(latent.mean, mean + 0.3, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(latent.var, np.diag(cov), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(q.predict(X_new, full_cov=True)[1], cov, atol=1e-10)


def test_markov_gp_forecasts_and_interpolation_equal_the_dense_gp(markov_fit):
    fit, kernel, t = markov_fit
    q = fit.posterior["f"]
    t_new = np.array([25.0, -3.0, 7.77, t[10], 21.5, 7.77, 40.0])      # forecasts, backcast, interpolation
    mean, cov = _dense_gp(kernel(t[:, None]), kernel(t[:, None], t_new[:, None]), kernel(t_new[:, None]),
                          q.natural_mean, q.precision)
    latent = fit.predict_latent(t_new)
    np.testing.assert_allclose(latent.mean, mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(latent.var, np.diag(cov), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(q.predict(t_new, full_cov=True)[1], cov, atol=1e-8)


def test_lds_forecasts_propagate_the_last_smoothed_state(lds_fit):
    fit, A, Q, H = lds_fit
    q = fit.posterior["x"]
    m, P = q.state_means[-1], q.state_covs[-1]
    means, variances = [], []
    for _ in range(5):
        m, P = A @ m, A @ P @ A.T + Q
        means.append(H @ m)
        variances.append(H @ P @ H)
    latent = fit.predict_latent(np.array([40, 41, 42, 43, 44, 3]))
    np.testing.assert_allclose(latent.mean[:5], means, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(latent.var[:5], variances, rtol=1e-10)
    assert latent.mean[5] == q.mean[3] and latent.var[5] == q.var[3]
    cov = q.predict(np.array([39, 41]), full_cov=True)[1]
    cross = H @ A @ A @ q.state_covs[-1] @ H          # Cov(a_41, a_39)
    assert cov[0, 1] == pytest.approx(cross, rel=1e-10)


# ---------------------------------------------------------------------- intervals and draws
def test_gaussian_intervals_are_the_normal_quantiles(gp_fit):
    fit, _, _ = gp_fit
    X_new = np.linspace(-2, 2, 10).reshape(5, 2)
    latent = fit.predict_latent(X_new)
    lower, upper = latent.interval(0.9)
    ref = scipy.stats.norm(latent.mean, np.sqrt(latent.var)).interval(0.9)
    np.testing.assert_allclose(lower, ref[0], rtol=1e-12)
    np.testing.assert_allclose(upper, ref[1], rtol=1e-12)
    observed = fit.predict(X_new, likelihoods.Gaussian(variance=0.04))
    assert observed.kind == "gaussian"
    ref = scipy.stats.norm(latent.mean, np.sqrt(latent.var + 0.04)).interval(0.5)
    np.testing.assert_allclose(observed.interval(0.5), ref, rtol=1e-12)


def test_poisson_intervals_and_draws_match_monte_carlo(markov_fit):
    fit, _, _ = markov_fit
    t_new = np.array([1.0, 10.0, 22.0, 30.0])
    observed = fit.predict(t_new, likelihoods.Poisson())
    assert observed.kind == "discrete"
    rng = np.random.default_rng(7)
    latent = observed.latent
    a = latent.mean + np.sqrt(latent.var) * rng.standard_normal((400_000, 4))
    counts = rng.poisson(np.exp(a))
    for level in (0.5, 0.9):
        lower, upper = observed.interval(level)
        ref = np.quantile(counts, [0.5 - level / 2, 0.5 + level / 2], axis=0, method="inverted_cdf")
        np.testing.assert_array_equal(lower, ref[0])
        np.testing.assert_array_equal(upper, ref[1])
    draws = observed.sample(100_000, seed=3)
    assert np.all(draws == np.round(draws)) and np.all(draws >= 0)
    np.testing.assert_allclose(draws.mean(axis=0), observed.mean, rtol=0.02)
    np.testing.assert_allclose(draws.var(axis=0), observed.var, rtol=0.05)


def test_draws_are_reproducible_and_joint(markov_fit):
    fit, _, _ = markov_fit
    latent = fit.predict_latent(np.array([5.0, 5.1]))
    first, again = latent.sample(20_000, seed=11), latent.sample(20_000, seed=11)
    np.testing.assert_array_equal(first, again)
    assert np.corrcoef(first.T)[0, 1] > 0.95          # neighbouring times move together


# ---------------------------------------------------------------------- loaded fits
@pytest.mark.parametrize("which, inputs", [
    ("gp_fit", np.random.default_rng(8).uniform(-3, 3, size=(6, 2))),
    ("markov_fit", np.array([-1.0, 3.3, 25.0])),
    ("glm_fit", np.random.default_rng(9).normal(size=(4, 3))),
    ("dual_fit", np.random.default_rng(10).normal(size=(4, 10))),
    ("lds_fit", np.array([0, 39, 45])),
])
def test_a_loaded_fit_predicts_exactly_like_the_fit_in_memory(which, inputs, request, tmp_path):
    fit = request.getfixturevalue(which)[0]
    fit.save(tmp_path / "fit.npz")
    loaded = FitResult.load(tmp_path / "fit.npz")
    for a, b in ((fit.predict_latent(inputs), loaded.predict_latent(inputs)),):
        np.testing.assert_array_equal(a.mean, b.mean)
        np.testing.assert_array_equal(a.var, b.var)
        np.testing.assert_array_equal(a.sample(3, seed=1), b.sample(3, seed=1))


# ---------------------------------------------------------------------- bad input
def test_bad_input_gives_named_errors(gp_fit, lds_fit, markov_fit):
    fit, _, X = gp_fit
    latent = fit.predict_latent(X[:3])
    for level in (0.0, 1.0, 1.5, "0.9", True):
        with pytest.raises(ValueError, match="level"):
            latent.interval(level)
    for n in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="n must"):
            latent.sample(n)
    with pytest.raises(ValueError, match="seed"):
        latent.sample(2, seed=-1)
    with pytest.raises(ValueError, match="block must name"):
        fit.predict_latent(X[:3], block="g")
    with pytest.raises(ValueError, match="X_new"):
        fit.predict_latent(np.ones((2, 3)))
    with pytest.raises(ValueError, match="likelihood must"):
        fit.predict(X[:3], "poisson")
    with pytest.raises(ValueError, match="fixed parameters"):
        fit.predict(X[:3], likelihoods.Gaussian(precision="tau"))
    with pytest.raises(ValueError, match="integers >= 0"):
        lds_fit[0].predict_latent(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="t_new"):
        markov_fit[0].predict_latent(np.array([np.nan]))


def test_time_varying_lds_does_not_forecast():
    A = np.stack([np.eye(1) * (0.9 + 0.01 * k) for k in range(10)])
    block = lds.LDS(A, 0.1 * np.eye(1), np.ones(1), np.zeros(1), np.eye(1))
    fit = Model({"x": block}, [Observe(likelihoods.Gaussian(variance=1.0), np.zeros(10), on="x")]).fit()
    assert fit.predict_latent(np.array([9])).mean.shape == (1,)
    with pytest.raises(ValueError, match="constant transition"):
        fit.predict_latent(np.array([10]))


def test_blocks_that_do_not_predict_are_named():
    rng = np.random.default_rng(10)
    X = np.column_stack([np.ones(30), rng.normal(size=30)])
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(2), np.eye(2)), "tau": Gamma(1.0, 1.0)},
                  [glm.GLM(likelihoods.Gaussian(precision="tau"), X, X @ [1.0, 2.0], on="w")])
    fit = model.fit(warn=False)
    assert fit.predict_latent(X[:2]).mean.shape == (2,)           # the one block that predicts
    with pytest.raises(ValueError, match="does not predict"):
        fit.predict_latent(X[:2], block="tau")


def test_a_continuous_likelihood_without_a_sampler_says_so(gp_fit):
    fit, _, X = gp_fit
    logistic = likelihoods.Custom(lambda y, f: -(y - f) - 2.0 * np.logaddexp(0.0, -(y - f)),
                                  mean_var=lambda f: (f, np.full(np.shape(f), np.pi ** 2 / 3)))
    observed = fit.predict(X[:3], logistic)
    assert observed.kind == "other"
    with pytest.raises(NotImplementedError, match="sample"):
        observed.sample(2)


def test_a_discrete_custom_likelihood_draws_by_inverting_its_cdf(markov_fit):
    fit, _, _ = markov_fit
    poisson = likelihoods.Custom(lambda y, f: y * f - np.exp(f) - scipy.special.gammaln(y + 1.0), "counts",
                                 mean_var=lambda f: (np.exp(f), np.exp(f)))
    observed = fit.predict(np.array([3.0, 12.0]), poisson)
    assert observed.kind == "discrete"
    draws = observed.sample(40_000, seed=4)
    assert np.all(draws == np.round(draws))
    error = draws.std(axis=0) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - observed.mean) <= 5.0 * error)


# ---------------------------------------------------------------------- the factors' likelihoods (factor=)
def test_a_fit_predicts_with_its_factors_likelihood(gp_fit, tmp_path):
    fit, _, X = gp_fit
    assert [type(lik) for lik in fit.likelihoods] == [likelihoods.Gaussian]
    explicit = fit.predict(X[:4], likelihoods.Gaussian(variance=0.04))
    for chosen in (fit.predict(X[:4]), fit.predict(X[:4], factor=0), fit.predict(X[:4], factor="Observe(on='f')"),
                   fit.predict(X[:4], block="f", factor=0)):
        np.testing.assert_array_equal(chosen.mean, explicit.mean)
        np.testing.assert_array_equal(chosen.var, explicit.var)
    fit.save(tmp_path / "fit.npz")
    loaded = FitResult.load(tmp_path / "fit.npz")
    assert repr(loaded.likelihoods[0]) == repr(fit.likelihoods[0])
    np.testing.assert_array_equal(loaded.predict(X[:4]).var, explicit.var)
    np.testing.assert_array_equal(loaded.predict(X[:4]).interval(0.9), explicit.interval(0.9))


def test_factor_choices_that_cannot_predict_are_named(gp_fit, tmp_path):
    fit, _, X = gp_fit
    for factor in (1, -1, True, "GLM(on='w')", 0.0):
        with pytest.raises(ValueError, match="factor must be a factor's position"):
            fit.predict(X[:2], factor=factor)
    with pytest.raises(ValueError, match="give likelihood or factor, not both"):
        fit.predict(X[:2], likelihoods.Gaussian(), factor=0)
    with pytest.raises(ValueError, match="observes block 'f', not block='g'"):
        fit.predict(X[:2], block="g", factor=0)
    y = np.arange(30.0) % 4
    exposed = Model({"f": gp.GP(gp.kernels.RBF(), X)},
                    [Observe(likelihoods.Poisson(exposure=1.0 + np.arange(30) % 3), y, on="f")]).fit()
    with pytest.raises(ValueError, match=r"one exposure per training point.*with_per_point"):
        exposed.predict(X[:2])
    new = exposed.predict(X[:2], exposed.likelihoods[0].with_per_point([1.0, 2.0]))
    assert new.mean[1] > new.mean[0] * 1.5
    custom = likelihoods.Custom(lambda y, f: y * f - np.exp(f), "counts", mean_var=lambda f: (np.exp(f), np.exp(f)))
    kept = Model({"f": gp.GP(gp.kernels.RBF(), X)}, [Observe(custom, y, on="f")]).fit()
    assert kept.predict(X[:2]).mean.shape == (2,)              # in memory the Custom likelihood is there
    kept.save(tmp_path / "custom.npz")
    loaded = FitResult.load(tmp_path / "custom.npz")
    assert loaded.likelihoods == [None]
    with pytest.raises(ValueError, match="its likelihood, a Custom, is not in the file"):
        loaded.predict(X[:2])
    np.testing.assert_array_equal(loaded.predict(X[:2], custom).mean, kept.predict(X[:2]).mean)


def test_two_factors_on_a_block_need_factor(glm_fit):
    _, X = glm_fit
    y = X @ [0.5, -1.0, 0.7]
    prior = Gaussian.from_mean_cov(np.zeros(3), np.eye(3))
    fit = Model({"w": prior}, [glm.GLM(likelihoods.Gaussian(variance=0.3), X[:40], y[:40]),
                               glm.GLM(likelihoods.StudentT(df=4.0, scale=0.3), X[40:], y[40:])]).fit()
    with pytest.raises(ValueError, match="this fit has 2 factors with a likelihood on it"):
        fit.predict(X[:3])
    assert fit.predict(X[:3], factor=1).likelihood is fit.likelihoods[1]
    tau = Model({"w": prior, "tau": Gamma(2.0, 1.0)}, [glm.GLM(likelihoods.Gaussian(precision="tau"), X, y)]).fit()
    with pytest.raises(ValueError, match="fixed parameters"):
        tau.predict(X[:3])


def test_damaged_likelihood_entries_are_named(gp_fit, tmp_path):
    import json

    from efvi.inference import FitFileError

    fit, _, X = gp_fit
    fit.save(tmp_path / "fit.npz")
    with np.load(tmp_path / "fit.npz", allow_pickle=False) as data:
        entries = {key: data[key] for key in data.files}
    meta = json.loads(str(entries.pop("__meta__")))
    assert meta["likelihoods"] == [{"kind": "spec", "spec": {"class": "Gaussian", "arguments": {"variance": 0.04}}}]
    for damaged, message in (
            ([{"kind": "spec", "spec": {"class": "Gamma", "arguments": {"shape": -1}}}], "shape must be > 0"),
            ([{"kind": "spec", "spec": {"class": "Gaussian", "arguments": {}}}], "whose spec is"),
            ([None], "must be {'kind': 'none'}"), ([], "one entry per factor")):
        meta["likelihoods"] = damaged
        with open(tmp_path / "edited.npz", "wb") as fh:
            np.savez(fh, **entries, __meta__=np.array(json.dumps(meta)))
        with pytest.raises(FitFileError, match=r"entry '__meta__\.likelihoods.*" + message):
            FitResult.load(tmp_path / "edited.npz")
