"""The documentation states what the package is: its requirements, its public names, its classes' methods.

These read the pages and the Sphinx configuration without building the site
(``tests/test_docs_build.py`` builds it).
"""

import configparser
import importlib.util
import re
from pathlib import Path

import pytest

import efvi
from efvi.models import glm, nn

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config


def _names(requirements):
    return {re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower() for line in requirements.split() if line}


def test_getting_started_names_the_core_requirements_and_leaves_the_rest_to_extras():
    text = (DOCS / "getting_started.md").read_text()
    sentence = re.search(r"efvi needs Python [\d.]+ or newer with (.*?)\.", text, flags=re.S).group(1)
    named = {name.strip().lower() for name in re.split(r",|\band\b", sentence) if name.strip()}
    config = _setup_cfg()
    assert named == _names(config["options"]["install_requires"])
    assert "matplotlib" not in named
    extras = set(config["options.extras_require"])
    for extra in re.findall(r'pip install "\.\[(\w+)\]"', text) + ["plot", "sklearn", "arviz"]:
        assert extra in extras, f"getting_started.md names an extra {extra!r} that setup.cfg lacks"


def test_the_api_reference_lists_every_public_module_and_function_of_efvi():
    listed = set(re.findall(r"^   (efvi[\w.]*)$", (DOCS / "api" / "index.rst").read_text(), flags=re.M))
    for name in ("plot", "to_inference_data"):
        assert f"efvi.{name}" in listed
    for name in ("glm", "gp", "lds", "nn", "likelihoods"):
        assert f"efvi.models.{name}" in listed


@pytest.fixture(scope="module")
def conf():
    spec = importlib.util.spec_from_file_location("efvi_docs_conf", DOCS / "conf.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_class_pages_show_inherited_methods(conf):
    template = (DOCS / "_templates" / "autosummary" / "class.rst").read_text()
    assert ":inherited-members:" in template

    def skipped(cls, name):
        return conf._skip_member(None, "class", name, getattr(cls, name), False, {})

    for cls in (glm.BayesianGLM, nn.BayesianMLPClassifier):
        for name in ("score", "save", "load", "get_params", "set_params", "fit", "predict"):
            assert not skipped(cls, name), f"{cls.__name__}.{name} would be left out"
        assert skipped(cls, "get_metadata_routing")
    assert skipped(efvi.models.lds.FilterResult, "count")       # tuple's, not efvi's


def test_scikit_learns_user_guide_references_become_plain_text(conf):
    lines = ["Return :ref:`accuracy <accuracy_score>` on the :term:`estimator`."]
    conf._plain_foreign_references(None, "method", "score", glm.BayesianLogisticRegression.score, {}, lines)
    assert lines == ["Return accuracy on the estimator."]
    own = ["See :ref:`howto`."]
    conf._plain_foreign_references(None, "method", "save", glm.BayesianGLM.save, {}, own)
    assert own == ["See :ref:`howto`."]
