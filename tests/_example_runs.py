"""The runs of the example scripts, once per test session (the ``example_runs`` fixture of ``conftest.py``)."""

import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load_runner():
    spec = importlib.util.spec_from_file_location("_efvi_example_runner", EXAMPLES / "_runner.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = _load_runner()


class ExampleRuns:
    """Each example script runs at most once per session, into ``folder/<name>/`` (see ``examples/_runner.py``).

    ``tests/test_examples.py`` checks each run and ``tests/test_docs_build.py`` builds the gallery from the
    same runs, so a session runs every example once."""

    def __init__(self, folder):
        self.folder = Path(folder)

    def get(self, script):
        """The record of ``script``'s run, running it now if this session has not."""
        output = self.folder / Path(script).stem
        recorded = runner.load(output)
        return recorded if recorded is not None else runner.run(script, output)

    def run_all(self, workers=None):
        """Every example's run, ``workers`` at a time (default: one under pytest-xdist, whose other workers
        keep the other cores busy; else two)."""
        if workers is None:
            workers = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
        scripts = runner.scripts()
        with ThreadPoolExecutor(workers) as pool:
            return dict(zip(scripts, pool.map(self.get, scripts)))
