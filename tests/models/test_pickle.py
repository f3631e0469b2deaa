"""Every estimator efvi exports pickles and survives ``joblib.dump`` / ``joblib.load`` with identical predictions.

So that scikit-learn's tooling (``joblib``, ``multiprocessing``, model
selection with ``n_jobs``) works.  The estimators are found from the base
class (:class:`efvi.models._estimator.BaseEstimator`) among the names the
model packages export; a test fails when one has no case here.
"""

import pickle

import joblib
import numpy as np
import pytest

from efvi.models import glm, gp, lds, nn
from efvi.models import mixture
from efvi.models._estimator import BaseEstimator

from ._estimator_outputs import assert_same, outputs

pytestmark = pytest.mark.filterwarnings("ignore:the fit stopped at max_iter")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 2))
VALUES = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=30)
LABELS = np.where(X[:, 0] > 0, "yes", "no")
TIMES = np.sort(RNG.uniform(0.0, 10.0, size=30))[:, None]

CASES = {
    "BayesianGLM": (glm.BayesianGLM(), X, VALUES),
    "BayesianLogisticRegression": (glm.BayesianLogisticRegression(), X, LABELS),
    "GPRegressor": (gp.GPRegressor(max_iter=20), X, VALUES),
    "GPRegressor-sparse": (gp.GPRegressor(n_inducing=6, max_iter=20), X, VALUES),
    "GPClassifier": (gp.GPClassifier(max_iter=20), X, LABELS),
    "MarkovGPRegressor": (lds.MarkovGPRegressor(max_iter=20), TIMES, VALUES),
    "BayesianGaussianMixture": (mixture.BayesianGaussianMixture(n_components=2), X, None),
    "BayesianMLPRegressor": (nn.BayesianMLPRegressor(hidden_layer_sizes=(4,), epochs=2), X, VALUES),
    "BayesianMLPClassifier": (nn.BayesianMLPClassifier(hidden_layer_sizes=(4,), epochs=2), X, LABELS),
}


def _exported_estimators():
    """Class name -> class, for every estimator that glm, gp, lds, nn and mixture export."""
    found = {}
    for package in (glm, gp, lds, nn, mixture):
        for name in package.__all__:
            value = getattr(package, name)
            if isinstance(value, type) and issubclass(value, BaseEstimator):
                found[name] = value
    return found


def test_every_exported_estimator_has_a_case():
    exported = _exported_estimators()
    covered = {type(case[0]).__name__ for case in CASES.values()}
    assert set(exported) == covered, f"no pickle case for {sorted(set(exported) - covered)}"
    # and nothing public derives from the base class without being exported
    def subclasses(kind):
        for sub in kind.__subclasses__():
            yield sub
            yield from subclasses(sub)
    public = {kind.__name__ for kind in subclasses(BaseEstimator) if not kind.__name__.startswith("_")
              and kind.__module__.startswith("efvi.models")}
    assert public <= set(exported)


@pytest.mark.parametrize("name", list(CASES))
def test_a_pickled_estimator_predicts_bit_for_bit(name, tmp_path):
    estimator, inputs, targets = CASES[name]
    unfitted = pickle.loads(pickle.dumps(estimator))
    assert_same(unfitted.get_params(), estimator.get_params())
    estimator.fit(inputs, targets) if targets is not None else estimator.fit(inputs)
    expected = outputs(estimator, inputs, targets)
    path = tmp_path / "estimator.joblib"
    joblib.dump(estimator, path)
    for copy in (joblib.load(path), pickle.loads(pickle.dumps(estimator))):
        assert type(copy) is type(estimator)
        assert_same(outputs(copy, inputs, targets), expected)
        assert_same(copy.get_params(), estimator.get_params())
    # a copy predicts again after pickling: its scratch (per-thread arrays) is rebuilt on first use
    assert_same(outputs(pickle.loads(pickle.dumps(joblib.load(path))), inputs, targets), expected)
