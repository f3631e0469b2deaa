"""Every example runs in quick mode, prints its key numbers and saves its plot.

Each runs once per session (the ``example_runs`` fixture of ``conftest.py``); the docs build shows
the same runs in its gallery."""

import pytest

from ._example_runs import runner

pytestmark = pytest.mark.xdist_group("examples")   # one worker runs the examples and the docs build (their runs are shared)


@pytest.mark.parametrize("script", runner.scripts(), ids=lambda p: p.stem)
def test_example_runs_in_quick_mode(script, example_runs):
    run = example_runs.get(script)
    assert run.ok, run.stderr
    assert run.printed.strip(), "the example printed nothing"
    assert run.figures, "the example saved no plot"
