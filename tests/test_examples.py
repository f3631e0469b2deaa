"""Every example runs in quick mode, prints its key numbers and saves its plot."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted(p for p in (Path(__file__).parent.parent / "examples").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_in_quick_mode(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    args = [sys.executable, str(script), "--output", str(tmp_path)]
    if script.stem != "quickstart":
        args.append("--quick")
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600, cwd=script.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the example printed nothing"
    if script.stem != "quickstart":
        assert list(tmp_path.glob("*.png")), "the example saved no plot"
