"""The documentation site builds with Sphinx, warnings treated as errors.

The build (``docs/conf.py``) reads the Markdown pages, generates the API
reference from the docstrings and shows every example's quick-mode run in the
gallery, so a broken cross-reference, a malformed docstring or a failing
example fails this test.  The gallery shows the session's runs of the examples
(the ``example_runs`` fixture, which ``test_examples.py`` checks) rather than
running them again.  Sphinx and its extensions come with the ``test``
extra (and the ``docs`` extra); without them the test is skipped.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
NEEDED = ["sphinx", "myst_parser", "numpydoc", "furo"]
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]

pytestmark = pytest.mark.xdist_group("examples")   # on the worker that runs the examples (test_examples.py)


@pytest.mark.skipif(bool(MISSING), reason=f"the docs build needs {', '.join(MISSING)} (pip install '.[docs]')")
def test_docs_build_without_warnings(tmp_path, example_runs):
    example_runs.run_all()
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-D", f"gallery_runs={example_runs.folder}", str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, env=env, timeout=1200, cwd=DOCS.parent)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    html = tmp_path / "html"
    for page in ["index.html", "getting_started.html", "howto.html", "api/index.html", "gallery/index.html"]:
        assert (html / page).is_file(), f"{page} was not built"
    examples = [p.stem for p in (DOCS.parent / "examples").glob("*.py") if not p.name.startswith("_")]
    assert all((html / "gallery" / f"{name}.html").is_file() for name in examples), "an example has no gallery page"
