"""What a fitted estimator computes, and an exact comparison: for round trips (files, pickle, joblib)."""

import numpy as np

from efvi.models import gp, lds, nn


def outputs(estimator, inputs, targets):
    """Everything the estimator computes at the inputs, by method name."""
    out = {"predict": estimator.predict(inputs), "score": estimator.score(inputs, targets)}
    for method in ("predict_proba", "score_samples", "predict_latent"):
        if hasattr(estimator, method):
            out[method] = getattr(estimator, method)(inputs)
    if isinstance(estimator, (gp.GPRegressor, lds.MarkovGPRegressor, nn.BayesianMLPRegressor)):
        out["predict_std"] = estimator.predict(inputs, return_std=True)[1]
    return out


def assert_same(a, b):
    """Assert that two outputs are equal bit for bit: arrays by dtype and value, the rest by type and value."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    else:
        assert type(a) is type(b) and (a == b or repr(a) == repr(b)), (a, b)
