"""Every family's distributions copy and pickle exactly (by their natural parameters)."""

import copy
import pickle

import numpy as np
import pytest

from .cases import CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_deepcopy_and_pickle_round_trip(name):
    for q in CASES[name].examples:
        for clone in (copy.deepcopy(q), copy.copy(q), pickle.loads(pickle.dumps(q))):
            assert type(clone) is type(q) and clone.batch_shape == q.batch_shape
            for ours, theirs in zip(clone.natural, q.natural):
                np.testing.assert_array_equal(ours, theirs)
