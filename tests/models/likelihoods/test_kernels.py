"""Each likelihood's own expectations kernel against the shared kernel, and its on-disk cache."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from efvi.models.likelihoods import Custom, Likelihood, _kernels

from .cases import CASES, compiled_cases

NUMERICAL = [name for name in compiled_cases() if "_variational_expectations" not in CASES[name].closed_forms]
"""The compiled likelihoods (with every link) whose expectations are numerical."""


def test_every_likelihood_without_closed_forms_has_its_own_kernel():
    assert NUMERICAL, "no likelihood integrates numerically"
    missing = [name for name in NUMERICAL if CASES[name].make(1)._expectations_kernel is None]
    assert not missing, f"likelihoods without their own expectations kernel (see _kernels): {missing}"


@pytest.mark.parametrize("name", NUMERICAL)
def test_own_kernel_equals_the_shared_kernel(name):
    """Same maths, bit for bit: the own kernel only has the scalar functions inlined (Gauss-Hermite rule)."""
    case = CASES[name]
    n = 400
    lik = case.make(n)
    rng = np.random.default_rng(0)
    mean = rng.uniform(-6.0, 6.0, n)
    var = np.exp(rng.uniform(np.log(1e-10), np.log(30.0), n))
    var[:5] = 0.0
    y = case.sample(lik, rng, mean + np.sqrt(var) * rng.standard_normal(n))
    y[7] = np.nan
    rule = Likelihood._quadrature_rule(lik, None)  # Gauss-Hermite only
    args = (mean, var, y, lik._per_point(), lik._params())
    own = lik._expectations_kernel(*args, rule)
    shared = _kernels._gh_expectations(lik._log_lik, lik._log_base, *args, *rule[:5])
    for a, b in zip(own, shared):
        np.testing.assert_array_equal(a, b)


SCRIPT = """
import json
import numpy as np
from efvi.models import likelihoods as L

m, v, y = np.zeros(3), np.array([0.0, 1.0, 9.0]), np.ones(3)
kernels = set()
for name in L.__all__:
    cls = getattr(L, name)
    if isinstance(cls, type) and issubclass(cls, L.Likelihood) and cls not in (L.Likelihood, L.Custom):
        links = [n for n, link in L.LINKS.items() if link.domain == cls.domain] if "link" in cls._repr_fields else [None]
        for link in links:
            lik = cls() if link is None else cls(link=link)
            if lik._expectations_kernel is not None:
                lik._quadrature_expectations(m, v, y)
                lik._quadrature_expectations(m, v, y, n_points=7)
                kernels.add(lik._expectations_kernel)
print(json.dumps({"kernels": len(kernels), "signatures": sum(len(k.signatures) for k in kernels),
                  "misses": sum(k.stats.cache_misses.total() for k in kernels),
                  "hits": sum(k.stats.cache_hits.total() for k in kernels)}))
"""


def test_second_process_loads_every_own_kernel_from_the_cache():
    """One signature per kernel (adaptive and fixed rules alike), compiled once, then loaded from disk."""
    exec(SCRIPT, {})  # this process compiles and caches whatever is not cached yet
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=dict(os.environ), capture_output=True,
                         text=True, check=True)
    second = json.loads(out.stdout.strip().splitlines()[-1])
    distinct = {CASES[name].make(1)._expectations_kernel for name in compiled_cases()} - {None}
    assert second["kernels"] == len(distinct), second
    assert second["misses"] == 0 and second["hits"] == second["signatures"] == second["kernels"], second


def test_a_custom_likelihood_has_no_compiled_kernel():
    assert all(isinstance(CASES[name].make(1), Custom) for name in CASES if name not in compiled_cases())
