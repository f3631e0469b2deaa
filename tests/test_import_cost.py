"""``import efvi`` stays lean: scikit-learn, matplotlib, scipy.stats (through autograd.scipy, ~0.45 s),
scipy.optimize (~0.13 s) and torch load on first use."""

import subprocess
import sys


def test_import_efvi_does_not_load_heavy_libraries():
    code = ("import sys, efvi, efvi.models.glm, efvi.models.gp, efvi.models.lds, efvi.models.nn, efvi.models.mixture; "
            "print(sorted(m for m in ('sklearn', 'matplotlib', 'scipy.stats', 'autograd.scipy', 'scipy.optimize', 'torch') "
            "if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


def test_estimators_load_on_first_use():
    code = ("import sys, efvi.models.glm as glm; assert 'sklearn' not in sys.modules; "
            "cls = glm.BayesianGLM; assert 'sklearn' in sys.modules and cls.__name__ == 'BayesianGLM'; "
            "from efvi.models.gp import GPRegressor; from efvi.models.mixture import BayesianGaussianMixture; "
            "import efvi.models.lds as lds\n"
            "try:\n    lds.NoSuchThing\nexcept AttributeError as e:\n    print(e)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "has no attribute 'NoSuchThing'" in done.stdout
