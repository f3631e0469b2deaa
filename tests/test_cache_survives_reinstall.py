"""efvi's compiled kernels live outside the installed package, so a reinstall finds them again.

A reinstall (``pip install .`` again, as the README's commands do) replaces the
package's files, and with them any ``__pycache__`` inside; numba's own cache
beside the source was lost with it.  efvi caches its kernels in
``~/.cache/efvi/numba`` (``efvi.expfam.numba_cache.efvi_cache_dir``), stamped by
a hash of each source file, and ``NUMBA_CACHE_DIR`` still comes first.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba.core.caching

import efvi
from efvi.expfam import numba_cache

SCRIPT = """
import json, logging
import numpy as np
compiled = []
class Record(logging.Handler):
    def emit(self, record):
        if record.getMessage().startswith("compiled numba kernel"):
            compiled.append(record.getMessage())
logging.getLogger("efvi").addHandler(Record())
logging.getLogger("efvi").setLevel(logging.INFO)
import efvi
from efvi.models import glm, likelihoods
rng = np.random.default_rng(0)
X = rng.normal(size=(20, 2))
y = (X[:, 0] + 0.5 * rng.normal(size=20) > 0).astype(float)
efvi.Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},
           [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit()
print(json.dumps({"efvi": efvi.__file__, "compiled": compiled}))
"""


def _install(site):
    """Copy efvi's files to ``site/efvi`` afresh (new files, new modification times, no __pycache__)."""
    source, target = Path(efvi.__file__).parent, site / "efvi"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    shutil.copy(source / "__init__.py", target)
    for package in ("expfam", "inference", "models"):
        shutil.copytree(source / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))


def _fit(site, home):
    env = {name: value for name, value in os.environ.items() if name not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), PYTHONPATH=str(site), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=home,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["efvi"] == str(site / "efvi" / "__init__.py")
    return report["compiled"]


def test_a_reinstall_loads_the_kernels_compiled_before_it(tmp_path):
    site, home = tmp_path / "site", tmp_path / "home"
    home.mkdir()
    _install(site)
    assert _fit(site, home), "the first fit of a fresh installation compiles its kernels"
    cache = home / ".cache" / "efvi" / "numba"
    assert list(cache.rglob("*.nbi")) and not list((site / "efvi").rglob("*.nbi"))
    _install(site)                                        # the reinstall: the same files, written again
    assert _fit(site, home) == []


def test_numba_cache_dir_comes_first_and_other_packages_are_left_alone(tmp_path):
    classes = numba.core.caching.CacheImpl._locator_classes if hasattr(numba.core.caching, "CacheImpl") \
        else numba.core.caching._CacheImpl._locator_classes
    position = classes.index(numba_cache._EfviCacheLocator)
    assert "UserProvided" in classes[0].__name__ and position == 1
    outside = tmp_path / "user_code.py"
    outside.write_text("def f():\n    return 1\n")
    namespace = {}
    exec(compile(outside.read_text(), str(outside), "exec"), namespace)
    assert numba_cache._EfviCacheLocator.from_function(namespace["f"], str(outside)) is None
    own = numba_cache._EfviCacheLocator.from_function(numba_cache.cache_enabled, numba_cache.__file__)
    assert own is not None and own.get_cache_path().startswith(numba_cache.efvi_cache_dir())
