"""efvi imports and fits from a read-only installation for a user without a writable home.

numba's ``cache=True`` needs a writable cache directory (``NUMBA_CACHE_DIR``,
``__pycache__`` beside the source, or one under ``HOME``); with none, decorating
a kernel raised "no locator available" and ``import efvi`` failed.  Each test
copies the installed packages to a folder made read-only, with a read-only
``HOME`` and no ``NUMBA_CACHE_DIR``, and fits a small logistic GLM in a fresh
process.  As root, permissions are not checked, so the process runs as root
without the capabilities that bypass them (``setpriv``).
"""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import efvi

pytestmark = pytest.mark.skipif(os.name != "posix", reason="read-only folders are simulated with POSIX permissions")

SCRIPT = """
import json, os, sys, warnings

for folder in sys.argv[1:]:
    try:
        open(os.path.join(folder, "probe"), "w").close()
    except PermissionError:
        continue
    print(json.dumps({"writable": folder}))
    sys.exit()

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import numpy as np
    import efvi
    from efvi.models import glm, likelihoods
    from efvi.models.likelihoods import _kernels

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=20) > 0).astype(float)
    fit = efvi.Model({"w": efvi.Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},
                     [glm.GLM(likelihoods.BernoulliLogit(), X, y, on="w")]).fit()
print(json.dumps({"efvi": efvi.__file__, "converged": bool(fit.converged),
                  "warnings": [[w.category.__name__, str(w.message)] for w in caught],
                  "cache_hits": sum(_kernels._gh_expectations.stats.cache_hits.values())}))
"""

# Without these the process may write where it pleases: root ignores permissions unless they are dropped
_NO_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@pytest.fixture(scope="module")
def read_only_install(tmp_path_factory):
    """``(site, home)``: efvi's packages copied under ``site/efvi`` and an empty home, both read-only."""
    root = tmp_path_factory.mktemp("read_only")
    source = Path(efvi.__file__).parent
    target = root / "site" / "efvi"
    target.mkdir(parents=True)
    shutil.copy(source / "__init__.py", target)
    for package in ("expfam", "inference", "models"):
        shutil.copytree(source / package, target / package, ignore=shutil.ignore_patterns("__pycache__"))
    home = root / "home"
    home.mkdir()
    folders = [home, *(path for path in root.joinpath("site").rglob("*") if path.is_dir()), root / "site"]
    for folder in folders:
        folder.chmod(0o555)
    yield root / "site", home
    for folder in folders:
        folder.chmod(0o755)


def _fit(site, home, tmp):
    """Run :data:`SCRIPT` with efvi from ``site``, ``HOME=home`` and ``TMPDIR=tmp``; return its report."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, and without setpriv root cannot be denied writing to a read-only folder")
        prefix = _NO_OVERRIDE
    env = {name: value for name, value in os.environ.items() if name not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(site), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([*prefix, sys.executable, "-c", SCRIPT, str(site / "efvi"), str(home)],
                          capture_output=True, text=True, env=env, cwd=tmp, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if "writable" in report:
        pytest.skip(f"this user can write to the read-only folder {report['writable']}: nothing to test")
    assert report["efvi"] == str(site / "efvi" / "__init__.py")
    assert report["converged"]
    return report


def _one_cache_warning(report):
    """The message of the run's one warning, a NumbaCacheWarning that tells how to fix it."""
    assert [category for category, _ in report["warnings"]] == ["NumbaCacheWarning"], report["warnings"]
    message = report["warnings"][0][1]
    assert "Set NUMBA_CACHE_DIR to a writable directory" in message
    return message


def test_kernels_are_cached_in_the_temporary_directory(read_only_install, tmp_path):
    site, home = read_only_install
    cache = tmp_path / f"efvi-numba-cache-{os.getuid()}"
    first = _fit(site, home, tmp_path)
    assert f"Caching them in {cache} instead" in _one_cache_warning(first)
    assert first["cache_hits"] == 0 and list(cache.rglob("*.nbi"))
    second = _fit(site, home, tmp_path)
    _one_cache_warning(second)
    assert second["cache_hits"] == 1, "a second process should load the kernel cached by the first"


def test_a_temporary_cache_others_can_write_is_refused_and_nothing_is_cached(read_only_install, tmp_path):
    site, home = read_only_install
    shared = tmp_path / f"efvi-numba-cache-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)  # another user could plant pickled code there
    report = _fit(site, home, tmp_path)
    assert "Compiling without a cache" in _one_cache_warning(report)
    assert not list(shared.iterdir()) and stat.S_IMODE(shared.stat().st_mode) == 0o777
