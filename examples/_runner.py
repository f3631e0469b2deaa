"""How the test suite and the docs gallery run an example script: one command, one environment, one record.

An example runs as ``python <script> --quick --output <folder>`` from the ``examples/`` folder, with matplotlib's Agg backend and one
BLAS thread unless the environment already says how many.  It leaves its figures in ``<folder>`` and
this module writes a record of the run beside them: ``stdout.txt`` (what it printed, with the folder
written as ``.``) and ``run.json`` (exit status, seconds and the end of stderr).

``tests/test_examples.py`` checks the record of each run and the docs gallery (``docs/_ext/gallery.py``)
shows it, so that one test session runs every example once.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

FOLDER = Path(__file__).resolve().parent
STDERR_KEPT = 3000


class Run(NamedTuple):
    """The record of one run: ``returncode`` is None when the run timed out."""

    returncode: "int | None"
    printed: str
    stderr: str
    seconds: float
    figures: list

    @property
    def ok(self):
        return self.returncode == 0


def scripts(folder=FOLDER):
    """The example scripts in ``folder``: every ``*.py`` whose name does not start with ``_``."""
    return sorted(p for p in Path(folder).glob("*.py") if not p.name.startswith("_"))


def options(script):
    """The command-line options after the script's name, apart from ``--output``."""
    return ["--quick"]


def run(script, output, timeout=600):
    """Run ``script`` into the (emptied) folder ``output``, record the run there and return its record."""
    script, output = Path(script), Path(output)
    shutil.rmtree(output, ignore_errors=True)
    output.mkdir(parents=True)
    env = dict(os.environ, MPLBACKEND="Agg")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    args = [sys.executable, str(script), "--output", str(output), *options(script)]
    start = time.perf_counter()
    try:
        done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout, cwd=script.parent)
        returncode, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode, stdout = None, expired.stdout or ""
        stdout = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout
        stderr = f"timed out after {timeout} s"
    seconds = time.perf_counter() - start
    (output / "stdout.txt").write_text(stdout.replace(str(output) + os.sep, "").replace(str(output), "."))
    record = {"returncode": returncode, "seconds": seconds, "stderr": stderr[-STDERR_KEPT:]}
    (output / "run.json").write_text(json.dumps(record))
    return load(output)


def load(output):
    """The record of the run in ``output``, or None where no run was recorded there."""
    output = Path(output)
    if not (output / "run.json").is_file() or not (output / "stdout.txt").is_file():
        return None
    record = json.loads((output / "run.json").read_text())
    return Run(record["returncode"], (output / "stdout.txt").read_text(), record["stderr"], record["seconds"],
               sorted(output.glob("*.png")))
