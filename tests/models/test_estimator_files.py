"""Estimators save and load without pickle (``est.save(path)``, ``Class.load(path)``), in the fit file's form.

Every estimator is fitted, saved and loaded; the loaded one must predict,
give probabilities and score bit for bit as the original, keep its
parameters (types included) and its fitted attributes.  Damaged and
mismatched files must raise ``FitFileError`` naming the entry; what a file
cannot hold must raise ``ValueError`` naming the parameter when saving.
"""

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from efvi.inference import FitFileError
from efvi.models import glm, gp, lds, likelihoods, nn
from efvi.models.mixture import BayesianGaussianMixture

from ._estimator_outputs import assert_same as _assert_same, outputs as _outputs

pytestmark = pytest.mark.filterwarnings("ignore:the fit stopped at max_iter")   # small budgets keep this quick

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 2))
LABELS = np.where(X[:, 0] + 0.3 * RNG.normal(size=40) > 0, "yes", "no")
VALUES = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=40)
COUNTS = RNG.poisson(np.exp(0.5 * X[:, 0]))
TIMES = np.sort(RNG.uniform(0, 10, size=40))[:, None]
WIDE = RNG.normal(size=(6, 9))               # fewer rows than weights: the GLM's dual route

CASES = {
    "glm": (glm.BayesianGLM(), X, VALUES),
    "glm-poisson-diag": (glm.BayesianGLM(likelihood=likelihoods.Poisson(), covariance="diag", fit_intercept=False),
                         X, COUNTS),
    "glm-dual": (glm.BayesianGLM(likelihood=likelihoods.Gaussian(variance=0.5), prior_var=2.0), WIDE, VALUES[:6]),
    "logistic": (glm.BayesianLogisticRegression(), X, LABELS),
    "gp-regressor": (gp.GPRegressor(max_iter=40), X, VALUES),
    "gp-regressor-fixed-noise": (gp.GPRegressor(gp.kernels.RBF() + gp.kernels.Linear(), noise_variance=0.05,
                                                learn_noise=False, max_iter=40), X, VALUES),
    "gp-classifier": (gp.GPClassifier(link="probit", max_iter=40), X, LABELS),
    "gp-sparse-regressor": (gp.GPRegressor(n_inducing=10, max_iter=40), X, VALUES),
    "gp-sparse-classifier": (gp.GPClassifier(inducing=X[:6], learn_inducing=True, max_iter=40), X, LABELS),
    "markov-gp": (lds.MarkovGPRegressor(gp.kernels.Matern52(), max_iter=40), TIMES, VALUES),
    "markov-gp-counts": (lds.MarkovGPRegressor(likelihood="poisson", max_iter=40), TIMES, COUNTS),
    "mixture": (BayesianGaussianMixture(n_components=2, mean_prior=np.zeros(2)), X, None),
    "mixture-one": (BayesianGaussianMixture(n_components=1), X, None),
    "mlp-regressor": (nn.BayesianMLPRegressor(hidden_layer_sizes=(4,), epochs=3), X, VALUES),
    "mlp-multiclass": (nn.BayesianMLPClassifier(hidden_layer_sizes=(3, 2), epochs=3,
                                               optimizer_options={"betas": (0.8, 0.99)}),
                       X, np.array(["a", "b", "c", "d"] * 10)),
    **{f"mlp-{name}": (nn.BayesianMLPClassifier(hidden_layer_sizes=4, epochs=2, optimizer=name), X, LABELS)
       for name in nn.estimator.OPTIMIZERS},
}


def _fitted(name):
    estimator, inputs, targets = CASES[name]
    return estimator.fit(inputs, targets) if targets is not None else estimator.fit(inputs), inputs, targets


@pytest.mark.parametrize("name", list(CASES))
def test_a_loaded_estimator_predicts_bit_for_bit(name, tmp_path):
    estimator, inputs, targets = _fitted(name)
    estimator.save(tmp_path / "estimator.npz")
    loaded = type(estimator).load(tmp_path / "estimator.npz")
    _assert_same(_outputs(estimator, inputs, targets), _outputs(loaded, inputs, targets))
    _assert_same(estimator.get_params(), loaded.get_params())
    plain = (np.ndarray, int, float, str, bool)
    for attribute, value in vars(estimator).items():
        if attribute.endswith("_") and isinstance(value, plain):
            _assert_same(value, getattr(loaded, attribute))


def test_the_fit_the_kernel_and_feature_names_come_back(tmp_path):
    frame = pd.DataFrame({"dose": X[:, 0], "age": X[:, 1]})
    model = gp.GPRegressor(max_iter=40).fit(frame, VALUES)
    model.save(tmp_path / "gp.npz")
    loaded = gp.GPRegressor.load(tmp_path / "gp.npz")
    np.testing.assert_array_equal(loaded.feature_names_in_, ["dose", "age"])
    assert loaded.feature_names_in_.dtype == model.feature_names_in_.dtype
    assert repr(loaded.kernel_) == repr(model.kernel_)
    np.testing.assert_array_equal(loaded.kernel_.log_params, model.kernel_.log_params)
    np.testing.assert_array_equal(loaded.fit_result_.elbo_trace, model.fit_result_.elbo_trace)
    assert loaded.posterior_ is loaded.fit_result_.posterior["f"]
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    with pytest.raises(ValueError, match="feature names"):
        loaded.predict(frame.rename(columns={"age": "weight"}))


def test_an_unfitted_estimator_keeps_its_parameters(tmp_path):
    estimator = gp.GPClassifier(kernel=gp.kernels.Matern12(lengthscale=[1.0, 2.0]) * gp.kernels.Constant(3.0),
                                link="probit", max_iter=7)
    estimator.save(tmp_path / "unfitted.npz")
    loaded = gp.GPClassifier.load(tmp_path / "unfitted.npz")
    assert repr(loaded) == repr(estimator) and repr(loaded.kernel) == repr(estimator.kernel)
    np.testing.assert_array_equal(loaded.kernel.log_params, estimator.kernel.log_params)
    with pytest.raises(NotFittedError):
        loaded.predict(X)
    assert loaded.fit(X, LABELS).score(X, LABELS) > 0.7


def test_a_likelihood_parameter_is_kept_by_name(tmp_path):
    estimator = glm.BayesianGLM(likelihood=likelihoods.Binomial(n_trials=np.arange(1, 41), link="probit"))
    estimator.save(tmp_path / "binomial.npz")
    loaded = glm.BayesianGLM.load(tmp_path / "binomial.npz")
    assert type(loaded.likelihood) is likelihoods.Binomial and loaded.likelihood.link == "probit"
    np.testing.assert_array_equal(loaded.likelihood.n_trials, np.arange(1, 41))


class _OwnKernel(gp.kernels.RBF):
    """A kernel class outside efvi: code, which a file cannot hold."""


@pytest.mark.parametrize("estimator, message", [
    (gp.GPRegressor(kernel=_OwnKernel()), "parameter 'kernel' cannot be saved: _OwnKernel"),
    (glm.BayesianGLM(likelihood=likelihoods.Custom(lambda y, f: -(y - f) ** 2)),
     "parameter 'likelihood' cannot be saved: a Custom likelihood cannot be saved"),
    (nn.BayesianMLPClassifier(optimizer_options={"schedule": object()}),
     r"parameter 'optimizer_options'\['schedule'\] cannot be saved: a object"),
    (nn.BayesianMLPClassifier(optimizer_options={1: 2}), "only with string keys"),
])
def test_what_a_file_cannot_hold_is_named_when_saving(estimator, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        estimator.save(tmp_path / "never.npz")
    assert not list(tmp_path.iterdir()), "a failed save must leave no file behind"


# ---------------------------------------------------------------------- damaged and mismatched files
def _entries(path):
    with np.load(path, allow_pickle=False) as data:
        entries = {key: data[key] for key in data.files}
    return entries, json.loads(str(entries.pop("__meta__")))


def _write(path, entries, meta):
    with open(path, "wb") as fh:
        np.savez(fh, **entries, __meta__=np.array(json.dumps(meta)))


def _replace(entries, meta, key, array):
    entries[key] = array
    meta["arrays"][key] = {"dtype": str(array.dtype), "shape": list(array.shape)}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Saved fitted estimators: a GLM (a fit inside), an MLP (an optimiser's state) and a mixture (arrays)."""
    directory = tmp_path_factory.mktemp("saved")
    paths = {}
    for name in ("logistic", "mlp-ivon", "mixture", "gp-regressor"):
        estimator = _fitted(name)[0]
        paths[name] = directory / f"{name}.npz"
        estimator.save(paths[name])
    return paths


def _damaged(saved, name, tmp_path, change):
    entries, meta = _entries(saved[name])
    change(entries, meta)
    path = tmp_path / "damaged.npz"
    _write(path, entries, meta)
    return path


def _nan_coef(entries, meta):
    entries["fitted/coef_"] = np.full_like(entries["fitted/coef_"], np.nan)


def _short_coef(entries, meta):
    _replace(entries, meta, "fitted/coef_", np.zeros(3))


def _missing_coef(entries, meta):
    del entries["fitted/coef_"]


def _nan_posterior(entries, meta):
    key = "fits/fit_result_/posterior/0/0"
    entries[key] = np.full_like(entries[key], np.nan)


def _extra_array(entries, meta):
    _replace(entries, meta, "fitted/extra", np.zeros(2))


def _unknown_parameter(entries, meta):
    meta["content"]["params"]["learning_rate"] = 0.1


def _missing_parameter(entries, meta):
    del meta["content"]["params"]["prior_var"]


def _unknown_kind(entries, meta):
    meta["content"]["fitted"]["coef_"] = {"kind": "pickle", "data": "..."}


def _other_class(entries, meta):
    meta["content"]["estimator"] = "os.system"


def _wrong_dtype(entries, meta):
    meta["content"]["fitted"]["n_iter_"] = {"kind": "array", "key": "fitted/coef_", "dtype": "object"}


def _label_dtype(entries, meta):
    meta["content"]["fitted"]["classes_"]["dtype"] = "<U1"       # the labels do not fit it


@pytest.mark.parametrize("change, message", [
    (_nan_coef, "entry 'fitted/coef_' must hold finite numbers; it holds NaN or inf"),
    (_short_coef, r"coef_ must be an array of shape \(2,\); got an array of dtype float64 and shape \(3,\)"),
    (_missing_coef, "entry 'fitted/coef_' is listed in the metadata but missing from the file"),
    (_nan_posterior, r"\(its fit 'fit_result_'\): entry 'posterior/0/0' must hold finite numbers"),
    (_extra_array, "entry 'fitted/extra' is not part of this file's content"),
    (_unknown_parameter, r"must give exactly the parameters of BayesianLogisticRegression .* unknown \['learning_rate'\]"),
    (_missing_parameter, r"missing \['prior_var'\]"),
    (_unknown_kind, r"entry '__meta__.content.fitted.coef_' must be .* an object with a known 'kind'"),
    (_other_class, r"says the file holds a 'os.system', not a 'efvi.models.glm.estimator.BayesianLogisticRegression'"),
    (_wrong_dtype, "must give a numeric dtype"),
    (_label_dtype, "must hold labels that fit dtype '<U1'"),
], ids=lambda v: v.__name__.strip("_") if callable(v) else "")
def test_damaged_files_are_named(saved, change, message, tmp_path):
    path = _damaged(saved, "logistic", tmp_path, change)
    with pytest.raises(FitFileError, match=message):
        glm.BayesianLogisticRegression.load(path)


def _short_mean(entries, meta):
    key = meta["content"]["fitted"]["optimizer_"]["items"]["mean"]["key"]
    _replace(entries, meta, key, np.zeros(5))


def _no_hess(entries, meta):
    key = meta["content"]["fitted"]["optimizer_"]["items"].pop("hess")["key"]
    del entries[key], meta["arrays"][key]


def _rising_divergence_history(entries, meta):
    # the saved loss history must be a window minimum: increasing in steps and in values
    items = meta["content"]["fitted"]["optimizer_"]["items"]["divergence"]["items"]
    items["losses"] = {"kind": "list", "items": [{"kind": "list", "items": [3, 1.0]},
                                                 {"kind": "list", "items": [2, 0.5]}]}


def _negative_hess(entries, meta):
    key = meta["content"]["fitted"]["optimizer_"]["items"]["hess"]["key"]
    entries[key] = -entries[key]


def _optimiser_item(name, value):
    def change(entries, meta):
        meta["content"]["fitted"]["optimizer_"]["items"][name] = value
    return change


@pytest.mark.parametrize("change, message", [
    (_negative_hess, r"optimizer_.hess must give positive posterior precisions ess \* hess \+ prior_precision; "
                     r"entry 0 \(hess -"),
    (_optimiser_item("n_steps", -1), "optimizer_.n_steps must be"),
    (_optimiser_item("n_corrected_", 10 ** 6), r"optimizer_.n_corrected_ must be at most \d+ after n_steps"),
    (_optimiser_item("lr", -0.1), "optimizer_.lr must be a finite float > 0.0; got -0.1"),
    (_optimiser_item("ess", 0.0), "optimizer_.ess must be a finite float > 0.0"),
    (_optimiser_item("betas", {"kind": "tuple", "items": [0.9, 1.5]}),
     r"optimizer_.betas\[1\] must be a float in \[0, 1\); got 1.5"),
    (_optimiser_item("hess_init", -1.0), "optimizer_.hess_init must be a finite float >= 0.0"),
    (_optimiser_item("clip_radius", 0.0), "optimizer_.clip_radius must be a finite float > 0.0 or inf"),
    (_optimiser_item("prior_precision", -1.0), "optimizer_.prior_precision must be a positive finite float"),
    (_optimiser_item("mc_samples", 0), "optimizer_.mc_samples must be"),
], ids=["negative hess", "negative n_steps", "n_corrected_ beyond the steps", "negative lr", "zero ess",
        "beta2 above 1", "negative hess_init", "zero clip_radius", "negative prior_precision", "no mc_samples"])
def test_an_optimiser_state_out_of_range_is_named(saved, change, message, tmp_path):
    path = _damaged(saved, "mlp-ivon", tmp_path, change)
    with pytest.raises(FitFileError, match=message):
        nn.BayesianMLPClassifier.load(path)


@pytest.mark.parametrize("change, message", [
    (_rising_divergence_history, r"optimizer_.divergence: divergence state must be .* increasing in both"),
    (_short_mean, r"optimizer_.mean does not suit a IVON of this network \(like an array of shape \(17,\)\); "
                  r"got an array of shape \(5,\)"),
    (_no_hess, r"optimizer_ lacks the attributes \['hess'\]"),
], ids=["divergence history", "short mean", "no hess"])
def test_a_damaged_optimiser_state_is_named(saved, change, message, tmp_path):
    path = _damaged(saved, "mlp-ivon", tmp_path, change)
    with pytest.raises(FitFileError, match=message):
        nn.BayesianMLPClassifier.load(path)


def _fitted_value(name, value):
    def change(entries, meta):
        meta["content"]["fitted"][name] = value
    return change


def _fitted_array(name, change_array):
    def change(entries, meta):
        key = meta["content"]["fitted"][name]["key"]
        entries[key] = change_array(entries[key])
    return change


@pytest.mark.parametrize("name, cls, change, message", [
    ("gp-regressor", gp.GPRegressor, _fitted_value("n_iter_", -3), "n_iter_ must be an integer >= 0; got -3"),
    ("gp-regressor", gp.GPRegressor, _fitted_value("n_iter_", 3), r"n_iter_ must be the fit's \d+ \(fit_result_\)"),
    ("gp-regressor", gp.GPRegressor, _fitted_value("elbo_", 1.0), r"elbo_ must be the fit's"),
    ("gp-regressor", gp.GPRegressor, _fitted_value("converged_", 1), "converged_ must be True or False"),
    ("gp-regressor", gp.GPRegressor, _fitted_array("lower_bounds_", lambda a: a + 1.0),
     "lower_bounds_ must be the fit's ELBO trace"),
    ("logistic", glm.BayesianLogisticRegression, _fitted_array("coef_", lambda a: -a),
     r"coef_ must be what the weight posterior \(posterior_\) gives"),
    ("mixture", BayesianGaussianMixture, _fitted_array("weights_", lambda a: -a),
     r"weights_ must be what the components give \(weight_concentration_ / weight_concentration_.sum\(\)\)"),
    ("mixture", BayesianGaussianMixture, _fitted_array("covariances_", lambda a: -a), "covariances_ must be"),
    ("mixture", BayesianGaussianMixture, _fitted_array("degrees_of_freedom_", lambda a: -a),
     "must describe Normal-Wishart components"),
    ("mixture", BayesianGaussianMixture, _fitted_array("weight_concentration_", lambda a: -a),
     "weight_concentration_ must be positive"),
    ("mixture", BayesianGaussianMixture, _fitted_value("n_iter_", 0), "n_iter_ must be an integer >= 1"),
    ("mixture", BayesianGaussianMixture, _fitted_value("lower_bound_", 0.0), "lower_bound_ must be the last"),
    ("mlp-ivon", nn.BayesianMLPClassifier, _fitted_value("n_iter_", 7), "n_iter_ must be the number of epochs"),
], ids=lambda v: None if callable(v) or isinstance(v, type) else v)
def test_fitted_counters_and_derived_attributes_must_agree_with_the_fit(saved, name, cls, change, message, tmp_path):
    with pytest.raises(FitFileError, match=message):
        cls.load(_damaged(saved, name, tmp_path, change))


def test_a_regressors_output_scale_must_be_positive(tmp_path):
    estimator = _fitted("mlp-regressor")[0]
    estimator.save(tmp_path / "mlp.npz")
    path = _damaged({"mlp": tmp_path / "mlp.npz"}, "mlp", tmp_path, _fitted_value("y_scale_", -0.5))
    with pytest.raises(FitFileError, match="y_scale_ must be a finite positive number; got -0.5"):
        nn.BayesianMLPRegressor.load(path)


def test_mixture_shapes_must_agree(saved, tmp_path):
    path = _damaged(saved, "mixture", tmp_path,
                    lambda entries, meta: _replace(entries, meta, "fitted/means_", np.zeros((3, 2))))
    with pytest.raises(FitFileError, match=r"means_ must be an array of shape \(2, 2\)"):
        BayesianGaussianMixture.load(path)


def test_a_damaged_kernel_is_named(saved, tmp_path):
    def change(entries, meta):
        meta["content"]["fitted"]["kernel_"]["layout"]["kind"] = "builtins.eval"

    with pytest.raises(FitFileError, match="does not describe a kernel of efvi.models.gp.kernels"):
        gp.GPRegressor.load(_damaged(saved, "gp-regressor", tmp_path, change))


def test_other_files_are_not_estimators(saved, tmp_path):
    with pytest.raises(FitFileError, match="holds a 'efvi.models.glm.estimator.BayesianLogisticRegression', not a "
                                           "'efvi.models.gp.estimator.GPClassifier'"):
        gp.GPClassifier.load(saved["logistic"])
    fit = glm.BayesianLogisticRegression.load(saved["logistic"]).fit_result_
    fit.save(tmp_path / "fit.npz")
    with pytest.raises(FitFileError, match="not an efvi estimator file of format 'efvi-estimator-1'"):
        glm.BayesianLogisticRegression.load(tmp_path / "fit.npz")
    with pytest.raises(FitFileError, match="cannot be read"):
        glm.BayesianLogisticRegression.load(tmp_path / "missing.npz")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(saved["logistic"].read_bytes()[:500])
    with pytest.raises(FitFileError, match="cannot be read"):
        glm.BayesianLogisticRegression.load(truncated)
    entries, meta = _entries(saved["logistic"])
    entries["fitted/coef_"] = np.array([object()], dtype=object)    # a pickled member is never unpickled
    _write(tmp_path / "pickled.npz", entries, meta)
    with pytest.raises(FitFileError, match="fitted/coef_"):
        glm.BayesianLogisticRegression.load(tmp_path / "pickled.npz")


def test_saving_over_a_file_is_atomic(saved, tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    path.write_bytes(saved["logistic"].read_bytes())
    estimator = _fitted("glm")[0]

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    with pytest.raises(OSError, match="No space left"):
        estimator.save(path)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["model.npz"], "the temporary file must be removed"
    glm.BayesianLogisticRegression.load(path)            # the previous file is intact
    estimator.save(path)
    assert isinstance(glm.BayesianGLM.load(path), glm.BayesianGLM)
