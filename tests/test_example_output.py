"""What particular examples print and save, beyond running (``tests/test_examples.py`` runs them all).

These call an example's ``main`` in this process, with ``examples/`` on the path
as when it runs as a script.
"""

import importlib
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def example(monkeypatch):
    """``example(name)``: the module of ``examples/<name>.py``, imported afresh."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    monkeypatch.setenv("MPLBACKEND", "Agg")

    def load(name):
        monkeypatch.delitem(sys.modules, name, raising=False)
        return importlib.import_module(name)

    return load


@pytest.mark.parametrize("quick, n_folds", [(True, 3), (False, 10)], ids=["quick", "full"])
def test_quickstart_honours_quick_and_saves_its_figure(example, tmp_path, capsys, quick, n_folds):
    fit = example("quickstart").main((["--quick"] if quick else []) + ["--output", str(tmp_path)])
    printed = capsys.readouterr().out
    assert fit.converged
    held_out = re.search(rf"held out \({n_folds}-fold cross-validation\): accuracy ([\d.]+), log-loss ([\d.]+)",
                         printed)
    assert held_out, printed
    accuracy, log_loss = map(float, held_out.groups())
    assert accuracy > 0.95 and log_loss < 0.15            # logistic regression on these data: ~0.97, ~0.08
    assert (tmp_path / "quickstart.png").stat().st_size > 10_000
    assert f"saved {tmp_path / 'quickstart.png'}" in printed


def test_natural_gradient_teaching_says_plainly_whether_a_method_got_within_the_gap(example, tmp_path, capsys):
    example("natural_gradient_teaching").main(["--quick", "--output", str(tmp_path)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("Adam:", "SGD:"))]
    assert len(lines) == 2
    for line in lines:
        assert re.search(r"; (within 1e-3 nats after \d+ iterations|not within 1e-3 nats in \d+ iterations)$",
                         line), line
        assert "after not" not in line
