"""efvi installs one import package: nothing generic at top level, and a user's files cannot shadow it."""

import configparser
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import efvi

ROOT = Path(__file__).resolve().parent.parent


def _run(code, cwd):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_user_modules_named_like_our_folders_do_not_shadow_efvi(tmp_path):
    for name in ("models", "inference", "expfam"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user module {name}.py was imported')\n")
    out = _run(
        "import numpy as np\n"
        "import efvi\n"
        "from efvi.models import glm, likelihoods\n"
        "rng = np.random.default_rng(0)\n"
        "X = rng.normal(size=(40, 2)); y = (X[:, 0] > 0).astype(float)\n"
        "fit = efvi.Model({'w': efvi.Gaussian.from_mean_cov(np.zeros(2), np.eye(2))},\n"
        "                 [glm.GLM(likelihoods.BernoulliLogit(), X, y, on='w')]).fit()\n"
        "print(fit.converged)\n",
        tmp_path,
    )
    assert out.strip() == "True"


def test_nothing_generic_is_importable_at_top_level(tmp_path):
    out = _run("import importlib.util\n"
               "print([importlib.util.find_spec(n) is None for n in ('expfam', 'inference', 'models')])\n",
               tmp_path)
    assert out.strip() == "[True, True, True]"


def test_version_and_everyday_names():
    assert efvi.__version__ == importlib.metadata.version("efvi")
    for name in ("Model", "FitResult", "Gaussian", "DiagonalGaussian", "Gamma", "Dirichlet", "Bernoulli",
                 "glm", "gp", "lds", "nn", "likelihoods", "Observe", "expfam", "inference", "models"):
        assert name in efvi.__all__ and getattr(efvi, name) is not None
    assert efvi.Model is efvi.inference.Model
    assert efvi.Gaussian is efvi.expfam.Gaussian
    assert efvi.glm is efvi.models.glm and efvi.Observe is efvi.models.Observe


def test_every_model_subpackage_imports_from_efvi_like_glm():
    from efvi import glm, gp, lds, nn

    assert (glm, gp, lds, nn) == (efvi.models.glm, efvi.models.gp, efvi.models.lds, efvi.models.nn)
    assert nn.BayesianMLPClassifier is efvi.models.nn.BayesianMLPClassifier


def test_dir_of_efvi_lists_its_public_names_and_nothing_borrowed():
    public = {name for name in dir(efvi) if not name.startswith("_")}
    assert public == set(efvi.__all__) - {"__version__"}, public ^ (set(efvi.__all__) - {"__version__"})


def test_every_package_folder_is_installed():
    """setup.cfg lists the packages one by one (the folders map under ``efvi``); none may be missed."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    on_disk = {"efvi"} | {
        "efvi." + ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("expfam", "inference", "models") for init in (ROOT / top).rglob("__init__.py")
    }
    assert listed == on_disk
