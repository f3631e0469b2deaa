"""``Optimizer.check_state``: a restored optimiser's attributes are checked as the constructor and step keep them.

Every optimiser passes after training; each kind of damage a file could
carry (a curvature without a positive precision, a negative second moment,
an asymmetric VAN precision, counters beyond the steps, hyperparameters out
of range) is refused with a ``ValueError`` naming the attribute.
"""

import numpy as np
import pytest

from efvi.inference import ngvi

from .models import LinearRegression
from .test_safety import ALL, _data


def _trained(cls):
    X, y = _data(30)
    optimizer = cls(LinearRegression(3, 0.1), 30, seed=1)
    for _ in range(3):
        optimizer.step(X, y)
    return optimizer


@pytest.mark.parametrize("cls", ALL)
def test_a_trained_optimiser_passes(cls):
    _trained(cls).check_state()


def _negated(name):
    return lambda opt: setattr(opt, name, -np.abs(getattr(opt, name)) - 1.0)


@pytest.mark.parametrize("cls, damage, message", [
    (ngvi.IVON, _negated("hess"), r"hess must give positive posterior precisions ess \* hess \+ prior_precision"),
    (ngvi.VOGN, _negated("hess"), "hess must give positive posterior precisions"),
    (ngvi.Vadam, _negated("hess"), "hess must give positive posterior precisions"),
    (ngvi.Vprop, _negated("hess"), "hess must give positive posterior precisions"),
    (ngvi.VAN, lambda opt: opt.hess.__setitem__((0, 1), opt.hess[0, 1] + 1e-3), "hess must be symmetric"),
    (ngvi.VAN, lambda opt: setattr(opt, "hess", -10.0 * np.eye(3)), "positive definite posterior precision"),
    (ngvi.BayesByBackprop, _negated("second"), r"second must be finite and >= 0.0; entry \(0,\)"),
    (ngvi.Adam, _negated("second"), "second must be finite and >= 0.0"),
    (ngvi.RMSprop, _negated("second"), "second must be finite and >= 0.0"),
    (ngvi.Adam, lambda opt: opt.first.__setitem__(1, np.nan), r"first must be finite; entry \(1,\) is nan"),
    (ngvi.IVON, lambda opt: setattr(opt, "momentum", np.zeros(5)), r"momentum must be a float array of shape \(3,\)"),
    (ngvi.IVON, lambda opt: setattr(opt, "n_corrected_", 10), r"n_corrected_ must be at most 9 after n_steps = 3"),
    (ngvi.VAN, lambda opt: setattr(opt, "n_corrected_", 4), r"n_corrected_ must be at most 3"),
    (ngvi.IVON, lambda opt: setattr(opt, "n_steps", -1), "n_steps must be an integer >= 0; got -1"),
    (ngvi.IVON, lambda opt: setattr(opt, "rescale_lr", 1), "rescale_lr must be True or False"),
    (ngvi.VOGN, lambda opt: setattr(opt, "curvature", "exact"), "curvature must be one of"),
    (ngvi.Vprop, lambda opt: setattr(opt, "beta", 1.0), r"beta must be a float in \[0, 1\); got 1.0"),
    (ngvi.BayesByBackprop, lambda opt: setattr(opt, "eps", 0.0), "eps must be a finite float > 0.0"),
    (ngvi.Adam, lambda opt: setattr(opt, "betas", (0.9,)), r"betas must be a pair of floats"),
    (ngvi.RMSprop, lambda opt: setattr(opt, "n_params", 4), "n_params must be the network's number of parameters 3"),
    (ngvi.IVON, lambda opt: setattr(opt, "prior_mean", np.full(3, np.inf)), "prior_mean must be a finite float"),
], ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_a_damaged_state_is_refused_by_name(cls, damage, message):
    optimizer = _trained(cls)
    damage(optimizer)
    with pytest.raises(ValueError, match=message):
        optimizer.check_state()
