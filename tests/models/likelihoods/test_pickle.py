"""A likelihood sent to another process (a Dask worker, multiprocessing) computes exactly what it computed here.

A likelihood's closed forms are chosen by the identity of its registered link
(``_link is LINKS["log"]``); a link that pickled by value came back as a new
object, and the unpickled likelihood silently took the quadrature route
(expectations off by 1e-7 for a log-link Poisson).
"""

import pickle

import numpy as np
import pytest

from efvi.models.likelihoods._link import LINKS

from .cases import CASES

cloudpickle = pytest.importorskip("cloudpickle")   # what Dask sends functions and objects with


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_unpickled_likelihood_computes_the_same_expectations(name):
    case = CASES[name]
    rng = np.random.default_rng(3)
    n = 50
    lik = case.make(n)
    mean, var = rng.normal(0.0, 1.0, n), rng.uniform(0.01, 2.0, n)
    y = np.asarray(case.sample(lik, rng, rng.normal(0.0, 1.0, n)), dtype=float)
    expected = lik._variational_expectations(mean, var, y)
    copy = cloudpickle.loads(cloudpickle.dumps(lik))
    if hasattr(lik, "_link"):
        assert copy._link is lik._link
    for a, b in zip(copy._variational_expectations(mean, var, y), expected):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(LINKS))
def test_a_registered_link_unpickles_to_itself(name):
    assert pickle.loads(pickle.dumps(LINKS[name])) is LINKS[name]


def test_an_unpickled_likelihood_binds_this_process_compiled_functions_and_no_caches():
    # pickled by value, the compiled pair functions compiled afresh in every worker (seconds each);
    # the base terms cached for one y array are N values that no other process can use
    from efvi.models import likelihoods

    lik = likelihoods.Poisson()
    lik._variational_expectations(np.zeros(3), np.ones(3), np.array([0.0, 1.0, 4.0]))
    copy = pickle.loads(pickle.dumps(lik))
    assert copy._expectations_kernel is lik._expectations_kernel and copy._log_lik is lik._log_lik
    assert "_base_cache" in vars(lik) and "_base_cache" not in vars(copy)
