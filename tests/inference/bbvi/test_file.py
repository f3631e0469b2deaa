"""BBVIResult.save / load / bbvi.resume: a fit of 2n iterations equals, to the last bit, a fit of n that is
saved, loaded and resumed for n more; every entry of the file is checked on load and refused by name."""

import json

import numpy as np
import pytest

from efvi.expfam import DiagonalGaussian, Gaussian
from efvi.inference import FitFileError, Model, bbvi
from efvi.inference.bbvi import BBVIResult
from efvi.inference.result import save_archive
from efvi.models import glm, likelihoods

from .models import GaussianMean, NormalGamma


def _conjugate():
    model = GaussianMean(DiagonalGaussian, dim=2)
    return model.log_joint, model.init, {"learning_rate": 0.2}, {}


def _two_blocks_with_a_schedule():
    model = NormalGamma()

    def schedule(t):
        return 0.5 / (1 + t / 20) ** 0.7

    return model.terms, model.init, {"control_variate": "optimal", "learning_rate": schedule}, {"learning_rate": schedule}


def _adam_reparameterised_with_the_exact_elbo():
    model = GaussianMean(Gaussian, dim=2)

    def expected_log_joint(q):
        return model.exact_elbo({"z": q.natural}) - float(np.sum(q.entropy()))

    both = {"expected_log_joint": expected_log_joint}
    return model.log_joint, model.init, {"estimator": "reparam", "step": "adam", "window": 10, **both}, both


CASES = {"conjugate, score, converges after the resume": (_conjugate, 150),
         "two blocks, terms, a schedule": (_two_blocks_with_a_schedule, 30),
         "reparameterisation, adam, exact ELBO": (_adam_reparameterised_with_the_exact_elbo, 25)}


def _state(rng):
    return json.dumps(rng.bit_generator.state, default=lambda a: a.tolist())


def _assert_identical(resumed, whole):
    assert resumed.n_iter == whole.n_iter
    for name, q in whole.posterior.items():
        for a, b in zip(resumed.posterior[name].natural, q.natural):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(resumed.grad_variance[name], whole.grad_variance[name])
    np.testing.assert_array_equal(resumed.elbo_trace, whole.elbo_trace)
    np.testing.assert_array_equal(resumed.elbo_standard_error_trace, whole.elbo_standard_error_trace)
    if whole.exact_elbo_trace is None:
        assert resumed.exact_elbo_trace is None
    else:
        np.testing.assert_array_equal(resumed.exact_elbo_trace, whole.exact_elbo_trace)
    assert (resumed.converged, resumed.message) == (whole.converged, whole.message)
    assert (resumed.n_backoffs, resumed.n_halved_steps) == (whole.n_backoffs, whole.n_halved_steps)
    assert _state(resumed.state.rng) == _state(whole.state.rng)
    assert resumed.state.divergence.state_dict() == whole.state.divergence.state_dict()
    for name, (first, second) in whole.state.stepper.moments.items():
        np.testing.assert_array_equal(resumed.state.stepper.moments[name][0], first)
        np.testing.assert_array_equal(resumed.state.stepper.moments[name][1], second)


@pytest.mark.filterwarnings("ignore::efvi.inference.ConvergenceWarning")
@pytest.mark.parametrize("case", list(CASES))
def test_a_fit_saved_loaded_and_resumed_equals_the_uninterrupted_fit(case, tmp_path):
    make, n = CASES[case]
    log_joint, init, options, again = make()
    whole = bbvi.fit(log_joint, init, n_iter=2 * n, seed=3, **options)
    half = bbvi.fit(log_joint, init, n_iter=n, seed=3, **options)
    half.save(tmp_path / "half.npz")
    loaded = BBVIResult.load(tmp_path / "half.npz")
    _assert_identical(loaded, half)
    _assert_identical(bbvi.resume(loaded, log_joint, n_iter=n, **again), whole)
    _assert_identical(bbvi.resume(half, log_joint, n_iter=n, **again), whole)     # in memory, too
    assert half.n_iter == n                                                       # resuming changed nothing
    if case.startswith("conjugate"):
        assert whole.converged and n < whole.n_iter < 2 * n and not half.converged


def test_a_generator_of_another_kind_is_saved_and_resumed(tmp_path):
    log_joint, init, options, _ = _conjugate()

    def seed():
        return np.random.Generator(np.random.MT19937(5))

    whole = bbvi.fit(log_joint, init, n_iter=20, seed=seed(), warn=False, **options)
    bbvi.fit(log_joint, init, n_iter=10, seed=seed(), warn=False, **options).save(tmp_path / "mt.npz")
    _assert_identical(bbvi.resume(BBVIResult.load(tmp_path / "mt.npz"), log_joint, n_iter=10, warn=False), whole)


def test_resume_needs_what_a_file_cannot_hold(tmp_path):
    log_joint, init, options, again = _two_blocks_with_a_schedule()
    fit = bbvi.fit(log_joint, init, n_iter=5, seed=0, warn=False, **options)
    with pytest.raises(ValueError, match=r"learning_rate must be given: the fit being resumed used a schedule"):
        bbvi.resume(fit, log_joint, n_iter=5)
    with pytest.raises(ValueError, match="log_joint must be given as terms, as in the fit being resumed; got a "
                                         "callable"):
        bbvi.resume(fit, NormalGamma().log_joint, n_iter=5, **again)
    with pytest.raises(ValueError, match="expected_log_joint must be None to resume this fit, which has no exact "
                                         "ELBO trace; got a callable"):
        bbvi.resume(fit, log_joint, n_iter=5, expected_log_joint=lambda q: 0.0, **again)
    with pytest.raises(ValueError, match="n_iter must be an integer >= 1; got 0"):
        bbvi.resume(fit, log_joint, n_iter=0, **again)
    with pytest.raises(ValueError, match="result must be a BBVIResult .from bbvi.fit or BBVIResult.load.; got dict"):
        bbvi.resume({}, log_joint, n_iter=5)


# ---------------------------------------------------------------------- damaged files
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """An Adam fit of the two-block model (every kind of entry), as (arrays, content) of its file."""
    model = NormalGamma()
    fit = bbvi.fit(model.terms, model.init, step="adam", n_iter=12, seed=0, warn=False)
    path = tmp_path_factory.mktemp("bbvi") / "fit.npz"
    fit.save(path)
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["__meta__"]))
        arrays = {key: data[key] for key in data.files if key != "__meta__"}
    return arrays, meta["content"]


def _set(tree, path, value):
    *parents, last = path
    for key in parents:
        tree = tree[key]
    tree[last] = value


@pytest.mark.parametrize("change,entry,problem", [
    (("content", ["options", "estimator"], "pathwise"), "__meta__.content.options",
     "must be options bbvi.fit accepts: estimator must be one of 'score', 'reparam'; got 'pathwise'"),
    (("content", ["options", "tol"], -1.0), "__meta__.content.options",
     "must be options bbvi.fit accepts: tol must be a finite float >= 0; got -1.0"),
    (("content", ["options", "extra"], 1), "__meta__.content.options", "must be an object with exactly"),
    (("content", ["iteration"], 2 ** 70), "__meta__.content.iteration", r"must be an integer in \[0, "),
    (("content", ["iteration"], 11), "elbo_trace", r"must have shape \(12,\)"),
    (("content", ["converged"], True), "__meta__.content.converged",
     "must be false, what the stopping rule says of the saved traces; got true"),
    (("content", ["n_backoffs"], 10 ** 6), "__meta__.content.n_backoffs", r"must be an integer in \[0, 720\]"),
    (("content", ["n_halved_steps"], 1), "__meta__.content.n_halved_steps", r"must be an integer in \[0, 0\]"),
    (("content", ["elapsed"], -1.0), "__meta__.content.elapsed", "must be non-negative seconds"),
    (("content", ["rng"], {"bit_generator": "os.system"}), "__meta__.content.rng",
     "must be the state of one of numpy's bit generators"),
    (("content", ["rng", "bit_generator"], "MT19937"), "__meta__.content.rng", "is not a valid random state"),
    (("content", ["rng", "state", "inc"], "seven"), "__meta__.content.rng", "is not a valid random state"),
    (("content", ["divergence", "losses"], [[5, 1.0], [3, 2.0]]), "__meta__.content.divergence",
     "divergence state must be a dict"),
    (("content", ["divergence", "norms"], [[40, 1.0]]), "__meta__.content.divergence", r"must hold steps 1 ... 12"),
    (("content", ["blocks", 1, "family"], "nonesuch"), r"__meta__.content.blocks\[1\].family",
     "names no registered family"),
    (("content", ["blocks", 1, "name"], "mu"), r"__meta__.content.blocks\[1\].name",
     r"must be a block name \(a string\) not used before; got 'mu'"),
    (("content", ["options", "single"], True), "__meta__.content.options.single", "must be false for blocks"),
    (("arrays", ["posterior/1/1"], np.array(1.0)), "posterior/1", "is not a valid Gamma natural parameter"),
    (("arrays", ["grad_variance/0"], -np.ones(12)), "grad_variance/0", "must hold values >= 0"),
    (("arrays", ["elbo_standard_error_trace"], -np.ones(13)), "elbo_standard_error_trace", "must hold values >= 0"),
    (("arrays", ["adam/0/second"], -np.ones(2)), "adam/0/second", "must hold Adam's second moments, >= 0"),
    (("arrays", ["adam/1/first"], np.zeros(3)), "adam/1/first", r"must have the shape of the flattened natural"),
    (("arrays", ["elbo_trace"], np.full(13, np.nan)), "elbo_trace", "must hold finite numbers"),
    (("arrays", ["stray"], np.zeros(2)), "stray", "is not part of this file's content"),
])
def test_every_damaged_entry_is_refused_by_name(saved, tmp_path, change, entry, problem):
    arrays, content = saved
    arrays, content = dict(arrays), json.loads(json.dumps(content))
    where, path, value = change
    _set(arrays if where == "arrays" else content, path, value)
    save_archive(tmp_path / "damaged.npz", "efvi-bbvi-1", arrays, content)
    with pytest.raises(FitFileError, match=f"damaged.npz: entry '{entry}' {problem}"):
        BBVIResult.load(tmp_path / "damaged.npz")


def test_a_file_of_another_kind_is_refused(tmp_path):
    X, y = np.ones((3, 1)), np.array([0.0, 1.0, 1.0])
    model = Model({"w": Gaussian.from_mean_cov(np.zeros(1), np.eye(1))},
                  [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")])
    model.fit().save(tmp_path / "cvi.npz")
    with pytest.raises(FitFileError, match="not an efvi black-box VI fit file of format 'efvi-bbvi-1'"):
        BBVIResult.load(tmp_path / "cvi.npz")
