"""The compiled kernels are cached on disk: a second process loads them instead of compiling."""

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json
import numpy as np
from efvi.models import likelihoods as L
from efvi.models.likelihoods import _kernels, _math

m, v, y = np.zeros(3), np.ones(3), np.ones(3)
dispatchers = {_kernels._gh_expectations, _kernels._gh_log_predictive, _kernels._gh_predictive_moments,
               _kernels._pointwise, _kernels._base_terms, _kernels._laplace_proposal}
for name in L.__all__:
    cls = getattr(L, name)
    if isinstance(cls, type) and issubclass(cls, L.Likelihood) and cls not in (L.Likelihood, L.Custom):
        links = [n for n, link in L.LINKS.items() if link.domain == cls.domain] if "link" in cls._repr_fields else [None]
        for link in links:
            lik = cls() if link is None else cls(link=link)
            lik._quadrature_expectations(m, v, y)
            lik._quadrature_predict_log_density(m, v, y)
            lik._quadrature_predict_mean_var(m, v)
            lik.log_density(m, y)
            dispatchers |= {lik._log_lik, lik._log_base, lik._moments}
print(json.dumps({"misses": sum(d.stats.cache_misses.total() for d in dispatchers),
                  "hits": sum(d.stats.cache_hits.total() for d in dispatchers),
                  "kernels": sum(k.stats.cache_hits.total() for k in (_kernels._gh_expectations, _kernels._pointwise))}))
"""


def _run():
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=root, env=dict(os.environ), capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_every_kernel_from_the_cache():
    exec(SCRIPT, {})  # this process compiles and caches whatever is not cached yet
    second = _run()
    assert second["misses"] == 0, second
    assert second["kernels"] == 2 and second["hits"] > 0, second
